"""Study kind ``similarity``: seed 002's study (CINT2006 and a reference application on three Xeons) on
simulated machines, where the true speedups are known.

Each workload runs on each platform under the sampling engine (the simulate study's per-run machinery:
``scenarios.measure.simulate_runs``, ``render.simulate.simulate_tables``), giving the counter time series (contract 2)
and the simulated run time of every run.  The similarity engine (``models.similarity``) is fitted on the
time series with the run times, so it computes per platform the signatures, the similarity matrix, the MST,
Algorithms 1 and 2 with the reference application, k-means, and the §4.3 system evaluation for every
current -> candidate pair, with speedup = T(current) / T(candidate) of the simulated runs (every run
executes the same number of instructions).

Scenario tables: ``[simulate]`` (instructions, sampling = [s_d, s_p, s_i] in the seed's seconds,
time_scale, pmu, os_noise, predictor; sampling is required) and ``[similarity]`` (``SimilaritySpec``).
With several variants, each (variant, platform) is a platform of its own, labelled ``variant@platform``.

``results.json``: the engine's ``--json`` document (``platforms``, ``system_evaluation``, ``warnings``, ...)
with ``system_evaluation[pair].reference_direction_correct`` a bool (false also when the method made no
prediction: see ``reference_prediction``), plus ``run_times`` (platform -> application -> simulated s),
``intervals`` (platform -> application -> sampling intervals), ``seed002_table9`` (the published values) and
``fidelity``: the simulation next to seed 002's real measurements -- per platform the Spearman rho between
each program's simulated signature and its Table 1 signature (``table1_rho``, ``table1_mean_rho``), the
similarity matrices against Tables 5-7, Table 9's % correct, and the §4.1 sensitivity: the same runs read
under each ``[similarity] sensitivity`` schedule ([s_i, s_p] in the seed's seconds, the sampling's s_d;
scaled by time_scale), the mean |change| of the sample mean CPI between consecutive schedules against the
seed's 6 % and 9 %.  They are measurements of how far the models reproduce the real machines, not targets:
nothing is fitted to them.
Tables: the simulate tables (``timeseries``, ``totals``, ``cpi_stacks``), the engine's tables
(``signatures``, ``similarity`` (long form) and ``similarity_<platform>``, ``mst``, ``clusters``,
``cut_steps``, ``reference_search``, ``kmeans_comparison``, ``system_evaluation`` ...), ``run_times``,
``speedups``, ``fidelity_table1`` (per platform and program: simulated and seed signatures, rho),
``sensitivity`` (per platform, program and schedule: intervals, mean CPI) and ``sensitivity_summary``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, PositiveFloat, PositiveInt

from whatif.models.errors import ModelInputError
from whatif.models.similarity import SimilarityEngine, SimilarityResults, SimilarityWarning
from whatif.models.similarity import seed002
from whatif.scenarios.errors import ScenarioError
from whatif.scenarios.results.report import Report, figure_png
from whatif.scenarios.measure import SimulateSpec, check_sampling, check_workloads, simulate_runs
from whatif.scenarios.registry import StudyKind, StudyOutput, register_study
from whatif.scenarios.render.similarity import add_report_sections, parquet_safe
from whatif.scenarios.render.similarity_seed import (Fidelity, fidelity, improvement_comparison, seed_name,
                                                     signature_comparison, similarity_comparison)
from whatif.scenarios.render.simulate import cpi_stack_figure, simulate_tables
from whatif.scenarios.results.progress import status
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.sampling import Sampling
from whatif.simulator.workload import load_workload

MIN_ENGINE_INTERVALS = 3        # the engine's floor (Pearson r of fewer points is meaningless)


class SimilaritySpec(BaseModel):
    """The ``[similarity]`` table: the engine's parameters (checked by the engine's constraints) and the
    number of sampling intervals a series should have for a meaningful correlation."""
    model_config = ConfigDict(extra="forbid")
    reference: str | None = "yahoo_y/Y"
    threshold: float = 0.5
    method: str = "spearman"
    stop_rule: str = "graph"
    kmeans: list[int] = [3, 5]
    on_constant: str = "zero"
    min_intervals: PositiveInt = 20
    # seed 002 §4.1: further [s_i, s_p] schedules (the seed's seconds, the sampling's s_d) read over every run
    sensitivity: list[tuple[PositiveFloat, PositiveFloat]] = [(3.0, 5.0), (5.0, 10.0), (30.0, 60.0)]


@register_study
class SimilarityStudy(StudyKind):
    name = "similarity"
    sections = {"simulate": SimulateSpec, "similarity": SimilaritySpec}
    needs_workloads = True

    def check(self) -> None:
        sim = self.spec["similarity"]
        self.engine = SimilarityEngine(threshold=sim.threshold, method=sim.method, stop_rule=sim.stop_rule,
                                       kmeans=tuple(sim.kmeans), seed=self.scenario.seed,
                                       on_constant=sim.on_constant)
        try:
            self.engine.validate_params()
        except ModelInputError as exc:
            raise self.fail("similarity", str(exc)) from None
        check_workloads(self.scenario.workloads, self.source)
        self.engine.reference = _resolve_reference(self.source, self.scenario.workloads, sim.reference)
        if self.spec["simulate"].sampling is None:
            raise self.fail("simulate.sampling", "the similarity study needs the sampling engine; give "
                                                 "sampling = [s_d, s_p, s_i] (e.g. [10, 5, 3])")
        self.sensitivity = self._sensitivity_schedules()

    def _sensitivity_schedules(self) -> tuple[Sampling, ...]:
        """The §4.1 schedules in simulated seconds: each [s_i, s_p] with the sampling's delay, time-scaled."""
        spec, out = self.spec["simulate"], []
        for si, sp in self.spec["similarity"].sensitivity:
            try:
                out.append(Sampling(spec.sampling[0], sp, si).scaled(spec.time_scale))
            except SimulatorInputError as exc:
                raise self.fail("similarity.sensitivity", f"[{si:g}, {sp:g}]: {exc}") from None
        return tuple(out)

    def plan(self, runs: list) -> list:
        check_sampling(self.spec["simulate"], runs, self.source, min_intervals=MIN_ENGINE_INTERVALS)
        return runs

    def run(self, ctx) -> StudyOutput:
        spec, sim, engine = self.spec["simulate"], self.spec["similarity"], self.engine
        runs = simulate_runs(ctx, spec, sensitivity=self.sensitivity)
        labels = _platform_labels(runs)
        for r in runs:
            r["label"] = labels[(r["variant"], r["platform"])]
        sim_tables = simulate_tables([{k: v for k, v in r.items() if k not in ("label", "sensitivity_cpi")} for r in runs])
        series, run_times, intervals, notes = _engine_inputs(ctx, runs, sim.min_intervals)
        with warnings.catch_warnings(), status("similarity engine", enabled=ctx.progress) as note:
            warnings.simplefilter("ignore", SimilarityWarning)       # reported through results.warnings
            results = engine.fit(series, run_times, source=ctx.source,
                                 progress=lambda p: note(f"analysing platform {p}"))
        doc = results_document(results, run_times, intervals, notes)
        fid = fidelity(results, runs, [tuple(x) for x in sim.sensitivity])
        doc["fidelity"] = fid.doc
        tables = {**sim_tables, **{k: parquet_safe(v) for k, v in results.tables().items()}}
        tables["similarity"] = _similarity_long(results)
        tables["run_times"] = run_times
        tables["speedups"] = _speedups(run_times)
        tables.update(fid.tables)
        figures: dict[str, tuple] = {}
        staged = Report("similarity study")
        add_study_report(staged, results, run_times, intervals, notes, runs, spec, sim, sim_tables, figures, fid)
        rate = float(np.mean([r["sim_instructions_per_s"] for r in runs])) if runs else 0.0
        cpi = (pd.DataFrame([{"metric": f"mean CPI @{r['platform']}", "variant": r["variant"], "value": r["cpi"]}
                             for r in runs]).groupby(["metric", "variant"], sort=False, as_index=False)["value"].mean())
        fid_head = fid.headline(runs[0]["variant"] if runs else "")
        headline = pd.concat([cpi, fid_head], ignore_index=True)
        return StudyOutput(results=doc, tables=tables, figures=figures, report=lambda rep: rep.extend(staged),
                           rates={"sim_instructions_per_s": rate},
                           parameters={"simulate": spec.model_dump(), "similarity": sim.model_dump(),
                                       "engine": {k: (list(v) if isinstance(v, tuple) else v)
                                                  for k, v in engine.get_params().items()}},
                           headline=headline, headline_absolute=tuple(fid_head["metric"]))


# ---------------------------------------------------------------------------------------- inputs
def _resolve_reference(source: str, workloads: list[str], reference: str | None) -> str | None:
    """The reference as spelt in ``workloads`` (matched by the resolved workload, so ``Y`` finds ``yahoo_y/Y``)."""
    if reference is None:
        return None
    try:
        want = load_workload(reference).qualified
    except SimulatorInputError as exc:
        raise ScenarioError(f"{source}: similarity.reference: {exc}") from None
    for w in workloads:
        try:
            if load_workload(w).qualified == want:
                return w
        except SimulatorInputError:
            continue            # reported by check_workloads with the list of known workloads
    raise ScenarioError(f"{source}: similarity.reference: '{reference}' is not among the workloads "
                        f"({', '.join(workloads)}); add it or set another reference")


def _platform_labels(runs: list[dict]) -> dict[tuple[str, str], str]:
    variants = list(dict.fromkeys(r["variant"] for r in runs))
    return {(r["variant"], r["platform"]): r["platform"] if len(variants) == 1 else f"{r['variant']}@{r['platform']}"
            for r in runs}


def _engine_inputs(ctx, runs: list[dict], min_intervals: int):
    """The time series (contract 2, one platform label per (variant, platform)), the run times and the
    intervals per series; series with too few intervals are an error (below 3) or a warning."""
    parts, rt_rows, notes = [], [], []
    intervals: dict[str, dict[str, int]] = {}
    for r in runs:
        ts = r["timeseries"]
        n = 0 if ts is None else len(ts)
        intervals.setdefault(r["label"], {})
        intervals[r["label"]][r["workload"]] = intervals[r["label"]].get(r["workload"], 0) + n
        if n < MIN_ENGINE_INTERVALS:
            raise ScenarioError(f"{ctx.source}: simulate: {r['workload']} on {r['label']} gave {n} sampling "
                                f"interval(s), the signature needs at least {MIN_ENGINE_INTERVALS}; give more "
                                f"instructions or a smaller time_scale")
        block = ts.copy()
        block.insert(0, "platform", r["label"])
        block.insert(0, "workload", r["workload"])
        parts.append(block)
        rt_rows.append({"application": r["workload"], "platform": r["label"], "run_time": float(r["seconds"]),
                        "instructions": int(r["counters"]["instructions"]), "cpi": float(r["cpi"])})
    for label, apps in intervals.items():
        for app, n in apps.items():
            if n < min_intervals:
                notes.append(f"{app} on {label}: {n} sampling intervals, fewer than min_intervals = {min_intervals}; "
                             f"its signature is a correlation of few points")
    rt = pd.DataFrame(rt_rows).groupby(["application", "platform"], sort=False, as_index=False).mean()
    return pd.concat(parts, ignore_index=True), rt, intervals, notes


def _speedups(run_times: pd.DataFrame) -> pd.DataFrame:
    t = run_times.pivot(index="application", columns="platform", values="run_time")
    rows = [{"current": c, "candidate": k, "application": a, "speedup": t.loc[a, c] / t.loc[a, k]}
            for c in t.columns for k in t.columns if c != k for a in t.index
            if np.isfinite(t.loc[a, c]) and np.isfinite(t.loc[a, k])]
    return pd.DataFrame(rows, columns=["current", "candidate", "application", "speedup"])


def _similarity_long(results: SimilarityResults) -> pd.DataFrame:
    rows = []
    for p, r in results.platforms.items():
        s = r.similarity
        for i, a in enumerate(r.applications):
            for j, b in enumerate(r.applications):
                rows.append({"platform": p, "application": a, "other": b, "similarity": float(s[i, j])})
    return pd.DataFrame(rows)


def results_document(results: SimilarityResults, run_times: pd.DataFrame, intervals: dict, notes: list[str]) -> dict:
    doc = results.to_dict()
    ev = {}
    for key, pair in (doc.get("system_evaluation") or {}).items():
        ev[key] = {**pair, "reference_direction_correct": bool(pair["reference_direction_correct"])}
    doc["system_evaluation"] = ev
    doc["warnings"] = list(doc.get("warnings", [])) + list(notes)
    doc["run_times"] = {p: {a: float(v) for a, v in zip(g["application"], g["run_time"])}
                        for p, g in run_times.groupby("platform", sort=False)}
    doc["intervals"] = intervals
    doc["seed002_table9"] = {row["current -> candidate"].replace(" -> ", "->"):
                             {"correct_pct": row["% correct"], "incorrect_pct": row["% incorrect"],
                              "unpredictable_pct": row["% unpredictable"]}
                             for row in seed002.TABLE9.to_dict("records")}
    return doc


# ---------------------------------------------------------------------------------------- report
def add_study_report(report: Report, results: SimilarityResults, run_times: pd.DataFrame, intervals: dict,
                     notes: list[str], runs: list[dict], spec, sim: SimilaritySpec, sim_tables: dict,
                     figures: dict, fid: Fidelity) -> None:
    """The study's sections; every figure also goes into ``figures`` (name -> (PNG bytes, caption))."""

    def sink(name: str, fig, caption: str = "") -> bytes:
        png = figure_png(fig)                      # rendered once (and closed), for the report and the file
        figures[name] = (png, caption or name)
        return png

    s = spec.sampling
    scaled = spec.sampling_scaled()
    counts = [n for apps in intervals.values() for n in apps.values()]
    report.heading("Study set-up")
    report.paragraph(f"{len(run_times['application'].unique())} workloads x {len(intervals)} platforms, "
                     f"{spec.instructions:,} instructions per run, {spec.pmu} PMU counting. Sampling engine: "
                     f"s_d = {s[0]:g} s, s_p = {s[1]:g} s, s_i = {s[2]:g} s of a real run (seed 002 §4), scaled "
                     f"by time_scale = {spec.time_scale:g} to {scaled.delay_s * 1e6:.4g} us, "
                     f"{scaled.period_s * 1e6:.4g} us, {scaled.interval_s * 1e6:.4g} us of simulated time "
                     f"(s_i/s_p and s_d/s_p kept). Sampling intervals per series: min {min(counts)}, median "
                     f"{int(np.median(counts))}, max {max(counts)} (wanted >= {sim.min_intervals}). Speedup of "
                     f"an application from current c to candidate k = T(c) / T(k) of the simulated runs.")
    for n in notes:
        report.paragraph(n, note=True)
    wide = run_times.pivot(index="application", columns="platform", values="run_time") * 1e3
    wide.columns = [f"{c} (ms)" for c in wide.columns]
    sp = _speedups(run_times)
    if len(sp):
        spw = sp.assign(pair=sp["current"] + "->" + sp["candidate"]).pivot(index="application", columns="pair",
                                                                               values="speedup")
        wide = wide.join(spw)
    report.table(wide.reset_index(), caption="Simulated run times and the true speedups T(current)/T(candidate)",
                 float_format="{:.3f}")
    report.figure(sink("cpi_stacks", cpi_stack_figure(sim_tables["cpi_stacks"]), "CPI stacks"),
                  "CPI stacks of the simulated runs (where the cycles go)")

    report.heading("Fidelity: the simulation next to seed 002's real measurements")
    report.paragraph("The simulated machines and workloads are models, so agreement with the published values "
                     "measures how far the models reproduce the real machines' stall behaviour; nothing is fitted "
                     "to them. The method's own accuracy is judged against the simulated truth (Table 9 analogue "
                     f"below). Source: {seed002.SOURCE}.")
    if len(fid.table1_rho):
        report.table(fid.table1_rho, caption="Table 1: Spearman rho between each program's simulated signature and "
                                             "its signature in seed 002's Table 1, per platform (1: the same rank "
                                             "order of the five stall correlations; NaN: a constant signature)",
                     float_format="{:.2f}")
    if len(fid.sensitivity_summary):
        report.table(fid.sensitivity_summary,
                     caption="§4.1: the same runs read under each sampling schedule (s_i/s_p; the sampling's s_d; "
                             f"scaled by time_scale = {spec.time_scale:g}); mean |change| of the sample mean CPI "
                             "between consecutive schedules, in % of the first, next to the seed's 6 % and 9 % (the seed prints "
                             "its third schedule, 30/60 s, as 20 %; the seconds are what is simulated)",
                     float_format="{:.2f}")
    t9 = fid.table9
    if len(t9):
        report.table(t9, caption="Table 9 analogue: % of cases where the direction predicted from the similar "
                                 "applications agrees with the simulated truth (sim), next to seed 002's Table 9 "
                                 "(seed); and the reference application's own prediction", float_format="{:.2f}")
        report.table(improvement_comparison(results), caption="Mean improvement (speedup - 1, %) of the "
                     "reference's similar set and of the whole suite (seed 002 §4.3 gives it from Harpertown)",
                     float_format="{:.1f}")
    agree = [{"platform": p, "signature rank agreement (mean rho)": fid.doc["table1_mean_rho"][p],
              "seed table": m["seed_table"], "similarity pairs": m["pairs"],
              "similarity Pearson r (sim vs seed)": m["pearson"], "mean |difference|": m["mean_abs_difference"],
              "% same sign": m["same_sign_pct"]} for p, m in fid.doc["similarity_matrices"].items()]
    if agree:
        report.table(pd.DataFrame(agree), caption="Signatures (Table 1) and similarity matrices (Tables 5–7): "
                                                  "simulated vs published", float_format="{:.3f}")
    if len(fid.sensitivity):
        report.table(fid.sensitivity, caption="§4.1 per program: sampling intervals and the sample mean CPI of each "
                                              "schedule", float_format="{:.4g}")
    for p in results.platforms:
        sig = signature_comparison(results, p)
        if sig is not None:
            report.table(sig, caption=f"Table 1 analogue on {p}: simulated signatures (sim) next to seed 002's "
                                      f"Table 1 (seed); rho = Spearman between the two", float_format="{:.2f}")
    for p in results.platforms:
        if p in seed002.PLATFORMS:
            n = {"harpertown": 5, "nehalem": 6, "westmere": 7}[p]
            report.table(seed002.similarity(p).reset_index(names="application"),
                         caption=f"Seed 002, Table {n} (as published): similarity on {p}", float_format="{:.1f}")
    km = results.kmeans_table()
    if len(km):
        report.table(km, caption="Table 8 analogue: the cluster holding the reference (simulated)")
        report.table(seed002.TABLE8, caption="Seed 002, Table 8 (as published)")
    apps = next(iter(results.platforms.values())).applications
    astar = next((a for a in apps if seed_name(a) == "473.astar"), None)
    if astar is not None and results.series is not None:
        report.figure(sink("time_series_473_astar", results.plot_time_series(astar), "473.astar series"),
                      "Figure 3 analogue: CPI and stall-ratio series of 473.astar on each platform")

    report.heading("The similarity engine's results")
    add_report_sections(report, results, figure_sink=lambda name, fig: sink(name, fig))
