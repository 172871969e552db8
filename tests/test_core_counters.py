"""The generic-counter vocabulary: names, indices and documentation are consistent."""

from __future__ import annotations

from whatif.simulator.core import counters as V


def test_counter_names_are_unique_and_documented():
    assert len(set(V.COUNTER_NAMES)) == V.NCOUNTERS
    assert all(doc.strip() for _, doc in V.COUNTERS)
    assert V.COUNTER_INDEX["cycles"] == V.CT_CYCLES == 0
    assert V.COUNTER_NAMES[V.CT_ST_RAT] == "stall_rat"
    assert V.COUNTER_NAMES[V.CT_ST_BRCLEAR] == "stall_branch_miss_clear"
    assert V.COUNTER_NAMES[V.CT_MERGES] == "load_miss_merges"


def test_quantities_behind_the_seed_pmu_events_exist():
    needed = {"cycles", "instructions", "dispatched", "loads", "stores", "branches", "fp", "other", "mispredicts",
              "stall_rob_full", "stall_rs_full", "stall_load_queue_full", "stall_store_queue_full", "stall_rat",
              "stall_branch_miss_clear", "issue_stall_agi", "agi_events"}
    assert needed <= set(V.COUNTER_NAMES)
    for name in needed:
        assert name in V.__doc__ or name in dict(V.COUNTERS)


def test_cpi_causes():
    assert V.FIXED_CAUSES[V.CS_BASE] == "base" and V.FIXED_CAUSES[V.CS_AGI] == "agi"
    assert V.CS_DATA0 == len(V.FIXED_CAUSES)
    names = V.cause_names(["L1I", "L1D", "L2", "L3"])
    assert names[V.CS_DATA0 + 1] == "data_L1D" and names[-1] == "data_memory"
    assert V.NCAUSES >= len(names)
