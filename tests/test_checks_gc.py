"""The gc and hbench validation checks pass in quick mode."""

from __future__ import annotations

import pytest

from whatif.scenarios.checks import gc as checks_gc
from whatif.simulator.platform import load_platform

MB = 1024 * 1024


@pytest.mark.parametrize("check", [checks_gc.empty_heap_linear, checks_gc.knee_at_line, checks_gc.out_of_memory,
                                   checks_gc.collections_vs_heap, checks_gc.planted_hbench,
                                   checks_gc.planted_min_heap_check])
def test_check_passes(check):
    results = check(True)
    assert results and all(r.passed for r in results), [r.as_dict() for r in results if not r.passed]


def test_demand_granule_is_the_line_or_the_adjacent_line_pair():
    harpertown = load_platform("harpertown")
    assert checks_gc.demand_granule(load_platform("mpc7447a")) == 64            # L2 line; adjacent_sector fills it
    assert checks_gc.demand_granule(harpertown) == 128                          # L2 adjacent_line: 128-byte pairs
    assert checks_gc.demand_granule(load_platform("harpertown", ["caches.L2.prefetchers=[]"])) == 64


def test_run_ahead_prefetchers_come_off_the_data_path_only():
    p, removed = checks_gc.without_run_ahead_prefetchers(
        load_platform("harpertown", ["caches.L2.prefetchers=['adjacent_line']"]))
    assert removed == ["L1D.next_line", "L1D.ip_stride"]
    assert p.caches["L1D"].prefetchers == [] and p.caches["L2"].prefetchers == ["adjacent_line"]
    assert p.caches["L1I"].prefetchers == ["next_line"]
    # the L2's streamer runs ahead too; its adjacent-line pairs stay
    s, removed = checks_gc.without_run_ahead_prefetchers(
        load_platform("harpertown", ["caches.L2.prefetchers=['adjacent_line','streamer']"]))
    assert removed == ["L1D.next_line", "L1D.ip_stride", "L2.streamer"]
    assert s.caches["L2"].prefetchers == ["adjacent_line"]
    q, none = checks_gc.without_run_ahead_prefetchers(load_platform("mpc7447a"))
    assert none == [] and q.caches["L2"].prefetchers == ["adjacent_sector"]


def test_harpertown_knee_is_at_the_pair_not_the_line():
    """Harpertown with a small L2 (so a 1 MB heap overflows it): with the run-ahead prefetchers off the
    per-object costs rise until the payload fills the 128-byte adjacent-line pair (124 bytes) and are flat
    after, not at the 64-byte line the check used to expect; with them on the sweep's misses are hidden."""
    shipped = load_platform("harpertown", ["caches.L2.size_kb=384"])
    platform, _ = checks_gc.without_run_ahead_prefetchers(shipped)
    sizes = list(range(12, 253, 16))
    costs = checks_gc.size_costs(platform, sizes, MB)
    assert costs.knee("dead", max_size=252) == 124
    dead = costs.c_dead([60, 124, 188, 252])
    assert dead[0] < 0.6 * dead[1] and abs(dead[3] - dead[1]) < 0.05 * dead[1] and abs(dead[2] - dead[1]) < 0.05 * dead[1]
    on = checks_gc.size_costs(shipped, [44, 60], MB)
    assert on.c_dead(60) < 0.3 * costs.c_dead(60)
