"""The numba timing kernel against the slow reference (tests/coreref.py): identical counters, CPI stacks
and per-run state on random instruction streams, for in-order and out-of-order configurations."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coreref import RefCore
from whatif.simulator.core import Core
from whatif.simulator.core import counters as V
from whatif.simulator.core import timing as TM
from whatif.simulator.core import microbench as MB
from whatif.simulator.core.microbench import random_program
from whatif.simulator.isa import (FLAG_FLAGS_PARTIAL, FLAG_PARTIAL_WRITE, FLAG_SERIALIZING, OP_BRANCH, OP_CALL, OP_JUMP,
                           OP_LOAD, OP_RET, OP_STORE, InstrBlock)
from whatif.simulator.memory.hierarchy import MemoryHierarchy
from whatif.simulator.platform import load_platform

SMALL = ("core.rob_entries=10", "core.rs_entries=4", "core.load_queue=3", "core.store_queue=2", "l1d.mshrs=2",
         "core.fetch_queue=5", "branch_predictor.btb_entries=8", "branch_predictor.btb_associativity=2",
         "branch_predictor.ras_entries=2", "branch_predictor.bht_entries=16", "branch_predictor.history_bits=3")
CONFIGS = {
    "nehalem": ("nehalem", ()),
    # the Xeons' defaults before 12bce02: gshare, prefetches that arrive at once, no channel queue, no streamer
    "nehalem-untimed-gshare": ("nehalem", ("branch_predictor.kind=gshare", "memory.prefetch_arrival=instant",
                                           "memory.queueing=none", "caches.L2.prefetchers=['adjacent_line']",
                                           "caches.L2.prefetch_engines=0")),
    "nehalem-small": ("nehalem", SMALL),
    "nehalem-agi": ("nehalem", SMALL + ("core.agi_penalty=3", "core.agi_distance=2")),
    "harpertown-small": ("harpertown", SMALL + ("core.units.idiv.count=2",)),
    "westmere-small-6ports": ("westmere", SMALL + ("core.register_read_ports=6",)),
    "westmere": ("westmere", ()),
    "mpc7447a": ("mpc7447a", ()),
    "mpc7447a-small": ("mpc7447a", SMALL + ("core.retire_width=1",)),
    "z10": ("z10", ()),
    "nehalem-timed-prefetch": ("nehalem", ("memory.prefetch_arrival=latency",)),
    "nehalem-small-timed-prefetch": ("nehalem", SMALL + ("memory.prefetch_arrival=latency", "l1d.prefetch_degree=3")),
    "mpc7447a-timed-prefetch": ("mpc7447a", ("memory.prefetch_arrival=latency", "l1d.prefetchers=['next_line']")),
    "nehalem-small-queueing": ("nehalem", SMALL + ("memory.queueing=bandwidth", "memory.bandwidth_gb_s=0.5",
                                                   "memory.prefetch_arrival=latency")),
    "mpc7447a-queueing": ("mpc7447a", ("memory.queueing=bandwidth", "memory.bandwidth_gb_s=0.2")),
    "z10-small": ("z10", SMALL[2:] + ("core.rob_entries=3", "core.rs_entries=3", "core.group_size=3",
                                     "core.issue_width=3")),
}


@functools.lru_cache(maxsize=None)
def platform(key: str):
    name, overrides = CONFIGS[key]
    return load_platform(name, list(overrides))


def run_both(p, block: InstrBlock, predictor: str | None = None):
    core = Core(p, MemoryHierarchy(p, seed=3), predictor=predictor)
    core.records = np.full((len(block), TM.NREC), -7, dtype=np.int64)      # the profiling records too
    core.run(block, records=core.records)
    ref = RefCore(p, MemoryHierarchy(p, seed=3), predictor=predictor).run(block)
    return core, ref


def assert_same(core: Core, ref: RefCore) -> None:
    got = core.counters(memory=False)
    assert got == ref.ct
    assert core.records.tolist() == [list(rec.record) for rec in ref.recs]
    assert core.CS.tolist() == ref.cs
    assert ref.catch_all == 0
    assert sum(core.cycle_stack().values()) == got["cycles"]


# ---- random instruction streams ------------------------------------------------------------------
HOT = [0x2000 + 8 * k for k in range(32)]
CONFLICT = [0x100000 + 4096 * k for k in range(24)]          # one L1 set, many tags
FAR = [0x40000000 + 0x13579 * k * 64 for k in range(16)]      # misses everywhere, TLB misses
TARGETS = [0x400000, 0x400040, 0x401000, 0x480000]


@st.composite
def streams(draw, max_size: int = 90):
    n = draw(st.integers(1, max_size))
    ops = draw(st.lists(st.sampled_from([0, 0, 0, 1, 2, 3, 4, 4, 4, 5, 5, 6, 6, 7, 8, 9]), min_size=n, max_size=n))
    reg = st.integers(-1, 6)
    b = InstrBlock.empty(n)
    pc = 0x400000
    for i, op in enumerate(ops):
        b.op[i] = op
        size = draw(st.sampled_from([1, 2, 4, 6]))
        b.pc[i] = pc
        b.size[i] = size
        b.dst[i] = draw(reg) if op not in (OP_STORE, OP_BRANCH, OP_JUMP, OP_CALL, OP_RET) else -1
        b.src1[i] = draw(reg)
        b.src2[i] = draw(reg)
        if op in (OP_LOAD, OP_STORE):
            b.areg[i] = draw(reg)
            b.mem_addr[i] = draw(st.sampled_from(HOT + CONFLICT + FAR))
            b.mem_size[i] = draw(st.sampled_from([1, 4, 8, 16]))
        if op in (OP_BRANCH, OP_JUMP, OP_CALL, OP_RET):
            taken = 1 if op != OP_BRANCH else draw(st.integers(0, 1))
            b.taken[i] = taken
            if taken:
                b.target[i] = draw(st.sampled_from(TARGETS))
        b.flags[i] = draw(st.sampled_from([0] * 8 + [FLAG_PARTIAL_WRITE, FLAG_FLAGS_PARTIAL, FLAG_SERIALIZING]))
        pc = int(b.target[i]) if b.taken[i] else pc + size
    return b


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(block=streams(), key=st.sampled_from(sorted(CONFIGS)))
def test_kernel_matches_reference_on_random_streams(block, key):
    core, ref = run_both(platform(key), block)
    assert_same(core, ref)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(block=streams(60), key=st.sampled_from(["nehalem-small", "mpc7447a", "z10-small"]),
       predictor=st.sampled_from(["bimodal", "gshare", "always_taken", "perfect", "tage"]))
def test_kernel_matches_reference_with_every_predictor(block, key, predictor):
    core, ref = run_both(platform(key), block, predictor)
    assert_same(core, ref)


@pytest.mark.parametrize("key", sorted(CONFIGS))
def test_kernel_matches_reference_on_random_programs(key):
    p = platform(key)
    block = random_program(500, 5, p.isa, code_kb=2, data_kb=64, partial_rate=0.05, serial_rate=0.005,
                           mix=(0.35, 0.05, 0.03, 0.07, 0.3, 0.2, 0, 0, 0, 0))
    core, ref = run_both(p, block)
    assert_same(core, ref)
    got = core.counters(memory=False)
    # the streams are meant to exercise the mechanisms: make sure they did
    assert got["mispredicts"] > 0 and got["loads"] > 0 and got["stores"] > 0
    if key.endswith("timed-prefetch") or key == "nehalem-small-queueing":
        assert got["l1d_prefetch_fills"] > 0
    elif p.memory.prefetch_arrival == "instant":
        assert got["l1d_prefetch_fills"] == 0 == got["late_prefetches"]


@pytest.mark.parametrize("key", ["nehalem-timed-prefetch", "nehalem-small-timed-prefetch", "mpc7447a-timed-prefetch"])
@pytest.mark.parametrize("gap", [0, 8, 400])
def test_kernel_matches_reference_on_late_and_timely_prefetches(key, gap):
    """Pairs of loads whose second line a next-line prefetch brings in: used before it arrives (gap 0 also
    before the prefetch began) or after; the reference times every prefetch's MSHR the same way."""
    p = platform(key)
    pairs = 8 if gap > 100 else 60                     # (the reference's time grows faster than the length)
    block = MB.prefetch_use(pairs, gap, 1 << 24, p.caches["L1D"].line_bytes, 4096, seed=2, isa=p.isa, body=4)
    core, ref = run_both(p, block)
    assert_same(core, ref)
    got = core.counters(memory=False)
    assert got["l1d_prefetch_fills"] >= pairs
    assert (got["late_prefetches"] > 0) == (gap < 100)


@pytest.mark.parametrize("key", ["nehalem-small-queueing", "mpc7447a-queueing"])
def test_kernel_matches_reference_when_memory_transfers_queue(key):
    """A streaming copy on a slow channel: demand fills, prefetches, walks and writebacks queue; the reference
    reads the same waits and times them the same way, and the copy takes longer than without queueing."""
    p = platform(key)
    block = MB.stream_copy(300, p.caches["L1D"].line_bytes, p.isa, body=16)
    core, ref = run_both(p, block)
    assert_same(core, ref)
    name, overrides = CONFIGS[key]
    unqueued = load_platform(name, [o.replace("queueing=bandwidth", "queueing=none") for o in overrides])
    plain, _ = run_both(unqueued, block)
    assert core.counters(memory=False)["cycles"] > 2 * plain.counters(memory=False)["cycles"]


def test_every_stall_mechanism_is_exercised_and_agrees():
    """Across the small configurations every stall counter moves, and the kernel agrees with the
    reference on each run (guards against a property test that never reaches a mechanism)."""
    totals = {n: 0 for n in V.COUNTER_NAMES}
    for key in ("nehalem-small", "nehalem-agi", "mpc7447a-small", "z10-small"):
        p = platform(key)
        for seed in range(2):
            block = random_program(400, seed, p.isa, code_kb=2, data_kb=32, partial_rate=0.1, serial_rate=0.01,
                                   mix=(0.3, 0.05, 0.05, 0.1, 0.3, 0.2, 0, 0, 0, 0))
            core, ref = run_both(p, block)
            assert_same(core, ref)
            for k, v in core.counters(memory=False).items():
                totals[k] += v
    # timed prefetches, some of them late
    p = platform("nehalem-small-timed-prefetch")
    core, ref = run_both(p, MB.prefetch_use(20, 8, 1 << 24, 64, 4096, seed=4, isa=p.isa, body=4))
    assert_same(core, ref)
    for k, v in core.counters(memory=False).items():
        totals[k] += v
    quiet = [k for k, v in totals.items() if v == 0]
    assert quiet == []


def test_chunked_runs_equal_one_run():
    p = platform("nehalem-small")
    block = random_program(3000, 9, p.isa, code_kb=4, data_kb=256)
    one = Core(p, MemoryHierarchy(p, seed=1))
    one.run(block)
    chunked = Core(p, MemoryHierarchy(p, seed=1))
    start = 0
    for stop in (1, 7, 500, 1200, 3000):
        assert chunked.run(block.slice(start, stop)) == stop - start
        start = stop
    assert chunked.counters() == one.counters()
    assert chunked.cycle_stack() == one.cycle_stack()


def test_until_cycle_stops_at_the_boundary_and_resumes_exactly():
    p = platform("z10")
    block = random_program(4000, 2, p.isa, code_kb=4, data_kb=256)
    whole = Core(p, MemoryHierarchy(p, seed=1))
    whole.run(block)
    core = Core(p, MemoryHierarchy(p, seed=1))
    start, boundary = 0, 0
    while start < len(block):
        boundary += 10_000          # (more than one instruction's memory accesses can take, walks and queue included)
        done = core.run(block, until_cycle=boundary, start=start)
        start += done
        cycles = core.counters(memory=False)["cycles"]
        if start < len(block):
            # stopped by the boundary: the last instruction retired at or after it, the one before did not
            assert cycles > boundary
            assert done > 0
    assert core.counters() == whole.counters()


def test_same_seed_same_counters_and_different_placement_seed_differs():
    p = load_platform("nehalem", ["memory.page_mapping=scattered"])
    block = random_program(20000, 4, p.isa)
    runs = []
    for seed in (1, 1, 2):
        core = Core(p, seed=seed)
        core.run(block)
        runs.append(core.counters())
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


def test_cpi_stack_sums_to_cpi_on_every_platform():
    for name in ("harpertown", "mpc7447a", "nehalem", "westmere", "z10"):
        p = load_platform(name)
        core = Core(p)
        core.run(random_program(20000, 1, p.isa))
        stack = core.cpi_stack()
        assert sum(core.cycle_stack().values()) == core.cycles
        assert sum(stack.values()) == pytest.approx(core.cycles / core.instructions, rel=1e-12)
        assert all(v >= 0 for v in stack.values())
        assert set(stack) >= {"base", "branch_mispredict", "data_memory", "dtlb", "icache"}


def test_empty_block_and_dtype_errors():
    p = platform("nehalem")
    core = Core(p)
    assert core.run(InstrBlock.empty(0)) == 0
    assert core.counters(memory=False)["cycles"] == 0
    bad = InstrBlock.empty(3)
    bad.pc = bad.pc.astype(np.int64)
    with pytest.raises(ValueError, match=r"InstrBlock.pc: expected contiguous uint64\[3\], got int64\[3\]"):
        core.run(bad)
    # a block is checked once, and again whenever a field is reassigned (after a run, too)
    block = InstrBlock.empty(4)
    assert core.run(block) == 4 and core.warm(block) == 4
    block.mem_addr = np.zeros(8, np.uint64)[::2]                         # not contiguous
    with pytest.raises(ValueError, match="InstrBlock.mem_addr: expected contiguous"):
        core.run(block)
    block.mem_addr = np.zeros(4, np.uint64)
    block.taken = np.zeros(5, np.uint8)                                 # another length
    with pytest.raises(ValueError, match=r"InstrBlock.taken: expected contiguous uint8\[4\], got uint8\[5\]"):
        core.warm(block)
    block.taken = np.zeros(4, np.uint8)
    assert core.run(block) == 4


def test_records_are_written_only_when_asked_and_change_nothing():
    p = platform("z10")
    block = random_program(3000, 5, p.isa, code_kb=8, data_kb=256)
    plain = Core(p, MemoryHierarchy(p, seed=1))
    plain.run(block)
    recorded = Core(p, MemoryHierarchy(p, seed=1))
    records = np.zeros((len(block), TM.NREC), dtype=np.int64)
    recorded.run(block, records=records)
    assert recorded.counters() == plain.counters() and recorded.cycle_stack() == plain.cycle_stack()
    r = records
    assert (r[:, TM.R_S] <= r[:, TM.R_ITLB]).all() and (r[:, TM.R_ITLB] <= r[:, TM.R_F]).all()
    assert (np.diff(r[:, TM.R_S]) >= 0).all()                   # fetch starts never go back: the profiler
    assert (r[:, TM.R_E] <= r[:, TM.R_DTLB]).all() and (r[:, TM.R_C] <= r[:, TM.R_R]).all()
    assert int(r[:, TM.R_R].max()) + 1 == recorded.cycles
    flags = r[:, TM.R_FLAGS]
    assert ((flags & TM.RF_L1I_MISS) != 0).any()
    assert 0 < ((flags & TM.RF_LEADER) == 0).sum() < len(block) / 2      # the z10 pairs some instructions
    with pytest.raises(ValueError, match="records"):
        Core(p).run(block, records=np.zeros((5, TM.NREC), dtype=np.int64))
