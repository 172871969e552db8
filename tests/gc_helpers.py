"""Small heaps and behaviours shared by the GC tests."""

from __future__ import annotations

from whatif.simulator.gc.behaviour import AllocBehaviour, AllocationStream
from whatif.simulator.gc.config import heap_config
from whatif.simulator.gc.heap import Heap
from whatif.simulator.gc.state import A_FAIL

KB = 1024
MB = 1024 * 1024


def behaviour(sizes=((12, 12, 0.4, 1), (20, 44, 0.4, 2), (60, 300, 0.2, 3)), cross=0.2, cluster=3.0,
              immortal=0.05, phase=0.15, short=0.8, short_kb=32.0, initial_mb=0.05, total_mb=4.0,
              explicit=(), phases=2) -> AllocBehaviour:
    return AllocBehaviour(name="t", total_alloc_mb=total_mb, bytecodes_millions=total_mb * 4, initial_live_mb=initial_mb,
                          initial_cluster_objects=16, cluster_objects=cluster, cross_ref=cross, phases=phases,
                          explicit_gc=list(explicit),
                          lifetime={"immortal": immortal, "phase": phase, "short": short, "short_mean_kb": short_kb},
                          sizes=[tuple(s) for s in sizes])


def fill_until_failure(heap: Heap, stream: AllocationStream, max_batches: int = 50):
    """Allocate stream batches until an allocation fails; returns (batch, index of the failed object)."""
    for _ in range(max_batches):
        b = stream.next_batch()
        i, status = heap.allocate(b, 0, len(b))
        if status == A_FAIL:
            return b, i
    raise AssertionError("the heap never filled")


def small_heap(collector="mark-sweep", heap_kb=256, **kw) -> Heap:
    return Heap(heap_config(collector=collector, heap_bytes=heap_kb * KB, **kw))
