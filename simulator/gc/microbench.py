"""The HBench:JGC microbenchmark of seed 003 §5.3.2, run on the simulated heap and platform.

The heap is populated with an array of singly linked lists (``n_lists`` lists of ``list_length``
objects of ``object_size`` payload bytes), then collected three times, each an explicit collection:

1. ``live``  -- every object is live;
2. ``dead``  -- after the array's fields were set to null: every list object is reclaimable;
3. ``empty`` -- after the collection of step 2: the heap is empty (but for the array).

Building the lists writes them (the allocation stores of :mod:`simulator.gc.mutator` go through the
memory hierarchy), then each collection is timed on the platform through its memory hierarchy.  Before
the steps named in ``flush_before`` (default: steps 2 and 3) the mutator's own data streams through the
caches, so that each collection starts with the caches an application's collection finds: in an
application the objects that die were last touched by the mutator long before (that is why they are
garbage), and the mark bitmap was evicted by the allocation since the previous collection, whereas in
the microbenchmark step 1 has just walked every list object and step 2 the bitmap.  A row per step
records the time, cycles, instructions, the mark phase's time and the memory reads during the
collection (seed 003 Figures 5-4 and 5-7), and the lines it wrote back to memory: a flush that stores
leaves the caches dirty, as an application's allocation does, and the collection that evicts them writes
them back; ``dirty_flush=False`` flushes with loads, so the two runs differ by that traffic alone.
With ``rooted=True`` each list is held by a root slot of its own instead of the array's field (an
application's collector scans thousands of roots: stack slots, statics, JNI handles), and the rows' roots
phase times (``roots_seconds``) over their root counts give the cost of scanning a root.
``copy_bandwidth`` measures the platform's copy bandwidth the same way (a memcpy stream), the figure the
HBench:JGC analyzer divides bytes copied by.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from whatif.jitcache import drop_stale_caches
from whatif.simulator import isa
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.gc import kernel_alloc as KA
from whatif.simulator.gc import layout, state
from whatif.simulator.gc.config import heap_config
from whatif.simulator.gc.heap import Heap
from whatif.simulator.gc.mutator import flush, touch
from whatif.simulator.gc.layout import HEAP_BASE, PC_ALLOC, R_CNT, R_DST, R_POS, R_TMP, alu, branch, load, store
from whatif.simulator.gc.state import IMMORTAL, S_NROOTS, grown
from whatif.simulator.gc.timing import GcTimer, empty_buffer
from whatif.simulator.isa import InstrBlock
from whatif.simulator.memory import state as memory_state
from whatif.simulator.platform import Platform

STEPS = ("live", "dead", "empty")
MB = 1024 * 1024
PC_COPY = PC_ALLOC + 0x100


def run_microbenchmark(platform: Platform, heap_bytes: int, n_lists: int, list_length: int, object_size: int,
                       collector: str = "mark-sweep", header_bytes: int = 4, seed: int = 0,
                       flush_before: tuple[str, ...] = ("dead", "empty"), fields: int = 1,
                       twin: bool = False, dirty_flush: bool = True, rooted: bool = False) -> list[dict]:
    """One configuration of the microbenchmark: three rows (live, dead, empty).  ``fields`` reference
    fields per object (1: just ``next``); ``twin``: the second field also points to the next object
    (fan-in two), the variants that separate the fan-out and fan-in costs of seed 003 §5.2.1.2.
    ``dirty_flush=False``: the flushes load the mutator's data instead of storing it, so the caches a
    collection finds are clean and it writes back only its own lines.  ``rooted``: each list is held by a
    root slot of its own instead of the array's field (one reference field per object)."""
    for name, value in (("n_lists", n_lists), ("list_length", list_length), ("object_size", object_size),
                        ("fields", fields)):
        if value <= 0:
            raise SimulatorInputError(f"microbenchmark: {name} must be positive, got {value}")
    cfg = heap_config("microbenchmark", collector=collector, heap_bytes=int(heap_bytes), header_bytes=header_bytes)
    heap = Heap(cfg)
    if 4 * fields > object_size:
        raise SimulatorInputError(f"microbenchmark: {fields} reference fields do not fit in {object_size} bytes")
    if rooted and (fields != 1 or twin):
        raise SimulatorInputError("microbenchmark: rooted lists have one reference field per object")
    while rooted and len(heap.H.r_addr) <= int(heap.H.S[S_NROOTS]) + n_lists:
        heap.H = grown(heap.H, "roots")
    arr = KA.build_lists(heap.H, n_lists, list_length, object_size, IMMORTAL, fields, twin, rooted)
    if arr < 0:
        need = n_lists * list_length * heap.object_size(object_size) + heap.object_size(4 * n_lists)
        raise SimulatorInputError(f"microbenchmark: {n_lists} x {list_length} objects of {object_size} bytes "
                                  f"need {need:,} bytes; the heap has {heap.space_bytes:,}")
    timer = GcTimer(platform, seed=seed)
    used = heap.clock                      # the lists were bump-allocated from offset 0
    touch(timer.memory, np.array([0], np.int64), np.array([used], np.int64))
    rows = []
    for step in STEPS:
        if step == "dead" and rooted:
            heap.H.r_addr[:int(heap.H.S[S_NROOTS])] = 0        # every slot null
        elif step == "dead":
            arr = heap.roots()[0]
            for i in range(n_lists):
                KA.set_field(heap.H, arr, i, -1)
        if step in flush_before:
            flush(timer.memory, platform, dirty=dirty_flush)
        c = heap.collect("explicit", timer=timer, compaction=False)
        rows.append({"step": step, "heap_bytes": int(heap_bytes), "heap_mb": heap_bytes / MB,
                     "object_size": int(object_size), "objects": int(n_lists * list_length),
                     "n_lists": int(n_lists), "list_length": int(list_length), "fields": int(fields),
                     "fan_in": 2 if twin and fields > 1 else 1,
                     "gc_seconds": platform.cycles_to_seconds(c.cycles), "cycles": int(c.cycles),
                     "mark_seconds": platform.cycles_to_seconds(c.phase_cycles["mark"])
                     if "mark" in c.phase_cycles else float("nan"),
                     "roots": int(c.roots), "roots_seconds": platform.cycles_to_seconds(c.phase_cycles["roots"])
                     if "roots" in c.phase_cycles else float("nan"),
                     "instructions": int(c.instructions), "memory_reads": int(c.memory_reads),
                     "memory_writes": int(c.memory_writes), "dirty_flush": bool(dirty_flush),
                     "live_objects": int(c.live_objects), "dead_objects": int(c.dead_objects)})
    return rows


@njit(cache=True)
def _copy_stream(buf, src, dst, start, stop, total):
    n = 0
    for off in range(start, stop, 8):
        n = load(buf, n, True, PC_COPY, R_TMP, R_POS, src + off, 8)
        n = store(buf, n, True, PC_COPY + 4, R_TMP, R_DST, dst + off, 8)
        n = alu(buf, n, True, PC_COPY + 8, R_CNT, R_CNT, -1)
        n = branch(buf, n, True, PC_COPY + 12, R_CNT, off + 8 < total, PC_COPY)
    return n


def copy_bandwidth(platform: Platform, nbytes: int = 4 * MB, seed: int = 0) -> dict:
    """Bytes per second of an 8-byte load/store copy loop over ``nbytes`` (source and destination
    disjoint, both far larger than the caches for the default size)."""
    timer = GcTimer(platform, seed=seed)
    chunk = 1 << 15
    buf = empty_buffer(4 * chunk + 64)
    src = HEAP_BASE
    dst = HEAP_BASE + nbytes + (1 << 20)
    done = 0
    while done < nbytes:
        n = _copy_stream(buf, src, dst, done, min(nbytes, done + 8 * chunk), nbytes)
        timer.run(InstrBlock(*(a[:n] for a in buf)))
        done = min(nbytes, done + 8 * chunk)
    seconds = platform.cycles_to_seconds(timer.cycles)
    return {"bytes": int(nbytes), "cycles": int(timer.cycles), "seconds": seconds,
            "bytes_per_second": nbytes / seconds if seconds > 0 else float("inf")}


# layout's helpers inlined, and with them the memory state's ``_var``
drop_stale_caches("gc_microbench", (isa, layout, state, memory_state, sys.modules[__name__]))
