"""A Java workload's minimum heap H_min, found by the heap simulator: the smallest fixed heap in which the
workload's whole allocation stream runs without running out of memory.

Seed 000 (§III-B) determines H_min "empirically to be the least heap size at which the Java application
can execute without any OutOfMemory errors"; :func:`find_min_heap` does the same on the simulated heap.
Each probe is a functional run of the stream (:func:`simulator.gc.run.simulate_gc` with ``timed=False``:
every allocation and collection, no timing) in a heap of the probed size; out of memory is the heap's own
verdict (a request that does not fit after a full collection and compaction, or the GC overhead limit:
:mod:`simulator.gc.config`).  A probe that runs out of memory stops there, so failing probes are cheap.

Search.  Heaps are multiples of :data:`GRANULE` (the heap's 8-byte allocation granule).  Starting from
a guess (the start-up's long-lived data, at least 16 of the largest objects), the size is doubled until
a probe runs or halved until one fails, which brackets H_min between a failing ``below`` and a running
``heap``; bisection then narrows the bracket until ``heap - below <= rel_tol * heap`` (or one granule).
Bisection assumes that a larger heap never fails where a smaller one ran; the simulated heap keeps to
that except near fragmentation thresholds, so the result is the boundary the bisection found: ``heap``
runs, ``below`` does not.  Deterministic for a stream seed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.gc.behaviour import MB, AllocBehaviour
from whatif.simulator.gc.config import MAX_HEAP_BYTES, heap_config
from whatif.simulator.gc.run import simulate_gc
from whatif.simulator.platform import Platform

GRANULE = 8                     # bytes: heaps are multiples of the allocation granule (simulator.gc.heap)
DEFAULT_REL_TOL = 0.01          # stop when the bracket is within 1 % of H_min


@dataclass(frozen=True)
class Probe:
    heap_bytes: int
    ran: bool                   # the whole stream ran without running out of memory
    reason: str                 # "" or the heap's out-of-memory reason ("request" | "overhead")
    collections: int


@dataclass(frozen=True)
class MinHeap:
    """H_min of one stream: ``heap_bytes`` ran, ``below_bytes`` ran out of memory (0: not probed, the
    smallest heap ran).  Sizes at the stream's ``scale``; ``full_size_kb`` undoes it."""
    workload: str
    collector: str
    scale: float
    seed: int
    heap_bytes: int
    below_bytes: int
    probes: tuple[Probe, ...] = field(default=())
    seconds: float = 0.0

    @property
    def full_size_kb(self) -> float:
        """H_min of the full-size run in KB (the heap over the volume scale)."""
        return self.heap_bytes / self.scale / 1024

    def to_dict(self) -> dict:
        return {"workload": self.workload, "collector": self.collector, "scale": self.scale, "seed": self.seed,
                "heap_bytes": self.heap_bytes, "below_bytes": self.below_bytes, "full_size_kb": self.full_size_kb,
                "probes": len(self.probes), "seconds": self.seconds}


def _granule(nbytes: float) -> int:
    return max(GRANULE, int(nbytes) // GRANULE * GRANULE)


def find_min_heap(behaviour: AllocBehaviour, platform: Platform, scale: float = 1.0, seed: int = 0,
                  collector: str = "mark-sweep", rel_tol: float = DEFAULT_REL_TOL, **config) -> MinHeap:
    """H_min of ``behaviour``'s allocation stream (volumes x ``scale``, stream ``seed``) in a fixed heap of
    ``collector``; ``config``: further :class:`~simulator.gc.config.HeapConfig` fields (header, compaction,
    overhead limit).  ``platform`` only names the run (probes are functional)."""
    if not 0 < rel_tol < 1:
        raise SimulatorInputError(f"find_min_heap: rel_tol must be in (0, 1), got {rel_tol}")
    started = time.perf_counter()
    probes: list[Probe] = []
    name = behaviour.name or "workload"

    def runs(heap: int) -> bool:
        if heap > MAX_HEAP_BYTES:
            raise SimulatorInputError(f"{name}: no heap up to {MAX_HEAP_BYTES >> 20} MB runs the allocation "
                                      f"stream (x{scale:g}) without running out of memory")
        cfg = heap_config(f"H_min of {name}", collector=collector, heap_bytes=heap, growth="fixed", **config)
        res = simulate_gc(behaviour, cfg, platform, scale=scale, seed=seed, timed=False)
        probes.append(Probe(heap, not res.out_of_memory, res.oom_reason, len(res.collections)))
        return not res.out_of_memory

    header = config.get("header_bytes", 4)
    largest = (header + behaviour.max_payload() + 7) // 8 * 8
    initial = int(behaviour.initial_live_mb * MB * scale)           # the start-up's long-lived data
    smallest = GRANULE * (2 if collector == "copying" else 1)
    heap = _granule(max(initial * (2 if collector == "copying" else 1), 16 * largest, smallest))
    below = 0
    if runs(heap):
        while heap > smallest:                      # halve until a probe fails
            trial = _granule(heap / 2)
            if not runs(trial):
                below = trial
                break
            heap = trial
    else:
        below = heap
        heap = _granule(heap * 2)
        while not runs(heap):                       # double until a probe runs
            below, heap = heap, _granule(heap * 2)
    while below and heap - below > max(GRANULE, rel_tol * heap):
        mid = _granule((heap + below) / 2)
        if mid <= below:
            break
        if runs(mid):
            heap = mid
        else:
            below = mid
    return MinHeap(workload=name, collector=collector, scale=scale, seed=seed, heap_bytes=heap, below_bytes=below,
                   probes=tuple(probes), seconds=time.perf_counter() - started)
