"""Model terms, z-score standardisation and design matrices; detection of aliased (collinear) terms.

A *term* is a tuple of predictor names: ``("a",)`` is a main effect, ``("a", "b")`` the 2-way
interaction written ``a*b``.  Terms are ordered main effects first, then 2-way interactions in
predictor order, then 3-way ones.  The column of an interaction is the product of the z-scores of its
predictors (as R computes ``a*b`` on ``scale()``-d data); interaction columns are not re-standardised.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Iterable, Sequence

import numpy as np

from whatif.models.errors import ModelInputError

Term = tuple[str, ...]
INTERCEPT = "(Intercept)"


def term_name(term: Term) -> str:
    return "*".join(term)


def parse_exclude(entries: Iterable[str], predictors: Sequence[str]) -> tuple[frozenset[str], ...]:
    """Parse ``["a*b", "c:d"]`` into sets of predictor names (2 or 3 names each).

    Names must be among ``predictors`` (the candidate predictors before any are dropped).
    """
    known = set(predictors)
    out: list[frozenset[str]] = []
    for raw in entries:
        entry = str(raw).strip()
        if not entry:
            continue
        parts = [p.strip() for p in entry.replace(":", "*").split("*")]
        if len(parts) < 2 or any(not p for p in parts):
            raise ModelInputError(f"exclude entry {entry!r} must name an interaction such as 'a*b'")
        if len(set(parts)) != len(parts):
            raise ModelInputError(f"exclude entry {entry!r} names a predictor twice")
        for p in parts:
            if p not in known:
                raise ModelInputError(f"exclude entry {entry!r} names '{p}', which is not a predictor")
        out.append(frozenset(parts))
    return tuple(out)


def build_terms(predictors: Sequence[str], order: int,
                exclude: Sequence[frozenset[str]] = ()) -> list[Term]:
    """All terms up to ``order`` (1, 2 or 3); an interaction is left out when it contains an excluded set."""
    terms: list[Term] = [(p,) for p in predictors]
    for k in range(2, order + 1):
        for combo in combinations(predictors, k):
            s = frozenset(combo)
            if any(ex <= s for ex in exclude):
                continue
            terms.append(tuple(combo))
    return terms


def terms_of_order(terms: Iterable[Term], max_order: int) -> list[Term]:
    return [t for t in terms if len(t) <= max_order]


@dataclass(frozen=True)
class Standardizer:
    """z-scores with the sample mean and the standard deviation with n-1 (R's ``scale``).

    With ``enabled=False`` the raw values are used (mean 0, scale 1).
    """

    predictors: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray

    @classmethod
    def fit(cls, predictors: Sequence[str], X: np.ndarray, enabled: bool = True) -> "Standardizer":
        X = np.asarray(X, dtype=float)
        if enabled:
            return cls(tuple(predictors), X.mean(axis=0), X.std(axis=0, ddof=1))
        k = X.shape[1]
        return cls(tuple(predictors), np.zeros(k), np.ones(k))

    def transform(self, X: np.ndarray) -> np.ndarray:
        return (np.asarray(X, dtype=float) - self.mean) / self.scale


def design_matrix(Z: np.ndarray, predictors: Sequence[str], terms: Sequence[Term]) -> np.ndarray:
    """Intercept column followed by one column per term (products of the columns of ``Z``)."""
    index = {p: i for i, p in enumerate(predictors)}
    X = np.empty((Z.shape[0], len(terms) + 1))
    X[:, 0] = 1.0
    for j, term in enumerate(terms, start=1):
        col = Z[:, index[term[0]]].copy()
        for p in term[1:]:
            col *= Z[:, index[p]]
        X[:, j] = col
    return X


def aliased_columns(X: np.ndarray, tol: float = 1e-7) -> np.ndarray:
    """Boolean mask of columns that are (numerically) linear combinations of the columns before them.

    Column j is aliased when the norm of its residual after projection on the earlier non-aliased
    columns is below ``tol`` times its own norm -- R's ``lm`` rule (``dqrdc2`` with ``tol = 1e-7``),
    which keeps earlier columns and moves deficient ones out.  Implemented with Householder QR of
    the kept columns, recomputed after each aliased column found.
    """
    X = np.asarray(X, dtype=float)
    n = X.shape[0]
    norms = np.linalg.norm(X, axis=0)
    aliased = norms <= 0.0
    start = 0
    while True:
        keep = np.flatnonzero(~aliased)
        if keep.size == 0:
            return aliased
        r = np.linalg.qr(X[:, keep], mode="r")
        diag = np.abs(np.diag(r))
        ratio = diag / norms[keep[: diag.size]]
        bad = np.flatnonzero((ratio < tol) & (keep[: diag.size] >= start))
        if bad.size == 0:
            aliased[keep[n:]] = True  # the first n kept columns span R^n
            return aliased
        j = keep[bad[0]]
        aliased[j] = True
        start = j
        if aliased.all():
            return aliased
    return aliased  # pragma: no cover


def aliased_columns_reference(X: np.ndarray, tol: float = 1e-7) -> np.ndarray:
    """Slow, obvious version of :func:`aliased_columns`: one least-squares projection per column."""
    X = np.asarray(X, dtype=float)
    aliased = np.zeros(X.shape[1], dtype=bool)
    kept: list[int] = []
    for j in range(X.shape[1]):
        x = X[:, j]
        nx = np.linalg.norm(x)
        if nx == 0:
            aliased[j] = True
            continue
        if kept:
            coef, *_ = np.linalg.lstsq(X[:, kept], x, rcond=None)
            resid = x - X[:, kept] @ coef
        else:
            resid = x
        if np.linalg.norm(resid) < tol * nx:
            aliased[j] = True
        else:
            kept.append(j)
    return aliased
