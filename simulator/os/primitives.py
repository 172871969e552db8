"""Operating-system primitives as instruction streams on the processor models (seed 003 ch. 6).

A primitive's description (:data:`PRIMITIVES_FILE`, :class:`PrimitiveSpec`) says what the kernel
executes for one call; :class:`OsCode` turns it into an :class:`~simulator.isa.InstrBlock` for a
platform's ISA:

* the *path*: ``path_instructions`` at the primitive's own kernel text (the same PCs every call, so the
  I-cache and the predictors learn them), the first and last serialising (the trap into and out of the
  kernel), a quarter loads and an eighth stores walking ``data_kb`` of the primitive's kernel data
  (the same lines every call), not-taken checks along the way;
* ``per_byte``: ``copies`` copy passes (load from the source, store to the destination; through a
  kernel buffer between two passes) and ``reads`` read passes (a checksum, a user reading a mapped
  file) over the call's bytes, ``bytes_per_iteration`` a loop iteration of ``instructions_per_iteration``
  (load, store, add, loop branch taken back but on the last iteration);
* ``per_unit``: per page or segment of the data (or ``pages`` times), ``instructions`` more kernel work
  and a touch of the unit's first line;
* ``page_table_entries``: the fork's copy of the parent's page tables (a load and a store each);
* ``tlb_flush``: the caller (:class:`simulator.os.kernel.Kernel`) flushes the TLBs after the call.

Data addresses come from the call: ``src`` and ``dst`` are the buffers the primitive reads and writes
(a file in the page cache, a user buffer, a socket's skbs); kernel data and text are per primitive.
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, NonNegativeInt, PositiveInt

from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.isa import FIELDS, FLAG_SERIALIZING, OP_ALU, OP_BRANCH, OP_LOAD, OP_STORE, InstrBlock, IsaSpec
from whatif.simulator.lru import LruCache
from whatif.simulator.osnoise import KERNEL_DATA, KERNEL_TEXT
from whatif.simulator.schema import load_versioned

PRIMITIVES_FILE = Path(__file__).parent / "primitives.toml"
SCHEMA_VERSION = 1
CHANGELOG = {1: "initial primitive format (path, data, per_byte, per_unit, page tables, TLB flush)"}
LINE = 32                               # bytes between the addresses a path walks: the smallest line of any
                                        # platform (the 7447A's), so data_kb is the footprint on every one
ALIGN = 64                              # a primitive's text and data start on a 64-byte boundary
LOOP_SLOT = 256                         # text bytes of one copy or read loop
UNIT_DATA = 8192                        # kernel data of a primitive's per-page work
KBUF_OFFSET = 1 << 26                   # kernel buffers (pipe pages, skbs): 64 MB after the kernel data
USER_TEXT = 0x0000_1000_0000            # user processes: text, then data, 64 MB apart per process
USER_STRIDE = 1 << 26
USER_DATA_OFFSET = 1 << 25
TEMPLATES = 64                          # loop and per-unit templates kept (a few MB for the largest transfers)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PerByte(_Strict):
    copies: NonNegativeInt = 1
    reads: NonNegativeInt = 0
    bytes_per_iteration: PositiveInt = 8
    instructions_per_iteration: Annotated[int, Field(ge=3)] = 4      # load, (store,) work, loop branch


class PerUnit(_Strict):
    bytes: PositiveInt = 4096
    instructions: NonNegativeInt = 0
    pages: NonNegativeInt | None = None                   # a fixed number of units (not by size)


class PrimitiveSpec(_Strict):
    unit: Literal["call", "byte"] = "call"
    path_instructions: NonNegativeInt = 0
    traps: NonNegativeInt = 2
    data_kb: NonNegativeFloat = 1.0
    per_byte: PerByte | None = None
    per_unit: PerUnit | None = None
    page_table_entries: NonNegativeInt = 0
    tlb_flush: bool = False


class PrimitiveCatalog(_Strict):
    schema_version: int
    primitives: dict[str, PrimitiveSpec]


@lru_cache(maxsize=4)
def load_primitives(path: str | Path = PRIMITIVES_FILE) -> dict[str, PrimitiveSpec]:
    """The primitive descriptions of a file (the shipped one by default)."""
    return dict(load_versioned(path, PrimitiveCatalog, SCHEMA_VERSION, CHANGELOG).primitives)


def primitive_names() -> list[str]:
    return list(load_primitives())


MAX_PRIMITIVE_SCALE = 1000.0          # a what-if factor: "k times the work" (a path of 10^3 x its instructions)


def scaled_primitives(factors: dict[str, float], base: dict[str, PrimitiveSpec] | None = None
                      ) -> dict[str, PrimitiveSpec]:
    """The primitives with some made cheaper or dearer by ``factors`` (name -> k, a what-if "this primitive
    takes k times the work"): its path, per-unit work and page-table copy scaled by k, its copy loops
    moving 1/k times the bytes per iteration (wider moves)."""
    base = load_primitives() if base is None else base
    out = dict(base)
    for name, k in factors.items():
        if name not in base:
            raise SimulatorInputError(f"unknown primitive {name!r}; known: {', '.join(base)}")
        if not 0 < k <= MAX_PRIMITIVE_SCALE:           # (nan and inf fail too; the limit keeps paths sized)
            raise SimulatorInputError(f"the factor of primitive {name!r} must be in (0, {MAX_PRIMITIVE_SCALE:g}], "
                                      f"got {k!r}")
        spec = base[name]
        update = {"path_instructions": int(round(spec.path_instructions * k)),
                  "page_table_entries": int(round(spec.page_table_entries * k))}
        if spec.per_unit is not None:
            update["per_unit"] = spec.per_unit.model_copy(update={"instructions": int(round(spec.per_unit.instructions
                                                                                               * k))})
        if spec.per_byte is not None:
            update["per_byte"] = spec.per_byte.model_copy(
                update={"bytes_per_iteration": max(1, int(round(spec.per_byte.bytes_per_iteration / k)))})
        out[name] = spec.model_copy(update=update)
    return out


class OsCode:
    """Instruction blocks of the primitives on an ISA (kernel text and data at the ISA's kernel addresses)."""

    def __init__(self, isa: IsaSpec, primitives: dict[str, PrimitiveSpec] | None = None):
        self.isa = isa
        self.specs = load_primitives() if primitives is None else primitives
        self.size = int(isa.sizes[int(np.argmax(isa.size_weights))])
        self.text = KERNEL_TEXT.get(isa.name, 0xC0000000)
        self.data = KERNEL_DATA.get(isa.name, 0xC0400000)
        self.index = {name: k for k, name in enumerate(self.specs)}
        # Kernel text and data are laid out as a linked kernel is: each primitive's parts one after the
        # other, the primitives back to back -- consecutive pages, so they spread over the TLB sets and
        # cache sets as real kernel code does (regions on power-of-two boundaries would all map to one set)
        self.text_at: dict[str, int] = {}
        self.data_at: dict[str, int] = {}
        t, d = self.text, self.data
        for name, spec in self.specs.items():
            self.text_at[name], self.data_at[name] = t, d
            t += -(-self._text_bytes(spec) // ALIGN) * ALIGN
            d += -(-self._data_bytes(spec) // ALIGN) * ALIGN
        if self.text < self.data < t:
            raise SimulatorInputError(f"the primitives' kernel text ({(t - self.text) >> 10} KB) runs into the kernel "
                                      f"data at {self.data:#x} on {isa.name}")
        self._paths: dict[str, InstrBlock | None] = {}        # each primitive's fixed prefix
        self._templates: LruCache[dict] = LruCache(TEMPLATES)     # loop and per-unit templates
        self._registers = np.zeros(0, np.int8)

    def _text_bytes(self, spec: PrimitiveSpec) -> int:
        pb, pu = spec.per_byte, spec.per_unit
        return self.size * (spec.path_instructions + 4 * spec.page_table_entries
                            + (pu.instructions if pu is not None else 0)) + \
            (LOOP_SLOT * (pb.copies + pb.reads) if pb is not None else 0)

    @staticmethod
    def _data_bytes(spec: PrimitiveSpec) -> int:
        return int(spec.data_kb * 1024) + 8 * spec.page_table_entries + (UNIT_DATA if spec.per_unit else 0)

    def spec(self, name: str) -> PrimitiveSpec:
        try:
            return self.specs[name]
        except KeyError:
            raise SimulatorInputError(f"unknown primitive {name!r}; known: {', '.join(self.specs)}") from None

    def kernel_buffer(self, slot: int) -> int:
        """Address of a kernel buffer (a pipe page, an skb area): 64 KB slots after the primitives' data."""
        return self.data + KBUF_OFFSET + (int(slot) % 4096) * 65536

    # ---- the parts of a block -------------------------------------------------------------------------
    # A call's block is the primitive's fixed prefix -- its path and page-table copy, the same instructions
    # every call, assembled once -- followed by the per-call parts (copy and read loops over the call's
    # buffers, the per-unit work), built from cached templates in a few array operations.  ``tests/osref.py``
    # builds every block part by part from scratch; the two are tested equal.
    def _path(self, n: int, text: int, data: int, data_kb: float, traps: int, salt: int) -> dict:
        idx = np.arange(n, dtype=np.int64)
        op = np.full(n, OP_ALU, np.uint8)
        op[1::4] = OP_LOAD
        op[3::8] = OP_STORE
        op[7::16] = OP_BRANCH
        flags = np.zeros(n, np.uint8)
        if n and traps:
            flags[0] = FLAG_SERIALIZING
            if traps > 1:
                flags[-1] = FLAG_SERIALIZING
        lines = max(1, int(data_kb * 1024 // LINE))
        addr = np.zeros(n, np.uint64)
        mem = (op == OP_LOAD) | (op == OP_STORE)
        addr[mem] = np.uint64(data) + ((np.arange(int(mem.sum())) * 7 + salt) % lines * LINE).astype(np.uint64)
        return {"pc": np.uint64(text) + (idx * self.size).astype(np.uint64), "op": op, "flags": flags, "addr": addr,
                "taken": np.zeros(n, np.uint8), "target": np.zeros(n, np.uint64)}

    def _loop(self, text: int, src: int, dst: int | None, nbytes: int, bpi: int, ipi: int) -> dict:
        """A copy (``src`` and ``dst``) or read (``dst`` None) loop over ``nbytes``."""
        def build() -> dict:
            iters = max(1, math.ceil(nbytes / bpi))
            body = [OP_LOAD] + ([OP_STORE] if dst is not None else []) + [OP_ALU] * (ipi - 2 - (dst is not None)) + \
                [OP_BRANCH]
            k = len(body)
            taken = np.zeros(iters * k, np.uint8)
            taken[k - 1::k] = 1
            taken[-1] = 0
            return {"pc": np.tile(np.uint64(text) + (np.arange(k, dtype=np.uint64) * np.uint64(self.size)), iters),
                    "op": np.tile(np.array(body, np.uint8), iters), "flags": np.zeros(iters * k, np.uint8),
                    "taken": taken, "target": np.where(taken == 1, np.uint64(text), np.uint64(0)).astype(np.uint64),
                    "msize": bpi, "k": k, "step": np.arange(iters, dtype=np.uint64) * np.uint64(bpi)}
        t = self._templates.get(("loop", text, nbytes, bpi, ipi, dst is not None), build)
        k, step = t["k"], t["step"]
        addr = np.zeros(len(t["op"]), np.uint64)
        addr[0::k] = np.uint64(src) + step
        if dst is not None:
            addr[1::k] = np.uint64(dst) + step
        return {**t, "addr": addr}

    def _copy_loops(self, name: str, loop_text: int, size: int, src: int, dst: int) -> list[dict]:
        """The per-byte loops of a call: the copy passes (source, kernel buffers, destination), then the
        read passes over the copy (or the source)."""
        pb = self.spec(name).per_byte
        parts: list[dict] = []
        if pb is not None and size > 0:
            prev = src
            for c in range(pb.copies):
                to = dst if c == pb.copies - 1 else self.kernel_buffer(self.index[name] * 8 + c)
                parts.append(self._loop(loop_text + c * LOOP_SLOT, prev, to, size, pb.bytes_per_iteration,
                                        pb.instructions_per_iteration))
                prev = to
            for r in range(pb.reads):
                parts.append(self._loop(loop_text + (pb.copies + r) * LOOP_SLOT, prev if pb.copies else src, None,
                                        size, pb.bytes_per_iteration, pb.instructions_per_iteration))
        return parts

    def _units(self, n: int, text: int, data: int, count: int, first: int, stride: int) -> dict:
        """``count`` runs of a per-unit path of ``n`` instructions (salts 0, 1, ...), the first memory access
        of run u touching its unit's first line, ``first + u * stride``."""
        def build() -> dict:
            one = self._path(n, text, data, UNIT_DATA / 1024, 0, 0)
            return {**one, "mem": np.flatnonzero((one["op"] == OP_LOAD) | (one["op"] == OP_STORE))}
        one = self._templates.get(("unit", n, text, data), build)
        mem = one["mem"]
        lines = max(1, int(UNIT_DATA // LINE))
        addr = np.zeros((count, n), np.uint64)
        salt = np.arange(count, dtype=np.int64)[:, None]
        addr[:, mem] = np.uint64(data) + ((np.arange(len(mem))[None, :] * 7 + salt) % lines * LINE).astype(np.uint64)
        addr[:, mem[0]] = np.uint64(first) + np.arange(count, dtype=np.uint64) * np.uint64(stride)
        return {f: np.tile(one[f], count) for f in ("pc", "op", "flags", "taken", "target")} | {"addr": addr.ravel()}

    def _prefix(self, name: str) -> InstrBlock | None:
        """The fixed first parts of every call of ``name`` (its path, then its page-table copy), assembled."""
        if name not in self._paths:
            spec = self.spec(name)
            text, data = self.text_at[name], self.data_at[name]
            parts = []
            if spec.path_instructions:
                parts.append(self._path(spec.path_instructions, text, data, spec.data_kb, spec.traps, 0))
            if spec.page_table_entries:
                n = 4 * spec.page_table_entries                       # load, store, two ALU ops per entry
                pt_text = text + self.size * spec.path_instructions
                pt_data = data + int(spec.data_kb * 1024)
                parts.append(self._path(n, pt_text, pt_data, spec.page_table_entries * 8 / 1024, 0, 1))
            self._paths[name] = self._assemble(None, parts) if parts else None
        return self._paths[name]

    def block(self, name: str, size: int = 0, src: int = 0, dst: int = 0) -> InstrBlock:
        """The instructions of one call of ``name`` moving ``size`` bytes from ``src`` to ``dst``."""
        prefix = self._prefix(name)
        parts = self.tail(name, size, src, dst)
        if prefix is None and not parts:
            raise SimulatorInputError(f"primitive {name!r} has no instructions for size {size}")
        return self._assemble(prefix, parts) if parts else prefix

    def tail(self, name: str, size: int = 0, src: int = 0, dst: int = 0) -> list[dict]:
        """What of a call's block follows the primitive's fixed prefix, before registers are assigned (which
        depend on positions only): its parts -- the copy and read loops, then the per-unit work --, each a
        dict of pc, op, flags, taken, target and addr arrays (and msize, an int or an array; 8 where
        absent).  Cheaper than the block; two calls whose tails agree but in addresses have blocks that
        agree but in addresses."""
        spec = self.spec(name)
        text, data = self.text_at[name], self.data_at[name]
        pt_text = text + self.size * spec.path_instructions         # then the page-table copy,
        loop_text = pt_text + self.size * 4 * spec.page_table_entries   # the copy and read loops,
        pb, pu = spec.per_byte, spec.per_unit
        unit_text = loop_text + (LOOP_SLOT * (pb.copies + pb.reads) if pb is not None else 0)   # per-page work
        unit_data = data + int(spec.data_kb * 1024) + 8 * spec.page_table_entries
        parts = self._copy_loops(name, loop_text, size, src, dst)
        if pu is not None and pu.instructions:
            units = pu.pages if pu.pages is not None else (math.ceil(size / pu.bytes) if size > 0 else 0)
            if units:
                parts.append(self._units(pu.instructions, unit_text, unit_data, units,
                                         dst or self.kernel_buffer(self.index[name]), pu.bytes))
        return parts

    def user_block(self, program: int, process: int, instructions: int, data_kb: float) -> InstrBlock:
        """User-mode code: a path without traps in the text of ``program`` (shared by the processes running
        it: forked workers share their text pages) over the data of ``process`` (its own heap)."""
        text = USER_TEXT + (int(program) % 64) * USER_STRIDE
        data = USER_TEXT + (64 + int(process) % 4096) * USER_STRIDE

        def build() -> tuple[InstrBlock, np.ndarray]:      # the program's path over data at 0, its memory accesses
            blk = self._assemble(None, [self._path(int(instructions), text, 0, data_kb, 0, 0)])
            return blk, ((blk.op == OP_LOAD) | (blk.op == OP_STORE)).astype(np.uint64)
        # every process runs the same instructions over its own data: one template, moved (a server's hundreds
        # of workers would otherwise build a block each)
        blk, mem = self._templates.get(("user", text, int(instructions), float(data_kb)), build)
        return blk.moved(blk.mem_addr + mem * np.uint64(data))

    def _rotation(self, n: int) -> np.ndarray:
        """0, 1, ..., gprs - 3, 0, 1, ... (int8), at least ``n`` long: the registers by position."""
        period = self.isa.gprs - 2
        if len(self._registers) < n:
            self._registers = (np.arange(max(n, 2 * len(self._registers)) + period) % period).astype(np.int8)
        return self._registers

    def _assemble(self, prefix: InstrBlock | None, parts: list[dict]) -> InstrBlock:
        """``prefix`` (an assembled block, or None) followed by ``parts``: the parts' instructions get the
        size of the ISA's commonest instruction and registers by their position in the block (a rotation
        over the integer registers; the last one is the base register of every memory access)."""
        at = len(prefix) if prefix is not None else 0
        n = at + sum(len(p["op"]) for p in parts)
        b = InstrBlock(**{name: np.empty(n, dtype) for name, dtype in FIELDS})
        if prefix is not None:
            for name, _ in FIELDS:
                getattr(b, name)[:at] = getattr(prefix, name)
        tail = slice(at, n)
        for p in parts:
            sl = slice(at, at + len(p["op"]))
            b.pc[sl], b.op[sl], b.flags[sl], b.taken[sl], b.target[sl] = p["pc"], p["op"], p["flags"], p["taken"], \
                p["target"]
            b.mem_addr[sl] = p["addr"]
            b.mem_size[sl] = p.get("msize", 8)
            at = sl.stop
        op = b.op[tail]
        mem = (op == OP_LOAD) | (op == OP_STORE)
        b.mem_size[tail][~mem] = 0
        b.size[tail] = self.size
        gprs, start, m = self.isa.gprs, tail.start, n - tail.start
        rot = self._rotation(m + gprs)
        first = start % (gprs - 2)
        dst, src1 = b.dst[tail], b.src1[tail]
        dst[:] = rot[first:first + m]
        dst[(op == OP_STORE) | (op == OP_BRANCH)] = -1
        first = (start + gprs - 4) % (gprs - 2)
        src1[:] = rot[first:first + m]
        src1[mem] = gprs - 1
        b.areg[tail] = np.where(mem, np.int8(gprs - 1), np.int8(-1))         # base registers set up at entry
        b.src2[tail] = -1
        return b
