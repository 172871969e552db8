"""H_min by bisection on the simulated heap, against heaps whose minimum is known by construction."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from whatif.scenarios.checks.gc import planted_min_heap, planted_min_heap_behaviour as planted
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.gc.config import HeapConfig, heap_config
from whatif.simulator.gc.minheap import GRANULE, find_min_heap
from whatif.simulator.gc.run import simulate_gc
from whatif.simulator.platform import load_platform


@pytest.fixture(scope="module")
def platform():
    return load_platform("mpc7447a")


def test_planted_min_heap_is_the_first_heap_that_runs(platform):
    b = planted(200_000, 20)
    known = planted_min_heap(b, HeapConfig(heap_bytes=1 << 20))
    # by construction: 200,000 bytes of 24-byte objects live, 2 % of the heap must come free
    live = math.ceil(200_000 / 24) * 24
    assert known == math.ceil(live / 0.98 / GRANULE) * GRANULE
    for heap, ran in ((known, True), (known - GRANULE, False), (known + 40 * GRANULE, True), (live, False)):
        res = simulate_gc(b, heap_config(heap_bytes=heap), platform, timed=False)
        assert res.out_of_memory is not ran, heap
        assert res.collections and res.collections[-1].live_bytes == live


def test_bisection_finds_the_planted_min_heap(platform):
    b = planted(200_000, 20)
    known = planted_min_heap(b, HeapConfig(heap_bytes=1 << 20))
    coarse = find_min_heap(b, platform)
    assert known <= coarse.heap_bytes <= known * 1.01 and coarse.below_bytes < known
    assert coarse.heap_bytes - coarse.below_bytes <= 0.01 * coarse.heap_bytes
    fine = find_min_heap(b, platform, rel_tol=1e-6)
    assert (fine.below_bytes, fine.heap_bytes) == (known - GRANULE, known)
    assert [p.ran for p in fine.probes if p.heap_bytes == known] == [True]
    assert fine.full_size_kb == pytest.approx(known / 1024)
    doc = fine.to_dict()
    assert doc["heap_bytes"] == known and doc["probes"] == len(fine.probes)


def test_scale_and_collector(platform):
    b = planted(400_000, 52)
    # the stream at half its volume: H_min in scaled bytes, and the full-size figure undoes the scale
    half = find_min_heap(b, platform, scale=0.5, rel_tol=1e-6)
    known = planted_min_heap(b, HeapConfig(heap_bytes=1 << 20), scale=0.5)
    assert half.heap_bytes == known
    assert half.full_size_kb == pytest.approx(known / 0.5 / 1024)
    # a semispace collector needs the live data in each half
    copying = find_min_heap(b, platform, scale=0.5, collector="copying", rel_tol=1e-6)
    assert copying.heap_bytes == planted_min_heap(b, HeapConfig(heap_bytes=1 << 20, collector="copying"), scale=0.5)
    assert copying.heap_bytes >= 2 * known - 2 * GRANULE


@settings(max_examples=8, deadline=None)
@given(live=st.integers(20_000, 300_000), payload=st.sampled_from([12, 20, 28, 60, 124]))
def test_bisection_brackets_the_planted_min_heap(platform, live, payload):
    b = planted(live, payload, total_mb=1.0)
    known = planted_min_heap(b, HeapConfig(heap_bytes=1 << 20))
    found = find_min_heap(b, platform, rel_tol=0.02)
    assert found.below_bytes < known <= found.heap_bytes <= known * 1.02 + GRANULE


def test_deterministic_and_bad_tolerance(platform):
    b = planted(100_000, 20)
    assert find_min_heap(b, platform, seed=3).probes == find_min_heap(b, platform, seed=3).probes
    for bad in (0.0, 1.0, -0.5):
        with pytest.raises(SimulatorInputError, match="rel_tol"):
            find_min_heap(b, platform, rel_tol=bad)
