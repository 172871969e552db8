"""The microbenchmark plan: configurations, scaling, constraints."""

from __future__ import annotations

import re

import pytest

from whatif.models.errors import ModelInputError
from whatif.models.hbench import TABLE_5_4_SIZES, MicrobenchPlan
from whatif.models.hbench.microbench import object_bytes


def test_default_plan_follows_the_seed():
    plan = MicrobenchPlan()
    assert TABLE_5_4_SIZES == tuple(range(12, 133, 8)) and len(TABLE_5_4_SIZES) == 16
    cfg = plan.configurations()
    fixed = [c for c in cfg if c["purpose"] == "fixed"]
    assert len({c["heap_bytes"] for c in fixed}) == len(plan.fixed_heaps_mb)
    assert {c["n_lists"] * c["list_length"] for c in fixed} == {512 * 1024}      # count and size held fixed
    size = [c for c in cfg if c["purpose"] == "size"]
    for s in plan.object_sizes:
        rows = [c for c in size if c["object_size"] == s]
        assert len({c["n_lists"] * c["list_length"] for c in rows}) == len(plan.volumes_mb)   # counts vary
        assert len({c["heap_bytes"] for c in rows}) == 1                                       # heap fixed
        assert all(c["heap_bytes"] >= c["n_lists"] * c["list_length"] * object_bytes(s) for c in rows)
    assert {(c["fields"], c["twin"]) for c in cfg if c["purpose"] in ("fanout", "fanin")} == {(1, False), (2, False),
                                                                                             (2, True)}
    roots = [c for c in cfg if c["rooted"]]
    assert {c["purpose"] for c in roots} == {"roots"} and [c["n_lists"] for c in roots] == list(plan.root_counts)
    assert all(c["list_length"] == 1 for c in roots) and not any(c["rooted"] for c in cfg if c["purpose"] != "roots")
    assert not any(c["rooted"] for c in MicrobenchPlan(root_counts=()).configurations())


def test_scaling_shrinks_heaps_and_volumes():
    full = MicrobenchPlan().configurations()
    small = MicrobenchPlan().scaled(0.125).configurations()
    assert len(full) == len(small)
    f = next(c for c in full if c["purpose"] == "fixed")
    s = next(c for c in small if c["purpose"] == "fixed")
    assert s["heap_bytes"] == pytest.approx(f["heap_bytes"] / 8, rel=0.01)
    assert s["n_lists"] * s["list_length"] == pytest.approx(f["n_lists"] * f["list_length"] / 8, rel=0.01)


@pytest.mark.parametrize("kwargs, message", [
    ({"n_lists": 0}, "The 'n_lists' parameter of MicrobenchPlan must be an integer >= 1. Got 0 instead."),
    ({"object_sizes": (12, -4)}, "The 'object_sizes' parameter of MicrobenchPlan must be a non-empty list whose "
                                 "items are each an integer >= 1. Got (12, -4) instead."),
    ({"scale": 0}, "The 'scale' parameter of MicrobenchPlan must be a number > 0. Got 0 instead."),
    ({"volumes_mb": (8.0,)}, "at least two object volumes"),
])
def test_bad_plans(kwargs, message):
    with pytest.raises(ModelInputError, match=re.escape(message)):
        MicrobenchPlan(**kwargs)
