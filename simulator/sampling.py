"""The sampling engine of seed 002 §2.2 (Figure 2), as a SimPy process over a simulated run.

After a sampling delay ``s_d`` the engine samples every period ``s_p``: it opens
the counters, lets the machine run for the sampling interval ``s_i`` (<= ``s_p``),
reads them, and stays idle for the rest of the period.  Each interval yields one
row of the counter time series (contract 2): ``t_start``, ``t_end`` in seconds
of simulated time and the counts of every event during the interval.

The machine is anything with ``clock_hz``, ``advance_to(cycle) -> bool`` (run
until the cycle count reaches ``cycle``; False once the program has ended),
``counter_words() -> array`` (its cumulative counts, raw) and
``counter_columns(differences) -> dict`` (the named counts of rows of word differences, a column each:
:meth:`simulator.machine.Machine.counter_columns`).  Time scaling: the seed samples
minutes-long runs in seconds; a study scales ``s_d``, ``s_p`` and ``s_i`` by one
factor (``time_scale``) so that simulated runs of millions of instructions hold
enough intervals; the ratios s_i/s_p and s_d/s_p, which the seed's §4.1
sensitivity analysis is about, are kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import simpy

from whatif.simulator.errors import SimulatorInputError


class Machine(Protocol):
    clock_hz: float

    def advance_to(self, cycle: int) -> bool: ...

    def counter_words(self) -> np.ndarray: ...

    def counter_columns(self, words: np.ndarray) -> dict[str, np.ndarray]: ...


@dataclass(frozen=True)
class Sampling:
    delay_s: float       # s_d
    period_s: float      # s_p
    interval_s: float    # s_i

    def __post_init__(self) -> None:
        values = {"s_d": self.delay_s, "s_p": self.period_s, "s_i": self.interval_s}
        bad = next((k for k, v in values.items() if not math.isfinite(v)), None)
        if bad is not None:
            raise SimulatorInputError(f"sampling {bad} must be a finite number of seconds, got {values[bad]}")
        if self.delay_s < 0:
            raise SimulatorInputError(f"sampling delay s_d must be >= 0, got {self.delay_s}")
        if self.period_s <= 0 or self.interval_s <= 0:
            raise SimulatorInputError(f"sampling period and interval must be positive, got "
                                      f"s_p={self.period_s}, s_i={self.interval_s}")
        if self.interval_s > self.period_s:
            raise SimulatorInputError(f"sampling interval s_i={self.interval_s} is longer than the period "
                                      f"s_p={self.period_s}")

    def scaled(self, factor: float) -> "Sampling":
        return Sampling(self.delay_s * factor, self.period_s * factor, self.interval_s * factor)

    def intervals_within(self, seconds: float) -> int:
        """How many complete intervals a run of ``seconds`` holds (at most 2^62: a period of 1e-300 s in a
        second is "more than any run can sample", not an overflow)."""
        if seconds < self.delay_s + self.interval_s:
            return 0
        periods = (seconds - self.delay_s - self.interval_s) / self.period_s
        return int(periods) + 1 if periods < 2.0 ** 62 else 1 << 62

    @classmethod
    def parse(cls, text: str) -> "Sampling":
        """``"SD,SP,SI"`` in seconds, as on the command line."""
        try:
            sd, sp, si = (float(x) for x in text.split(","))
        except ValueError:
            raise SimulatorInputError(f"--sampling expects SD,SP,SI in seconds (e.g. 10,5,3), got {text!r}") from None
        try:
            return cls(sd, sp, si)
        except SimulatorInputError as exc:
            raise SimulatorInputError(f"--sampling {text}: {exc}") from None


def sample(machine: Machine, sampling: Sampling, log: list | None = None) -> list[dict]:
    """Run ``machine`` to the end under the sampling engine; returns one row per complete interval.

    ``log`` (optional) receives ``(event, simulated seconds)`` tuples, for tests and traces."""
    return sample_schedules(machine, [sampling], log)[0]


def sample_schedules(machine: Machine, samplings: list[Sampling], log: list | None = None) -> list[list[dict]]:
    """Run ``machine`` to the end under several sampling engines at once (one SimPy process each, as
    several counter sessions over the same execution: seed 002 §4.1 compares s_i/s_p ratios on one
    program); returns each schedule's rows.  Reading counters does not change the run, so each schedule's
    rows are the ones :func:`sample` would give alone.  ``log`` receives ``(event, seconds)`` for a single
    schedule and ``(schedule index, event, seconds)`` for several."""
    env = simpy.Environment()
    clock = machine.clock_hz
    tables: list[list[dict]] = [[] for _ in samplings]

    def cycle_at(t: float) -> int:
        return int(round(t * clock))

    def run_to(t: float) -> bool:
        return machine.advance_to(cycle_at(t))

    def note(k: int, event: str, t: float) -> None:
        if log is not None:
            log.append((event, t) if len(samplings) == 1 else (k, event, t))

    # per schedule, each interval's (t_start, t_end) and the change of the machine's raw counter words over
    # it, named once at the end: a copy of the words costs microseconds, a dictionary of named counters ~0.1 ms
    spans: list[list[tuple[float, float]]] = [[] for _ in samplings]
    changes: list[list[np.ndarray]] = [[] for _ in samplings]

    def engine(env: simpy.Environment, k: int, sampling: Sampling):
        yield env.timeout(sampling.delay_s)
        if not run_to(env.now):
            return
        while True:
            start = env.now
            before = machine.counter_words()
            note(k, "open", start)
            yield env.timeout(sampling.interval_s)
            if not run_to(env.now):
                note(k, "ended", env.now)
                return           # the program ended inside the interval: an incomplete sample is dropped
            changes[k].append(machine.counter_words() - before)
            spans[k].append((start, env.now))
            note(k, "read", env.now)
            yield env.timeout(sampling.period_s - sampling.interval_s)
            if not run_to(env.now):
                return

    engines = [env.process(engine(env, k, s)) for k, s in enumerate(samplings)]
    env.run(until=simpy.AllOf(env, engines))
    for k, span in enumerate(spans):
        if span:
            columns = {key: col.tolist() for key, col in machine.counter_columns(np.array(changes[k])).items()}
            tables[k] = [{"t_start": a, "t_end": b, **{key: col[j] for key, col in columns.items()}}
                         for j, (a, b) in enumerate(span)]
    return tables
