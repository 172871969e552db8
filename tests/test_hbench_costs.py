"""HBench:JGC cost functions: planted recovery, fallbacks, connectivity costs, the knee, constraints."""

from __future__ import annotations

import numpy as np
import pytest

from whatif.models.errors import ModelInputError
from whatif.models.hbench import GcCostModel
from tests.hbench_helpers import A, B, C_DEAD, C_LIVE, C_REF, C_VISIT, MB, SIZES, microbench


@pytest.fixture(scope="module")
def costs():
    return GcCostModel(copy_bandwidth=1e8).fit(microbench())


def test_planted_cost_functions_are_recovered(costs):
    assert costs.fixed.intercept == pytest.approx(A, rel=1e-9)
    assert costs.fixed.slope == pytest.approx(B, rel=1e-9) and costs.fixed.r2 == pytest.approx(1.0)
    assert np.allclose(costs.table["c_live"], C_LIVE, rtol=1e-9)
    assert np.allclose(costs.table["c_dead"], C_DEAD, rtol=1e-9)
    assert costs.c_ref == pytest.approx(C_REF, rel=1e-6) and costs.c_visit == pytest.approx(C_VISIT, rel=1e-6)


def test_table_5_4_layout_in_milliseconds(costs):
    t = costs.table_5_4
    assert list(t.columns) == ["object_size", "c_fixed_ms_per_mb", "c_live_ms_per_object", "c_dead_ms_per_object"]
    assert t["c_fixed_ms_per_mb"].iloc[0] == pytest.approx(3.75)              # the seed's 3.75 ms/MB, planted
    assert t["c_live_ms_per_object"].iloc[0] == pytest.approx(C_LIVE[0] * 1e3)


def test_interpolation_and_clamping(costs):
    assert costs.c_live(16) == pytest.approx((C_LIVE[0] + C_LIVE[1]) / 2)
    assert costs.c_live(4) == pytest.approx(C_LIVE[0])                          # below the smallest size
    assert costs.c_dead(10_000) == pytest.approx(C_DEAD[-1])                    # "the values for 132 bytes"


def test_knee_at_the_planted_size(costs):
    assert costs.knee("live") == 60 and costs.knee("dead") == 60


def test_single_count_subtracts_c_fixed():
    mb = microbench(counts=(150_000,), connectivity=False)
    res = GcCostModel().fit(mb)
    assert np.allclose(res.table["c_live"], C_LIVE, rtol=1e-9)
    assert res.c_ref is None and res.c_visit is None


def test_measured_units_are_accepted():
    mb = microbench(connectivity=False)
    measured = mb.assign(gc_ms=mb["gc_seconds"] * 1e3, heap_mb=mb["heap_bytes"] / MB).drop(
        columns=["gc_seconds", "heap_bytes", "purpose"])
    res = GcCostModel().fit(measured)
    assert np.allclose(res.table["c_dead"], C_DEAD, rtol=1e-9)


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.drop(columns=["objects"]), "missing column 'objects'"),
    (lambda d: d.drop(columns=["gc_seconds"]), "missing column 'gc_seconds' (or 'gc_ms')"),
    (lambda d: d.assign(step=["alive"] + list(d["step"].iloc[1:])),
     "row 1, column 'step': must be one of live, dead, empty"),
    (lambda d: d.assign(objects=[-5] + list(d["objects"].iloc[1:])), "row 1, column 'objects': must be > 0, got -5"),
    (lambda d: d.assign(object_size=[0] + list(d["object_size"].iloc[1:])), "row 1, column 'object_size': must be > 0"),
    (lambda d: d[d["step"] != "empty"], "C_fixed needs 'empty' steps at two or more heap sizes"),
    (lambda d: d.iloc[0:0], "the microbenchmark table is empty"),
])
def test_bad_microbenchmark_tables(mutate, message):
    with pytest.raises(ModelInputError) as err:
        GcCostModel().fit(mutate(microbench()))
    assert message in str(err.value)


def test_parameter_constraint():
    with pytest.raises(ModelInputError, match="The 'copy_bandwidth' parameter of GcCostModel must be None or a "
                                              "number > 0. Got -1.0 instead."):
        GcCostModel(copy_bandwidth=-1.0).fit(microbench())


def test_to_dict_summary_and_plots(costs):
    d = costs.to_dict()
    assert d["c_fixed"]["per_mb_s"] == pytest.approx(B * MB) and d["knee_dead_bytes"] == 60
    assert set(d["c_live_s"]) == {str(s) for s in SIZES}
    text = str(costs.summary())
    assert "C_fixed(h)" in text and "3.75 ms/MB" in text
    for fig in (costs.plot_heap_size(), costs.plot_object_size(), costs.plot_memory_reads()):
        assert fig.axes and fig.axes[0].get_xlabel()
