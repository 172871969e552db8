"""``whatif simulate`` and the study kind ``simulate``: workloads on platforms → counters, CPI stacks,
counter time series.

Counting modes (``pmu``):

* ``ideal`` — one run counts every event of the platform's list (a PMU with enough counters);
* ``physical`` — the platform's physical counters limit the events per run, so the event list is
  collected over several runs of the same binary that differ by the modelled run-to-run variation
  (OS timer phase and work, physical page placement), as perfctr collections on the real machine.

Warm-up: ``warmup`` program instructions run first, uncounted (caches, TLBs, predictors warm); the
counters, CPI stack, run time and the sampling clock cover the ``instructions`` after it.

Sampling: ``--sampling SD,SP,SI`` in the seed's seconds of a real run; ``time_scale`` (default 1e-4)
maps them to simulated time (10 s -> 1 ms), keeping s_i/s_p and s_d/s_p.

``results.json`` of a simulate study: ``{"runs": [{"platform", "workload", "variant", ..., "cpi",
"cpi_stack": {cause: cpi}, "totals": {event: n}, "sim_instructions_per_s", "seconds"}, ...]}``.
Tables: ``totals`` (contract 1, one row per run, one column per platform event), ``cpi_stacks``
(long form), ``timeseries`` (contract 2) when sampling is on.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt, ValidationError

from whatif.scenarios.errors import ScenarioError
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.machine import Machine
from whatif.simulator.platform import Platform, load_platform
from whatif.simulator.pmu import evaluate, event_groups, merge_groups
from whatif.simulator.sampling import Sampling, sample
from whatif.simulator.schema import format_validation_error

DEFAULT_TIME_SCALE = 1e-4
MAX_PLAUSIBLE_CPI = 50.0     # for the up-front check that a run can hold a sampling interval at all


class SimulateSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    instructions: PositiveInt = 2_000_000
    warmup: NonNegativeInt = 0                   # program instructions run uncounted first (caches warm)
    sampling: list[float] | None = None          # [s_d, s_p, s_i] in the seed's seconds
    time_scale: float = Field(default=DEFAULT_TIME_SCALE, gt=0)
    pmu: Literal["ideal", "physical"] = "ideal"
    os_noise: bool = True
    predictor: str | None = None

    def sampling_scaled(self) -> Sampling | None:
        if self.sampling is None:
            return None
        if len(self.sampling) != 3:
            raise SimulatorInputError(f"sampling: expected [s_d, s_p, s_i], got {self.sampling}")
        return Sampling(*self.sampling).scaled(self.time_scale)


def check_sampling_feasible(platform: Platform, instructions: int, sampling: Sampling | None, min_intervals: int = 1):
    """Fail before simulating when even a very slow run (CPI 50) could not hold the intervals."""
    if sampling is None:
        return
    longest = instructions * MAX_PLAUSIBLE_CPI / (platform.clock_ghz * 1e9)
    if sampling.intervals_within(longest) < min_intervals:
        need = (sampling.delay_s + sampling.interval_s + (min_intervals - 1) * sampling.period_s) \
            * platform.clock_ghz * 1e9 / MAX_PLAUSIBLE_CPI
        raise SimulatorInputError(f"{instructions:,} instructions are too few for the sampling "
                                  f"(s_d={sampling.delay_s:g} s, s_p={sampling.period_s:g} s, s_i={sampling.interval_s:g} "
                                  f"s of simulated time): at least {math.ceil(need):,} are needed for "
                                  f"{min_intervals} interval(s)")


def _machine(platform, workload, spec: SimulateSpec, seed: int, run_seed: int,
             input_seed: int | None = None) -> Machine:
    from whatif.simulator.osnoise import TimerNoise

    m = Machine(platform, workload, spec.warmup + spec.instructions, seed=seed, run_seed=run_seed,
                input_seed=input_seed, noise=TimerNoise() if spec.os_noise else None, predictor=spec.predictor)
    return m.warm_up(spec.warmup) if spec.warmup else m


def simulate_one(platform: Platform, workload: str, spec: SimulateSpec, seed: int,
                 progress=None) -> dict[str, Any]:
    """One configuration: totals of every platform event (over several runs in ``physical`` mode), the
    CPI stack and all counters of the first run, and the counter time series when sampling."""
    sampling = spec.sampling_scaled()
    check_sampling_feasible(platform, spec.instructions, sampling)
    pmu = platform.pmu
    groups = event_groups(pmu.events, pmu.physical_counters, pmu.fixed_events) if spec.pmu == "physical" else None
    n_runs = len(groups) if groups else 1
    run_seeds = [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(seed).spawn(n_runs)]
    per_run_events, series, first = [], [], None
    for i in range(n_runs):
        # the PMU runs of one configuration are runs of one program on one input (the first run's), as
        # when perf re-runs a command: they differ in page placement and timer phase only
        m = _machine(platform, workload, spec, seed, run_seeds[i], input_seed=run_seeds[0])
        if sampling is not None:
            rows = sample(m, sampling)
            m.run()
            for r in rows:
                ev = evaluate(pmu.sources, r, pmu.events)
                series.append({"pmu_run": i, "t_start": r["t_start"], "t_end": r["t_end"], **ev})
        else:
            m.run()
        counters = m.counters()
        per_run_events.append(evaluate(pmu.sources, counters, pmu.events))
        if first is None:
            first = (m, counters)
        if progress is not None:
            progress(1)
    machine, counters = first
    totals = merge_groups(groups, per_run_events) if groups else per_run_events[0]
    ts = None
    if series:
        df = pd.DataFrame(series)
        if groups:
            # each event's series from the run that programmed it, aligned by interval
            parts = []
            for g in groups:
                sub = df[df["pmu_run"] == g.index][["t_start", "t_end", *g.programmed]].reset_index(drop=True)
                parts.append(sub if not parts else sub[list(g.programmed)])
            n = min(len(p) for p in parts)
            ts = pd.concat([p.iloc[:n] for p in parts], axis=1)
        else:
            ts = df.drop(columns=["pmu_run"])
    instructions = counters["instructions"]
    return {"totals": totals, "counters": counters, "cpi": counters["cycles"] / max(1, instructions),
            "cpi_stack": machine.cpi_stack(), "seconds": machine.seconds(), "pmu_runs": n_runs,
            "sim_instructions_per_s": machine.instructions_per_second(), "timeseries": ts}


# ---------------------------------------------------------------------------------------- CLI glue
def simulate_command(platform_name: str, workload: str, instructions: int, overrides: list[str],
                     sampling: str | None, time_scale: float, seed: int, pmu: str, out, progress: bool,
                     warmup: int = 0) -> dict:
    from whatif.scenarios.cachesim_study import compile_kernels
    from whatif.scenarios.manifest import build_manifest
    from whatif.scenarios.output import ResultsWriter
    from whatif.scenarios.progress import status
    from whatif.scenarios.report import Report

    platform = load_platform(platform_name, overrides)
    try:
        spec = SimulateSpec(instructions=instructions, warmup=warmup, time_scale=time_scale, pmu=pmu,
                            sampling=list(Sampling.parse(sampling).__dict__.values()) if sampling else None)
    except ValidationError as exc:
        raise ScenarioError(format_validation_error(exc, "simulate")) from None
    _resolve_workload(workload)
    compile_kernels(progress)
    with status(f"whatif simulate: {workload} on {platform.name}", enabled=progress):
        res = simulate_one(platform, workload, spec, seed)
    if spec.sampling_scaled() is not None and (res["timeseries"] is None or len(res["timeseries"]) == 0):
        raise SimulatorInputError(f"the run of {instructions:,} instructions ended before the first sampling "
                                  f"interval closed; give more instructions or a shorter --sampling")
    doc = {"platform": platform.name, "workload": workload, "instructions": res["counters"]["instructions"],
           "totals": res["totals"], "cpi": res["cpi"], "cpi_stack": res["cpi_stack"],
           "sim_instructions_per_s": res["sim_instructions_per_s"], "seconds": res["seconds"],
           "pmu_runs": res["pmu_runs"]}
    if out is not None:
        run = {"platform": platform.name, "workload": workload, "variant": "as-shipped", **res}
        tables, figures = simulate_tables([run]), simulate_figures([run])
        manifest = build_manifest(scenario=None, study="simulate", seed=seed,
                                  parameters={"platform": platform.model_dump(), "workload": workload,
                                              "simulate": spec.model_dump()},
                                  host_seconds=0.0, rates={"sim_instructions_per_s": res["sim_instructions_per_s"]})
        report = Report(f"{workload} on {platform.name}")
        add_report(report, tables, figures)
        report.provenance(manifest)
        with ResultsWriter(out) as w:
            w.results(tables=tables, figures=figures, results=doc, manifest=manifest, report=report)
    return doc


def print_summary(doc: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    head = (f"{doc['workload']} on {doc['platform']}: {doc['instructions']:,} instructions, CPI {doc['cpi']:.3f}, "
            f"{doc['seconds'] * 1e3:.3f} ms simulated, {doc['sim_instructions_per_s'] / 1e6:.2f} M instructions/s")
    stack = Table(title="CPI stack")
    stack.add_column("cause")
    stack.add_column("CPI", justify="right")
    for cause, cpi in doc["cpi_stack"].items():
        if cpi:
            stack.add_row(cause, f"{cpi:.3f}")
    totals = Table(title=f"events ({doc['pmu_runs']} PMU run(s))")
    totals.add_column("event")
    totals.add_column("count", justify="right")
    for event, value in doc["totals"].items():
        totals.add_row(event, f"{value:,.0f}")
    console.print(head)
    console.print(stack)
    console.print(totals)


def _resolve_workload(name: str) -> None:
    """Fail early, with the list of known workloads, on an unknown name."""
    from whatif.simulator.workload import load_workload

    load_workload(name)


# ---------------------------------------------------------------------------------------- tables & plots
def simulate_tables(runs: list[dict]) -> dict[str, pd.DataFrame]:
    id_cols = [k for k in runs[0] if k in ("run", "variant", "platform", "workload", "replicate")
               or k not in ("totals", "counters", "cpi", "cpi_stack", "seconds", "pmu_runs",
                            "sim_instructions_per_s", "timeseries")]
    totals, stacks, series = [], [], []
    for r in runs:
        ident = {k: r[k] for k in id_cols}
        totals.append({**ident, **r["totals"]})
        for cause, cpi in r["cpi_stack"].items():
            stacks.append({**ident, "cause": cause, "cpi": cpi})
        if r.get("timeseries") is not None:
            ts = r["timeseries"].copy()
            for k, v in reversed(list(ident.items())):
                ts.insert(0, k, v)
            series.append(ts)
    out = {"totals": pd.DataFrame(totals), "cpi_stacks": pd.DataFrame(stacks)}
    if series:
        out["timeseries"] = pd.concat(series, ignore_index=True)
    return out


def cpi_stack_figure(stacks: pd.DataFrame):
    """Stacked CPI bars: one panel per platform, one bar per workload."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    platforms = list(dict.fromkeys(stacks["platform"]))
    causes = [c for c in dict.fromkeys(stacks["cause"]) if stacks.loc[stacks["cause"] == c, "cpi"].abs().sum() > 0]
    workloads = list(dict.fromkeys(stacks["workload"]))
    fig, axes = plt.subplots(1, len(platforms), figsize=(max(6, 0.55 * len(workloads) * len(platforms) + 2), 4.5),
                             sharey=True, squeeze=False)
    colors = plt.get_cmap("tab20")(np.linspace(0, 1, max(len(causes), 2)))
    for ax, platform in zip(axes[0], platforms):
        sub = stacks[stacks["platform"] == platform].pivot_table(index="workload", columns="cause", values="cpi",
                                                                 aggfunc="mean").reindex(workloads)
        bottom = np.zeros(len(workloads))
        for color, cause in zip(colors, causes):
            vals = sub[cause].fillna(0).to_numpy() if cause in sub else np.zeros(len(workloads))
            ax.bar(range(len(workloads)), vals, bottom=bottom, color=color, label=cause)
            bottom += vals
        ax.set_xticks(range(len(workloads)), workloads, rotation=60, ha="right", fontsize=8)
        ax.set_title(platform)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("CPI")
    axes[0][-1].legend(fontsize=7, bbox_to_anchor=(1.02, 1), loc="upper left")
    fig.suptitle("CPI stacks: every cycle attributed to one cause")
    return fig


def timeseries_figure(ts: pd.DataFrame, cycles: str, instructions: str, stalls: list[str], title: str):
    """CPI and stall ratios (stall cycles / cycles) per sampling interval, as in seed 002 Figure 3."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(stalls) + 1, 1, figsize=(7, 1.5 * (len(stalls) + 1) + 0.5), sharex=True)
    t = ts["t_start"].to_numpy()
    axes[0].plot(t, ts[cycles] / ts[instructions].clip(lower=1), marker=".")
    axes[0].set_ylabel("CPI")
    for ax, stall in zip(axes[1:], stalls):
        ax.plot(t, ts[stall] / ts[cycles].clip(lower=1), marker=".", color="tab:red")
        ax.set_ylabel(stall.replace("RESOURCE_STALLS.", "RS.").replace("RAT_STALLS.", "RAT."), fontsize=7)
    axes[-1].set_xlabel("simulated time (s)")
    fig.suptitle(title)
    return fig


def simulate_figures(runs: list[dict]) -> dict[str, tuple]:
    """name -> (PNG bytes, caption): rendered once, for the report and the file alike."""
    from whatif.scenarios.report import figure_png

    tables = simulate_tables(runs)
    figs = {"cpi_stacks": (figure_png(cpi_stack_figure(tables["cpi_stacks"])), "CPI stack per workload and platform")}
    for r in runs[:6]:
        ts = r.get("timeseries")
        if ts is None or len(ts) == 0:
            continue
        platform = load_platform(r["platform"])
        cyc, ins = _cycles_and_instructions(platform)
        stalls = [e for e in platform.pmu.events if "STALL" in e.upper() or e in ("AGIstall",)]
        key = f"timeseries_{r['workload']}_{r['platform']}".replace("/", "_").replace(".", "_")
        figs[key] = (figure_png(timeseries_figure(ts, cyc, ins, stalls, f"{r['workload']} on {r['platform']}")),
                     f"Counter time series of {r['workload']} on {r['platform']}")
    return figs


def _cycles_and_instructions(platform: Platform) -> tuple[str, str]:
    ev = platform.pmu.events
    cyc = "CPU_CLK_UNHALTED.REF" if "CPU_CLK_UNHALTED.REF" in ev else "cycles"
    ins = "INST_RETIRED.ANY" if "INST_RETIRED.ANY" in ev else ("inst" if "inst" in ev else "instructions")
    return cyc, ins


def add_report(report, tables: dict[str, pd.DataFrame], figures: dict[str, tuple]) -> None:
    stacks = tables["cpi_stacks"]
    wide = stacks.pivot_table(index=["platform", "workload"], columns="cause", values="cpi", aggfunc="mean")
    wide = wide.loc[:, (wide.abs() > 0).any()]
    wide.insert(0, "CPI", wide.sum(axis=1))
    report.heading("CPI stacks")
    report.table(wide.reset_index(), caption="CPI by cause (cycles per instruction)", float_format="{:.3f}")
    for name, (fig, caption) in figures.items():
        report.figure(fig, caption)
    report.heading("Counter totals")
    report.table(tables["totals"], caption="Platform events (contract 1)")


# ---------------------------------------------------------------------------------------- study kind
class SimulateStudy:
    sections = ("simulate",)

    def run(self, ctx):
        spec = simulate_spec(ctx)
        runs = simulate_runs(ctx, spec)
        tables = simulate_tables(runs)
        figures = simulate_figures(runs)
        results = {"runs": [{k: r[k] for k in r if k not in ("counters", "timeseries")} for r in runs]}
        rates = {"sim_instructions_per_s": float(np.mean([r["sim_instructions_per_s"] for r in runs])) if runs else 0.0}
        for r in runs:          # and every run's own rate (issue 3: the manifest records each)
            key = f"sim_instructions_per_s[{r['platform']}/{r['workload']}/{r['variant']}/{r['replicate']}]"
            rates[key] = float(r["sim_instructions_per_s"])
        from whatif.scenarios.studies import StudyOutput

        return StudyOutput(results=results, tables=tables, figures=figures,
                           report=lambda rep: add_report(rep, tables, figures),
                           rates=rates, parameters={"simulate": spec.model_dump()})


def simulate_spec(ctx, min_intervals: int = 1) -> SimulateSpec:
    """The scenario's ``[simulate]`` table, validated, with its workloads and sampling checked up front
    (``min_intervals``: intervals even a very slow run must be able to hold)."""
    try:
        spec = SimulateSpec.model_validate(ctx.scenario.section("simulate") or {})
    except ValidationError as exc:
        raise ScenarioError(format_validation_error(exc, f"{ctx.source}: simulate")) from None
    if not ctx.scenario.workloads:
        raise ScenarioError(f"{ctx.source}: workloads: the {ctx.scenario.study} study needs at least one workload")
    for w in ctx.scenario.workloads:
        try:
            _resolve_workload(w)
        except SimulatorInputError as exc:
            raise ScenarioError(f"{ctx.source}: workloads: {exc}") from None
    try:
        sampling = spec.sampling_scaled()
        for run in ctx.runs:
            check_sampling_feasible(load_platform(run.platform, run.overrides), spec.instructions, sampling,
                                    min_intervals)
    except SimulatorInputError as exc:
        raise ScenarioError(f"{ctx.source}: simulate: {exc}") from None
    return spec


def simulate_runs(ctx, spec: SimulateSpec) -> list[dict]:
    """Every run of the study (locally with a progress bar, or on the cluster): identity + ``simulate_one``."""
    from whatif.scenarios.cachesim_study import compile_kernels
    from whatif.scenarios.progress import progress_bar

    compile_kernels(ctx.progress)
    with progress_bar(len(ctx.runs), ctx.scenario.study, enabled=ctx.progress) as advance:
        outs = ctx.executor.map(_simulate_run, ctx.runs, shared=spec, progress=None, units=1) \
            if ctx.executor.cluster else [_simulate_run(r, spec, progress=None) for r in _advancing(ctx.runs, advance)]
    return [{**run.identity(), **out} for run, out in zip(ctx.runs, outs)]


def _advancing(items, advance):
    for item in items:
        yield item
        advance(1)


def _simulate_run(run, spec: SimulateSpec, progress=None) -> dict:
    platform = load_platform(run.platform, run.overrides)
    return simulate_one(platform, run.workload, spec, run.seed)
