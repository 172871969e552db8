"""What the study kinds that simulate workloads share: the ``[simulate]`` table, its up-front checks, the
kernels loaded up front, and every run of a study through :func:`simulator.collect.simulate_one`.

Seeds: a run's ``program_seed`` fixes binary and input, its ``seed`` (the replicate seed) page placement,
timer phase and OS noise (``whatif.scenarios.scenario``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable, Literal

from pydantic import BaseModel, ConfigDict, Field, FiniteFloat, NonNegativeInt, PositiveInt, field_validator

from whatif.scenarios.errors import ScenarioError
from whatif.scenarios.kernels import load_kernels
from whatif.scenarios.results.livepoint_store import LivePointStore
from whatif.scenarios.results.progress import progress_bar
from whatif.simulator.collect import (CollectSpec, check_sample, check_sampling_feasible, live_point_library,
                                      simulate_one)
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.platform import load_platform
from whatif.simulator.sampling import Sampling
from whatif.simulator.smarts import SmartsSpec
from whatif.simulator.workload import load_workload

DEFAULT_TIME_SCALE = 1e-4


class SimulateSpec(BaseModel):
    """The ``[simulate]`` table."""
    model_config = ConfigDict(extra="forbid")
    instructions: PositiveInt = 2_000_000
    warmup: NonNegativeInt = 0                   # program instructions run uncounted first (caches warm)
    sampling: list[FiniteFloat] | None = None    # [s_d, s_p, s_i] in the seed's seconds
    time_scale: float = Field(default=DEFAULT_TIME_SCALE, gt=0, allow_inf_nan=False)
    pmu: Literal["ideal", "physical"] = "ideal"
    os_noise: bool = True
    predictor: str | None = None
    sample: str | None = None                    # "smarts" or "smarts:U,W,N": SMARTS sampled runs
    live_points: str | None = None               # a store of live-point libraries (relative: to the scenario file)

    @field_validator("sampling")
    @classmethod
    def _three_numbers(cls, v: list[float] | None) -> list[float] | None:
        if v is not None and len(v) != 3:
            raise ValueError(f"expected [s_d, s_p, s_i], three numbers, got {v}")
        return v

    def smarts(self, where: str = "simulate.sample") -> SmartsSpec | None:
        return None if self.sample is None else SmartsSpec.parse(self.sample, where)

    def sampling_scaled(self) -> Sampling | None:
        if self.sampling is None:
            return None
        sampling = Sampling(*self.sampling)
        try:
            return sampling.scaled(self.time_scale)
        except SimulatorInputError as exc:
            raise SimulatorInputError(f"sampling x time_scale {self.time_scale:g}: {exc}") from None

    def collect_spec(self, where: str = "simulate.sample") -> CollectSpec:
        return CollectSpec(instructions=self.instructions, warmup=self.warmup, sampling=self.sampling_scaled(),
                           pmu=self.pmu, os_noise=self.os_noise, predictor=self.predictor,
                           sample=self.smarts(where), time_scale=self.time_scale)


def check_workloads(workloads: list[str], source: str) -> None:
    """Every workload resolves (an unknown name lists the known ones)."""
    for w in workloads:
        try:
            load_workload(w)
        except SimulatorInputError as exc:
            raise ScenarioError(f"{source}: workloads: {exc}") from None


def check_sampling(spec: SimulateSpec, runs: list, source: str, min_intervals: int = 1) -> None:
    """Fail before simulating when a run could not hold ``min_intervals`` sampling intervals."""
    try:
        sampling = spec.sampling_scaled()
        for run in runs:
            check_sampling_feasible(load_platform(run.platform, run.overrides), spec.instructions, sampling,
                                    min_intervals)
    except SimulatorInputError as exc:
        raise ScenarioError(f"{source}: simulate: {exc}") from None


def check_smarts(spec: SimulateSpec, source: str) -> None:
    """Fail before simulating when the ``sample`` key is malformed or the runs cannot hold its units."""
    try:
        check_sample(spec.collect_spec(), "simulate.sample")
    except SimulatorInputError as exc:
        raise ScenarioError(f"{source}: {exc}") from None


def live_point_store(spec: SimulateSpec, source: str, base_dir: Path) -> LivePointStore | None:
    """The ``live_points`` key's store (checked now: a foreign file or directory fails), None without the key.
    It stores the warmed state of sampled runs' units, so it needs a sample."""
    if spec.live_points is None:
        return None
    where = f"{source}: simulate.live_points"
    if spec.sample is None:
        raise ScenarioError(f"{where}: stores the warmed state of sampled runs' units: give simulate.sample")
    return LivePointStore(base_dir / spec.live_points, where)


def load_run_kernels(ctx, predictor: str | None = None, configs: Iterable[tuple[str, Any]] | None = None,
                     **what) -> None:
    """Load (on the first run: compile) the kernels the study's runs call
    (:func:`whatif.scenarios.kernels.load_kernels`): the core's for every platform configuration among them
    (or among ``configs``, (platform, overrides) pairs, when the study runs others too), the synthesiser's on
    the first run's workload, and ``what`` else the runs call (``sampled``, ``warming``, ``profiler``,
    ``collectors``: :func:`~whatif.scenarios.kernels.kernel_steps`)."""
    if not ctx.runs:
        return
    pairs = [(run.platform, run.overrides) for run in ctx.runs] if configs is None else configs
    unique = {repr((name, tuple(overrides))): (name, tuple(overrides)) for name, overrides in pairs}
    load_kernels(ctx.progress, [load_platform(name, overrides) for name, overrides in unique.values()], predictor,
                 workload=ctx.runs[0].workload, seed=ctx.runs[0].program_seed, **what)


def simulate_runs(ctx, spec: SimulateSpec, sensitivity: tuple[Sampling, ...] = ()) -> list[dict]:
    """Every run of the study (locally with a progress bar, or on the cluster): identity + ``simulate_one``;
    ``sensitivity``: further counter schedules (simulated seconds) read over each run's first PMU run.  With
    ``live_points``, the runs that share a library (their configurations differ in the core alone) run after
    the first of them, which captures it when the store has none: they replay it."""
    load_run_kernels(ctx, spec.predictor, sampled=spec.sample is not None)
    collect = replace(spec.collect_spec(), sensitivity=tuple(sensitivity))
    store = live_point_store(spec, ctx.source, ctx.base_dir)
    shared = (collect, None if store is None else store.path)
    with progress_bar(len(ctx.runs), ctx.scenario.study, enabled=ctx.progress) as advance:
        outs: list = [None] * len(ctx.runs)
        for wave in _waves(ctx.runs, collect, store):
            done = ctx.executor.map(simulate_run, [ctx.runs[k] for k in wave], shared=shared, progress=advance,
                                    units=1)
            for k, out in zip(wave, done):
                outs[k] = out
    return [{**run.identity(), **out} for run, out in zip(ctx.runs, outs)]


def _waves(runs: list, collect: CollectSpec, store) -> list[list[int]]:
    """The runs' positions in the order they may run: all at once, or with a store of live-points the first
    run of each library, then the rest (which replay what the first captured)."""
    if store is None:
        return [list(range(len(runs)))]
    first: dict[str, int] = {}
    for k, run in enumerate(runs):
        first.setdefault(live_point_library(load_platform(run.platform, run.overrides), run.workload, collect,
                                            run.program_seed, run.seed), k)
    leaders = set(first.values())
    return [wave for wave in (sorted(leaders), [k for k in range(len(runs)) if k not in leaders]) if wave]


def simulate_run(run, shared: tuple[CollectSpec, Path | None], progress=None) -> dict:
    """One run (module level, so that pool and Dask workers can import it); ``shared``: the collection spec
    and the live-point store's directory (or None)."""
    collect, live_points = shared
    out = simulate_one(load_platform(run.platform, run.overrides), run.workload, collect,
                       program_seed=run.program_seed, replicate_seed=run.seed,
                       live_points=None if live_points is None else LivePointStore(live_points, "simulate.live_points"))
    if progress is not None:
        progress(1)
    return out
