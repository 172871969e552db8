"""A generation's candidates as a trie of element prefixes, flattened for the counting kernel.

Node ``t`` at depth ``j`` stands for the prefix ``<s_0, ..., s_{j-1}>`` shared by one or more candidates;
its *element* is ``s_{j-1}``.  A node is *terminal* when its prefix is itself a candidate and *internal*
when it has children.  Children are sorted by the smallest attribute of their element so that the kernel
finds, by binary search, the children whose element might be covered by a given set of attributes.
Depth-1 nodes are indexed by every attribute of their element (a walk must start on one of them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from whatif.models.flowgsp.sequences import Seq


@dataclass(frozen=True)
class CandidateTrie:
    n_candidates: int
    max_depth: int
    node_parent: np.ndarray     # int64[N], -1 for depth-1 nodes
    node_words: np.ndarray      # uint64[N, n_words]: attribute bitset of the node's element
    node_cand: np.ndarray       # int64[N]: candidate index of a terminal node, else -1
    node_internal: np.ndarray   # bool[N]
    child_ptr: np.ndarray       # int64[N + 1]: children of t are child_ids[child_ptr[t]:child_ptr[t+1]]
    child_min: np.ndarray       # int64: smallest attribute of each child's element (ascending per parent)
    child_ids: np.ndarray       # int64
    d1_ptr: np.ndarray          # int64[n_attributes + 1]: depth-1 nodes whose element holds attribute a
    d1_ids: np.ndarray          # int64

    @property
    def n_nodes(self) -> int:
        return len(self.node_parent)


def build_trie(cands: Sequence[Seq], n_attributes: int) -> CandidateTrie:
    n_words = max(1, (n_attributes + 63) // 64)
    index: dict[Seq, int] = {}
    parent: list[int] = []
    element: list[tuple[int, ...]] = []
    cand_of: list[int] = []
    for c, seq in enumerate(cands):
        prev = -1
        for j in range(1, len(seq) + 1):
            key = tuple(seq[:j])
            t = index.get(key)
            if t is None:
                t = len(parent)
                index[key] = t
                parent.append(prev)
                element.append(tuple(seq[j - 1]))
                cand_of.append(-1)
            prev = t
        cand_of[prev] = c
    N = len(parent)
    node_parent = np.asarray(parent, dtype=np.int64).reshape(N)
    node_words = np.zeros((N, n_words), dtype=np.uint64)
    for t, elem in enumerate(element):
        for a in elem:
            node_words[t, a >> 6] |= np.uint64(1) << np.uint64(a & 63)
    mins = np.asarray([min(e) for e in element], dtype=np.int64).reshape(N)
    has_parent = node_parent >= 0
    kids = np.flatnonzero(has_parent)
    order = kids[np.lexsort((mins[kids], node_parent[kids]))]
    counts = np.bincount(node_parent[kids], minlength=N) if N else np.zeros(0, dtype=np.int64)
    child_ptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(counts, out=child_ptr[1:])
    d1 = np.flatnonzero(~has_parent)
    pairs = sorted((a, int(t)) for t in d1 for a in element[t])
    d1_ptr = np.zeros(n_attributes + 1, dtype=np.int64)
    np.cumsum(np.bincount(np.asarray([a for a, _ in pairs], dtype=np.int64), minlength=n_attributes),
              out=d1_ptr[1:])
    return CandidateTrie(n_candidates=len(cands), max_depth=max((len(s) for s in cands), default=0),
                         node_parent=node_parent, node_words=node_words,
                         node_cand=np.asarray(cand_of, dtype=np.int64).reshape(N), node_internal=counts > 0,
                         child_ptr=child_ptr, child_min=mins[order].astype(np.int64), child_ids=order.astype(np.int64),
                         d1_ptr=d1_ptr, d1_ids=np.asarray([t for _, t in pairs], dtype=np.int64))
