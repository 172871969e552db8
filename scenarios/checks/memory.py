"""Ground-truth checks of the memory hierarchy for ``whatif validate``: answers known analytically."""

from __future__ import annotations

import numpy as np

from whatif.scenarios.checks.registry import CheckResult, register_check
from whatif.simulator.memory.hierarchy import MemoryHierarchy
from whatif.simulator.platform import load_platform
from whatif.simulator.traces import Trace, mixed_streams, synthetic_trace


def _loads(addrs, size=8, kind=1) -> Trace:
    addrs = np.asarray(addrs, dtype=np.uint64)
    return Trace(addrs, np.full(len(addrs), size, np.uint16), np.full(len(addrs), kind, np.uint8))


def _run(platform, trace: Trace) -> dict:
    return MemoryHierarchy(platform).run(trace.addrs, trace.sizes, trace.kinds).counters()


def _lru_l1(size_kb: int, ways: int, line: int):
    return load_platform("mpc7447a", [f"l1d.size_kb={size_kb}", f"l1d.associativity={ways}",
                                      f"l1d.line_bytes={line}", "l1d.replacement=lru", "l2.prefetchers=[]"])


@register_check("cache: cyclic sweep over more lines than an LRU set holds misses every time")
def cyclic_sweep(quick: bool) -> CheckResult:
    platform = _lru_l1(4, 4, 32)                  # 32 sets x 4 ways
    lines = 32 * 5                                # five lines cycle through every 4-way set
    rounds = 5 if quick else 50
    addrs = np.tile(np.arange(lines) * 32, rounds) + 0x100000
    l1d = _run(platform, _loads(addrs))["levels"]["L1D"]
    ratio = l1d["load_misses"] / l1d["load_accesses"]
    return CheckResult("cache: cyclic LRU sweep, L1D miss ratio", 1.0, ratio, ratio == 1.0,
                       f"{lines} lines over a 128-line 4-way LRU cache, {rounds} rounds")


@register_check("cache: a working set that fits hits after warm-up")
def fits_after_warmup(quick: bool) -> CheckResult:
    platform = _lru_l1(4, 4, 32)
    lines = 100
    rounds = 5 if quick else 50
    addrs = np.tile(np.arange(lines) * 32, rounds) + 0x100000
    l1d = _run(platform, _loads(addrs))["levels"]["L1D"]
    return CheckResult("cache: fitting working set, L1D misses", lines, l1d["load_misses"],
                       l1d["load_misses"] == lines, f"{lines} lines in a 128-line cache, {rounds} rounds: "
                                                     "only the compulsory misses")


@register_check("tlb: a page-sized stride touches one TLB entry per access")
def page_stride(quick: bool) -> list[CheckResult]:
    out = []
    for name in ("mpc7447a",) if quick else ("mpc7447a", "nehalem", "z10"):
        platform = load_platform(name)
        tlb = platform.tlb_chain("data")[0]
        entries = platform.tlbs[tlb].entries
        pages = entries // 2
        page = platform.memory.page_kb * 1024
        addrs = np.tile(0x20000000 + np.arange(pages) * page, 4)
        c = _run(platform, _loads(addrs))["tlbs"][tlb]
        out.append(CheckResult(f"tlb: page stride on {name} {tlb}, misses", pages, c["misses"],
                               c["misses"] == pages, f"{pages} pages x 4 rounds, {entries}-entry TLB"))
    return out


@register_check("cache: doubling the L2 never increases L2 misses under LRU")
def doubling_l2(quick: bool) -> list[CheckResult]:
    mixed = synthetic_trace(mixed_streams(), 50_000 if quick else 400_000, seed=5)
    # loads only: a writeback that hits does not promote its line, which a stack algorithm would need
    trace = Trace(mixed.addrs, mixed.sizes, np.ones(len(mixed), np.uint8))
    base = ["l2.replacement=lru", "l2.prefetchers=[]"]
    out = []
    for size in (256, 512) if quick else (128, 256, 512, 1024):
        small = _run(load_platform("mpc7447a", base + [f"l2.size_kb={size}"]), trace)["levels"]["L2"]["misses"]
        large = _run(load_platform("mpc7447a", base + [f"l2.size_kb={2 * size}", "l2.associativity=16"]),
                     trace)["levels"]["L2"]["misses"]
        out.append(CheckResult(f"cache: L2 {size} KB -> {2 * size} KB, misses do not increase",
                               f"<= {small}", large, large <= small,
                               "doubling the ways at the same number of sets keeps LRU's inclusion property"))
    return out


@register_check("cache: a line-straddling access is one access and two line fetches")
def straddle(quick: bool) -> CheckResult:
    platform = _lru_l1(4, 4, 32)
    c = _run(platform, _loads([0x100000 + 28], size=8))
    measured = (c["levels"]["L1D"]["load_accesses"], c["levels"]["L2"]["load_accesses"])
    return CheckResult("cache: straddling access (L1D accesses, L2 accesses)", (1, 2), measured,
                       measured == (1, 2), "cachegrind's convention")


@register_check("cache: the MPC7447A L2 prefetches the other sector of a missed line")
def sector_prefetch(quick: bool) -> CheckResult:
    platform = load_platform("mpc7447a")
    lines = 64
    addrs = np.concatenate([[0x100000 + 64 * i, 0x100000 + 64 * i + 32] for i in range(lines)])
    l2 = _run(platform, _loads(addrs))["levels"]["L2"]
    measured = (l2["load_misses"], l2["prefetches_useful"])
    return CheckResult("cache: 7447A L2 sector prefetch (misses, useful prefetches)", (lines, lines), measured,
                       measured == (lines, lines), "each line: the first half misses, the second was prefetched")
