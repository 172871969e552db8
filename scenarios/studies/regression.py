"""Study kind ``regression``: seed 000 (Rao & Murakami) on the simulated 7447A.

First each workload's minimum heap H_min is *found*: the smallest fixed heap in which the workload's whole
allocation stream (at ``heap_scale``, the stream the study's runs allocate) runs without running out of
memory, by bisection on the simulated heap (:func:`simulator.gc.minheap.find_min_heap`, to
``min_heap_rel_tol``).  Seed 000's Table III values are shown beside the found ones; they are not used.
Then, for each variant (platform overrides), each workload of the scenario (the nine of seed 000 Table III),
each heap size ``heap_factors × H_min`` and each replicate, a
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
allocation behaviour (how much the mutator's work between collections is compressed); ``time_scale``
how finely the timer's work is spread (:mod:`simulator.osnoise`).  The start-up's long-lived data is
allocated functionally before the timed window.

``results.json``::

    {"variants": {name: {"I": {"r2", "cv_error_pct", "cv_error_ci95", "n_terms"}, "II": {...},
                         "II_pruned": {...}, "f_test_p": p, "pruned_interactions": ["a*b", ...],
                         "observations": n, "tlb_cache_interactions": [...], "warnings": [...]}},
     "h_min": {workload: {"found_kb", "heap_bytes", "below_bytes", "probes", "seconds", "seed_table_iii_kb"}},
     "seed_table_iv": {...}, "fidelity": {...}, "interaction_comparison": {...}, "design": {...}}

Tables: ``totals`` (contract 1, every variant), ``java_runs`` (collections, GC cycles and
instructions per configuration and PMU run), ``h_min`` (found next to Table III), ``table_iv`` (every
variant next to the seed), ``interactions`` (pruned interaction terms across variants) and, per variant,
the engine's tables prefixed ``<variant>_``.  Figures: Figures 1-4 per variant.
"""

from __future__ import annotations

import itertools
import os
import re
import time
import warnings
from functools import lru_cache
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from whatif.models.errors import ModelInputError
from whatif.models.regression import ModelInputWarning, RegressionStudy
from whatif.scenarios.errors import ScenarioError
from whatif.scenarios.measure import load_run_kernels
from whatif.scenarios.registry import StudyKind, StudyOutput, register_study
from whatif.scenarios.render.regression import SEED_EXCLUDE, build_output, h_min_table
from whatif.scenarios.results.progress import progress_bar
from whatif.scenarios.scenario import MAX_RUNS
from whatif.simulator.collect import merged_totals, pmu_groups
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.gc.behaviour import load_behaviour
from whatif.simulator.gc.config import check_collector
from whatif.simulator.gc.minheap import DEFAULT_REL_TOL, find_min_heap
from whatif.simulator.javamachine import JavaMachine
from whatif.simulator.osnoise import TimerNoise
from whatif.simulator.platform import load_platform
from whatif.simulator.workload import load_workload

DEFAULT_FACTORS = [1.0 + 0.5 * i for i in range(11)]          # H_min .. 6 H_min in steps of 0.5 H_min
KB = 1024


class RegressionSpec(BaseModel):
    """The ``[regression]`` table of a scenario."""
    model_config = ConfigDict(extra="forbid")
    heap_factors: list[float] = Field(default_factory=lambda: list(DEFAULT_FACTORS), min_length=1)
    instructions: int = Field(default=300_000, ge=1000)
    instructions_per_unit: float = Field(default=0.2, gt=0)
    heap_scale: float = Field(default=1 / 32, gt=0, le=1)
    min_heap_rel_tol: float = Field(default=DEFAULT_REL_TOL, gt=0, lt=1)   # bisection's bracket for H_min
    collector: str = "mark-sweep"
    pmu: Literal["ideal", "physical"] = "physical"
    os_noise: bool = True
    time_scale: float = Field(default=1e-4, gt=0, allow_inf_nan=False)   # the timer's spreading (TimerNoise)
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


# ---------------------------------------------------------------------------------------- H_min
def find_workload_min_heap(item: dict, shared: dict, progress=None) -> dict:
    """H_min of one workload's allocation stream (the program seed's) at the study's scale (module level, so
    process pools and Dask workers can import it)."""
    found = find_min_heap(load_behaviour(item["workload"]), _platform(item["platform"], ()),
                          scale=shared["heap_scale"], seed=item["program_seed"], collector=shared["collector"],
                          rel_tol=shared["rel_tol"])
    if progress is not None:
        progress(1)
    return found.to_dict()


# ---------------------------------------------------------------------------------------- one configuration
@lru_cache(maxsize=16)
def _platform(name: str, overrides: tuple):

    return load_platform(name, overrides)


def run_configuration(item: dict, shared: dict, progress=None) -> dict:
    """One configuration (variant, workload, heap size, replicate): every event over the PMU runs it
    needs.  Module level, so process pools and Dask workers can import it."""

    platform = _platform(item["platform"], tuple(item["overrides"]))
    groups = pmu_groups(platform, shared["pmu"])
    n_runs = len(groups) if groups else 1
    behaviour = load_behaviour(item["workload"])
    seeds = np.random.SeedSequence([item["replicate_seed"], item["heap_index"]]).spawn(n_runs)
    per_run, gc_rows, host, instr = [], [], 0.0, 0
    for i in range(n_runs):
        m = JavaMachine(platform, item["workload"], behaviour, heap_bytes=item["heap_bytes"],
                        instructions=shared["instructions"], instructions_per_unit=shared["instructions_per_unit"],
                        seed=item["program_seed"], run_seed=int(seeds[i].generate_state(1)[0]),
                        input_seed=item["program_seed"] if shared["same_input"] else None,
                        noise=TimerNoise(time_scale=shared["time_scale"]) if shared["os_noise"] else None, collector=shared["collector"],
                        alloc_scale=shared["heap_scale"])
        m.run()
        counters = m.counters()
        per_run.append(counters)
        gc_rows.append({"pmu_run": i, **m.gc_summary(), "cycles": counters["cycles"],
                        "instructions": counters["instructions"]})
        host += m.host_seconds
        instr += int(counters["instructions"])
    if progress is not None:
        progress(1)
    return {"totals": merged_totals(platform, groups, per_run), "gc": gc_rows, "pmu_runs": n_runs, "host_seconds": host, "instructions": instr}


# ---------------------------------------------------------------------------------------- study
@register_study
class RegressionStudyKind(StudyKind):
    name = "regression"
    sections = {"regression": RegressionSpec}
    needs_workloads = True

    def check(self) -> None:
        spec = self.spec["regression"]
        if any(f <= 0 for f in spec.heap_factors):
            raise self.fail("regression.heap_factors", f"factors of H_min must be > 0, got {spec.heap_factors}")
        try:
            check_collector(spec.collector)
        except SimulatorInputError as exc:
            raise self.fail("regression.collector", str(exc)) from None
        for w in self.scenario.workloads:
            try:
                load_workload(w)
                load_behaviour(w)            # H_min is found on its allocation stream
            except SimulatorInputError as exc:
                raise self.fail("workloads", str(exc)) from None

    def plan(self, runs: list) -> list:
        """Every named event exists on every platform, and each variant's table has rows enough for the
        model: fails here, in the first second, rather than after the simulation."""
        spec = self.spec["regression"]
        configurations = len(runs) * len(spec.heap_factors)
        if configurations > MAX_RUNS:
            raise self.fail("regression.heap_factors", f"the study plans {configurations:,} configurations (runs x "
                                                       f"heap_factors); the limit is {MAX_RUNS:,}")
        pairs = [n for e in spec.exclude for n in re.split(r"[*:]", e)]
        for run in runs:
            pmu = _platform(run.platform, tuple(run.overrides)).pmu
            for key, names in (("response", [spec.response]), ("predictors", spec.predictors or []),
                               ("keep_predictors", spec.keep_predictors), ("exclude", pairs)):
                for name in names:
                    if name not in pmu.events:
                        raise self.fail(f"regression.{key}", f"{name!r} is not an event of {run.platform} "
                                                             f"(events: {', '.join(pmu.events)})")
        for variant in dict.fromkeys(r.variant for r in runs):
            mine = [r for r in runs if r.variant == variant]
            events = _platform(mine[0].platform, tuple(mine[0].overrides)).pmu.events
            predictors = spec.predictors or [e for e in events if e != spec.response]
            # with a redundancy cut only the kept predictors are sure to stay: never a false alarm
            sure = [p for p in spec.keep_predictors if p in predictors] if spec.redundancy_cut else predictors
            n_coef = min_coefficients(sure, spec.order, spec.exclude)
            rows = len(mine) * len(spec.heap_factors)
            n_train = rows - -(-rows // spec.folds)
            if n_coef >= n_train:
                raise self.fail("regression", f"variant {variant}: the order-{spec.order} model has at least "
                                              f"{n_coef} coefficients but {spec.folds}-fold cross-validation fits "
                                              f"on {n_train} of the {rows} rows (workloads x heap_factors x "
                                              f"binaries x replicates); add rows, predictors = [...] or order = 1")
        return runs

    def run(self, ctx) -> StudyOutput:
        spec = self.spec["regression"]
        load_run_kernels(ctx, collectors=(spec.collector,))
        workers = spec.workers or _cores()
        started = time.perf_counter()
        h_min = self._min_heaps(ctx, spec, workers)
        h_min_seconds = time.perf_counter() - started
        items = self._items(ctx.runs, spec, h_min)
        shared = {"instructions": spec.instructions, "instructions_per_unit": spec.instructions_per_unit,
                  "heap_scale": spec.heap_scale, "collector": spec.collector, "pmu": spec.pmu,
                  "os_noise": spec.os_noise, "time_scale": spec.time_scale, "same_input": spec.same_input}
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
        rates = {"sim_instructions_per_s": sum(o["instructions"] for o in outs) / max(sum(o["host_seconds"] for o in outs), 1e-9),
                 "simulation_wall_seconds": sim_seconds, "configurations": len(items), "workers": workers,
                 "simulation_worker_seconds": sum(o["host_seconds"] for o in outs),
                 "simulated_instructions": sum(o["instructions"] for o in outs),
                 "simulated_runs": sum(o["pmu_runs"] for o in outs), "h_min_wall_seconds": h_min_seconds,
                 "h_min_probes": sum(h["probes"] for h in h_min.values())}
        return StudyOutput(**build_output(spec, ctx.scenario, totals, gc, fits, rates,
                                          h_min_table(h_min, short_name)))

    # ------------------------------------------------------------------ set-up
    @staticmethod
    def _min_heaps(ctx, spec: RegressionSpec, workers: int) -> dict[tuple[str, int], dict]:
        """H_min per (workload, program seed): every binary allocates its own stream."""
        todo = {}
        for run in ctx.runs:
            todo.setdefault((run.workload, run.program_seed), {"workload": run.workload, "platform": run.platform,
                                                               "program_seed": run.program_seed})
        keys = list(todo)
        shared = {"heap_scale": spec.heap_scale, "collector": spec.collector, "rel_tol": spec.min_heap_rel_tol}
        with progress_bar(len(keys), "regression: H_min by bisection", enabled=ctx.progress) as advance:
            try:
                found = ctx.executor.map(find_workload_min_heap, [todo[k] for k in keys], shared=shared,
                                         progress=advance, units=1, workers=workers)
            except SimulatorInputError as exc:
                raise ScenarioError(f"{ctx.source}: {exc}") from None
        return dict(zip(keys, found))

    @staticmethod
    def _items(runs: list, spec: RegressionSpec, h_min: dict[tuple[str, int], dict]) -> list[dict]:
        items = []
        for run in runs:
            found = h_min[(run.workload, run.program_seed)]
            for k, f in enumerate(spec.heap_factors):
                items.append({"variant": run.variant, "platform": run.platform, "overrides": list(run.overrides),
                              "workload": run.workload, "replicate": run.replicate, "replicate_seed": run.seed,
                              "program_seed": run.program_seed, "binary": run.binary,
                              "heap_index": k, "heap_factor": f, "heap_kb": found["full_size_kb"] * f,
                              "heap_bytes": max(int(found["heap_bytes"] * f) // 8 * 8, 4096)})
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


def min_coefficients(predictors: list[str], order: int, exclude: list[str]) -> int:
    """Coefficients of the model over ``predictors``: intercept, main effects, and (order 2) every pair
    that ``exclude`` does not remove."""
    p = len(predictors)
    if order == 1:
        return 1 + p
    gone = {frozenset(re.split(r"[*:]", e)) for e in exclude}
    pairs = sum(1 for a, b in itertools.combinations(predictors, 2) if frozenset((a, b)) not in gone)
    return 1 + p + pairs


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


