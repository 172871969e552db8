"""SMARTS sampled simulation (Wunderlich, Wenisch, Falsafi and Hoe, ISCA 2003): a run's CPI and event
rates estimated from periodic detailed units, with their confidence intervals.

    >>> spec = SmartsSpec(unit=1000, warmup=2000, units=400)
    >>> result = run_sampled(Machine(platform, workload, 20_000_000, seed=1), spec)
    >>> result.cpi.mean, result.cpi.interval            # CPI and its 99.7 % confidence interval

Systematic sampling.  The run's ``T`` program instructions are ``N = T // U`` units of ``U`` instructions;
``n`` of them, one every ``k = N / n`` units (unit ``floor(s + i k)`` for ``i < n``, the start ``s``
drawn in ``[0, k)`` from the seed; a fractional ``k`` spreads the sample over the whole run, where a
whole one would leave up to ``n - 1`` units at the end unsampled), are *measured*: the core times their
``U`` instructions in detail after ``W`` instructions of detailed warm-up (which refills the pipeline and
the MSHRs the warming left empty).  Every other instruction is
*functionally warmed* (:meth:`Machine.warm_functionally`): caches, TLBs, page walks, prefetchers and
branch predictors see every instruction, so a unit starts from the state a full detailed run would have
there, up to the pipeline.  A unit's CPI is the cycles the detailed core takes for it over the
instructions retired in it (the timer handler's, when an interrupt falls into the unit, included, as in
a full run's CPI); its event counts are the counter deltas over it.

Estimates (SMARTS §3): the mean ``x`` of the per-unit values; the sample standard deviation ``s``
(``n - 1`` degrees of freedom); the coefficient of variation ``V = s / x``; the standard error
``s / sqrt(n) * sqrt(1 - n / N)`` (the finite-population correction, ``N = T // U`` units; negligible
when ``n << N``); the confidence interval ``x +- z * standard error`` with ``z`` the normal quantile of
the confidence (z = 2.97 for 99.7 %, which SMARTS rounds to 3).  For a relative error ``epsilon`` at that
confidence SMARTS needs ``n >= (z * V / epsilon)^2`` units; when the run's own ``V`` says ``n`` was
too small the result says so and recommends that ``n`` (SMARTS's second run).  With N = ``auto``
(``smarts:U,W,auto``) that second run is made (:meth:`SmartsSpec.rerun`, :func:`run_sampled`): the default
sample first, then, if its ``V`` asks more units than it has, a run of that many (at most what the run holds),
whose estimates are reported; the first's are kept beside them (``SmartsResult.first_run``).

Segments (``smarts:U,W,N,S``): the sample cut into ``S`` runs of consecutive units (:func:`segment_units`),
so that they can run side by side (:func:`~simulator.collect.sampled_one`).  The first runs as above; each
later one runs on a fresh machine of the same run, which fast-forwards (:meth:`Machine.fast_forward`) to
``overlap`` instructions (default 20 M) before its first unit's warm-up and warms from cold caches and
predictors from there: what that costs in accuracy is whatever the overlap is too short to bring back
(lines reused at longer distances miss in the cold LLC), which ``whatif validate`` and the README measure.

Bounded warming (``smarts:U,W,N,S,B``): of each gap only the last ``B`` instructions before a unit's warm-up
are functionally warmed; the rest are *cache-warmed* (:meth:`Machine.warm_caches`): their fetch and data
lines go through the levels below the L1s (with those levels' prefetchers), the TLBs and the page walks,
behind direct-mapped stand-ins of the L1s and first-level TLBs, with no predictor and no L1.  The last-level
cache is what needs the whole gap (its lines are reused at distances far longer than any affordable ``B``:
after 3 M instructions of gcc on Nehalem, the last 20 k functionally warmed, the L3 holds 94 % of the lines
full warming leaves there when the rest was cache-warmed, 1.5 % when it was skipped, stale state, as after
a fast-forward); the predictors and the L1s recover within ``B``.  It is an approximation -- the L1s' contents, the order in which the lower levels see
their lines, and the predictors' state at a unit's start differ from a full warming's -- whose cost in
accuracy the README and ``whatif validate`` measure; ``B = None`` is SMARTS.

Defaults are the paper's for its 8-way out-of-order core: ``U = 1000``, ``W = 2000``, 99.7 % confidence,
``epsilon = 3 %``; ``n`` by default ``min(10_000, T // (10 * (U + W)))`` (at most a tenth of the run in
detail; SMARTS's initial ``n`` is 10 000 for SPEC CPU2000-length runs).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from statistics import NormalDist
from typing import Callable

import numpy as np

from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.machine import EVER, Machine
from whatif.simulator.pmu import evaluate

DEFAULT_UNIT = 1000              # U, instructions per measured unit [SMARTS §4.2, 8-way OoO]
DEFAULT_WARMUP = 2000            # W, detailed warm-up instructions before each unit [SMARTS §4.2]
DEFAULT_CONFIDENCE = 0.997       # [SMARTS §5: 99.7 %, z = 3]
DEFAULT_TARGET_ERROR = 0.03      # epsilon, relative half-width of the CI [SMARTS §5: +-3 %]
MAX_DEFAULT_UNITS = 10_000       # SMARTS's initial sample size
DETAILED_SHARE = 10              # the default n keeps (U + W) * n within 1 / DETAILED_SHARE of the run
MIN_UNITS = 2                    # a sample standard deviation needs two units
DEFAULT_OVERLAP = 20_000_000     # instructions a later segment warms from cold before its first unit
OPTION = "--sample"


def z_value(confidence: float) -> float:
    """The two-sided standard-normal quantile of ``confidence`` (0.997 -> 2.97)."""
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def required_units(cv: float, z: float, target_error: float) -> int:
    """SMARTS's sample size for relative error ``target_error`` at quantile ``z``: ceil((z V / e)^2)."""
    return max(MIN_UNITS, math.ceil((z * cv / target_error) ** 2))


@dataclass(frozen=True)
class Estimate:
    """A population mean estimated from a systematic sample of ``n`` of ``population`` units."""
    mean: float
    std: float                   # sample standard deviation of the per-unit values (n - 1 dof)
    n: int
    population: int
    z: float

    @classmethod
    def of(cls, values: np.ndarray, population: int, z: float) -> "Estimate":
        values = np.asarray(values, dtype=np.float64)
        n = len(values)
        if n < MIN_UNITS:
            raise ValueError(f"an estimate needs at least {MIN_UNITS} units, got {n}")
        return cls(float(values.mean()), float(values.std(ddof=1)), n, int(population), float(z))

    @property
    def cv(self) -> float:
        """Coefficient of variation V = s / mean (0 for a zero mean)."""
        return self.std / abs(self.mean) if self.mean else 0.0

    @property
    def stderr(self) -> float:
        fpc = max(0.0, 1.0 - self.n / self.population) if self.population else 1.0
        return self.std / math.sqrt(self.n) * math.sqrt(fpc)

    @property
    def half_width(self) -> float:
        return self.z * self.stderr

    @property
    def interval(self) -> tuple[float, float]:
        return self.mean - self.half_width, self.mean + self.half_width

    @property
    def relative_error(self) -> float:
        """Half-width over the mean (0 for a zero mean)."""
        return self.half_width / abs(self.mean) if self.mean else 0.0

    def to_dict(self) -> dict:
        lo, hi = self.interval
        return {"mean": self.mean, "ci": [lo, hi], "half_width": self.half_width,
                "relative_error": self.relative_error, "stderr": self.stderr, "cv": self.cv}


@dataclass(frozen=True)
class SmartsSpec:
    """``U`` instructions per unit, ``W`` detailed warm-up instructions, ``n`` units (None: the default
    for the run's length), the confidence and the target relative error."""
    unit: int = DEFAULT_UNIT
    warmup: int = DEFAULT_WARMUP
    units: int | None = None
    confidence: float = DEFAULT_CONFIDENCE
    target_error: float = DEFAULT_TARGET_ERROR
    segments: int = 1
    overlap: int = DEFAULT_OVERLAP
    warming: int | None = None       # B: functionally warmed instructions before each unit (None: the whole gap)
    second_run: bool = False         # N = auto: rerun with the n the first run's V asks for (SMARTS's second run)

    def __post_init__(self):
        if self.unit < 1:
            raise SimulatorInputError(f"U (instructions per unit) must be >= 1, got {self.unit}")
        if self.warmup < 0:
            raise SimulatorInputError(f"W (detailed warm-up instructions) must be >= 0, got {self.warmup}")
        if self.units is not None and self.units < MIN_UNITS:
            raise SimulatorInputError(f"N (units) must be >= {MIN_UNITS}, got {self.units}")
        if self.second_run and self.units is not None:
            raise SimulatorInputError(f"N = auto starts from the default sample and takes no N, got {self.units}")
        if not 0 < self.confidence < 1:
            raise SimulatorInputError(f"the confidence must lie in (0, 1), got {self.confidence}")
        if not 0 < self.target_error < 1:
            raise SimulatorInputError(f"the target relative error must lie in (0, 1), got {self.target_error}")
        if self.segments < 1:
            raise SimulatorInputError(f"S (segments) must be >= 1, got {self.segments}")
        if self.warming is not None and self.warming < 0:
            raise SimulatorInputError(f"B (functionally warmed instructions before each unit) must be >= 0, "
                                      f"got {self.warming}")
        if self.overlap < 0:
            raise SimulatorInputError(f"the overlap (instructions warmed before a segment) must be >= 0, "
                                      f"got {self.overlap}")

    @classmethod
    def parse(cls, text: str, where: str = OPTION) -> "SmartsSpec":
        """``smarts`` (the defaults), ``smarts:U,W,N``, ``smarts:U,W,N,S`` (S segments) or ``smarts:U,W,N,S,B``
        (bounded warming: B functionally warmed instructions before each unit, the rest of the gap cache-warmed);
        an empty field keeps its default: ``smarts:1000,2000,`` chooses N for the run's length,
        ``smarts:1000,2000,,,30000`` bounds the warming alone; N = ``auto`` is SMARTS's procedure (the default
        sample, then a second run with the n its V asks for when it was too small); errors name ``where`` (the
        option or key)."""
        form = ("smarts, smarts:U,W,N, smarts:U,W,N,S or smarts:U,W,N,S,B (U instructions per unit >= 1, W "
                "warm-up instructions >= 0, N units >= 2 or auto, S segments >= 1, B functionally warmed "
                "instructions before each unit >= 0)")
        method, colon, args = str(text).strip().partition(":")
        if method.strip().lower() != "smarts":
            raise SimulatorInputError(f"{where}: expected {form}, got {text!r}")
        if not colon:
            return cls()
        parts = [p.strip() for p in args.split(",")]
        if len(parts) not in (3, 4, 5):
            raise SimulatorInputError(f"{where}: expected {form}, got {text!r}")
        second_run = len(parts) > 2 and parts[2].lower() == "auto"
        if second_run:
            parts[2] = ""
        values: list[int | None] = []
        for p in parts:
            try:
                v = None if p == "" else float(p)
            except ValueError:
                v = math.nan
            if v is not None and not (math.isfinite(v) and v == int(v)):
                raise SimulatorInputError(f"{where}: U, W, N, S and B must be whole numbers (N may be auto), got "
                                          f"{text!r} (expected {form})")
            values.append(None if v is None else int(v))
        unit, warmup, units, segments, warming = values + [None] * (5 - len(values))
        try:
            return cls(unit=DEFAULT_UNIT if unit is None else unit,
                       warmup=DEFAULT_WARMUP if warmup is None else warmup, units=units,
                       segments=1 if segments is None else segments, warming=warming, second_run=second_run)
        except SimulatorInputError as exc:
            raise SimulatorInputError(f"{where}: {exc} (in {text!r})") from None

    def layout(self, instructions: int, where: str = OPTION) -> tuple[int, int]:
        """(population N = T // U, n) for a run of ``instructions``; raises when the run cannot hold ``n``
        units each preceded by its warm-up."""
        population = int(instructions) // self.unit
        per_unit = self.unit + self.warmup
        n = self.units if self.units is not None else \
            min(MAX_DEFAULT_UNITS, int(instructions) // (DETAILED_SHARE * per_unit))
        if n < MIN_UNITS or population // n * self.unit < per_unit:
            most = population // self.spacing
            what = f"{n} units" if self.units is not None else "the default sample"
            raise SimulatorInputError(
                f"{where}: {instructions:,} instructions cannot hold {what} of U={self.unit} instructions, each "
                f"after W={self.warmup} of warm-up (at most {most} units fit; at least {MIN_UNITS} are needed"
                f"{'' if self.units is not None else f', and by default (U + W) x n is a tenth of the run'})")
        if self.segments > n:
            raise SimulatorInputError(f"{where}: {self.segments} segments of {n} units leave a segment without a "
                                      f"unit (S must be <= n)")
        return population, n

    @property
    def spacing(self) -> int:
        """Units of the population per measured unit, at least: a unit and its warm-up, in whole units."""
        return math.ceil((self.unit + self.warmup) / self.unit)

    def rerun(self, first: "SmartsResult") -> "SmartsSpec | None":
        """SMARTS's second run after ``first`` (N = auto): this sample with the n ``first``'s V asks for, at most
        as many units as the run holds; None when ``first``'s n sufficed, N was not auto, or the run holds no
        more units than ``first`` measured (its advice then says how long a run would)."""
        if not self.second_run or first.sufficient:
            return None
        n = max(self.segments, min(first.recommended_units, first.population // self.spacing))
        return replace(self, units=n, second_run=False) if n > first.n else None


@dataclass(frozen=True)
class SmartsResult:
    """The estimates of one sampled run (``SmartsSpec``), with the raw per-unit values."""
    spec: SmartsSpec
    instructions: int                     # T: the run's program instructions (after any --warmup)
    population: int                       # N = T // U
    period: float                         # k = N / n: one unit in k is measured
    start: float                          # the measured units are floor(start + i * k), start in [0, k)
    unit_cpi: np.ndarray                  # per unit
    unit_rates: dict[str, np.ndarray]     # event -> events per instruction, per unit
    unit_stack: dict[str, np.ndarray]     # CPI-stack cause -> its CPI, per unit
    unit_counters: dict[str, np.ndarray]  # the machine's counters (``Machine.counters``), deltas per unit
    detailed_instructions: int            # program instructions timed in detail (warm-ups included)
    warmed_instructions: int              # program instructions functionally warmed
    host_seconds: float                   # wall clock (segments run side by side overlap in it)
    warming_seconds: float                # of which warming, functional and cache (synthesis included), summed
    worker_seconds: float = 0.0           # the segments' own host seconds, summed (within host_seconds in one thread)
    cache_warmed_instructions: int = 0    # program instructions cache-warmed (bounded warming, ``spec.warming``)
    first_run: "SmartsResult | None" = None   # N = auto: the first run, whose V asked for this one's n
    z: float = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "z", z_value(self.spec.confidence))

    @property
    def n(self) -> int:
        return len(self.unit_cpi)

    def after(self, first: "SmartsResult") -> "SmartsResult":
        """This run as SMARTS's second run after ``first``: the estimates are this run's alone; the host time,
        and with it the effective rate, counts both runs (the user waited for both)."""
        return replace(self, first_run=first, host_seconds=self.host_seconds + first.host_seconds,
                       worker_seconds=self.worker_seconds + first.worker_seconds)

    @property
    def cpi(self) -> Estimate:
        return Estimate.of(self.unit_cpi, self.population, self.z)

    @property
    def event_rates(self) -> dict[str, Estimate]:
        return {e: Estimate.of(v, self.population, self.z) for e, v in self.unit_rates.items()}

    @property
    def cpi_stack(self) -> dict[str, Estimate]:
        return {c: Estimate.of(v, self.population, self.z) for c, v in self.unit_stack.items()}

    def estimated_counters(self) -> dict[str, float]:
        """Each counter of the whole run estimated from the units: its mean per program instruction of a unit
        times the run's program instructions (``instructions``, for one, then also counts the timer
        handler's share)."""
        return {k: float(np.mean(v)) / self.spec.unit * self.instructions for k, v in self.unit_counters.items()}

    @property
    def recommended_units(self) -> int:
        """SMARTS's n for the target error at the confidence, from this run's coefficient of variation."""
        return required_units(self.cpi.cv, self.z, self.spec.target_error)

    @property
    def sufficient(self) -> bool:
        """Whether n met the sample size this run's V asks for (else rerun with ``recommended_units``)."""
        return self.n >= self.recommended_units

    @property
    def covered_instructions(self) -> int:
        """Program instructions up to the end of the last measured unit (the run stops there)."""
        return (self.unit_index(self.n - 1) + 1) * self.spec.unit

    def unit_index(self, i: int) -> int:
        """The population index of the ``i``-th measured unit."""
        return math.floor(self.start + i * self.period)

    @property
    def effective_instructions_per_s(self) -> float:
        """The run's instructions over the host time the sampled run took to cover them."""
        return self.covered_instructions / self.host_seconds if self.host_seconds > 0 else 0.0

    def advice(self) -> str | None:
        """SMARTS's verdict when n was too small, else None."""
        if self.sufficient:
            return None
        cpi, need, spec = self.cpi, self.recommended_units, self.spec
        said = (f"{self.n} units give ± {cpi.relative_error:.1%} at {spec.confidence:.1%} confidence "
                f"(V = {cpi.cv:.2f}); ± {spec.target_error:.0%} needs n >= (z V / e)^2 = {need}")
        cut = f",{spec.segments}" if spec.segments > 1 or spec.warming is not None else ""   # (as asked for)
        cut += f",{spec.warming}" if spec.warming is not None else ""
        spacing = spec.spacing
        if need * spacing > self.population:
            return (f"{said}, more than {self.instructions:,} instructions hold (at most "
                    f"{self.population // spacing}): rerun {need * spacing * spec.unit:,} or more instructions with "
                    f"--sample smarts:{spec.unit},{spec.warmup},{need}{cut}")
        return f"{said}: rerun with --sample smarts:{spec.unit},{spec.warmup},{need}{cut}"

    def to_dict(self) -> dict:
        return {"method": "smarts", "unit": self.spec.unit, "warmup": self.spec.warmup, "units": self.n,
                "population_units": self.population, "period": self.period, "start": self.start,
                "confidence": self.spec.confidence, "z": self.z, "target_error": self.spec.target_error,
                "cpi": self.cpi.to_dict(), "event_rates": {e: v.to_dict() for e, v in self.event_rates.items()},
                "cpi_stack": {c: v.to_dict() for c, v in self.cpi_stack.items()},
                "recommended_units": self.recommended_units, "sufficient": self.sufficient, "advice": self.advice(),
                "detailed_instructions": self.detailed_instructions, "warmed_instructions": self.warmed_instructions,
                "functional_warming": self.spec.warming, "cache_warmed_instructions": self.cache_warmed_instructions,
                "covered_instructions": self.covered_instructions, "host_seconds": self.host_seconds,
                "segments": self.spec.segments, "overlap": self.spec.overlap if self.spec.segments > 1 else 0,
                "worker_seconds": self.worker_seconds, "warming_seconds": self.warming_seconds,
                "effective_instructions_per_s": self.effective_instructions_per_s,
                "first_run": None if self.first_run is None else self.first_run.summary()}

    def summary(self) -> dict:
        """The run's sample size, its CPI estimate and what it cost (a second run's record of its first)."""
        return {"units": self.n, "cpi": self.cpi.to_dict(), "recommended_units": self.recommended_units,
                "detailed_instructions": self.detailed_instructions, "warmed_instructions": self.warmed_instructions,
                "cache_warmed_instructions": self.cache_warmed_instructions, "host_seconds": self.host_seconds}


@dataclass(frozen=True)
class SegmentSample:
    """The measured units of one segment of a sampled run (:func:`run_segment`): per-unit values, in order."""
    unit_cpi: np.ndarray
    unit_rates: dict[str, np.ndarray]
    unit_stack: dict[str, np.ndarray]
    unit_counters: dict[str, np.ndarray]
    detailed_instructions: int
    warmed_instructions: int
    fast_forwarded_instructions: int
    host_seconds: float
    warming_seconds: float
    cache_warmed_instructions: int = 0


def _placement(spec: SmartsSpec, total: int, seed: int) -> tuple[int, int, float, float]:
    """(population N, n, period k, first unit's offset s) of a run of ``total`` instructions (module docstring)."""
    population, n = spec.layout(total)
    period = population / n                            # (fractional: the sample spans the whole run)
    return population, n, period, float(np.random.default_rng(seed).uniform(0, period))


def segment_units(spec: SmartsSpec, n: int, segment: int) -> range:
    """The measured units (0..n-1) of ``segment``: the sample cut into ``spec.segments`` runs of consecutive units."""
    return range(segment * n // spec.segments, (segment + 1) * n // spec.segments)


def segment_boundary(spec: SmartsSpec, total: int, seed: int, segment: int) -> int:
    """Program instructions (from the run's start) before ``segment``'s share of the run: the end of the
    previous segment's last unit (0 for the first)."""
    if segment == 0:
        return 0
    population, n, period, first = _placement(spec, total, seed)
    return (math.floor(first + (segment_units(spec, n, segment).start - 1) * period) + 1) * spec.unit


def report_share(machine: Machine, boundary: int, progress: Callable[[int], None]) -> None:
    """Have ``machine`` tell ``progress(n)`` of the program instructions it retires past position ``boundary``: a
    later segment's share of the run (its fast-forward and overlap are the earlier segments' share)."""
    def counted(n: int) -> None:
        if machine.program_retired > boundary:
            progress(min(n, machine.program_retired - boundary))
    machine.on_retired = counted


class _Tally:
    """The per-unit values of one segment's measured units, as :func:`run_segment` and the live-point replay
    (:func:`simulator.livepoints.replay_segment`) time them."""

    def __init__(self, machine: Machine, units: int, events: dict[str, str] | None):
        pmu = machine.platform.pmu
        self.sources = dict(events) if events is not None else {e: pmu.sources[e] for e in pmu.events}
        self.names = [k for k, v in machine.counters().items() if isinstance(v, int)]   # the integer counters
        self.causes = list(machine.core.cause_rows)
        self.cause_rows = np.array(list(machine.core.cause_rows.values()))
        self.words = np.zeros((units, len(machine.counter_words())), np.int64)     # their raw words' change per unit
        self.stacks = np.zeros((units, len(self.causes)))
        self.cycles, self.instr = np.zeros(units), np.zeros(units)

    def time(self, j: int, machine: Machine, begin: int, unit: int) -> None:
        """Run ``machine`` in detail to program position ``begin`` (the unit's warm-up) and then time the
        unit's ``unit`` instructions as unit ``j``."""
        core = machine.core
        machine.advance_to(EVER - machine.origin, program_limit=begin)
        w0, s0 = machine.counter_words(), core.CS[self.cause_rows]
        c0, n0 = core.cycles, core.instructions
        machine.advance_to(EVER - machine.origin, program_limit=begin + unit)
        self.words[j] = machine.counter_words() - w0
        self.stacks[j] = core.CS[self.cause_rows] - s0
        self.cycles[j], self.instr[j] = core.cycles - c0, core.instructions - n0

    def sample(self, machine: Machine, detailed: int, warmed: int, skipped: int, host: float,
               warming_seconds: float, cache_warmed: int = 0) -> SegmentSample:
        every = machine.counter_columns(self.words)
        columns = {k: every[k].astype(np.float64) for k in self.names}
        instr = self.instr
        rates = {e: np.asarray(v, dtype=np.float64) / instr for e, v in evaluate(self.sources, columns).items()}
        stack = {c: self.stacks[:, j] / instr for j, c in enumerate(self.causes)}
        return SegmentSample(self.cycles / instr, rates, stack, columns, detailed, warmed, skipped, host,
                             warming_seconds, cache_warmed)


def run_segment(machine: Machine, spec: SmartsSpec, seed: int = 0, segment: int = 0,
                events: dict[str, str] | None = None, start: int | None = None, capture=None) -> SegmentSample:
    """Measure ``segment``'s units (:func:`segment_units`) on ``machine``.  The first segment runs on the
    machine of the run (fresh, or after its ``warm_up``), functionally warmed from there; a later one on a
    fresh machine of the same run, which fast-forwards (:meth:`Machine.fast_forward`) to ``spec.overlap``
    instructions before the warm-up of its first unit and warms from cold caches and predictors from there.
    ``start``: program instructions before the measured run (default: those ``machine`` has retired).
    ``capture``: a :class:`simulator.livepoints.Capture` of ``machine``, which records each unit's live-point
    (the machine's blocks then end at every unit's lead-in and end: the same instructions, cut differently)."""
    start = machine.program_retired if start is None else int(start)
    total = machine.instructions_target - start
    population, n, period, first = _placement(spec, total, seed)
    units = segment_units(spec, n, segment)
    U, W = spec.unit, spec.warmup
    t0 = time.perf_counter()
    skipped = 0
    if segment > 0:
        lead = math.floor(first + units.start * period) * U - W
        skipped = max(0, start + lead - spec.overlap - machine.program_retired)
        machine.fast_forward(skipped)
    tally = _Tally(machine, len(units), events)
    detailed = warmed = cache_warmed = 0
    warming_seconds = 0.0
    timed_cycles = timed_instructions = 0.0
    done = machine.program_retired - start             # program instructions since ``start``
    for j, i in enumerate(units):
        begin = math.floor(first + i * period) * U
        lead = max(done, begin - W)
        if lead > done:
            measured = timed_cycles / timed_instructions if timed_instructions else 1.0   # the warming clock's CPI
            functional = lead - done if spec.warming is None else min(lead - done, spec.warming)
            tw = time.perf_counter()
            if capture is not None:
                machine.fence = start + lead
            if functional < lead - done:              # bounded warming: the rest of the gap cache-warmed first
                machine.warm_caches(lead - done - functional, cpi=measured)
                cache_warmed += lead - done - functional
            machine.warm_functionally(functional, cpi=measured)
            warming_seconds += time.perf_counter() - tw
            warmed += functional
        if capture is not None:
            capture.at_lead(machine)
            machine.fence = start + begin + U
        tally.time(j, machine, start + begin, U)
        if capture is not None:
            capture.after_unit(machine, start + begin + U)
        timed_cycles += tally.cycles[j]
        timed_instructions += tally.instr[j]
        detailed += begin + U - lead
        done = begin + U
    machine.fence = None
    return tally.sample(machine, detailed, warmed, skipped, time.perf_counter() - t0, warming_seconds, cache_warmed)


def combine(spec: SmartsSpec, total: int, seed: int, parts: list[SegmentSample], host_seconds: float) -> SmartsResult:
    """The sampled run's result from its segments' samples, in segment order; ``host_seconds``: the wall
    clock the run took (the segments may have run side by side)."""
    population, n, period, first = _placement(spec, total, seed)
    if sum(len(p.unit_cpi) for p in parts) != n:
        raise ValueError(f"the segments hold {sum(len(p.unit_cpi) for p in parts)} units, the sample {n}")

    def joined(key: str) -> dict[str, np.ndarray]:
        return {k: np.concatenate([getattr(p, key)[k] for p in parts]) for k in getattr(parts[0], key)}

    return SmartsResult(spec, total, population, period, first, np.concatenate([p.unit_cpi for p in parts]),
                        joined("unit_rates"), joined("unit_stack"), joined("unit_counters"),
                        sum(p.detailed_instructions for p in parts), sum(p.warmed_instructions for p in parts),
                        host_seconds, sum(p.warming_seconds for p in parts), sum(p.host_seconds for p in parts),
                        sum(p.cache_warmed_instructions for p in parts))


def run_sampled(machine: Machine, spec: SmartsSpec = SmartsSpec(), seed: int = 0,
                events: dict[str, str] | None = None, fresh: Callable[[], Machine] | None = None) -> SmartsResult:
    """Run ``machine`` (fresh, or after its ``warm_up``) as a SMARTS sample of its measured instructions.
    ``events``: event -> source formula over the machine's counters (default: the platform's PMU events);
    ``seed`` draws the first measured unit.  With ``spec.segments`` > 1 the later segments run one after
    another here, each on a machine ``fresh()`` returns (a new machine of the same run, not warmed up); with
    N = auto (``spec.second_run``) a first run too small for its own V is followed by SMARTS's second run
    (:meth:`SmartsSpec.rerun`) on a fresh machine, functionally warmed over what ``machine`` had retired."""
    if (spec.segments > 1 or spec.second_run) and fresh is None:
        raise ValueError("a sample of several segments, or with N = auto, needs `fresh`, a new machine for each "
                         "later segment or run")
    start = machine.program_retired

    def begun() -> Machine:                     # a fresh machine where ``machine`` started the sample
        return fresh().warm_functionally(start) if start else fresh()

    def once(first: Machine, spec: SmartsSpec) -> SmartsResult:
        t0 = time.perf_counter()
        parts = [run_segment(first, spec, seed, 0, events)]
        parts += [run_segment(fresh(), spec, seed, k, events, start=start) for k in range(1, spec.segments)]
        return combine(spec, machine.instructions_target - start, seed, parts, time.perf_counter() - t0)

    result = once(machine, spec)
    again = spec.rerun(result)
    return result if again is None else once(begun(), again).after(result)
