"""The core and branch-predictor validation checks: registered, run on every platform, pass in quick mode."""

from __future__ import annotations

import numpy as np

from whatif.scenarios.checks import core as checks_core
from whatif.scenarios.checks.registry import CHECK_MODULES, registered_checks, run_checks
from whatif.simulator.platform import load_platform

CORE_CHECKS = [n for n in registered_checks() if n.startswith(("core:", "branch:", "prefetch:", "memory:"))]


def test_module_is_listed_and_checks_are_registered():
    assert "whatif.scenarios.checks.core" in CHECK_MODULES
    assert len(CORE_CHECKS) == 10


def test_quick_checks_pass_on_every_platform():
    results = run_checks(quick=True, only=CORE_CHECKS)
    failed = [(r.name, r.expected, r.measured, r.detail) for r in results if not r.passed]
    assert failed == []
    # six checks per platform on five platforms, plus two AGI rows for z10 (the only in-order core), two
    # register-read rows for each of the three Xeons (the only cores with limited read ports), two
    # prefetch-distance rows and one streaming-bandwidth row per platform
    assert len(results) == 6 * 5 + 2 + 2 * 3 + 2 * 5 + 5
    assert sum(r.name.startswith("memory: streaming copy") for r in results) == 5
    assert sum("register reads" in r.name for r in results) == 6
    assert sum(r.name.startswith("prefetch:") for r in results) == 10
    for platform in checks_core.PLATFORMS:
        assert sum(platform in r.name for r in results) >= 6


def test_independent_ops_expectation_from_first_principles():
    expected, _ = checks_core.independent_expectation(checks_core._platform("nehalem"))
    assert expected == 0.25                      # 4-wide; 3 ALUs take 3 of every 4 ops
    expected, _ = checks_core.independent_expectation(checks_core._platform("mpc7447a"))
    assert abs(expected - 1 / 3) < 1e-12         # 3-wide dispatch and retire
    expected, _ = checks_core.independent_expectation(checks_core._platform("z10"))
    assert expected == 0.5                       # in order, pairs


def test_read_port_expectation_from_first_principles():
    nehalem = checks_core._platform("nehalem")
    assert checks_core.read_port_expectation(nehalem, 2, spread=True) == 1.0     # 3 ports: one 2-read op a cycle
    assert checks_core.read_port_expectation(nehalem, 1, spread=True) == 1 / 3   # 3 ports = 3 ALUs
    assert checks_core.read_port_expectation(nehalem, 2, spread=False) == 1 / 3  # shared: the 3 ALUs
    assert checks_core.read_port_expectation(checks_core._platform("mpc7447a"), 2, spread=True) == 1 / 3


def test_chase_layout_defeats_caches_and_spatial_prefetchers():
    footprint, stride, page = checks_core.chase_layout(checks_core._platform("nehalem"))
    assert footprint == 4 * 8 * 1024 * 1024 and stride == 128 and page == 4096
    footprint, stride, _ = checks_core.chase_layout(checks_core._platform("z10"))
    assert stride == 256 and footprint == 4 * 48 * 1024 * 1024


def test_prefetch_timing_hides_what_the_prefetch_distance_allows():
    nehalem = checks_core._platform("nehalem")
    mem, l1 = nehalem.memory.latency_cycles, nehalem.caches["L1D"].latency_cycles
    k, hidden, late = checks_core.prefetch_timing(nehalem, 300, 40)       # used before the line arrives
    assert (k < mem).mean() > 0.95 and late == (k < mem).sum()
    assert (hidden == np.clip(k, 0, mem - l1)).all()
    assert 20 < hidden.mean() < 60                                        # about the 40 cycles of ALU work
    k, hidden, late = checks_core.prefetch_timing(nehalem, 300, 2 * mem)  # arrived before its use
    assert late == 0 and (hidden == mem - l1).all()


def test_a_streamed_copy_waits_for_fill_buffers_and_the_channel_at_once():
    """Harpertown's copy with its own 8 fill buffers, timed prefetch arrival, queueing and an L2 streamer
    (unbounded engines): the streamer keeps the lines coming, so the copy is bound by the 10.6 GB/s bus, not by
    the fill buffers.  A miss that waits for a fill buffer while its line is already in flight (or queued on
    the channel) waits for whichever ends later; adding the two waits (as the core once did) ran it at 57 %."""
    p = load_platform("harpertown", ["memory.prefetch_arrival=latency", "memory.queueing=bandwidth",
                                     "caches.L2.prefetchers=['adjacent_line','streamer']",
                                     "caches.L2.prefetch_engines=0"])
    gbs, writebacks = checks_core.copy_bandwidth(p, 1.0)
    assert writebacks > 0
    assert 0.9 * p.memory.bandwidth_gb_s <= gbs <= p.memory.bandwidth_gb_s
