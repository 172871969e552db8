"""Ground-truth checks of the heap simulator and HBench:JGC for ``whatif validate``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from whatif.models.hbench import AppProfile, GcCostModel
from whatif.models.hbench.costs import GcCostResults
from whatif.scenarios.checks.registry import CheckResult, register_check
import math

from whatif.simulator.gc.behaviour import AllocBehaviour, load_behaviour
from whatif.simulator.gc.config import HeapConfig, heap_config
from whatif.simulator.gc.microbench import run_microbenchmark
from whatif.simulator.gc.minheap import GRANULE, find_min_heap
from whatif.simulator.gc.run import simulate_gc
from whatif.simulator.platform import Platform, load_platform, with_overrides

MB = 1024 * 1024


@register_check("gc: collection time grows linearly with heap size on an empty heap")
def empty_heap_linear(quick: bool) -> list[CheckResult]:
    platform = load_platform("mpc7447a")
    heaps = (1, 2, 3, 4) if quick else (2, 4, 6, 8, 12, 16)
    rows = []
    for h in heaps:
        rows += [r for r in run_microbenchmark(platform, h * MB, 16, 256, 28) if r["step"] == "empty"]
    x = np.array([r["heap_bytes"] for r in rows], float)
    y = np.array([r["gc_seconds"] for r in rows], float)
    slope, intercept = np.polyfit(x, y, 1)
    resid = y - (slope * x + intercept)
    r2 = 1 - (resid ** 2).sum() / ((y - y.mean()) ** 2).sum()
    return [CheckResult("gc: empty-heap GC time vs heap size, R^2 of a line", ">= 0.99", round(float(r2), 5),
                        r2 >= 0.99 and slope > 0,
                        f"slope {slope * MB * 1e3:.4f} ms/MB, intercept {intercept * 1e3:.4f} ms over {len(heaps)} heaps")]


# Prefetchers that run ahead of an ascending access stream: next_line (on a miss, the following
# lines), ip_stride (per load PC, the line a trained stride ahead) and the L2 streamer (per 4 KB region,
# up to 20 lines ahead).  On the sweep's header walk they turn demand misses into hits or partial waits,
# as many as the object stride happens to suit.  The knee of seed 003 Figures 5-3/5-6 is a demand-miss
# effect: it is measured with them off, and what they hide is measured beside it.
RUN_AHEAD_PREFETCHERS = ("next_line", "ip_stride", "streamer")
HEADER_BYTES = 4


def demand_granule(platform: Platform) -> int:
    """Bytes a demand miss brings in: per data-path level its line, or the aligned pair of lines where
    the level has the adjacent_line prefetcher (adjacent_sector only completes the line); the largest
    over the levels.  A walk whose objects are smaller than this shares each miss with other objects; larger ones
    pay one miss each -- where seed 003 puts the knee of C_dead and C_live."""
    granule = 0
    for name in platform.cache_chain("data"):
        c = platform.caches[name]
        span = c.line_bytes
        if "adjacent_line" in c.prefetchers:
            span = max(span, 2 * c.line_bytes)
        granule = max(granule, span)
    return granule


def without_run_ahead_prefetchers(platform: Platform) -> tuple[Platform, list[str]]:
    """The platform with the :data:`RUN_AHEAD_PREFETCHERS` removed from the data-path levels, and which were."""
    overrides, removed = [], []
    for name in platform.cache_chain("data"):
        c = platform.caches[name]
        kept = [p for p in c.prefetchers if p not in RUN_AHEAD_PREFETCHERS]
        if len(kept) != len(c.prefetchers):
            overrides.append((f"caches.{name}.prefetchers", kept))
            removed += [f"{name}.{p}" for p in c.prefetchers if p in RUN_AHEAD_PREFETCHERS]
    return (with_overrides(platform, overrides, source=platform.name) if overrides else platform), removed


def size_costs(platform: Platform, sizes: list[int], volume: int) -> GcCostResults:
    """The microbenchmark of seed 003 §5.3.2 at each payload size (two object counts filling half and all
    of ``volume`` bytes, 32 lists) and empty heaps at two sizes; the fitted cost functions."""
    rows = []
    for s in sizes:
        ob = (s + HEADER_BYTES + 7) // 8 * 8
        for frac in (0.5, 1.0):
            length = max(1, int(volume * frac / (32 * ob)))
            rows += run_microbenchmark(platform, int(volume * 1.3) + MB, 32, length, s)
    for h in (volume * 1.3 + MB, volume * 2.6 + MB):
        rows += [r for r in run_microbenchmark(platform, int(h), 32, 64, sizes[0]) if r["step"] == "empty"]
    return GcCostModel().fit(pd.DataFrame(rows))


@register_check("gc: C_dead and C_live knee at the platform's cache line size")
def knee_at_line(quick: bool) -> list[CheckResult]:
    """The knee of C_dead(s), C_live(s) at the payload that fills the platform's demand fetch granule
    (:func:`demand_granule`: the line, or the adjacent-line pair where the platform prefetches pairs),
    measured with the run-ahead prefetchers off; beside it, how much those hide."""
    out = []
    for name in ("mpc7447a",) if quick else ("mpc7447a", "harpertown"):
        shipped = load_platform(name)
        platform, removed = without_run_ahead_prefetchers(shipped)
        llc = max(platform.caches.values(), key=lambda c: c.size_kb)
        granule = demand_granule(platform)
        expected = granule - HEADER_BYTES                 # payload that fills the granule with the header
        top = max(132, 2 * granule - HEADER_BYTES)        # as many sizes past the knee as before it
        sizes = [12, 28, 44, 60, 76, 92, 108] if quick else list(range(12, top + 1, 8))
        volume = max(2 * int(llc.size_kb * 1024), 2 * MB) * (1 if quick else 2)
        costs = size_costs(platform, sizes, volume)
        how = (f"{granule}-byte demand granule ({llc.line_bytes}-byte lines"
               + (", adjacent-line pairs" if granule > llc.line_bytes else "") + ")"
               + (f", {', '.join(removed)} off" if removed else ""))
        for which in ("dead", "live"):
            k = costs.knee(which, max_size=top)
            out.append(CheckResult(f"gc: {name} C_{which}(s) stops rising at the {how}",
                                   expected, k, abs(k - expected) <= 8,
                                   f"per-object cost (ns) at {sizes[0]}..{sizes[-1]} step {sizes[1] - sizes[0]}: "
                                   + ", ".join(f"{v * 1e9:.0f}" for v in costs.table[f'c_{which}'])))
        if removed and not quick:
            line = platform.caches[platform.top_cache("data")].line_bytes
            probe = [line - HEADER_BYTES - 8, line - HEADER_BYTES, line + HEADER_BYTES]
            on = size_costs(shipped, probe, volume)
            off = costs.c_dead(probe)
            ratio = float(on.table["c_dead"].iloc[1] / off[1])
            out.append(CheckResult(f"gc: {name} with {', '.join(removed)} on, C_dead({probe[1]}) / with them off "
                                   "(run-ahead prefetchers hide the sweep's misses: why the knee is measured "
                                   "without them)", "< 0.5", round(ratio, 3), ratio < 0.5,
                                   f"C_dead (ns) at {probe}: on "
                                   + ", ".join(f"{v * 1e9:.0f}" for v in on.table["c_dead"])
                                   + "; off " + ", ".join(f"{v * 1e9:.0f}" for v in off)))
    return out


def _tiny_behaviour(live_mb: float) -> AllocBehaviour:
    return AllocBehaviour(name="planted", total_alloc_mb=8.0, bytecodes_millions=10.0, initial_live_mb=live_mb,
                          cluster_objects=2, phases=1,
                          lifetime={"immortal": 0.0, "phase": 0.0, "short": 1.0, "short_mean_kb": 16.0},
                          sizes=[(20, 20, 0.5, 1), (44, 44, 0.5, 2)])


@register_check("gc: a heap too small for the live data reports out of memory instead of looping")
def out_of_memory(quick: bool) -> list[CheckResult]:
    platform = load_platform("mpc7447a")
    b = _tiny_behaviour(live_mb=2.0)
    res = simulate_gc(b, heap_config(heap_bytes=1 * MB), platform, timed=False)
    ok = res.out_of_memory and len(res.collections) <= 3
    big = simulate_gc(b, heap_config(heap_bytes=4 * MB), platform, timed=False)
    return [CheckResult("gc: 2 MB of live data in a 1 MB heap: out of memory, collections before it",
                        "out of memory, <= 3", f"{'out of memory' if res.out_of_memory else 'ran'}, "
                                               f"{len(res.collections)}", ok,
                        f"live at the last collection {res.oom_live_bytes:,} bytes"),
            CheckResult("gc: the same in a 4 MB heap completes", "no out of memory", not big.out_of_memory,
                        not big.out_of_memory, f"{len(big.collections)} collections")]


def planted_min_heap_behaviour(live_bytes: int, payload: int, total_mb: float = 2.0) -> AllocBehaviour:
    """Start-up data of ``live_bytes`` that lives to the end, then objects of one payload that die as soon as
    they are allocated: every collection finds exactly the start-up data live (:func:`planted_min_heap`)."""
    return AllocBehaviour(name="planted", total_alloc_mb=total_mb, bytecodes_millions=1.0,
                          initial_live_mb=live_bytes / MB, initial_cluster_objects=8, cluster_objects=1, phases=1,
                          lifetime={"immortal": 0.0, "phase": 0.0, "short": 1.0, "short_mean_kb": 1e-6},
                          sizes=[(payload, payload, 1.0, 0)])


def planted_min_heap(b: AllocBehaviour, config: HeapConfig, scale: float = 1.0) -> int:
    """H_min of a :func:`planted_min_heap_behaviour` stream from first principles.  Its live data at every
    collection is the start-up's whole objects, L = ceil(initial / n) n for objects of n bytes (header and
    alignment included).  A collection must leave room for the failed request (one object) and at least
    ``overhead_free_ratio`` of the space free, else enough of them in a row end the run (the GC overhead
    limit): the smallest granule-multiple space s with s - L >= n and s - L >= ratio * s; a semispace
    collector needs that in each half."""
    lo, hi, _, _ = b.sizes[0]
    if len(b.sizes) != 1 or lo != hi:
        raise ValueError("planted_min_heap: the planted stream has one object size")
    n = (config.header_bytes + (lo + 3) // 4 * 4 + 7) // 8 * 8
    live = math.ceil(int(b.initial_live_mb * MB * scale) / n) * n
    ratio = config.overhead_free_ratio
    space = max(live + n, math.ceil(live / (1 - ratio) / GRANULE) * GRANULE)
    space = (space + GRANULE - 1) // GRANULE * GRANULE
    while space - live < ratio * space:            # the heap's own comparison, in floating point
        space += GRANULE
    while space - GRANULE - live >= max(n, ratio * (space - GRANULE)):
        space -= GRANULE
    return 2 * space if config.collector == "copying" else space


@register_check("gc: H_min found by bisection equals the planted minimum heap")
def planted_min_heap_check(quick: bool) -> list[CheckResult]:
    platform = load_platform("mpc7447a")
    out = []
    for live, payload in ((200_000, 20),) if quick else ((200_000, 20), (1_000_000, 60), (50_000, 124)):
        b = planted_min_heap_behaviour(live, payload)
        known = planted_min_heap(b, HeapConfig(heap_bytes=1 << 20))
        found = find_min_heap(b, platform, rel_tol=1e-6)
        out.append(CheckResult(f"gc: H_min of {live:,} live bytes in {payload}-byte objects (bytes)", known,
                               found.heap_bytes, found.heap_bytes == known and found.below_bytes == known - GRANULE,
                               f"{len(found.probes)} probes, {found.below_bytes:,} bytes ran out of memory"))
    return out


@register_check("gc: a fixed-size mark-sweep heap collects about allocation / (heap - live) times")
def collections_vs_heap(quick: bool) -> list[CheckResult]:
    platform = load_platform("mpc7447a")
    b = load_behaviour("specjvm98/jack")
    scale = 1 / 64 if quick else 1 / 16
    counts = []
    out = []
    for heap_mb in (16, 32, 64):
        res = simulate_gc(b, heap_config(heap_bytes=int(heap_mb * MB * scale)), platform, scale=scale, timed=False)
        n = len(res.collections)
        live = np.mean([c.live_bytes for c in res.collections]) if n else 0.0
        expected = res.allocated_bytes / (heap_mb * MB * scale - live)
        counts.append(n)
        out.append(CheckResult(f"gc: jack in a {heap_mb} MB heap (x{scale:g}), collections",
                               f"{expected:.1f} +- 20%", n, abs(n - expected) <= 0.2 * expected + 1,
                               f"allocated {res.allocated_bytes / MB:.1f} MB, mean live {live / MB:.2f} MB"))
    out.append(CheckResult("gc: collections fall as the heap grows", "decreasing", counts,
                           all(a > b for a, b in zip(counts, counts[1:])), "16, 32, 64 MB heaps"))
    return out


@register_check("hbench: planted cost functions are recovered and predict planted collections exactly")
def planted_hbench(quick: bool) -> list[CheckResult]:
    rng = np.random.default_rng(7)
    sizes = np.arange(12, 133, 8)
    c_fixed_a, c_fixed_b = 2e-4, 3.75e-3 / MB                  # seconds; seconds per byte (Table 5-4: 3.75 ms/MB)
    c_live = 7e-7 + 6e-9 * np.minimum(sizes, 60)                # rises to 60 bytes, flat after
    c_dead = 3e-7 + 4e-9 * np.minimum(sizes, 60)
    rows = []
    for h in (16, 32, 64):
        rows.append({"step": "empty", "heap_bytes": h * MB, "object_size": 28, "objects": 1000,
                     "gc_seconds": c_fixed_a + c_fixed_b * h * MB})
    heap = 64 * MB
    for s, cl, cd in zip(sizes, c_live, c_dead):
        for n in (100_000, 200_000, 300_000):
            base = c_fixed_a + c_fixed_b * heap
            rows.append({"step": "live", "heap_bytes": heap, "object_size": s, "objects": n, "gc_seconds": base + cl * n})
            rows.append({"step": "dead", "heap_bytes": heap, "object_size": s, "objects": n, "gc_seconds": base + cd * n})
    costs = GcCostModel(copy_bandwidth=1e8).fit(pd.DataFrame(rows))
    err_fit = max(np.abs(costs.table["c_live"] - c_live).max() / c_live.max(),
                  np.abs(costs.table["c_dead"] - c_dead).max() / c_dead.max(),
                  abs(costs.fixed.slope - c_fixed_b) / c_fixed_b)
    # planted application: random live/dead histograms, exact times from Eq. (1)
    logs, hists = [], []
    for gc in range(10 if quick else 40):
        nl = rng.integers(0, 5000, len(sizes))
        nd = rng.integers(0, 50000, len(sizes))
        copied = int(rng.integers(0, 2)) * 1_000_000
        t = c_fixed_a + c_fixed_b * 32 * MB + (c_live * nl).sum() + (c_dead * nd).sum() + copied / 1e8
        logs.append({"gc": gc, "duration_s": t, "heap_bytes": 32 * MB, "live_objects": nl.sum(),
                     "dead_objects": nd.sum(), "bytes_copied": copied, "explicit": False})
        hists.append(pd.DataFrame({"gc": gc, "object_size": sizes, "live": nl, "dead": nd}))
    prof = AppProfile.from_tables(pd.DataFrame(logs), pd.concat(hists), name="planted")
    res = costs.predict(prof, distribution="separate")
    worst = float(res.table["error_pct"].abs().max())
    return [CheckResult("hbench: planted C_fixed, C_live, C_dead recovered (max relative error)", "< 1e-9",
                        float(f"{err_fit:.3g}"), err_fit < 1e-9),
            CheckResult("hbench: planted collections predicted by Eq. (1) (max |error| %)", "< 1e-6",
                        float(f"{worst:.3g}"), worst < 1e-6, f"{len(logs)} collections with copying")]
