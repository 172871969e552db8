"""k-fold cross-validation: fold assignment, the error definition and its t interval."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

from whatif.models.errors import ModelInputError
from whatif.models.regression.crossval import cross_validate, kfold_indices


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 300), k=st.integers(2, 12), seed=st.integers(0, 2**31))
def test_folds_partition_rows_evenly(n, k, seed):
    if n < k:
        with pytest.raises(ModelInputError, match=f"fewer than the {k} cross-validation folds"):
            kfold_indices(n, k, seed)
        return
    folds = kfold_indices(n, k, seed)
    assert len(folds) == k
    allrows = np.concatenate(folds)
    assert sorted(allrows.tolist()) == list(range(n))
    sizes = [f.size for f in folds]
    assert max(sizes) - min(sizes) <= 1
    again = kfold_indices(n, k, seed)
    assert all(np.array_equal(a, b) for a, b in zip(folds, again))


def test_error_definition_by_hand():
    rng = np.random.default_rng(4)
    n = 53
    X = np.column_stack([np.ones(n), rng.normal(size=(n, 2))])
    y = 100 + X @ [0, 5, -3] + rng.normal(size=n)
    folds = kfold_indices(n, 5, seed=9)
    cv = cross_validate(X, y, folds)
    fold_means = []
    for test in folds:
        train = np.setdiff1d(np.arange(n), test)
        coef = np.linalg.solve(X[train].T @ X[train], X[train].T @ y[train])
        pred = X[test] @ coef
        np.testing.assert_allclose(cv.predictions[test], pred, rtol=1e-10)
        fold_means.append(np.mean(100 * np.abs(y[test] - pred) / y[test]))
    np.testing.assert_allclose(cv.fold_errors, fold_means, rtol=1e-10)
    assert cv.mean == pytest.approx(np.mean(fold_means))
    half = stats.t.ppf(0.975, 4) * np.std(fold_means, ddof=1) / np.sqrt(5)
    assert cv.ci95 == pytest.approx(half)
    assert cv.ci95_bounds == pytest.approx((np.mean(fold_means) - half, np.mean(fold_means) + half))
    assert cv.spread95 == pytest.approx(1.96 * np.std(cv.row_errors, ddof=1))
    assert sorted(np.unique(cv.fold_of_row)) == list(range(5))


def test_different_seeds_give_different_folds():
    a = kfold_indices(100, 10, 1)
    b = kfold_indices(100, 10, 2)
    assert any(not np.array_equal(x, y) for x, y in zip(a, b))


def test_one_fold_is_refused():
    with pytest.raises(ModelInputError, match="at least 2 folds"):
        kfold_indices(10, 1, 0)
