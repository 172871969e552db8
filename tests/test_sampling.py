"""The SimPy sampling engine: the log of open/read times, and per-interval deltas, against a fake machine."""

import pytest

from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.sampling import Sampling, sample


class CountingMachine:
    """Executes one instruction every 2 cycles until ``total_cycles``; counts cycles and instructions."""

    def __init__(self, clock_hz, total_cycles):
        self.clock_hz = clock_hz
        self.total = total_cycles
        self.cycle = 0

    def advance_to(self, cycle):
        self.cycle = min(cycle, self.total)
        return cycle <= self.total

    def counters(self):
        return {"cycles": self.cycle, "instructions": self.cycle // 2}


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
