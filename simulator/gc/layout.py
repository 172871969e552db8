"""The simulated address map of a Java heap, the collector's registers and code addresses,
and the inline instruction emitter the collector kernels share.

The collectors of :mod:`simulator.gc` do their work functionally on numpy arrays and, at the same
time, write the instruction stream a real collector would execute (:class:`simulator.isa.InstrBlock`
fields, in ``FIELDS`` order) into a buffer: loads and stores at the simulated addresses below, with
the real dependences (a pointer-chasing load names the register the previous load wrote).

Address map (virtual; the platform's page mapping turns it into physical addresses):

================  ============================================================================
``CODE_BASE``     the collector's routines (one small loop each, see ``PC_*``), the JVM's text
``ROOT_BASE``     the root table: one 4-byte slot per root (statics, stack slots, JNI handles)
``STACK_BASE``    the mark stack (4-byte entries, grows upwards)
``CLASS_BASE``    class descriptors (reference maps) read while scanning an object
``BITMAP_BASE``   the mark bitmap: one bit per 8-byte heap granule
``HEAP_BASE``     the heap; an object is a header (``header_bytes``) and its payload, 8-byte aligned
================  ============================================================================
"""

from __future__ import annotations

import numpy as np
from numba import njit

from whatif.simulator.isa import OP_ALU, OP_BRANCH, OP_LOAD, OP_STORE
from whatif.simulator.memory.state import _var

U64 = np.uint64
I64 = np.int64

CODE_BASE = 0x0F00_0000      # the JVM's text, below the program's data (simulator.synth: text 0x400000,
ROOT_BASE = 0x2000_0000      # data regions from 0x10000000) and far from the heap
STACK_BASE = 0x2100_0000
CLASS_BASE = 0x2180_0000
BITMAP_BASE = 0x2200_0000    # up to 16 MB: heaps up to 1 GB
HEAP_BASE = 0x4000_0000

GRANULE = 8                  # bytes per heap granule (object alignment, one mark bit)
REF_BYTES = 4                # a reference field (32-bit references, as in the JDK 1.2.2 classic JVM)
INSTR_BYTES = 4              # every collector instruction is 4 bytes long

# routine entry points (each routine's instructions follow at INSTR_BYTES steps)
PC_CLEAR = CODE_BASE + 0x000
PC_ROOTS = CODE_BASE + 0x100
PC_MARK = CODE_BASE + 0x200
PC_SWEEP = CODE_BASE + 0x400
PC_FWD = CODE_BASE + 0x600
PC_FIXROOTS = CODE_BASE + 0x700
PC_FIXUP = CODE_BASE + 0x800
PC_MOVE = CODE_BASE + 0xA00
PC_CROOTS = CODE_BASE + 0xC00
PC_SCAN = CODE_BASE + 0xE00
PC_EVAC = CODE_BASE + 0x1000
PC_ALLOC = CODE_BASE + 0x1200

# registers (0..15 exist on every ISA of simulator.isa)
R_CNT, R_SP, R_POS, R_OBJ, R_HDR, R_BIT, R_BMW, R_TST, R_FLD, R_RUN, R_HEAD, R_TMP, R_ROOT, R_END, R_DST, R_CLS = \
    range(16)


@njit(cache=True)
def ins(B, n, emit, pc, op, dst, s1, s2, areg, addr, msize, taken, target):
    """Append one instruction to buffer ``B`` (InstrBlock arrays in FIELDS order) at ``n``; returns n + 1.
    With ``emit`` False nothing is written and ``n`` is returned unchanged.

    Not inlined by numba, unlike its four callers: LLVM inlines it anyway (the collectors' machine code is
    the same size), and numba's own inlining of its twelve stores at every call site made ``ms_step``
    take about 60 s to compile instead of about 40.  The callers pass every field as a run-time value of
    one type (:func:`_emit`): the constants they name (registers, ops) would otherwise compile a separate
    specialisation of this function per combination (59 for ``ms_step``, which compiled in 33 s instead of 20)."""
    if not emit:
        return n
    B[0][n] = U64(pc)
    B[1][n] = op
    B[2][n] = INSTR_BYTES
    B[3][n] = dst
    B[4][n] = s1
    B[5][n] = s2
    B[6][n] = areg
    B[7][n] = U64(addr)
    B[8][n] = msize
    B[9][n] = taken
    B[10][n] = U64(target)
    B[11][n] = 0
    return n + 1


@njit(cache=True, inline="always")
def _emit(B, n, emit, pc, op, dst, s1, s2, areg, addr, msize, taken, target):
    """:func:`ins` with every field a run-time value of a fixed type (its docstring)."""
    return ins(B, I64(n), _var(emit), U64(pc), I64(op), I64(dst), I64(s1), I64(s2), I64(areg), U64(addr), I64(msize),
               I64(taken), U64(target))


@njit(cache=True, inline="always")
def alu(B, n, emit, pc, dst, s1, s2):
    return _emit(B, n, emit, pc, OP_ALU, dst, s1, s2, -1, 0, 0, 0, 0)


@njit(cache=True, inline="always")
def load(B, n, emit, pc, dst, areg, addr, msize):
    return _emit(B, n, emit, pc, OP_LOAD, dst, areg, -1, areg, addr, msize, 0, 0)


@njit(cache=True, inline="always")
def store(B, n, emit, pc, src, areg, addr, msize):
    return _emit(B, n, emit, pc, OP_STORE, -1, src, areg, areg, addr, msize, 0, 0)


@njit(cache=True, inline="always")
def branch(B, n, emit, pc, src, taken, target):
    return _emit(B, n, emit, pc, OP_BRANCH, -1, src, -1, -1, 0, 0, 1 if taken else 0, target if taken else 0)


def bitmap_word_addr(heap_offset: int) -> int:
    """Address of the 32-bit bitmap word holding the mark bit of the object at ``heap_offset``."""
    return BITMAP_BASE + ((heap_offset // GRANULE) >> 5) * 4
