"""Core-simulation results -> tables (totals, CPI stacks, time series), figures, report sections and the
terminal summary; shared by ``whatif simulate`` and the ``simulate`` and ``similarity`` studies."""

from __future__ import annotations

import numpy as np
import pandas as pd

from whatif.scenarios.results.report import figure_png
from whatif.simulator.platform import Platform, load_platform

MAX_SERIES_FIGURES = 6          # time-series figures per report (the tables hold every run's series)


def print_summary(doc: dict) -> None:
    from whatif.scenarios.render import stdout_console
    from rich.table import Table

    console = stdout_console()
    if "sampled" in doc:
        print_sampled_summary(doc, console)
        return
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


def _pm(est: dict, digits: int = 4) -> tuple[str, str, str]:
    """(mean, +- half-width, relative) of an estimate's dict, for a table row."""
    rel = f"{est['relative_error']:.1%}" if est["mean"] else "–"
    return f"{est['mean']:.{digits}g}", f"± {est['half_width']:.{digits - 1}g}", rel


def print_sampled_summary(doc: dict, console) -> None:
    """A SMARTS sampled run: CPI, CPI stack and every event rate with its confidence interval."""
    from rich.table import Table

    smp = doc["sampled"]
    cpi = smp["cpi"]
    conf = f"{smp['confidence']:.1%} confidence"
    segments = (f"; in {smp['segments']} segments, each later one fast-forwarded and warmed from cold for up "
                f"to {smp['overlap']:,} instructions" if smp.get("segments", 1) > 1 else "")
    bounded = (f", and at most {smp['functional_warming']:,} functionally warmed before that, the rest of each gap "
               f"cache-warmed ({smp['cache_warmed_instructions']:,} instructions)"
               if smp.get("functional_warming") is not None else "")
    console.print(f"{doc['workload']} on {doc['platform']}: {doc['instructions']:,} instructions, SMARTS sample of "
                  f"{smp['units']:,} units of {smp['unit']:,} instructions (one in {smp['period']:,.1f}, each after "
                  f"{smp['warmup']:,} of detailed warm-up{bounded}{segments}); "
                  f"{smp['effective_instructions_per_s'] / 1e6:.2f} M instructions/s effective")
    console.print(f"CPI {cpi['mean']:.4f} ± {cpi['half_width']:.4f} (± {cpi['relative_error']:.1%} at {conf}: "
                  f"[{cpi['ci'][0]:.4f}, {cpi['ci'][1]:.4f}]; V = {cpi['cv']:.3f})")
    lp = smp.get("live_points")
    if lp is not None:
        if lp["action"] == "captured":
            said = f"live-points captured: {lp['units']:,} units' warmed state stored ({lp['bytes'] / 1e6:,.1f} MB)"
        else:
            core = ("captured on this core: every unit as the capture timed it" if lp["exact"] else
                    f"captured on this core; the first unit of each of {lp['workers']} workers' shares from an empty "
                    f"pipeline" if lp["same_core"] else
                    f"captured on another {lp['captured_on'].get('platform')} core: the units start from the state "
                    f"its warming left")
            said = f"replayed from live-points, no warming ({core})"
        before = lp.get("first_run")
        if before is not None:                     # N = auto: the first run's sample has its own library
            said += f"; the first run's {before['units']:,} units {before['action']} ({before['library']})"
        console.print(f"{said}; {lp['library']}")
    first = smp.get("first_run")
    if first is not None:
        est = first["cpi"]
        console.print(f"SMARTS's second run (N = auto): the first, {first['units']:,} units, gave CPI "
                      f"{est['mean']:.4f} ± {est['relative_error']:.1%} (V = {est['cv']:.3f}), which asks n >= "
                      f"{first['recommended_units']:,}; this run measured {smp['units']:,} (the effective rate counts "
                      f"both runs)")
    if smp["advice"]:
        console.print(f"[yellow]too few units:[/] {smp['advice']}")
    stack = Table(title=f"CPI stack (± at {conf})")
    for col, justify in (("cause", "left"), ("CPI", "right"), ("±", "right"), ("rel.", "right")):
        stack.add_column(col, justify=justify)
    for cause, est in smp["cpi_stack"].items():
        if est["mean"]:
            stack.add_row(cause, *_pm(est))
    rates = Table(title=f"events per instruction (± at {conf})")
    rates.add_column("event", no_wrap=True)
    for col in ("per instruction", "±", "rel.", "estimated total"):
        rates.add_column(col, justify="right")
    for event, est in smp["event_rates"].items():
        rates.add_row(event, *_pm(est), f"{doc['totals'][event]:,.0f}")
    console.print(stack)
    console.print(rates)


def simulate_tables(runs: list[dict]) -> dict[str, pd.DataFrame]:
    id_cols = [k for k in runs[0] if k in ("run", "variant", "platform", "workload", "replicate")
               or k not in ("totals", "counters", "cpi", "cpi_stack", "seconds", "pmu_runs",
                            "sim_instructions_per_s", "timeseries", "sampled")]
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

    tables = simulate_tables(runs)
    figs = {"cpi_stacks": (figure_png(cpi_stack_figure(tables["cpi_stacks"])), "CPI stack per workload and platform")}
    with_series = [r for r in runs if r.get("timeseries") is not None and len(r["timeseries"])]
    for k, r in enumerate(with_series[:MAX_SERIES_FIGURES]):
        ts = r["timeseries"]
        platform = load_platform(r["platform"])
        cyc, ins = _cycles_and_instructions(platform)
        stalls = [e for e in platform.pmu.events if "STALL" in e.upper() or e in ("AGIstall",)]
        key = f"timeseries_{r['workload']}_{r['platform']}".replace("/", "_").replace(".", "_")
        shown = (f" (the first {MAX_SERIES_FIGURES} of {len(with_series)} runs' time series are plotted; all are in "
                 f"the timeseries table)" if k == 0 and len(with_series) > MAX_SERIES_FIGURES else "")
        figs[key] = (figure_png(timeseries_figure(ts, cyc, ins, stalls, f"{r['workload']} on {r['platform']}")),
                     f"Counter time series of {r['workload']} on {r['platform']}{shown}")
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
