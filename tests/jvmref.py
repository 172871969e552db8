"""Interpreted and compiled Java methods built the plain way (one instruction after another, as their first
version did): the reference that :meth:`simulator.jvm.code.JvmCode.interpreted` and ``compiled``, which
build the block a column of an opcode-class table at a time, are tested against."""

from __future__ import annotations

import math

from whatif.simulator.isa import OP_BRANCH, OP_JUMP, OP_LOAD, OP_STORE, InstrBlock
from whatif.simulator.jvm.code import (COMPILED, DISPATCH, FRAME_BYTES, FRAMES, HANDLER_SLOT, HANDLERS,
                                       INTERP_TEXT, RUNTIME_DATA, USER_DATA, VARIANTS, JvmCode, _Emitter)


class ReferenceJvmCode(JvmCode):
    """JvmCode with the interpreted and compiled invocations of its first version."""

    def _addr(self, what: str, name: str, pos: int, off: int, depth: int, obj: int) -> int:
        if what == "f":
            return FRAMES + depth * FRAME_BYTES + (pos * 4) % FRAME_BYTES
        if what == "h":
            return obj + (pos * 8) % 64
        if what == "d":
            return self.buffer(name) + off
        if what == "b":
            return self.bytecode_at(name) + pos
        return 0

    def interpreted(self, name: str, size: int, bytecodes: int, units: int = 0, per_unit: float = 0.0,
                    depth: int = 0, obj: int = USER_DATA) -> InstrBlock:
        """One interpreted invocation's bytecodes (body and inner loop), dispatch included."""
        prog = self.program(name, size)
        pos, offs, back, _ = self._positions(prog, bytecodes, units, per_unit)
        e = _Emitter(self.isa, self.isize)
        isz = self.isize
        table = RUNTIME_DATA
        for k in range(len(pos)):
            p = int(pos[k])
            c, v = int(prog.cls[p]), int(prog.variant[p])
            handler = INTERP_TEXT + HANDLER_SLOT * (1 + c * VARIANTS + v)
            dpc = INTERP_TEXT if self.dispatch == "switch" else (
                INTERP_TEXT + HANDLER_SLOT * (1 + int(prog.cls[int(pos[k - 1])]) * VARIANTS
                                              + int(prog.variant[int(pos[k - 1])])) + 64 if k else INTERP_TEXT)
            for j, (op, what) in enumerate(DISPATCH):
                if op == OP_JUMP:
                    e.emit(dpc + j * isz, OP_JUMP, 0, 1, handler)
                elif what == "t":
                    e.emit(dpc + j * isz, op, table + (c * VARIANTS + v) * 8)
                else:
                    e.emit(dpc + j * isz, op, self._addr(what, name, p, 0, depth, obj))
            hops = HANDLERS[c]
            for j, (op, what) in enumerate(hops):
                pc = handler + j * isz
                if op == OP_BRANCH:
                    t = int(prog.taken[p] or back[k])
                    e.emit(pc, OP_BRANCH, 0, t, pc + 2 * isz if t else 0)
                else:
                    e.emit(pc, op, self._addr(what, name, p, int(offs[k]), depth, obj))
            if self.dispatch == "switch":                  # back to the dispatch loop
                pc = handler + len(hops) * isz
                e.emit(pc, OP_JUMP, 0, 1, INTERP_TEXT)
        return e.block()

    def compiled(self, name: str, size: int, bytecodes: int, units: int = 0, per_unit: float = 0.0,
                 depth: int = 0, obj: int = USER_DATA) -> InstrBlock:
        """One compiled invocation: per bytecode its native instructions, spills up to ``code_expansion``."""
        prog = self.program(name, size)
        pos, offs, back, start = self._positions(prog, bytecodes, units, per_unit)
        base = self.code_at(name, size)
        per = self.code_expansion
        isz = self.isize
        e = _Emitter(self.isa, self.isize)
        slot = max(1, int(math.ceil(per)) + 3)             # native bytes of one bytecode: slot instructions
        loop_pc = base + start * slot * isz // 2
        debt = 0.0
        for k in range(len(pos)):
            p = int(pos[k])
            pc0 = base + p * slot * isz // 2               # code of bytecode p (compiled code is denser)
            ops = COMPILED[int(prog.cls[p])]
            debt += per - len(ops)
            spills = int(debt) if debt >= 1 else 0
            debt -= spills
            j = 0
            for s in range(spills):                        # locals in memory: loads, every third a store
                e.emit(pc0 + j * isz, OP_STORE if s % 3 == 2 else OP_LOAD,
                       self._addr("f", name, p + s, 0, depth, obj))
                j += 1
            for op, what in ops:
                pc = pc0 + j * isz
                if op == OP_BRANCH:
                    if back[k]:
                        e.emit(pc, OP_BRANCH, 0, 1, loop_pc)
                    else:
                        t = int(prog.taken[p])
                        e.emit(pc, OP_BRANCH, 0, t, pc + 2 * isz if t else 0)
                else:
                    e.emit(pc, op, self._addr(what, name, p, int(offs[k]), depth, obj))
                j += 1
            if back[k] and not (ops and ops[-1][0] == OP_BRANCH):
                e.emit(pc0 + j * isz, OP_BRANCH, 0, 1, loop_pc)
        return e.block()
