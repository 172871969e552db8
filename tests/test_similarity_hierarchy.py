"""Algorithms 1 and 2 on one MST and its cut hierarchy equal a literal, slow implementation of the seed's
pseudo-code that rebuilds the similarity graph and its MST at every recursion step."""

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from pathlib import Path

from whatif.models.similarity.hierarchy import algorithm1, algorithm2, build_hierarchy
from whatif.models.similarity.mst import DistanceSource, minimum_spanning_tree, minimum_spanning_tree_dense
from whatif.models.similarity.rank import distance_matrix, spearman_embedding

TABLE1 = Path(__file__).parent / "data" / "seed002_table1.csv"


# ----------------------------------------------------------------------------- slow literal references
def slow_mst(d, items):
    """Kruskal over the complete graph on ``items``."""
    parent = {i: i for i in items}

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    out = []
    for w, i, j in sorted((d[i][j], i, j) for a, i in enumerate(items) for j in items[a + 1:]):
        if find(i) != find(j):
            parent[find(i)] = find(j)
            out.append((i, j, w))
    return out


def components(items, edges):
    adj = {i: [] for i in items}
    for i, j, _ in edges:
        adj[i].append(j)
        adj[j].append(i)
    seen, comps = set(), []
    for s in items:
        if s in seen:
            continue
        comp, stack = [], [s]
        seen.add(s)
        while stack:
            u = stack.pop()
            comp.append(u)
            for v in adj[u]:
                if v not in seen:
                    seen.add(v)
                    stack.append(v)
        comps.append(sorted(comp))
    return comps


def cut_max_edges(mst):
    w = max(e[2] for e in mst)
    return [e for e in mst if e[2] != w], w


def slow_algorithm1(d, g, rule, items=None, steps=None):
    """recursive_max_edge_cut(g, S) as printed: G = similarity graph of S; if g > edges(G): S is a cluster."""
    items = list(range(len(d))) if items is None else items
    steps = [] if steps is None else steps
    if len(items) == 1:
        return [items], steps
    mst = slow_mst(d, items)
    edges = [d[i][j] for a, i in enumerate(items) for j in items[a + 1:]] if rule == "graph" else \
        [e[2] for e in mst]
    if all(g > w for w in edges):
        return [items], steps
    kept, w = cut_max_edges(mst)
    parts = components(items, kept)
    steps.append((tuple(items), w, tuple(sorted(tuple(p) for p in parts))))
    out = []
    for p in parts:
        out += slow_algorithm1(d, g, rule, p, steps)[0]
    return out, steps


def slow_algorithm2(d, ref, items=None):
    """Stop when every MST edge at the reference has the maximum weight; else keep the reference's part."""
    items = list(range(len(d))) if items is None else items
    if len(items) == 1:
        return items
    mst = slow_mst(d, items)
    w = max(e[2] for e in mst)
    if all(e[2] == w for e in mst if ref in e[:2]):
        return sorted(items)
    kept, _ = cut_max_edges(mst)
    part = next(p for p in components(items, kept) if ref in p)
    return slow_algorithm2(d, ref, part)


# ----------------------------------------------------------------------------- strategies
@st.composite
def tied_matrices(draw):
    n = draw(st.integers(1, 11))
    grid = draw(st.sampled_from([[0.0, 1.0], [0.0, 0.3, 0.7, 1.0], [0.0, 0.1, 0.2, 0.4, 0.8, 1.6, 2.0],
                                 [0.05, 0.5, 0.9, 1.3, 1.9]]))
    vals = draw(st.lists(st.sampled_from(grid), min_size=n * (n - 1) // 2, max_size=n * (n - 1) // 2))
    d = np.zeros((n, n))
    d[np.triu_indices(n, 1)] = vals
    return d + d.T


thresholds = st.sampled_from([0.05, 0.1, 0.3, 0.5, 0.75, 1.0, 1.3, 1.9, 1.99])


def _fast(d, g, rule):
    src = DistanceSource.from_dense(d)
    h = build_hierarchy(minimum_spanning_tree(src))
    return h, src, algorithm1(h, src, g, rule)


@settings(max_examples=200, deadline=None)
@given(tied_matrices(), thresholds, st.sampled_from(["graph", "mst"]))
def test_algorithm1_equals_literal_recursion(d, g, rule):
    h, src, fast = _fast(d, g, rule)
    slow, slow_steps = slow_algorithm1(d, g, rule)
    assert sorted(tuple(c) for c in fast.clusters) == sorted(tuple(c) for c in slow)
    # the same cut steps: set split, weight cut, parts
    fast_steps = sorted((s.members, s.weight, tuple(sorted(s.parts))) for s in fast.steps)
    assert fast_steps == sorted(slow_steps)
    # labels agree with clusters; every cluster satisfies the stop rule
    for k, c in enumerate(fast.clusters):
        assert set(np.flatnonzero(fast.labels == k)) == set(c)
        if rule == "graph" and len(c) > 1:
            assert d[np.ix_(c, c)].max() < g


@settings(max_examples=200, deadline=None)
@given(tied_matrices(), st.data())
def test_algorithm2_equals_literal_recursion(d, data):
    ref = data.draw(st.integers(0, len(d) - 1))
    h = build_hierarchy(minimum_spanning_tree_dense(d))
    search = algorithm2(h, ref)
    assert list(search.cluster) == slow_algorithm2(d, ref)
    assert ref in search.cluster
    assert len(search.cluster) >= min(2, len(d))
    # the path shrinks from everything to the result
    if search.path:
        assert len(search.path[0][0]) == len(d) and search.path[-1][0] == search.cluster


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 40), st.integers(0, 2**31 - 1), thresholds, st.sampled_from(["graph", "mst"]))
def test_signature_path_with_dedup_equals_dense_path(n, seed, g, rule):
    rng = np.random.default_rng(seed)
    s = np.round(rng.uniform(-1, 1, size=(n, 5)) / 0.5) * 0.5
    emb = spearman_embedding(s)
    d = distance_matrix(emb)
    slow, _ = slow_algorithm1(d, g, rule)
    for dedup in (False, True):
        src = DistanceSource.from_embedding(emb, dedup=dedup)
        h = build_hierarchy(minimum_spanning_tree(src))
        fast = algorithm1(h, src, g, rule)
        assert sorted(fast.clusters) == sorted(tuple(c) for c in slow)
        ref = int(rng.integers(n))
        assert list(algorithm2(h, ref).cluster) == slow_algorithm2(d, ref)


def test_hierarchy_structure():
    d = np.array([[0, 0.1, 0.9, 0.9], [0.1, 0, 0.9, 0.9], [0.9, 0.9, 0, 0.1], [0.9, 0.9, 0.1, 0]])
    h = build_hierarchy(minimum_spanning_tree_dense(d))
    assert h.weight[h.root] == 0.9
    assert sorted(tuple(h.members(c)) for c in h.children[h.root]) == [(0, 1), (2, 3)]
    assert sorted(h.order.tolist()) == [0, 1, 2, 3]
    assert len(h.cut_edges[h.root]) == 1


def test_figure6_first_cut_on_seed002_harpertown():
    """Seed 002 §4.2: the first call cuts two edges, isolating 483.xalancbmk and {401.bzip2, 403.gcc,
    456.hmmer} from the rest; later 462/471 and 445/458 end up in clusters of their own."""
    df = pd.read_csv(TABLE1)
    block = df[df.platform == "harpertown"].dropna(axis=1, how="all")
    apps = block.application.tolist()
    emb = spearman_embedding(block.iloc[:, 2:].to_numpy())
    src = DistanceSource.from_embedding(emb)
    h = build_hierarchy(minimum_spanning_tree(src))
    res = algorithm1(h, src, 0.5, "graph")
    first = res.steps[0]
    assert len(first.edges) == 2 and first.weight == 0.7
    parts = sorted(sorted(apps[i] for i in p) for p in first.parts)
    assert ["483.xalancbmk"] in parts
    assert ["401.bzip2", "403.gcc", "456.hmmer"] in parts
    clusters = [sorted(apps[i] for i in c) for c in res.clusters]
    assert ["445.gobmk", "458.sjeng"] in clusters
    assert any({"462.libquantum", "471.omnetpp"} <= set(c) for c in clusters)
    assert ["400.perlbench"] in clusters
