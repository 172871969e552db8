"""Algorithms 1 and 2 of seed 002 (§3): recursive maximum-edge cuts of the minimum spanning tree.

Both algorithms repeatedly take a set S of applications, build the similarity
graph on S, compute its MST and cut *all* MST edges of maximum weight.  Two
facts make this cheap and independent of how ties are broken:

1. The MST of the whole graph restricted to a component left after cutting is
   an MST of the induced subgraph on that component (otherwise replacing it
   would give a lighter spanning tree of the whole graph), so one MST serves
   every recursion step.
2. For any threshold t, the components of "MST edges < t" equal the components
   of "graph edges < t" (the MST path is a minimax path), so the partition made
   by cutting the maximum edges is the same on every MST, ties or not.

The complete top-down sequence of cuts is therefore the single-linkage
hierarchy, built here bottom-up from the MST edges grouped by equal weight
(Kruskal order).  Each internal node is a set S that one step splits; its
``weight`` is the maximum MST edge inside S, i.e. the weight that is cut.

Algorithm 1 walks the hierarchy from the top and stops at a set S when
``g > every edge of the similarity graph on S`` (the pseudo-code's test on
G = compute_similarity_graph(S); ``stop_rule="graph"``, the default).  With
``stop_rule="mst"`` the test is applied to the MST edges of S only, which makes
the result the single-linkage clusters at height g.

Algorithm 2 walks down the branch holding the reference application and stops
at the set S where "the weight of the edges at the reference = the maximum edge
weight", read as: every MST edge at the reference within S has the maximum
weight, so one more cut would leave the reference alone.  The result is the
smallest set of the hierarchy that holds the reference and at least one other
application.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from .mst import DistanceSource, SpanningTree, find_pair_at_least

STOP_RULES = ("graph", "mst")


@dataclass(frozen=True)
class Hierarchy:
    """Nodes 0..n-1 are the items (leaves); nodes n.. are the sets that a cut splits."""

    n: int
    weight: np.ndarray            # per node; NaN for leaves
    children: tuple               # per node: tuple of child node ids (empty for leaves)
    cut_edges: tuple              # per node: tuple of MST edge indices cut when splitting it
    parent: np.ndarray            # per node; -1 for the root
    order: np.ndarray             # leaves in display order (children by smallest member)
    start: np.ndarray             # node's members are order[start:end]
    end: np.ndarray
    min_member: np.ndarray

    @property
    def root(self) -> int:
        return len(self.parent) - 1

    def members(self, node: int) -> np.ndarray:
        return np.sort(self.order[self.start[node]:self.end[node]])

    def size(self, node: int) -> int:
        return int(self.end[node] - self.start[node])

    def is_leaf(self, node: int) -> bool:
        return node < self.n


def build_hierarchy(tree: SpanningTree) -> Hierarchy:
    """The top-down sequence of maximum-edge cuts, built bottom-up from the MST edges."""
    n = tree.n
    uf = np.arange(n)

    def find(x: int) -> int:
        root = x
        while uf[root] != root:
            root = uf[root]
        while uf[x] != root:
            uf[x], x = root, uf[x]
        return root

    node_of_root = list(range(n))          # hierarchy node currently representing a UF root
    rep_vertex = list(range(n))            # a vertex inside each node
    weight = [np.nan] * n
    children: list[tuple] = [()] * n
    cut_edges: list[tuple] = [()] * n
    min_member = list(range(n))
    k = len(tree.weight)
    idx = np.lexsort((np.maximum(tree.a, tree.b), np.minimum(tree.a, tree.b), tree.weight)) if k else np.array([], int)
    pos = 0
    while pos < k:
        w = tree.weight[idx[pos]]
        stop = pos
        while stop < k and tree.weight[idx[stop]] == w:
            stop += 1
        group = idx[pos:stop]
        touched: dict[int, None] = {}
        for e in group:
            touched[node_of_root[find(int(tree.a[e]))]] = None
            touched[node_of_root[find(int(tree.b[e]))]] = None
        for e in group:
            ra, rb = find(int(tree.a[e])), find(int(tree.b[e]))
            if ra != rb:
                uf[max(ra, rb)] = min(ra, rb)
        new_groups: dict[int, list[int]] = {}
        for old in touched:
            new_groups.setdefault(find(rep_vertex[old]), []).append(old)
        edges_of: dict[int, list[int]] = {}
        for e in group:
            edges_of.setdefault(find(int(tree.a[e])), []).append(int(e))
        for root, olds in sorted(new_groups.items(), key=lambda kv: min(min_member[o] for o in kv[1])):
            olds.sort(key=lambda o: min_member[o])
            node = len(weight)
            weight.append(float(w))
            children.append(tuple(olds))
            cut_edges.append(tuple(sorted(edges_of.get(root, []))))
            min_member.append(min(min_member[o] for o in olds))
            rep_vertex.append(rep_vertex[olds[0]])
            node_of_root[root] = node
        pos = stop
    total = len(weight)
    parent = np.full(total, -1, dtype=np.int64)
    for node, kids in enumerate(children):
        for c in kids:
            parent[c] = node
    roots = np.flatnonzero(parent < 0)
    if n > 0 and len(roots) != 1:
        raise RuntimeError(f"the spanning tree is not connected ({len(roots)} components)")
    # leaf order: depth-first, children in order of their smallest member
    order = np.empty(n, dtype=np.int64)
    start = np.zeros(total, dtype=np.int64)
    end = np.zeros(total, dtype=np.int64)
    cursor = 0
    if n:
        stack: list[tuple[int, bool]] = [(int(roots[0]), False)]
        while stack:
            node, done = stack.pop()
            if done:
                end[node] = cursor
                continue
            start[node] = cursor
            if node < n:
                order[cursor] = node
                cursor += 1
                end[node] = cursor
                continue
            stack.append((node, True))
            for c in reversed(children[node]):
                stack.append((c, False))
    # the root is the last node: the last merge creates it
    return Hierarchy(n, np.asarray(weight), tuple(children), tuple(cut_edges), parent, order, start, end,
                     np.asarray(min_member))


@dataclass(frozen=True)
class CutStep:
    """One call of recursive_max_edge_cut that cut edges (Figure 6)."""

    step: int                  # 1-based, breadth-first
    depth: int                 # recursion level, 1 = the whole set
    members: tuple             # item indices of the set that was split
    weight: float              # the maximum MST edge weight, cut
    edges: tuple               # MST edge indices cut
    parts: tuple               # tuple of item-index tuples, the pieces


@dataclass(frozen=True)
class Clustering:
    clusters: tuple            # tuple of item-index tuples, ordered by smallest member
    labels: np.ndarray         # cluster number per item
    steps: tuple               # CutStep, breadth-first

    @property
    def n_clusters(self) -> int:
        return len(self.clusters)


def algorithm1(hierarchy: Hierarchy, source: DistanceSource, threshold: float,
               stop_rule: str = "graph") -> Clustering:
    """Performance-centric clustering of a set of applications (Algorithm 1)."""
    if stop_rule not in STOP_RULES:
        raise ValueError(f"unknown stop rule {stop_rule!r}; known: {', '.join(STOP_RULES)}")
    h = hierarchy
    if h.n == 0:
        return Clustering((), np.empty(0, dtype=np.int64), ())
    clusters: list[tuple] = []
    steps: list[CutStep] = []
    queue: deque = deque([(h.root, 1, None)])
    while queue:
        node, depth, witness = queue.popleft()
        if h.is_leaf(node):
            clusters.append((int(node),))
            continue
        members = h.members(node)
        if stop_rule == "mst":
            is_cluster = h.weight[node] < threshold
        elif h.weight[node] >= threshold:   # the maximum MST edge is itself a graph edge >= g
            is_cluster = False
            witness = None
        else:
            is_cluster, witness = _all_closer(source, members, threshold, witness)
        if is_cluster:
            clusters.append(tuple(int(m) for m in members))
            continue
        parts = tuple(tuple(int(m) for m in h.members(c)) for c in h.children[node])
        steps.append(CutStep(len(steps) + 1, depth, tuple(int(m) for m in members), float(h.weight[node]),
                             h.cut_edges[node], parts))
        for c in h.children[node]:
            w = witness
            if w is not None:
                inside = h.members(c)
                if not (np.isin(w[0], inside) and np.isin(w[1], inside)):
                    w = None
            queue.append((c, depth + 1, w))
    clusters.sort(key=lambda c: c[0])
    labels = np.empty(h.n, dtype=np.int64)
    for k, c in enumerate(clusters):
        labels[list(c)] = k
    return Clustering(tuple(clusters), labels, tuple(steps))


def _all_closer(source: DistanceSource, members: np.ndarray, g: float, witness):
    """(True, None) if every pair of members is closer than g, else (False, a far pair of items)."""
    if witness is not None and source.distance(witness[0], witness[1]) >= g:
        return False, witness
    uids, first = np.unique(source.uid[members], return_index=True)
    i, j = find_pair_at_least(source.x, source.gram, uids.astype(np.int64), float(g))
    if i < 0:
        return True, None
    items_i = members[first[np.searchsorted(uids, i)]]
    items_j = members[first[np.searchsorted(uids, j)]]
    return False, (int(items_i), int(items_j))


@dataclass(frozen=True)
class ReferenceSearch:
    """Result of Algorithm 2: the smallest cluster holding the reference, and the sets it passed through."""

    reference: int
    cluster: tuple             # item indices, sorted
    path: tuple                # (members tuple, cut weight) of each set examined, outermost first


def algorithm2(hierarchy: Hierarchy, reference: int) -> ReferenceSearch:
    """Performance-centric search of one cluster containing the reference application (Algorithm 2)."""
    h = hierarchy
    if not 0 <= reference < h.n:
        raise ValueError(f"reference index {reference} outside 0..{h.n - 1}")
    if h.n == 1:
        return ReferenceSearch(reference, (reference,), ())
    # the chain of sets from the root down to the reference's leaf
    chain = [reference]
    while h.parent[chain[-1]] >= 0:
        chain.append(int(h.parent[chain[-1]]))
    chain.reverse()                      # root ... leaf
    stop_at = chain[-2]                  # the set whose next cut isolates the reference
    path = tuple((tuple(int(m) for m in h.members(node)), float(h.weight[node])) for node in chain[:-1])
    return ReferenceSearch(reference, tuple(int(m) for m in h.members(stop_at)), path)


def cluster_labels(clusters, n: int) -> np.ndarray:
    labels = np.full(n, -1, dtype=np.int64)
    for k, c in enumerate(clusters):
        labels[list(c)] = k
    return labels
