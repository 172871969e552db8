"""The simulated Java heap: allocation, collections, growth and out-of-memory detection.

``Heap(config)`` holds the heap arrays of :mod:`simulator.gc.state`.  ``allocate`` runs the numba
allocator over a slice of an allocation stream and stops at an allocation failure; ``collect`` runs one
stop-the-world collection.  When given a timer (``run(block)``, ``cycles``; see
:class:`simulator.gc.timing.GcTimer`) or a sink (a callable taking each :class:`~simulator.isa.InstrBlock`
of the collector's stream), the collector writes its instruction stream chunk by chunk and the
collection's duration is what the timer measured; without either the collection is functional only
(the fast path of studies that only need counts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Generator

import numpy as np

from whatif.jitcache import drop_stale_caches
from whatif.simulator import isa
from whatif.simulator.gc import kernel_alloc as KA
from whatif.simulator.gc import kernel_copying as KC
from whatif.simulator.gc import kernel_marksweep as KM
from whatif.simulator.gc import layout, state
from whatif.simulator.gc.config import GROWTH_STEP, HeapConfig
from whatif.simulator.gc.kernel_copying import cp_step
from whatif.simulator.gc.kernel_marksweep import ms_step
from whatif.simulator.gc.state import (A_GROW_ROOTS, COLLECTOR_IDS, P_CLEAR, P_CROOTS, P_DONE, P_MARK, P_ROOTS, P_SWEEP,
                                P_SWEPT, S_CLOCK, S_COBJ, S_COLLECTOR, S_COPIED_BYTES, S_COPIED_OBJ, S_DEAD_BYTES,
                                S_DEAD_OBJ, S_DEST, S_EPOCH, S_FROM, S_HDR, S_HEAP, S_LIVE_BYTES, S_LIVE_OBJ,
                                S_MARK_VISITS, S_MAX_STACK, S_MAXHEAP, S_NALLOC, S_NEED, S_NF, S_NROOTS, S_OBJBYTES,
                                S_OBJS, S_PHASE, S_POS, S_REFS_SCANNED, S_ROOTS_SCANNED, S_SCAN, S_SEMI, S_SEMISIZE,
                                S_TOP, ST_FINISHED, ST_GROW_STACK, ST_MORE, ST_NEED_BUF, grown, hist_bin_payload,
                                new_arrays)
from whatif.simulator.gc.timing import empty_buffer
from whatif.simulator.isa import InstrBlock
from whatif.simulator.memory import state as memory_state

DEFAULT_BUFFER = 1 << 15


@dataclass
class Collection:
    """One collection, as the collector saw it (the GC log row of DESIGN.md contract 4)."""
    index: int
    reason: str                    # "allocation" | "explicit"
    clock_bytes: int               # bytes allocated before the collection
    heap_bytes: int                # heap size during the collection
    live_objects: int
    live_bytes: int
    dead_objects: int
    dead_bytes: int
    copied_objects: int
    copied_bytes: int
    compacted: bool
    roots: int
    mark_visits: int
    refs_scanned: int
    free_bytes_after: int
    largest_free_after: int
    heap_after_bytes: int          # heap size after the collection (growth)
    swept_chunks: int = 0          # free chunks the sweep wrote (a header each; mark-sweep, before any compaction)
    memory_reads: int = 0          # lines read from memory during the collection (a timer's memory hierarchy)
    memory_writes: int = 0         # lines written back to memory during it: the dirty lines it evicted
    instructions: int = 0
    cycles: int = 0
    compaction_instructions: int = 0
    compaction_cycles: int = 0
    max_mark_stack: int = 0
    out_of_memory: bool = False
    oom_reason: str = ""           # "request": it does not fit; "overhead": collections free too little
    phase_cycles: dict = field(default_factory=dict)
    hist_payload: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    hist_live: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    hist_dead: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    gap_payload: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))   # live spacing bins
    hist_gap: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def explicit(self) -> bool:
        return self.reason == "explicit"


class OutOfMemory(Exception):
    """The live data (plus the failed request) does not fit in the heap even after a full collection."""


class Heap:
    def __init__(self, config: HeapConfig, buffer_instructions: int = DEFAULT_BUFFER):
        self.config = config
        cap = config.capacity_bytes // 8 * 8
        self.H = new_arrays(cap)
        S = self.H.S
        S[S_HDR] = config.header_bytes
        S[S_MAXHEAP] = cap
        S[S_COLLECTOR] = COLLECTOR_IDS[config.collector]
        heap = config.heap_bytes // 8 * 8
        S[S_HEAP] = heap
        if config.collector == "copying":
            semi = heap // 2 // 8 * 8
            S[S_SEMI] = 0
            S[S_SEMISIZE] = semi
            self._set_single_chunk(0, semi)
        else:
            self._set_single_chunk(0, heap)
        self.buffer = empty_buffer(buffer_instructions)
        self.collections: list[Collection] = []
        self._starved = 0              # allocation failures in a row that freed too little

    # ------------------------------------------------------------------ properties
    @property
    def header_bytes(self) -> int:
        return int(self.H.S[S_HDR])

    @property
    def heap_bytes(self) -> int:
        return int(self.H.S[S_HEAP])

    @property
    def space_bytes(self) -> int:
        """Bytes objects can occupy: the heap, or one semispace."""
        S = self.H.S
        return int(S[S_SEMISIZE]) if self.config.collector == "copying" else int(S[S_HEAP])

    @property
    def clock(self) -> int:
        """Bytes allocated so far."""
        return int(self.H.S[S_CLOCK])

    @property
    def allocated_objects(self) -> int:
        return int(self.H.S[S_NALLOC])

    @property
    def objects(self) -> int:
        """Objects in the heap (live or not yet collected)."""
        return int(self.H.S[S_OBJS])

    @property
    def object_bytes(self) -> int:
        return int(self.H.S[S_OBJBYTES])

    def object_size(self, payload: int) -> int:
        return (self.header_bytes + int(payload) + 7) // 8 * 8

    def _set_single_chunk(self, start: int, size: int) -> None:
        H = self.H
        H.S[S_NF] = 1 if size > 0 else 0
        H.f_start[0] = start
        H.f_size[0] = size
        if size > 0:
            H.gmap[start >> 3] = -(size >> 3)
        KA.reset_cursor(H)

    # ------------------------------------------------------------------ allocation
    def allocate(self, stream, start: int, stop: int) -> tuple[int, int]:
        """Allocate stream objects [start, stop); returns (first object not allocated, A_DONE | A_FAIL)."""
        i = start
        while True:
            i, status = KA.alloc_batch(self.H, stream.payload, stream.nref, stream.cstart, stream.death,
                                       stream.immortal, stream.u_attach, stream.u_cross, stream.cross_p,
                                       stream.addr, i, stop)
            if status == A_GROW_ROOTS:
                self.H = grown(self.H, "roots")
                continue
            return int(i), int(status)

    @property
    def request_bytes(self) -> int:
        """Bytes of the request that failed last."""
        return int(self.H.S[S_NEED])

    def fits(self, nbytes: int) -> bool:
        return bool(KA.fits(self.H, nbytes))

    # ------------------------------------------------------------------ collection
    def collect(self, reason: str = "allocation", request: int = 0, timer=None,
                sink: Callable[[InstrBlock], None] | None = None, compaction: bool | None = None) -> Collection:
        """One collection.  ``request``: bytes of the allocation that failed (0 for an explicit one).
        Compaction follows the configured policy unless ``compaction`` forces it on or off.  With a
        ``timer`` the collection's cycles (and each phase's) are what it measured."""
        emit = timer is not None or sink is not None
        gen = self.collect_blocks(reason, request, compaction, emit=emit)
        c0 = timer.cycles if timer is not None else 0
        memory = getattr(timer, "memory", None)
        m0 = memory.counters()["memory"] if memory is not None else None
        marks: list[tuple[str, int]] = []
        while True:
            try:
                item = next(gen)
            except StopIteration as stop:
                coll = stop.value
                break
            if isinstance(item, str):
                marks.append((item, timer.cycles if timer is not None else 0))
                continue
            if timer is not None:
                timer.run(item)
            if sink is not None:
                sink(item)
        if timer is not None:
            end = timer.cycles
            coll.cycles = int(end - c0)
            bounds = marks + [("end", end)]
            for (name, at), (_, nxt) in zip(bounds[:-1], bounds[1:]):
                coll.phase_cycles[name] = coll.phase_cycles.get(name, 0) + int(nxt - at)
            coll.compaction_cycles = int(coll.phase_cycles.get("compact", 0))
        if m0 is not None:
            m1 = memory.counters()["memory"]
            coll.memory_reads = int(m1["reads"] - m0["reads"])
            coll.memory_writes = int(m1["writes"] - m0["writes"])
        return coll

    def collect_blocks(self, reason: str = "allocation", request: int = 0, compaction: bool | None = None,
                       emit: bool = True) -> Generator[InstrBlock | str, None, Collection]:
        """The collection as a generator: yields the collector's instruction blocks (each valid until the
        generator resumes) and, as strings, the name of each phase as it starts; returns the
        :class:`Collection` (with ``cycles`` 0: the consumer times the blocks)."""
        H = self.H
        S = H.S
        cfg = self.config
        now = S[S_CLOCK]
        KA.seal(H)
        KA.expire_roots(H, now)
        for k in (S_LIVE_OBJ, S_LIVE_BYTES, S_DEAD_OBJ, S_DEAD_BYTES, S_COPIED_OBJ, S_COPIED_BYTES,
                  S_ROOTS_SCANNED, S_MARK_VISITS, S_REFS_SCANNED, S_MAX_STACK, S_POS, S_TOP):
            S[k] = 0
        S[S_EPOCH] += 1
        S[S_COBJ] = -1
        H.hist_live[:] = 0
        H.hist_dead[:] = 0
        H.hist_gap[:] = 0
        heap_before = int(S[S_HEAP])
        clock = int(now)
        instr = 0
        compacted = False
        comp_instr = 0
        swept_chunks = 0
        if cfg.collector == "copying":
            semi = int(S[S_SEMISIZE])
            frm = int(S[S_SEMI])
            to = semi if frm == 0 else 0
            S[S_FROM] = frm
            S[S_DEST] = to
            S[S_SCAN] = to
            S[S_PHASE] = P_CROOTS
            yield "copy"
            instr += yield from self._steps(cp_step, P_DONE, emit)
            S[S_SEMI] = to
            self._set_single_chunk(int(S[S_DEST]), to + semi - int(S[S_DEST]))
            compacted = True
        else:
            S[S_PHASE] = P_CLEAR
            for phase, name in ((P_ROOTS, "clear"), (P_MARK, "roots"), (P_SWEEP, "mark"), (P_SWEPT, "sweep")):
                yield name
                instr += yield from self._steps(ms_step, phase, emit)
            H = self.H                                  # (the mark stack may have grown)
            swept_chunks = int(H.S[S_NF])
            KA.reset_cursor(H)
            free, largest = KA.free_stats(H)
            want = cfg.compaction if compaction is None else compaction
            if want and compaction is None:
                if reason == "explicit":
                    frag = 1.0 - largest / free if free > 0 else 0.0
                    want = frag > cfg.explicit_compaction_threshold
                else:
                    want = largest < request <= free
            if want:
                yield "compact"
                comp_instr = yield from self._steps(ms_step, P_DONE, emit)
                H = self.H
                instr += comp_instr
                compacted = True
                KA.reset_cursor(H)
            if cfg.growth == "expand":
                self._expand(request)
        free, largest = KA.free_stats(H)
        oom = ""
        if request > 0 and largest < request:
            oom = "request"
        elif reason == "allocation":
            self._starved = self._starved + 1 if free < cfg.overhead_free_ratio * self.space_bytes else 0
            if self._starved >= cfg.overhead_collections:
                oom = "overhead"
        coll = Collection(
            index=len(self.collections), reason=reason, clock_bytes=clock, heap_bytes=heap_before,
            live_objects=int(S[S_LIVE_OBJ]), live_bytes=int(S[S_LIVE_BYTES]), dead_objects=int(S[S_DEAD_OBJ]),
            dead_bytes=int(S[S_DEAD_BYTES]), copied_objects=int(S[S_COPIED_OBJ]),
            copied_bytes=int(S[S_COPIED_BYTES]), compacted=compacted, roots=int(S[S_ROOTS_SCANNED]),
            mark_visits=int(S[S_MARK_VISITS]), refs_scanned=int(S[S_REFS_SCANNED]), free_bytes_after=int(free),
            largest_free_after=int(largest), heap_after_bytes=int(S[S_HEAP]), instructions=int(instr),
            compaction_instructions=int(comp_instr), max_mark_stack=int(S[S_MAX_STACK]), swept_chunks=swept_chunks,
            out_of_memory=bool(oom), oom_reason=oom)
        nz = np.nonzero(H.hist_live + H.hist_dead)[0]
        coll.hist_payload = hist_bin_payload(nz)
        coll.hist_live = H.hist_live[nz].copy()
        coll.hist_dead = H.hist_dead[nz].copy()
        gz = np.nonzero(H.hist_gap)[0]
        coll.gap_payload = hist_bin_payload(gz)
        coll.hist_gap = H.hist_gap[gz].copy()
        self.collections.append(coll)
        return coll

    def _steps(self, step, stop_phase: int, emit: bool):
        """Drive a collector step function to ``stop_phase``, yielding each chunk; returns instructions."""
        total = 0
        while True:
            buf = self.buffer
            cap = len(buf[0]) - 64 if emit else 0
            n, status = step(self.H, buf, emit, cap, stop_phase)
            if n > 0:
                total += int(n)
                yield InstrBlock(*(a[:n] for a in buf))
            if status == ST_FINISHED:
                return total
            if status == ST_GROW_STACK:
                self.H = grown(self.H, "stack")
            elif status == ST_NEED_BUF:
                need = int(self.H.S[S_NEED]) + 128
                self.buffer = empty_buffer(1 << max(16, math.ceil(math.log2(need))))
            elif status != ST_MORE:
                raise RuntimeError(f"collector step returned status {status}")

    def _expand(self, request: int) -> None:
        """The ``expand`` growth policy (see simulator.gc.config)."""
        H = self.H
        S = H.S
        cfg = self.config
        heap = int(S[S_HEAP])
        free, largest = KA.free_stats(H)
        if free >= cfg.min_free_ratio * heap and largest >= request:
            return
        live = int(S[S_OBJBYTES])
        want = math.ceil((live + request) / (1.0 - cfg.min_free_ratio))
        want = max(want, heap + request)
        want = -(-want // GROWTH_STEP) * GROWTH_STEP
        want = min(want, int(S[S_MAXHEAP]))
        if want <= heap:
            return
        nf = int(S[S_NF])
        if nf > 0 and H.f_start[nf - 1] + H.f_size[nf - 1] == heap:
            H.f_size[nf - 1] += want - heap
            H.gmap[H.f_start[nf - 1] >> 3] = -(H.f_size[nf - 1] >> 3)
        else:
            H.f_start[nf] = heap
            H.f_size[nf] = want - heap
            H.gmap[heap >> 3] = -((want - heap) >> 3)
            S[S_NF] = nf + 1
        S[S_HEAP] = want
        KA.reset_cursor(H)

    # ------------------------------------------------------------------ inspection (tests, checks)
    def walk(self) -> list[tuple[int, int, int]]:
        """(offset, bytes, object id or -1 for a free chunk) of every block of the allocation space."""
        H = self.H
        S = H.S
        start = int(S[S_SEMI]) if self.config.collector == "copying" else 0
        end = start + self.space_bytes
        out = []
        pos = start
        while pos < end:
            v = int(H.gmap[pos >> 3])
            if v >= 0:
                size = int(H.o_size[v])
                out.append((pos, size, v))
            else:
                size = -v * 8
                out.append((pos, size, -1))
            pos += size
        return out

    def roots(self) -> list[int]:
        """Heap offsets the non-null root slots hold."""
        H = self.H
        return [int(r) - 1 for r in H.r_addr[:int(H.S[S_NROOTS])] if r != 0]

    def references(self, oid: int) -> list[int]:
        """Heap offsets (or -1 for null) in the reference fields of object ``oid``."""
        H = self.H
        base = (int(H.o_addr[oid]) + self.header_bytes) >> 2
        return [int(t) - 1 for t in H.mem[base:base + int(H.o_nref[oid])]]

    def object_at(self, offset: int) -> int:
        return int(self.H.gmap[offset >> 3])


# the collectors inline layout's helpers, and with them the memory state's run-time-value intrinsic (``_var``)
drop_stale_caches("gc", (isa, layout, state, memory_state, KA, KC, KM))
