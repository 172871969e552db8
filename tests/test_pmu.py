"""PMU event grouping: how many runs a platform's event list takes, and merging them back."""

import pytest

from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.platform import load_platform
from whatif.simulator.pmu import event_groups, merge_groups


def test_mpc7447a_needs_four_runs_of_six_counters_with_cycles_in_each():
    pmu = load_platform("mpc7447a").pmu
    groups = event_groups(pmu.events, pmu.physical_counters, pmu.fixed_events)
    assert len(groups) == 4                       # 18 events besides cycles, 5 per run
    assert all(g.events[0] == "cycles" and len(g.events) <= 6 for g in groups)
    owned = [e for g in groups for e in g.programmed]
    assert sorted(owned) == sorted(pmu.events) and len(owned) == len(set(owned))


def test_xeon_fixed_events_ride_along_in_every_run():
    pmu = load_platform("harpertown").pmu
    groups = event_groups(pmu.events, pmu.physical_counters, pmu.fixed_events)
    programmable = [e for e in pmu.events if e not in pmu.fixed_events]
    assert len(groups) == -(-len(programmable) // pmu.physical_counters)
    for g in groups:
        assert set(pmu.fixed_events) <= set(g.events)
        assert len([e for e in g.events if e not in pmu.fixed_events]) <= pmu.physical_counters


def test_merge_takes_each_event_from_its_own_run():
    groups = event_groups(["cycles", "a", "b", "c"], 2)
    runs = [{"cycles": 100 + i, "a": 1, "b": 2, "c": 3, "x": 9} for i in range(len(groups))]
    merged = merge_groups(groups, runs)
    assert merged == {"cycles": 100, "a": 1, "b": 2, "c": 3}


def test_no_counters_is_an_error():
    with pytest.raises(SimulatorInputError):
        event_groups(["cycles"], 0)


def test_evaluate_sums_and_differences():
    from whatif.simulator.pmu import evaluate

    counters = {"a": 10, "b": 3, "L2.misses": 7}
    assert evaluate({"x": "a - b + L2.misses", "y": "a"}, counters) == {"x": 14.0, "y": 10.0}
    with pytest.raises(SimulatorInputError, match="no counter 'c'"):
        evaluate({"x": "a + c"}, counters)
