"""Every shipped workload synthesises on its ISA, and its calibration meets its description."""

from __future__ import annotations

import numpy as np
import pytest

from whatif.simulator.isa import FIELDS, isa_for
from whatif.simulator.synth import Synthesizer, stats
from whatif.simulator.synth.compare import stream_shares
from whatif.simulator.synth.structure import taken_range
from whatif.simulator.workload import workload_names

ISA = {"specjvm98": "powerpc32", "cint2006": "x86_64", "yahoo_y": "x86_64",   # the seeds' platforms
       "websphere": "z/Architecture"}


@pytest.mark.parametrize("name", workload_names())
def test_workload_synthesises(name):
    isa = ISA[name.split("/")[0]]
    s = Synthesizer(name, isa, seed=0, instructions=40_000)
    block = s.next_block(40_000)
    block.validate()
    assert stats.control_flow_errors(block) == []
    assert block.dst.max() < isa_for(isa).gprs + isa_for(isa).fprs
    # the phases run in order from the first one
    names = [n for _, n in s.phase_boundaries()]
    assert names[0] == s.phase_names[0]
    assert all(s.phase_names.index(b) == (s.phase_names.index(a) + 1) % len(s.phase_names)
               for a, b in zip(names, names[1:]))
    prog = s.program
    for p, params in enumerate(prog.phases):
        exp = prog.expected(p)
        # one hot loop can dominate a phase: its few instructions only approximate fractional shares
        sel = prog.phase == p
        granularity = prog.weight[sel].max() / prog.weight[sel].sum()
        for key in ("load", "store", "branch", "fp"):
            assert abs(exp[key] - getattr(params.mix, key)) < 0.01 + granularity, (params.name, key)
        target = params.branches.taken_rate
        if target is not None:
            # as close as the loops, the data-dependent branches and the hottest ifs allow
            lo, hi = taken_range(prog.codes[p])
            step = prog.codes[p].taken_step
            assert abs(exp["taken_rate"] - min(max(target, lo), hi)) < 0.03 + step / 2, params.name
        assert exp["instructions_per_top_call"] <= params.code.max_call_instructions
        shares = exp["stream_shares"]
        assert abs(sum(shares.values()) - 1.0) < 1e-6
    # a rare stream is never dealt a hot access: each stream within 2.5x of its described share (2.02x at
    # most, 429.mcf's nodes stores; 19x before, 458.sjeng's hash loads)
    assert all(r.realised <= 2.5 * r.described for r in stream_shares(prog) if r.described > 0)


def test_z_architecture_instruction_lengths():
    block = Synthesizer("cint2006/401.bzip2", "z/Architecture", seed=0).next_block(20_000)
    assert set(np.unique(block.size).tolist()) == {2, 4, 6}
    assert stats.control_flow_errors(block) == []


def test_catalog_programs_are_cached_per_seed():
    a = Synthesizer("specjvm98/ecm", "powerpc32", seed=3)
    b = Synthesizer("ecm", "powerpc32", seed=3, run_seed=4)
    assert a.program is b.program
    x, y = a.next_block(5000), Synthesizer("ecm", "powerpc32", seed=3).next_block(5000)
    assert all(np.array_equal(getattr(x, n), getattr(y, n)) for n, _ in FIELDS)
