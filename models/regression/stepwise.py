"""Stepwise BIC search in both directions (R's ``step(direction = "both")``), optionally hierarchical.

Starting from a given set of columns, every step evaluates dropping each term in the model and
adding each term of the scope not in it, and makes the move with the lowest criterion, until no
move lowers the criterion.  The intercept is never dropped.  With ``hierarchy=True`` a term can be
dropped only while no higher-order term containing it is in the model, and added only when all its
lower-order terms (those in the scope) are in the model (R's marginality rule in ``drop.scope`` /
``add.scope``).

The fast search needs one QR of the current design per step.  From it:

* dropping column j raises the SSE by beta_j^2 / [(X'X)^-1]_jj (the squared t statistic times sigma^2);
* adding candidate column c lowers the SSE by (e_c' r)^2 / (e_c' e_c), with r the residual and e_c the
  part of x_c orthogonal to the current columns (computed for all candidates in one matrix product).

:func:`stepwise_reference` refits every candidate model with ``numpy.linalg.lstsq`` instead; the
tests check that both take the same path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from scipy import linalg

from whatif.models.regression.design import Term, term_name
from whatif.models.regression.ols import bic

#: A move is made only if it lowers the criterion by more than this relative amount (no cycling on ties).
REL_IMPROVEMENT = 1e-12


@dataclass(frozen=True)
class Step:
    action: str  # "start", "drop" or "add"
    term: str | None
    criterion: float
    n_terms: int  # terms besides the intercept after the step

    def to_dict(self) -> dict:
        return {"action": self.action, "term": self.term, "bic": self.criterion, "n_terms": self.n_terms}


@dataclass(frozen=True)
class StepwiseResult:
    selected: tuple[int, ...]  # selected column indices of X, 0 (intercept) first
    steps: tuple[Step, ...]
    form: str
    hierarchy: bool


def _relations(terms: Sequence[Term]) -> tuple[np.ndarray, np.ndarray]:
    """``parents[i, j]``: term of column j is a proper subset of that of column i; ``children = parents.T``.

    Column 0 is the intercept (no relations); column i >= 1 holds ``terms[i - 1]``.
    """
    m = len(terms) + 1
    sets = [None] + [frozenset(t) for t in terms]
    parents = np.zeros((m, m), dtype=bool)
    for i in range(1, m):
        for j in range(1, m):
            if i != j and sets[j] < sets[i]:
                parents[i, j] = True
    return parents, parents.T.copy()


def _check(X: np.ndarray, terms: Sequence[Term], start: Sequence[int]) -> list[int]:
    if X.shape[1] != len(terms) + 1:
        raise ValueError("X must have one column per term plus the intercept column")
    start = sorted(set(int(s) for s in start) | {0})
    return start


def stepwise(X: np.ndarray, y: np.ndarray, terms: Sequence[Term], start: Sequence[int], form: str = "seed",
             hierarchy: bool = True, tol: float = 1e-7, max_steps: int | None = None,
             progress: Callable[[int, int], None] | None = None) -> StepwiseResult:
    """Fast stepwise search; see the module docstring.  ``start`` are the columns of the first model."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    n, m1 = X.shape
    in_model = np.zeros(m1, dtype=bool)
    in_model[_check(X, terms, start)] = True
    parents, children = _relations(terms)
    col_norm = np.linalg.norm(X, axis=0)
    max_steps = 10 * m1 if max_steps is None else max_steps
    steps: list[Step] = []
    for step_no in range(max_steps + 1):
        S = np.flatnonzero(in_model)
        p = S.size
        q, r = np.linalg.qr(X[:, S], mode="reduced")
        qty = q.T @ y
        beta = linalg.solve_triangular(r, qty)
        resid = y - q @ qty
        sse = float(resid @ resid)
        current = bic(form, sse, n, p)
        if step_no == 0:
            steps.append(Step("start", None, current, p - 1))
        if progress is not None:
            progress(step_no, p - 1)
        # drops
        drop_pos = np.arange(1, p)
        if hierarchy and drop_pos.size:
            has_child = (children[S[drop_pos]] & in_model).any(axis=1)
            drop_pos = drop_pos[~has_child]
        if drop_pos.size:
            r_inv = linalg.solve_triangular(r, np.eye(p))
            diag = np.einsum("ij,ij->i", r_inv, r_inv)
            drop_sse = sse + beta[drop_pos] ** 2 / diag[drop_pos]
            drop_crit = np.asarray(bic(form, drop_sse, n, p - 1), dtype=float)
        else:
            drop_crit = np.empty(0)
        # adds
        cand = np.flatnonzero(~in_model)
        if hierarchy and cand.size:
            missing_parent = (parents[cand] & ~in_model).any(axis=1)
            cand = cand[~missing_parent]
        add_crit = np.empty(0)
        if cand.size and p + 1 < n:
            Xc = X[:, cand]
            E = Xc - q @ (q.T @ Xc)
            den = np.einsum("ij,ij->j", E, E)
            ok = den > (tol * col_norm[cand]) ** 2
            cand = cand[ok]
            if cand.size:
                num = (E[:, ok].T @ resid) ** 2
                add_sse = np.maximum(sse - num / den[ok], np.finfo(float).tiny)
                add_crit = np.asarray(bic(form, add_sse, n, p + 1), dtype=float)
        crits = np.concatenate([drop_crit, add_crit])
        if crits.size == 0:
            break
        best = int(np.argmin(crits))
        if not crits[best] < current - REL_IMPROVEMENT * abs(current) or step_no == max_steps:
            break
        if best < drop_crit.size:
            col = int(S[drop_pos[best]])
            in_model[col] = False
            action = "drop"
        else:
            col = int(cand[best - drop_crit.size])
            in_model[col] = True
            action = "add"
        steps.append(Step(action, term_name(terms[col - 1]), float(crits[best]), int(in_model.sum()) - 1))
    return StepwiseResult(tuple(int(c) for c in np.flatnonzero(in_model)), tuple(steps), form, hierarchy)


def _sse(X: np.ndarray, y: np.ndarray, cols: Sequence[int]) -> float:
    coef, *_ = np.linalg.lstsq(X[:, cols], y, rcond=None)
    r = y - X[:, cols] @ coef
    return float(r @ r)


def stepwise_reference(X: np.ndarray, y: np.ndarray, terms: Sequence[Term], start: Sequence[int],
                       form: str = "seed", hierarchy: bool = True, tol: float = 1e-7,
                       max_steps: int | None = None) -> StepwiseResult:
    """Slow, obviously-correct stepwise search: every candidate model is refitted from scratch."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    n = X.shape[0]
    model = set(_check(X, terms, start))
    sets = {i: frozenset(t) for i, t in enumerate(terms, start=1)}
    steps: list[Step] = []
    while max_steps is None or len(steps) <= max_steps:
        cols = sorted(model)
        current = bic(form, _sse(X, y, cols), n, len(cols))
        if not steps:
            steps.append(Step("start", None, current, len(cols) - 1))
        moves: list[tuple[float, str, int]] = []
        for c in cols[1:]:
            if hierarchy and any(sets[c] < sets[o] for o in model if o != 0):
                continue
            rest = [k for k in cols if k != c]
            moves.append((bic(form, _sse(X, y, rest), n, len(rest)), "drop", c))
        for c in range(1, X.shape[1]):
            if c in model or len(cols) + 1 >= n:
                continue
            if hierarchy and any(sets[o] < sets[c] and o not in model for o in sets):
                continue
            coef, *_ = np.linalg.lstsq(X[:, cols], X[:, c], rcond=None)
            if np.linalg.norm(X[:, c] - X[:, cols] @ coef) <= tol * np.linalg.norm(X[:, c]):
                continue
            new = sorted(model | {c})
            moves.append((bic(form, _sse(X, y, new), n, len(new)), "add", c))
        if not moves:
            break
        best = min(range(len(moves)), key=lambda i: moves[i][0])  # first of equal minima
        crit, action, c = moves[best]
        if not crit < current - REL_IMPROVEMENT * abs(current):
            break
        if action == "drop":
            model.discard(c)
        else:
            model.add(c)
        steps.append(Step(action, term_name(terms[c - 1]), float(crit), len(model) - 1))
    return StepwiseResult(tuple(sorted(model)), tuple(steps), form, hierarchy)
