"""The CPMF-style instruction profiler against its reference twin (tests/profref.py), and each sampled
attribute traced to the mechanism that produces it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from profref import reference_profile
from whatif.simulator.core import Core
from whatif.simulator.core import timing as TM
from whatif.simulator.core.microbench import random_program
from whatif.simulator.core.profiler import EVENT_COUNTERS, SAMPLED_EVENTS, InstructionProfiler
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.isa import InstrBlock
from whatif.simulator.machine import Machine
from whatif.simulator.memory.hierarchy import MemoryHierarchy
from whatif.simulator.platform import load_platform

ARRAYS = ("ticks", "events", "occurrences", "executions", "fall", "taken")


@dataclass
class StaticTable:
    """The static program a random dynamic stream walks: its distinct addresses, op and taken target."""
    pc: np.ndarray
    op: np.ndarray
    tgt: np.ndarray

    def __len__(self) -> int:
        return len(self.pc)

    @classmethod
    def of(cls, block: InstrBlock) -> "StaticTable":
        pc, first = np.unique(block.pc, return_index=True)
        tgt = np.full(len(pc), -1, np.int64)
        taken = np.flatnonzero(block.taken != 0)
        for k in taken[::-1]:              # the first taken target seen wins, as a static target does
            hit = np.searchsorted(pc, block.target[k])
            if hit < len(pc) and pc[hit] == block.target[k]:
                tgt[np.searchsorted(pc, block.pc[k])] = hit
        return cls(pc, block.op[first].copy(), tgt)


def profile_both(platform_name, overrides, block, static, period, chunks=(0.3, 0.7, 1.0), landing="group",
                 foreign=None):
    """Run ``block`` through a core in chunks (and ``foreign`` instructions outside the program between
    the first two), fold the records into the fast profiler, and compute the reference from all records."""
    p = load_platform(platform_name, list(overrides))
    core = Core(p, MemoryHierarchy(p, seed=2))
    prof = InstructionProfiler(static, period, p.core.mispredict_penalty)
    prof.start(0)
    all_records, all_pc = [], []
    recs = np.zeros((len(block), TM.NREC), np.int64)
    start = 0
    for j, frac in enumerate(chunks):
        stop = int(round(frac * len(block)))
        n = core.run(block, start=start, stop=stop, records=recs)
        prof.consume(recs[start:start + n], block.pc[start:start + n], n)
        all_records.append(recs[start:start + n].copy())
        all_pc.append(block.pc[start:start + n])
        start += n
        if j == 0 and foreign is not None:
            frec = np.zeros((len(foreign), TM.NREC), np.int64)
            m = core.run(foreign, records=frec)
            prof.consume(frec, foreign.pc, m)
            all_records.append(frec[:m].copy())
            all_pc.append(foreign.pc[:m])
    prof.finish()
    records = np.concatenate(all_records)
    pcs = np.concatenate(all_pc)
    idx = np.searchsorted(static.pc, pcs).clip(0, len(static) - 1)
    sids = np.where(static.pc[idx] == pcs, idx, -1)
    ref = reference_profile(records, sids, len(static), period, p.core.mispredict_penalty, 0, static.tgt, static.op,
                            landing=landing)
    return prof, ref, records


@pytest.mark.parametrize("platform_name, overrides", [
    ("z10", ()),                                                       # in order, pairs, AGI
    ("z10", ("core.group_size=1",)),
    ("nehalem", ("core.rob_entries=16", "l1i.size_kb=8", "l1i.associativity=2")),     # out of order
    ("mpc7447a", ()),
])
@pytest.mark.parametrize("seed, period", [(1, 37), (2, 211)])
def test_profiler_matches_its_reference(platform_name, overrides, seed, period):
    p = load_platform(platform_name, list(overrides))
    block = random_program(2500, seed, p.isa, code_kb=24, data_kb=512)
    foreign = random_program(120, seed + 10, p.isa, code_kb=1, data_kb=16)
    foreign.pc[:] += np.uint64(0x7000_0000)                      # addresses outside the program (an OS handler)
    prof, ref, records = profile_both(platform_name, overrides, block, StaticTable.of(block), period,
                                      foreign=foreign)
    for name in ARRAYS:
        assert getattr(prof, name).tolist() == ref[name].tolist(), name
    assert prof.samples == ref["samples"] > 20 and prof.samples_outside == ref["outside"]
    assert prof.ticks.sum() + prof.samples_outside == prof.samples
    # the streams exercise what the profile counts
    assert prof.events[:, SAMPLED_EVENTS.index("Icachemiss")].sum() > 0
    assert prof.events[:, SAMPLED_EVENTS.index("Dcachemiss")].sum() > 0
    assert prof.occurrences[:, EVENT_COUNTERS.index("MISPREDICT")].sum() > 0


def test_pairing_moves_an_instructions_samples_to_its_partner():
    """On the z10 the sample lands on the first instruction of the head's issue group: against landing
    on the head itself, some instructions lose all their samples to their partner; with one instruction
    per group the two rules agree."""
    block = random_program(3000, 4, "z/Architecture", code_kb=24, data_kb=512)
    static = StaticTable.of(block)
    paired, head_ref, records = profile_both("z10", (), block, static, 29, landing="head")
    assert ((records[:, TM.R_FLAGS] & TM.RF_LEADER) == 0).mean() > 0.2       # many second members
    moved = (head_ref["ticks"] > 0) & (paired.ticks == 0)
    assert moved.sum() > 20
    assert paired.ticks.sum() == head_ref["ticks"].sum()              # the same samples, other instructions
    single, head_single, _ = profile_both("z10", ("core.group_size=1",), block, static, 29, landing="head")
    assert single.ticks.tolist() == head_single["ticks"].tolist()
    assert single.events.tolist() == head_single["events"].tolist()


def test_bad_period_is_refused():
    static = StaticTable(np.array([0x400000], np.uint64), np.zeros(1, np.uint8), np.full(1, -1))
    for bad in (0, -5, 2.5, True):
        with pytest.raises(SimulatorInputError, match="'period' parameter of InstructionProfiler"):
            InstructionProfiler(static, bad, 12)


# ---- each attribute comes from a mechanism (Machine runs of the WebSphere workload on the z10) -----
WORKLOAD = "websphere/was"
WARMUP = 4_000_000            # the burn-in: every method of the request mix has run


def z10_profile(*overrides, predictor=None, instructions=1_000_000):
    m = Machine(load_platform("z10", list(overrides)), WORKLOAD, WARMUP + instructions, seed=3, noise=None,
                predictor=predictor, profile_every=53)
    m.warm_up(WARMUP).run()
    prof = m.profile()
    return {name: int(prof.events[:, j].sum()) for j, name in enumerate(SAMPLED_EVENTS)}, prof, m


@pytest.fixture(scope="module")
def baseline():
    return z10_profile()


def test_the_baseline_shows_every_attribute(baseline):
    events, prof, m = baseline
    assert all(v > 0 for v in events.values()), events
    # a sample every 53 cycles of the measured run, the last no later than its last retirement: `cycles`
    # counts cycles 0 .. the last retirement, so a run of exactly k x 53 cycles holds k - 1 samples
    assert prof.samples == (m.cycles - 1) // 53
    assert prof.executions.sum() == 1_000_000


def test_a_huge_l1i_removes_icachemiss(baseline):
    """An 8 MB L1I holds the code; the L1.5 is made non-inclusive, since an inclusive 3 MB L1.5 would
    still evict code from an L1 larger than itself (back-invalidation)."""
    events, _, _ = z10_profile("l1i.size_kb=8192", "l1_5.inclusion=non_inclusive")
    assert events["Icachemiss"] <= 0.05 * baseline[0]["Icachemiss"]


def test_a_tlb_as_large_as_the_code_removes_tlbmiss(baseline):
    events, _, _ = z10_profile("itlb.entries=16384", "itlb.associativity=16")
    assert baseline[0]["TLBmiss"] > 1000 and events["TLBmiss"] <= 0.05 * baseline[0]["TLBmiss"]


def test_a_perfect_predictor_removes_branchmispredict(baseline):
    events, prof, _ = z10_profile(predictor="perfect")
    assert events["Branchmispredict"] == 0
    assert prof.occurrences[:, EVENT_COUNTERS.index("MISPREDICT")].sum() == 0


def test_no_agi_penalty_removes_agistall(baseline):
    events, prof, _ = z10_profile("core.agi_penalty=0")
    assert events["AGIstall"] == 0 and prof.occurrences[:, EVENT_COUNTERS.index("AGI")].sum() == 0


def test_profiling_changes_nothing_it_measures():
    p = load_platform("z10")
    plain = Machine(p, WORKLOAD, 300_000, seed=3, noise=None).run()
    profiled = Machine(p, WORKLOAD, 300_000, seed=3, noise=None, profile_every=97).run()
    assert plain.counters() == profiled.counters() and plain.cpi_stack() == profiled.cpi_stack()
    with pytest.raises(ValueError, match="without profile_every"):
        plain.profile()
