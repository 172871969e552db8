"""Study kind ``cachesim``: address traces through the caches and TLBs of platforms and what-if variants.

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

Seeds: the scenario seed draws a synthetic trace (the program); a run's replicate seed places its pages.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, model_validator

from whatif.scenarios.errors import ScenarioError
from whatif.scenarios.kernels import load_kernels
from whatif.scenarios.registry import StudyKind, StudyOutput, register_study
from whatif.scenarios.render.cachesim import (headline, headline_table, miss_ratio_figure, mpka_figure, run_tables, side_by_side,
                                              trace_summary)
from whatif.scenarios.results.progress import progress_bar
from whatif.scenarios.results.report import figure_png
from whatif.simulator.collect import run_trace
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.platform import load_platform
from whatif.simulator.traces import (MAX_SYNTHETIC_RECORDS, STREAM_KINDS, Stream, Trace, mixed_streams, read_trace,
                                     synthetic_trace)




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

    @model_validator(mode="after")
    def _one_source(self) -> "TraceSpec":
        if (self.file is None) == (self.synthetic is None):
            raise ValueError("give exactly one of 'file' or 'synthetic'")
        if self.synthetic == "custom" and not self.streams:
            raise ValueError(f"synthetic = \"custom\" needs [[trace.streams]] (kinds: {', '.join(STREAM_KINDS)})")
        records = self.accesses * (1 + self.instructions_per_access)
        if self.synthetic is not None and records > MAX_SYNTHETIC_RECORDS:     # counted, never allocated
            count = f"{records:,.0f}" if records < 1e15 else f"{records:.3g}"
            raise ValueError(f"the synthetic trace would hold {count} records (accesses x (1 + "
                             f"instructions_per_access)); the limit is {MAX_SYNTHETIC_RECORDS:,}")
        return self


def build_trace(spec: TraceSpec, seed: int, base_dir: Path) -> Trace:
    if spec.file is not None:
        path = Path(spec.file)
        if not path.is_absolute():
            path = base_dir / path
        return read_trace(path, spec.format)
    streams = mixed_streams() if spec.synthetic == "mixed" else [Stream(**s.model_dump()) for s in spec.streams]
    return synthetic_trace(streams, spec.accesses, seed=seed, instructions_per_access=spec.instructions_per_access,
                           code_kb=spec.code_kb)






def simulate_run(run, trace: Trace, progress=None) -> tuple[dict, float]:
    """One run of the study (module level, so that Dask workers can import it)."""
    return run_trace(load_platform(run.platform, run.overrides), trace, seed=run.seed, progress=progress)




# ---------------------------------------------------------------------------------------- CLI glue




# ---------------------------------------------------------------------------------------- tables








# ---------------------------------------------------------------------------------------- study kind
@register_study
class CachesimStudy(StudyKind):
    """Every variant (and sweep point, and platform) runs the same trace; results side by side."""

    name = "cachesim"
    sections = {"trace": TraceSpec}
    required_sections = ("trace",)

    def run(self, ctx) -> StudyOutput:
        spec = self.spec["trace"]
        try:
            trace = build_trace(spec, seed=ctx.scenario.seed, base_dir=ctx.base_dir)
        except SimulatorInputError as exc:
            raise ScenarioError(f"{ctx.source}: trace: {exc}") from None
        summary = trace_summary(trace)
        load_kernels(ctx.progress, trace=load_platform(ctx.runs[0].platform) if ctx.runs else None)
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
                           parameters={"trace": spec.model_dump(), "trace_summary": summary},
                           headline=headline_table(results["runs"]))


