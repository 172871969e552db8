"""The numba walker against the plain-Python reference walker, and property tests of the
synthesiser's invariants over randomly drawn workload descriptions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from whatif.simulator.isa import FIELDS, OP_CALL, OP_LOAD, OP_RET, OP_STORE
from whatif.simulator.synth import Synthesizer
from whatif.simulator.synth import kernel as K
from whatif.simulator.synth import stats
from whatif.simulator.synth.reference import ReferenceWalker
from test_synth_cases import ref, spec, static_index, synth


def same(a, b) -> list[str]:
    return [name for name, _ in FIELDS if not np.array_equal(getattr(a, name), getattr(b, name))]


@pytest.mark.parametrize("isa", ["x86_64", "powerpc32", "z/Architecture"])
def test_kernel_matches_reference(isa):
    s = synth(spec(code={"max_call_instructions": 800}), isa=isa, seed=4, instructions=30_000)
    r = ReferenceWalker(s.program, s.schedule, s.run_seed)
    for n in (7_000, 13_000):           # two blocks: state carried across calls
        assert same(s.next_block(n), r.walk(n)) == []
    assert [a for a, _ in s.phase_boundaries()[1:]] == [a for a, _ in r.switches]
    assert len(r.switches) >= 1


def test_kernel_matches_reference_on_a_catalog_workload():
    s = Synthesizer("429.mcf", "x86_64", seed=2, run_seed=9, instructions=100_000)
    r = ReferenceWalker(s.program, s.schedule, s.run_seed)
    assert same(s.next_block(25_000), r.walk(25_000)) == []


# ------------------------------------------------------------------------------------ properties
probs = st.floats(0.0, 1.0)


@st.composite
def workloads(draw):
    load, store, fp = draw(st.floats(0.05, 0.35)), draw(st.floats(0.0, 0.2)), draw(st.floats(0.0, 0.2))
    branch = draw(st.floats(0.05, 0.3))
    other = 1.0 - load - store - fp - branch
    if other < 0:
        load, store, fp = load / 2, store / 2, fp / 2
        other = 1.0 - load - store - fp - branch
    b, p = draw(probs), draw(probs)
    kinds = np.array([b, p, 1.0]) / (b + p + 1.0)
    streams = {}
    for i, kind in enumerate(draw(st.lists(st.sampled_from(["sequential", "strided", "chase", "random"]),
                                           min_size=1, max_size=4))):
        s = {"kind": kind, "footprint_kb": draw(st.sampled_from([4, 64, 1024])), "weight": draw(st.floats(0.1, 1.0))}
        if kind == "random":
            s.update(skew=draw(st.sampled_from([0.0, 0.7, 1.0, 1.3])), accesses_per_block=draw(st.floats(1.0, 4.0)))
        if kind == "chase":
            s.update(fields=draw(st.floats(0.0, 3.0)))
        streams[f"s{i}"] = s
    if sum(1 for s in streams.values() if s["kind"] == "chase") > 3:
        for s in streams.values():
            s["kind"] = "sequential"
    doc = {"description": "drawn", "mix": {"load": load, "store": store, "branch": branch, "fp": fp, "other": other},
           "code": {"functions": draw(st.integers(1, 30)), "function_instructions": draw(st.floats(4, 80)),
                    "call_depth": draw(st.integers(0, 4)), "calls_per_function": draw(st.floats(0, 3)),
                    "indirect_calls": draw(probs), "indirect_targets": draw(st.integers(1, 5)),
                    "hot_skew": draw(st.floats(0, 2)), "max_call_instructions": 3000},
           "branches": {"taken_rate": draw(probs), "loops": draw(probs), "loop_trips": draw(st.floats(1, 30)),
                        "fixed_trip_loops": draw(probs), "loop_trip_spread": draw(probs),
                        "biased": float(kinds[0]), "periodic": float(kinds[1]), "random": float(1 - kinds[0] - kinds[1]),
                        "random_taken": draw(probs), "max_period": draw(st.integers(2, 12))},
           "dependences": {"agi": draw(probs), "partial_writes": draw(st.floats(0, 0.2)), "far": draw(probs)},
           "streams": streams,
           "phases": [{"name": "p0", "fraction": 0.5}, {"name": "p1", "fraction": 0.5,
                                                         "code": {"functions": draw(st.integers(1, 10))}}]}
    return doc


@given(workloads(), st.sampled_from(["x86_64", "powerpc32", "z/Architecture"]), st.integers(0, 1000),
       st.lists(st.integers(1, 2500), min_size=1, max_size=3))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_synthesiser_invariants(doc, isa, seed, cuts):
    s = Synthesizer(ref(doc), isa, seed=seed, instructions=20_000)
    blocks = [s.next_block(n) for n in cuts]
    whole = type(blocks[0])(**{n: np.concatenate([getattr(b, n) for b in blocks]) for n, _ in FIELDS})
    whole.validate()
    # a taken transfer goes to its target, anything else falls through to pc + size; calls and returns nest
    assert stats.control_flow_errors(whole) == []
    depth = np.cumsum((whole.op == OP_CALL).astype(int) - (whole.op == OP_RET).astype(int))
    assert depth.min() >= 0
    # the same stream whatever the block sizes, and the same as the reference walker
    r = ReferenceWalker(s.program, s.schedule, s.run_seed)
    assert same(whole, r.walk(len(whole))) == []
    # memory accesses stay in their stream's region; chase loads depend on the previous chase load
    p = s.program
    sidx = static_index(s, whole)
    mem = np.isin(whole.op, (OP_LOAD, OP_STORE))
    j = np.where(mem, p.arg[sidx], 0)
    base, size = p.streams.base[j], p.streams.size[j].astype(np.uint64)
    assert ((whole.mem_addr >= base) & (whole.mem_addr + whole.mem_size <= base + size))[mem].all()
    adv = np.flatnonzero(p.kind[sidx] == K.K_ADV)
    for a, b in zip(adv[:-1], adv[1:]):
        if j[a] == j[b]:
            reg = whole.areg[b]
            writers = np.flatnonzero(whole.dst[:b] == reg)
            assert writers[-1] == a
    # registers within the ISA's files
    from whatif.simulator.isa import isa_for
    spec_ = isa_for(isa)
    regs = np.concatenate([whole.dst, whole.src1, whole.src2, whole.areg])
    assert regs.max() < spec_.gprs + spec_.fprs
