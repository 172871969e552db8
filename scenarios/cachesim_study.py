"""Study kind ``cachesim``: address traces through the caches and TLBs of platforms and what-if variants.

Also the glue of ``whatif cachesim TRACE --platform P``.

``results.json`` of a cachesim study::

    {"trace": {"source": str, "records": n, "instructions": n, "loads": n, "stores": n, "modifies": n},
     "runs": [{"run": id, "variant": name, "platform": p, <swept keys>, "replicate": r,
               "levels": {L: {"accesses", "misses", "miss_ratio", "mpka"}},
               "tlbs": {T: {"accesses", "misses", "miss_ratio"}},
               "memory": {"reads", "writes"},
               "simulation_seconds": s, "accesses_per_s": x}, ...]}

``mpka`` is misses per thousand trace records.  Tables: ``totals`` (contract 1:
one row per run, identifying columns then one column per counter such as
``L2_misses``), ``levels`` and ``tlbs`` (long form, one row per run and structure).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, PositiveInt, ValidationError

from whatif.scenarios.errors import ScenarioError
from whatif.scenarios.report import figure_png
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.memory.hierarchy import MemoryHierarchy
from whatif.simulator.platform import load_platform
from whatif.simulator.schema import format_validation_error
from whatif.simulator.traces import STREAM_KINDS, Stream, Trace, mixed_streams, read_trace, synthetic_trace

HEADLINE_KEYS = ("accesses", "misses", "miss_ratio")


class StreamSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["sequential", "strided", "random", "hot"]
    weight: float = Field(gt=0)
    footprint_kb: float = Field(gt=0)
    stride: PositiveInt = 64
    access_bytes: PositiveInt = 8
    hot_kb: float = Field(default=4.0, gt=0)
    store_fraction: float = Field(default=0.3, ge=0, le=1)


class TraceSpec(BaseModel):
    """Where the addresses come from: a file (lackey or whatif binary) or a synthetic mix."""
    model_config = ConfigDict(extra="forbid")
    file: str | None = None
    format: Literal["auto", "lackey", "whatif"] = "auto"
    synthetic: Literal["mixed", "custom"] | None = None
    accesses: PositiveInt = 1_000_000
    instructions_per_access: float = Field(default=0.0, ge=0)
    code_kb: float = Field(default=16.0, gt=0)
    streams: list[StreamSpec] = []

    def check(self, source: str) -> None:
        if (self.file is None) == (self.synthetic is None):
            raise ScenarioError(f"{source}: trace: give exactly one of 'file' or 'synthetic'")
        if self.synthetic == "custom" and not self.streams:
            raise ScenarioError(f"{source}: trace: synthetic = \"custom\" needs [[trace.streams]] "
                                f"(kinds: {', '.join(STREAM_KINDS)})")


def build_trace(spec: TraceSpec, seed: int, base_dir: Path) -> Trace:
    if spec.file is not None:
        path = Path(spec.file)
        if not path.is_absolute():
            path = base_dir / path
        return read_trace(path, spec.format)
    streams = mixed_streams() if spec.synthetic == "mixed" else [Stream(**s.model_dump()) for s in spec.streams]
    return synthetic_trace(streams, spec.accesses, seed=seed, instructions_per_access=spec.instructions_per_access,
                           code_kb=spec.code_kb)


def trace_summary(trace: Trace) -> dict[str, Any]:
    c = trace.counts()
    return {"source": trace.source, "records": len(trace), "instructions": c["I"], "loads": c["L"],
            "stores": c["S"], "modifies": c["M"]}


def simulate(platform, trace: Trace, seed: int, progress=None) -> tuple[dict, float]:
    """Run ``trace`` through a fresh hierarchy of ``platform``; returns (counters, simulation seconds)."""
    h = MemoryHierarchy(platform, seed=seed)
    h.run(trace.addrs, trace.sizes, trace.kinds, progress=progress)
    return h.counters(), h.simulation_seconds


def compile_kernels(progress: bool) -> None:
    """Load the numba kernels (compiling them on the very first run, which takes about a minute)
    under a status line, so that the first run does not look stuck."""
    from whatif.scenarios.progress import status

    empty = np.zeros(0, np.uint64)
    with status("whatif: loading the simulation kernels (compiled once, then cached)", enabled=progress):
        MemoryHierarchy(load_platform("mpc7447a")).run(empty, empty.astype(np.uint16), empty.astype(np.uint8))


def simulate_run(run, trace: Trace, progress=None) -> tuple[dict, float]:
    """One run of the study (module level, so that Dask workers can import it)."""
    return simulate(load_platform(run.platform, run.overrides), trace, seed=run.seed, progress=progress)


def headline(counters: dict, records: int) -> dict[str, Any]:
    levels = {}
    for name, row in counters["levels"].items():
        levels[name] = {k: row[k] for k in HEADLINE_KEYS}
        levels[name]["mpka"] = 1000.0 * row["misses"] / records if records else 0.0
    tlbs = {name: {"accesses": row["accesses"], "misses": row["misses"],
                   "miss_ratio": row["misses"] / row["accesses"] if row["accesses"] else 0.0}
            for name, row in counters["tlbs"].items()}
    return {"levels": levels, "tlbs": tlbs, "memory": {k: counters["memory"][k] for k in ("reads", "writes")}}


# ---------------------------------------------------------------------------------------- CLI glue
def cachesim_command(trace_path: Path, platform_name: str, overrides: list[str], fmt: str,
                     progress: bool = True) -> dict[str, Any]:
    """``whatif cachesim``: the JSON document of the issue (levels and TLBs with all counters)."""
    from whatif.scenarios.progress import progress_bar

    platform = load_platform(platform_name, overrides)   # validate the platform before reading the trace
    trace = read_trace(trace_path, fmt)
    compile_kernels(progress)
    with progress_bar(len(trace), "simulating accesses", enabled=progress) as advance:
        counters, seconds = simulate(platform, trace, seed=0, progress=advance)
    return {"platform": platform.name, "trace": str(trace_path), "trace_accesses": len(trace),
            "simulation_seconds": round(seconds, 6),
            "accesses_per_s": len(trace) / seconds if seconds > 0 else None,
            "levels": counters["levels"], "tlbs": counters["tlbs"], "memory": counters["memory"]}


def print_summary(doc: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title=f"{doc['platform']}: {doc['trace_accesses']:,} trace records "
                        f"in {doc['simulation_seconds']:.3f} s")
    for col in ("structure", "accesses", "hits", "misses", "miss ratio", "writebacks", "prefetches"):
        table.add_column(col, justify="right")
    for name, row in doc["levels"].items():
        table.add_row(name, f"{row['accesses']:,}", f"{row['hits']:,}", f"{row['misses']:,}",
                      f"{row['miss_ratio']:.4f}", f"{row['writebacks']:,}", f"{row['prefetches_issued']:,}")
    for name, row in doc["tlbs"].items():
        ratio = row["misses"] / row["accesses"] if row["accesses"] else 0.0
        table.add_row(name, f"{row['accesses']:,}", f"{row['hits']:,}", f"{row['misses']:,}", f"{ratio:.4f}",
                      "", "")
    console.print(table)


# ---------------------------------------------------------------------------------------- tables
def run_tables(runs: list[dict[str, Any]], id_columns: list[str]) -> dict[str, pd.DataFrame]:
    """Counter tables of a study: totals (contract 1), levels and tlbs (long form)."""
    totals, levels, tlbs = [], [], []
    for run in runs:
        ident = {k: run[k] for k in id_columns}
        row = dict(ident)
        for name, counters in run["counters"]["levels"].items():
            levels.append({**ident, "level": name, **counters})
            for key in ("accesses", "misses", "load_misses", "store_misses", "instr_misses", "walk_accesses",
                        "writebacks", "prefetches_issued", "prefetches_useful"):
                row[f"{name}_{key}"] = counters[key]
        for name, counters in run["counters"]["tlbs"].items():
            tlbs.append({**ident, "tlb": name, **counters})
            row[f"{name}_accesses"] = counters["accesses"]
            row[f"{name}_misses"] = counters["misses"]
        row["memory_reads"] = run["counters"]["memory"]["reads"]
        row["memory_writes"] = run["counters"]["memory"]["writes"]
        totals.append(row)
    return {"totals": pd.DataFrame(totals), "levels": pd.DataFrame(levels), "tlbs": pd.DataFrame(tlbs)}


def grouped_bars(categories: list[str], series: dict[str, list[float]], ylabel: str, title: str):
    """One group of bars per category, one bar per series (run)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(categories) + 0.3 * len(series)), 3.8))
    width = 0.8 / max(1, len(series))
    x = np.arange(len(categories))
    for i, (label, values) in enumerate(series.items()):
        ax.bar(x + i * width - 0.4 + width / 2, values, width, label=label)
    ax.set_xticks(x, categories)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8, ncol=2)
    ax.grid(axis="y", alpha=0.3)
    return fig


def miss_ratio_figure(levels: pd.DataFrame):
    names = list(dict.fromkeys(levels["level"]))
    series = {str(run): sub.set_index("level").reindex(names)["miss_ratio"].tolist()
              for run, sub in levels.groupby("run", sort=False)}
    return grouped_bars(names, series, "miss ratio (demand)", "Cache miss ratio by level")


def mpka_figure(totals: pd.DataFrame, records: int):
    cols = [c for c in totals.columns if c.endswith("_misses") and not c.endswith(
        ("load_misses", "store_misses", "instr_misses"))]
    series = {str(row["run"]): [1000.0 * row[c] / max(records, 1) for c in cols] for _, row in totals.iterrows()}
    return grouped_bars([c.removesuffix("_misses") for c in cols], series, "misses per 1000 records",
                        "Misses per thousand trace records, caches and TLBs")


# ---------------------------------------------------------------------------------------- study kind
class CachesimStudy:
    """Every variant (and sweep point, and platform) runs the same trace; results side by side."""

    sections = ("trace",)

    def run(self, ctx) -> "StudyOutput":
        from whatif.scenarios.progress import progress_bar
        from whatif.scenarios.studies import StudyOutput

        raw = ctx.scenario.section("trace")
        if raw is None:
            raise ScenarioError(f"{ctx.source}: trace: the cachesim study needs a [trace] table")
        try:
            spec = TraceSpec.model_validate(raw)
        except ValidationError as exc:
            raise ScenarioError(format_validation_error(exc, f"{ctx.source}: trace")) from None
        spec.check(ctx.source)
        try:
            trace = build_trace(spec, seed=ctx.scenario.seed, base_dir=ctx.base_dir)
        except SimulatorInputError as exc:
            raise ScenarioError(f"{ctx.source}: trace: {exc}") from None
        summary = trace_summary(trace)
        compile_kernels(ctx.progress)
        runs_out = []
        total_seconds = 0.0
        with progress_bar(len(trace) * len(ctx.runs), "cachesim", enabled=ctx.progress) as advance:
            outcomes = ctx.executor.map(simulate_run, ctx.runs, shared=trace, progress=advance,
                                        units=len(trace))
        for run, (counters, seconds) in zip(ctx.runs, outcomes):
            total_seconds += seconds
            runs_out.append({**run.identity(), "counters": counters, "seconds": seconds})
        id_columns = list(ctx.runs[0].identity()) if ctx.runs else ["run"]
        tables = run_tables(runs_out, id_columns)
        results = {"trace": summary, "runs": []}
        for r in runs_out:
            entry = {k: r[k] for k in id_columns}
            entry.update(headline(r["counters"], len(trace)))
            entry["simulation_seconds"] = round(r["seconds"], 6)
            entry["accesses_per_s"] = len(trace) / r["seconds"] if r["seconds"] > 0 else None
            results["runs"].append(entry)
        # rendered once, for the report and the file alike
        figures = {
            "miss_ratios": (figure_png(miss_ratio_figure(tables["levels"])),
                            "Demand miss ratio of every cache level, per run"),
            "mpka": (figure_png(mpka_figure(tables["totals"], len(trace))),
                     "Misses per thousand trace records, per cache level and TLB"),
        }
        rate = len(trace) * len(ctx.runs) / total_seconds if total_seconds > 0 else 0.0

        def report(rep) -> None:
            rep.paragraph(f"Trace: {summary['source']} — {summary['records']:,} records "
                          f"({summary['instructions']:,} instruction fetches, {summary['loads']:,} loads, "
                          f"{summary['stores']:,} stores, {summary['modifies']:,} modifies).")
            rep.heading("Runs side by side")
            rep.table(side_by_side(tables["levels"], tables["tlbs"]), index=True,
                      caption="Demand accesses, misses and miss ratio per structure (columns: runs)")
            rep.figure(figures["miss_ratios"][0], figures["miss_ratios"][1])
            rep.figure(figures["mpka"][0], figures["mpka"][1])
            rep.heading("All counters")
            rep.table(tables["levels"].drop(columns=["replicate"], errors="ignore"),
                      caption="Per cache level (accesses and misses by source, writebacks, prefetches)")
            rep.table(tables["tlbs"], caption="Per TLB")

        return StudyOutput(results=results, tables=tables, figures=figures, report=report,
                           rates={"simulated_accesses_per_s": rate},
                           parameters={"trace": spec.model_dump(), "trace_summary": summary})


def side_by_side(levels: pd.DataFrame, tlbs: pd.DataFrame) -> pd.DataFrame:
    """Rows: structure x metric; columns: runs."""
    rows = {}
    for _, r in levels.iterrows():
        for key in ("accesses", "misses", "miss_ratio", "writebacks", "prefetches_issued"):
            rows.setdefault((r["level"], key), {})[r["run"]] = r[key]
    for _, r in tlbs.iterrows():
        ratio = r["misses"] / r["accesses"] if r["accesses"] else 0.0
        for key, value in (("accesses", r["accesses"]), ("misses", r["misses"]), ("miss_ratio", ratio)):
            rows.setdefault((r["tlb"], key), {})[r["run"]] = value
    df = pd.DataFrame.from_dict(rows, orient="index")
    df.index = [f"{a} {b}" for a, b in df.index]
    return df
