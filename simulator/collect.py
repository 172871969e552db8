"""Collecting one configuration's measurements: a program on its input, counted as a PMU counts it.

Seeds mean one thing (DESIGN.md, ``whatif.scenarios.scenario``): ``program_seed`` fixes the program --
the synthesised binary and its input (every data-dependent choice) -- and ``replicate_seed`` varies only
what differs between two runs of that program on a real machine: physical page placement, timer phase,
OS noise.  The PMU runs of one replicate (``pmu = "physical"``: the platform's physical counters hold
only a few events per run) are further runs of the same program on the same input, as when perf re-runs
a command; their run seeds are drawn from the replicate seed.
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Callable, Literal

import numpy as np
import pandas as pd

from whatif.simulator import livepoints as LP
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.machine import Machine
from whatif.simulator.memory.hierarchy import MemoryHierarchy
from whatif.simulator.osnoise import TimerNoise
from whatif.simulator.platform import Platform
from whatif.simulator.pmu import EventGroup, evaluate, event_groups, merge_groups
from whatif.simulator.sampling import Sampling, sample, sample_schedules
from whatif.simulator.smarts import (SegmentSample, SmartsResult, SmartsSpec, combine, report_share, run_segment,
                                     segment_boundary)

MAX_PLAUSIBLE_CPI = 50.0     # for the up-front check that a run can hold a sampling interval at all
MAX_SAMPLING_INTERVALS = 1_000_000    # rows of one run's counter time series

PmuMode = Literal["ideal", "physical"]


@dataclass(frozen=True)
class CollectSpec:
    """What to count of one configuration: program instructions (after ``warmup`` uncounted ones),
    the counter sampling in simulated seconds, the counting mode, OS noise and the branch predictor;
    ``sample``: a SMARTS sampled run (:mod:`simulator.smarts`) instead of a full detailed one;
    ``time_scale``: simulated seconds per second of the run the simulation stands for, which decides
    how finely the timer's work is spread (:class:`~simulator.osnoise.TimerNoise`); ``sensitivity``:
    further counter schedules read over the first run beside ``sampling`` (seed 002 §4.1), whose
    per-interval CPI the result carries as ``sensitivity_cpi``."""
    instructions: int
    warmup: int = 0
    sampling: Sampling | None = None
    pmu: PmuMode = "ideal"
    os_noise: bool = True
    predictor: str | None = None
    sample: SmartsSpec | None = None
    time_scale: float = 1.0
    sensitivity: tuple[Sampling, ...] = ()

    def noise(self) -> TimerNoise | None:
        """The timer interrupts of a run (None without OS noise)."""
        return TimerNoise(time_scale=self.time_scale) if self.os_noise else None


def pmu_groups(platform: Platform, mode: PmuMode) -> list[EventGroup] | None:
    """The event groups of a ``physical`` collection (one run each), or None: one run counts everything."""
    pmu = platform.pmu
    return event_groups(pmu.events, pmu.physical_counters, pmu.fixed_events) if mode == "physical" else None


def merged_totals(platform: Platform, groups: list[EventGroup] | None, counters: list[dict]) -> dict[str, float]:
    """One totals row of the platform's events from the counters of each PMU run."""
    pmu = platform.pmu
    per_run = [evaluate(pmu.sources, c, pmu.events) for c in counters]
    return merge_groups(groups, per_run) if groups else per_run[0]


def check_sampling_feasible(platform: Platform, instructions: int, sampling: Sampling | None,
                            min_intervals: int = 1) -> None:
    """Fail before simulating when even a very slow run (CPI 50) could not hold the intervals."""
    if sampling is None:
        return
    longest = instructions * MAX_PLAUSIBLE_CPI / (platform.clock_ghz * 1e9)
    what = (f"the sampling (s_d={sampling.delay_s:g} s, s_p={sampling.period_s:g} s, s_i={sampling.interval_s:g} s "
            f"of simulated time)")
    intervals = sampling.intervals_within(longest)
    if intervals > MAX_SAMPLING_INTERVALS:          # limits before work: one time-series row per interval
        raise SimulatorInputError(f"{what} takes up to {intervals:,} intervals in {instructions:,} instructions; "
                                  f"the limit is {MAX_SAMPLING_INTERVALS:,} (a longer period)")
    if intervals < min_intervals:
        need = (sampling.delay_s + sampling.interval_s + (min_intervals - 1) * sampling.period_s) \
            * platform.clock_ghz * 1e9 / MAX_PLAUSIBLE_CPI
        needed = f"at least {math.ceil(need):,} are needed" if need < 2.0 ** 62 else "no run is long enough"
        raise SimulatorInputError(f"{instructions:,} instructions are too few for {what}: {needed} for "
                                  f"{min_intervals} interval(s)")


def _machine(platform: Platform, workload: Any, spec: CollectSpec, program_seed: int, run_seed: int,
             on_retired: Callable[[int], None] | None = None) -> Machine:
    m = _new_machine(platform, workload, spec, program_seed, run_seed)
    m.on_retired = on_retired
    return m.warm_up(spec.warmup) if spec.warmup else m


def pmu_run_count(platform: Platform, pmu: str) -> int:
    """How many runs of a configuration ``simulate_one`` makes: one per PMU group in ``physical`` mode."""
    groups = pmu_groups(platform, pmu)
    return len(groups) if groups else 1


def simulate_one(platform: Platform, workload: Any, spec: CollectSpec, program_seed: int, replicate_seed: int,
                 progress: Callable[[int], None] | None = None,
                 on_retired: Callable[[int], None] | None = None, workers: int = 1, live_points=None) -> dict[str, Any]:
    """One configuration: totals of every platform event (over several runs in ``physical`` mode), the
    CPI stack and all counters of the first run, and the counter time series when sampling.
    ``progress(1)`` after each run; ``on_retired(n)`` as program instructions retire (warm-ups
    included: (warmup + instructions) x :func:`pmu_run_count` in all); ``workers``: threads for a sampled
    run's segments, ``live_points``: a store of live-point libraries for it (:func:`sampled_one`)."""
    check_sampling_feasible(platform, spec.instructions, spec.sampling)
    if spec.sample is not None:
        return sampled_one(platform, workload, spec, program_seed, replicate_seed, on_retired, workers, live_points)
    groups = pmu_groups(platform, spec.pmu)
    n_runs = pmu_run_count(platform, spec.pmu)
    run_seeds = [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(replicate_seed).spawn(n_runs)]
    pmu = platform.pmu
    per_run_counters, series, first, sensitivity = [], [], None, []
    for i in range(n_runs):
        m = _machine(platform, workload, spec, program_seed, run_seeds[i], on_retired)
        if spec.sampling is not None:
            if i == 0 and spec.sensitivity:
                rows, *extra = sample_schedules(m, [spec.sampling, *spec.sensitivity])
                sensitivity = [[r["cycles"] / r["instructions"] for r in rs if r["instructions"]] for rs in extra]
            else:
                rows = sample(m, spec.sampling)
            m.run()
            for r in rows:
                ev = evaluate(pmu.sources, r, pmu.events)
                series.append({"pmu_run": i, "t_start": r["t_start"], "t_end": r["t_end"], **ev})
        else:
            m.run()
        counters = m.counters()
        per_run_counters.append(counters)
        if first is None:
            first = (m, counters)
        if progress is not None:
            progress(1)
    machine, counters = first
    totals = merged_totals(platform, groups, per_run_counters)
    instructions = counters["instructions"]
    return {"totals": totals, "counters": counters, "cpi": counters["cycles"] / max(1, instructions),
            "cpi_stack": machine.cpi_stack(), "seconds": machine.seconds(), "pmu_runs": n_runs,
            "sim_instructions_per_s": machine.instructions_per_second(),
            "timeseries": _merged_series(series, groups),
            **({"sensitivity_cpi": sensitivity} if spec.sensitivity else {})}


def check_sample(spec: CollectSpec, where: str = "--sample") -> None:
    """Fail before simulating when a SMARTS sampled run cannot give what ``spec`` asks for."""
    if spec.sample is None:
        return
    if spec.sampling is not None:
        raise SimulatorInputError(f"{where}: a sampled run has no counter time series; drop the counter "
                                  f"sampling (--sampling, simulate.sampling) or the SMARTS sampling")
    if spec.pmu != "ideal":
        raise SimulatorInputError(f"{where}: a sampled run counts every event in one run; the PMU mode must be "
                                  f"'ideal', got {spec.pmu!r}")
    spec.sample.layout(spec.instructions, where)


def _new_machine(platform: Platform, workload: Any, spec: CollectSpec, program_seed: int, run_seed: int) -> Machine:
    """A fresh machine of one configuration's run (warm-up and measured instructions), not warmed up."""
    return Machine(platform, workload, spec.warmup + spec.instructions, seed=program_seed, run_seed=run_seed,
                   input_seed=program_seed, noise=spec.noise(), predictor=spec.predictor)


def _sampled_segment(segment: int, shared: tuple, progress: Callable[[int], None] | None = None) -> SegmentSample:
    """One segment of a sampled run (:func:`sampled_one`) on its own machine; ``progress(n)`` as the program
    instructions of its share of the run retire (a later segment's fast-forward and overlap are the earlier
    segments' share)."""
    m = _new_machine(*shared)
    platform, workload, spec, program_seed, run_seed = shared
    if segment == 0:
        m.on_retired = progress
        if spec.warmup:
            m.warm_functionally(spec.warmup)
        return run_segment(m, spec.sample, run_seed, 0)
    if progress is not None:
        report_share(m, spec.warmup + segment_boundary(spec.sample, spec.instructions, run_seed, segment), progress)
    return run_segment(m, spec.sample, run_seed, segment, start=spec.warmup)


def sampled_one(platform: Platform, workload: Any, spec: CollectSpec, program_seed: int, replicate_seed: int,
                on_retired: Callable[[int], None] | None = None, workers: int = 1,
                live_points=None) -> dict[str, Any]:
    """One configuration as a SMARTS sampled run: the keys of :func:`simulate_one` holding the estimates
    (totals and counters: per-instruction means times the run's instructions; ``cpi``, ``cpi_stack``: unit
    means), and ``sampled`` with every estimate's confidence interval (:meth:`SmartsResult.to_dict`).  The
    ``warmup`` instructions are functionally warmed; the run seed is drawn from the replicate seed as a
    full run's is, and also places the first unit.  The sample's segments (``spec.sample.segments``) run in
    up to ``workers`` threads of this process, side by side (the simulation kernels release Python's GIL:
    each segment's machine is its own), else one after another; the estimates are the same either way.  With
    N = auto a first run too small for its own V is followed by SMARTS's second run (:meth:`SmartsSpec.rerun`),
    whose estimates are reported (``sampled.first_run``: the first's); ``on_retired.restart(label)``, when the
    callback has it, is told when the second run starts (a progress bar starts over).  ``live_points``: a store
    of live-point libraries (``scenarios.results.livepoint_store``, :mod:`simulator.livepoints`):
    the sample is replayed from its library when the store holds one for this configuration but its core,
    else run once capturing it (``sampled.live_points`` says which; with N = auto, each of the two runs has its
    own library, the first's under ``live_points.first_run``)."""
    check_sample(spec)
    run_seed = _sampled_run_seed(replicate_seed)
    stored: list[dict] = []                    # with a store: what each run did with its library

    def once(spec: CollectSpec) -> SmartsResult:
        if live_points is not None:
            result, said = _with_live_points(platform, workload, spec, program_seed, run_seed, on_retired, workers,
                                             live_points)
            stored.append(said)
            return result
        shared = (platform, workload, spec, program_seed, run_seed)
        segments = list(range(spec.sample.segments))
        t0 = time.perf_counter()
        if workers <= 1 or len(segments) == 1:
            parts = [_sampled_segment(k, shared, on_retired) for k in segments]
        else:
            with ThreadPoolExecutor(max_workers=min(workers, len(segments)), thread_name_prefix="smarts") as pool:
                parts = list(pool.map(lambda k: _sampled_segment(k, shared, on_retired), segments))
        result = combine(spec.sample, spec.instructions, run_seed, parts, time.perf_counter() - t0)
        if on_retired is not None:             # the run stops after its last unit: the rest counts as done
            on_retired(spec.instructions - result.covered_instructions)
        return result

    result = once(spec)
    again = spec.sample.rerun(result)
    if again is not None:                      # SMARTS's second run (N = auto), with the n the first's V asks for
        restart = getattr(on_retired, "restart", None)
        if restart is not None:
            restart(f"second run, {again.units:,} units")
        result = once(replace(spec, sample=again)).after(result)
    # (N = auto with a store: each run has its library, the second's named by the n the first's V asked for)
    said = None if not stored else {**stored[-1], **({"first_run": stored[0]} if len(stored) > 1 else {})}
    return _reported(platform, result, said)


def _sampled_run_seed(replicate_seed: int) -> int:
    """A sampled run's run seed (page placement, timer phase, the first unit's place), drawn from the replicate
    seed as a full run's first is."""
    return int(np.random.SeedSequence(replicate_seed).spawn(1)[0].generate_state(1)[0])


def _library_of(machine: Machine, spec: CollectSpec, run_seed: int) -> tuple[str, dict]:
    """The state key and sample design that name the live-point library of a sampled run on ``machine``."""
    return LP.state_key(machine), LP.design(spec.sample, run_seed, spec.warmup, spec.instructions)


def live_point_library(platform: Platform, workload: Any, spec: CollectSpec, program_seed: int,
                       replicate_seed: int) -> str:
    """The id of the live-point library :func:`simulate_one` captures or replays for this configuration with a
    store (:func:`simulator.livepoints.library_id`): configurations that differ only in the core share it."""
    run_seed = _sampled_run_seed(replicate_seed)
    return LP.library_id(*_library_of(_new_machine(platform, workload, spec, program_seed, run_seed), spec,
                                      run_seed))


def _with_live_points(platform: Platform, workload: Any, spec: CollectSpec, program_seed: int, run_seed: int,
                      on_retired: Callable[[int], None] | None, workers: int, store) -> tuple[SmartsResult, dict]:
    """The sample replayed from the store's library for this configuration, or run capturing it."""
    def fresh() -> Machine:
        return _new_machine(platform, workload, spec, program_seed, run_seed)

    first = fresh()
    key, placed = _library_of(first, spec, run_seed)
    names = (first.synth.name, platform.name)
    library, where = store.find(key, placed, *names)
    here = {"workload": first.synth.name, "platform": platform.name, "core": LP.core_digest(first)}
    if library is None:
        # (N = auto's first run is the default sample's: a library holds one sample, and sampled_one runs the second)
        with store.staging(key, placed, *names) as stage:       # (the records go to disk as they are made)
            result, library = LP.capture_sampled(first, replace(spec.sample, second_run=False), run_seed,
                                                 fresh=fresh, start=spec.warmup, workers=workers, progress=on_retired,
                                                 into=stage)
            where = store.keep(library, *names, about=here, stage=stage)
        action, about = "captured", where["about"]
        workers = min(workers, spec.sample.segments)
    else:
        try:
            result = LP.replay_sampled(library, fresh, workers=workers, progress=on_retired)
        except (LP.DamagedLibrary, LP.ForeignLibrary) as exc:
            raise store.refused(exc) from None
        action, about = "replayed", where["about"]
    if on_retired is not None:
        on_retired(spec.instructions - result.covered_instructions)
    # exact: every unit timed as the capture timed it (a replay's later worker's first unit starts from an empty
    # pipeline; a capture's workers run whole segments)
    same = about.get("core") == here["core"]
    exact = same and (action == "captured" or workers == 1)
    return result, {"action": action, "library": str(where["path"]), "units": library.units, "bytes": library.nbytes,
                    "captured_on": about, "same_core": same, "workers": workers, "exact": exact}


def _reported(platform: Platform, result: SmartsResult, live_points: dict | None = None) -> dict[str, Any]:
    """The keys of :func:`simulate_one` for a sampled run's result."""
    counters = result.estimated_counters()
    cpi = result.cpi.mean
    return {"totals": {e: v.mean * result.instructions for e, v in result.event_rates.items()},
            "counters": counters, "cpi": cpi, "cpi_stack": {c: v.mean for c, v in result.cpi_stack.items()},
            "seconds": cpi * counters["instructions"] / (platform.clock_ghz * 1e9), "pmu_runs": 1,
            "sim_instructions_per_s": result.effective_instructions_per_s, "timeseries": None,
            "sampled": {**result.to_dict(), "live_points": live_points}}


def _merged_series(series: list[dict], groups: list[EventGroup] | None) -> pd.DataFrame | None:
    if not series:
        return None
    df = pd.DataFrame(series)
    if not groups:
        return df.drop(columns=["pmu_run"])
    # each event's series from the run that programmed it, aligned by interval
    parts = []
    for g in groups:
        sub = df[df["pmu_run"] == g.index][["t_start", "t_end", *g.programmed]].reset_index(drop=True)
        parts.append(sub if not parts else sub[list(g.programmed)])
    n = min(len(p) for p in parts)
    return pd.concat([p.iloc[:n] for p in parts], axis=1)


def run_trace(platform: Platform, trace, seed: int, progress: Callable[[int], None] | None = None) -> tuple[dict, float]:
    """Run an address trace through a fresh hierarchy of ``platform`` (``seed``: page placement);
    returns (counters, simulation seconds)."""
    h = MemoryHierarchy(platform, seed=seed)
    h.run(trace.addrs, trace.sizes, trace.kinds, progress=progress)
    return h.counters(), h.simulation_seconds
