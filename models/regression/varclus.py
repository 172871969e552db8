"""Variable clustering and marginal strength of predictors, in the style of Harrell's Hmisc.

* :func:`varclus` -- ``Hmisc::varclus(similarity = "spearman", trans = "square", method =
  "complete")``: the similarity of two predictors is the squared Spearman rank correlation rho^2
  (ranks with ties averaged); complete-linkage hierarchical clustering on the distance 1 - rho^2.
  The dendrogram's vertical axis is read as rho^2 (seed 000 Figure 1).
* :func:`spearman2` -- ``Hmisc::spearman2(p = 2)``: for each predictor x, the R^2 of regressing
  rank(y) on rank(x) and rank(x)^2 ("rho^2 allowing a quadratic in ranks", seed Figure 2), with its
  F statistic on (2, n - 3) degrees of freedom, p-value and adjusted rho^2 = 1 - (1 - rho^2)(n - 1)/(n - 3).
* :func:`redundant_predictors` -- cut the complete-linkage tree at rho^2 = ``cut``: inside each
  cluster every pair has rho^2 >= cut; of each cluster the predictor with the largest adjusted
  spearman2 rho^2 with the response is kept (ties: the earlier predictor) and the others dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats
from scipy.cluster import hierarchy
from scipy.spatial.distance import squareform


def ranks(X: np.ndarray) -> np.ndarray:
    """Column-wise ranks, ties averaged (R's ``rank``)."""
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        return stats.rankdata(X)
    return stats.rankdata(X, axis=0)


def spearman_rho2(X: np.ndarray) -> np.ndarray:
    """Matrix of squared Spearman correlations between the columns of ``X``."""
    R = ranks(X)
    rho = np.corrcoef(R, rowvar=False)
    rho = np.atleast_2d(rho)
    return np.clip(rho * rho, 0.0, 1.0)


@dataclass(frozen=True, eq=False)
class Varclus:
    predictors: tuple[str, ...]
    rho2: np.ndarray  # similarity matrix
    linkage: np.ndarray  # scipy linkage matrix on 1 - rho2

    def similarity(self) -> pd.DataFrame:
        return pd.DataFrame(self.rho2, index=list(self.predictors), columns=list(self.predictors))

    def merges(self) -> list[dict]:
        """The tree as a list of merges: members of both sides and the rho^2 at which they join."""
        members: list[list[str]] = [[p] for p in self.predictors]
        out = []
        for a, b, dist, _ in self.linkage:
            left, right = members[int(a)], members[int(b)]
            out.append({"left": left, "right": right, "rho2": float(1.0 - dist)})
            members.append(left + right)
        return out

    def clusters(self, cut: float) -> list[list[str]]:
        """Groups of predictors whose pairwise rho^2 are all >= ``cut`` (complete linkage cut)."""
        if len(self.predictors) == 1:
            return [[self.predictors[0]]]
        labels = hierarchy.fcluster(self.linkage, t=1.0 - cut, criterion="distance")
        groups: dict[int, list[str]] = {}
        for p, lab in zip(self.predictors, labels):
            groups.setdefault(int(lab), []).append(p)
        return sorted(groups.values(), key=lambda g: self.predictors.index(g[0]))


def varclus(predictors: Sequence[str], X: np.ndarray) -> Varclus:
    rho2 = spearman_rho2(X)
    if len(predictors) < 2:
        return Varclus(tuple(predictors), rho2, np.empty((0, 4)))
    dist = 1.0 - rho2
    np.fill_diagonal(dist, 0.0)
    dist = np.clip((dist + dist.T) / 2.0, 0.0, None)
    link = hierarchy.linkage(squareform(dist, checks=False), method="complete")
    return Varclus(tuple(predictors), rho2, link)


def spearman2(predictors: Sequence[str], X: np.ndarray, y: np.ndarray) -> pd.DataFrame:
    """Hmisc ``spearman2(p = 2)`` table, sorted by adjusted rho^2 (largest first)."""
    X = np.asarray(X, dtype=float)
    n = X.shape[0]
    ry = ranks(y)
    ry = ry - ry.mean()
    sst = float(ry @ ry)
    rows = []
    df1, df2 = 2, n - 3
    for j, name in enumerate(predictors):
        r = ranks(X[:, j])
        A = np.column_stack([np.ones(n), r, r * r])
        coef, *_ = np.linalg.lstsq(A, ry, rcond=None)
        res = ry - A @ coef
        rho2 = 1.0 - float(res @ res) / sst if sst > 0 else 0.0
        if df2 <= 0:
            F = p = adj = float("nan")
        else:
            F = (rho2 / df1) / ((1.0 - rho2) / df2) if rho2 < 1.0 else np.inf
            p = float(stats.f.sf(F, df1, df2))
            adj = 1.0 - (1.0 - rho2) * (n - 1) / df2
        rows.append((name, rho2, F, df1, df2, p, adj, n))
    table = pd.DataFrame(rows, columns=["predictor", "rho2", "F", "df1", "df2", "p", "adjusted_rho2", "n"])
    order = np.argsort(-table["adjusted_rho2"].to_numpy(), kind="stable")
    return table.iloc[order].reset_index(drop=True)


def redundant_predictors(vc: Varclus, strength: pd.DataFrame, cut: float,
                         keep: Sequence[str] = ()) -> dict[str, str]:
    """Predictors to drop at ``cut``, each mapped to the kept predictor of its cluster: the one most
    related to the response (spearman2), or, in a cluster holding predictors listed in ``keep``, those
    (the others map to the most related of them)."""
    score = dict(zip(strength["predictor"], strength["adjusted_rho2"]))
    forced = set(keep)
    dropped: dict[str, str] = {}
    for group in vc.clusters(cut):
        if len(group) < 2:
            continue
        kept = [p for p in group if p in forced] or list(group)
        best = max(kept, key=lambda p: (score[p], -vc.predictors.index(p)))
        if not forced.intersection(group):
            kept = [best]
        for p in group:
            if p not in kept:
                dropped[p] = best
    return dropped
