"""The GC log (contract 4 of DESIGN.md) and a GCViewer-style summary of it.

``gc_log(result)`` is one row per collection:

==================  ===========================================================================
gc                  collection number, from 0
reason              ``allocation`` (an allocation failed) or ``explicit`` (``System.gc()``)
explicit            reason == "explicit"
t_start_s           start time: mutator time so far (estimate, see below) plus earlier pauses
duration_s          the collection's time (simulated: its instruction stream on the platform)
cycles              the same in core cycles; ``instructions`` the collector's instructions
heap_bytes          heap size during the collection; ``heap_after_bytes`` after it (growth)
live_objects        objects that survived; ``live_bytes`` their heap bytes (headers included)
dead_objects        objects reclaimed; ``dead_bytes`` their heap bytes
bytes_copied        bytes moved (compaction or copying); ``objects_copied``
compacted           the collection moved objects
compaction_s        time of the compaction passes (mark-sweep)
free_bytes_after    free space after the collection; ``largest_free_after`` its largest chunk
swept_chunks        free chunks the sweep closed, a header written each (mark-sweep; 0 for copying)
memory_reads        lines read from memory during the collection (``memory_writes``: written back), as a PMU
                    counts them; 0 when the collection was not timed
allocated_bytes     bytes allocated before the collection; ``units`` the bytecode-equivalent units
roots, mark_visits, references_scanned   connectivity seen by the collector (fan-in, fan-out)
==================  ===========================================================================

``gc_size_histogram(result)`` is the object-size histogram of every collection in long form (gc,
object_size in payload bytes, live, dead), the profile HBench:JGC's analyzer reads with the log;
``gc_live_spacing(result)`` the spacing of the live objects (gc, spacing, count), a heap-dump measure.

Mutator time is not simulated here (no mutator instruction stream runs): it is estimated as units x
the workload's ``cycles_per_unit``, and the summary says so.  A Java run on a core model
(:mod:`simulator.gc.javarun`) replaces the estimate with measured time.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

LOG_COLUMNS = ("gc", "reason", "explicit", "t_start_s", "duration_s", "cycles", "instructions", "heap_bytes",
               "heap_after_bytes", "live_objects", "live_bytes", "dead_objects", "dead_bytes", "bytes_copied",
               "objects_copied", "compacted", "compaction_s", "free_bytes_after", "largest_free_after",
               "swept_chunks", "memory_reads", "memory_writes", "allocated_bytes", "units", "roots", "mark_visits",
               "references_scanned")


def gc_log(result) -> pd.DataFrame:
    """The GC log of a :class:`simulator.gc.run.GcRunResult`."""
    hz = result.clock_hz
    rows = []
    paused = 0.0
    for c in result.collections:
        units = c.clock_bytes * result.units_per_byte
        mutator_s = units * result.cycles_per_unit / hz
        duration = c.cycles / hz
        rows.append({"gc": c.index, "reason": c.reason, "explicit": c.explicit,
                     "t_start_s": mutator_s + paused, "duration_s": duration, "cycles": c.cycles,
                     "instructions": c.instructions, "heap_bytes": c.heap_bytes, "heap_after_bytes": c.heap_after_bytes,
                     "live_objects": c.live_objects, "live_bytes": c.live_bytes, "dead_objects": c.dead_objects,
                     "dead_bytes": c.dead_bytes, "bytes_copied": c.copied_bytes, "objects_copied": c.copied_objects,
                     "compacted": c.compacted, "compaction_s": c.compaction_cycles / hz,
                     "free_bytes_after": c.free_bytes_after, "largest_free_after": c.largest_free_after,
                     "swept_chunks": c.swept_chunks, "memory_reads": c.memory_reads,
                     "memory_writes": c.memory_writes, "allocated_bytes": c.clock_bytes, "units": units,
                     "roots": c.roots, "mark_visits": c.mark_visits, "references_scanned": c.refs_scanned})
        paused += duration
    return pd.DataFrame(rows, columns=list(LOG_COLUMNS))


def gc_size_histogram(result) -> pd.DataFrame:
    parts = []
    for c in result.collections:
        if len(c.hist_payload):
            parts.append(pd.DataFrame({"gc": c.index, "object_size": c.hist_payload.astype(np.int64),
                                       "live": c.hist_live.astype(np.int64), "dead": c.hist_dead.astype(np.int64)}))
    if not parts:
        return pd.DataFrame({"gc": pd.Series(dtype=np.int64), "object_size": pd.Series(dtype=np.int64),
                             "live": pd.Series(dtype=np.int64), "dead": pd.Series(dtype=np.int64)})
    return pd.concat(parts, ignore_index=True)


def gc_live_spacing(result) -> pd.DataFrame:
    """The spacing of every collection's live objects (gc, spacing in bytes less the header, count):
    how far each survivor is from the previous one in address order (see :mod:`simulator.gc.state`)."""
    parts = [pd.DataFrame({"gc": c.index, "spacing": c.gap_payload.astype(np.int64), "count": c.hist_gap.astype(np.int64)})
             for c in result.collections if len(c.gap_payload)]
    if not parts:
        return pd.DataFrame({"gc": pd.Series(dtype=np.int64), "spacing": pd.Series(dtype=np.int64),
                             "count": pd.Series(dtype=np.int64)})
    return pd.concat(parts, ignore_index=True)


def summary(result, log: pd.DataFrame | None = None) -> dict[str, Any]:
    """GCViewer-style figures of a run: pauses, throughput, freed memory, footprint."""
    log = gc_log(result) if log is None else log
    n = len(log)
    gc_s = float(log["duration_s"].sum()) if n else 0.0
    mutator_s = result.mutator_seconds
    total_s = mutator_s + gc_s
    freed = int(log["dead_bytes"].sum()) if n else 0
    doc = {
        "workload": result.workload, "collector": result.collector, "platform": result.platform,
        "heap_bytes": int(result.heap_bytes), "scale": result.scale,
        "allocated_bytes": int(result.allocated_bytes), "allocated_objects": int(result.allocated_objects),
        "units": result.units,
        "collections": n, "explicit_collections": int(log["explicit"].sum()) if n else 0,
        "compacting_collections": int(log["compacted"].sum()) if n else 0,
        "total_pause_s": gc_s,
        "mean_pause_s": gc_s / n if n else 0.0,
        "max_pause_s": float(log["duration_s"].max()) if n else 0.0,
        "min_pause_s": float(log["duration_s"].min()) if n else 0.0,
        "mutator_s": mutator_s, "mutator_time": "estimate: units x cycles_per_unit (no mutator stream simulated)",
        "run_s": total_s,
        "gc_throughput_pct": 100.0 * mutator_s / total_s if total_s > 0 else 100.0,
        "freed_bytes": freed,
        "freed_bytes_per_s": freed / total_s if total_s > 0 else 0.0,
        "bytes_copied": int(log["bytes_copied"].sum()) if n else 0,
        "mean_live_after_bytes": float(log["live_bytes"].mean()) if n else 0.0,
        "max_live_after_bytes": int(log["live_bytes"].max()) if n else 0,
        "max_heap_bytes": int(max([result.heap_bytes] + list(log["heap_after_bytes"]))) if n else int(result.heap_bytes),
        "out_of_memory": bool(result.out_of_memory),
        "simulation_seconds": result.simulation_seconds,
    }
    if result.out_of_memory:
        doc["oom_request_bytes"] = int(result.oom_request_bytes)
        doc["oom_live_bytes"] = int(result.oom_live_bytes)
        doc["oom_reason"] = result.oom_reason
    return doc
