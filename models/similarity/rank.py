"""Rank vectors and rank-correlation similarity between signatures (seed 002, §2.4, Eq. 4).

Both rank correlations used by the engine are normalised inner products of a
per-signature *embedding*, which is what lets the similarity matrix, the
minimum spanning tree and Algorithm 1 run without materialising an n x n matrix:

* Spearman's rho with average ranks for ties: the embedding of a signature is
  its rank vector pi(v) centred and scaled to unit length; rho(a, b) is the dot
  product of two embeddings (the Pearson correlation of the rank vectors, which
  is what ``scipy.stats.spearmanr`` computes and what Eq. 4 reduces to when
  there are no ties).
* Kendall's tau-b: the embedding is the vector of signs sign(v_j - v_i) over the
  M(M-1)/2 component pairs i < j, scaled to unit length; tau_b(a, b) is the dot
  product (concordant minus discordant pairs over the square roots of the
  untied pair counts), as ``scipy.stats.kendalltau`` computes by default.

A signature whose components are all equal has no ranking: its embedding is the
zero vector, so its similarity to every other signature is 0 (distance 1).
"""

from __future__ import annotations

import numpy as np
from numba import njit

METHODS = ("spearman", "kendall")

# Distances 1 - rho are quantised to this grid before the MST and the clustering, so that values that are
# equal in exact arithmetic (e.g. two rho = 0.7 computed along different rounding paths) are equal ties.
DISTANCE_DECIMALS = 10
_SCALE = 10.0 ** DISTANCE_DECIMALS


def average_ranks(signatures: np.ndarray) -> np.ndarray:
    """Row-wise ranks 1..M of ``signatures`` (n x M), ties given the average of their ranks.

    Equal to ``scipy.stats.rankdata(row, method="average")`` for every row.
    """
    s = np.asarray(signatures, dtype=np.float64)
    if s.ndim != 2:
        raise ValueError(f"signatures must be a 2-d array, got shape {s.shape}")
    n, m = s.shape
    if m == 0:
        return np.empty((n, 0))
    order = np.argsort(s, axis=1, kind="mergesort")
    srt = np.take_along_axis(s, order, axis=1)
    pos = np.broadcast_to(np.arange(m), (n, m))
    first = np.ones((n, m), dtype=bool)
    first[:, 1:] = srt[:, 1:] != srt[:, :-1]
    last = np.ones((n, m), dtype=bool)
    last[:, :-1] = first[:, 1:]
    start = np.maximum.accumulate(np.where(first, pos, 0), axis=1)
    end = np.minimum.accumulate(np.where(last, pos, m)[:, ::-1], axis=1)[:, ::-1]
    ranks = np.empty((n, m))
    np.put_along_axis(ranks, order, (start + end) / 2.0 + 1.0, axis=1)
    return ranks


def spearman_embedding(signatures: np.ndarray) -> np.ndarray:
    """Unit-length centred rank vectors: rho(a, b) = E[a] @ E[b]."""
    ranks = average_ranks(signatures)
    centred = ranks - ranks.mean(axis=1, keepdims=True)
    return _unit_rows(centred)


def kendall_embedding(signatures: np.ndarray) -> np.ndarray:
    """Unit-length pair-sign vectors: tau_b(a, b) = E[a] @ E[b]."""
    s = np.asarray(signatures, dtype=np.float64)
    m = s.shape[1]
    i, j = np.triu_indices(m, k=1)
    signs = np.sign(s[:, j] - s[:, i])
    return _unit_rows(signs)


def _unit_rows(x: np.ndarray) -> np.ndarray:
    norm = np.sqrt(np.einsum("ij,ij->i", x, x))
    out = np.zeros_like(x)
    ok = norm > 0
    out[ok] = x[ok] / norm[ok, None]
    return out


def embedding(signatures: np.ndarray, method: str = "spearman") -> np.ndarray:
    if method == "spearman":
        return spearman_embedding(signatures)
    if method == "kendall":
        return kendall_embedding(signatures)
    raise ValueError(f"unknown rank correlation {method!r}; known: {', '.join(METHODS)}")


def degenerate_rows(emb: np.ndarray) -> np.ndarray:
    """Rows without a ranking (all components tied): their rank correlation is undefined."""
    return ~np.any(emb != 0.0, axis=1)


def similarity_matrix(emb: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """Dense similarity (rho or tau) matrix, or the block of ``rows`` against all signatures.

    Undefined correlations (a signature with all components tied) are 0; the diagonal is 1.
    """
    sel = np.arange(emb.shape[0]) if rows is None else np.asarray(rows)
    out = emb[sel] @ emb.T
    np.clip(out, -1.0, 1.0, out=out)
    out[np.arange(len(sel)), sel] = 1.0
    return out


def quantise_distance(d: np.ndarray | float) -> np.ndarray | float:
    """Distances on the engine's grid (see ``DISTANCE_DECIMALS``), never below 0."""
    return np.maximum(np.floor(np.asarray(d) * _SCALE + 0.5) / _SCALE, 0.0)


def distance_matrix(emb: np.ndarray) -> np.ndarray:
    """Dense quantised distance 1 - similarity (zero diagonal)."""
    d = quantise_distance(1.0 - similarity_matrix(emb))
    np.fill_diagonal(d, 0.0)
    return d


@njit(cache=True, inline="always")
def pair_distance(x: np.ndarray, gram: bool, i: int, j: int) -> float:
    """Distance between items i and j: ``x`` is an embedding (gram=True) or a dense distance matrix."""
    if not gram:
        return x[i, j]
    s = 0.0
    for t in range(x.shape[1]):
        s += x[i, t] * x[j, t]
    if s > 1.0:
        s = 1.0
    elif s < -1.0:
        s = -1.0
    d = np.floor((1.0 - s) * _SCALE + 0.5) / _SCALE
    return d if d > 0.0 else 0.0
