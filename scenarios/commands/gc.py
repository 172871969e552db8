"""``whatif gc``: a workload's allocation behaviour through a simulated heap on a platform -- the GC
log (contract 4) and a GCViewer-style summary.

    whatif gc --workload specjvm98/javac --heap-mb 64 [--platform mpc7447a] [--collector mark-sweep|copying]
              [--scale 0.125] [--growth fixed|expand --max-heap-mb M] [--seed N] [--json] [--out DIR]

``--scale`` shrinks the run's allocation volume, start-up data and lifetimes, and the heap, by one
factor (object sizes are kept), so the number of collections is the full run's at a fraction of the
simulation time.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import pandas as pd

from whatif.scenarios.errors import ScenarioError
from whatif.scenarios.kernels import load_kernels
from whatif.scenarios.render.java_inputs import input_label, inputs_doc, inputs_table
from whatif.scenarios.results.directory import write_results_dir
from whatif.scenarios.results.progress import progress_bar
from whatif.scenarios.results.report import Report, figure_png
from whatif.scenarios.results.writer import check_results_target
from whatif.simulator.gc.behaviour import load_behaviour
from whatif.simulator.gc.config import check_collector, heap_config
from whatif.simulator.gc.log import gc_live_spacing, gc_log, gc_size_histogram, summary
from whatif.simulator.gc.run import simulate_gc
from whatif.simulator.platform import load_platform

MB = 1024 * 1024
LOG_PREVIEW = 40


def gc_command(workload: str, heap_mb: float | None, platform_name: str = "mpc7447a",
               collector: str = "mark-sweep", scale: float = 1.0, growth: str = "fixed",
               max_heap_mb: float | None = None, seed: int = 0, out: Path | None = None,
               progress: bool = True, overrides: list[str] = ()) -> tuple[dict[str, Any], pd.DataFrame]:
    """Run the simulation; returns the JSON document and the GC log."""
    started = time.perf_counter()
    if out is not None:
        check_results_target(out)
    check_collector(collector)
    if not scale > 0 or scale > 1:
        raise ScenarioError(f"--scale must be in (0, 1], got {scale}")
    behaviour = load_behaviour(workload)
    platform = load_platform(platform_name, overrides)
    heap_source = input_label("heap_mb", workload) if heap_mb is None else "input (--heap-mb)"
    heap_mb = behaviour.heap_mb if heap_mb is None else heap_mb
    if not heap_mb > 0:
        raise ScenarioError(f"--heap-mb must be > 0, got {heap_mb:g}")
    if not math.isfinite(heap_mb):
        raise ScenarioError(f"--heap-mb must be a finite number of MB, got {heap_mb:g}")
    if growth == "expand" and max_heap_mb is None:
        raise ScenarioError("--growth expand needs --max-heap-mb, the largest the heap may grow to")
    if max_heap_mb is not None and growth != "expand":
        raise ScenarioError(f"--max-heap-mb applies to --growth expand only (the heap is fixed at --heap-mb "
                            f"{heap_mb:g})")
    if max_heap_mb is not None and not 0 < max_heap_mb < math.inf:
        raise ScenarioError(f"--max-heap-mb must be a finite number of MB > 0, got {max_heap_mb:g}")
    heap_bytes = int(heap_mb * MB * scale)
    smallest = (4 + behaviour.min_payload() + 7) // 8 * 8
    if collector == "copying":
        smallest *= 2
    if heap_bytes < smallest:
        raise ScenarioError(f"--heap-mb {heap_mb:g} (x scale {scale:g} = {heap_bytes} bytes) is smaller than one "
                            f"object of {workload} ({smallest} bytes{' per semispace' if collector == 'copying' else ''})")
    kwargs = dict(collector=collector, heap_bytes=heap_bytes, growth=growth)
    if max_heap_mb is not None:
        kwargs["max_heap_bytes"] = int(max_heap_mb * MB * scale)
    config = heap_config("whatif gc", **kwargs)

    total = int(behaviour.total_alloc_mb * MB * scale)
    # (a timed heap: the collector's kernels, the core's that time them, the trace kernel for the mutator's stores)
    load_kernels(progress, [platform], trace=platform, collectors=(collector,))
    with progress_bar(total, f"allocating ({workload})", enabled=progress) as advance:
        result = simulate_gc(behaviour, config, platform, scale=scale, seed=seed, progress=advance)
    log = gc_log(result)
    hist = gc_size_histogram(result)
    figures = summary(result, log)
    # the run allocates its input volume: an input (seed 003 Table 5-3 where the seed gives it), not a result
    inputs = inputs_doc(workload, behaviour, scale)
    inputs["heap_mb"] = {"value": heap_mb, "what": "heap (MB, full size)", "source": heap_source}
    inputs["allocated_bytes"] = {"value": figures.pop("allocated_bytes"), "what": "bytes allocated (x scale)",
                                 "source": input_label("total_alloc_mb", workload)}
    doc = {"workload": workload, "platform": platform.name, "collector": collector, "heap_mb": heap_mb,
           "scale": scale, "seed": seed, "growth": growth, "inputs": inputs,
           "summary": figures,
           "gc_log": log.to_dict(orient="records")}
    if out is not None:
        write_outputs(out, doc, log, hist, result, platform, started, behaviour)
    return doc, log


def write_outputs(out: Path, doc: dict, log: pd.DataFrame, hist: pd.DataFrame, result, platform,
                  started: float, behaviour) -> None:
    pauses = figure_png(pause_figure(log)) if len(log) else None       # rendered once: report and file

    def report(rep: Report) -> None:
        rep.heading("Inputs")
        rep.table(inputs_table({doc["workload"]: behaviour}, doc["scale"],
                               {doc["workload"]: doc["heap_mb"]} if doc["inputs"]["heap_mb"]["source"] ==
                               "input (--heap-mb)" else None),
                  caption="What the run was given (not results); heap: " + doc["inputs"]["heap_mb"]["source"])
        rep.heading("Summary")
        rep.table(pd.DataFrame([(k, v) for k, v in doc["summary"].items()], columns=["figure", "value"]))
        if pauses is not None:
            rep.figure(pauses, "Pause time and heap occupancy after each collection")
        rep.heading("GC log")
        rep.table(log)

    write_results_dir(out, title=f"whatif gc: {doc['workload']} on {doc['platform']}, {doc['collector']}, "
                                 f"{doc['heap_mb']:g} MB heap", study="gc",
                      results={k: v for k, v in doc.items() if k != "gc_log"}, started=started,
                      tables={"gc_log": log, "gc_size_histogram": hist, "gc_live_spacing": gc_live_spacing(result)},
                      figures={"pauses": pauses} if pauses is not None else {}, report=report, seed=doc["seed"],
                      parameters={k: doc[k] for k in ("workload", "platform", "collector", "heap_mb", "scale",
                                                      "growth")},
                      platforms={platform.name: platform.model_dump()},
                      rates={"allocated_objects_per_s": result.allocated_objects / result.simulation_seconds
                             if result.simulation_seconds > 0 else 0.0})


def pause_figure(log: pd.DataFrame):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    ax.bar(log["gc"], log["duration_s"] * 1e3, color=["tab:red" if e else "tab:blue" for e in log["explicit"]])
    ax.set_xlabel("collection (red: explicit)")
    ax.set_ylabel("pause (ms)")
    ax2 = ax.twinx()
    ax2.plot(log["gc"], log["live_bytes"] / MB, "k.-", label="live after (MB)")
    ax2.set_ylabel("live after collection (MB)")
    ax.set_title("GC pauses and heap after collection")
    return fig


def print_summary(doc: dict[str, Any], log: pd.DataFrame) -> None:
    from whatif.scenarios.render import stdout_console
    from rich.table import Table

    console = stdout_console()
    s = doc["summary"]
    t = Table(title=f"{doc['workload']} on {doc['platform']}: {doc['collector']}, heap {doc['heap_mb']:g} MB"
                    + (f" (x{doc['scale']:g})" if doc["scale"] != 1 else "")
                    + f", {doc['inputs']['heap_mb']['source']}")
    t.add_column("figure")
    t.add_column("value", justify="right")
    rows = [("collections", f"{s['collections']} ({s['explicit_collections']} explicit, "
                            f"{s['compacting_collections']} compacting)"),
            ("total pause", f"{s['total_pause_s'] * 1e3:.3f} ms"), ("mean pause", f"{s['mean_pause_s'] * 1e3:.3f} ms"),
            ("max pause", f"{s['max_pause_s'] * 1e3:.3f} ms"),
            ("GC throughput", f"{s['gc_throughput_pct']:.2f} % (mutator time estimated)"),
            ("freed", f"{s['freed_bytes'] / MB:.1f} MB, {s['freed_bytes_per_s'] / MB:.1f} MB/s"),
            ("allocated", f"{doc['inputs']['allocated_bytes']['value'] / MB:.1f} MB "
                          f"({doc['inputs']['allocated_bytes']['source']}) in {s['allocated_objects']:,} objects"),
            ("live after GC", f"mean {s['mean_live_after_bytes'] / MB:.2f} MB, max {s['max_live_after_bytes'] / MB:.2f} MB"),
            ("out of memory", "YES" if s["out_of_memory"] else "no")]
    for k, v in rows:
        t.add_row(k, v)
    console.print(t)
    if s["out_of_memory"]:
        why = ("does not fit after a full collection" if s["oom_reason"] == "request" else
               "could not be met: collections in a row freed less than 2% of the heap")
        console.print(f"[red]out of memory[/]: a request of {s['oom_request_bytes']:,} bytes {why} "
                      f"({s['oom_live_bytes']:,} bytes live in a {s['heap_bytes']:,}-byte heap)")
    if len(log):
        lt = Table(title="GC log" + (f" (first {LOG_PREVIEW})" if len(log) > LOG_PREVIEW else ""))
        for col in ("gc", "reason", "pause ms", "heap MB", "live objs", "live MB", "dead objs", "copied KB"):
            lt.add_column(col, justify="right")
        for r in log.head(LOG_PREVIEW).itertuples():
            lt.add_row(str(r.gc), r.reason, f"{r.duration_s * 1e3:.3f}", f"{r.heap_bytes / MB:.2f}",
                       f"{r.live_objects:,}", f"{r.live_bytes / MB:.2f}", f"{r.dead_objects:,}",
                       f"{r.bytes_copied / 1024:.0f}")
        console.print(lt)
