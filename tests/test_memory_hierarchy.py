"""The numba memory hierarchy against the pure-Python reference (tests/memref.py) and against
analytically known answers."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memref import RefHierarchy
from whatif.simulator.memory import state as L
from whatif.simulator.memory.hierarchy import MemoryHierarchy
from whatif.simulator.platform import load_platform, platform_names
from whatif.simulator.traces import Stream, Trace, mixed_streams, synthetic_trace


def both(platform, trace, seed=0, cycles_per_record=None, timed=False):
    fast = MemoryHierarchy(platform, seed=seed).run(trace.addrs, trace.sizes, trace.kinds,
                                                    cycles_per_record=cycles_per_record, timed=timed).counters()
    ref = RefHierarchy(platform, seed=seed).run(trace.addrs, trace.sizes, trace.kinds, cycles_per_record,
                                                timed).counters()
    return fast, ref


def assert_same(fast, ref):
    for section in ("levels", "tlbs"):
        for name, row in ref[section].items():
            for key, value in row.items():
                assert fast[section][name][key] == value, (section, name, key)
    assert fast["memory"] == ref["memory"]


def assert_invalid_slots_clear(hierarchy):
    """An invalid slot (tag EMPTY) has both metadata words 0 and a valid one has a valid sector: the victim
    choice finds invalid ways by their tags and compares stamps alone."""
    S = hierarchy.state.S
    for at, words, meta_at, meta_words in hierarchy._cache_lines:
        invalid = S[at:at + words - 4] == -1
        meta = S[meta_at:meta_at + meta_words].reshape(-1, L.MW)
        assert (meta[invalid] == 0).all()
        assert ((meta[~invalid, L.M_VD] & 0xFFFFFFFF) != 0).all()


def small_trace(seed, n=6000, instr=0.5):
    return synthetic_trace(mixed_streams(), n, seed=seed, instructions_per_access=instr, code_kb=48)


@pytest.mark.parametrize("name", platform_names())
def test_every_platform_matches_reference(name):
    platform = load_platform(name)
    fast, ref = both(platform, small_trace(7), seed=7)
    assert_same(fast, ref)
    assert fast["levels"][platform.top_cache("data")]["misses"] > 0   # the trace exercises misses


# what-if variants that switch on every mechanism the kernel has, on caches small enough to evict a lot
VARIANTS = {
    "lru_everywhere": ["l1d.replacement=lru", "l1i.replacement=lru", "l2.size_kb=64"],
    "fifo": ["l1d.replacement=fifo", "l2.replacement=fifo", "l2.size_kb=32"],
    "random": ["l1d.replacement=random", "l2.replacement=random", "dtlb.replacement=random", "l2.size_kb=32"],
    "write_through_no_allocate": ["l1d.write_policy=write_through", "l1d.write_allocate=false", "l2.size_kb=32"],
    "inclusive_l2": ["l2.inclusion=inclusive", "l2.size_kb=32", "l1d.size_kb=8"],
    "no_walk_pollution": ["page_walk.pollute=false", "l2.size_kb=64"],
    "scattered_pages": ["memory.page_mapping=scattered", "l2.size_kb=64"],
    "next_line_prefetch": ["l1d.prefetchers=['next_line']", "l1d.prefetch_degree=2", "l2.prefetchers=['adjacent_sector','next_line']"],
    "ip_stride": ["l1d.prefetchers=['ip_stride']", "l2.prefetchers=['adjacent_line']", "l2.size_kb=64"],
    "plru_tlb": ["dtlb.replacement=plru", "itlb.replacement=fifo", "dtlb.entries=16"],
    "radix_walk": ["page_walk.kind=radix", "page_walk.cache_level=L2", "page_walk.cached_levels=1"],
    "tagged_prefetch": ["l1i.prefetchers=['tagged_next_line']", "l1d.prefetchers=['tagged_next_line']",
                        "l1d.prefetch_degree=2", "l2.prefetchers=['tagged_next_line','adjacent_sector']",
                        "l2.size_kb=32", "l1i.size_kb=4"],
    "prefetch_engines": ["l1d.prefetchers=['next_line']", "l1d.prefetch_degree=2", "l1d.prefetch_engines=2",
                         "l2.prefetchers=['adjacent_sector','next_line']", "l2.prefetch_engines=1", "l2.size_kb=32",
                         "memory.latency_cycles=12"],
    "streamer": ["l1d.prefetchers=['next_line']", "l2.prefetchers=['streamer']", "l2.streamer_streams=4",
                 "l2.streamer_distance=6", "l2.size_kb=64", "memory.prefetch_arrival=instant"],
    # a table wider than the 64 entries the kernel compares in one step, on more regions than it holds
    "streamer_wide": ["l1d.prefetchers=['next_line']", "l2.prefetchers=['streamer']", "l2.streamer_streams=70",
                      "l2.size_kb=64", "memory.prefetch_arrival=instant"],
    "streamer_timed": ["l1d.prefetchers=['next_line', 'ip_stride']", "l2.prefetchers=['adjacent_sector', 'streamer']",
                       "l2.streamer_streams=3", "l2.size_kb=32", "l2.prefetch_engines=2",
                       "memory.prefetch_arrival=latency", "memory.queueing=bandwidth"],
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_mechanism_variants_match_reference(variant):
    platform = load_platform("mpc7447a", VARIANTS[variant])
    trace = small_trace(11)
    if variant == "streamer_wide":                # entries past the first 64 are filled, then replaced
        assert len(np.unique(trace.addrs >> np.uint64(12))) > 70
    fast, ref = both(platform, trace, seed=11,
                     cycles_per_record=1 if variant in ("prefetch_engines", "streamer_timed") else None,
                     timed=variant == "streamer_timed")
    assert_same(fast, ref)
    if variant.startswith("streamer"):            # the streamer prefetched; timed, demands found lines in flight
        assert fast["levels"]["L2"]["prefetches_issued"] > 0 and fast["levels"]["L2"]["prefetches_useful"] > 0
        assert (fast["levels"]["L2"]["late_prefetches"] > 0) == (variant == "streamer_timed")
    if variant.startswith("tagged"):              # hits on prefetched lines fetched further lines
        assert fast["levels"]["L1I"]["prefetches_useful"] > 0
    if variant == "prefetch_engines":            # the engines both issue and drop on this trace
        for lv in ("L1D", "L2"):
            assert fast["levels"][lv]["prefetches_issued"] > 0 and fast["levels"][lv]["prefetches_dropped"] > 0


@pytest.mark.parametrize("code_page_kb", [4, 1024])
def test_z10_tagged_instruction_prefetch_matches_reference(code_page_kb):
    platform = load_platform("z10", ["l1i.size_kb=16", f"memory.code_page_kb={code_page_kb}",
                                     "memory.page_mapping=scattered"])
    fast, ref = both(platform, small_trace(3, n=20000, instr=2.0), seed=3)
    assert_same(fast, ref)
    assert fast["levels"]["L1I"]["prefetches_useful"] > 0


def test_sequential_code_misses_once_a_page_under_4kb_pages_and_once_under_1mb_pages():
    """The z10's tagged next-line I-prefetch streams ahead of straight-line code until the stream leaves
    the page it has a translation for: every 4 KB under 4 KB pages, never within a 1 MB page."""
    n = 256 * 1024 // 4                                  # 256 KB of 4-byte fetches, from a 1 MB boundary
    trace = Trace((np.uint64(0x4000_0000) + np.uint64(4) * np.arange(n, dtype=np.uint64)),
                  np.full(n, 4, np.uint16), np.zeros(n, np.uint8))
    misses = {}
    for kb in (4, 1024):
        h = MemoryHierarchy(load_platform("z10", [f"memory.code_page_kb={kb}"]))
        h.run(trace.addrs, trace.sizes, trace.kinds)
        misses[kb] = h.counters()["levels"]["L1I"]["misses"]
    assert misses == {4: 64, 1024: 1}                    # 256 KB / 4 KB pages; one cold start


def test_a_trace_run_in_chunks_or_calls_counts_as_one_run():
    """The IP-stride prefetcher trains on the PC of each load: a chunk (or a further call, as a streaming
    reader makes) that starts with data accesses continues the instruction fetched before it."""
    trace = small_trace(4, n=30000, instr=0.3)
    whole = MemoryHierarchy(load_platform("nehalem"), seed=4).run(trace.addrs, trace.sizes, trace.kinds)
    chunked = MemoryHierarchy(load_platform("nehalem"), seed=4).run(trace.addrs, trace.sizes, trace.kinds,
                                                                   chunk=7)
    calls = MemoryHierarchy(load_platform("nehalem"), seed=4)
    for a in range(0, len(trace), 1001):
        calls.run(trace.addrs[a:a + 1001], trace.sizes[a:a + 1001], trace.kinds[a:a + 1001],
                  cycles_per_record=1)
    assert chunked.counters() == whole.counters()
    assert whole.counters()["levels"]["L1D"]["prefetches_issued"] > 0
    assert calls.counters()["levels"] == MemoryHierarchy(load_platform("nehalem"), seed=4).run(
        trace.addrs, trace.sizes, trace.kinds, cycles_per_record=1).counters()["levels"]


@pytest.mark.parametrize("upper", ["plru", "lru"])
def test_three_level_inclusive_and_large_pages_match_reference(upper):
    # (LRU above the inclusive L3: a back-invalidated way must read as the oldest, stamp 0)
    platform = load_platform("nehalem", ["memory.page_kb=2048", "l3.size_kb=128", "l2.size_kb=64", "l1d.size_kb=16"]
                             + [f"{c}.replacement={upper}" for c in ("l1i", "l1d", "l2")])
    trace = small_trace(5, n=20000)
    hierarchy = MemoryHierarchy(platform, seed=5).run(trace.addrs, trace.sizes, trace.kinds)
    fast = hierarchy.counters()
    assert_same(fast, RefHierarchy(platform, seed=5).run(trace.addrs, trace.sizes, trace.kinds).counters())
    assert_invalid_slots_clear(hierarchy)            # the back-invalidated slots of the L1s and the L2
    assert fast["levels"]["L3"]["back_invalidations"] > 0
    assert fast["tlbs"]["DTLB_LARGE"]["accesses"] > 0 and fast["tlbs"]["DTLB"]["accesses"] == 0


def test_sliced_llc_matches_reference():
    platform = load_platform("westmere", ["l3.size_kb=768", "l2.size_kb=64"])
    fast, ref = both(platform, small_trace(9, n=8000), seed=9)
    assert_same(fast, ref)


kinds = st.sampled_from([0, 1, 2, 3])


@st.composite
def raw_traces(draw):
    """Structured and random accesses, including line- and page-straddling ones and 64-bit addresses."""
    n = draw(st.integers(1, 300))
    base = draw(st.sampled_from([0x1000, 0x7FFF_FFFF_F000, 0xFFFF_FFFF_FFE0_0000]))
    span = draw(st.sampled_from([1 << 10, 1 << 14, 1 << 20]))
    offs = draw(st.lists(st.integers(0, span), min_size=n, max_size=n))
    sizes = draw(st.lists(st.sampled_from([1, 2, 4, 8, 16, 33, 64]), min_size=n, max_size=n))
    ks = draw(st.lists(kinds, min_size=n, max_size=n))
    return Trace(np.fromiter((base + o for o in offs), dtype=np.uint64, count=n), np.array(sizes, dtype=np.uint16),
                 np.array(ks, dtype=np.uint8))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw_traces(), st.sampled_from(["mpc7447a", "nehalem", "z10"]), st.integers(0, 3), st.integers(0, 3),
       st.sampled_from([None, 1, 7]), st.booleans())
def test_property_matches_reference_on_arbitrary_traces(trace, name, seed, engines, spacing, streamer):
    small = ["l1d.size_kb=4", "l1i.size_kb=4"] if name != "z10" else []
    if streamer and name != "z10":   # the L2 streamer, timed on the record clock: prefetched lines in flight and
        # the memory channel's queue
        small += ["l2.prefetchers=['adjacent_sector', 'adjacent_line', 'streamer']", "l2.streamer_streams=2",
                  "memory.prefetch_arrival=latency", "memory.queueing=bandwidth"]
    # prefetch engines on the levels with prefetchers (L1D of the Xeon and the z10, the 7447A's L2)
    platform = load_platform(name, small + [f"l1d.prefetch_engines={engines}", f"l2.prefetch_engines={engines}"])
    hierarchy = MemoryHierarchy(platform, seed=seed).run(trace.addrs, trace.sizes, trace.kinds,
                                                         cycles_per_record=spacing, timed=streamer)
    ref = RefHierarchy(platform, seed=seed).run(trace.addrs, trace.sizes, trace.kinds, spacing, streamer)
    assert_same(hierarchy.counters(), ref.counters())
    assert_invalid_slots_clear(hierarchy)


# ----------------------------------------------------------------------- analytic answers
def lru_cache(size_kb, ways, line=64, **extra):
    """A one-level LRU data cache on the 7447A frame, TLB effects removed by one huge page."""
    ov = [f"l1d.size_kb={size_kb}", f"l1d.associativity={ways}", f"l1d.line_bytes={line}", "l1d.replacement=lru",
          "l1d.prefetchers=[]", "l2.prefetchers=[]", "l2.line_bytes=64", "l2.sector_bytes=64",
          "l2.size_kb=8192", "l2.associativity=8"]
    return load_platform("mpc7447a", ov + [f"{k}={v}" for k, v in extra.items()])


def loads(addrs, size=8):
    addrs = np.asarray(addrs, dtype=np.uint64)
    return Trace(addrs, np.full(len(addrs), size, np.uint16), np.ones(len(addrs), np.uint8))


def test_cyclic_sweep_larger_than_lru_cache_misses_every_time():
    platform = lru_cache(4, 4, line=32)            # 32 sets x 4 ways
    lines = 160                                    # 5 lines cycle through every 4-way set
    addrs = np.tile(np.arange(lines) * 32, 20) + 0x100000
    tr = loads(addrs)
    l1d = MemoryHierarchy(platform).run(tr.addrs, tr.sizes, tr.kinds).counters()["levels"]["L1D"]
    assert l1d["load_accesses"] == len(addrs)
    assert l1d["load_misses"] == len(addrs)


def test_working_set_that_fits_hits_after_warmup():
    platform = lru_cache(4, 4, line=32)
    lines = 100
    addrs = np.tile(np.arange(lines) * 32, 20) + 0x100000
    tr = loads(addrs)
    l1d = MemoryHierarchy(platform).run(tr.addrs, tr.sizes, tr.kinds).counters()["levels"]["L1D"]
    assert l1d["load_misses"] == lines


def test_page_stride_touches_one_tlb_entry_per_access():
    platform = load_platform("mpc7447a")
    addrs = 0x20000000 + np.arange(100) * 4096     # 100 pages < 128 entries
    tr = loads(np.tile(addrs, 3))
    dtlb = MemoryHierarchy(platform).run(tr.addrs, tr.sizes, tr.kinds).counters()["tlbs"]["DTLB"]
    assert dtlb["accesses"] == 300
    assert dtlb["misses"] == 100                  # one entry per page, all reused afterwards
    assert dtlb["walks"] == 100


def test_straddling_access_is_one_access_and_two_line_fetches():
    platform = lru_cache(4, 4, line=32)
    tr = loads([0x100000 + 28], size=8)           # bytes 28..35 cross a 32-byte line
    c = MemoryHierarchy(platform).run(tr.addrs, tr.sizes, tr.kinds).counters()
    assert c["levels"]["L1D"]["load_accesses"] == 1
    assert c["levels"]["L1D"]["load_misses"] == 1
    assert c["levels"]["L1D"]["straddling_accesses"] == 1
    assert c["levels"]["L2"]["load_accesses"] == 2


def test_64bit_addresses_are_not_truncated():
    platform = lru_cache(4, 4, line=32)
    lo, hi = 0x0000_1000_0000_0040, 0xFFFF_1000_0000_0040     # same low 48 bits
    tr = loads([lo, hi, lo, hi])
    c = MemoryHierarchy(platform).run(tr.addrs, tr.sizes, tr.kinds).counters()
    assert c["levels"]["L1D"]["load_misses"] == 2


def test_dirty_evictions_are_written_back():
    platform = lru_cache(1, 1, line=32)           # 32 lines, direct mapped
    addrs = np.arange(64) * 32 + 0x100000         # 64 lines: the second half evicts the first
    tr = Trace(addrs.astype(np.uint64), np.full(64, 8, np.uint16), np.full(64, 2, np.uint8))
    c = MemoryHierarchy(platform).run(tr.addrs, tr.sizes, tr.kinds).counters()
    assert c["levels"]["L1D"]["writebacks"] == 32
    assert c["levels"]["L2"]["writebacks_received"] == 32


def test_sector_prefetch_of_the_7447a_l2_fetches_the_other_half():
    platform = load_platform("mpc7447a")
    tr = loads([0x100000, 0x100000 + 32])         # the two 32-byte halves of one 64-byte L2 line
    c = MemoryHierarchy(platform).run(tr.addrs, tr.sizes, tr.kinds).counters()
    l2 = c["levels"]["L2"]
    assert l2["prefetches_issued"] >= 1
    assert l2["load_misses"] == 1                 # the second half was prefetched
    assert l2["prefetches_useful"] == 1


def test_doubling_l2_never_increases_l2_misses_under_lru():
    mixed = small_trace(3, n=20000, instr=0.0)
    tr = Trace(mixed.addrs, mixed.sizes, np.ones(len(mixed), np.uint8))   # loads: no writebacks
    base = ["l2.replacement=lru", "l2.prefetchers=[]"]
    small = MemoryHierarchy(load_platform("mpc7447a", base + ["l2.size_kb=256"])).run(tr.addrs, tr.sizes, tr.kinds)
    large = MemoryHierarchy(load_platform("mpc7447a", base + ["l2.size_kb=512", "l2.associativity=16"])).run(
        tr.addrs, tr.sizes, tr.kinds)
    assert large.counters()["levels"]["L2"]["misses"] <= small.counters()["levels"]["L2"]["misses"]


def test_same_seed_same_counters_and_seed_changes_random_policy():
    tr = small_trace(4)
    platform = load_platform("mpc7447a", ["l2.replacement=random", "l2.size_kb=32"])
    a = MemoryHierarchy(platform, seed=1).run(tr.addrs, tr.sizes, tr.kinds).counters()
    b = MemoryHierarchy(platform, seed=1).run(tr.addrs, tr.sizes, tr.kinds).counters()
    c = MemoryHierarchy(platform, seed=2).run(tr.addrs, tr.sizes, tr.kinds).counters()
    assert a == b
    assert a["levels"]["L2"]["misses"] != c["levels"]["L2"]["misses"]


def test_chunked_runs_equal_one_run():
    tr = small_trace(8)
    platform = load_platform("harpertown")
    one = MemoryHierarchy(platform).run(tr.addrs, tr.sizes, tr.kinds).counters()
    chunked = MemoryHierarchy(platform).run(tr.addrs, tr.sizes, tr.kinds, chunk=777).counters()
    assert one == chunked


def test_walk_pollution_switch_changes_cache_traffic_not_tlb_counts():
    tr = synthetic_trace([Stream("random", 1.0, footprint_kb=8192, access_bytes=8)], 20000, seed=2)
    on = MemoryHierarchy(load_platform("mpc7447a")).run(tr.addrs, tr.sizes, tr.kinds).counters()
    off = MemoryHierarchy(load_platform("mpc7447a", ["page_walk.pollute=false"])).run(
        tr.addrs, tr.sizes, tr.kinds).counters()
    same = ("accesses", "misses", "walks", "walk_memory_accesses")
    assert [on["tlbs"]["DTLB"][k] for k in same] == [off["tlbs"]["DTLB"][k] for k in same]
    assert on["levels"]["L1D"]["walk_accesses"] > 0 and off["levels"]["L1D"]["walk_accesses"] == 0
    # cache-inhibited page tables: every walk load goes to memory
    assert off["tlbs"]["DTLB"]["walk_accesses_to_memory"] == off["tlbs"]["DTLB"]["walk_memory_accesses"]
    assert off["levels"]["L1D"]["load_misses"] <= on["levels"]["L1D"]["load_misses"]


def test_lru_and_fifo_stamps_survive_clock_wraparound():
    """Replacement stamps are 32-bit: before a level's clock would wrap, every set's stamps are renumbered in
    the same order.  Pushing the clocks to the edge before every chunk forces many renumberings; the counts
    must still equal the reference's."""
    from whatif.simulator.memory import state as L

    tr = small_trace(12, n=12000)
    platform = load_platform("mpc7447a", ["l1d.replacement=lru", "l1i.replacement=fifo", "l2.replacement=lru",
                                          "l2.size_kb=32", "l1d.size_kb=4"])
    h = MemoryHierarchy(platform, seed=12)
    clocks = L.views(h.state.S).N[:len(h.level_names), L.CN_CLOCK]
    for start in range(0, len(tr), 400):
        clocks[:] = np.maximum(clocks, L.STAMP_MAX - 150)
        stop = start + 400
        h.run(tr.addrs[start:stop], tr.sizes[start:stop], tr.kinds[start:stop])
    assert (clocks < 1000).any()                  # a renumbering happened in the last chunk
    ref = RefHierarchy(platform, seed=12).run(tr.addrs, tr.sizes, tr.kinds).counters()
    assert_same(h.counters(), ref)


# ----------------------------------------------------------------------- prefetch engines
def sector_misses_every(gap, lines, engines):
    """Loads of the first sector of ``lines`` distinct 7447A L2 lines, each followed by ``gap - 1`` L1D hits
    (the same address), so miss j is record j * gap, i.e. cycle j * gap; every miss makes the L2 prefetch
    the other sector from memory on one of ``engines`` engines."""
    platform = load_platform("mpc7447a", [f"l2.prefetch_engines={engines}"])
    addrs = np.repeat(0x4000000 + 64 * np.arange(lines), gap)
    tr = loads(addrs)
    fast = MemoryHierarchy(platform).run(tr.addrs, tr.sizes, tr.kinds, cycles_per_record=1).counters()
    ref = RefHierarchy(platform).run(tr.addrs, tr.sizes, tr.kinds, 1).counters()
    assert_same(fast, ref)
    return platform.memory.latency_cycles, fast["levels"]["L2"]


@pytest.mark.parametrize("engines", [1, 3])
def test_misses_faster_than_memory_drop_all_but_engines_per_latency(engines):
    # one miss per cycle: an engine taken at cycle t frees at t + 172 (memory supplies the sector), so in
    # every 172 cycles the first ``engines`` prefetches are issued and the rest are dropped
    lines = 600
    lat, l2 = sector_misses_every(1, lines, engines)
    issued = sum(1 for t in range(lines) if t % lat < engines)
    assert l2["load_misses"] == lines
    assert l2["prefetches_issued"] == issued
    assert l2["prefetches_dropped"] == lines - issued
    assert issued == {1: 4, 3: 12}[engines]       # periods start at cycles 0, 172, 344 and 516 (< 600)


def test_misses_no_faster_than_engines_can_serve_drop_nothing():
    lat = load_platform("mpc7447a").memory.latency_cycles
    gap = -(-lat // 3)                            # 3 engines, a miss every ceil(172 / 3) = 58 cycles
    _, l2 = sector_misses_every(gap, 40, 3)
    assert l2["prefetches_issued"] == 40 and l2["prefetches_dropped"] == 0
    _, l2 = sector_misses_every(gap - 1, 40, 3)   # one cycle faster: the fourth miss finds all three busy
    assert l2["prefetches_dropped"] > 0


def test_unlimited_engines_never_drop():
    _, l2 = sector_misses_every(1, 300, 0)
    assert l2["prefetches_issued"] == 300 and l2["prefetches_dropped"] == 0


def test_time_continues_across_chunked_runs():
    platform = load_platform("mpc7447a")
    tr = loads(0x4000000 + 64 * np.arange(400))
    one = MemoryHierarchy(platform).run(tr.addrs, tr.sizes, tr.kinds, cycles_per_record=1).counters()
    h = MemoryHierarchy(platform)
    for start in range(0, 400, 50):                # separate calls: record k is still cycle k
        h.run(tr.addrs[start:start + 50], tr.sizes[start:start + 50], tr.kinds[start:start + 50],
              cycles_per_record=1)
    assert h.counters() == one
    assert one["levels"]["L2"]["prefetches_dropped"] == 400 - 9     # cycles 0-2, 172-174, 344-346


def test_core_runs_give_the_engines_the_core_cycle():
    """Through the core (memport sets the cycle of each access): a chain of dependent loads, each issued
    after the previous one's memory latency, never finds the 7447A's three L2 engines busy; the same
    loads independent issue a few cycles apart and drop prefetches, as the same addresses do in a trace
    run packed one access per cycle."""
    from whatif.simulator.core import Core
    from whatif.simulator.isa import OP_LOAD, InstrBlock

    platform = load_platform("mpc7447a")
    n = 60
    addrs = 0x4000000 + 64 * np.arange(n)          # the first sector of 60 distinct L2 lines

    def run(dependent):
        b = InstrBlock.empty(n)
        for i in range(n):
            b.op[i], b.pc[i], b.size[i] = OP_LOAD, 0x400000 + 4 * (i % 8), 4      # one I-cache line
            b.dst[i], b.src1[i], b.src2[i] = 1, -1, -1
            b.areg[i] = 1 if dependent else -1       # dependent: the address comes from the previous load
            b.mem_addr[i], b.mem_size[i] = addrs[i], 8
        core = Core(platform, MemoryHierarchy(platform, seed=1))
        core.run(b)
        return core.counters()

    dep, ind = run(True), run(False)
    # a trace run first (its clock is the record index x spacing, far beyond the core's cycles) leaves
    # the engines free: the dependent chain still drops nothing
    h = MemoryHierarchy(platform, seed=1)
    warm = loads(0x9000000 + 64 * np.arange(5000))
    h.run(warm.addrs, warm.sizes, warm.kinds)
    before = h.counters()["levels"]["L2"]["prefetches_dropped"]
    core = Core(platform, h)
    b = InstrBlock.empty(n)
    for i in range(n):
        b.op[i], b.pc[i], b.size[i] = OP_LOAD, 0x400000 + 4 * (i % 8), 4
        b.dst[i], b.src1[i], b.src2[i], b.areg[i] = 1, -1, -1, 1
        b.mem_addr[i], b.mem_size[i] = addrs[i], 8
    core.run(b)
    assert h.counters()["levels"]["L2"]["prefetches_dropped"] == before
    assert dep["cycles"] > n * platform.memory.latency_cycles            # every load waits for memory
    assert dep["memory"]["levels"]["L2"]["prefetches_dropped"] == 0
    assert dep["memory"]["levels"]["L2"]["prefetches_issued"] == n + 1  # + the instruction line's sector
    assert ind["memory"]["levels"]["L2"]["prefetches_dropped"] > 0
    tr = loads(addrs)
    trace = MemoryHierarchy(platform, seed=1).run(tr.addrs, tr.sizes, tr.kinds, cycles_per_record=1).counters()
    assert trace["levels"]["L2"]["prefetches_dropped"] == n - 3


def test_untimed_traces_space_records_by_the_memory_latency():
    # the default: a record per memory latency, so the 7447A's one sector prefetch per miss always finds
    # an engine free (one engine would do), whatever the misses' density in the trace
    platform = load_platform("mpc7447a", ["l2.prefetch_engines=1"])
    tr = loads(0x4000000 + 64 * np.arange(300))
    fast, ref = both(platform, tr)
    assert_same(fast, ref)
    assert fast["levels"]["L2"]["prefetches_issued"] == 300 and fast["levels"]["L2"]["prefetches_dropped"] == 0


def test_cycles_per_record_must_be_positive():
    from whatif.simulator.errors import SimulatorInputError

    tr = loads(0x4000000 + 64 * np.arange(3))
    with pytest.raises(SimulatorInputError, match="cycles_per_record"):
        MemoryHierarchy(load_platform("mpc7447a")).run(tr.addrs, tr.sizes, tr.kinds, cycles_per_record=0)


@pytest.mark.parametrize("name", ["mpc7447a", "nehalem"])
def test_flushed_caches_miss_as_cold_ones_do(name):
    """After ``flush_caches`` a working set that fitted in L1 is read from memory again, line for line and
    walk for walk, as on a cold hierarchy; ``memory_demand_reads`` counts those reads (prefetches apart)."""
    n = 64                          # a line on each of 64 pages: no prefetcher crosses a page
    addrs = np.uint64(0x1000_0000) + np.uint64(4096 + 64) * np.arange(n, dtype=np.uint64)
    sizes, kinds = np.full(n, 8, np.uint16), np.ones(n, np.uint8)
    cold = MemoryHierarchy(load_platform(name))
    cold.run(addrs, sizes, kinds)
    first = cold.memory_demand_reads()
    c = cold.counters()["memory"]
    assert first == c["load_reads"] + c["walk_reads"] + c["instr_reads"] + c["store_reads"] >= n
    cold.run(addrs, sizes, kinds)
    assert cold.memory_demand_reads() == first                     # warm: nothing from memory
    cold.flush_caches()
    cold.run(addrs, sizes, kinds)
    assert cold.memory_demand_reads() == 2 * first                 # flushed: every read again
    assert cold.counters()["tlbs"][list(cold.counters()["tlbs"])[-1]]["walks"] >= 2


def one_pc_loads(stride, n, base=0x200000, pc=0x400000):
    """``n`` loads by one instruction (an ifetch of ``pc`` before each), ``stride`` bytes apart."""
    addrs = np.empty(2 * n, np.uint64)
    addrs[0::2] = pc
    addrs[1::2] = base + stride * np.arange(n, dtype=np.uint64)
    kinds = np.tile(np.array([0, 1], np.uint8), n)
    return Trace(addrs, np.full(2 * n, 4, np.uint16), kinds)


@pytest.mark.parametrize("stride, covered", [(96, True), (176, True), (2048, True), (2112, False), (24, True)])
def test_ip_stride_follows_byte_strides_up_to_2kb(stride, covered):
    # 96 and 176 bytes cross 1 or 2 lines (2 or 3) per access: no line stride repeats twice in a row, but
    # the byte stride does; beyond 2 KB the prefetcher does not follow (Intel ORM)
    platform = load_platform("nehalem", ["caches.L1D.prefetchers=['ip_stride']", "caches.L2.prefetchers=[]"])
    n = 4096 // stride * 8 if stride <= 4096 else 64       # within 8 pages
    n = max(n, 64)
    tr = one_pc_loads(stride, n)
    fast, ref = both(platform, tr)
    assert_same(fast, ref)
    l1d = fast["levels"]["L1D"]
    lines = len(np.unique(tr.addrs[1::2] // 64))
    if covered:
        # per 4 KB page: the first line is missed, and the prefetcher must see two equal strides first
        pages = len(np.unique(tr.addrs[1::2] // 4096))
        assert l1d["prefetches_issued"] >= lines - 3 * pages
        assert l1d["load_misses"] <= 3 * pages
    else:
        assert l1d["prefetches_issued"] == 0
        assert l1d["load_misses"] == lines


def channel_reference(bookings, units, bucket_bits=6, frac=16):
    """The memory channel's calendar, slowly: per booking (now, bytes), the first bucket from now's with room
    takes what fits, the rest spills into the next; the wait is from now to where that bucket's earlier
    bookings end."""
    cap = 1 << (bucket_bits + frac)
    used: dict[int, int] = {}
    waits = []
    for now, nbytes in bookings:
        left, b, start = nbytes * units, now >> bucket_bits, None
        while left:
            free = cap - used.get(b, 0)
            if free > 0:
                if start is None:
                    start = (b << bucket_bits) + (used.get(b, 0) >> frac)
                take = min(free, left)
                used[b] = used.get(b, 0) + take
                left -= take
            b += 1
        waits.append(max(0, start - now))
    return waits, used


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5000), st.sampled_from([8, 32, 64, 128, 256])), min_size=1, max_size=300),
       st.sampled_from(["nehalem", "mpc7447a", "z10"]))
def test_memory_channel_matches_reference_and_never_exceeds_its_bandwidth(bookings, name):
    from whatif.simulator.memory import kernel as MK
    from whatif.simulator.memory import state as L
    h = MemoryHierarchy(load_platform(name, ["memory.queueing=bandwidth"]))
    S = h.state.S
    units = int(S[L.G_CH_UNITS])
    p = h.platform
    assert units / (1 << L.CH_FRAC) >= p.clock_ghz / p.memory.bandwidth_gb_s          # never faster
    waits = [MK.book_channel(S, now, nbytes) for now, nbytes in bookings]
    ref_waits, used = channel_reference(bookings, units)
    assert waits == ref_waits
    assert max(used.values()) <= 1 << (L.CH_BUCKET_BITS + L.CH_FRAC)
    assert h.channel_bytes() == sum(b for _, b in bookings)
    # bookings all made at one time go out back to back, each a transfer time after the one before
    h = MemoryHierarchy(load_platform(name, ["memory.queueing=bandwidth"]))
    first = [MK.book_channel(h.state.S, 100, 64) for _ in range(50)]
    assert first[0] == 0 and all(0 <= b - a <= 64 * units / (1 << L.CH_FRAC) + 1 for a, b in zip(first, first[1:]))
    assert first[-1] == pytest.approx(49 * 64 * units / (1 << L.CH_FRAC), abs=64)


def channel_ring_reference(bookings, units, bucket_bits=6, frac=16, buckets=4096):
    """The kernel's calendar, slowly: a ring of ``buckets`` (bucket number, time taken) slots that looks that many
    buckets ahead, walked bucket by bucket from now's on every booking (a slot holding another bucket is
    taken afresh; a transfer with no room in the window waits until the window has passed and is not
    booked).  Returns the waits and the ring."""
    cap = 1 << (bucket_bits + frac)
    ring = [[0, 0] for _ in range(buckets)]
    waits = []
    for now, nbytes in bookings:
        left, b0, start = nbytes * units, now >> bucket_bits, None
        for b in range(b0, b0 + buckets):
            slot = ring[b % buckets]
            if slot[0] != b:
                slot[:] = [b, 0]
            if slot[1] < cap:
                if start is None:
                    start = (b << bucket_bits) + (slot[1] >> frac)
                take = min(cap - slot[1], left)
                slot[1] += take
                left -= take
                if left == 0:
                    break
        if start is None:
            start = (b0 + buckets) << bucket_bits
        waits.append(max(0, start - now))
    return waits, ring


@st.composite
def channel_bookings(draw):
    """Bookings whose clock mostly creeps forward, sometimes steps back (an out-of-order core), sometimes
    jumps back past the calendar's reach, and whose transfers may be large enough to book the calendar full."""
    now, out = draw(st.integers(0, 1 << 20)), []
    for _ in range(draw(st.integers(1, 120))):
        move = draw(st.sampled_from(["creep", "creep", "creep", "back", "far back", "far ahead"]))
        if move == "creep":
            now += draw(st.integers(0, 200))
        elif move == "back":
            now = max(0, now - draw(st.integers(1, 5000)))
        elif move == "far back":
            now = max(0, now - draw(st.integers(200_000, 600_000)))
        else:
            now += draw(st.integers(200_000, 600_000))
        out.append((now, draw(st.sampled_from([64, 4096, 65536, 1 << 20]))))
    return out


@settings(max_examples=60, deadline=None)
@given(channel_bookings(), st.sampled_from(["nehalem", "mpc7447a"]))
def test_memory_channel_books_as_the_walk_over_every_bucket_does(bookings, name):
    """The calendar's run of full buckets is passed in one step (a backlog, as functional warming at too low a
    CPI makes, once cost a walk over all 4,096 buckets per booking); the waits and the calendar must be those of
    the walk over every bucket, backlogs past the calendar's reach and bookings out of time order included."""
    from whatif.simulator.memory import kernel as MK
    from whatif.simulator.memory import state as L
    h = MemoryHierarchy(load_platform(name, ["memory.queueing=bandwidth"]))
    S = h.state.S
    waits = [MK.book_channel(S, now, nbytes) for now, nbytes in bookings]
    ref_waits, ring = channel_ring_reference(bookings, int(S[L.G_CH_UNITS]), L.CH_BUCKET_BITS, L.CH_FRAC,
                                             L.CH_BUCKETS)
    assert waits == ref_waits
    at = int(S[L.G_CH_RING])
    assert S[at:at + 2 * L.CH_BUCKETS].reshape(-1, 2).tolist() == ring


def test_a_backlog_past_the_calendar_is_passed_in_one_step():
    """Bookings far beyond the channel's bandwidth fill the whole calendar; every further booking then waits
    for it to pass, without being booked, and costs one step, not a walk over 4,096 full buckets."""
    from whatif.simulator.memory import kernel as MK
    from whatif.simulator.memory import state as L
    h = MemoryHierarchy(load_platform("mpc7447a", ["memory.queueing=bandwidth"]))
    S = h.state.S
    per_bucket = (1 << (L.CH_BUCKET_BITS + L.CH_FRAC)) // int(S[L.G_CH_UNITS])      # bytes a bucket carries
    for _ in range(L.CH_BUCKETS + 10):
        MK.book_channel(S, 1000, per_bucket + 1)
    first = 1000 >> L.CH_BUCKET_BITS
    assert MK.book_channel(S, 1000, 64) == ((first + L.CH_BUCKETS) << L.CH_BUCKET_BITS) - 1000
    assert (S[L.G_CH_RUN_LO], S[L.G_CH_RUN_HI]) == (first, first + L.CH_BUCKETS)
    # a bucket later the calendar reaches one bucket further, into the slot the first bucket held
    assert MK.book_channel(S, 1064, 8) == ((first + L.CH_BUCKETS) << L.CH_BUCKET_BITS) - 1064
    assert (S[L.G_CH_RUN_LO], S[L.G_CH_RUN_HI]) == (first + 1, first + L.CH_BUCKETS)
    # that first bucket has left the calendar: a booking back in it finds it empty (the ring's walk would too)
    assert MK.book_channel(S, 1000, 8) == 0


def test_without_queueing_the_channel_books_nothing():
    from whatif.simulator.memory import kernel as MK
    h = MemoryHierarchy(load_platform("nehalem", ["memory.queueing=none"]))
    assert [MK.book_channel(h.state.S, 0, 64) for _ in range(10)] == [0] * 10
    assert h.channel_bytes() == 0 and h.channel_busy_until() == 0


STREAMER = ["caches.L1D.prefetchers=[]", "caches.L2.prefetchers=['streamer']", "caches.L3.size_kb=8192"]


@pytest.mark.parametrize("direction", [1, -1])
def test_streamer_follows_a_stream_within_each_4kb_region(direction):
    # per 4 KB region (64 lines): the first three lines miss (the second sets a direction, the third confirms
    # it); from then on the streamer stays ahead of the stream, two lines a request, and stops at the region's
    # end, so the other 61 lines are prefetched and hit
    platform = load_platform("nehalem", STREAMER)
    regions = 5
    lines = np.arange(64 * regions, dtype=np.uint64)
    if direction < 0:
        lines = lines[::-1]
    fast, ref = both(platform, loads(0x4000000 + 64 * lines))
    assert_same(fast, ref)
    l2 = fast["levels"]["L2"]
    assert l2["load_misses"] == 3 * regions
    assert l2["prefetches_issued"] == 61 * regions and l2["prefetches_useful"] == 61 * regions


def test_streamer_runs_no_further_ahead_than_its_distance():
    # a stream of 10 lines: lines 0-2 miss, and the eight requests 2-9 issue two lines each from line 3 on,
    # but never beyond the last request's line 9 + distance
    for distance, issued in ((20, 16), (4, 11)):
        platform = load_platform("nehalem", STREAMER + [f"caches.L2.streamer_distance={distance}"])
        fast, _ = both(platform, loads(0x4000000 + 64 * np.arange(10, dtype=np.uint64)))
        assert fast["levels"]["L2"]["prefetches_issued"] == issued


def test_streamer_replaces_its_least_recently_used_region():
    # two entries: regions A and B each take two steps, then A a third, which confirms its stream (two
    # prefetches) and makes B the least recently used; C's first request takes B's entry, so B's third step
    # finds none and starts afresh (taking A's): no more prefetches.  (Replacing A for C would let B's third
    # step confirm B's stream: two more.)
    platform = load_platform("nehalem", STREAMER + ["caches.L2.streamer_streams=2"])
    a, b, c = 0x4000000, 0x4000000 + 4096, 0x4000000 + 2 * 4096
    fast, ref = both(platform, loads(np.array([a, a + 64, b, b + 64, a + 128, c, b + 128], dtype=np.uint64)))
    assert_same(fast, ref)
    assert fast["levels"]["L2"]["prefetches_issued"] == 2


def test_timed_prefetch_below_the_l1s_is_ready_after_the_memory_latency():
    # the streamer prefetches lines 3 and 4 at cycle 0 (the third request); line 3 arrives in the L2 at cycle
    # memory latency - L2 latency: a demand at cycle t waits for the rest (its L2 hit then completes when the
    # prefetch arrives), one after that waits for nothing, and only the waiting demand counts a late prefetch
    from whatif.simulator.core import memport
    platform = load_platform("nehalem", STREAMER + ["memory.prefetch_arrival=latency", "memory.queueing=none"])
    mem_lat, l2_lat = platform.memory.latency_cycles, platform.caches["L2"].latency_cycles
    h = MemoryHierarchy(platform)
    state = tuple(h.state)
    base = 0x4000000
    for k in range(3):
        memport.data_outcome(state, np.uint64(base + 64 * k), 8, 1, 0x400000, 0)
    assert h.counters()["levels"]["L2"]["prefetches_issued"] == 2
    level, _, _ = memport.data_outcome(state, np.uint64(base + 64 * 3), 8, 1, 0x400000, 100)
    assert h.level_names[level] == "L2"
    assert memport.channel_wait_of(state) == mem_lat - l2_lat - 100
    memport.data_outcome(state, np.uint64(base + 64 * 4), 8, 1, 0x400000, mem_lat)
    assert memport.channel_wait_of(state) == 0
    assert h.counters()["levels"]["L2"]["late_prefetches"] == 1
    # untimed, the same prefetch is ready at once
    h = MemoryHierarchy(load_platform("nehalem", STREAMER + ["memory.prefetch_arrival=instant"]))
    state = tuple(h.state)
    for k in range(4):
        memport.data_outcome(state, np.uint64(base + 64 * k), 8, 1, 0x400000, 100 * (k == 3))
    assert memport.channel_wait_of(state) == 0 and h.counters()["levels"]["L2"]["late_prefetches"] == 0


def test_the_outcome_helpers_compile_one_copy_of_the_memory_kernel_for_any_integer_types():
    """``memport.data_outcome``/``fetch_outcome`` (the reference core's and the tests' way in) give their
    arguments the core's types: a plain ``int`` PC compiled a second copy of the whole data path."""
    from whatif.simulator.core import memport
    platform = load_platform("nehalem")
    outcomes = []
    for pc, addr, now in ((0x400000, 0x4000000, 0), (np.uint64(0x400000), np.uint64(0x4000000), np.int32(0))):
        h = MemoryHierarchy(platform)
        state = tuple(h.state)
        outcomes.append((memport.fetch_outcome(state, pc, 4, now), memport.data_outcome(state, addr, 8, 1, pc, now),
                         memport.data_outcome(state, addr, 8, 1, pc, now + 500),
                         h.counters()["levels"]["L1D"]))
    assert outcomes[0] == outcomes[1]
    names = h.level_names + ["memory"]
    assert (names[outcomes[0][1][0]], names[outcomes[0][2][0]]) == ("memory", "L1D")
    assert len(memport._data_outcome.signatures) == 1 and len(memport._fetch_outcome.signatures) == 1


def test_a_streamer_needs_requests_from_a_level_above():
    with pytest.raises(Exception, match="caches.L1D.prefetchers: a streamer follows the requests"):
        load_platform("nehalem", ["caches.L1D.prefetchers=['streamer']"])
