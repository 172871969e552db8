"""Ground-truth checks of SMARTS sampled simulation for ``whatif validate``: on every shipped platform, the
CPI a sampled run estimates against the CPI of the full detailed run of the same program, input, page
placement and timer phase (:func:`simulator.collect.simulate_one` both times), the sample taken in one
segment and in four (each later one fast-forwarded to its start and warmed from cold caches and predictors
for a quarter of the run); bounded warming against full warming of the same units (:mod:`simulator.smarts`);
functional warming's clock, which the memory channel paces (:mod:`simulator.core.warming`); and live-points
(:mod:`simulator.livepoints`), replayed on the core they were captured on and on a narrower one.

The full run's CPI is the truth; the sampled estimate passes when the truth lies in its confidence
interval (99.7 %) or within +-3 % of it (the issue's acceptance: a CPI within +-3 % at 99.7 % confidence,
which a sample with enough units gives; a smaller sample passes on its wider interval, and the interval
then says so).  Warming a streaming copy at a clock far faster than the channel must move its bytes at the
channel's bandwidth: the clock stands for the channel, so the copy's GB/s over the warming clock is the
platform's ``memory.bandwidth_gb_s`` (never above, within 10 % below), and the channel is booked no further
ahead of the clock than the memory latency and three line transfers (an access waits at most the latency
before the clock stands; its fill and the writebacks its installs send down are booked after that wait).
"""

from __future__ import annotations

import math

from whatif.scenarios.checks.core import copy_block
from whatif.scenarios.checks.registry import CheckResult, register_check
from whatif.simulator.collect import CollectSpec, simulate_one
from whatif.simulator.core import Core
from whatif.simulator.platform import load_platform, platform_names, with_overrides
from whatif.simulator.smarts import DEFAULT_TARGET_ERROR, SmartsSpec

WORKLOADS = ("cint2006/464.h264ref", "cint2006/429.mcf")     # compute bound, memory bound
SEED = 11
QUICK = (2_000_000, 400)             # program instructions, units (one in 5 timed in detail, with its warm-up)
FULL = (20_000_000, 2_000)


SEGMENTS = 4                         # the segmented sample: each later segment fast-forwarded, then warmed ...
OVERLAP_SHARE = 4                    # ... from cold for a quarter of the run (the default overlap is 20 M)


def detailed_cpi(platform, workload: str, instructions: int) -> float:
    """The CPI of the full detailed run of the checks' program."""
    return simulate_one(platform, workload, CollectSpec(instructions=instructions), program_seed=SEED,
                        replicate_seed=SEED)["cpi"]


def sampled(platform, workload: str, instructions: int, spec: SmartsSpec) -> dict:
    """The ``sampled`` entry of the checks' program sampled by ``spec``."""
    return simulate_one(platform, workload, CollectSpec(instructions=instructions, sample=spec), program_seed=SEED,
                        replicate_seed=SEED)["sampled"]


def compare(platform_name: str, workload: str, instructions: int, units: int) -> tuple[float, dict, dict]:
    """(full detailed CPI, the ``sampled`` entry of the sampled run, of the same sample in ``SEGMENTS``
    segments) for one program."""
    platform = load_platform(platform_name)
    return detailed_cpi(platform, workload, instructions), *(
        sampled(platform, workload, instructions, spec)
        for spec in (SmartsSpec(units=units),
                     SmartsSpec(units=units, segments=SEGMENTS, overlap=instructions // OVERLAP_SHARE)))


@register_check("smarts: sampled CPI against a full detailed run")
def sampled_against_detailed(quick: bool) -> list[CheckResult]:
    instructions, units = QUICK if quick else FULL
    out = []
    for name in platform_names():
        for workload in WORKLOADS:
            truth, *samples = compare(name, workload, instructions, units)
            for smp in samples:
                est = smp["cpi"]
                lo, hi = est["ci"]
                error = est["mean"] / truth - 1
                passed = lo <= truth <= hi or abs(error) <= DEFAULT_TARGET_ERROR
                cut = f", {smp['segments']} segments" if smp["segments"] > 1 else ""
                how = (f"; {smp['segments']} segments, each later one warmed from cold for {smp['overlap']:,} "
                       f"instructions" if cut else "")
                out.append(CheckResult(
                    f"smarts: {workload} on {name}, CPI (sampled{cut} vs full detailed)", round(truth, 4),
                    f"{est['mean']:.4f} ± {est['half_width']:.4f}", passed,
                    f"{instructions:,} instructions; {smp['units']} units of {smp['unit']} after {smp['warmup']} of "
                    f"warm-up{how}; error {error:+.2%}, CI ± {est['relative_error']:.1%} at {smp['confidence']:.1%}"))
    return out


# bounded warming: (program instructions, units, B); a unit every 20 k (quick) or 50 k instructions, so that most of
# each gap is cache-warmed
BOUNDED_QUICK = (2_000_000, 100, 5_000)
BOUNDED_FULL = (20_000_000, 400, 20_000)


@register_check("smarts: bounded warming against full warming and a full detailed run")
def bounded_against_full_warming(quick: bool) -> list[CheckResult]:
    """The same units sampled with SMARTS's full functional warming and with bounded warming (B functionally
    warmed instructions before each unit, the rest of each gap cache-warmed): the bounded estimate passes when
    it lies within +-3 % of the full warming's (the approximation's own bias, free of sampling error: the units
    are the same) and the full detailed run's CPI lies in its interval or within +-3 % of it."""
    instructions, units, bound = BOUNDED_QUICK if quick else BOUNDED_FULL
    out = []
    for name in platform_names():
        platform = load_platform(name)
        for workload in WORKLOADS:
            truth = detailed_cpi(platform, workload, instructions)
            full, bounded = (sampled(platform, workload, instructions, SmartsSpec(units=units, warming=b))
                             for b in (None, bound))
            est = bounded["cpi"]
            lo, hi = est["ci"]
            bias = est["mean"] / full["cpi"]["mean"] - 1
            error = est["mean"] / truth - 1
            out.append(CheckResult(
                f"smarts: {workload} on {name}, CPI (bounded warming vs full warming, same units)",
                round(full["cpi"]["mean"], 4), f"{est['mean']:.4f} ± {est['half_width']:.4f}",
                abs(bias) <= DEFAULT_TARGET_ERROR and (lo <= truth <= hi or abs(error) <= DEFAULT_TARGET_ERROR),
                f"{instructions:,} instructions, {units} units, B = {bound:,}: "
                f"{bounded['cache_warmed_instructions']:,} cache-warmed, {bounded['warmed_instructions']:,} "
                f"functionally; bias {bias:+.2%} against full warming, error {error:+.2%} against the full detailed "
                f"run ({truth:.4f}; CI ± {est['relative_error']:.1%})"))
    return out


# live-points: (program instructions, units)
LIVE_QUICK = (2_000_000, 100)
LIVE_FULL = (20_000_000, 400)


def narrower(platform) -> tuple[str, int]:
    """The core what-if the live-points check replays: a quarter of the reorder buffer (with ``--quick`` a CPI
    16-34 % higher on the Xeons and the 7447A, the warming clock the capture's), or half the issue width where
    the buffer is a group or two (the in-order z10)."""
    rob = platform.core.rob_entries
    return ("core.rob_entries", rob // 4) if rob >= 8 else ("core.issue_width", max(1, platform.core.issue_width // 2))


@register_check("live-points: replayed units against the capture, and a core what-if against its own sampled run")
def live_points_replayed(quick: bool) -> list[CheckResult]:
    """A sample captured into a store of live-points (:mod:`simulator.livepoints`) and replayed from it: on the
    core it was captured on, every unit must time as it did in the capture (cycles and every counter); on a
    narrower core (:func:`narrower`), the replayed estimate (its units starting from the state the capture's warming
    left) passes within +-3 % of that core's own sampled run of the same units (the approximation's bias)."""
    import tempfile

    from whatif.scenarios.results.livepoint_store import LivePointStore

    instructions, units = LIVE_QUICK if quick else LIVE_FULL
    out = []
    with tempfile.TemporaryDirectory(prefix="whatif-validate-live-points-") as root:
        store = LivePointStore(root)
        for name in platform_names():
            platform = load_platform(name)
            key, value = narrower(platform)
            other = load_platform(name, [f"{key}={value}"])
            for workload in WORKLOADS:
                spec = CollectSpec(instructions=instructions, sample=SmartsSpec(units=units))

                def run(p, keep=store):
                    res = simulate_one(p, workload, spec, program_seed=SEED, replicate_seed=SEED, live_points=keep)
                    return res["sampled"]

                captured, replayed = run(platform), run(platform)
                same = replayed["live_points"]["action"] == "replayed" and replayed["live_points"]["exact"] and all(
                    replayed[k] == captured[k] for k in ("cpi", "cpi_stack", "event_rates"))
                out.append(CheckResult(
                    f"live-points: {workload} on {name}, CPI replayed on the capture's core",
                    round(captured["cpi"]["mean"], 4), f"{replayed['cpi']['mean']:.4f}", same,
                    f"{instructions:,} instructions, {units} units; every estimate "
                    f"{'equal to' if same else 'NOT equal to'} the capture's; library "
                    f"{replayed['live_points']['bytes'] / 1e6:.1f} MB; replay {replayed['host_seconds']:.2f} s, "
                    f"capture {captured['host_seconds']:.2f} s"))
                what, own = run(other), run(other, None)
                bias = what["cpi"]["mean"] / own["cpi"]["mean"] - 1
                out.append(CheckResult(
                    f"live-points: {workload} on {name}, CPI with {key} = {value} (replayed vs its own sampled run)",
                    round(own["cpi"]["mean"], 4), f"{what['cpi']['mean']:.4f}",
                    abs(bias) <= DEFAULT_TARGET_ERROR and what["live_points"]["action"] == "replayed",
                    f"{instructions:,} instructions, {units} units, the same units both ways: bias {bias:+.2%} (the "
                    f"capture's core: CPI {captured['cpi']['mean']:.4f}); its own run's CI ± "
                    f"{own['cpi']['relative_error']:.1%}"))
    return out


WARMING_CPI = 0.05                   # a warming clock 20x faster than one cycle an instruction


def warmed_copy(platform, scale: float, pace: bool = True) -> tuple[float, int, int]:
    """Functionally warm a streaming copy (:func:`~simulator.core.microbench.stream_copy`, ``scale`` times the LLC
    per array) at ``WARMING_CPI`` cycles an instruction, paced or not, with nothing but the copy's own lines on the
    channel (no prefetchers, ideal translation): (GB/s the channel carried over the warming clock, how far past
    the clock's end the channel is booked, cycles the clock stood)."""
    p = with_overrides(platform, [("page_walk.kind", "none")]
                       + [(f"caches.{c}.prefetchers", []) for c in platform.caches])
    block = copy_block(p, scale)
    core = Core(p, seed=1)
    core.warm(block, cpi=WARMING_CPI, pace=pace)
    end = round(len(block) * WARMING_CPI) + core.warming_stall_cycles
    busy = core.memory.channel_busy_until()
    return core.memory.channel_bytes() / max(end, busy) * p.clock_ghz, busy - end, core.warming_stall_cycles


@register_check("smarts: functional warming runs no faster than the memory channel carries its traffic")
def warming_at_bandwidth(quick: bool) -> list[CheckResult]:
    out = []
    for name in platform_names():
        p = load_platform(name)
        if p.memory.queueing != "bandwidth":
            continue
        gbs, ahead, stood = warmed_copy(p, 1.0 if quick else 3.0)
        goal = p.memory.bandwidth_gb_s
        # an access waits at most the memory latency before the clock stands; its fill and the writebacks its
        # installs send down are booked after that wait
        line = list(p.caches.values())[-1].line_bytes
        reach = p.memory.latency_cycles + math.ceil(3 * line * p.clock_ghz / goal)
        out.append(CheckResult(
            f"smarts: warming a streaming copy at {WARMING_CPI} cycles an instruction on {name}, GB/s", goal,
            round(gbs, 2), 0.9 * goal <= gbs <= goal and ahead <= reach,
            f"memory.bandwidth_gb_s = {goal} at {p.clock_ghz} GHz; the clock stood {stood:,} cycles for the "
            f"channel, which is booked {ahead} cycles past it (at most the memory latency and three line "
            f"transfers, {reach}; no prefetchers, ideal translation)"))
    return out
