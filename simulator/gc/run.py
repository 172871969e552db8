"""Running a workload's allocation behaviour through a simulated heap: the GC log of a whole run.

``simulate_gc(behaviour, heap_config, platform, scale, seed)`` allocates the workload's stream,
collects on every allocation failure and at every explicit ``System.gc()``, times every collection's
instruction stream on the platform (:class:`simulator.gc.timing.GcTimer`, one memory hierarchy for the
whole run, so the caches carry over from one collection to the next), and stops with an
out-of-memory condition when a request does not fit even after a full collection.

``scale`` shrinks the run's volumes (allocation, start-up data, lifetimes in bytes) and, in the
callers, the heap by the same factor, so the number of collections and the heap occupancy at each one
stay those of the full-size run; object sizes are never scaled, so their relation to the cache line
(what the per-object costs depend on) is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from whatif.simulator.gc.behaviour import AllocBehaviour, AllocationStream
from whatif.simulator.gc.config import HeapConfig
from whatif.simulator.gc.heap import Collection, Heap
from whatif.simulator.gc.mutator import touch
from whatif.simulator.gc.state import A_FAIL
from whatif.simulator.gc.timing import GcTimer
from whatif.simulator.platform import Platform


@dataclass
class GcRunResult:
    workload: str
    collector: str
    platform: str
    clock_hz: float
    heap_bytes: int
    scale: float
    units_per_byte: float
    cycles_per_unit: float
    collections: list[Collection]
    allocated_bytes: int
    allocated_objects: int
    out_of_memory: bool = False
    oom_request_bytes: int = 0
    oom_live_bytes: int = 0
    oom_reason: str = ""
    simulation_seconds: float = 0.0
    counters: dict = field(default_factory=dict)

    @property
    def units(self) -> float:
        return self.allocated_bytes * self.units_per_byte

    @property
    def mutator_seconds(self) -> float:
        """Mutator time estimate: units x cycles_per_unit (the GC time is simulated, this is not)."""
        return self.units * self.cycles_per_unit / self.clock_hz

    @property
    def gc_seconds(self) -> float:
        return sum(c.cycles for c in self.collections) / self.clock_hz


class RecentAllocations:
    """The objects allocated since the last collection, of which only the last ``window`` bytes are
    written through the memory hierarchy before the next one: the caches (LRU-like, smaller than the
    window) end up in the same state as after writing them all, at a fraction of the simulation time."""

    def __init__(self, window: int):
        self.window = window
        self.parts: list[tuple[np.ndarray, np.ndarray]] = []
        self.bytes = 0

    def add(self, addr: np.ndarray, nbytes: np.ndarray) -> None:
        self.parts.append((addr, nbytes))
        self.bytes += int(nbytes.sum())
        while self.parts and self.bytes - int(self.parts[0][1].sum()) >= self.window:
            self.bytes -= int(self.parts.pop(0)[1].sum())

    def flush(self, timer) -> None:
        if timer is None or not self.parts:
            self.parts, self.bytes = [], 0
            return
        addr = np.concatenate([a for a, _ in self.parts])
        nbytes = np.concatenate([n for _, n in self.parts])
        keep = np.searchsorted(np.cumsum(nbytes[::-1]), self.window) + 1
        touch(timer.memory, addr[-keep:], nbytes[-keep:])
        self.parts, self.bytes = [], 0


def simulate_gc(behaviour: AllocBehaviour, config: HeapConfig, platform: Platform, scale: float = 1.0,
                seed: int = 0, timed: bool = True, timer: GcTimer | None = None,
                progress: Callable[[int], None] | None = None, batch: int = 1 << 16,
                touch_allocations: bool = True) -> GcRunResult:
    """Run ``behaviour`` through a heap of ``config`` on ``platform``.  ``progress(bytes)`` is called as
    allocation advances.  With ``timed=False`` collections are functional only (no durations).  With
    ``touch_allocations`` the stores initialising new objects go through the memory hierarchy
    (:mod:`simulator.gc.mutator`; the last twice-the-largest-cache bytes before each collection), so each
    collection finds the caches as the mutator left them."""
    import time

    t0 = time.perf_counter()
    heap = Heap(config)
    stream = AllocationStream(behaviour, config.header_bytes, scale=scale, seed=seed, batch=batch)
    if timed and timer is None:
        timer = GcTimer(platform, seed=seed)
    elif not timed:
        timer = None
    pending = list(stream.explicit_bytes)
    recent = RecentAllocations(2 * max(int(c.size_kb * 1024) for c in platform.caches.values()))
    total = stream.total_bytes
    oom = False
    oom_request = 0
    reported = 0
    while not stream.done and not oom:
        b = stream.next_batch()
        clock0 = heap.clock
        cum = clock0 + np.cumsum(b.nbytes)
        end = len(b) if cum[-1] <= total else int(np.searchsorted(cum, total, side="left")) + 1
        i = 0
        while i < end:
            stop = end
            explicit_here = False
            if pending and pending[0] <= cum[end - 1]:
                stop = max(i + 1, int(np.searchsorted(cum, pending[0], side="left")) + 1)
                stop = min(stop, end)
                explicit_here = True
            j, status = heap.allocate(b, i, stop)
            if timer is not None and touch_allocations and j > i:
                recent.add(b.addr[i:j], b.nbytes[i:j])
            if status == A_FAIL:
                recent.flush(timer)
                c = heap.collect("allocation", request=heap.request_bytes, timer=timer)
                if c.out_of_memory:
                    oom = True
                    oom_request = heap.request_bytes
                    break
                i = j
                continue
            i = j
            if explicit_here and i >= stop:
                recent.flush(timer)
                heap.collect("explicit", timer=timer)
                pending.pop(0)
        if progress is not None:         # the last object may cross the total: the bar stops at 100 %
            done = min(heap.clock, total)
            progress(done - reported)
            reported = done
    last = heap.collections[-1] if heap.collections else None
    return GcRunResult(
        workload=behaviour.name, collector=config.collector, platform=platform.name,
        clock_hz=platform.clock_ghz * 1e9, heap_bytes=config.heap_bytes, scale=scale,
        units_per_byte=stream.units_per_byte, cycles_per_unit=behaviour.cycles_per_unit,
        collections=list(heap.collections), allocated_bytes=heap.clock, allocated_objects=heap.allocated_objects,
        out_of_memory=oom, oom_request_bytes=int(oom_request),
        oom_live_bytes=int(last.live_bytes) if (oom and last is not None) else 0,
        oom_reason=last.oom_reason if (oom and last is not None) else "",
        simulation_seconds=time.perf_counter() - t0,
        counters=timer.counters() if timer is not None else {})
