"""k-fold cross-validation of the prediction error in % (seed 000 §II-C(4), Table IV).

Definition (stated once, used everywhere):

* The n rows are shuffled with ``numpy.random.default_rng(seed).permutation(n)`` and split into k
  folds of sizes differing by at most one (``numpy.array_split``).
* For each fold the model's terms (a fixed term set) are refitted by least squares on the other k-1
  folds and the fold's rows are predicted.  Each held-out row gets the percentage error
  e_i = 100 * |y_i - yhat_i| / |y_i|.
* The fold error E_f is the mean of e_i over the fold; the reported prediction error is the mean of
  the k fold errors, and its 95% confidence interval is the Student t interval over folds:
  mean(E) +- t_{0.975, k-1} * sd(E) / sqrt(k)  (``cv_error_ci95`` is that half-width).
* ``spread95`` is 1.96 times the standard deviation of the n per-row errors e_i: a 95% band for a
  single prediction's error rather than for the mean (the seed's "12.02 +- 32.34" has a half-width
  larger than the mean, which suggests this kind of spread).

The predictor z-scores are computed once on all rows (they use no response information).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from whatif.models.errors import ModelInputError


def kfold_indices(n: int, k: int, seed: int | None) -> list[np.ndarray]:
    """The k test folds (row index arrays, each sorted) of a seeded shuffle of ``range(n)``."""
    if k < 2:
        raise ModelInputError(f"cross-validation needs at least 2 folds, got {k}")
    if n < k:
        raise ModelInputError(f"the table has {n} rows, fewer than the {k} cross-validation folds")
    perm = np.random.default_rng(seed).permutation(n)
    return [np.sort(f) for f in np.array_split(perm, k)]


@dataclass(frozen=True, eq=False)
class CVResult:
    fold_errors: np.ndarray  # E_f, percent
    row_errors: np.ndarray  # e_i, percent, in row order
    predictions: np.ndarray  # out-of-fold yhat_i, in row order
    fold_of_row: np.ndarray  # fold number of each row

    @property
    def k(self) -> int:
        return int(self.fold_errors.size)

    @property
    def mean(self) -> float:
        return float(self.fold_errors.mean())

    @property
    def ci95(self) -> float:
        """Half-width of the t interval over folds."""
        sd = float(self.fold_errors.std(ddof=1))
        return float(stats.t.ppf(0.975, self.k - 1) * sd / np.sqrt(self.k))

    @property
    def ci95_bounds(self) -> tuple[float, float]:
        return (self.mean - self.ci95, self.mean + self.ci95)

    @property
    def spread95(self) -> float:
        return float(1.96 * self.row_errors.std(ddof=1))


def cross_validate(X: np.ndarray, y: np.ndarray, folds: list[np.ndarray]) -> CVResult:
    """Out-of-fold predictions of the least-squares fit of ``y`` on the columns of ``X``.

    ``numpy.linalg.lstsq`` (minimum-norm solution) is used so that a training set in which some
    column happens to be collinear still predicts.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    n = y.shape[0]
    pred = np.empty(n)
    fold_of_row = np.empty(n, dtype=int)
    train_mask = np.ones(n, dtype=bool)
    for f, test in enumerate(folds):
        train_mask[:] = True
        train_mask[test] = False
        coef, *_ = np.linalg.lstsq(X[train_mask], y[train_mask], rcond=None)
        pred[test] = X[test] @ coef
        fold_of_row[test] = f
    row_err = 100.0 * np.abs(y - pred) / np.abs(y)
    fold_err = np.array([row_err[test].mean() for test in folds])
    return CVResult(fold_errors=fold_err, row_errors=row_err, predictions=pred, fold_of_row=fold_of_row)
