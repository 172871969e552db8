"""Whole runs through the heap: collections, explicit GCs, out of memory, the GC log and its summary."""

from __future__ import annotations

import numpy as np
import pytest

from whatif.simulator.gc.config import heap_config
from whatif.simulator.gc.log import LOG_COLUMNS, gc_log, gc_size_histogram, summary
from whatif.simulator.gc.run import simulate_gc
from whatif.simulator.platform import load_platform
from tests.gc_helpers import KB, MB, behaviour


@pytest.fixture(scope="module")
def platform():
    return load_platform("mpc7447a")


@pytest.fixture(scope="module")
def timed_run(platform):
    b = behaviour(total_mb=3.0, explicit=(0.5,))
    return simulate_gc(b, heap_config(heap_bytes=512 * KB), platform, seed=4)


def test_collections_and_explicit_gcs(timed_run):
    cs = timed_run.collections
    assert len(cs) >= 4
    assert [c.reason for c in cs].count("explicit") == 1
    ex = next(c for c in cs if c.explicit)
    assert ex.clock_bytes == pytest.approx(0.5 * 3.0 * MB, abs=2 * KB)
    assert all(c.cycles > 0 and c.instructions > 0 for c in cs)
    assert timed_run.allocated_bytes >= 3.0 * MB and not timed_run.out_of_memory
    assert {"clear", "roots", "mark", "sweep"} <= set(cs[0].phase_cycles)
    assert sum(cs[0].phase_cycles.values()) == cs[0].cycles


def test_gc_log_contract(timed_run):
    log = gc_log(timed_run)
    assert list(log.columns) == list(LOG_COLUMNS)
    assert len(log) == len(timed_run.collections)
    assert (log["duration_s"] > 0).all() and np.all(np.diff(log["t_start_s"]) > 0)
    assert (log["live_objects"] + log["dead_objects"] > 0).all()
    h = gc_size_histogram(timed_run)
    per = h.groupby("gc")[["live", "dead"]].sum()
    assert per["live"].tolist() == log["live_objects"].tolist()
    assert per["dead"].tolist() == log["dead_objects"].tolist()


def test_gc_log_counts_each_collections_memory_traffic(timed_run):
    """Lines read from and written back to memory during each collection (what a PMU counts between the
    pause's start and end): they add up to the run's memory counters less the mutator's allocation
    stores, which read lines and write back what they evict; every sweep closes at least one chunk."""
    log = gc_log(timed_run)
    assert (log["memory_reads"] > 0).all() and (log["memory_writes"] >= 0).all()
    mem = timed_run.counters["memory"]
    assert log["memory_reads"].sum() < mem["reads"] and log["memory_writes"].sum() <= mem["writes"]
    assert (log["swept_chunks"] >= 1).all()


def test_untimed_collections_count_no_memory_traffic(platform):
    run = simulate_gc(behaviour(total_mb=1.0), heap_config(heap_bytes=512 * KB), platform, seed=4, timed=False)
    log = gc_log(run)
    assert len(log) >= 1 and (log["memory_reads"] == 0).all() and (log["memory_writes"] == 0).all()
    assert (log["swept_chunks"] >= 1).all()


def test_summary_figures(timed_run):
    log = gc_log(timed_run)
    s = summary(timed_run, log)
    assert s["collections"] == len(log) and s["explicit_collections"] == 1
    assert s["total_pause_s"] == pytest.approx(log["duration_s"].sum())
    assert s["max_pause_s"] == pytest.approx(log["duration_s"].max())
    assert s["gc_throughput_pct"] == pytest.approx(100 * s["mutator_s"] / (s["mutator_s"] + s["total_pause_s"]))
    assert s["freed_bytes"] == log["dead_bytes"].sum()
    assert s["freed_bytes_per_s"] == pytest.approx(s["freed_bytes"] / s["run_s"])


def test_runs_are_deterministic(platform):
    b = behaviour(total_mb=1.0)
    r1 = simulate_gc(b, heap_config(heap_bytes=256 * KB), platform, seed=2)
    r2 = simulate_gc(b, heap_config(heap_bytes=256 * KB), platform, seed=2)
    assert [c.cycles for c in r1.collections] == [c.cycles for c in r2.collections]


def test_bigger_heap_fewer_collections(platform):
    b = behaviour(total_mb=4.0, immortal=0.01, phase=0.05, short=0.94)
    runs = [simulate_gc(b, heap_config(heap_bytes=h * KB), platform, timed=False) for h in (512, 1024, 2048)]
    assert not any(r.out_of_memory for r in runs)
    counts = [len(r.collections) for r in runs]
    assert counts[0] > counts[1] > counts[2] >= 1
    for h, r in zip((512, 1024, 2048), runs):                  # about allocation / (heap - live)
        live = np.mean([c.live_bytes for c in r.collections])
        assert len(r.collections) == pytest.approx(r.allocated_bytes / (h * KB - live), rel=0.25, abs=1)


def test_out_of_memory_stops_the_run(platform):
    b = behaviour(initial_mb=1.0, total_mb=4.0)
    r = simulate_gc(b, heap_config(heap_bytes=512 * KB), platform, timed=False)
    assert r.out_of_memory and r.allocated_bytes < 4.0 * MB and r.oom_request_bytes > 0
    s = summary(r)
    assert s["out_of_memory"] and s["oom_live_bytes"] > 0


def test_copying_collector_runs(platform):
    b = behaviour(total_mb=2.0)
    r = simulate_gc(b, heap_config(collector="copying", heap_bytes=1024 * KB), platform, seed=1)
    assert r.collections and all(c.copied_bytes == c.live_bytes for c in r.collections)


def test_gc_overhead_limit_ends_a_thrashing_run(platform):
    b = behaviour(initial_mb=0.3, total_mb=4.0, immortal=0.0, phase=0.0, short=1.0)
    cfg = heap_config(heap_bytes=512 * KB, overhead_free_ratio=0.5, overhead_collections=3)
    r = simulate_gc(b, cfg, platform, timed=False)
    assert r.out_of_memory and r.oom_reason == "overhead"
    assert all(c.free_bytes_after < 0.5 * 512 * KB for c in r.collections[-3:])
    relaxed = simulate_gc(b, heap_config(heap_bytes=512 * KB), platform, timed=False)
    assert not relaxed.out_of_memory and len(relaxed.collections) > len(r.collections)


def test_progress_reports_exactly_the_allocation_total(platform):
    """The bar ends at 100 %: the progress calls add up to the behaviour's total, though the last object
    allocated crosses it."""
    b = behaviour(total_mb=2.0)
    steps: list[int] = []
    r = simulate_gc(b, heap_config(heap_bytes=512 * KB), platform, timed=False, progress=steps.append, batch=4096)
    assert len(steps) > 3 and all(s >= 0 for s in steps)
    assert sum(steps) == int(2.0 * MB) <= r.allocated_bytes
