"""SMARTS sampled simulation: functional warming reproduces the detailed run's memory and predictor state,
the pipeline clock shift is an exact time translation, the confidence-interval arithmetic, sampled against
full detailed CPI, the ``--sample`` option and the ``sample`` scenario key."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from numba import njit
from typer.testing import CliRunner

from whatif.cli import app
from whatif.scenarios.errors import ScenarioError
from whatif.scenarios.measure import SimulateSpec, check_smarts
from whatif.simulator.collect import CollectSpec, simulate_one
from whatif.simulator.core import Core, memport
from whatif.simulator.core import warming as WM
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.isa import OP_LOAD, OP_STORE, isa_for
from whatif.simulator.machine import Machine
from whatif.simulator.memory import caches as MC
from whatif.simulator.memory import kernel as MK
from whatif.simulator.memory import state as MS
from whatif.simulator.memory.hierarchy import MemoryHierarchy
from whatif.simulator.osnoise import TimerNoise
from whatif.simulator.platform import load_platform
from whatif.simulator.smarts import (Estimate, SmartsSpec, required_units, run_sampled, run_segment, segment_units,
                                     z_value)
from whatif.simulator.synth import Synthesizer
from whatif.simulator.workload import load_workload

runner = CliRunner()
SCRATCH = slice(MS.SCR, MS.SCR + MS.NCOL)       # the memory kernel's per-access scratch words (and its clock)


def memory_words(hierarchy: MemoryHierarchy) -> np.ndarray:
    """Every word of the memory state (tags, replacement and prefetcher state, counters, RNG) but scratch and
    the words that depend on time (ready and busy-until times, the memory channel's calendar, late prefetches)."""
    words = hierarchy.state.S.copy()
    words[SCRATCH] = 0
    words[hierarchy.time_dependent_words()] = 0
    return words


def stream(platform, workload: str, n: int):
    return Synthesizer(workload, isa_for(platform.isa), seed=1, instructions=n).next_block(n)


def engines(platform) -> bool:
    return any(c.prefetch_engines for c in platform.caches.values())


# --------------------------------------------------------------------------------- functional warming
# (the Xeon L2's 16 prefetch engines pinned off: this is warming without time-dependent drops)
NO_ENGINES = ["l2.prefetch_engines=0"]


@pytest.mark.parametrize("platform_name, overrides, cpi, pace", [
    ("nehalem", NO_ENGINES, 2.0, False), ("z10", [], 2.0, False),
    ("nehalem", NO_ENGINES + ["branch_predictor.kind=gshare"], 2.0, False),
    ("nehalem", NO_ENGINES, 0.1, True)])
def test_warming_leaves_memory_and_predictors_as_the_detailed_run(platform_name, overrides, cpi, pace):
    """Same accesses in the same order, and no prefetch engines whose drops depend on time: every memory
    word (cache and TLB contents, replacement stamps, prefetcher tables, counters) but the times and every
    predictor word are equal; the core's counters are untouched by warming.  Paced warming (a clock that
    stands for the memory channel) changes times only."""
    p = load_platform(platform_name, overrides)
    assert not engines(p)
    block = stream(p, "cint2006/429.mcf", 60_000)
    detailed, warmed = Core(p, seed=3), Core(p, seed=3)
    detailed.run(block)
    assert warmed.warm(block, cpi=cpi, pace=pace) == len(block)
    assert (warmed.warming_stall_cycles > 0) == pace           # (at 0.1 cycles an instruction mcf is paced)
    assert np.array_equal(memory_words(detailed.memory), memory_words(warmed.memory))
    for a, b in zip(detailed.predictor_state, warmed.predictor_state):
        assert np.array_equal(a, b)
    assert detailed.memory.counters()["levels"]["L1D"]["accesses"] > 0
    assert not warmed.CT.any() and not warmed.CS.any()


def test_warming_with_prefetch_engines_keeps_predictors_and_demand_counts():
    """The MPC7447A's L1D prefetch engines drop prefetches by time, which warming only approximates: the
    predictors are still equal, and so are the demand accesses every level sees from the core."""
    p = load_platform("mpc7447a")
    assert engines(p)
    block = stream(p, "cint2006/464.h264ref", 60_000)
    detailed, warmed = Core(p, seed=3), Core(p, seed=3)
    detailed.run(block)
    warmed.warm(block, cpi=detailed.cycles / detailed.instructions)
    for a, b in zip(detailed.predictor_state, warmed.predictor_state):
        assert np.array_equal(a, b)
    first = {name: lv for name, lv in detailed.memory.counters()["levels"].items() if name in ("L1I", "L1D")}
    for name, lv in first.items():
        got = warmed.memory.counters()["levels"][name]
        assert (got["instr_accesses"], got["load_accesses"], got["store_accesses"]) == \
            (lv["instr_accesses"], lv["load_accesses"], lv["store_accesses"])


def warmed_core(platform, block, cpi: float, pace: bool) -> tuple[Core, int]:
    """A core that has warmed ``block`` from cycle 0, and the cycle its warming clock ended at."""
    core = Core(platform, seed=3)
    core.warm(block, cpi=cpi, pace=pace)
    return core, round(len(block) * cpi) + core.warming_stall_cycles


def test_paced_warming_carries_the_channel_bandwidth_and_no_backlog():
    """429.mcf asks for more than the Nehalem's memory bandwidth at a tenth of a cycle an instruction.  Paced,
    the warming clock stands for the channel: it ends where the bytes carried take at the platform's
    bandwidth (the clock then runs at the channel's pace), and the channel is booked no further ahead of it
    than the memory latency and a bucket of the calendar.  Unpaced, the calendar fills far ahead."""
    p = load_platform("nehalem")
    block = stream(p, "cint2006/429.mcf", 150_000)
    latency = p.memory.latency_cycles
    paced, end = warmed_core(p, block, 0.1, pace=True)
    at_bandwidth = paced.memory.channel_bytes() * p.clock_ghz / p.memory.bandwidth_gb_s
    assert at_bandwidth > 4 * len(block) * 0.1                        # (the stream asks for 4x the bandwidth)
    assert at_bandwidth - latency <= end <= at_bandwidth * 1.01 + latency
    assert paced.memory.channel_busy_until() - end <= latency + 64
    unpaced, end = warmed_core(p, block, 0.1, pace=False)
    assert unpaced.warming_stall_cycles == 0
    assert unpaced.memory.channel_busy_until() - end > 100 * latency


def test_paced_warming_at_a_pace_the_channel_carries_is_unpaced_warming():
    """At a CPI whose traffic the channel carries without a queue longer than the memory latency, pacing never
    stands the clock: every memory word, times included, is the unpaced warming's."""
    p = load_platform("nehalem")
    block = stream(p, "cint2006/464.h264ref", 100_000)
    paced, end = warmed_core(p, block, 10.0, pace=True)
    unpaced, _ = warmed_core(p, block, 10.0, pace=False)
    assert paced.warming_stall_cycles == 0 and end == 1_000_000
    assert paced.memory.channel_bytes() > 0
    assert np.array_equal(paced.memory.state.S, unpaced.memory.state.S)


def test_a_detailed_run_after_fast_warming_does_not_wait_for_a_booked_channel():
    """``Machine.warm_functionally`` paces its clock: after warming 429.mcf at one cycle an instruction (1.5
    times the Nehalem's bandwidth), the next detailed instructions run at the CPI they have after warming at
    a slow clock, instead of waiting for a calendar booked hundreds of thousands of cycles ahead."""
    p = load_platform("nehalem")
    wl = load_workload("cint2006/429.mcf")
    cpis = []
    for cpi in (1.0, 20.0):
        m = Machine(p, wl, 602_000, seed=1, noise=None).warm_functionally(600_000, cpi=cpi)
        c0, i0 = m.core.cycles, m.core.instructions
        m.run()
        cpis.append((m.core.cycles - c0) / (m.core.instructions - i0))
    assert m.core.warming_stall_cycles == 0
    assert cpis[0] < 1.25 * cpis[1], cpis


def test_machine_warming_then_detailed_matches_a_detailed_run():
    """Warm 60 % of a program through the Machine (small blocks, so warming and detailed stretches cross
    block boundaries), time the rest: the memory and predictor state at the end equal a run timed in
    detail throughout, and every program instruction was consumed once."""
    p = load_platform("nehalem", NO_ENGINES)
    assert not engines(p)
    wl = load_workload("cint2006/403.gcc")
    full = Machine(p, wl, 100_000, seed=1, noise=None, block_size=4096).run()
    part = Machine(p, wl, 100_000, seed=1, noise=None, block_size=4096)
    part.warm_functionally(37_000, cpi=1.5).warm_functionally(23_000, cpi=1.5).run()
    assert part.program_retired == full.program_retired == 100_000
    assert part.core.instructions == 40_000
    assert np.array_equal(memory_words(full.memory), memory_words(part.memory))
    for a, b in zip(full.core.predictor_state, part.core.predictor_state):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("platform_name", ["nehalem", "z10"])
def test_shifting_the_core_clock_is_an_exact_time_translation(platform_name):
    """The same instructions after a shift of ``delta`` cycles: every counter and the CPI stack as
    without it, cycles ``delta`` more (the issue ring's rows move with a delta that is not a multiple of
    the ring).  Memory time is left out (untimed prefetches, no channel queue): a shift lets in-flight
    lines arrive, as it should, so with it the run after the shift is not a translation."""
    p = load_platform(platform_name, ["memory.prefetch_arrival=instant", "memory.queueing=none"])
    block = stream(p, "cint2006/429.mcf", 80_000)
    for delta in (1, 40_000 + 3):
        a, b = Core(p, seed=3), Core(p, seed=3)
        a.run(block, stop=40_000)
        b.run(block, stop=40_000)
        b.shift_time(delta)
        a.run(block, start=40_000)
        b.run(block, start=40_000)
        ca, cb = a.counters(memory=False), b.counters(memory=False)
        assert cb.pop("cycles") == ca.pop("cycles") + delta
        assert ca == cb
        assert a.cycle_stack() == b.cycle_stack()


# ----------------------------------------------------------------------------------- CI arithmetic
def test_estimate_against_a_straightforward_reference():
    rng = np.random.default_rng(5)
    values = rng.gamma(2.0, 0.5, size=37)
    population = 500
    est = Estimate.of(values, population, z_value(0.997))
    n = len(values)
    mean = sum(values) / n
    s = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    se = s / math.sqrt(n) * math.sqrt(1 - n / population)
    assert est.mean == pytest.approx(mean, rel=1e-12)
    assert est.std == pytest.approx(s, rel=1e-12)
    assert est.cv == pytest.approx(s / mean, rel=1e-12)
    assert est.stderr == pytest.approx(se, rel=1e-12)
    assert est.half_width == pytest.approx(2.9677379253417713 * se, rel=1e-9)
    assert est.interval == pytest.approx((mean - est.half_width, mean + est.half_width), rel=1e-12)
    assert est.relative_error == pytest.approx(est.half_width / mean, rel=1e-12)


def test_normal_quantiles_and_smarts_sample_size():
    assert z_value(0.95) == pytest.approx(1.959964, abs=1e-6)
    assert z_value(0.997) == pytest.approx(2.967738, abs=1e-6)
    assert required_units(cv=0.5, z=3.0, target_error=0.03) == 2500           # (3 x 0.5 / 0.03)^2
    assert required_units(cv=1.0, z=3.0, target_error=0.03) == 10_000         # SMARTS's n for V = 1
    assert required_units(cv=0.0, z=3.0, target_error=0.03) == 2


def test_spec_parsing_and_layout():
    assert SmartsSpec.parse("smarts") == SmartsSpec(1000, 2000, None)
    assert SmartsSpec.parse("smarts:500,1000,40") == SmartsSpec(500, 1000, 40)
    assert SmartsSpec.parse("smarts:500,1000,40,4") == SmartsSpec(500, 1000, 40, segments=4)
    assert SmartsSpec.parse("smarts:,,,3") == SmartsSpec(segments=3)
    assert SmartsSpec.parse(" SMARTS:,,40 ") == SmartsSpec(1000, 2000, 40)
    assert SmartsSpec.parse("smarts:1000,2000,,,30000") == SmartsSpec(warming=30_000)
    assert SmartsSpec.parse("smarts:500,1000,40,2,0") == SmartsSpec(500, 1000, 40, segments=2, warming=0)
    assert SmartsSpec.parse("smarts:1000,2000,auto") == SmartsSpec(second_run=True)
    assert SmartsSpec.parse("smarts:500,1000,AUTO,2,3000") == SmartsSpec(500, 1000, segments=2, warming=3000,
                                                                         second_run=True)
    with pytest.raises(SimulatorInputError, match="N = auto starts from the default sample and takes no N, got 40"):
        SmartsSpec(units=40, second_run=True)
    with pytest.raises(SimulatorInputError, match=r"whole numbers \(N may be auto\)"):
        SmartsSpec.parse("smarts:auto,2000,auto")
    assert SmartsSpec(units=100).layout(10_000_000) == (10_000, 100)
    assert SmartsSpec().layout(1_000_000_000) == (1_000_000, 10_000)           # SMARTS's initial n
    assert SmartsSpec().layout(30_000_000) == (30_000, 1_000)                  # a tenth of the run in detail
    with pytest.raises(SimulatorInputError, match="at most 333 units fit"):
        SmartsSpec(units=334).layout(1_000_000)


# ------------------------------------------------------------------------------------ sampled runs
def test_sampled_cpi_against_the_full_detailed_run():
    p = load_platform("nehalem")
    full = simulate_one(p, "cint2006/464.h264ref", CollectSpec(instructions=1_000_000), 3, 3)
    spec = CollectSpec(instructions=1_000_000, sample=SmartsSpec(units=250))
    res = simulate_one(p, "cint2006/464.h264ref", spec, 3, 3)
    smp = res["sampled"]
    lo, hi = smp["cpi"]["ci"]
    assert lo <= full["cpi"] <= hi
    assert smp["units"] == 250 and smp["detailed_instructions"] <= 250 * 3000
    assert smp["warmed_instructions"] + smp["detailed_instructions"] == smp["covered_instructions"]
    assert res["cpi"] == smp["cpi"]["mean"]
    assert sum(res["cpi_stack"].values()) == pytest.approx(res["cpi"], rel=1e-9)    # per unit, so on average
    assert smp["event_rates"]["CPU_CLK_UNHALTED.REF"]["mean"] == pytest.approx(res["cpi"], rel=1e-12)
    assert simulate_one(p, "cint2006/464.h264ref", spec, 3, 3)["sampled"]["cpi"] == smp["cpi"]   # deterministic


def test_units_time_as_in_a_full_detailed_run():
    """Without timer noise, warming leaves memory and predictors exactly as the full run has them, and the
    W = 2000 detailed warm-up refills the pipeline: a unit then takes the cycles it takes inside a full
    detailed run (the pipeline's state converges; measured: every one of 2000 units of 401.bzip2 and 1000
    of 429.mcf).  Pinned here for nearly all units, and the mean to 0.1 %.  Memory time is left out
    (untimed prefetches, no channel queue): warming's clock only approximates the times of lines in flight
    and of the channel's bookings (`whatif validate`'s SMARTS check measures the sampled CPI with them)."""
    p = load_platform("nehalem", ["memory.prefetch_arrival=instant", "memory.queueing=none"])
    wl = load_workload("cint2006/429.mcf")
    result = run_sampled(Machine(p, wl, 600_000, seed=1, noise=None), SmartsSpec(units=60), seed=4)
    full = Machine(p, wl, 600_000, seed=1, noise=None)
    same_units = []
    for i in range(result.n):
        begin = result.unit_index(i) * 1000
        full.advance_to(2**62, program_limit=begin)
        c0 = full.counters()
        full.advance_to(2**62, program_limit=begin + 1000)
        c1 = full.counters()
        same_units.append((c1["cycles"] - c0["cycles"]) / (c1["instructions"] - c0["instructions"]))
    same_units = np.array(same_units)
    assert np.mean(result.unit_cpi == same_units) >= 0.95
    assert result.cpi.mean == pytest.approx(same_units.mean(), rel=1e-3)


def test_fast_forward_moves_the_program_on_and_nothing_else():
    """A later segment reaches its start by fast-forwarding: the program's control flow and data state move
    on exactly as if its instructions had run, the clock moves ``cpi`` cycles an instruction, and no cache,
    TLB, prefetcher, predictor or timer handler sees any of it."""
    p = load_platform("nehalem")
    wl = load_workload("cint2006/429.mcf")
    skipped = Machine(p, wl, 400_000, seed=1, noise=TimerNoise(time_scale=1e-3))
    untouched = Machine(p, wl, 400_000, seed=1, noise=TimerNoise(time_scale=1e-3))
    ran = Machine(p, wl, 400_000, seed=1, noise=None)
    skipped.fast_forward(150_001, cpi=2.5)
    ran.warm_functionally(150_001)
    assert skipped.program_retired == ran.program_retired == 150_001 and skipped.core.cycles == 375_002
    skipped._refill()                                     # its next block: the instructions that follow
    ahead = len(ran.block) - ran.pos
    for field in ("pc", "mem_addr", "taken", "op"):
        assert np.array_equal(getattr(skipped.block, field)[:ahead], getattr(ran.block, field)[ran.pos:]), field
    assert np.array_equal(skipped.memory.state.S, untouched.memory.state.S)
    assert all(np.array_equal(a, b) for a, b in zip(skipped.core.predictor_state, untouched.core.predictor_state))
    assert skipped.os_ticks == skipped.os_instructions == 0 and skipped.timer.next_due >= 375_002
    assert skipped.timer.next_due < 375_002 + skipped.timer.period
    skipped.advance_to(2**62, program_limit=200_000)             # and runs on from there
    assert skipped.os_instructions > 0 and skipped.counters()["instructions"] > 49_999


# --------------------------------------------------------------------------------- bounded warming
@njit
def _below(mem, lvl, first, last, src, write, page_bits, now):
    mv = memport.views(mem)
    MK._st(mv, MS.SCR_NOW, now)
    MK._st(mv, MS.G_CH_DELAY, 0)
    MK._cache_access(mv, lvl, first, last, src, write, page_bits, MS._var(True))     # (as warming: one copy)
    if MK._ld(mv, MS.G_ST_N) != 0:
        MC.run_streamers(mv)
    return memport.channel_wait(mv)


@njit
def _translate(mem, vaddr, t0, t1, page_bits, now):
    mv = memport.views(mem)
    MK._st(mv, MS.SCR_NOW, now)
    MK.translate(mv, vaddr, t0, t1, page_bits)


@njit
def _phys(mem, vaddr, page_bits):
    return MK.phys(memport.views(mem), vaddr, page_bits)


def reference_cache_warming(hierarchy: MemoryHierarchy, block, now0: int, cpi_q16: int) -> int:
    """Cache warming as its docstring says it, one access at a time from Python: per instruction, a fetch line
    other than the last one, then a load's or store's line, each translated when its page is new to the stand-in
    TLB and requested from the level below the L1 when its line is new to the stand-in L1 (a store's also when the
    stand-in holds it as read); the clock stands for waits beyond the memory latency.  Returns the stood cycles."""
    S, mem = hierarchy.state.S, tuple(hierarchy.state)
    G = MS.views(S).G
    C = MS.views(S).C
    sizes = [len(a) for a in hierarchy.l1_stand_ins()]
    lines = [dict(), dict()]                    # per L1 (instruction, data): stand-in entry -> (line, written)
    pages = [dict(), dict()]
    slack = int(G[MS.G_MEM_LAT])
    l1 = [int(G[MS.G_L1I]), int(G[MS.G_L1D])]
    tlbs = [(int(G[MS.G_ITLB0]), int(G[MS.G_ITLB1])), (int(G[MS.G_DTLB0]), int(G[MS.G_DTLB1]))]
    page_bits = [int(G[MS.G_IPAGE_BITS]), int(G[MS.G_PAGE_BITS])]
    stall, last = 0, None

    def access(side: int, vaddr: int, src: int, write: bool, now: int) -> int:
        pb = page_bits[side]
        vpn = vaddr >> pb
        if pages[side].get(vpn % sizes[2 + side]) != vpn:
            pages[side][vpn % sizes[2 + side]] = vpn
            _translate(mem, np.uint64(vaddr), *tlbs[side], pb, now)
        lb = int(C[l1[side], MS.C_LINE_BITS])
        line = int(_phys(mem, np.uint64(vaddr), pb)) >> lb
        held = lines[side].get(line % sizes[side])
        if held is not None and held[0] == line and (held[1] or not write):
            return 0
        lines[side][line % sizes[side]] = (line, write)
        wait = int(_below(mem, int(C[l1[side], MS.C_NEXT]), np.uint64(line << lb),
                          np.uint64(((line + 1) << lb) - 1), src, write, pb, now))
        return max(0, wait - slack)

    for i in range(len(block)):
        now = now0 + stall + (i * cpi_q16 >> 16)
        pc, op = int(block.pc[i]), int(block.op[i])
        ilb = int(C[l1[0], MS.C_LINE_BITS])
        if pc >> ilb != last:
            last = pc >> ilb
            stall += access(0, pc, MS.SRC_IFETCH, False, now)
        if op in (OP_LOAD, OP_STORE):
            stall += access(1, int(block.mem_addr[i]), MS.SRC_LOAD if op == OP_LOAD else MS.SRC_STORE,
                            op == OP_STORE, now)
    return stall


@pytest.mark.parametrize("platform_name, workload, cpi", [
    ("nehalem", "cint2006/403.gcc", 0.25), ("z10", "cint2006/429.mcf", 1.0), ("mpc7447a", "yahoo_y/Y", 1.0)])
def test_cache_warming_against_a_reference_one_access_at_a_time(platform_name, workload, cpi):
    """The kernel's stand-ins, clock and pacing against the reference above: the same memory state word for
    word (times included), the same stood cycles, and nothing of the core's or the predictors' touched."""
    p = load_platform(platform_name)
    block = stream(p, workload, 30_000)
    core, ref = Core(p, seed=3), Core(p, seed=3)
    predictors = [a.copy() for a in core.predictor_state]
    q16 = max(1, round(cpi * WM.CPI_ONE))
    assert core.warm_caches(block, 0, 20_000, now=100, cpi=cpi, pace=True) == 20_000
    core.warm_caches(block, 20_000, len(block), now=100 + 20_000 * q16 // WM.CPI_ONE + core.warming_stall_cycles,
                     cpi=cpi, pace=True)                # (the stand-ins carry over between calls)
    stood = reference_cache_warming(ref.memory, block, 100, q16)
    assert np.array_equal(core.memory.state.S, ref.memory.state.S)
    assert core.warming_stall_cycles == stood
    assert core.memory.counters()["levels"][list(p.caches)[-1]]["accesses"] > 0
    assert all(np.array_equal(a, b) for a, b in zip(core.predictor_state, predictors))
    assert not core.CT.any() and not core.CS.any()


def llc_lines(machine: Machine) -> set[int]:
    """The lines the last-level cache holds."""
    S = machine.memory.state.S
    c = MS.C0 + (len(machine.memory.level_names) - 1) * MS.NCOL
    tags = S[S[c + MS.C_TAG0]:S[c + MS.C_TAG0] + S[c + MS.C_NSETS] * S[c + MS.C_WAYS] * S[c + MS.C_SLICES]]
    return set(tags.view(np.uint64)[tags.view(np.uint64) != MS.EMPTY].tolist())


def test_cache_warming_keeps_the_last_level_cache_that_skipping_loses():
    """Why bounded warming cache-warms the gap rather than skipping it: after 3 M instructions of gcc, the last
    20 k functionally warmed, the Nehalem's 8 MB L3 holds 94 % of the lines full warming leaves there when the
    rest was cache-warmed, and 1.5 % when it was skipped (stale state: lines reused at distances longer than
    the warm-up are missing; measured, 2026-11-30)."""
    p = load_platform("nehalem")
    wl = load_workload("cint2006/403.gcc")
    n, tail = 3_000_000, 20_000
    full, cached, skipped = (Machine(p, wl, n, seed=1) for _ in range(3))
    full.warm_functionally(n)
    cached.warm_caches(n - tail).warm_functionally(tail)
    skipped.fast_forward(n - tail).warm_functionally(tail)
    truth = llc_lines(full)
    assert len(truth) > 100_000
    assert len(truth & llc_lines(cached)) > 0.9 * len(truth)
    assert len(truth & llc_lines(skipped)) < 0.1 * len(truth)
    assert cached.program_retired == n and cached.core.instructions == 0 and cached.core.cycles >= n


def test_bounded_warming_as_long_as_the_gap_is_smarts_and_shorter_cache_warms_the_rest():
    p = load_platform("nehalem")
    spec = CollectSpec(instructions=400_000, sample=SmartsSpec(units=20))      # a unit every 20 k instructions
    smarts = simulate_one(p, "cint2006/464.h264ref", spec, 3, 3)["sampled"]
    same = simulate_one(p, "cint2006/464.h264ref", CollectSpec(instructions=400_000,
                        sample=SmartsSpec(units=20, warming=20_000)), 3, 3)["sampled"]
    bounded = simulate_one(p, "cint2006/464.h264ref", CollectSpec(instructions=400_000,
                           sample=SmartsSpec(units=20, warming=5_000)), 3, 3)["sampled"]
    assert same["cpi"] == smarts["cpi"] and same["cache_warmed_instructions"] == 0
    assert same["functional_warming"] == 20_000 and smarts["functional_warming"] is None
    # every gap but the first unit's lead: 5 k functionally warmed before the 2 k of detailed warm-up
    assert bounded["warmed_instructions"] <= 20 * 5_000
    assert bounded["warmed_instructions"] + bounded["cache_warmed_instructions"] == smarts["warmed_instructions"]
    assert bounded["cache_warmed_instructions"] > 15 * 10_000
    assert bounded["cpi"]["mean"] != smarts["cpi"]["mean"]
    assert abs(bounded["cpi"]["mean"] / smarts["cpi"]["mean"] - 1) < 0.1


def test_a_later_segment_warmed_from_the_start_measures_its_units_as_one_segment_does():
    """Segments cut the sample into runs of consecutive units, each on its own machine.  When a later
    segment's overlap reaches back to the run's start, it warms everything the one-segment run warmed, from
    the same fresh machine, and its W = 2000 detailed warm-up refills the pipeline: its units then take the
    cycles they take in the one-segment run (as in ``test_units_time_as_in_a_full_detailed_run``, memory
    time left out, the warming clock differing)."""
    p = load_platform("nehalem", ["memory.prefetch_arrival=instant", "memory.queueing=none"])
    wl = load_workload("cint2006/429.mcf")

    def fresh():
        return Machine(p, wl, 600_000, seed=1, noise=None)

    one = run_sampled(fresh(), SmartsSpec(units=60), seed=4)
    three = run_sampled(fresh(), SmartsSpec(units=60, segments=3, overlap=600_000), seed=4, fresh=fresh)
    assert three.n == 60 and three.to_dict()["segments"] == 3
    assert np.array_equal(three.unit_cpi[:20], one.unit_cpi[:20])           # the first segment is the run's
    assert np.mean(three.unit_cpi == one.unit_cpi) >= 0.95
    assert three.cpi.mean == pytest.approx(one.cpi.mean, rel=1e-3)
    assert three.warmed_instructions > one.warmed_instructions               # the later segments warm again
    with pytest.raises(ValueError, match="needs `fresh`"):
        run_sampled(fresh(), SmartsSpec(units=60, segments=3), seed=4)


def test_a_later_segment_fast_forwards_to_its_overlap():
    """A later segment skips to ``overlap`` instructions before its first unit's detailed warm-up, warms from
    there, and measures its own units only."""
    p = load_platform("nehalem")
    spec = SmartsSpec(units=40, segments=2, overlap=100_000)
    m = Machine(p, load_workload("cint2006/429.mcf"), 1_000_000, seed=1)
    part = run_segment(m, spec, seed=4, segment=1, start=0)
    whole = run_sampled(Machine(p, load_workload("cint2006/429.mcf"), 1_000_000, seed=1), SmartsSpec(units=40), seed=4)
    units = segment_units(spec, 40, 1)
    assert units == range(20, 40) and len(part.unit_cpi) == 20
    lead = whole.unit_index(20) * 1000 - 2000
    assert part.fast_forwarded_instructions == lead - 100_000
    assert part.warmed_instructions + part.detailed_instructions == (whole.unit_index(39) + 1) * 1000 - (lead - 100_000)
    assert part.warmed_instructions == 100_000 + sum(
        (whole.unit_index(i) - whole.unit_index(i - 1) - 3) * 1000 for i in range(21, 40))
    assert np.all(part.unit_cpi > 1)                                   # mcf's units, timed


def test_unit_counters_from_raw_words_equal_the_counters_difference():
    """A sampled run differences the raw counter words around each unit and names them at the end
    (``Machine.counter_columns``): every counter of ``counters()`` must come out as the difference of
    ``counters()`` read around the same stretches, the OS's and every cache level's, TLB's and memory's."""
    m = Machine(load_platform("harpertown"), load_workload("cint2006/429.mcf"), 400_000, seed=2,
                noise=TimerNoise(time_scale=1e-3))
    m.warm_up(50_000)
    marks, words = [], []
    for limit in (50_000, 120_000, 125_000, 400_000):
        m.advance_to(2**62, program_limit=limit)
        marks.append(m.counters())
        words.append(m.counter_words())
    cols = m.counter_columns(np.diff(np.array(words), axis=0))
    assert list(cols) == list(marks[0])
    for j in range(3):
        before, after = marks[j], marks[j + 1]
        for k, v in after.items():
            if isinstance(v, int):
                assert cols[k][j] == v - before[k], (k, j)
    total = {k: after - marks[0][k] for k, after in marks[3].items() if isinstance(after, int)}
    assert total["L2.misses"] > 1000 and total["DTLB.walks"] > 0 and total["memory.reads"] > 0
    assert total["os_ticks"] > 0 and total["L1D.prefetches_issued"] > 0
    acc, miss = cols["L2.accesses"], cols["L2.misses"]
    assert np.allclose(cols["L2.miss_ratio"], miss / acc)


def test_too_few_units_recommends_smarts_n():
    p = load_platform("nehalem")
    m = Machine(p, load_workload("cint2006/429.mcf"), 300_000, seed=1, noise=None)
    result = run_sampled(m, SmartsSpec(units=20), seed=1)
    cv = result.cpi.cv
    assert result.recommended_units == math.ceil((result.z * cv / 0.03) ** 2)
    assert not result.sufficient
    assert f"smarts:1000,2000,{result.recommended_units}" in result.advice()


def _h264ref_machines(instructions: int = 2_000_000):
    p = load_platform("nehalem")
    return lambda: Machine(p, load_workload("cint2006/464.h264ref"), instructions, seed=1, noise=None)


def test_auto_reruns_with_the_n_the_first_runs_v_asks_for_and_reports_that_run():
    """N = auto is SMARTS's procedure: the default sample, then, when its V asks for more units, a second run of
    that many, whose estimates are exactly those of a run asked for with that N; the host time counts both."""
    fresh = _h264ref_machines()
    spec = SmartsSpec(second_run=True, target_error=0.10)
    result = run_sampled(fresh(), spec, seed=1, fresh=fresh)
    first = result.first_run
    assert first is not None and first.n == 66                      # the default: a tenth of 2 M in detail
    assert not first.sufficient and 66 < first.recommended_units < 666     # (666 units is all the run holds)
    assert result.n == first.recommended_units and result.spec.units == result.n and not result.spec.second_run
    direct = run_sampled(fresh(), SmartsSpec(units=result.n, target_error=0.10), seed=1)
    np.testing.assert_array_equal(result.unit_cpi, direct.unit_cpi)
    for cause, values in direct.unit_stack.items():
        np.testing.assert_array_equal(result.unit_stack[cause], values)
    assert result.host_seconds > first.host_seconds > 0
    doc = result.to_dict()
    assert doc["first_run"]["units"] == 66 and doc["first_run"]["recommended_units"] == result.n
    assert doc["first_run"]["cpi"] == first.cpi.to_dict() and doc["units"] == result.n


def test_auto_stops_after_a_first_run_that_sufficed_and_caps_the_second_at_what_the_run_holds():
    fresh = _h264ref_machines()
    enough = run_sampled(fresh(), SmartsSpec(second_run=True, target_error=0.5), seed=1, fresh=fresh)
    assert enough.first_run is None and enough.sufficient and enough.n == 66
    plain = run_sampled(fresh(), SmartsSpec(target_error=0.5), seed=1)
    np.testing.assert_array_equal(enough.unit_cpi, plain.unit_cpi)
    capped = run_sampled(fresh(), SmartsSpec(second_run=True), seed=1, fresh=fresh)
    assert capped.first_run.recommended_units > 666 and capped.n == 666           # 2,000 units, one in 3 at most
    assert not capped.sufficient and "more than 2,000,000 instructions hold" in capped.advice()
    assert SmartsSpec().rerun(capped.first_run) is None                           # N given: no second run
    with pytest.raises(ValueError, match="needs `fresh`"):
        run_sampled(fresh(), SmartsSpec(second_run=True), seed=1)


def test_auto_after_a_warm_up_starts_its_second_run_where_the_first_started():
    fresh = _h264ref_machines(2_300_000)
    warmed = fresh().warm_functionally(300_000)
    result = run_sampled(warmed, SmartsSpec(second_run=True, target_error=0.10), seed=1, fresh=fresh)
    direct = run_sampled(fresh().warm_functionally(300_000), SmartsSpec(units=result.n, target_error=0.10), seed=1)
    assert result.first_run is not None and result.instructions == 2_000_000
    np.testing.assert_array_equal(result.unit_cpi, direct.unit_cpi)


# ------------------------------------------------------------------------------- CLI and scenario key
def test_cli_sampled_json_carries_confidence_intervals():
    r = runner.invoke(app, ["simulate", "-p", "westmere", "-w", "462.libquantum", "-n", "600000",
                            "--sample", "smarts:1000,2000,50", "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    smp = doc["sampled"]
    assert smp["units"] == 50 and smp["confidence"] == 0.997
    assert set(smp["event_rates"]) == set(load_platform("westmere").pmu.events) == set(doc["totals"])
    for est in (smp["cpi"], *smp["event_rates"].values()):
        assert est["ci"][0] <= est["mean"] <= est["ci"][1]
    assert doc["cpi"] == smp["cpi"]["mean"]


def test_cli_bounded_warming_is_reported_in_json_and_in_the_terminal():
    args = ["simulate", "-p", "nehalem", "-w", "464.h264ref", "-n", "600000", "--sample", "smarts:1000,2000,20,1,4000"]
    doc = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    smp = doc["sampled"]
    assert smp["functional_warming"] == 4000 and smp["cache_warmed_instructions"] > 19 * 20_000
    assert smp["warmed_instructions"] <= 20 * 4000
    shown = runner.invoke(app, args)
    assert shown.exit_code == 0, shown.stderr
    said = " ".join(shown.stdout.split())               # (rich wraps at the terminal's width)
    assert "at most 4,000 functionally warmed before that, the rest of each gap cache-warmed" in said


def test_cli_auto_reports_both_runs_and_a_progress_bar_starts_over_for_the_second():
    args = ["simulate", "-p", "nehalem", "-w", "464.h264ref", "-n", "2000000", "--sample", "smarts:1000,2000,auto"]
    smp = json.loads(runner.invoke(app, [*args, "--json"]).stdout)["sampled"]
    assert smp["first_run"]["units"] == 66 and smp["units"] == 666 < smp["first_run"]["recommended_units"]
    assert smp["host_seconds"] > smp["first_run"]["host_seconds"] > 0
    shown = runner.invoke(app, args)
    said = " ".join(shown.stdout.split())
    assert shown.exit_code == 0, shown.stderr
    assert (f"SMARTS's second run (N = auto): the first, 66 units, gave CPI {smp['first_run']['cpi']['mean']:.4f}"
            in said and f"which asks n >= {smp['first_run']['recommended_units']:,}; this run measured 666" in said)

    class Bar:                                  # what a progress bar is told
        def __init__(self):
            self.done, self.restarts = [0], []

        def __call__(self, n):
            self.done[-1] += n

        def restart(self, label):
            self.restarts.append(label)
            self.done.append(0)

    bar = Bar()
    spec = CollectSpec(instructions=2_000_000, os_noise=False, sample=SmartsSpec(second_run=True))
    simulate_one(load_platform("nehalem"), "cint2006/464.h264ref", spec, program_seed=1, replicate_seed=1,
                 on_retired=bar)
    assert bar.restarts == ["second run, 666 units"] and bar.done == [2_000_000, 2_000_000]


def test_a_restarted_progress_bar_starts_over_with_the_label_beside_its_description():
    import io

    from rich.console import Console
    from rich.progress import Progress

    from whatif.scenarios.results.progress import Advance

    with Progress(console=Console(file=io.StringIO(), force_terminal=True)) as bar:
        advance = Advance(bar, bar.add_task("simulate mcf", total=100), "simulate mcf")
        advance(60)
        assert bar.tasks[0].completed == 60
        advance.restart("second run, 700 units")
        advance(5)
        assert bar.tasks[0].completed == 5 and bar.tasks[0].description == "simulate mcf: second run, 700 units"
    Advance()(5), Advance().restart("nothing to show")                 # without a bar: no-ops


def test_bounded_warming_in_segments_side_by_side_and_a_later_segments_lead_in_cache_warmed():
    args = ["simulate", "-p", "nehalem", "-w", "464.h264ref", "-n", "1000000", "--sample", "smarts:1000,2000,20,2,3000",
            "--json"]
    one = json.loads(runner.invoke(app, args).stdout)["sampled"]
    two = json.loads(runner.invoke(app, [*args, "--workers", "2"]).stdout)["sampled"]
    assert one["cpi"] == two["cpi"] and one["cache_warmed_instructions"] == two["cache_warmed_instructions"]
    # the run's own gaps hold fewer than its 1 M instructions: the rest is the later segment's lead-in from the start
    assert one["cache_warmed_instructions"] > 1_000_000
    assert one["warmed_instructions"] <= 20 * 3000


def test_cli_segments_side_by_side_give_the_estimates_of_one_process():
    """``--workers 2`` runs the two segments of ``smarts:U,W,N,2`` in two threads: the same estimates as one
    after the other, with the segments' host time summed beside the wall clock."""
    args = ["simulate", "-p", "nehalem", "-w", "429.mcf", "-n", "800000", "--sample", "smarts:1000,2000,40,2", "--json"]
    here, pool = runner.invoke(app, args), runner.invoke(app, args + ["--workers", "2"])
    assert here.exit_code == 0 and pool.exit_code == 0, (here.stderr, pool.stderr)
    a, b = json.loads(here.stdout)["sampled"], json.loads(pool.stdout)["sampled"]
    assert a["segments"] == b["segments"] == 2 and a["units"] == b["units"] == 40
    for key in ("cpi", "event_rates", "cpi_stack", "detailed_instructions", "warmed_instructions"):
        assert a[key] == b[key], key
    assert 0 < a["worker_seconds"] <= a["host_seconds"] and b["worker_seconds"] > 0     # one after the other: within it
    assert a["advice"].endswith(f"--sample smarts:1000,2000,{a['recommended_units']},2")        # S kept in the advice
    shown = runner.invoke(app, args[:-1] + ["--workers", "2"])
    headline = " ".join(shown.stdout.split())                      # (the console wraps at its width)
    assert shown.exit_code == 0 and "in 2 segments, each later one fast-forwarded and warmed from cold" in headline


def test_cli_workers_without_segments_is_one_line_and_exit_2(tmp_path):
    for extra in (["--sample", "smarts:1000,2000,20"], []):
        r = runner.invoke(app, ["simulate", "-p", "nehalem", "-w", "429.mcf", "-n", "400000", "--workers", "2",
                                "--out", str(tmp_path / "out"), *extra])
        assert r.exit_code == 2, r.stderr
        assert r.stderr.strip().splitlines() == [
            "whatif: error: --workers 2 runs the segments of a sampled run side by side: give them with --sample "
            "smarts:U,W,N,S (S >= 2 segments), or replay its units with --live-points"]
        assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value, fragment", [
    ("smarts:0,2000,10", "U (instructions per unit) must be >= 1, got 0"),
    ("smarts:1000,-1,10", "W (detailed warm-up instructions) must be >= 0, got -1"),
    ("smarts:1000,2000,1", "N (units) must be >= 2, got 1"),
    ("smarts:1000,2000,500", "cannot hold 500 units"),
    ("smarts:1k,2000,10", "whole numbers"),
    ("smarts:1000,2000,10,0", "S (segments) must be >= 1, got 0"),
    ("smarts:1000,2000,10,11", "11 segments of 10 units leave a segment without a unit"),
    ("smarts:1000,2000,10,2,-5", "B (functionally warmed instructions before each unit) must be >= 0, got -5"),
    ("smarts:1000,2000,10,2,1,1", "expected smarts, smarts:U,W,N, smarts:U,W,N,S or smarts:U,W,N,S,B"),
    ("simpoint", "expected smarts, smarts:U,W,N, smarts:U,W,N,S or smarts:U,W,N,S,B"),
])
def test_cli_bad_sample_is_one_line_and_exit_2(tmp_path, value, fragment):
    out = tmp_path / "out"
    r = runner.invoke(app, ["simulate", "-p", "nehalem", "-w", "429.mcf", "-n", "1000000", "--sample", value,
                            "--out", str(out)])
    assert r.exit_code == 2, (r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("whatif: error: --sample: "), r.stderr
    assert fragment in lines[0]
    assert not out.exists()


def test_cli_sample_excludes_physical_pmu_and_time_series():
    for extra, fragment in ((["--pmu", "physical"], "'ideal'"), (["--sampling", "1,1,0.5"], "time series")):
        r = runner.invoke(app, ["simulate", "-p", "nehalem", "-w", "429.mcf", "-n", "1000000", "--sample", "smarts",
                                *extra])
        assert r.exit_code == 2 and fragment in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_scenario_key_is_checked_before_simulating():
    check_smarts(SimulateSpec(instructions=3_000_000, sample="smarts:1000,2000,100"), "s.toml")
    check_smarts(SimulateSpec(instructions=3_000_000, sample="smarts:1000,2000,auto"), "s.toml")
    with pytest.raises(ScenarioError, match=r"s.toml: simulate.sample: 30,000 instructions cannot hold the default"):
        check_smarts(SimulateSpec(instructions=30_000, sample="smarts:1000,2000,auto"), "s.toml")
    with pytest.raises(ScenarioError, match=r"s.toml: simulate.sample: N \(units\) must be >= 2"):
        check_smarts(SimulateSpec(instructions=3_000_000, sample="smarts:1000,2000,1"), "s.toml")


def test_validate_check_passes_on_every_platform_quick():
    from whatif.scenarios.checks.registry import CHECK_MODULES, registered_checks
    from whatif.simulator.platform import platform_names

    assert "whatif.scenarios.checks.smarts" in CHECK_MODULES
    rows = registered_checks()["smarts: sampled CPI against a full detailed run"](True)
    assert len(rows) == 4 * len(platform_names())
    cut = [r for r in rows if "4 segments, each later one warmed from cold for 500,000" in r.detail]
    assert len(cut) == 2 * len(platform_names())
    failed = [(r.name, r.expected, r.measured, r.detail) for r in rows if not r.passed]
    assert not failed


def test_validate_bounded_warming_check_passes_on_every_platform_quick():
    """(Skipping the cache-warmed stretches instead, stale state, fails 9 of its 10 rows: h264ref +15 % to +26 %
    against full warming; measured 2026-11-30.)"""
    from whatif.scenarios.checks.registry import registered_checks
    from whatif.simulator.platform import platform_names

    rows = registered_checks()["smarts: bounded warming against full warming and a full detailed run"](True)
    assert len(rows) == 2 * len(platform_names())
    assert all("1,190,000 cache-warmed, 500,000 functionally" in r.detail for r in rows)
    failed = [(r.name, r.expected, r.measured, r.detail) for r in rows if not r.passed]
    assert not failed


def test_validate_warming_check_passes_on_every_platform_and_unpaced_warming_fails_it():
    """The validate check of paced warming: on every platform with a memory channel the copy moves at the
    channel's bandwidth over the warming clock and the channel is booked no further ahead than the check's
    reach.  The same copy warmed unpaced books the channel to the end of its calendar."""
    from whatif.scenarios.checks.registry import registered_checks
    from whatif.scenarios.checks.smarts import warmed_copy
    from whatif.simulator.platform import platform_names

    rows = registered_checks()["smarts: functional warming runs no faster than the memory channel carries its "
                               "traffic"](True)
    channelled = [n for n in platform_names() if load_platform(n).memory.queueing == "bandwidth"]
    assert len(rows) == len(channelled) >= 3
    assert [(r.name, r.detail) for r in rows if not r.passed] == []
    for r in rows:
        assert r.measured == r.expected                         # at the bandwidth, to two decimals
    p = load_platform("nehalem")
    gbs, ahead, stood = warmed_copy(p, 1.0, pace=False)
    assert stood == 0 and ahead > 0.99 * (MS.CH_BUCKETS << MS.CH_BUCKET_BITS)
