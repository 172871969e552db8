"""The oracle (models/flowgsp/reference.py) against hand-worked cases of the definitions, and the fast
implementation against the same cases."""

from fractions import Fraction

import numpy as np
import pytest

from whatif.models.flowgsp import EFG, count_candidates
from whatif.models.flowgsp.reference import ReferenceGraph, contains, reference_next_generation, sequence_support

A, B, C, D = 0, 1, 2, 3
NAMES = ("A", "B", "C", "D")


def fs(*xs):
    return frozenset(xs)


def build(vertices, edges):
    """vertices: [(attribute letters, weight)], edges: [(src, dst, freq)] — one method, ids = positions."""
    return EFG.from_methods([{"name": "m",
                              "vertices": [{"id": i, "weight": w, "attributes": list(a)} for i, (a, w) in
                                           enumerate(vertices)],
                              "edges": [list(e) for e in edges]}], attribute_names=NAMES)


@pytest.mark.parametrize("walk, seq, gap, window, expected", [
    ([fs(A)], ((A,),), 0, 0, True),
    ([fs(B)], ((A,),), 0, 0, False),
    ([fs(A), fs(B)], ((A,),), 0, 0, False),           # the last window must end at p[-1]
    ([fs(A), fs(B)], ((A,),), 0, 1, True),            # ... which a window of two vertices does
    ([fs(A), fs(B)], ((A,), (B,)), 0, 0, True),
    ([fs(A), fs(C), fs(B)], ((A,), (B,)), 0, 0, False),
    ([fs(A), fs(C), fs(B)], ((A,), (B,)), 1, 0, True),   # one gap vertex
    ([fs(A), fs(C), fs(B)], ((A,), (B,)), 0, 1, True),   # or a window [C, B] that covers (B)
    ([fs(A), fs(C), fs(C), fs(B)], ((A,), (B,)), 1, 0, False),
    ([fs(A), fs(C), fs(C), fs(B)], ((A,), (B,)), 2, 0, True),
    ([fs(A), fs(B)], ((A, B),), 0, 1, True),          # a set covered by a window of two vertices
    ([fs(A), fs(A, B)], ((A, B),), 0, 1, False),      # not left-tight: p[1] holds every attribute found before
    ([fs(C), fs(A, B)], ((A, B),), 0, 1, False),      # p[0] must hold an attribute of s_0
    ([fs(B), fs(A)], ((A, B),), 0, 1, True),
    ([fs(A), fs(C), fs(B)], ((A, B),), 0, 2, True),
    ([fs(A), fs(A), fs(B)], ((A, B),), 0, 2, False),
    ([fs(A), fs(C), fs(A, B)], ((A, B),), 0, 2, False),
    ([fs(A, B), fs(C), fs(D)], ((A,), (C, D)), 0, 1, True),
    ([fs(A), fs(B), fs(A), fs(B)], ((A,), (B,), (A,), (B,)), 0, 0, True),
])
def test_contains_follows_the_definition(walk, seq, gap, window, expected):
    assert contains(walk, seq, gap, window) is expected


def test_next_generation_of_reference_special_cases():
    assert reference_next_generation([((A,),), ((B,),)]) == sorted([((A,), (A,)), ((A,), (B,)), ((B,), (A,)),
                                                                    ((B,), (B,)), ((A, B),)])
    # thesis §3.4.3: <(A,B),(C)> joins <(B),(C),(D)> into <(A,B),(C),(D)>, which survives the prune only
    # when its contiguous sub-sequence <(A),(C),(D)> was kept as well
    kept = [((A, B), (C,)), ((B,), (C,), (D,))]
    assert reference_next_generation(kept) == []
    assert reference_next_generation(kept + [((A,), (C,), (D,))]) == [((A, B), (C,), (D,))]
    # <(A,B),(C)> with <(B),(C,D)> gives <(A,B),(C,D)>
    assert reference_next_generation([((A, B), (C,)), ((B,), (C, D)), ((A,), (C, D)), ((A, B), (D,))]) == \
        [((A, B), (C, D))]


def _chain():
    # v0(A, w=1) -> v1(B, w=3) -> v2(B, w=0); frequencies 2 and 1
    return build([("A", 1), ("B", 3), ("B", 0)], [(0, 1, 2), (1, 2, 1)])


@pytest.mark.parametrize("seq, gap, window, sf, sw", [
    (((B,),), 0, 0, Fraction(2, 3) + Fraction(1, 3), Fraction(3, 4) + 0),
    (((A,),), 0, 0, Fraction(2, 3), Fraction(1, 4)),          # S_f(entry) = sum over its out-edges
    (((A,), (B,)), 0, 0, Fraction(2, 3), Fraction(1, 4)),
    (((A,), (B,)), 1, 1, Fraction(2, 3), Fraction(1, 4)),     # longer walks have a containing prefix
    (((A,), (B,), (B,)), 0, 0, Fraction(1, 3), Fraction(0)),
    (((A, B),), 0, 1, Fraction(2, 3), Fraction(1, 4)),
    (((B,), (A,)), 2, 1, Fraction(0), Fraction(0)),
])
def test_supports_on_a_chain(seq, gap, window, sf, sw):
    efg = _chain()
    ref = sequence_support(ReferenceGraph(efg), seq, gap, window)
    fast = count_candidates(efg, [seq], gap, window)[:, 0]
    assert ref == pytest.approx((float(sf), float(sw)), abs=1e-15)
    assert fast == pytest.approx((float(sf), float(sw)), abs=1e-15)


def test_every_shortest_walk_counts_once_on_branches_and_cycles():
    # v0(A) -> v1(C) -> v2(B), v0 -> v2, v2 -> v0 (cycle); weights 1, 1, 2
    efg = build([("A", 1), ("C", 1), ("B", 2)], [(0, 1, 1), (1, 2, 1), (0, 2, 2), (2, 0, 4)])
    F = {(0, 1): 1 / 8, (1, 2): 1 / 8, (0, 2): 2 / 8, (2, 0): 4 / 8}
    W = [0.25, 0.25, 0.5]
    sf0 = F[(2, 0)]
    # <(A),(B)> with g_max = 1: walks v0 v2 and v0 v1 v2 both count (neither is a prefix of the other)
    expected_sf = min(sf0, F[(0, 2)]) + min(sf0, F[(0, 1)], F[(1, 2)])
    expected_sw = min(W[0], W[2]) + min(W[0], W[1], W[2])
    for impl in ("reference", "fast"):
        if impl == "reference":
            got = sequence_support(ReferenceGraph(efg), ((A,), (B,)), 1, 0)
        else:
            got = tuple(count_candidates(efg, [((A,), (B,))], 1, 0)[:, 0])
        assert got == pytest.approx((expected_sf, expected_sw), rel=1e-12)
    # <(A),(B),(A),(B)> with g = w = 0 follows the cycle v0 v2 v0 v2 (vertices repeat)
    got = count_candidates(efg, [((A,), (B,), (A,), (B,))], 0, 0)[:, 0]
    assert got == pytest.approx((min(sf0, F[(0, 2)], F[(2, 0)]), min(W[0], W[2])), rel=1e-12)
    assert sequence_support(ReferenceGraph(efg), ((A,), (B,), (A,), (B,)), 0, 0) == pytest.approx(tuple(got))


def test_reference_normalises_independently():
    efg = build([("A", 2), ("B", 6)], [(0, 1, 3), (1, 0, 1)])
    g = ReferenceGraph(efg)
    assert g.W == [0.25, 0.75]
    assert g.Sf == [0.25, 0.75]
    assert np.allclose(efg.Sf_vertex, g.Sf) and np.allclose(efg.W, g.W)
