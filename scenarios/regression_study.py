"""Study kind ``regression``: seed 000 (Rao & Murakami) on the simulated 7447A.

For each variant (platform overrides), each workload of the scenario (the nine of seed 000 Table III),
each heap size ``heap_factors × H_min`` (H_min: the catalog's ``min_heap_kb``) and each replicate, a
Java run (:class:`simulator.javamachine.JavaMachine`: the workload's mutator stream interleaved with
allocation stores and mark-sweep collections decided by the heap simulator, under OS timer noise)
counts every platform PMU event.  In ``physical`` PMU mode the events are spread over several runs
(six counters on the 7447A, ``cycles`` in each: four runs for the 19 events), each a separate
simulated run with its own run-to-run variation (page placement, timer phase), merged into one
counter-totals row (contract 1) per configuration and replicate.  With ``same_input`` (default) every
run of a benchmark reads the same input, as every run of SPECjvm98 ``-s100`` does: the program's
data-dependent choices (branch outcomes, random addresses, call targets) are the same in each run, and
only page placement and the timer vary.  Without it each run draws its own choices, as if each read
a different input; on 300,000-instruction windows that alone spreads six runs of one db configuration
from 1.10 M to 1.84 M cycles (the same runs with one input: 1.37 M to 1.42 M), which buries the
event-to-cycles relationship the study is about.  The regression engine
(:mod:`models.regression`) then fits, per variant, the I-order, II-order and BIC-pruned II-order
models of ``cycles`` on the other events (``predictors``, after dropping redundant ones at
``redundancy_cut``, seed 000 §IV-A, but never those in ``keep_predictors``) with 10-fold
cross-validation.

Scale (``[regression]`` keys, documented in the shipped scenario): ``instructions`` mutator
instructions per run; heaps and the allocation stream's volumes scaled by ``heap_scale`` (object
sizes are not); ``instructions_per_unit`` mutator instructions per bytecode-equivalent unit of
allocation behaviour (how much the mutator's work between collections is compressed).  The start-up's
long-lived data is allocated functionally before the timed window.

``results.json``::

    {"variants": {name: {"I": {"r2", "cv_error_pct", "cv_error_ci95", "n_terms"}, "II": {...},
                         "II_pruned": {...}, "f_test_p": p, "pruned_interactions": ["a*b", ...],
                         "observations": n, "tlb_cache_interactions": [...], "warnings": [...]}},
     "seed_table_iv": {...}, "interaction_comparison": {...}, "design": {...}}

Tables: ``totals`` (contract 1, every variant), ``java_runs`` (collections, GC cycles and
instructions per configuration and PMU run), ``table_iv`` (every variant next to the seed),
``interactions`` (pruned interaction terms across variants) and, per variant, the engine's tables
prefixed ``<variant>_``.  Figures: Figures 1-4 per variant.
"""

from __future__ import annotations

import re
import time
import warnings
from functools import lru_cache
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from whatif.models.errors import ModelInputError
from whatif.scenarios.errors import ScenarioError
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.schema import format_validation_error

DEFAULT_FACTORS = [1.0 + 0.5 * i for i in range(11)]          # H_min .. 6 H_min in steps of 0.5 H_min
SEED_EXCLUDE = ["l2_imiss*l2_dmiss", "dl1_miss*l2_imiss"]      # seed 000 §IV-B: "not meaningful"
# seed 000 Table IV
SEED_TABLE_IV = {"I": {"r2": 0.907, "cv_error_pct": 12.02, "cv_error_spread": 32.34},
                 "II": {"r2": 0.992, "cv_error_pct": 2.89, "cv_error_spread": 11.27},
                 "II_pruned": {"r2": 0.992, "cv_error_pct": 2.91, "cv_error_spread": 11.25}}
SEED_MEASUREMENT_CI95_PCT = 1.53    # seed 000 §III-A: 95% interval of a configuration's five replicates
TLB_EVENTS = ("dtlb_miss", "itlb_miss")
CACHE_EVENTS = ("il1_miss", "dl1_miss", "l2_hits", "l2_miss", "l2_dmiss", "l2_imiss")
KB = 1024


class RegressionSpec(BaseModel):
    """The ``[regression]`` table of a scenario."""
    model_config = ConfigDict(extra="forbid")
    heap_factors: list[float] = Field(default_factory=lambda: list(DEFAULT_FACTORS), min_length=1)
    instructions: int = Field(default=300_000, ge=1000)
    instructions_per_unit: float = Field(default=0.2, gt=0)
    heap_scale: float = Field(default=1 / 32, gt=0, le=1)
    collector: str = "mark-sweep"
    pmu: Literal["ideal", "physical"] = "physical"
    os_noise: bool = True
    same_input: bool = True                                  # every run reads the benchmark's one input
    response: str = "cycles"
    predictors: list[str] | None = None                        # default: every other platform event
    exclude: list[str] = Field(default_factory=lambda: list(SEED_EXCLUDE))
    order: Literal[1, 2] = 2
    prune: Literal["bic", "none"] = "bic"
    bic: Literal["seed", "conventional"] = "seed"
    hierarchy: bool = True
    redundancy_cut: float | None = Field(default=None, gt=0, le=1)   # Spearman rho^2 (seed 000 §IV-A)
    keep_predictors: list[str] = Field(default_factory=list)       # never dropped as redundant
    folds: int = Field(default=10, ge=2)
    cv_seed: int | None = Field(default=None, ge=0)          # default: the scenario's seed
    workers: int | None = Field(default=None, ge=1)          # local processes; default: every core


def short_name(workload: str) -> str:
    return workload.rpartition("/")[2].rpartition(":")[2]


# ---------------------------------------------------------------------------------------- one configuration
@lru_cache(maxsize=16)
def _platform(name: str, overrides: tuple):
    from whatif.simulator.platform import load_platform

    return load_platform(name, overrides)


def run_configuration(item: dict, shared: dict, progress=None) -> dict:
    """One configuration (variant, workload, heap size, replicate): every event over the PMU runs it
    needs.  Module level, so process pools and Dask workers can import it."""
    from whatif.simulator.gc.behaviour import load_behaviour
    from whatif.simulator.javamachine import JavaMachine
    from whatif.simulator.osnoise import TimerNoise
    from whatif.simulator.pmu import evaluate, event_groups, merge_groups

    platform = _platform(item["platform"], tuple(item["overrides"]))
    pmu = platform.pmu
    groups = event_groups(pmu.events, pmu.physical_counters, pmu.fixed_events) if shared["pmu"] == "physical" else None
    n_runs = len(groups) if groups else 1
    behaviour = load_behaviour(item["workload"])
    seeds = np.random.SeedSequence([item["replicate_seed"], item["heap_index"]]).spawn(n_runs)
    per_run, gc_rows, host, instr = [], [], 0.0, 0
    for i in range(n_runs):
        m = JavaMachine(platform, item["workload"], behaviour, heap_bytes=item["heap_bytes"],
                        instructions=shared["instructions"], instructions_per_unit=shared["instructions_per_unit"],
                        seed=shared["binary_seed"], run_seed=int(seeds[i].generate_state(1)[0]),
                        input_seed=shared["binary_seed"] if shared["same_input"] else None,
                        noise=TimerNoise() if shared["os_noise"] else None, collector=shared["collector"],
                        alloc_scale=shared["heap_scale"])
        m.run()
        counters = m.counters()
        per_run.append(evaluate(pmu.sources, counters, pmu.events))
        gc_rows.append({"pmu_run": i, **m.gc_summary(), "cycles": counters["cycles"],
                        "instructions": counters["instructions"]})
        host += m.host_seconds
        instr += int(counters["instructions"])
    if progress is not None:
        progress(1)
    totals = merge_groups(groups, per_run) if groups else per_run[0]
    return {"totals": totals, "gc": gc_rows, "pmu_runs": n_runs, "host_seconds": host, "instructions": instr}


# ---------------------------------------------------------------------------------------- study
class RegressionStudyKind:
    sections = ("regression",)

    def run(self, ctx):
        from whatif.scenarios.cachesim_study import compile_kernels
        from whatif.scenarios.progress import progress_bar
        from whatif.scenarios.studies import StudyOutput

        spec = self._spec(ctx)
        items = self._items(ctx, spec)
        shared = {"instructions": spec.instructions, "instructions_per_unit": spec.instructions_per_unit,
                  "heap_scale": spec.heap_scale, "collector": spec.collector, "pmu": spec.pmu,
                  "os_noise": spec.os_noise, "same_input": spec.same_input, "binary_seed": int(ctx.scenario.seed)}
        compile_kernels(ctx.progress)
        workers = spec.workers or _cores()
        started = time.perf_counter()
        with progress_bar(len(items), "regression: Java runs", enabled=ctx.progress) as advance:
            try:
                outs = ctx.executor.map(run_configuration, items, shared=shared, progress=advance, units=1,
                                        workers=workers)
            except SimulatorInputError as exc:
                raise ScenarioError(f"{ctx.source}: {exc}") from None
        sim_seconds = time.perf_counter() - started
        totals, gc = self._tables(items, outs)
        fits = self._fit(ctx, spec, totals)
        from whatif.scenarios.regression_report import build_output

        rates = {"sim_instructions_per_s": sum(o["instructions"] for o in outs) / max(sum(o["host_seconds"] for o in outs), 1e-9),
                 "simulation_wall_seconds": sim_seconds, "configurations": len(items), "workers": workers,
                 "simulation_worker_seconds": sum(o["host_seconds"] for o in outs),
                 "simulated_instructions": sum(o["instructions"] for o in outs),
                 "simulated_runs": sum(o["pmu_runs"] for o in outs)}
        out = build_output(spec, ctx.scenario, totals, gc, fits, rates)
        return StudyOutput(**out)

    # ------------------------------------------------------------------ set-up
    @staticmethod
    def _spec(ctx) -> RegressionSpec:
        try:
            spec = RegressionSpec.model_validate(ctx.scenario.section("regression") or {})
        except ValidationError as exc:
            raise ScenarioError(format_validation_error(exc, f"{ctx.source}: regression")) from None
        if not ctx.scenario.workloads:
            raise ScenarioError(f"{ctx.source}: workloads: the regression study needs at least one workload "
                                "(seed 000 Table III: specjvm98/compress, ..., specjvm98/ecm)")
        if any(f <= 0 for f in spec.heap_factors):
            raise ScenarioError(f"{ctx.source}: regression.heap_factors: factors of H_min must be > 0, "
                                f"got {spec.heap_factors}")
        return spec

    @staticmethod
    def _items(ctx, spec: RegressionSpec) -> list[dict]:
        from whatif.simulator.gc.behaviour import load_behaviour
        from whatif.simulator.gc.config import check_collector
        from whatif.simulator.workload import load_workload

        try:
            check_collector(spec.collector)
        except SimulatorInputError as exc:
            raise ScenarioError(f"{ctx.source}: regression.collector: {exc}") from None
        hmin = {}
        for w in ctx.scenario.workloads:
            try:
                ref = load_workload(w)
                load_behaviour(w)
            except SimulatorInputError as exc:
                raise ScenarioError(f"{ctx.source}: workloads: {exc}") from None
            if ref.spec.min_heap_kb is None:
                raise ScenarioError(f"{ctx.source}: workloads: {w} has no min_heap_kb (H_min) in its catalog")
            hmin[w] = ref.spec.min_heap_kb
        for run in ctx.runs:
            pmu = _platform(run.platform, tuple(run.overrides)).pmu
            pairs = [n for e in spec.exclude for n in re.split(r"[*:]", e)]
            for key, names in (("response", [spec.response]), ("predictors", spec.predictors or []),
                               ("keep_predictors", spec.keep_predictors), ("exclude", pairs)):
                for name in names:
                    if name not in pmu.events:
                        raise ScenarioError(f"{ctx.source}: regression.{key}: {name!r} is not an event of "
                                            f"{run.platform} (events: {', '.join(pmu.events)})")
        items = []
        for run in ctx.runs:
            for k, f in enumerate(spec.heap_factors):
                heap_kb = hmin[run.workload] * f
                items.append({"variant": run.variant, "platform": run.platform, "overrides": list(run.overrides),
                              "workload": run.workload, "replicate": run.replicate, "replicate_seed": run.seed,
                              "heap_index": k, "heap_factor": f, "heap_kb": heap_kb,
                              "heap_bytes": max(int(heap_kb * KB * spec.heap_scale), 4096)})
        return items

    # ------------------------------------------------------------------ tables and fits
    @staticmethod
    def _tables(items: list[dict], outs: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
        rows, gc = [], []
        for it, o in zip(items, outs):
            ident = {"variant": it["variant"], "platform": it["platform"], "workload": short_name(it["workload"]),
                     "heap_kb": it["heap_kb"], "heap_factor": it["heap_factor"], "replicate": it["replicate"]}
            rows.append({**ident, **o["totals"]})
            for g in o["gc"]:
                gc.append({**ident, "heap_bytes_simulated": it["heap_bytes"], **g})
        return pd.DataFrame(rows), pd.DataFrame(gc)

    @staticmethod
    def _fit(ctx, spec: RegressionSpec, totals: pd.DataFrame) -> dict[str, Any]:
        from whatif.models.regression import ModelInputWarning, RegressionStudy

        ident = {"variant", "platform", "workload", "heap_kb", "heap_factor", "replicate"}
        predictors = spec.predictors or [c for c in totals.columns if c not in ident and c != spec.response]
        fits = {}
        for variant in dict.fromkeys(totals["variant"]):
            df = totals[totals["variant"] == variant].reset_index(drop=True)
            engine = RegressionStudy(order=spec.order, prune=spec.prune, bic=spec.bic, hierarchy=spec.hierarchy,
                                     redundancy_cut=spec.redundancy_cut,
                                     keep_predictors=[k for k in spec.keep_predictors if k in predictors],
                                     folds=spec.folds,
                                     seed=ctx.scenario.seed if spec.cv_seed is None else spec.cv_seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ModelInputWarning)
                try:
                    fits[variant] = engine.fit(df, response=spec.response, predictors=predictors,
                                               exclude=[e for e in spec.exclude
                                                        if set(re.split(r"[*:]", e)) <= set(predictors)])
                except ModelInputError as exc:
                    raise ScenarioError(f"{ctx.source}: variant {variant}: regression: {exc}") from None
        return fits


def _cores() -> int:
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def is_tlb_cache(term: str) -> bool:
    """An interaction of a TLB event with a cache event (the walk-pollution mechanism of seed 000 §I)."""
    parts = term.split("*")
    return len(parts) == 2 and (
        (parts[0] in TLB_EVENTS and parts[1] in CACHE_EVENTS) or (parts[1] in TLB_EVENTS and parts[0] in CACHE_EVENTS))
