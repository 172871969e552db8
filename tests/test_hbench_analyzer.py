"""HBench:JGC analyzer: the formulas on planted and hand-computed profiles, and the error summary."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from whatif.models.errors import ModelInputError
from whatif.models.hbench import AppProfile, GcCostModel, GcTimePredictor, error_table
from tests.hbench_helpers import A, B, MB, c_dead, c_live, microbench, profile_tables


@pytest.fixture(scope="module")
def costs():
    return GcCostModel(copy_bandwidth=1e8).fit(microbench())


def test_separate_with_connectivity_is_exact_on_a_planted_profile(costs):
    log, hist = profile_tables(explicit=(3,), copied=(3, 7))
    res = costs.predict(AppProfile.from_tables(log, hist, name="planted"), distribution="separate", connectivity=True)
    assert res.table["error_pct"].abs().max() < 1e-9
    e = res.errors
    assert e["collections"] == 12 and e["explicit_collections"] == 1 and e["compacting_collections"] == 2
    assert e["without_explicit"]["collections"] == 11


def test_pooled_formula_by_hand(costs):
    log = pd.DataFrame([{"gc": 0, "duration_s": 1.0, "heap_bytes": 8 * MB, "live_objects": 100, "dead_objects": 300}])
    hist = pd.DataFrame({"gc": [0, 0], "object_size": [20, 60], "live": [100, 0], "dead": [100, 200]})
    res = costs.predict(AppProfile.from_tables(log, hist))
    n = np.array([200, 200]) / 400
    expected = (A + B * 8 * MB + 100 * (c_live(np.array([20, 60])) * n).sum()
                + 300 * (c_dead(np.array([20, 60])) * n).sum())
    assert res.table["predicted_s"].iloc[0] == pytest.approx(expected, rel=1e-12)
    sep = costs.predict(AppProfile.from_tables(log, hist), distribution="separate")
    expected_sep = A + B * 8 * MB + 100 * c_live(20) + 100 * c_dead(20) + 200 * c_dead(60)
    assert sep.table["predicted_s"].iloc[0] == pytest.approx(expected_sep, rel=1e-12)
    assert res.table["error_pct"].iloc[0] == pytest.approx(100 * (expected - 1.0))


def test_copy_term_and_its_absence(costs):
    log, hist = profile_tables(copied=(2,))
    prof = AppProfile.from_tables(log, hist)
    with_copy = costs.predict(prof, distribution="separate", connectivity=True)
    without = costs.predict(prof, distribution="separate", connectivity=True, copy=False)
    assert with_copy.table["copy_s"].iloc[2] == pytest.approx(2_000_000 / 1e8)
    assert without.table["error_pct"].iloc[2] < -1 and without.table["copy_s"].sum() == 0
    nobw = GcCostModel().fit(microbench()).predict(prof, distribution="separate", connectivity=True)
    assert nobw.warnings and "no copy bandwidth" in nobw.warnings[0]


def test_time_difference_is_the_difference_of_totals(costs):
    log, hist = profile_tables()
    log = log.assign(duration_s=log["duration_s"] * 1.1)                 # every actual time 10% longer
    res = costs.predict(AppProfile.from_tables(log, hist), distribution="separate", connectivity=True)
    assert res.errors["time_difference_pct"] == pytest.approx(100 * (1 / 1.1 - 1))
    assert res.errors["mean_abs_error_pct"] == pytest.approx(100 * (1 - 1 / 1.1))
    t = error_table({"a": res, "b": res})
    assert list(t["application"]) == ["a", "b"] and "time_difference_without_explicit_pct" in t


def test_predictor_constraints_and_requirements(costs):
    log, hist = profile_tables()
    prof = AppProfile.from_tables(log, hist)
    with pytest.raises(ModelInputError, match="The 'distribution' parameter of GcTimePredictor must be one of "
                                              "'pooled', 'separate'. Got 'joint' instead."):
        costs.predict(prof, distribution="joint")
    pooled = AppProfile.from_tables(log, hist.assign(count=hist["live"] + hist["dead"]).drop(columns=["live", "dead"]))
    with pytest.raises(ModelInputError, match="distribution 'separate' needs live and dead size histograms"):
        costs.predict(pooled, distribution="separate")
    assert costs.predict(pooled).errors["collections"] == 12
    no_conn = GcCostModel().fit(microbench(connectivity=False))
    with pytest.raises(ModelInputError, match="connectivity terms need the microbenchmark's fanout and fanin rows"):
        no_conn.predict(prof, connectivity=True)
    with pytest.raises(ModelInputError, match="need the GC log columns 'mark_visits' and 'references_scanned'"):
        costs.predict(AppProfile.from_tables(log.drop(columns=["mark_visits"]), hist), connectivity=True)
    assert GcTimePredictor().get_params() == {"distribution": "pooled", "connectivity": False, "copy": True,
                                              "spacing": False, "roots": False}


def test_plot_and_to_dict(costs):
    log, hist = profile_tables(explicit=(1,), copied=(1,))
    res = costs.predict(AppProfile.from_tables(log, hist, name="app"))
    fig = res.plot_predicted_vs_actual()
    assert fig.axes[0].get_ylabel() == "GC time (ms)"
    d = res.to_dict()
    assert d["application"] == "app" and len(d["per_collection"]) == 12 and "without_explicit" in d
    assert "app: 12 collections" in str(res.summary())


def test_spacing_extension_replaces_the_mark_cost_at_size_by_the_cost_at_spacing():
    from tests.hbench_helpers import SIZES

    mb = microbench()
    c_mark = 0.5 * np.interp(mb["object_size"], SIZES, np.minimum(SIZES, 60) * 1e-8)   # planted mark-phase part
    mb = mb.assign(mark_seconds=np.where(mb["step"] == "live", c_mark * mb["objects"], np.nan))
    costs = GcCostModel().fit(mb)
    assert costs.has_mark and costs.c_mark(28) == pytest.approx(0.5 * 28e-8)
    log = pd.DataFrame([{"gc": 0, "duration_s": 1.0, "heap_bytes": 8 * MB, "live_objects": 10, "dead_objects": 0}])
    hist = pd.DataFrame({"gc": [0], "object_size": [20], "live": [10], "dead": [0]})
    dense = pd.DataFrame({"gc": [0], "spacing": [20], "count": [10]})                 # a list: spacing = size
    sparse = pd.DataFrame({"gc": [0], "spacing": [500], "count": [10]})               # survivors among garbage
    base = costs.predict(AppProfile.from_tables(log, hist)).table["predicted_s"].iloc[0]
    d = costs.predict(AppProfile.from_tables(log, hist, spacing=dense), spacing=True).table
    s = costs.predict(AppProfile.from_tables(log, hist, spacing=sparse), spacing=True).table
    assert d["predicted_s"].iloc[0] == pytest.approx(base) and d["spacing_s"].iloc[0] == pytest.approx(0, abs=1e-18)
    assert s["spacing_s"].iloc[0] == pytest.approx(10 * 0.5 * (60e-8 - 20e-8))
    with pytest.raises(ModelInputError, match="needs the live-spacing table"):
        costs.predict(AppProfile.from_tables(log, hist), spacing=True)
    with pytest.raises(ModelInputError, match="needs the microbenchmark's mark-phase times"):
        GcCostModel().fit(microbench()).predict(AppProfile.from_tables(log, hist, spacing=dense), spacing=True)


def test_roots_term_prices_every_root_slot_but_the_microbenchmarks_one():
    c_root, r0 = 15e-9, 4e-6                       # planted: seconds per root slot, and the phase's rest
    mb = microbench()
    mb = mb.assign(roots=1, roots_seconds=r0 + c_root)
    # roots rows: one-object lists held by roots of their own; their times fit C_root alone (a C_live fit
    # that took them in would be far off: their gc_seconds are made up)
    rooted = pd.DataFrame([{"step": step, "heap_bytes": 64 * MB, "object_size": 28, "objects": r, "gc_seconds": 9.0,
                            "purpose": "roots", "fields": 1, "fan_in": 1, "roots": r,
                            "roots_seconds": r0 + c_root * r if step == "live" else 1.0}
                           for r in (1024, 4096, 16384) for step in ("live", "dead", "empty")])
    costs = GcCostModel().fit(pd.concat([mb, rooted], ignore_index=True))
    plain = GcCostModel().fit(mb)
    assert costs.c_root == pytest.approx(c_root) and plain.c_root is None
    assert costs.c_live(28) == pytest.approx(c_live(28)) and costs.fixed.slope == pytest.approx(B)
    # a measured table without the purpose column: rows that scanned more than one root are the roots rows
    unlabelled = GcCostModel().fit(pd.concat([mb, rooted], ignore_index=True).drop(columns=["purpose"]))
    assert unlabelled.c_root == pytest.approx(c_root) and unlabelled.c_live(28) == pytest.approx(c_live(28))
    assert costs.to_dict()["c_root_s"] == pytest.approx(c_root) and "C_root = 15 ns" in str(costs.summary())
    log, hist = profile_tables()
    log = log.assign(roots=np.arange(len(log)) * 1000 + 1)
    prof = AppProfile.from_tables(log, hist)
    base = costs.predict(prof).table
    with_roots = costs.predict(prof, roots=True).table
    assert (base["roots_s"] == 0).all()
    assert with_roots["roots_s"].to_numpy() == pytest.approx(c_root * np.arange(len(log)) * 1000)
    assert (with_roots["predicted_s"] - base["predicted_s"]).to_numpy() == pytest.approx(with_roots["roots_s"])
    with pytest.raises(ModelInputError, match="the roots term needs the microbenchmark's root counts"):
        plain.predict(prof, roots=True)
    with pytest.raises(ModelInputError, match="the roots term needs the GC log column 'roots'"):
        costs.predict(AppProfile.from_tables(log.drop(columns=["roots"]), hist), roots=True)
