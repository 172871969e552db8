"""GcTimer: collector blocks timed on the platform's core and memory hierarchy, known answers from first
principles."""

from __future__ import annotations

import numpy as np
import pytest

from whatif.simulator.gc.timing import GcTimer
from whatif.simulator.isa import OP_ALU, OP_LOAD, InstrBlock
from whatif.simulator.platform import load_platform


@pytest.fixture(scope="module")
def platform():
    return load_platform("mpc7447a")


def timer(platform) -> GcTimer:
    return GcTimer(platform)


def loads(addrs, dependent: bool) -> InstrBlock:
    n = len(addrs)
    b = InstrBlock.empty(n)
    b.pc[:] = 0x400000
    b.op[:] = OP_LOAD
    b.size[:] = 4
    b.mem_addr[:] = np.asarray(addrs, np.uint64)
    b.mem_size[:] = 4
    b.dst[:] = 3
    if dependent:
        b.areg[:] = 3
        b.src1[:] = 3
    return b


def alus(n, dependent: bool) -> InstrBlock:
    b = InstrBlock.empty(n)
    b.pc[:] = 0x400000
    b.op[:] = OP_ALU
    b.size[:] = 4
    b.dst[:] = np.arange(n) % 8 if not dependent else 1
    if dependent:
        b.src1[:] = 1
    return b


def test_dependent_misses_pay_the_memory_latency_each(platform):
    t = timer(platform)
    n = 20_000
    addrs = 0x10000000 + np.arange(n) * 64                      # a new 64-byte L2 line each, 1.25 MB in all
    b = loads(addrs, dependent=True)
    b.validate()
    t.run(b)
    per = t.cycles / n
    mem = platform.memory.latency_cycles
    assert mem <= per <= mem * 1.1                              # plus a page walk every 64 loads


def test_a_page_walk_per_load_costs_more(platform):
    t = timer(platform)
    n = 2000
    t.run(loads(0x10000000 + np.arange(n) * 4096 * 3, dependent=True))      # every load a new page
    walks = t.counters()["tlbs"]["DTLB"]["walks"]
    assert walks == n
    assert t.cycles / n > platform.memory.latency_cycles + platform.page_walk.overhead_cycles


def test_independent_misses_overlap_up_to_the_mshrs():
    # no queue for the memory channel: behind the 7447A's 1.33 GB/s bus, eight misses in flight would be
    # bandwidth-bound (the MSHRs alone are the question here)
    platform = load_platform("mpc7447a", ["memory.queueing=none"])
    t_dep, t_ind = timer(platform), timer(platform)
    n = 2000
    addrs = 0x10000000 + np.arange(n) * 128                    # a new L2 line each, no page walk on most
    t_dep.run(loads(addrs, True))
    t_ind.run(loads(addrs, False))
    mshrs = platform.caches["L1D"].mshrs
    ratio = t_dep.cycles / t_ind.cycles
    assert mshrs * 0.6 <= ratio <= mshrs * 1.2


def test_alu_chains(platform):
    # marginal cycles of a second block (the first pays the cold instruction fetch): a dependent chain of
    # single-cycle ops retires one a cycle, independent ones dispatch_width a cycle
    width = platform.core.dispatch_width
    for dependent, per in ((True, 1.0), (False, 1.0 / width)):
        core = GcTimer(platform).core
        core.run(alus(10_000, dependent))
        first = core.counters()["cycles"]
        core.run(alus(10_000, dependent))
        assert core.counters()["cycles"] - first == pytest.approx(10_000 * per, rel=0.01)


def test_blocks_carry_state_across_calls(platform):
    whole, split = timer(platform), timer(platform)
    b = loads(0x10000000 + np.arange(3000) * 40, dependent=True)
    whole.run(b)
    split.run(b.slice(0, 1000))
    split.run(b.slice(1000, 3000))
    assert whole.cycles == split.cycles


def test_collector_blocks_are_timed_on_the_core(platform):
    t = GcTimer(platform)
    t.run(loads(0x10000000 + np.arange(500) * 64, dependent=True))
    assert t.cycles >= 500 * platform.memory.latency_cycles * 0.8
    assert t.counters()["core"]["instructions"] == 500
