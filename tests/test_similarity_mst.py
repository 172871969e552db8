"""The dense Prim MST is a minimum spanning tree even with zero and tied distances."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import minimum_spanning_tree as scipy_mst

from whatif.models.similarity.mst import (DistanceSource, find_pair_at_least, minimum_spanning_tree,
                                   minimum_spanning_tree_dense)
from whatif.models.similarity.rank import distance_matrix, spearman_embedding


def slow_kruskal(d):
    """Obviously correct MST: all edges sorted by weight, union-find."""
    n = len(d)
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    edges = sorted((d[i][j], i, j) for i in range(n) for j in range(i + 1, n))
    out = []
    for w, i, j in edges:
        ri, rj = find(i), find(j)
        if ri != rj:
            parent[ri] = rj
            out.append((i, j, w))
    return out


@st.composite
def tied_matrices(draw):
    n = draw(st.integers(1, 12))
    grid = draw(st.sampled_from([[0.0], [0.0, 1.0], [0.0, 0.3, 0.7, 1.0], [0.0, 0.1, 0.2, 0.4, 0.8, 1.6, 2.0]]))
    vals = draw(st.lists(st.sampled_from(grid), min_size=n * (n - 1) // 2, max_size=n * (n - 1) // 2))
    d = np.zeros((n, n))
    d[np.triu_indices(n, 1)] = vals
    return d + d.T


def _is_spanning_tree(n, a, b):
    if len(a) != max(n - 1, 0):
        return False
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for x, y in zip(a, b):
        rx, ry = find(int(x)), find(int(y))
        if rx == ry:
            return False
        parent[rx] = ry
    return True


@settings(max_examples=150, deadline=None)
@given(tied_matrices())
def test_prim_matches_slow_kruskal_with_zeros_and_ties(d):
    tree = minimum_spanning_tree_dense(d)
    ref = slow_kruskal(d)
    assert _is_spanning_tree(len(d), tree.a, tree.b)
    np.testing.assert_array_equal(d[tree.a, tree.b], tree.weight)
    # every MST has the same multiset of edge weights, hence the same total weight
    assert sorted(tree.weight.tolist()) == sorted(w for _, _, w in ref)
    assert np.isclose(tree.total_weight, sum(w for _, _, w in ref), rtol=0, atol=1e-12)


def test_zero_distances_are_edges_unlike_scipy_csgraph():
    d = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 1.5], [1.0, 1.5, 0.0]])
    tree = minimum_spanning_tree_dense(d)
    assert sorted(tree.edges()) == [(0, 1, 0.0), (0, 2, 1.0)]
    assert tree.total_weight == 1.0
    # scipy reads the zero as "no edge" and spans the graph with the two heavier edges instead
    assert scipy_mst(d).sum() == 2.5


def test_prim_is_deterministic_on_ties():
    d = np.ones((6, 6)) - np.eye(6)
    t1, t2 = minimum_spanning_tree_dense(d), minimum_spanning_tree_dense(d.copy())
    assert t1.edges() == t2.edges() == [(0, v, 1.0) for v in range(1, 6)]


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 60), st.integers(0, 2**31 - 1), st.sampled_from([0.5, 0.25, 0.1]))
def test_embedding_paths_agree_with_dense_matrix(n, seed, step):
    """On-the-fly distances, with and without collapsing identical rankings, give MSTs of the same weight."""
    rng = np.random.default_rng(seed)
    s = np.round(rng.uniform(-1, 1, size=(n, 5)) / step) * step       # coarse grid: ties and duplicates
    emb = spearman_embedding(s)
    d = distance_matrix(emb)
    ref = sorted(w for _, _, w in slow_kruskal(d))
    for dedup in (False, True):
        src = DistanceSource.from_embedding(emb, dedup=dedup)
        tree = minimum_spanning_tree(src)
        assert _is_spanning_tree(n, tree.a, tree.b)
        assert sorted(tree.weight.tolist()) == ref
        np.testing.assert_array_equal(d[tree.a, tree.b], tree.weight)


def test_dedup_collapses_identical_rankings_only():
    s = np.array([[0.1, 0.5, 0.9], [0.2, 0.6, 0.95], [0.9, 0.5, 0.1], [0.3, 0.3, 0.3], [0.0, 0.0, 0.0]])
    src = DistanceSource.from_embedding(spearman_embedding(s), dedup=True)
    assert src.n_unique == 4                          # rows 0 and 1 share a ranking; 3 and 4 have none
    assert src.uid[0] == src.uid[1]
    assert src.distance(0, 1) == 0.0 and src.distance(3, 4) == 1.0 and src.distance(0, 2) == 2.0


def test_find_pair_at_least():
    d = np.array([[0, 0.2, 0.3], [0.2, 0, 0.9], [0.3, 0.9, 0]])
    idx = np.arange(3)
    assert find_pair_at_least(d, False, idx, 1.0) == (-1, -1)
    assert sorted(find_pair_at_least(d, False, idx, 0.9)) == [1, 2]
    assert find_pair_at_least(d, False, idx[:1], 0.1) == (-1, -1)
