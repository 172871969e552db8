"""The HBench:JGC microbenchmark on the simulator: rows, steps, cost shape, copy bandwidth."""

from __future__ import annotations

import pytest

from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.gc.microbench import STEPS, copy_bandwidth, run_microbenchmark
from whatif.simulator.platform import load_platform

MB = 1024 * 1024


@pytest.fixture(scope="module")
def platform():
    return load_platform("mpc7447a")


def test_three_steps(platform):
    rows = run_microbenchmark(platform, 4 * MB, 16, 4096, 28)          # 2 MB of lists, 4x the L2
    assert [r["step"] for r in rows] == list(STEPS)
    live, dead, empty = rows
    n = 16 * 4096
    assert (live["live_objects"], live["dead_objects"]) == (n + 1, 0)
    assert (dead["live_objects"], dead["dead_objects"]) == (1, n)
    assert (empty["live_objects"], empty["dead_objects"]) == (1, 0)
    assert live["gc_seconds"] > dead["gc_seconds"] > 0 and empty["gc_seconds"] > 0
    assert live["mark_seconds"] > 0 and live["mark_seconds"] < live["gc_seconds"]
    assert live["memory_reads"] > 0 and empty["fields"] == 1 and empty["fan_in"] == 1


def test_per_object_cost_rises_to_the_line_then_stays(platform):
    per = {}
    for s in (12, 28, 60, 124):
        rows = run_microbenchmark(platform, 4 * MB, 32, 2048 * 16 // (s + 4), s)
        dead = rows[1]
        per[s] = (dead["gc_seconds"] - rows[2]["gc_seconds"]) / dead["objects"]
    assert per[12] < per[28] < per[60]
    assert per[124] == pytest.approx(per[60], rel=0.1)      # flat above the 64-byte L2 line (60 + 4-byte header)


def test_the_collection_that_evicts_a_dirty_cache_writes_it_back(platform):
    """The dead step's flush streams the mutator's data through the caches; stored, every L2 line it
    leaves is dirty and the sweep that evicts it writes it back; loaded, the collector writes back only
    its own lines (the mark bitmap, the free chunk's header).  The collector's reads are the same."""
    dirty = run_microbenchmark(platform, 4 * MB, 16, 4096, 28)
    clean = run_microbenchmark(platform, 4 * MB, 16, 4096, 28, dirty_flush=False)
    l2_lines = int(platform.caches["L2"].size_kb * 1024) // 64
    assert [r["memory_reads"] for r in dirty] == [r["memory_reads"] for r in clean]
    assert dirty[0]["memory_writes"] == clean[0]["memory_writes"]        # the live step is not flushed
    extra = dirty[1]["memory_writes"] - clean[1]["memory_writes"]
    assert 0.95 * l2_lines <= extra <= l2_lines
    assert clean[1]["memory_writes"] < 0.2 * l2_lines and clean[2]["memory_writes"] == 0
    assert dirty[1]["dirty_flush"] and not clean[1]["dirty_flush"]


def test_fanin_variant_visits_twice(platform):
    plain = run_microbenchmark(platform, 2 * MB, 8, 256, 28, fields=2)
    twin = run_microbenchmark(platform, 2 * MB, 8, 256, 28, fields=2, twin=True)
    assert twin[0]["fan_in"] == 2 and twin[0]["gc_seconds"] > plain[0]["gc_seconds"]


def test_bad_microbenchmarks(platform):
    with pytest.raises(SimulatorInputError, match="need .* bytes; the heap has"):
        run_microbenchmark(platform, 64 * 1024, 16, 1024, 28)
    with pytest.raises(SimulatorInputError, match="object_size must be positive"):
        run_microbenchmark(platform, MB, 1, 1, 0)


def test_copy_bandwidth_is_bounded_by_the_memory_system(platform):
    bw = copy_bandwidth(platform, nbytes=2 * MB)
    assert 0 < bw["bytes_per_second"] < platform.memory.bandwidth_gb_s * 1e9


def test_rooted_lists_time_the_roots_phase_per_root(platform):
    per_root = {}
    for r in (1024, 4096):
        live, dead, empty = run_microbenchmark(platform, 2 * MB, r, 2, 28, rooted=True)
        assert (live["roots"], live["live_objects"], live["objects"]) == (r, 2 * r, 2 * r)
        assert (dead["roots"], dead["live_objects"], dead["dead_objects"]) == (r, 0, 2 * r)   # null slots
        assert 0 < dead["roots_seconds"] < live["roots_seconds"] < live["gc_seconds"]
        per_root[r] = live["roots_seconds"]
    # each root: a load of its slot, a test, a push (store) and their bookkeeping, a few cycles on the 7447A
    cycles = (per_root[4096] - per_root[1024]) / 3072 * platform.clock_ghz * 1e9
    assert 10 < cycles < 40
    plain = run_microbenchmark(platform, 2 * MB, 16, 64, 28)[0]
    assert plain["roots"] == 1 and plain["roots_seconds"] < per_root[1024] / 20
    with pytest.raises(SimulatorInputError, match="rooted lists have one reference field per object"):
        run_microbenchmark(platform, 2 * MB, 16, 64, 28, fields=2, rooted=True)
