"""The instruction-stream contract between workload synthesis and the core timing model.

Workload synthesis (what the program does) produces :class:`InstrBlock` chunks of
dynamic instructions in program order; the core timing model (how a processor
runs it) consumes them.  Registers are architectural: the synthesiser realises
dependence distances by reading registers written a chosen number of
instructions earlier, and the core model renames and schedules them.

Per instruction (parallel numpy arrays):

========== ======= ==================================================================
field      dtype   meaning
========== ======= ==================================================================
pc         uint64  instruction address (drives the I-cache, ITLB, BTB and predictors)
op         uint8   operation class, ``OP_*`` below
size       uint8   instruction length in bytes
dst        int8    destination register, -1 when none
src1       int8    first source register, -1 when none
src2       int8    second source register, -1 when none
areg       int8    base-address register of a load or store (-1 when none); it is
                   also one of the sources.  The z10 address-generation interlock
                   looks at it.
mem_addr   uint64  data address of a load or store
mem_size   uint8   bytes accessed by a load or store
taken      uint8   1 when a control transfer is taken (always 1 for jumps, calls, returns)
target     uint64  target of a taken control transfer
flags      uint8   ``FLAG_*`` bits below
========== ======= ==================================================================
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# operation classes
OP_ALU, OP_MUL, OP_DIV, OP_FP, OP_LOAD, OP_STORE, OP_BRANCH, OP_JUMP, OP_CALL, OP_RET = range(10)
OP_NAMES = ("alu", "mul", "div", "fp", "load", "store", "branch", "jump", "call", "ret")
CONTROL_OPS = (OP_BRANCH, OP_JUMP, OP_CALL, OP_RET)

# flag bits
FLAG_PARTIAL_WRITE = 1    # writes only part of its destination register (x86 AL/AX): a later full read
                          # of that register stalls the RAT on Intel cores (partial-register stall)
FLAG_FLAGS_PARTIAL = 2    # writes only some condition flags (INC/DEC): a later full-flags read stalls
FLAG_SERIALIZING = 4      # drains the pipeline before issuing (e.g. CPUID, z/Architecture serialising ops)

FIELDS = (("pc", np.uint64), ("op", np.uint8), ("size", np.uint8), ("dst", np.int8), ("src1", np.int8),
          ("src2", np.int8), ("areg", np.int8), ("mem_addr", np.uint64), ("mem_size", np.uint8),
          ("taken", np.uint8), ("target", np.uint64), ("flags", np.uint8))


@dataclass
class InstrBlock:
    """A chunk of dynamic instructions in program order (arrays of equal length)."""
    pc: np.ndarray
    op: np.ndarray
    size: np.ndarray
    dst: np.ndarray
    src1: np.ndarray
    src2: np.ndarray
    areg: np.ndarray
    mem_addr: np.ndarray
    mem_size: np.ndarray
    taken: np.ndarray
    target: np.ndarray
    flags: np.ndarray

    @classmethod
    def empty(cls, n: int) -> "InstrBlock":
        """Preallocated block of ``n`` instructions (no sources, no destination, no memory access)."""
        arrays = {}
        for name, dtype in FIELDS:
            fill = -1 if np.dtype(dtype) == np.int8 else 0
            arrays[name] = np.full(n, fill, dtype=dtype)
        return cls(**arrays)

    def __len__(self) -> int:
        return len(self.pc)

    def head(self, n: int) -> "InstrBlock":
        """The first ``n`` instructions, as views of this block's arrays."""
        return InstrBlock(**{name: getattr(self, name)[:n] for name, _ in FIELDS})

    def arrays(self) -> tuple[np.ndarray, ...]:
        """The arrays in FIELDS order (how numba kernels take a block)."""
        return tuple(getattr(self, name) for name, _ in FIELDS)

    def kernel_arrays(self) -> tuple[np.ndarray, ...]:
        """The arrays in FIELDS order, checked for the numba kernels (which read them through raw pointers):
        each of its FIELDS dtype, C-contiguous, all of one length; raises ValueError.  A block is checked
        once, until a field is reassigned (writing into the arrays keeps them valid)."""
        arrays = self.__dict__.get("_kernel_arrays")
        if arrays is None:
            arrays = self.arrays()
            n = len(arrays[0])
            for (name, dtype), a in zip(FIELDS, arrays):
                if a.dtype != np.dtype(dtype) or a.ndim != 1 or len(a) != n or not a.flags.c_contiguous:
                    raise ValueError(f"InstrBlock.{name}: expected contiguous {np.dtype(dtype)}[{n}], "
                                     f"got {a.dtype}{list(a.shape)}")
            self.__dict__["_kernel_arrays"] = arrays
        return arrays

    def __setattr__(self, name: str, value) -> None:
        self.__dict__.pop("_kernel_arrays", None)          # a reassigned field is checked again
        object.__setattr__(self, name, value)

    def slice(self, start: int, stop: int) -> "InstrBlock":
        return InstrBlock(**{name: getattr(self, name)[start:stop] for name, _ in FIELDS})

    def moved(self, mem_addr: np.ndarray) -> "InstrBlock":
        """The same instructions at other data addresses: every array but ``mem_addr`` shared."""
        return InstrBlock(**({name: getattr(self, name) for name, _ in FIELDS} | {"mem_addr": mem_addr}))

    def validate(self) -> None:
        """Check the contract (lengths, dtypes, register and op ranges); raises ValueError."""
        n = len(self.pc)
        for name, dtype in FIELDS:
            a = getattr(self, name)
            if a.dtype != np.dtype(dtype) or len(a) != n:
                raise ValueError(f"InstrBlock.{name}: expected {np.dtype(dtype)}[{n}], got {a.dtype}[{len(a)}]")
        if n and int(self.op.max()) >= len(OP_NAMES):
            raise ValueError(f"InstrBlock.op: unknown operation class {int(self.op.max())}")


@dataclass(frozen=True)
class IsaSpec:
    """What synthesis needs to know about an instruction set."""
    name: str
    gprs: int                       # architectural integer registers
    fprs: int                       # architectural floating-point registers
    sizes: tuple[int, ...]          # instruction lengths in bytes
    size_weights: tuple[float, ...]  # their frequencies
    partial_registers: bool         # the ISA has partial-register writes (x86)


# Register numbers: 0 .. gprs-1 integer, gprs .. gprs+fprs-1 floating point (so at most 127 in int8).
ISAS = {
    # PowerPC: fixed 4-byte instructions, 32 GPRs and 32 FPRs (Book I)
    "powerpc32": IsaSpec("powerpc32", 32, 32, (4,), (1.0,), False),
    # x86-64: 16 GPRs, 16 XMM; lengths 1-15 bytes, mean about 3.5-4 bytes in compiled integer code
    "x86_64": IsaSpec("x86_64", 16, 16, (1, 2, 3, 4, 5, 6, 7), (0.08, 0.18, 0.30, 0.18, 0.12, 0.08, 0.06), True),
    # z/Architecture: 16 GPRs, 16 FPRs; instructions are 2, 4 or 6 bytes
    "z/Architecture": IsaSpec("z/Architecture", 16, 16, (2, 4, 6), (0.25, 0.55, 0.20), False),
}


def isa_for(name: str) -> IsaSpec:
    try:
        return ISAS[name]
    except KeyError:
        raise ValueError(f"unknown ISA {name!r}; known: {', '.join(sorted(ISAS))}") from None
