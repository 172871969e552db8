"""Study kind ``flowgsp``: seed 001 end to end -- a workload profiled instruction by instruction on a platform
(CPMF-style sampled counters, :mod:`simulator.profiledb`), its profile database mined with FlowGSP
(:mod:`models.flowgsp`), per variant, with the thesis's findings beside the simulated ones.

For every run (variant x platform x workload x replicate): ``warmup`` program instructions run first,
unprofiled (the JIT's burn-in, §2.5.1), then ``instructions`` are profiled with a sample every
``sample_every`` cycles; the profile's EFG (§4.3; ``prologue_bytes`` bounds the Prologue attribute) is
mined with gap ``gap`` and window ``window`` (§4.4: g = 0, w = 1 absorbs the z10's pairing noise).

``results.json``::

    {"seed_patterns": [{"pattern", "seed_sm", "where"}],
     "runs": {run: {"variant", "platform", "workload", "replicate", "patterns": {pattern: sm | null},
                    "patterns_found": n (S_M >= 0.01), "patterns_within_3x": n, "icache_cycle_share",
                    "l1i_misses", "itlb_misses", "cycles", "requests", "cycles_per_request", "shape",
                    "sampled_events", "top_by_sm": [...], "top_by_sd": [...], "mining_seconds",
                    "sim_instructions_per_s"}},
     "comparisons": [{"run", "against", "itlb_misses_change_pct", "l1i_misses_change_pct",
                      "cycles_per_request_change_pct", "throughput_change_pct"}],
     "seed_large_pages": {...}}

Tables: ``patterns``, ``comparisons``, per run ``<run>_sequences`` and ``<run>_methods``; files
``<run>_profile.sqlite`` (mine them again with ``whatif mine``); figures ``<run>_supports``.
"""

from __future__ import annotations

import re
import time

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt

from whatif.models.flowgsp import FlowGSP
from whatif.models.flowgsp.profile_db import efg_from_tables
from whatif.scenarios.measure import check_workloads, load_run_kernels
from whatif.scenarios.registry import StudyKind, StudyOutput, register_study
from whatif.scenarios.render.flowgsp import (SEED_LARGE_PAGES, SEED_PATTERNS, add_study_report, comparison_row,
                                             pattern_table, pattern_text, top_sequences)
from whatif.scenarios.render.profile import method_table, sqlite_bytes
from whatif.scenarios.results.progress import progress_bar, status
from whatif.scenarios.results.report import figure_png
from whatif.simulator.platform import load_platform
from whatif.simulator.profiledb import DEFAULT_SAMPLE_EVERY, collect_profile

FOUND_SM = 0.01          # the acceptance's "found": kept with S_M >= 0.01


class FlowGSPSpec(BaseModel):
    """The ``[flowgsp]`` table."""
    model_config = ConfigDict(extra="forbid")
    instructions: PositiveInt = 20_000_000
    warmup: NonNegativeInt = 5_000_000
    sample_every: PositiveInt = DEFAULT_SAMPLE_EVERY
    os_noise: bool = True
    gap: NonNegativeInt = 0
    window: NonNegativeInt = 1
    generations: PositiveInt = 10
    min_support: float = Field(default=0.01, gt=0, le=1)
    min_diff_support: float = Field(default=0.01, gt=0, le=1)
    prologue_bytes: PositiveInt = 16
    workers: PositiveInt | None = None        # local processes for the profiling runs; default 2


def profile_item(run, shared: dict, progress=None) -> dict:
    """One profiled run (module level, so pool and Dask workers can import it)."""
    spec = shared["spec"]
    done = collect_profile(load_platform(run.platform, run.overrides), run.workload, spec["instructions"],
                           warmup=spec["warmup"], sample_every=spec["sample_every"], program_seed=run.program_seed,
                           replicate_seed=run.seed, os_noise=spec["os_noise"], workload_name=run.workload)
    if progress is not None:
        progress(1)
    return {"summary": done.summary, "tables": done.tables}


def _stem(run_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", run_id)


@register_study
class FlowGSPStudy(StudyKind):
    name = "flowgsp"
    sections = {"flowgsp": FlowGSPSpec}
    needs_workloads = True

    def check(self) -> None:
        check_workloads(self.scenario.workloads, self.source)

    def run(self, ctx) -> StudyOutput:
        spec = self.spec["flowgsp"]
        load_run_kernels(ctx, profiler=True, miner=True)
        shared = {"spec": spec.model_dump()}
        with progress_bar(len(ctx.runs), "profiling", enabled=ctx.progress) as advance:
            outs = ctx.executor.map(profile_item, ctx.runs, shared=shared, progress=advance, units=1,
                                    workers=spec.workers or 2)
        engine = FlowGSP(gap=spec.gap, window=spec.window, n_generations=spec.generations,
                         min_support=spec.min_support, min_diff_support=spec.min_diff_support)
        tables: dict[str, pd.DataFrame] = {}
        files: dict[str, bytes] = {}
        figures: dict[str, tuple[bytes, str]] = {}
        results_runs: dict[str, dict] = {}
        patterns, tops, summaries, supports = [], {}, {}, {}
        rates = {}
        for run, out in zip(ctx.runs, outs):
            stem = _stem(run.id)
            summary = out["summary"]
            with status(f"mining {run.id}", enabled=ctx.progress):
                t0 = time.perf_counter()
                efg = efg_from_tables(out["tables"], source=f"{run.id} profile", prologue_bytes=spec.prologue_bytes)
                mined = engine.fit(efg)
                seconds = time.perf_counter() - t0
            pt = pattern_table(run.id, mined)
            patterns.append(pt)
            by_sm, by_sd = top_sequences(mined, "sm"), top_sequences(mined, "sd")
            tops[run.id] = (by_sm, by_sd)
            summaries[run.id] = summary
            methods = method_table(out["tables"])
            tables[f"{stem}_sequences"] = mined.table()
            tables[f"{stem}_methods"] = methods
            files[f"{stem}_profile.sqlite"] = sqlite_bytes(out["tables"])
            supports[run.id] = figure_png(mined.plot_supports())
            figures[f"{stem}_supports"] = (supports[run.id], f"{run.id}: S_w against S_f")
            found = pt.sm.notna() & (pt.sm.fillna(0) >= FOUND_SM)
            results_runs[run.id] = {
                **{k: v for k, v in run.identity().items() if k != "run"},
                "patterns": {p: (None if pd.isna(v) else float(v)) for p, v in zip(pt.pattern, pt.sm)},
                "patterns_found": int(found.sum()),
                "patterns_within_3x": int(pt.within_3x.sum()),
                **{k: summary[k] for k in ("icache_cycle_share", "itlb_cycle_share", "l1i_misses", "itlb_misses",
                                           "cycles", "cpi", "requests", "cycles_per_request", "shape",
                                           "sampled_events", "samples", "sim_instructions_per_s")},
                "top_by_sm": by_sm.to_dict(orient="records"), "top_by_sd": by_sd.to_dict(orient="records"),
                "mining_seconds": seconds, "mined_sequences": len(mined.sequences)}
            rates[f"sim_instructions_per_s[{run.id}]"] = summary["sim_instructions_per_s"]
        comparisons = self._comparisons(ctx.runs, summaries)
        tables["patterns"] = pd.concat(patterns, ignore_index=True)
        tables["comparisons"] = comparisons
        results = {"seed_patterns": [{"pattern": pattern_text(e), "seed_sm": sm, "where": w}
                                     for e, sm, w in SEED_PATTERNS],
                   "runs": results_runs, "comparisons": comparisons.to_dict(orient="records"),
                   "seed_large_pages": SEED_LARGE_PAGES}
        headline = self._headline(ctx.runs, results_runs)
        return StudyOutput(results=results, tables=tables, figures=figures, files=files, rates=rates,
                           parameters={"flowgsp": spec.model_dump()}, headline=headline,
                           report=lambda rep: add_study_report(rep, tables["patterns"], comparisons, tops,
                                                               summaries, supports))

    @staticmethod
    def _comparisons(runs: list, summaries: dict[str, dict]) -> pd.DataFrame:
        """Each run against the run of the first variant with the same platform, workload and replicate."""
        first = runs[0].variant
        base = {(r.platform, r.workload, r.binary, r.replicate): r.id for r in runs if r.variant == first}
        rows = []
        for r in runs:
            ref = base.get((r.platform, r.workload, r.binary, r.replicate))
            if r.variant != first and ref is not None:
                rows.append({"run": r.id, "against": ref, **comparison_row(r.variant, summaries[r.id], summaries[ref])})
        return pd.DataFrame(rows, columns=["run", "against", "variant", "itlb_misses_change_pct",
                                           "l1i_misses_change_pct", "cycles_per_request_change_pct",
                                           "throughput_change_pct"])

    @staticmethod
    def _headline(runs: list, results_runs: dict[str, dict]) -> pd.DataFrame:
        rows = []
        for r in runs:
            doc = results_runs[r.id]
            suffix = "" if len({x.workload for x in runs}) == 1 else f" {r.workload}"
            for text, sm in doc["patterns"].items():
                rows.append({"metric": f"S_M {text}{suffix}", "variant": r.variant, "value": sm})
            rows += [{"metric": f"I-cache share of cycles{suffix}", "variant": r.variant,
                      "value": doc["icache_cycle_share"]},
                     {"metric": f"L1I misses{suffix}", "variant": r.variant, "value": doc["l1i_misses"]},
                     {"metric": f"ITLB misses{suffix}", "variant": r.variant, "value": doc["itlb_misses"]},
                     {"metric": f"cycles per request{suffix}", "variant": r.variant,
                      "value": doc["cycles_per_request"]}]
        df = pd.DataFrame(rows)
        df["value"] = pd.to_numeric(df["value"], errors="coerce")
        return df.groupby(["metric", "variant"], sort=False, as_index=False).mean()
