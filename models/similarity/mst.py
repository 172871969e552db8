"""Minimum spanning tree of the (complete) similarity graph: dense Prim's algorithm in numba.

Why not ``scipy.sparse.csgraph.minimum_spanning_tree``: it reads a zero entry as
"no edge", and identical signatures have distance exactly 0, so it would drop
exactly the edges that matter most.  Here every pair is an edge, including
zero-distance pairs, and ties are broken deterministically (the lowest-index
vertex is added first; a vertex keeps the first tree vertex that reached its
current key).

Distances are computed on the fly from the signature embedding (see
``rank.py``), so no n x n matrix is materialised: O(n^2 p) time, O(n p) memory.
Signatures with identical rank vectors have distance 0; they are collapsed to
one representative first (``dedup=True``), which for M = 5 stalls leaves at most
541 distinct rankings whatever n is, and re-attached by zero-weight edges.  Any
MST has the same multiset of edge weights, and Algorithms 1 and 2 give the same
clusters on every MST of the graph (see ``hierarchy.py``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np
from numba import njit

from whatif.jitcache import drop_stale_caches

from . import rank
from .rank import degenerate_rows, pair_distance


@dataclass(frozen=True)
class DistanceSource:
    """How to get the distance between two items: through their unique representatives.

    ``x`` holds the representatives' embedding rows (``gram=True``) or a dense distance matrix over the
    representatives (``gram=False``); ``uid[i]`` is item i's representative.
    """

    x: np.ndarray
    gram: bool
    uid: np.ndarray

    @classmethod
    def from_dense(cls, d: np.ndarray) -> "DistanceSource":
        d = np.ascontiguousarray(d, dtype=np.float64)
        return cls(d, False, np.arange(d.shape[0]))

    @classmethod
    def from_embedding(cls, emb: np.ndarray, dedup: bool = True) -> "DistanceSource":
        emb = np.ascontiguousarray(emb, dtype=np.float64)
        n = emb.shape[0]
        if not dedup or n == 0:
            return cls(emb, True, np.arange(n))
        uid = np.empty(n, dtype=np.int64)
        degenerate = degenerate_rows(emb)
        # identical rankings -> identical embedding rows (same arithmetic) -> distance 0; rows without a
        # ranking stay apart (their similarity is undefined, taken as 0 even to each other).
        keep = np.flatnonzero(~degenerate)
        _, first, inverse = np.unique(emb[keep], axis=0, return_index=True, return_inverse=True)
        rep_rows = keep[first]                       # representative item of each unique ranking
        order = np.argsort(rep_rows, kind="stable")  # number representatives in table order
        rank_of = np.empty(len(order), dtype=np.int64)
        rank_of[order] = np.arange(len(order))
        uid[keep] = rank_of[inverse.ravel()]
        deg = np.flatnonzero(degenerate)
        uid[deg] = len(order) + np.arange(len(deg))
        reps = np.concatenate([rep_rows[order], deg])
        return cls(emb[reps], True, uid)

    @property
    def n_unique(self) -> int:
        return self.x.shape[0]

    def distance(self, i: int, j: int) -> float:
        if i == j:
            return 0.0
        a, b = int(self.uid[i]), int(self.uid[j])
        return 0.0 if a == b else float(pair_distance(self.x, self.gram, a, b))


@dataclass(frozen=True)
class SpanningTree:
    """The n-1 edges (a[k], b[k]) with weight[k], in the order Prim's algorithm added them."""

    n: int
    a: np.ndarray
    b: np.ndarray
    weight: np.ndarray

    @property
    def total_weight(self) -> float:
        return float(self.weight.sum())

    def edges(self) -> list[tuple[int, int, float]]:
        return [(int(x), int(y), float(w)) for x, y, w in zip(self.a, self.b, self.weight)]


@njit(cache=True)
def _prim(x: np.ndarray, gram: bool, n: int):
    """Dense Prim from vertex 0; returns (parent, key, order) of the n vertices."""
    in_tree = np.zeros(n, dtype=np.bool_)
    key = np.full(n, np.inf)
    parent = np.full(n, -1, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    if n == 0:
        return parent, key, order
    key[0] = 0.0
    for it in range(n):
        u = -1
        best = np.inf
        for v in range(n):
            if not in_tree[v] and key[v] < best:
                best = key[v]
                u = v
        if u < 0:  # only if distances are +inf (never for distances in [0, 2])
            for v in range(n):
                if not in_tree[v]:
                    u = v
                    break
        in_tree[u] = True
        order[it] = u
        for v in range(n):
            if not in_tree[v]:
                d = pair_distance(x, gram, u, v)
                if d < key[v]:
                    key[v] = d
                    parent[v] = u
    return parent, key, order


def minimum_spanning_tree(source: DistanceSource) -> SpanningTree:
    """MST over all items of ``source`` (duplicates attached to their representative at distance 0)."""
    n = len(source.uid)
    m = source.n_unique
    parent, key, order = _prim(source.x, source.gram, m)
    # representative index (first item with that uid) of each unique row
    rep_item = np.full(m, -1, dtype=np.int64)
    items = np.arange(n)
    first_seen = np.unique(source.uid, return_index=True)[1]
    rep_item[source.uid[first_seen]] = items[first_seen]
    a_u = parent[order[1:]]
    b_u = order[1:]
    a = list(rep_item[a_u])
    b = list(rep_item[b_u])
    w = list(key[order[1:]])
    dup = items[rep_item[source.uid] != items]
    a += list(rep_item[source.uid[dup]])
    b += list(dup)
    w += [0.0] * len(dup)
    return SpanningTree(n, np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64),
                        np.asarray(w, dtype=np.float64))


def minimum_spanning_tree_dense(d: np.ndarray) -> SpanningTree:
    """MST of a dense symmetric distance matrix (zero and tied entries are ordinary edges)."""
    return minimum_spanning_tree(DistanceSource.from_dense(d))


@njit(cache=True)
def find_pair_at_least(x: np.ndarray, gram: bool, idx: np.ndarray, g: float):
    """A pair (i, j) of ``idx`` with distance >= g, or (-1, -1) if every pair is closer than g.

    Tries a double sweep (farthest from the first item, then farthest from that) before the full scan, so
    a set that is not a cluster is usually rejected in O(len(idx)).
    """
    m = idx.shape[0]
    if m < 2:
        return -1, -1
    far = idx[0]
    best = -1.0
    for t in range(1, m):
        d = pair_distance(x, gram, idx[0], idx[t])
        if d > best:
            best = d
            far = idx[t]
    if best >= g:
        return idx[0], far
    other = far
    best = -1.0
    for t in range(m):
        d = pair_distance(x, gram, far, idx[t])
        if d > best:
            best = d
            other = idx[t]
    if best >= g:
        return far, other
    for s in range(m):
        for t in range(s + 1, m):
            if pair_distance(x, gram, idx[s], idx[t]) >= g:
                return idx[s], idx[t]
    return -1, -1


drop_stale_caches("similarity_mst", (rank, sys.modules[__name__]))      # the kernels inline rank's pair_distance
