"""``Kernel``: primitives executed on a platform's core and memory hierarchy, one call at a time.

The core keeps its state between calls -- caches, TLBs, predictors, the pipeline -- so a call's cost
depends on what ran before it: a microbenchmark loop finds everything warm, a web server's request finds
what the previous requests left.  ``call`` returns the call's cycles (the core's cycle count before and
after); primitives with ``tlb_flush`` flush every TLB after their instructions (exec's new address space).
"""

from __future__ import annotations

import numpy as np

from whatif.simulator.core import Core
from whatif.simulator.isa import InstrBlock, isa_for
from whatif.simulator.lru import LruCache
from whatif.simulator.memory.hierarchy import MemoryHierarchy
from whatif.simulator.os.primitives import OsCode
from whatif.simulator.platform import Platform

BLOCK_CACHE = 256          # instruction blocks kept (a call with the same size and buffers reuses its block)
LAYOUTS = 64               # (primitive, size) layouts kept, moved to each call's buffers
SIGHTINGS = 4096           # (primitive, size) pairs remembered: a layout is made when one recurs
PROBE_SRC, PROBE_DST = (1 << 40) + 4099, (1 << 42) + 8209   # buffers that tell the two kinds of address apart


class Kernel:
    def __init__(self, platform: Platform, seed: int = 0, core: Core | None = None, code: OsCode | None = None):
        self.platform = platform
        self.core = core if core is not None else Core(platform, MemoryHierarchy(platform, seed=seed))
        self.code = code if code is not None else OsCode(isa_for(platform.isa))
        self.clock_hz = platform.clock_ghz * 1e9
        self._blocks: LruCache[InstrBlock] = LruCache(BLOCK_CACHE)
        self._layouts: LruCache[tuple] = LruCache(LAYOUTS)
        self._sighted: LruCache[bool] = LruCache(SIGHTINGS)
        self.trace: list[tuple] | None = None    # when a list: every call and user burst appended in order
        self.calls: dict[str, int] = {}
        self.cycles_by_primitive: dict[str, int] = {}
        self.bytes_by_primitive: dict[str, int] = {}
        self.counters_by_primitive: dict[str, np.ndarray] = {}   # what each primitive's calls added to the
                                                                   # hierarchy's counters

    def _cached(self, key: tuple, build) -> InstrBlock:
        """The block of ``key``, built by ``build()`` unless one of the last BLOCK_CACHE used is it."""
        return self._blocks.get(key, build)

    def block(self, name: str, size: int = 0, src: int = 0, dst: int = 0) -> InstrBlock:
        """The call's block, ``OsCode.block(name, size, src, dst)``: reused when the same call recurs, else
        moved from its (primitive, size) layout once that size has recurred (a file read at the next file
        position is a new call of the same size)."""
        size, src, dst = int(size), int(src), int(dst)
        return self._cached((name, size, src, dst), lambda: self._moved(name, size, src, dst))

    def _moved(self, name: str, size: int, src: int, dst: int) -> InstrBlock:
        """A call's addresses are its layout's plus ``src`` where they walk the source and ``dst`` where they
        walk the destination (copy loops step through both, per-page work starts at the destination); the
        moved block shares every array but the addresses with the layout.  A (primitive, size) seen for
        the first time is built directly: a layout costs two or three blocks."""
        key = (name, size, dst == 0)
        recurred = key in self._sighted
        self._sighted.get(key, lambda: True)
        layout = self._layouts.get(key, lambda: self._layout(*key)) if recurred else ()
        if not layout:
            return self.code.block(name, size, src, dst)
        blk, from_src, from_dst = layout
        return blk.moved(blk.mem_addr + from_src * np.uint64(src) + from_dst * np.uint64(dst))

    def _layout(self, name: str, size: int, no_dst: bool) -> tuple:
        """(the block at source and destination 0, the addresses that follow the source, those that follow
        the destination) of a (primitive, size), from its blocks at the probe buffers: each address must
        move with exactly one buffer or with none, and nothing else change; else () (built call by call).
        Without a destination, per-page work starts at a kernel buffer: only the source moves.  The probes
        compare the calls' tails part by part (``OsCode.tail``): the fixed prefix never moves, and
        registers follow positions."""
        d0 = 0 if no_dst else PROBE_DST
        ref, tail = self.code.block(name, size, 0, d0), self.code.tail(name, size, 0, d0)
        probes = {"src": (PROBE_SRC, d0)} | ({} if no_dst else {"dst": (0, 2 * PROBE_DST)})
        masks = {"src": np.zeros(len(ref), np.uint64), "dst": np.zeros(len(ref), np.uint64)}
        prefix = len(ref) - sum(len(t["op"]) for t in tail)
        for which, (src, dst) in probes.items():
            moved = self.code.tail(name, size, src, dst)
            if len(moved) != len(tail):
                return ()
            step = np.uint64(PROBE_SRC if which == "src" else PROBE_DST)
            at = prefix
            for t, m in zip(tail, moved):
                if any(t.get(f, 8) is not m.get(f, 8) and not np.array_equal(t.get(f, 8), m.get(f, 8))
                       for f in ("pc", "op", "flags", "taken", "target", "msize")):
                    return ()
                diff = m["addr"] - t["addr"]
                if not ((diff == 0) | (diff == step)).all():
                    return ()
                masks[which][at:at + len(diff)] = diff == step
                at += len(diff)
        zero = ref.mem_addr - masks["dst"] * np.uint64(d0)
        return ref.moved(zero), masks["src"], masks["dst"]

    def call(self, name: str, size: int = 0, src: int = 0, dst: int = 0) -> int:
        """Run one call; returns its cycles."""
        if self.trace is not None:
            self.trace.append(("call", name, int(size), int(src), int(dst)))
        blk = self.block(name, size, src, dst)
        memory = self.core.memory
        before, counters = self.core.cycles, memory.counter_snapshot()
        self.core.run(blk)
        if self.code.spec(name).tlb_flush:
            memory.flush_tlbs()
        cycles = self.core.cycles - before
        self.calls[name] = self.calls.get(name, 0) + 1
        self.bytes_by_primitive[name] = self.bytes_by_primitive.get(name, 0) + int(size)
        self.cycles_by_primitive[name] = self.cycles_by_primitive.get(name, 0) + cycles
        self.counters_by_primitive[name] = (self.counters_by_primitive.get(name, 0)
                                            + memory.counter_snapshot() - counters)
        return cycles

    @property
    def lines_by_primitive(self) -> dict[str, np.ndarray]:
        """The lines each primitive's calls brought into each cache depth, and their page walks
        (:meth:`MemoryHierarchy.lines_in`)."""
        return {name: self.core.memory.lines_in(c) for name, c in self.counters_by_primitive.items()}

    def reset_counts(self) -> None:
        """Forget the per-primitive calls, bytes, cycles and counters so far (a measurement window opens)."""
        for counts in (self.calls, self.cycles_by_primitive, self.bytes_by_primitive, self.counters_by_primitive):
            counts.clear()

    def user(self, program: int, process: int, instructions: int, data_kb: float) -> int:
        """Run ``instructions`` of ``program``'s user-mode code in ``process`` (shared text, its own data);
        returns the cycles."""
        if self.trace is not None:
            self.trace.append(("user", int(program), int(process), int(instructions), float(data_kb)))
        blk = self._cached(("<user>", int(program), int(process), int(instructions), float(data_kb)),
                           lambda: self.code.user_block(program, process, instructions, data_kb))
        before = self.core.cycles
        self.core.run(blk)
        return self.core.cycles - before

    def seconds(self, cycles: int) -> float:
        return cycles / self.clock_hz
