"""The SimPy sampling engine: the log of open/read times, and per-interval deltas, against a fake machine;
several schedules over one run, on the fake machine and a simulated one."""

import numpy as np
import pytest

from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.machine import Machine
from whatif.simulator.osnoise import TimerNoise
from whatif.simulator.platform import load_platform
from whatif.simulator.workload import load_workload
from whatif.simulator.sampling import Sampling, sample, sample_schedules


class CountingMachine:
    """Executes one instruction every 2 cycles until ``total_cycles``; counts cycles and instructions."""

    def __init__(self, clock_hz, total_cycles):
        self.clock_hz = clock_hz
        self.total = total_cycles
        self.cycle = 0

    def advance_to(self, cycle):
        self.cycle = min(cycle, self.total)
        return cycle <= self.total

    def counter_words(self):
        return np.array([self.cycle, self.cycle // 2])

    def counter_columns(self, words):
        return {"cycles": words[:, 0], "instructions": words[:, 1]}


def test_intervals_follow_delay_period_and_interval():
    log = []
    rows = sample(CountingMachine(1000.0, 20_000), Sampling(10.0, 5.0, 3.0), log)
    # the seed's figure 2: first sample after s_d, then one every s_p, each s_i long
    assert [(e, round(t, 6)) for e, t in log[:6]] == [("open", 10.0), ("read", 13.0), ("open", 15.0),
                                                      ("read", 18.0), ("open", 20.0), ("ended", 23.0)]
    assert [(r["t_start"], r["t_end"]) for r in rows][:2] == [(10.0, 13.0), (15.0, 18.0)]
    assert all(r["cycles"] == 3000 and r["instructions"] == 1500 for r in rows)
    assert len(rows) == Sampling(10.0, 5.0, 3.0).intervals_within(20.0) == 2


def test_incomplete_last_interval_is_dropped():
    rows = sample(CountingMachine(1000.0, 14_000), Sampling(10.0, 5.0, 3.0))
    assert len(rows) == 1


def test_program_shorter_than_the_delay_gives_no_rows():
    assert sample(CountingMachine(1000.0, 5_000), Sampling(10.0, 5.0, 3.0)) == []


def test_scaling_keeps_ratios():
    s = Sampling(10, 5, 3).scaled(1e-3)
    assert (s.delay_s, s.period_s, s.interval_s) == pytest.approx((0.01, 0.005, 0.003))


@pytest.mark.parametrize("args, fragment", [((10, 5, 6), "longer than the period"), ((1, 0, 0), "positive"),
                                            ((-1, 5, 3), "s_d")])
def test_bad_sampling(args, fragment):
    with pytest.raises(SimulatorInputError, match=fragment):
        Sampling(*args)


def test_parse():
    assert Sampling.parse("10,5,3") == Sampling(10.0, 5.0, 3.0)
    with pytest.raises(SimulatorInputError, match="SD,SP,SI"):
        Sampling.parse("10;5;3")


def test_several_schedules_over_one_run_read_what_each_would_alone():
    """Seed 002 §4.1 compares s_i/s_p ratios on one program: the engines share the run, each reads its own
    intervals, and reading does not change what the others see."""
    schedules = [Sampling(10.0, 5.0, 3.0), Sampling(10.0, 10.0, 5.0), Sampling(10.0, 60.0, 30.0)]
    log = []
    together = sample_schedules(CountingMachine(1000.0, 200_000), schedules, log)
    alone = [sample(CountingMachine(1000.0, 200_000), s) for s in schedules]
    assert together == alone
    assert [len(rows) for rows in together] == [s.intervals_within(200.0) for s in schedules] == [38, 19, 3]
    # the log tags each event with its schedule, in simulated-time order
    assert log[:3] == [(0, "open", 10.0), (1, "open", 10.0), (2, "open", 10.0)]
    assert [t for *_, t in log] == sorted(t for *_, t in log)


def test_schedules_share_a_simulated_run_without_changing_it():
    def machine():
        return Machine(load_platform("nehalem"), load_workload("464.h264ref"), 200_000, seed=1, run_seed=3,
                       noise=TimerNoise(hz=20_000, time_scale=1e-4))

    schedules = [Sampling(1e-6, 2e-6, 1e-6), Sampling(2e-6, 5e-6, 1e-6)]
    m = machine()
    together = sample_schedules(m, schedules)
    m.run()
    alone = []
    for s in schedules:
        one = machine()
        alone.append(sample(one, s))
        one.run()
        assert one.counters() == m.counters()          # the same run, whoever reads it
    assert together == alone and min(len(r) for r in together) > 10
