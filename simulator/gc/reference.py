"""Slow, obviously correct references for the optimised heap kernels (used by the tests).

* :func:`reachable` -- the live set by breadth-first search over the heap's roots and reference fields,
  in plain Python;
* :func:`expected_sweep` -- what a mark-sweep collection must leave: the live objects, the dead ones
  (with their payload histogram) and the free chunks (maximal runs of dead objects and free space);
* :func:`graph` -- the object graph as (payload, targets by object id) per id, to compare a heap before
  and after a collection that moves objects (compaction, copying): moving must not change it.
"""

from __future__ import annotations

from collections import Counter, deque

from whatif.simulator.gc import kernel_alloc as KA


def prepare(heap) -> None:
    """What every collection does first: record the current chunk's rest, drop expired roots."""
    KA.seal(heap.H)
    KA.expire_roots(heap.H, heap.clock)


def reachable(heap) -> set[int]:
    """Heap offsets of the objects reachable from the roots (call :func:`prepare` first)."""
    seen: set[int] = set()
    todo = deque(heap.roots())
    while todo:
        off = todo.popleft()
        if off in seen:
            continue
        seen.add(off)
        for t in heap.references(heap.object_at(off)):
            if t >= 0 and t not in seen:
                todo.append(t)
    return seen


def expected_sweep(heap) -> dict:
    """The outcome a mark-sweep collection of ``heap`` must have (call :func:`prepare` first)."""
    live = reachable(heap)
    H = heap.H
    free = []
    run_start = None
    live_objs = dead_objs = live_bytes = dead_bytes = 0
    hist_live: Counter = Counter()
    hist_dead: Counter = Counter()
    end = 0
    for off, size, oid in heap.walk():
        end = off + size
        is_live = oid >= 0 and off in live
        if is_live:
            if run_start is not None:
                free.append((run_start, off - run_start))
                run_start = None
            live_objs += 1
            live_bytes += size
            hist_live[int(H.o_payload[oid])] += 1
        else:
            if oid >= 0:
                dead_objs += 1
                dead_bytes += size
                hist_dead[int(H.o_payload[oid])] += 1
            if run_start is None:
                run_start = off
    if run_start is not None:
        free.append((run_start, end - run_start))
    return {"live": live, "live_objects": live_objs, "dead_objects": dead_objs, "live_bytes": live_bytes,
            "dead_bytes": dead_bytes, "free_chunks": free, "hist_live": hist_live, "hist_dead": hist_dead}


def graph(heap, offsets=None) -> dict[int, tuple[int, tuple[int, ...]]]:
    """id -> (payload, ids its reference fields point to, -1 for null) of the objects at ``offsets``
    (default: every object reachable from the roots)."""
    H = heap.H
    offsets = reachable(heap) if offsets is None else offsets
    out = {}
    for off in offsets:
        oid = heap.object_at(off)
        targets = tuple(heap.object_at(t) if t >= 0 else -1 for t in heap.references(oid))
        out[oid] = (int(H.o_payload[oid]), targets)
    return out


def root_ids(heap) -> list[int]:
    return sorted(heap.object_at(r) for r in heap.roots())
