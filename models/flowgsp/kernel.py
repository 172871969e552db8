"""The fast support counter: one depth-first walk enumeration per start vertex for a whole generation.

Notation: a walk ``p = p[0..m]``; ``A(x)`` the attribute set of vertex x; ``g = g_max``, ``w = w_max``.
For a trie node ``t`` (prefix ``<s_0..s_j>``, element ``s_j``; see :mod:`trie`) say that *t completes at
m* when ``p[0..m]`` can be cut into windows and gaps matching the prefix with the window of ``s_j``
ending exactly at ``m``.  By the definitions (issue 6, "Semantics"):

* a depth-1 node (``j = 0``) completes at ``m <= w`` iff ``A(p[0])`` meets ``s_0``, the window
  ``p[0..m]`` is left-tight and ``s_0 ⊆ A(p[0]) ∪ ... ∪ A(p[m])``;
* a deeper node completes at ``m`` iff for some window start ``s`` in ``[m-w, m]`` its parent completes
  at some ``c`` in ``[s-1-g, s-1]`` and ``s_j ⊆ A(p[s]) ∪ ... ∪ A(p[m])``.  The union grows as ``s``
  decreases, so only the earliest usable start matters: with ``c_min`` the parent's earliest completion
  in ``[m-w-g-1, m-1]``, the start is ``max(c_min + 1, m - w)``.

``p[0..m]`` contains a candidate iff its terminal node completes at m; the walk counts for the candidate
iff this is the candidate's first completion along the walk (no proper prefix contains it).

So the kernel enumerates, from every start vertex, the tree of walks once for all candidates.  At each
position it keeps the list of internal nodes completing there (a stack over the depth-first search).
For every parent that completed within the last ``w + g + 1`` positions it forms the attribute union
of the usable window and looks up, by binary search on the smallest attribute of their element, only
the children whose element could be covered by it.  A candidate that completed is marked done for the
rest of that walk's subtree (the mark carries the position and a per-position epoch, so backtracking
clears it for free).  A walk is extended while some internal node completed recently enough for a
child to complete later.  Each counted walk is a distinct vertex sequence, added once, so the sums are
exactly the definition's sums of minima.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from whatif.jitcache import drop_stale_caches
from whatif.models.flowgsp.graph import GraphChunk
from whatif.models.flowgsp.trie import CandidateTrie

_BIG = np.int64(1) << np.int64(60)


@njit(cache=True, nogil=True)
def _subset(node_words, t, U, j):
    for w in range(node_words.shape[1]):
        if node_words[t, w] & ~U[j, w]:
            return False
    return True


@njit(cache=True, nogil=True)
def _grow(a):
    b = np.zeros(2 * len(a), dtype=a.dtype)
    b[:len(a)] = a
    return b


@njit(cache=True, nogil=True, inline="always")
def _matched(t, m, base, cnt, comp, node_cand, node_internal, done_level, done_epoch, epoch, sf, sw, mf, mw,
             lastc):
    """Trie node ``t`` is matched by the walk ending at position ``m``: its candidate (if any) gains the
    walk's supports once per walk, and an internal node joins level ``m``'s list to be extended.
    Returns the (possibly grown) list and its new count."""
    c = node_cand[t]
    if c >= 0 and not (done_level[c] <= m and done_epoch[c] == epoch[done_level[c]]):
        sf[c] += mf[m]
        sw[c] += mw[m]
        done_level[c] = m
        done_epoch[c] = epoch[m]
    if node_internal[t]:
        if base + cnt == len(comp):
            comp = _grow(comp)
        comp[base + cnt] = t
        cnt += 1
        lastc[m] = m
    return comp, cnt


@njit(cache=True, nogil=True)
def count_supports(indptr, indices, edge_f, vertex_w, vertex_sf, attr_words, vattr_ptr, vattr_ids,
                   node_parent, node_words, node_cand, node_internal, child_ptr, child_min, child_ids,
                   d1_ptr, d1_ids, n_cand, max_depth, gap, window):
    """(S_f, S_w) of every candidate of a trie over one graph chunk."""
    n = len(indptr) - 1
    N = len(node_parent)
    nw = attr_words.shape[1]
    sf = np.zeros(n_cand)
    sw = np.zeros(n_cand)
    if N == 0 or max_depth == 0:
        return sf, sw
    L = max_depth * (window + 1) + (max_depth - 1) * gap  # longest walk that can contain a candidate
    vert = np.zeros(L, dtype=np.int64)
    epos = np.zeros(L, dtype=np.int64)
    mf = np.zeros(L)
    mw = np.zeros(L)
    epoch = np.zeros(L, dtype=np.int64)
    lastc = np.zeros(L, dtype=np.int64)       # last position <= m where an internal node completed
    comp_start = np.zeros(L + 1, dtype=np.int64)
    comp_n = np.zeros(L, dtype=np.int64)
    comp = np.zeros(4096, dtype=np.int64)  # stack of the internal nodes completing at each position
    done_level = np.full(n_cand, _BIG, dtype=np.int64)
    done_epoch = np.zeros(n_cand, dtype=np.int64)
    pstamp = np.zeros(N, dtype=np.int64)
    cstamp = np.zeros(N, dtype=np.int64)
    pend = np.zeros(N, dtype=np.int64)
    U = np.zeros((window + 1, nw), dtype=np.uint64)
    found = np.zeros(nw, dtype=np.uint64)
    stamp = 0
    epoch_counter = 0

    for v in range(n):
        # depth-1 nodes whose element meets A(v)
        stamp += 1
        npend = 0
        for p in range(vattr_ptr[v], vattr_ptr[v + 1]):
            a = vattr_ids[p]
            for q in range(d1_ptr[a], d1_ptr[a + 1]):
                t = d1_ids[q]
                if pstamp[t] != stamp:
                    pstamp[t] = stamp
                    pend[npend] = t
                    npend += 1
        if npend == 0:
            continue
        d = 0
        m = 0
        x = v
        f_new = vertex_sf[v]
        w_new = vertex_w[v]
        while True:
            # ---- place vertex x at position m (= d for the new level) and process it
            vert[m] = x
            mf[m] = f_new
            mw[m] = w_new
            epoch_counter += 1
            epoch[m] = epoch_counter
            comp_start[m] = 0 if m == 0 else comp_start[m - 1] + comp_n[m - 1]
            cnt = 0
            base = comp_start[m]
            prev_last = -_BIG if m == 0 else lastc[m - 1]
            lastc[m] = prev_last
            # unions U[j] = A(p[m-j]) | ... | A(p[m]) for j = 0..min(w, m)
            jmax = min(window, m)
            for j in range(jmax + 1):
                y = vert[m - j]
                for ww in range(nw):
                    U[j, ww] = attr_words[y, ww] if j == 0 else (U[j - 1, ww] | attr_words[y, ww])
            # depth-1 nodes: window p[0..m], left-tight
            if m <= window:
                for q in range(npend):
                    t = pend[q]
                    if not _subset(node_words, t, U, m):
                        continue
                    tight = True
                    for ww in range(nw):
                        found[ww] = attr_words[vert[0], ww] & node_words[t, ww]
                    for j in range(1, m + 1):
                        y = vert[j]
                        held = True
                        for ww in range(nw):
                            if found[ww] & ~attr_words[y, ww]:
                                held = False
                        if held:
                            tight = False
                            break
                        for ww in range(nw):
                            found[ww] |= attr_words[y, ww] & node_words[t, ww]
                    if not tight:
                        continue
                    comp, cnt = _matched(t, m, base, cnt, comp, node_cand, node_internal, done_level, done_epoch,
                                         epoch, sf, sw, mf, mw, lastc)
            # children of parents that completed in [m - w - g - 1, m - 1]
            if m > 0 and prev_last >= m - window - gap - 1:
                stamp += 1
                pst = stamp
                stamp += 1
                cst = stamp
                lo = max(0, m - window - gap - 1)
                for lev in range(lo, m):
                    for r in range(comp_start[lev], comp_start[lev] + comp_n[lev]):
                        q = comp[r]
                        if pstamp[q] == pst:
                            continue
                        pstamp[q] = pst
                        s = max(lev + 1, m - window)
                        jU = m - s
                        c_lo = child_ptr[q]
                        c_hi = child_ptr[q + 1]
                        for xpos in range(s, m + 1):
                            y = vert[xpos]
                            for p in range(vattr_ptr[y], vattr_ptr[y + 1]):
                                a = vattr_ids[p]
                                # first child with child_min >= a
                                lo_b = c_lo
                                hi_b = c_hi
                                while lo_b < hi_b:
                                    mid = (lo_b + hi_b) >> 1
                                    if child_min[mid] < a:
                                        lo_b = mid + 1
                                    else:
                                        hi_b = mid
                                k = lo_b
                                while k < c_hi and child_min[k] == a:
                                    t = child_ids[k]
                                    k += 1
                                    if cstamp[t] == cst:
                                        continue
                                    if not _subset(node_words, t, U, jU):
                                        continue
                                    cstamp[t] = cst
                                    comp, cnt = _matched(t, m, base, cnt, comp, node_cand, node_internal, done_level,
                                                         done_epoch, epoch, sf, sw, mf, mw, lastc)
            comp_n[m] = cnt
            alive = (lastc[m] >= m - window - gap) or (m < window and npend > 0)
            if alive and m + 1 < L:
                epos[m] = indptr[x]
                d = m
            else:
                d = m - 1
            # ---- next walk: advance the deepest level with an unexplored edge
            found_next = False
            while d >= 0:
                u = vert[d]
                e = epos[d]
                if e == indptr[u + 1]:
                    d -= 1
                    continue
                epos[d] = e + 1
                x = indices[e]
                f_new = min(mf[d], edge_f[e])
                w_new = min(mw[d], vertex_w[x])
                m = d + 1
                found_next = True
                break
            if not found_next:
                break
    return sf, sw


def count_chunk(chunk: GraphChunk, trie: CandidateTrie, gap: int, window: int) -> np.ndarray:
    """``[[S_f], [S_w]]`` (shape 2 x n_candidates) of a generation's candidates over one chunk."""
    sf, sw = count_supports(chunk.indptr, chunk.indices, chunk.edge_f, chunk.vertex_w, chunk.vertex_sf,
                            chunk.attr_words, chunk.vattr_ptr, chunk.vattr_ids, trie.node_parent, trie.node_words,
                            trie.node_cand, trie.node_internal, trie.child_ptr, trie.child_min, trie.child_ids,
                            trie.d1_ptr, trie.d1_ids, trie.n_candidates, trie.max_depth, int(gap), int(window))
    return np.vstack([sf, sw])


drop_stale_caches("flowgsp", (sys.modules[__name__],))      # (loads its kernels without the registry refresh)
