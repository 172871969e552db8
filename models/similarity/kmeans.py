"""k-means by the Hartigan–Wong algorithm (Applied Statistics algorithm AS 136), R's default.

Seed 002 compares its clusters with 3- and 5-means "using the Hartigan and
Wong algorithm" (Table 8), i.e. R's ``kmeans()`` default.  This is a port of
AS 136 (subroutines KMNS, OPTRA and QTRAN, as shipped in R's ``kmns.f``):
points start in their nearest centre's cluster, then alternate an
optimal-transfer stage (move a point to the cluster that most reduces the
within-cluster sum of squares, using the n/(n±1) corrections) and a
quick-transfer stage (swap between each point's two closest clusters), until
no point moves during a whole optimal-transfer pass.

Starting centres follow R: k distinct data rows drawn at random (here from a
seeded ``numpy.random.Generator``); with ``n_init > 1`` the start with the
smallest total within-cluster sum of squares is kept (R's ``nstart``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np
from numba import njit

from whatif.jitcache import drop_stale_caches

_BIG = 1.0e30


@dataclass(frozen=True)
class KMeansResult:
    k: int
    labels: np.ndarray          # cluster 0..k-1 per point
    centers: np.ndarray         # k x p
    withinss: np.ndarray        # per cluster
    iterations: int
    converged: bool
    algorithm: str = "Hartigan-Wong (AS 136)"

    @property
    def tot_withinss(self) -> float:
        return float(self.withinss.sum())


@njit(cache=True)
def _sqdist(a, i, c, l):
    s = 0.0
    for j in range(a.shape[1]):
        t = a[i, j] - c[l, j]
        s += t * t
    return s


@njit(cache=True)
def _transfer(a, c, i, l1, l2, nc, an1, an2):
    """Move point i from cluster l1 to l2 and update centres, counts and the n/(n±1) factors."""
    al1 = float(nc[l1])
    alw = al1 - 1.0
    al2 = float(nc[l2])
    alt = al2 + 1.0
    for j in range(a.shape[1]):
        c[l1, j] = (c[l1, j] * al1 - a[i, j]) / alw
        c[l2, j] = (c[l2, j] * al2 + a[i, j]) / alt
    nc[l1] -= 1
    nc[l2] += 1
    an2[l1] = alw / al1
    an1[l1] = _BIG
    if alw > 1.0:
        an1[l1] = alw / (alw - 1.0)
    an1[l2] = alt / al2
    an2[l2] = alt / (alt + 1.0)


@njit(cache=True)
def _optra(a, c, ic1, ic2, nc, an1, an2, ncp, d, itran, live, indx):
    m = a.shape[0]
    k = c.shape[0]
    for l in range(k):
        if itran[l] == 1:
            live[l] = m + 1      # LIVE and NCP hold 1-based point numbers, as in the Fortran
    for i in range(m):
        indx += 1
        l1 = ic1[i]
        if nc[l1] != 1:
            if ncp[l1] != 0:
                d[i] = _sqdist(a, i, c, l1) * an1[l1]
            da = _sqdist(a, i, c, ic2[i])
            r2 = da * an2[ic2[i]]
            ll = ic2[i]
            l2 = ll
            for l in range(k):
                # I .GE. LIVE(L): cluster L is not in the live set (no change in the last M steps)
                if (i + 1 >= live[l1] and i + 1 >= live[l]) or l == l1 or l == ll:
                    continue
                rr = r2 / an2[l]
                dc = 0.0
                skip = False
                for j in range(a.shape[1]):
                    t = a[i, j] - c[l, j]
                    dc += t * t
                    if dc >= rr:
                        skip = True
                        break
                if skip:
                    continue
                r2 = dc * an2[l]
                l2 = l
            if r2 >= d[i]:
                ic2[i] = l2
            else:
                indx = 0
                live[l1] = m + i + 1
                live[l2] = m + i + 1
                ncp[l1] = i + 1
                ncp[l2] = i + 1
                _transfer(a, c, i, l1, l2, nc, an1, an2)
                ic1[i] = l2
                ic2[i] = l1
        if indx == m:
            return indx
    for l in range(k):
        itran[l] = 0
        live[l] -= m
    return indx


@njit(cache=True)
def _qtran(a, c, ic1, ic2, nc, an1, an2, ncp, d, itran, indx, max_steps):
    m = a.shape[0]
    icoun = 0
    istep = 0
    while True:
        for i in range(m):
            icoun += 1
            istep += 1
            if istep >= max_steps:
                return indx, False
            l1 = ic1[i]
            l2 = ic2[i]
            if nc[l1] != 1:
                if istep <= ncp[l1]:
                    d[i] = _sqdist(a, i, c, l1) * an1[l1]
                if istep < ncp[l1] or istep < ncp[l2]:
                    r2 = d[i] / an2[l2]
                    dd = 0.0
                    moved = True
                    for j in range(a.shape[1]):
                        t = a[i, j] - c[l2, j]
                        dd += t * t
                        if dd >= r2:
                            moved = False
                            break
                    if moved:
                        icoun = 0
                        indx = 0
                        itran[l1] = 1
                        itran[l2] = 1
                        ncp[l1] = istep + m
                        ncp[l2] = istep + m
                        _transfer(a, c, i, l1, l2, nc, an1, an2)
                        ic1[i] = l2
                        ic2[i] = l1
            if icoun == m:
                return indx, True


@njit(cache=True)
def _kmns(a, c, max_iter):
    """AS 136 KMNS.  ``c`` (k x p) holds the initial centres and is overwritten.

    Returns (labels, withinss, iterations, ifault) with ifault 0 = converged, 1 = empty cluster at the
    start, 2 = max_iter reached, 4 = quick-transfer step limit reached (as R's ``kmns``).
    """
    m, p = a.shape
    k = c.shape[0]
    ic1 = np.zeros(m, dtype=np.int64)
    ic2 = np.zeros(m, dtype=np.int64)
    nc = np.zeros(k, dtype=np.int64)
    an1 = np.zeros(k)
    an2 = np.zeros(k)
    ncp = np.zeros(k, dtype=np.int64)
    d = np.zeros(m)
    itran = np.zeros(k, dtype=np.int64)
    live = np.zeros(k, dtype=np.int64)
    wss = np.zeros(k)
    # each point's two closest centres
    for i in range(m):
        ic1[i] = 0
        ic2[i] = 1
        dt0 = _sqdist(a, i, c, 0)
        dt1 = _sqdist(a, i, c, 1)
        if dt0 > dt1:
            ic1[i] = 1
            ic2[i] = 0
            dt0, dt1 = dt1, dt0
        for l in range(2, k):
            db = _sqdist(a, i, c, l)
            if db < dt1:
                if db < dt0:
                    dt1 = dt0
                    ic2[i] = ic1[i]
                    dt0 = db
                    ic1[i] = l
                else:
                    dt1 = db
                    ic2[i] = l
    # centres = means of the initial clusters
    c[:, :] = 0.0
    for i in range(m):
        l = ic1[i]
        nc[l] += 1
        for j in range(p):
            c[l, j] += a[i, j]
    for l in range(k):
        if nc[l] == 0:
            return ic1, wss, 0, 1
        aa = float(nc[l])
        for j in range(p):
            c[l, j] /= aa
        an2[l] = aa / (aa + 1.0)
        an1[l] = _BIG
        if aa > 1.0:
            an1[l] = aa / (aa - 1.0)
        itran[l] = 1
        ncp[l] = -1
    indx = 0
    ifault = 2
    iterations = 0
    max_qtran = 50 * m
    for it in range(max_iter):
        iterations = it + 1
        indx = _optra(a, c, ic1, ic2, nc, an1, an2, ncp, d, itran, live, indx)
        if indx == m:
            ifault = 0
            break
        indx, ok = _qtran(a, c, ic1, ic2, nc, an1, an2, ncp, d, itran, indx, max_qtran)
        if not ok:
            ifault = 4
            break
        if k == 2:
            ifault = 0
            break
        for l in range(k):
            ncp[l] = 0
    # final centres and within-cluster sums of squares from scratch
    c[:, :] = 0.0
    nc[:] = 0
    for i in range(m):
        l = ic1[i]
        nc[l] += 1
        for j in range(p):
            c[l, j] += a[i, j]
    for l in range(k):
        for j in range(p):
            c[l, j] /= max(nc[l], 1)
    for i in range(m):
        wss[ic1[i]] += _sqdist(a, i, c, ic1[i])
    return ic1, wss, iterations, ifault


def hartigan_wong(x: np.ndarray, k: int, *, n_init: int = 10, max_iter: int = 50,
                  rng: np.random.Generator | None = None, centers: np.ndarray | None = None) -> KMeansResult:
    """k-means of the rows of ``x`` (Hartigan–Wong).  ``centers`` fixes the start (then ``n_init`` is 1).

    Raises ValueError when k is not in 2..(number of distinct rows - 1) or k > number of distinct rows
    (R: "more cluster centers than distinct data points").
    """
    # a copy, so always writeable: the kernels compile once, not again for read-only inputs
    x = np.array(x, dtype=np.float64, order="C")
    m = x.shape[0]
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    distinct = np.unique(x, axis=0)
    if k > len(distinct):
        raise ValueError(f"more cluster centers ({k}) than distinct data points ({len(distinct)})")
    if k == 1:
        c = x.mean(axis=0, keepdims=True)
        return KMeansResult(1, np.zeros(m, dtype=np.int64), c, np.array([((x - c) ** 2).sum()]), 0, True)
    if centers is not None:
        starts = [np.array(centers, dtype=np.float64, copy=True)]
    else:
        rng = rng if rng is not None else np.random.default_rng(0)
        starts = [distinct[rng.choice(len(distinct), size=k, replace=False)].copy() for _ in range(max(n_init, 1))]
    best = None
    for c0 in starts:
        c = np.ascontiguousarray(c0)
        labels, wss, iterations, ifault = _kmns(x, c, max_iter)
        if ifault == 1:
            continue
        res = KMeansResult(k, labels.copy(), c.copy(), wss.copy(), int(iterations), ifault == 0)
        if best is None or res.tot_withinss < best.tot_withinss:
            best = res
    if best is None:
        raise ValueError("every start left a cluster empty")
    return best


drop_stale_caches("similarity_kmeans", (sys.modules[__name__],))      # (loads its kernels without the registry refresh)
