"""Ground-truth checks of the core timing model and branch predictors for ``whatif validate``.

Microbenchmarks whose answers follow from first principles (issue 3, item 7), each on every platform it
applies to.  Counters are measured after a warm-up part of each stream (cold caches, TLBs and
predictors excluded), as deltas of the cumulative counters.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from whatif.scenarios.checks.registry import CheckResult, register_check
from whatif.simulator.core import Core
from whatif.simulator.core import microbench as MB
from whatif.simulator.core import timing as TM
from whatif.simulator.isa import OP_ALU, OP_LOAD, InstrBlock
from whatif.simulator.platform import load_platform, platform_names, with_overrides

PLATFORMS = tuple(platform_names())


@lru_cache(maxsize=None)
def _platform(name: str):
    return load_platform(name)


def _measure(platform, block: InstrBlock, warm: int) -> tuple[dict, dict]:
    """Counter and cycle-stack deltas over ``block[warm:]`` after running ``block[:warm]``."""
    core = Core(platform, seed=1)
    core.run(block.slice(0, warm))
    c0, s0 = core.counters(memory=False), core.cycle_stack()
    core.run(block, start=warm)
    c1, s1 = core.counters(memory=False), core.cycle_stack()
    return {k: c1[k] - c0[k] for k in c1}, {k: s1[k] - s0[k] for k in s1}


@register_check("core: a dependent chain of single-cycle ops runs at CPI 1")
def dependent_chain(quick: bool) -> list[CheckResult]:
    out = []
    n = 20_000 if quick else 200_000
    for name in PLATFORMS:
        p = _platform(name)
        d, _ = _measure(p, MB.dependent_chain(n, p.isa), n // 2)
        cpi = d["cycles"] / d["instructions"]
        out.append(CheckResult(f"core: dependent ALU chain on {name}, CPI", 1.0, round(cpi, 4), abs(cpi - 1) <= 0.01,
                               "each op reads the previous one's result; ALU latency 1 (one loop jump per 512 ops)"))
    return out


def independent_expectation(platform) -> tuple[float, dict[int, int]]:
    """Mix and expected CPI of the independent-ops benchmark: 3 ALU ops per load, so that neither the
    ALUs nor the load/store units limit a 4-wide core; CPI = max(1 / width, share_u / count_u)."""
    core = platform.core
    width = min(core.fetch_width, core.dispatch_width, core.issue_width, core.retire_width)
    if core.kind == "in_order":
        width = min(width, core.group_size)
    mix = {OP_ALU: 3, OP_LOAD: 1}
    alu, lsu = core.units["ialu"].count, core.units["lsu"].count
    return max(1 / width, 0.75 / alu, 0.25 / lsu), mix


@register_check("core: independent ops run at 1/width")
def independent_ops(quick: bool) -> list[CheckResult]:
    out = []
    n = 20_000 if quick else 200_000
    for name in PLATFORMS:
        p = _platform(name)
        expected, mix = independent_expectation(p)
        d, _ = _measure(p, MB.independent_ops(n, p.isa, mix), n // 2)
        cpi = d["cycles"] / d["instructions"]
        out.append(CheckResult(f"core: independent ALU/load ops on {name}, CPI", round(expected, 4), round(cpi, 4),
                               abs(cpi / expected - 1) <= 0.02,
                               "3 ALU ops per L1-hit load, no dependences; expected max(1/width, unit shares)"))
    return out


def read_port_expectation(platform, reads: int, spread: bool) -> float:
    """CPI of :func:`~simulator.core.microbench.register_reads`: ops a cycle bounded by the width, the ALUs
    and, with P read ports and spread registers, ``max(1, P // reads)`` (shared registers are read once a
    cycle: ``reads`` <= 3 <= P ports)."""
    core = platform.core
    per_cycle = min(core.fetch_width, core.dispatch_width, core.issue_width, core.retire_width,
                    core.units["ialu"].count)
    if core.register_read_ports and spread:
        per_cycle = min(per_cycle, max(1, core.register_read_ports // reads))
    return 1 / per_cycle


@register_check("core: register read ports run out on the P6-family Xeons (RAT stalls)")
def read_ports(quick: bool) -> list[CheckResult]:
    out = []
    n = 20_000 if quick else 200_000
    for name in PLATFORMS:
        p = _platform(name)
        if not p.core.register_read_ports:
            continue
        for spread in (True, False):
            d, _ = _measure(p, MB.register_reads(n, p.isa, reads=2, spread=spread), n // 2)
            cpi = d["cycles"] / d["instructions"]
            rat = d["stall_rat"] / d["cycles"]
            expected = read_port_expectation(p, 2, spread)
            ok = abs(cpi / expected - 1) <= 0.02 and (rat >= 0.5 if spread else rat == 0)
            what = ("each op reads 2 retired registers its neighbours do not" if spread else
                    "every op reads the same 2 retired registers (one port read a cycle each)")
            out.append(CheckResult(f"core: register reads on {name} ({'spread' if spread else 'shared'}), CPI",
                                   round(expected, 4), round(cpi, 4), ok,
                                   f"{what}; {p.core.register_read_ports} read ports; RAT stall cycles "
                                   f"{rat:.0%} of all (expected {'most' if spread else 'none'})"))
    return out


def chase_layout(platform, loads: int = 0) -> tuple[int, int, int]:
    """Footprint (4x the largest cache, and room for ``loads`` distinct addresses, so the chase never
    comes round to a line a non-LRU policy may have kept), stride (no two loads share a 128-byte pair or
    a line), page."""
    biggest = max(c.size_kb for c in platform.caches.values())
    stride = max(128, max(c.line_bytes for c in platform.caches.values()))
    page = platform.memory.page_kb * 1024
    footprint = max(int(4 * biggest * 1024), -(-loads * stride // page) * page)
    return footprint, stride, page


def without_streamers(platform):
    """The platform without its streamers: a streamer follows even a chase's random order within a 4 KB region
    (any two steps one way confirm a stream), and the chase is there to measure the memory latency."""
    overrides = [(f"caches.{n}.prefetchers", [k for k in c.prefetchers if k != "streamer"])
                 for n, c in platform.caches.items() if "streamer" in c.prefetchers]
    return with_overrides(platform, overrides, source=platform.name) if overrides else platform


@register_check("core: a pointer chase beyond the LLC runs at the memory latency per load")
def pointer_chase(quick: bool) -> list[CheckResult]:
    out = []
    loads = 2_000 if quick else 20_000
    for name in PLATFORMS:
        p = without_streamers(_platform(name))
        footprint, stride, page = chase_layout(p, loads)
        block = MB.pointer_chase(loads, footprint, stride, page, seed=1, isa=p.isa)
        d, stack = _measure(p, block, len(block) // 4)
        lat = p.memory.latency_cycles
        per_load = d["cycles"] / d["loads"]
        data = (stack["data_memory"] + stack["base"]) / d["loads"]
        ok = abs(data / lat - 1) <= 0.01 and lat <= per_load <= 1.10 * lat
        out.append(CheckResult(
            f"core: pointer chase over {footprint >> 20} MB on {name}, cycles per load", lat, round(per_load, 1), ok,
            f"memory.latency_cycles = {lat}; the CPI stack charges {data:.1f} per load to memory (+ base) and "
            f"{stack['dtlb'] / d['loads']:.1f} to DTLB misses (one walk per {page // stride} loads)"))
    return out


def prefetch_timing(platform, pairs: int, gap: int) -> tuple:
    """Run :func:`~simulator.core.microbench.prefetch_use` with timed prefetches (``memory.prefetch_arrival =
    "latency"``), no queue for the memory channel (the answer is the latency's) and only the L1D's next-line
    prefetcher on; per
    pair the cycles from the prefetch's start (the first load's access) to the second load's access, k, and
    the cycles the prefetch hid from the second load (a miss would complete the memory latency after its
    access); and the late prefetches counted."""
    l1d, l1i = platform.top_cache("data"), platform.top_cache("instruction")
    others = [(f"caches.{c}.prefetchers", []) for c in platform.caches if c not in (l1d, l1i)]
    p = with_overrides(platform, [("memory.prefetch_arrival", "latency"), ("memory.queueing", "none"),
                                  (f"caches.{l1d}.prefetchers", ["next_line"])] + others)
    footprint, _, page = chase_layout(p, 2 * pairs)
    block = MB.prefetch_use(pairs, gap, footprint, p.caches[l1d].line_bytes, page, seed=1, isa=p.isa)
    core = Core(p, seed=1)
    rec = np.zeros((len(block), TM.NREC), np.int64)
    core.run(block, records=rec)
    loads = np.flatnonzero(block.op == OP_LOAD)
    first, second = loads[0::2], loads[1::2]
    k = rec[second, TM.R_DTLB] - rec[first, TM.R_DTLB]
    hidden = rec[second, TM.R_DTLB] + p.memory.latency_cycles - rec[second, TM.R_C]
    return k, hidden, core.counters(memory=False)["late_prefetches"]


@register_check("prefetch: a prefetch issued k cycles before its use hides min(k, latency) cycles; late ones count")
def prefetch_distance(quick: bool) -> list[CheckResult]:
    out = []
    pairs = 200 if quick else 5_000
    for name in PLATFORMS:
        p = _platform(name)
        mem, l1 = p.memory.latency_cycles, p.caches[p.top_cache("data")].latency_cycles
        for gap in (mem // 3, 2 * mem):
            k, hidden, late = prefetch_timing(p, pairs, gap)
            expected = np.clip(k, 0, mem - l1)
            exact = int((hidden == expected).sum())
            ok = exact == len(k) and late == int((k < mem).sum())
            out.append(CheckResult(
                f"prefetch: {gap} ALU ops ahead of its use on {name}, cycles hidden per use",
                round(float(expected.mean()), 1), round(float(hidden.mean()), 1), ok,
                f"{exact} of {len(k)} uses hide exactly min(k, {mem} - {l1}) cycles (k: cycles from the prefetch to "
                f"the use, mean {k.mean():.1f}); {late} late prefetches counted, {int((k < mem).sum())} uses came "
                f"before the line arrived"))
    return out


def stream_bandwidth(platform, scale: float = 3.0) -> tuple[float, int]:
    """GB/s a streaming copy (:func:`~simulator.core.microbench.stream_copy`, over ``scale`` times the LLC per
    array, measured over its second half) moves through the memory channel of ``memory.queueing =
    "bandwidth"``, with nothing else in its way: no prefetchers, ideal translation, and fill buffers and
    queues far larger than the latency needs (256 MSHRs, a 512-entry window); and the writebacks in it."""
    l1d = platform.top_cache("data")
    wide = [("memory.queueing", "bandwidth"), ("page_walk.kind", "none"), (f"caches.{l1d}.mshrs", 256),
            ("core.rob_entries", 512), ("core.rs_entries", 256), ("core.load_queue", 256), ("core.store_queue", 256)]
    return copy_bandwidth(with_overrides(platform, wide + [(f"caches.{c}.prefetchers", []) for c in platform.caches]),
                          scale)


def copy_block(p, scale: float) -> InstrBlock:
    """A streaming copy (:func:`~simulator.core.microbench.stream_copy`) over ``scale`` times ``p``'s LLC per
    array, a line of ``p``'s L1D an iteration."""
    llc = list(p.caches.values())[-1]
    return MB.stream_copy(int(scale * llc.size_kb * 1024 // llc.line_bytes), p.caches[p.top_cache("data")].line_bytes,
                          p.isa)


def copy_bandwidth(p, scale: float) -> tuple[float, int]:
    """GB/s a streaming copy over ``scale`` times the LLC per array moves through ``p``'s memory channel,
    measured over its second half, as ``p`` is configured; and the writebacks in it."""
    block = copy_block(p, scale)
    core = Core(p, seed=1)
    half = len(block) // 2
    core.run(block.slice(0, half))
    c0, b0 = core.counters(), core.memory.channel_bytes()
    core.run(block, start=half)
    c1 = core.counters()
    writebacks = c1["memory"]["memory"]["writes"] - c0["memory"]["memory"]["writes"]
    # until the channel has carried what the copy booked (writebacks go on after the last instruction retires)
    end = max(c1["cycles"], core.memory.channel_busy_until())
    return (core.memory.channel_bytes() - b0) / (end - c0["cycles"]) * p.clock_ghz, writebacks


@register_check("memory: a streaming copy runs at the memory channel's bandwidth, never above")
def streaming_bandwidth(quick: bool) -> list[CheckResult]:
    out = []
    for name in PLATFORMS:
        p = _platform(name)
        gbs, writebacks = stream_bandwidth(p, 1.5 if quick else 4.0)
        goal = p.memory.bandwidth_gb_s
        out.append(CheckResult(
            f"memory: streaming copy on {name}, GB/s", goal, round(gbs, 2), 0.9 * goal <= gbs <= goal,
            f"memory.bandwidth_gb_s = {goal} at {p.clock_ghz} GHz; source reads, destination reads for ownership "
            f"and {writebacks} writebacks share the channel (memory.queueing = bandwidth; no prefetchers, ideal "
            f"translation, 256 MSHRs: only the channel bounds it)"))
    return out


@register_check("branch: a perfectly predictable loop branch almost never mispredicts")
def loop_branch(quick: bool) -> list[CheckResult]:
    out = []
    trip = 1000
    iters = 20_000 if quick else 200_000
    for name in PLATFORMS:
        p = _platform(name)
        block = MB.loop_branch(iters, trip, isa=p.isa)
        d, _ = _measure(p, block, len(block) // 2)
        rate = d["mispredicts"] / d["conditional_branches"]
        out.append(CheckResult(f"branch: loop branch (trip {trip}) on {name}, mispredict rate", f"<= {2 / trip}",
                               round(rate, 5), rate <= 2 / trip,
                               f"{p.branch_predictor.kind}: only the loop exit can mispredict"))
    return out


@register_check("branch: a random 50% branch mispredicts about half the time")
def random_branch(quick: bool) -> list[CheckResult]:
    out = []
    iters = 10_000 if quick else 100_000
    for name in PLATFORMS:
        p = _platform(name)
        block = MB.random_branch(iters, 0.5, seed=3, isa=p.isa)
        d, _ = _measure(p, block, len(block) // 5)
        rate = d["mispredicts_direction"] / d["conditional_branches"]
        out.append(CheckResult(f"branch: random 50% branch on {name}, mispredict rate", 0.5, round(rate, 4),
                               abs(rate - 0.5) <= 0.03,
                               f"{p.branch_predictor.kind}; independent fair outcomes: no predictor beats 1/2"))
    return out


@register_check("core: z10 AGI stalls vanish when the address producer moves far enough ahead")
def agi(quick: bool) -> list[CheckResult]:
    out = []
    n = 8_000 if quick else 80_000
    for name in PLATFORMS:
        p = _platform(name)
        core = p.core
        if core.agi_penalty == 0:
            continue
        alu_latency = core.units["ialu"].latency
        # the producer is ready alu_latency cycles after it issues; group_size instructions issue per cycle,
        # so the load is (distance + 1) / group_size cycles behind it
        clear = core.group_size * (core.agi_distance + alu_latency) - 1
        curve = {}
        for dist in sorted({0, 1, 2, clear - 2, clear - 1, clear, clear + 1, clear + 3}):
            d, _ = _measure(p, MB.agi_stream(n, dist, p.isa), n // 4)
            curve[dist] = d["issue_stall_agi"] / d["loads"]
        shape = ", ".join(f"{k}: {v:.2f}" for k, v in curve.items())
        out.append(CheckResult(f"core: {name} AGI stall cycles per load, producer right before the load",
                               core.agi_penalty, round(curve[0], 3), abs(curve[0] - core.agi_penalty) < 0.01,
                               f"agi_penalty = {core.agi_penalty}; stall cycles per load by distance: {shape}"))
        far = max(curve[clear], curve[clear + 1], curve[clear + 3])
        out.append(CheckResult(f"core: {name} AGI stall cycles per load, producer >= {clear} instructions ahead", 0.0,
                               round(far, 4), far == 0.0,
                               f"agi_distance = {core.agi_distance} cycles, group_size = {core.group_size}: "
                               f"{clear} independent instructions between producer and load clear the interlock"))
    return out


@register_check("core: the CPI stack accounts for every cycle")
def cpi_stack_sums(quick: bool) -> list[CheckResult]:
    out = []
    n = 20_000 if quick else 200_000
    for name in PLATFORMS:
        p = _platform(name)
        core = Core(p, seed=1)
        core.run(MB.random_program(n, 11, p.isa))
        total = sum(core.cycle_stack().values())
        out.append(CheckResult(f"core: CPI stack on {name}, cycles", core.cycles, total, total == core.cycles,
                               "every cycle is base or charged to exactly one stall cause"))
    return out
