"""Instruction streams of a JVM on a platform's ISA: interpreted and compiled Java methods, the runtime's
C routines (allocation, monitors, class definition, the JIT compiler) and allocation stores.

A Java method has a *bytecode program* of ``size`` bytecodes (drawn once from its name: the same method
has the same code on every run and every JVM) of seven opcode classes with the frequencies of
:data:`OPCODE_MIX`; a call executes ``bytecodes`` of it from the start (wrapping round: the body's loop)
and then, per unit of its argument, ``bytecodes_per_unit`` of its inner loop (the program's last
bytecodes), whose array accesses walk the argument's buffer.

* *Interpreted* (:meth:`JvmCode.interpreted`): per bytecode the dispatch -- load the opcode from the
  method's bytecode array, advance the bytecode pointer, load the handler's address, jump to it
  indirectly -- and the opcode's handler (:data:`HANDLERS`: loads and stores of the operand stack and
  locals in the frame, the heap field or array element, the branch).  A ``switch`` interpreter
  dispatches from one shared indirect jump to which every handler jumps back (one BTB entry guesses
  every next opcode); a ``threaded`` one ends every handler with its own copy of the dispatch, so the
  BTB learns opcode pairs.  The core's predictors, caches and timing make the cost.
* *Compiled* (:meth:`JvmCode.compiled`): per bytecode the opcode's native instructions (:data:`COMPILED`),
  plus spill loads and stores to the frame until the JIT's ``code_expansion`` native instructions per
  bytecode are reached (a simple JIT keeps locals in memory), at the method's address in the code cache;
  the inner loop's branch is taken back to its start.
* *Native* code (the runtime's routines and JNI methods, C compiled ahead of time): a path of
  instructions at the routine's text walking ``data_kb`` of its data, a quarter loads and an eighth
  stores (:meth:`JvmCode.native`), as the OS primitives' paths are.

Address map (virtual, below 2 GB so that the 32-bit PowerPC holds it; the heap is
:data:`simulator.gc.layout.HEAP_BASE` and up):
"""

from __future__ import annotations

import math
import zlib

import numpy as np

from whatif.simulator.isa import FLAG_SERIALIZING, OP_ALU, OP_BRANCH, OP_JUMP, OP_LOAD, OP_STORE, InstrBlock, IsaSpec

INTERP_TEXT = 0x5000_0000        # interpreter: dispatch at the start, handlers HANDLER_SLOT bytes apart
RUNTIME_TEXT = 0x5010_0000       # the runtime's C routines and JNI methods, ROUTINE_SLOT bytes each
COMPILER_TEXT = 0x5080_0000      # the JIT compiler
CODE_CACHE = 0x5100_0000         # compiled methods
BYTECODE = 0x5200_0000           # methods' bytecode arrays
FRAMES = 0x5300_0000             # the Java stack: a frame per call depth
RUNTIME_DATA = 0x5400_0000       # handler table, monitor cache, class table, compiler data, routines' data
CLASS_META = 0x5500_0000         # the runtime's structures of each loaded class
CLASS_FILES = 0x5800_0000        # class files in the page cache
IO_BUFFERS = 0x5C00_0000         # the Java buffers of methods that move data (a char[] or byte[] each)
USER_DATA = 0x5E00_0000          # the application's own objects
HANDLER_SLOT = 128
ROUTINE_SLOT = 1 << 16
CLASS_STRIDE = 1 << 15           # class files and class structures: 32 KB apart
BUFFER_STRIDE = 1 << 18          # method buffers: 256 KB apart
FRAME_BYTES = 256

# opcode classes and their frequencies in executed bytecode (estimate after published bytecode profiles,
# e.g. Radhakrishnan et al., "Java runtime systems: characterization and architectural implications",
# IEEE Trans. Computers 50(2), 2001: local loads/stores ~40 %, field and array accesses ~20 %)
LOCAL, CONST, ARITH, FIELD, ARRAY, BRANCH, OTHER = range(7)
OPCODE_MIX = (0.36, 0.10, 0.14, 0.14, 0.08, 0.12, 0.06)
VARIANTS = 8                      # distinct opcodes per class (iload_0..3, aload, ...): handler slots
L, S, A, B = OP_LOAD, OP_STORE, OP_ALU, OP_BRANCH
# interpreter handlers: (op, what it addresses) -- f frame, h heap field, d array element, '' none
HANDLERS = {LOCAL: ((L, "f"), (S, "f")),
            CONST: ((A, ""), (S, "f")),
            ARITH: ((L, "f"), (L, "f"), (A, ""), (S, "f")),
            FIELD: ((L, "f"), (L, "h"), (S, "f")),
            ARRAY: ((L, "f"), (L, "f"), (L, "h"), (A, ""), (L, "d"), (S, "f")),
            BRANCH: ((L, "f"), (A, ""), (B, "")),
            OTHER: ((L, "f"), (L, "h"), (A, ""), (A, ""))}
# compiled code: registers hold the operand stack; a bytecode is its memory access or operation
COMPILED = {LOCAL: (), CONST: ((A, ""),), ARITH: ((A, ""),), FIELD: ((L, "h"),),
            ARRAY: ((L, "h"), (A, ""), (L, "d")), BRANCH: ((A, ""), (B, "")), OTHER: ((L, "h"), (A, ""))}
DISPATCH = ((L, "b"), (A, ""), (L, "t"), (OP_JUMP, ""))
TAKEN_SHARE = 0.3                 # forward conditional branches inside a body taken (a fixed pattern per method)


def _stable(name: str) -> int:
    return zlib.crc32(name.encode())


class BytecodeProgram:
    """A method's bytecodes: opcode class, variant, and whether each branch is taken (fixed per method)."""

    def __init__(self, name: str, size: int):
        rng = np.random.default_rng(_stable(name))
        self.size = int(size)
        self.cls = rng.choice(len(OPCODE_MIX), size=self.size, p=np.array(OPCODE_MIX) / sum(OPCODE_MIX))
        self.variant = rng.integers(0, VARIANTS, self.size)
        self.taken = (rng.random(self.size) < TAKEN_SHARE) & (self.cls == BRANCH)


class _Emitter:
    """Appends instructions to growing lists; :meth:`block` turns them into an InstrBlock."""

    def __init__(self, isa: IsaSpec, size: int):
        self.isa, self.isize = isa, size
        self.pc: list[int] = []
        self.op: list[int] = []
        self.addr: list[int] = []
        self.taken: list[int] = []
        self.target: list[int] = []
        self.flags: list[int] = []

    def emit(self, pc: int, op: int, addr: int = 0, taken: int = 0, target: int = 0, flags: int = 0) -> None:
        self.pc.append(pc)
        self.op.append(op)
        self.addr.append(addr)
        self.taken.append(taken)
        self.target.append(target)
        self.flags.append(flags)

    def block(self, msize: int = 4) -> InstrBlock:
        n = len(self.op)
        b = InstrBlock.empty(n)
        if not n:
            return b
        b.pc[:] = np.array(self.pc, dtype=np.uint64)
        b.op[:] = np.array(self.op, dtype=np.uint8)
        b.mem_addr[:] = np.array(self.addr, dtype=np.uint64)
        b.taken[:] = np.array(self.taken, dtype=np.uint8)
        b.target[:] = np.array(self.target, dtype=np.uint64)
        b.flags[:] = np.array(self.flags, dtype=np.uint8)
        return finish(b, self.isa, self.isize, msize)


def finish(b: InstrBlock, isa: IsaSpec, isize: int, msize: int = 4) -> InstrBlock:
    """Sizes and registers of a block whose pc, op, addresses and branches are set (the OS primitives'
    convention: a rotating register chain, memory operations off a base register set up at entry)."""
    n = len(b)
    mem = (b.op == OP_LOAD) | (b.op == OP_STORE)
    b.mem_size[:] = np.where(mem, msize, 0)
    b.size[:] = isize
    gprs = isa.gprs
    idx = np.arange(n, dtype=np.int64)
    b.dst[:] = (idx % (gprs - 2)).astype(np.int8)
    b.src1[:] = ((idx + gprs - 4) % (gprs - 2)).astype(np.int8)
    b.areg[mem] = gprs - 1
    b.src1[mem] = gprs - 1
    b.dst[(b.op == OP_STORE) | (b.op >= OP_BRANCH)] = -1
    return b


def _block(isa: IsaSpec, isize: int, used: np.ndarray, op: np.ndarray, cols: dict[str, np.ndarray]) -> InstrBlock:
    """The block of a table's used cells in row order (a row per bytecode, its instructions' columns)."""
    b = InstrBlock.empty(int(used.sum()))
    b.pc[:], b.op[:], b.mem_addr[:] = cols["pc"][used], op[used], cols["addr"][used]
    b.taken[:], b.target[:] = cols["taken"][used], cols["target"][used]
    return finish(b, isa, isize)


class JvmCode:
    """Blocks of one JVM's code on one ISA."""

    def __init__(self, isa: IsaSpec, dispatch: str = "switch", code_expansion: float = 2.0):
        self.isa = isa
        self.isize = int(isa.sizes[int(np.argmax(isa.size_weights))])
        self.dispatch = dispatch
        self.code_expansion = float(code_expansion)
        self._programs: dict[str, BytecodeProgram] = {}
        self._index: dict[str, int] = {}
        self._code_at: dict[str, int] = {}
        self._next_code = CODE_CACHE

    # ---- layout -------------------------------------------------------------------------------------
    def index(self, name: str) -> int:
        if name not in self._index:
            self._index[name] = len(self._index)
        return self._index[name]

    def program(self, name: str, size: int) -> BytecodeProgram:
        p = self._programs.get(name)
        if p is None:
            p = self._programs[name] = BytecodeProgram(name, size)
        return p

    def bytecode_at(self, name: str) -> int:
        return BYTECODE + self.index(name) * 4096

    def buffer(self, name: str) -> int:
        """The Java buffer a method's inner loop walks (a char[] or byte[] of its own)."""
        return IO_BUFFERS + (self.index(name) % 1024) * BUFFER_STRIDE

    def code_at(self, name: str, size: int) -> int:
        """The method's compiled code in the code cache (placed when first asked, i.e. when compiled)."""
        if name not in self._code_at:
            self._code_at[name] = self._next_code
            self._next_code += -(-int(size * self.code_expansion * self.isize + 64) // 64) * 64
        return self._code_at[name]

    @staticmethod
    def routine_text(slot: int) -> int:
        return RUNTIME_TEXT + slot * ROUTINE_SLOT

    @staticmethod
    def routine_data(slot: int) -> int:
        return RUNTIME_DATA + (1 << 20) + slot * ROUTINE_SLOT

    # ---- Java methods -------------------------------------------------------------------------------
    def _positions(self, prog: BytecodeProgram, bytecodes: int, units: int, per_unit: float) -> tuple:
        """Program positions executed (the body from the start, then the inner loop per unit), for each
        the byte offset into the method's buffer of its array accesses and whether it closes a loop
        iteration, and the inner loop's first position."""
        body = np.arange(int(bytecodes)) % prog.size
        total_loop = int(round(units * per_unit))
        if total_loop <= 0:
            return body, np.zeros(len(body), np.int64), np.zeros(len(body), bool), 0
        span = max(1, min(prog.size, int(round(per_unit)) if per_unit >= 1 else 1))
        iters = -(-total_loop // span)
        start = prog.size - span
        loop = start + np.tile(np.arange(span), iters)[:total_loop]
        step = units / iters                              # units per loop iteration
        offs = (np.repeat(np.arange(iters), span)[:total_loop] * step * 2).astype(np.int64)
        last = np.zeros(len(loop), bool)
        last[span - 1::span] = True                        # the loop's back-edge
        return (np.concatenate([body, loop]), np.concatenate([np.zeros(len(body), np.int64), offs]),
                np.concatenate([np.zeros(len(body), bool), last]), start)

    @staticmethod
    def _frame_slots(p: np.ndarray, depth: int) -> np.ndarray:
        """The frame slots (locals, operand stack) that program positions ``p`` address at call ``depth``."""
        return np.uint64(FRAMES + depth * FRAME_BYTES) + (p * np.uint64(4)) % np.uint64(FRAME_BYTES)

    def _operands(self, name: str, p: np.ndarray, offs: np.ndarray, depth: int, obj: int, buffer: bool) -> dict:
        """Per executed bytecode (program positions ``p``), the address of each operand kind of
        :data:`HANDLERS` and :data:`COMPILED`: frame slot, the object's field, the element of the method's
        buffer (only with ``buffer``: asking for the buffer gives the method its index), none."""
        operand = {"f": self._frame_slots(p, depth), "h": np.uint64(obj) + (p * np.uint64(8)) % np.uint64(64),
                   "": np.zeros(len(p), np.uint64)}
        if buffer:
            operand["d"] = np.uint64(self.buffer(name)) + offs.astype(np.uint64)
        return operand

    def interpreted(self, name: str, size: int, bytecodes: int, units: int = 0, per_unit: float = 0.0,
                    depth: int = 0, obj: int = USER_DATA) -> InstrBlock:
        """One interpreted invocation's bytecodes (body and inner loop), dispatch included.

        Built a column at a time: row k of a table holds bytecode k's instructions (the dispatch's four,
        its handler's, the jump back of a switch interpreter) in the columns its opcode class uses, and
        the block is the used cells in row order (``tests/jvmref.py`` keeps the instruction-by-instruction
        original it is tested against)."""
        prog = self.program(name, size)
        pos, offs, back, _ = self._positions(prog, bytecodes, units, per_unit)
        n, isz = len(pos), np.uint64(self.isize)
        if n == 0:                    # (the method gets its bytecode index when it first executes)
            return InstrBlock.empty(0)
        cls = prog.cls[pos]
        slot = (1 + cls * VARIANTS + prog.variant[pos]).astype(np.uint64)
        handler = np.uint64(INTERP_TEXT) + np.uint64(HANDLER_SLOT) * slot
        dpc = np.full(n, INTERP_TEXT, np.uint64)
        if self.dispatch != "switch":                  # threaded: the previous handler's own dispatch
            dpc[1:] = handler[:-1] + np.uint64(64)
        p = pos.astype(np.uint64)
        operand = self._operands(name, p, offs, depth, obj, buffer=True)
        width = len(DISPATCH) + max(len(h) for h in HANDLERS.values()) + 1
        cols = {k: np.zeros((n, width), np.uint64) for k in ("pc", "addr", "taken", "target")}
        op = np.zeros((n, width), np.uint8)
        used = np.zeros((n, width), bool)
        # the dispatch: opcode load, pointer advance, handler-table load, indirect jump
        used[:, :len(DISPATCH)] = True
        for j, (o, _) in enumerate(DISPATCH):
            op[:, j] = o
            cols["pc"][:, j] = dpc + np.uint64(j) * isz
        cols["addr"][:, 0] = np.uint64(self.bytecode_at(name)) + p
        cols["addr"][:, 2] = np.uint64(RUNTIME_DATA) + (slot - np.uint64(1)) * np.uint64(8)
        cols["taken"][:, 3], cols["target"][:, 3] = 1, handler
        # the handler, per opcode class
        taken = (prog.taken[pos] | back).astype(np.uint64)
        for c, hops in HANDLERS.items():
            rows = np.flatnonzero(cls == c)
            for j, (o, what) in enumerate(hops):
                col = len(DISPATCH) + j
                pc = handler[rows] + np.uint64(j) * isz
                used[rows, col], op[rows, col], cols["pc"][rows, col] = True, o, pc
                if o == OP_BRANCH:
                    t = taken[rows]
                    cols["taken"][rows, col] = t
                    cols["target"][rows, col] = np.where(t != 0, pc + np.uint64(2) * isz, np.uint64(0))
                else:
                    cols["addr"][rows, col] = operand[what][rows]
            if self.dispatch == "switch":               # back to the dispatch loop
                used[rows, -1], op[rows, -1] = True, OP_JUMP
                cols["pc"][rows, -1] = handler[rows] + np.uint64(len(hops)) * isz
                cols["taken"][rows, -1], cols["target"][rows, -1] = 1, INTERP_TEXT
        return _block(self.isa, self.isize, used, op, cols)

    def compiled(self, name: str, size: int, bytecodes: int, units: int = 0, per_unit: float = 0.0,
                 depth: int = 0, obj: int = USER_DATA) -> InstrBlock:
        """One compiled invocation: per bytecode its native instructions, spills up to ``code_expansion``.

        Built like :meth:`interpreted`: row k of a table holds bytecode k's spills, its opcode's native
        instructions and the loop's back-edge branch (``tests/jvmref.py`` keeps the original)."""
        prog = self.program(name, size)
        pos, offs, back, start = self._positions(prog, bytecodes, units, per_unit)
        base = self.code_at(name, size)
        per = self.code_expansion
        isz = np.uint64(self.isize)
        slot = max(1, int(math.ceil(per)) + 3)             # native bytes of one bytecode: slot instructions
        loop_pc = np.uint64(base + start * slot * self.isize // 2)
        cls = prog.cls[pos]
        n_ops = np.array([len(COMPILED[c]) for c in range(len(COMPILED))])[cls]
        spills = np.empty(len(pos), np.int64)
        debt = 0.0
        for k, m in enumerate(n_ops.tolist()):             # locals in memory: the JIT's expansion, carried
            debt += per - m
            spilled = int(debt) if debt >= 1 else 0
            debt -= spilled
            spills[k] = spilled
        p = pos.astype(np.uint64)
        pc0 = np.uint64(base) + p * np.uint64(slot) * isz // np.uint64(2)   # (compiled code is denser)
        ends_in_branch = np.array([bool(COMPILED[c]) and COMPILED[c][-1][0] == OP_BRANCH for c in range(len(COMPILED))])
        closing = back & ~ends_in_branch[cls]              # the loop's back-edge after a non-branch
        if not (spills.sum() + n_ops.sum() + closing.sum()):
            return InstrBlock.empty(0)
        s_max, o_max = int(spills.max()), max(len(ops) for ops in COMPILED.values())
        width = s_max + o_max + 1
        cols = {k: np.zeros((len(pos), width), np.uint64) for k in ("pc", "addr", "taken", "target")}
        op = np.zeros((len(pos), width), np.uint8)
        used = np.zeros((len(pos), width), bool)
        for j in range(s_max):                             # spills: loads, every third a store
            used[:, j] = spills > j
            op[:, j] = OP_STORE if j % 3 == 2 else OP_LOAD
            cols["pc"][:, j] = pc0 + np.uint64(j) * isz
            cols["addr"][:, j] = self._frame_slots(p + np.uint64(j), depth)
        first = pc0 + spills.astype(np.uint64) * isz       # the opcode's first native instruction
        operand = self._operands(name, p, offs, depth, obj,
                                 buffer=any(what == "d" for c in np.unique(cls) for _, what in COMPILED[int(c)]))
        for c, ops in COMPILED.items():
            rows = np.flatnonzero(cls == c)
            if not len(rows):
                continue
            for j, (o, what) in enumerate(ops):
                col = s_max + j
                pc = first[rows] + np.uint64(j) * isz
                used[rows, col], op[rows, col], cols["pc"][rows, col] = True, o, pc
                if o == OP_BRANCH:
                    t = np.where(back[rows], np.uint64(1), prog.taken[pos[rows]].astype(np.uint64))
                    cols["taken"][rows, col] = t
                    cols["target"][rows, col] = np.where(back[rows], loop_pc,
                                                         np.where(t != 0, pc + np.uint64(2) * isz, np.uint64(0)))
                else:
                    cols["addr"][rows, col] = operand[what][rows]
        used[:, -1], op[:, -1] = closing, OP_BRANCH
        cols["pc"][:, -1] = first + n_ops.astype(np.uint64) * isz
        cols["taken"][:, -1], cols["target"][:, -1] = 1, loop_pc
        return _block(self.isa, self.isize, used, op, cols)

    # ---- native code --------------------------------------------------------------------------------
    def native(self, slot: int, instructions: int, data: int, data_kb: float, salt: int = 0,
               serialising: tuple[int, ...] = ()) -> InstrBlock:
        """``instructions`` of C code at routine ``slot``'s text walking ``data_kb`` at ``data``."""
        n = int(instructions)
        b = InstrBlock.empty(n)
        if not n:
            return b
        idx = np.arange(n, dtype=np.int64)
        op = np.full(n, OP_ALU, np.uint8)
        op[1::4] = OP_LOAD
        op[3::8] = OP_STORE
        op[7::16] = OP_BRANCH
        mem = (op == OP_LOAD) | (op == OP_STORE)
        lines = max(1, int(data_kb * 1024 // 32))
        addr = np.zeros(n, np.uint64)
        addr[mem] = np.uint64(data) + ((np.arange(int(mem.sum())) * 7 + salt) % lines * 32).astype(np.uint64)
        text = self.routine_text(slot)
        b.pc[:] = np.uint64(text) + ((idx % (ROUTINE_SLOT // self.isize)) * self.isize).astype(np.uint64)
        b.op[:] = op
        b.mem_addr[:] = addr
        for s in serialising:
            b.flags[s % n] = FLAG_SERIALIZING
        return finish(b, self.isa, self.isize)

    def reads(self, slot: int, src: int, nbytes: int, instructions_per_byte: float, meta: int, meta_kb: float
              ) -> InstrBlock:
        """A parser: ``instructions_per_byte`` per byte of ``src`` (one load of each 8 bytes, stores into
        ``meta``), the runtime's C code at ``slot``."""
        n = max(1, int(round(nbytes * instructions_per_byte)))
        b = self.native(slot, n, meta, meta_kb)
        loads = np.flatnonzero(b.op == OP_LOAD)
        k = min(len(loads), max(1, nbytes // 8))
        b.mem_addr[loads[:k]] = np.uint64(src) + (np.arange(k, dtype=np.uint64) * np.uint64(8))
        return b

    def probes(self, slot: int, count: int, table: int, table_kb: int, salt: int) -> InstrBlock:
        """Hash-table probes: per probe a hash (3 ALU), a load of the bucket, a compare and a branch."""
        rng = np.random.default_rng(salt)
        e = _Emitter(self.isa, self.isize)
        text = self.routine_text(slot)
        isz = self.isize
        buckets = rng.integers(0, table_kb * 1024 // 32, count)
        for k in range(count):
            for j in range(3):
                e.emit(text + j * isz, OP_ALU)
            e.emit(text + 3 * isz, OP_LOAD, table + int(buckets[k]) * 32)
            e.emit(text + 4 * isz, OP_ALU)
            e.emit(text + 5 * isz, OP_BRANCH, 0, 1 if k < count - 1 else 0, text if k < count - 1 else 0)
        return e.block()

    def stores(self, slot: int, addr: int, nbytes: int) -> InstrBlock:
        """Initialising stores of a new object: one per 8 bytes (header included)."""
        n = max(1, -(-int(nbytes) // 8))
        b = InstrBlock.empty(n)
        text = self.routine_text(slot) + 1024
        b.pc[:] = np.uint64(text) + (np.arange(n, dtype=np.uint64) % np.uint64(16)) * np.uint64(self.isize)
        b.op[:] = OP_STORE
        b.mem_addr[:] = np.uint64(addr) + np.arange(n, dtype=np.uint64) * np.uint64(8)
        return finish(b, self.isa, self.isize, 8)
