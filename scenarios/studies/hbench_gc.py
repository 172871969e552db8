"""Study kind ``hbench-gc``: HBench:JGC (seed 003 §5.4) on a simulated platform.

For each run (platform under a variant): the microbenchmarks of the ``[hbench.microbench]`` plan and
a copy-bandwidth measurement characterise the collector (C_fixed, C_live, C_dead, C_ref, C_visit:
Table 5-4); every application's allocation behaviour runs through the simulated heap, whose collections
are timed on the platform (the actual times); the GC logs are the applications' profiles; the analyzer
predicts every collection (Figure 5-9) and the errors are summarised (Table 5-5).  An optional heap-size
sweep counts one application's collections over heap sizes (functional simulation, no timing).

``[hbench]`` keys: ``applications`` (workload names), ``scale`` (volume and heap scale, (0, 1]),
``collector``, ``heap_mb`` (table: application -> full-size heap MB; default the behaviour's),
``distribution`` ("pooled" | "separate"), ``connectivity`` (bool), ``spacing`` (bool), ``roots`` (bool), ``goal_pct``, ``[hbench.microbench]``
(fields of :class:`models.hbench.MicrobenchPlan`), ``[hbench.heap_sweep]`` (``application``,
``factors`` of its heap).

``results.json``::

    {"apps": {name: {"collections": n, "mean_abs_error_pct": x, "max_abs_error_pct": x,
                     "time_difference_pct": x, "compacting_collections": n,
                     "without_explicit": {...}, "thesis_form": {...}, "allocated_objects": n, "out_of_memory": b,
                     "inputs": {"total_alloc_mb" | "heap_mb" | "explicit_gc": {"value", "what", "source"},
                                "scale": x, "heap_bytes_simulated": n}}},
     "cost_functions": {"c_fixed": {...}, "c_live_s": {size: s}, "c_dead_s": {...}, "c_ref_s": x, "c_root_s": x, ...},
     "goal": {"pct": 5, "apps_within": k, "applications": n, "met": bool},
     "heap_sweep": {...}, "platform": name, "runs": [...]   (runs: one entry per run when there are several)}

Workload inputs taken from seed 003 (allocation volumes of Table 5-3, heaps of Figures 5-9/5-10, javac's
``System.gc()`` calls) are under each application's ``inputs`` with their source, and in the report's inputs
table (:mod:`scenarios.render.java_inputs`), never among the results.
"""

from __future__ import annotations

import time
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from whatif.models.errors import ModelInputError
from whatif.models.hbench import AppProfile, GcCostModel, MicrobenchPlan, error_table
from whatif.models.hbench.plots import plot_size_distributions
from whatif.scenarios.errors import ScenarioError
from whatif.scenarios.kernels import load_kernels
from whatif.scenarios.registry import StudyKind, StudyOutput, register_study
from whatif.scenarios.render.java_inputs import input_label, inputs_doc, inputs_table
from whatif.scenarios.results.progress import progress_bar
from whatif.scenarios.results.report import figure_png
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.gc.behaviour import load_behaviour
from whatif.simulator.gc.config import check_collector, heap_config
from whatif.simulator.gc.log import gc_live_spacing, gc_log, gc_size_histogram
from whatif.simulator.gc.microbench import copy_bandwidth, run_microbenchmark
from whatif.simulator.gc.run import simulate_gc
from whatif.simulator.platform import load_platform

MB = 1024 * 1024
EXPLICIT_INPUT = "explicit (input: System.gc() calls)"     # the error table's count of explicit collections
DEFAULT_APPS = ["specjvm98/compress", "specjvm98/jess", "specjvm98/db", "specjvm98/javac", "specjvm98/mtrt",
                "specjvm98/jack", "specjvm98/r2mark"]


class HeapSweep(BaseModel):
    model_config = ConfigDict(extra="forbid")
    application: str
    factors: list[float] = Field(min_length=2)


class HbenchSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    applications: list[str] = Field(default_factory=lambda: list(DEFAULT_APPS), min_length=1)
    scale: float = Field(default=0.125, gt=0, le=1)
    collector: str = "mark-sweep"
    heap_mb: dict[str, float] = {}
    distribution: Literal["pooled", "separate"] = "pooled"
    connectivity: bool = True
    spacing: bool = True
    roots: bool = True
    goal_pct: float = Field(default=5.0, gt=0)
    microbench: dict[str, Any] = {}
    heap_sweep: HeapSweep | None = None


def app_label(workload: str) -> str:
    return workload.rpartition("/")[2].rpartition(":")[2]


# ---------------------------------------------------------------------------------------- tasks
def run_task(item: dict, shared: dict, progress=None) -> dict:
    """One unit of work (module level, so Dask workers can import it)."""

    platform = load_platform(shared["platform"], shared["overrides"])
    t0 = time.perf_counter()
    kind = item["kind"]
    if kind == "copy":
        out = {"copy": copy_bandwidth(platform, nbytes=max(1 << 20, int(32 * MB * shared["scale"])),
                                      seed=shared["seed"])}
    elif kind == "microbench":
        c = item["config"]
        heap = c["heap_bytes"] * (2 if shared["collector"] == "copying" else 1)     # two semispaces
        rows = run_microbenchmark(platform, heap, c["n_lists"], c["list_length"], c["object_size"],
                                  collector=shared["collector"], seed=shared["seed"], fields=c["fields"],
                                  twin=c["twin"], rooted=c.get("rooted", False))
        for r in rows:
            r["purpose"] = c["purpose"]
        out = {"rows": rows}
    elif kind == "app":
        b = load_behaviour(item["workload"])
        heap = int(item["heap_mb"] * MB * shared["scale"])
        cfg = heap_config(f"hbench: {item['workload']}", collector=shared["collector"], heap_bytes=heap)
        res = simulate_gc(b, cfg, platform, scale=shared["scale"], seed=shared["seed"])
        out = {"log": gc_log(res), "hist": gc_size_histogram(res), "spacing": gc_live_spacing(res),
               "allocated_bytes": res.allocated_bytes,
               "allocated_objects": res.allocated_objects, "out_of_memory": res.out_of_memory,
               "total_alloc_mb": b.total_alloc_mb, "heap_bytes": heap}
    elif kind == "sweep":
        b = load_behaviour(item["workload"])
        heap = int(item["heap_mb"] * MB * shared["scale"])
        cfg = heap_config(f"hbench: heap sweep of {item['workload']}", collector=shared["collector"], heap_bytes=heap)
        res = simulate_gc(b, cfg, platform, scale=shared["scale"], seed=shared["seed"], timed=False)
        out = {"factor": item["factor"], "heap_mb": item["heap_mb"], "collections": len(res.collections),
               "out_of_memory": res.out_of_memory,
               "max_live_mb": max([c.live_bytes for c in res.collections], default=0) / MB / shared["scale"]}
    else:  # pragma: no cover - the study builds the items
        raise ValueError(kind)
    out["seconds"] = time.perf_counter() - t0
    if progress is not None:
        progress(1)
    return out


# ---------------------------------------------------------------------------------------- study
@register_study
class HbenchGcStudy(StudyKind):
    name = "hbench-gc"
    sections = {"hbench": HbenchSpec}

    def check(self) -> None:
        spec = self.spec["hbench"]
        try:
            check_collector(spec.collector)
            self.microbench = MicrobenchPlan(**spec.microbench).scaled(spec.scale)
            self.behaviours = {w: load_behaviour(w) for w in spec.applications}
            if spec.heap_sweep is not None:
                self.behaviours.setdefault(spec.heap_sweep.application, load_behaviour(spec.heap_sweep.application))
        except (SimulatorInputError, ModelInputError, TypeError) as exc:
            raise self.fail("hbench", str(exc).splitlines()[0]) from None
        if spec.collector == "copying" and spec.spacing:
            raise self.fail("hbench.spacing", "the spacing extension prices the mark phase, which the copying "
                                              "collector does not have; set spacing = false")
        if spec.collector == "copying" and spec.roots:
            raise self.fail("hbench.roots", "the roots term prices the roots phase, which the copying collector "
                                            "does not time apart; set roots = false")
        for name in spec.heap_mb:
            if name not in spec.applications:
                raise self.fail("hbench.heap_mb", f"{name!r} is not one of the applications")

    def run(self, ctx) -> StudyOutput:
        spec, plan, behaviours = self.spec["hbench"], self.microbench, self.behaviours
        configs = [c for c in plan.configurations() if spec.roots or not c["rooted"]]
        items = [{"kind": "copy"}] + [{"kind": "microbench", "config": c} for c in configs]
        for w in spec.applications:
            items.append({"kind": "app", "workload": w, "heap_mb": spec.heap_mb.get(w, behaviours[w].heap_mb)})
        if spec.heap_sweep is not None:
            base = spec.heap_mb.get(spec.heap_sweep.application, behaviours[spec.heap_sweep.application].heap_mb)
            for f in spec.heap_sweep.factors:
                items.append({"kind": "sweep", "workload": spec.heap_sweep.application, "factor": f,
                              "heap_mb": base * f})
        platforms = [load_platform(run.platform, run.overrides) for run in ctx.runs]
        load_kernels(ctx.progress, platforms, trace=platforms[0] if platforms else None, collectors=(spec.collector,),
                     gc_microbenchmarks=True)
        started = time.perf_counter()
        per_run = []
        with progress_bar(len(items) * len(ctx.runs), "hbench-gc", enabled=ctx.progress) as advance:
            for run in ctx.runs:
                shared = {"platform": run.platform, "overrides": list(run.overrides), "scale": spec.scale,
                          "collector": spec.collector, "seed": run.program_seed}
                try:
                    outs = ctx.executor.map(run_task, items, shared=shared, progress=advance)
                except SimulatorInputError as exc:
                    raise ScenarioError(f"{ctx.source}: {exc}") from None
                per_run.append(self._analyse(run, spec, items, outs, plan))
        seconds = time.perf_counter() - started
        return self._output(ctx, spec, plan, per_run, seconds)

    # ------------------------------------------------------------------ analysis of one run
    def _analyse(self, run, spec: HbenchSpec, items: list[dict], outs: list[dict], plan: MicrobenchPlan) -> dict:
        copy = next(o["copy"] for i, o in zip(items, outs) if i["kind"] == "copy")
        mb = pd.DataFrame([r for i, o in zip(items, outs) if i["kind"] == "microbench" for r in o["rows"]])
        costs = GcCostModel(copy_bandwidth=copy["bytes_per_second"]).fit(mb, source="microbenchmarks")
        apps, logs, hists, spacings, profiles, thesis, headline = {}, [], [], [], {}, {}, {}
        for i, o in zip(items, outs):
            if i["kind"] != "app":
                continue
            name = app_label(i["workload"])
            prof = AppProfile.from_tables(o["log"], o["hist"], name=name, source=f"{name} GC log",
                                          spacing=o["spacing"])
            profiles[name] = prof
            headline[name] = costs.predict(prof, distribution=spec.distribution, connectivity=spec.connectivity,
                                           spacing=spec.spacing, roots=spec.roots)
            thesis[name] = costs.predict(prof, distribution="pooled", connectivity=False)
            logs.append(o["log"].assign(application=name))
            hists.append(o["hist"].assign(application=name))
            spacings.append(o["spacing"].assign(application=name))
            # what the run did; its allocation volume, heap and System.gc() calls are inputs (labelled)
            apps[name] = {"allocated_objects": o["allocated_objects"], "out_of_memory": o["out_of_memory"],
                          "inputs": {**inputs_doc(i["workload"], self.behaviours[i["workload"]], spec.scale),
                                     "heap_mb": {"value": i["heap_mb"], "what": "heap (MB, full size)",
                                                 "source": self._heap_source(spec, i["workload"])},
                                     "heap_bytes_simulated": o["heap_bytes"]}}
        sweep = [o for i, o in zip(items, outs) if i["kind"] == "sweep"]
        sim_seconds = sum(o["seconds"] for o in outs)
        return {"run": run, "costs": costs, "copy": copy, "microbench": mb, "profiles": profiles,
                "headline": headline, "thesis": thesis, "apps": apps, "logs": logs, "hists": hists, "spacings": spacings,
                "sweep": sweep, "sim_seconds": sim_seconds}

    @staticmethod
    def _heap_source(spec: HbenchSpec, workload: str) -> str:
        return "input (the scenario's heap_mb)" if workload in spec.heap_mb else input_label("heap_mb", workload)

    @staticmethod
    def _app_doc(res, thesis_res, info: dict) -> dict:
        e = res.errors
        t = thesis_res.errors
        return {"collections": e["collections"], "mean_abs_error_pct": e["mean_abs_error_pct"],
                "max_abs_error_pct": e["max_abs_error_pct"], "time_difference_pct": e["time_difference_pct"],
                "compacting_collections": e["compacting_collections"],
                "without_explicit": {k: e["without_explicit"][k] for k in
                                     ("collections", "mean_abs_error_pct", "max_abs_error_pct", "time_difference_pct")},
                "thesis_form": {k: t[k] for k in ("mean_abs_error_pct", "max_abs_error_pct", "time_difference_pct")},
                **info}

    def _run_doc(self, r: dict, spec: HbenchSpec) -> dict:
        apps = {name: self._app_doc(r["headline"][name], r["thesis"][name], r["apps"][name]) for name in r["headline"]}
        within = sum(1 for a in apps.values() if a["mean_abs_error_pct"] <= spec.goal_pct)
        doc = {"platform": r["run"].platform, "run": r["run"].id, "apps": apps,
               "cost_functions": r["costs"].to_dict(),
               "goal": {"pct": spec.goal_pct, "apps_within": within, "applications": len(apps),
                        "met": within >= len(apps) - 1},
               "form": {"distribution": spec.distribution, "connectivity": spec.connectivity,
                        "spacing": spec.spacing, "roots": spec.roots}}
        if r["sweep"]:
            doc["heap_sweep"] = {"application": spec.heap_sweep.application,
                                 "heap_mb_source": f"factor x {self._heap_source(spec, spec.heap_sweep.application)}",
                                 "points": [{k: o[k] for k in ("factor", "heap_mb", "collections", "out_of_memory",
                                                               "max_live_mb")} for o in r["sweep"]]}
        return doc

    # ------------------------------------------------------------------ output
    def _output(self, ctx, spec: HbenchSpec, plan: MicrobenchPlan, per_run: list[dict], seconds: float):
        docs = [self._run_doc(r, spec) for r in per_run]
        results = dict(docs[0])
        if len(docs) > 1:
            results["runs"] = docs
        first = per_run[0]
        tables: dict[str, pd.DataFrame] = {}
        figures: dict[str, tuple] = {}
        multi = len(per_run) > 1
        for r in per_run:
            tag = f"_{r['run'].id}" if multi else ""
            ident = r["run"].identity()
            tables[f"microbench{tag}"] = r["microbench"]
            tables[f"cost_functions{tag}"] = r["costs"].table_5_4
            tables[f"gc_log{tag}"] = pd.concat(r["logs"], ignore_index=True)
            tables[f"gc_size_histogram{tag}"] = pd.concat(r["hists"], ignore_index=True)
            tables[f"gc_live_spacing{tag}"] = pd.concat(r["spacings"], ignore_index=True)
            preds = []
            for name, res in r["headline"].items():
                th = r["thesis"][name].table[["gc", "predicted_s", "error_pct"]].rename(
                    columns={"predicted_s": "predicted_thesis_s", "error_pct": "error_thesis_pct"})
                preds.append(res.table.merge(th, on="gc").assign(application=name))
            tables[f"predictions{tag}"] = pd.concat(preds, ignore_index=True)
            tables[f"error_summary{tag}"] = error_table(r["headline"]).rename(columns={"explicit": EXPLICIT_INPUT}).assign(
                **{k: v for k, v in ident.items() if k in ("variant", "platform")})
        run_figs = [run_figures(r, spec) for r in per_run]        # rendered once: files (first run) and report
        figures.update(run_figs[0])
        rates = {"hbench_host_seconds": seconds,
                 "allocated_objects_per_s": sum(a["allocated_objects"] for a in first["apps"].values())
                 / max(first["sim_seconds"], 1e-9)}

        def report(rep) -> None:
            fill_report(rep, spec, plan, per_run, docs, run_figs)

        return StudyOutput(results=results, tables=tables, figures=figures, report=report, rates=rates,
                           parameters={"hbench": spec.model_dump(), "microbench_plan": plan.to_dict(),
                                       "copy_bandwidth": first["copy"]},
                           headline=pd.DataFrame([{"metric": f"{name}: mean |error| % @{d['platform']}",
                                                   "variant": r["run"].variant, "value": a["mean_abs_error_pct"]}
                                                  for r, d in zip(per_run, docs) for name, a in d["apps"].items()]))


def sweep_figure(points: list[dict], app: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = sorted(points, key=lambda o: o["heap_mb"])
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    ok = [o for o in pts if not o["out_of_memory"]]
    ax.plot([o["heap_mb"] for o in ok], [o["collections"] for o in ok], "o-")
    for o in pts:
        if o["out_of_memory"]:
            ax.axvline(o["heap_mb"], color="red", ls=":", lw=1)
    ax.set_xlabel("heap size (MB, full-size run)")
    ax.set_ylabel("collections")
    ax.set_title(f"{app}: collections against heap size (red: out of memory)")
    ax.grid(alpha=0.3)
    return fig


def outlier_text(name: str, res) -> list[str]:
    """Sentences explaining the collections the model misses, as the seed does for javac and compress."""
    t = res.table
    e = res.errors
    out = []
    bad = t[t["error_pct"].abs() > 2 * max(e["mean_abs_error_pct"], 1.0)]
    ex = t[t["explicit"]]
    cp = t[t["compacted"]]
    if len(ex):
        w = e["without_explicit"]
        out.append(f"{name}: collections {', '.join(str(g + 1) for g in ex['gc'])} were explicit System.gc() calls "
                   f"({input_label('explicit_gc', name)}; mean error {ex['error_pct'].mean():+.1f}%); "
                   + (f"{int(ex['compacted'].sum())} of them compacted (moved {ex['bytes_copied'].sum() / MB:.2f} MB), "
                      "which the copy approximation (bytes copied / bandwidth) prices without the per-object work "
                      "of a sliding compaction (three passes over the heap, reference fix-ups through forwarding "
                      "words), so it underestimates them, as seed 003 reports for javac. "
                      if ex["compacted"].any() else "")
                   + f"Without them the mean |error| is {w['mean_abs_error_pct']:.1f}% and the total difference "
                     f"{w['time_difference_pct']:+.1f}%.")
    other_cp = cp[~cp["explicit"]]
    if len(other_cp):
        out.append(f"{name}: collections {', '.join(str(g + 1) for g in other_cp['gc'])} compacted after an allocation "
                   f"failure (fragmentation), error {other_cp['error_pct'].mean():+.1f}% on average.")
    rest = bad[~bad["explicit"] & ~bad["compacted"]]
    if len(rest):
        out.append(f"{name}: collections {', '.join(str(g + 1) for g in rest['gc'][:8])} deviate most "
                   f"({rest['error_pct'].abs().max():.1f}% at worst) without explicit or compacting work.")
    return out


def run_figures(r: dict, spec: HbenchSpec) -> dict[str, tuple[bytes, str]]:
    """A run's figures, name -> (PNG bytes, caption)."""
    costs = r["costs"]
    figs = {"heap_size": (costs.plot_heap_size(),
                          "Figures 5-1, 5-2, 5-5: collection time of an empty, a fully reclaimable and a fully live "
                          "heap against heap size (fixed object size and count)"),
            "object_size": (costs.plot_object_size(),
                            "Figures 5-3, 5-6: C_dead and C_live against object size; the vertical lines mark where "
                            "the rise ends"),
            "memory_reads": (costs.plot_memory_reads(),
                             "Figures 5-4, 5-7: memory reads per object during the collections"),
            "size_distributions": (plot_size_distributions(r["profiles"]),
                                   "Figure 5-8: cumulative object-size distribution of the applications")}
    for name, res in r["headline"].items():
        figs[f"predicted_{name}"] = (res.plot_predicted_vs_actual(),
                                     f"Figure 5-9/5-10: predicted against actual time of every collection of {name}")
    if r["sweep"]:
        figs["heap_sweep"] = (sweep_figure(r["sweep"], spec.heap_sweep.application),
                              "A fixed-size mark-sweep heap collects about allocation / (heap - live data) times: "
                              "fewer collections as the heap grows, out of memory once the live data no longer fits")
    return {name: (figure_png(fig), caption) for name, (fig, caption) in figs.items()}


def fill_report(rep, spec: HbenchSpec, plan: MicrobenchPlan, per_run: list[dict], docs: list[dict],
                run_figs: list[dict[str, tuple[bytes, str]]]) -> None:
    for r, doc, figs in zip(per_run, docs, run_figs):
        if len(per_run) > 1:
            rep.heading(f"Run {r['run'].id}", level=2)
        costs = r["costs"]
        rep.heading("Method")
        rep.paragraph(
            f"Platform {r['run'].platform}; collector {spec.collector}; volumes and heaps scaled by {spec.scale:g} "
            "(object sizes unscaled).  The collector's cost functions come from the microbenchmark of seed 003 "
            "§5.3.2 (arrays of linked lists collected live, dead and empty); each application's allocation "
            "behaviour runs through the simulated heap and every collection's instruction stream is timed on the "
            "platform's memory hierarchy and core (the actual times).  The analyzer predicts each collection "
            f"with distribution={spec.distribution!r}"
            + (", plus the fan-out/fan-in terms of §5.2.1.2" if spec.connectivity else "")
            + (", pricing each survivor's marking at its spacing in the heap (a heap-dump measure) rather than "
               "its size" if spec.spacing else "")
            + (", plus the roots phase, C_root per root slot scanned (measured with lists held by roots of their "
               "own at several root counts; the seed's lists hang off one array)" if spec.roots else "")
            + ", plus bytes copied / copy bandwidth for collections that moved objects.  The thesis form "
              "(pooled distribution, no extensions) is reported alongside.")
        rep.heading("Collector characterisation (Table 5-4)")
        rep.preformatted(str(costs.summary()))
        for name in ("heap_size", "object_size", "memory_reads"):
            rep.figure(*figs[name])
        rep.paragraph(f"The per-object costs rise with object size up to {costs.knee('dead'):g} bytes (dead) and "
                      f"{costs.knee('live'):g} bytes (live) of payload and stay flat after: once an object "
                      "(header included) fills a cache line of the last level, every header the sweep reads is a "
                      "miss of its own; below, neighbours share the line.  Nothing in the simulator prices object "
                      "size: this is the caches.")
        rep.heading("Applications (Table 5-3, Figure 5-8)")
        behaviours = {app_label(w): load_behaviour(w) for w in spec.applications}
        heaps = {app_label(w): mb for w, mb in spec.heap_mb.items()}
        rep.table(inputs_table(behaviours, spec.scale, heaps),
                  caption="Inputs of the runs, not results: a run allocates its input volume and calls System.gc() "
                          "where its input says (values from seed 003 where it gives them)")
        t = pd.DataFrame([{"application": n, "allocated_objects": a["allocated_objects"],
                           "collections": doc["apps"][n]["collections"], "out_of_memory": a["out_of_memory"]}
                          for n, a in r["apps"].items()])
        rep.table(t, caption="What the runs did: objects allocated (sizes drawn from each behaviour), collections")
        rep.figure(*figs["size_distributions"])
        rep.heading("Predicted against actual (Table 5-5, Figures 5-9, 5-10)")
        et = error_table(r["headline"]).rename(columns={"explicit": EXPLICIT_INPUT})
        et["thesis_form_mean_abs_error_pct"] = [r["thesis"][n].errors["mean_abs_error_pct"] for n in et["application"]]
        rep.table(et, caption=f"Goal: mean |error| within {spec.goal_pct:g}% for all but one application; "
                              f"{doc['goal']['apps_within']} of {doc['goal']['applications']} are "
                              f"({'met' if doc['goal']['met'] else 'not met'}).")
        notes = [s for name, res in r["headline"].items() for s in outlier_text(name, res)]
        if notes:
            rep.heading("Outliers", level=3)
            for s in notes:
                rep.paragraph(s)
        for name in r["headline"]:
            rep.figure(*figs[f"predicted_{name}"])
        if r["sweep"]:
            rep.heading("Heap size and the number of collections")
            pts = pd.DataFrame(doc["heap_sweep"]["points"]).rename(
                columns={"heap_mb": f"heap_mb ({doc['heap_sweep']['heap_mb_source']})"})
            rep.table(pts)
            rep.figure(*figs["heap_sweep"])
