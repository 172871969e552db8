"""The fast kernel agrees with the oracle (explicit walk enumeration) on random small graphs with cycles,
self-loops, branching, several methods, gaps and windows; whole mining runs agree as well."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from whatif.models.flowgsp import EFG, FlowGSP, count_candidates
from whatif.models.flowgsp.reference import all_supports, reference_mine
from whatif.models.flowgsp.sequences import first_generation, next_generation

LETTERS = ("A", "B", "C", "D")
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True, database=None)


@st.composite
def small_efgs(draw, max_vertices=6, n_letters=4):
    """One or two methods of 1..max_vertices vertices, random attribute sets, weights and edges."""
    methods = []
    for m in range(draw(st.integers(1, 2))):
        n = draw(st.integers(1, max_vertices))
        verts = [{"id": 10 * i + 3, "weight": draw(st.integers(0, 4)),
                  "attributes": sorted(draw(st.sets(st.sampled_from(LETTERS[:n_letters]), max_size=3)))}
                 for i in range(n)]
        edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.integers(0, 5)),
                              max_size=2 * n))
        methods.append({"name": f"m{m}", "vertices": verts,
                        "edges": [[10 * s + 3, 10 * d + 3, f] for s, d, f in edges]})
    if not any(m["edges"] for m in methods):
        methods[0]["edges"].append([3, 3, 1])
    if sum(e[2] for m in methods for e in m["edges"]) == 0:
        next(m for m in methods if m["edges"])["edges"][0][2] = 1
    if sum(v["weight"] for m in methods for v in m["vertices"]) == 0:
        methods[0]["vertices"][0]["weight"] = 1
    return EFG.from_methods(methods, attribute_names=LETTERS[:n_letters])


def _candidates(efg: EFG, rng_pick: list[int]) -> list:
    g1 = first_generation(efg.n_attributes)
    g2 = next_generation(g1)
    g3 = next_generation(g2)
    picked = [g3[i % len(g3)] for i in rng_pick]
    return g1 + g2 + sorted(set(picked))


def _assert_agree(efg, cands, gap, window, chunk_vertices=3):
    ref = all_supports(efg, cands, gap, window)
    fast = count_candidates(efg, cands, gap, window, chunk_vertices=chunk_vertices)
    for i, seq in enumerate(cands):
        assert fast[:, i] == pytest.approx(ref[seq], rel=1e-9, abs=1e-12), (seq, gap, window)


@pytest.mark.parametrize("gap", [0, 1, 2])
@pytest.mark.parametrize("window", [0, 1])
@settings(max_examples=100, **SETTINGS)
@given(efg=small_efgs(), pick=st.lists(st.integers(0, 10_000), min_size=1, max_size=8))
def test_fast_agrees_with_oracle(gap, window, efg, pick):
    _assert_agree(efg, _candidates(efg, pick), gap, window)


@settings(max_examples=60, **SETTINGS)
@given(efg=small_efgs(max_vertices=5), pick=st.lists(st.integers(0, 10_000), min_size=1, max_size=6))
def test_fast_agrees_with_oracle_on_wide_windows(efg, pick):
    _assert_agree(efg, _candidates(efg, pick), 1, 2)


@settings(max_examples=60, **SETTINGS)
@given(efg=small_efgs(), gap=st.integers(0, 2), window=st.integers(0, 1))
def test_whole_mining_agrees_with_oracle(efg, gap, window):
    # thresholds far from any ratio of small integers, so that rounding never decides what is kept
    ms, md = 0.0437, 0.0713
    ref = reference_mine(efg, gap, window, 3, ms, md)
    res = FlowGSP(gap=gap, window=window, n_generations=3, min_support=ms, min_diff_support=md, workers=1).fit(efg)
    names = efg.attribute_names
    got = {tuple(tuple(names.index(a) for a in e) for e in s.elements): (s.sf, s.sw) for s in res.sequences}
    assert set(got) == set(ref)
    for seq, (sf, sw) in ref.items():
        assert got[seq] == pytest.approx((sf, sw), rel=1e-9, abs=1e-12)


def test_chunking_does_not_change_supports():
    rng = np.random.default_rng(5)
    methods = []
    for m in range(7):
        n = int(rng.integers(2, 6))
        methods.append({"name": f"m{m}",
                        "vertices": [{"id": i, "weight": int(rng.integers(0, 5)),
                                      "attributes": [a for a in LETTERS if rng.random() < 0.4]} for i in range(n)],
                        "edges": [[int(rng.integers(0, n)), int(rng.integers(0, n)), int(rng.integers(1, 5))]
                                  for _ in range(2 * n)]})
    efg = EFG.from_methods(methods)
    cands = _candidates(efg, list(range(12)))
    one = count_candidates(efg, cands, 1, 1, chunk_vertices=10_000)
    many = count_candidates(efg, cands, 1, 1, chunk_vertices=1)
    assert len(efg.chunk_bounds(1)) == 7
    assert np.allclose(one, many, rtol=1e-12, atol=0)
    assert one.sum() > 0
