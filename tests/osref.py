"""The instruction blocks of the OS primitives, built the plain way (one part after another, every part
from scratch with ``OsCode._path`` and the loop below, then assembled into a fresh block): the reference
that :meth:`simulator.os.primitives.OsCode.block`, which caches a primitive's fixed parts and builds the
per-call rest from cached templates, is tested against."""

from __future__ import annotations

import math

import numpy as np

from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.isa import OP_ALU, OP_BRANCH, OP_LOAD, OP_STORE, InstrBlock
from whatif.simulator.os.primitives import LOOP_SLOT, UNIT_DATA, USER_STRIDE, USER_TEXT, OsCode


class ReferenceOsCode(OsCode):
    """OsCode with the block construction of its first version."""

    # ---- the parts of a block -------------------------------------------------------------------------
    def _loop(self, text: int, src: int | None, dst: int | None, nbytes: int, bpi: int, ipi: int) -> dict:
        """A copy (``src`` and ``dst``) or read (``dst`` None) loop over ``nbytes``."""
        iters = max(1, math.ceil(nbytes / bpi))
        body = [OP_LOAD] + ([OP_STORE] if dst is not None else []) + [OP_ALU] * (ipi - 2 - (dst is not None)) + \
            [OP_BRANCH]
        k = len(body)
        op = np.tile(np.array(body, np.uint8), iters)
        pcs = np.tile(np.uint64(text) + (np.arange(k, dtype=np.uint64) * np.uint64(self.size)), iters)
        addr = np.zeros(iters * k, np.uint64)
        step = (np.arange(iters, dtype=np.uint64) * np.uint64(bpi))
        addr[0::k] = np.uint64(src) + step
        if dst is not None:
            addr[1::k] = np.uint64(dst) + step
        taken = np.zeros(iters * k, np.uint8)
        taken[k - 1::k] = 1
        taken[-1] = 0
        target = np.where(taken == 1, np.uint64(text), np.uint64(0)).astype(np.uint64)
        return {"pc": pcs, "op": op, "flags": np.zeros(iters * k, np.uint8), "addr": addr, "taken": taken,
                "target": target, "msize": bpi}

    def block(self, name: str, size: int = 0, src: int = 0, dst: int = 0) -> InstrBlock:
        """The instructions of one call of ``name`` moving ``size`` bytes from ``src`` to ``dst``."""
        spec = self.spec(name)
        k = self.index[name]
        text, data = self.text_at[name], self.data_at[name]
        pt_text = text + self.size * spec.path_instructions         # then the page-table copy,
        loop_text = pt_text + self.size * 4 * spec.page_table_entries   # the copy and read loops,
        pb, pu = spec.per_byte, spec.per_unit
        unit_text = loop_text + (LOOP_SLOT * (pb.copies + pb.reads) if pb is not None else 0)   # per-page work
        pt_data = data + int(spec.data_kb * 1024)
        unit_data = pt_data + 8 * spec.page_table_entries
        parts = []
        if spec.path_instructions:
            parts.append(self._path(spec.path_instructions, text, data, spec.data_kb, spec.traps, 0))
        if spec.page_table_entries:
            n = 4 * spec.page_table_entries                       # load, store, two ALU ops per entry
            parts.append(self._path(n, pt_text, pt_data, spec.page_table_entries * 8 / 1024, 0, 1))
        parts += self._copy_loops(name, loop_text, size, src, dst)
        if pu is not None:
            units = pu.pages if pu.pages is not None else (math.ceil(size / pu.bytes) if size > 0 else 0)
            for u in range(units):
                if pu.instructions:
                    part = self._path(pu.instructions, unit_text, unit_data, UNIT_DATA / 1024, 0, u)
                    target = (dst or self.kernel_buffer(k)) + (u * pu.bytes)
                    first_mem = int(np.flatnonzero((part["op"] == OP_LOAD) | (part["op"] == OP_STORE))[0])
                    part["addr"][first_mem] = np.uint64(target)
                    parts.append(part)
        if not parts:
            raise SimulatorInputError(f"primitive {name!r} has no instructions for size {size}")
        return self._assemble(parts)

    def user_block(self, program: int, process: int, instructions: int, data_kb: float) -> InstrBlock:
        """User-mode code: a path without traps in the text of ``program`` (shared by the processes running
        it: forked workers share their text pages) over the data of ``process`` (its own heap)."""
        text = USER_TEXT + (int(program) % 64) * USER_STRIDE
        data = USER_TEXT + (64 + int(process) % 4096) * USER_STRIDE
        return self._assemble([self._path(int(instructions), text, data, data_kb, 0, 0)])

    def _assemble(self, parts: list[dict]) -> InstrBlock:
        n = sum(len(p["op"]) for p in parts)
        b = InstrBlock.empty(n)
        at = 0
        for p in parts:
            m = len(p["op"])
            sl = slice(at, at + m)
            b.pc[sl], b.op[sl], b.flags[sl] = p["pc"], p["op"], p["flags"]
            b.taken[sl], b.target[sl] = p["taken"], p["target"]
            mem = (p["op"] == OP_LOAD) | (p["op"] == OP_STORE)
            b.mem_addr[sl] = p["addr"]
            b.mem_size[sl] = np.where(mem, p.get("msize", 8), 0)
            at += m
        b.size[:] = self.size
        gprs = self.isa.gprs
        idx = np.arange(n, dtype=np.int64)
        b.dst[:] = (idx % (gprs - 2)).astype(np.int8)
        b.src1[:] = ((idx + gprs - 4) % (gprs - 2)).astype(np.int8)
        mem = (b.op == OP_LOAD) | (b.op == OP_STORE)
        b.areg[mem] = (gprs - 1)                                  # base registers set up at entry
        b.src1[mem] = gprs - 1
        b.dst[(b.op == OP_STORE) | (b.op == OP_BRANCH)] = -1
        return b
