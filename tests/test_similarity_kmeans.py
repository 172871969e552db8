"""Hartigan–Wong k-means (AS 136): converged solutions admit no improving single-point transfer."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from whatif.models.similarity.kmeans import hartigan_wong
from whatif.models.similarity.results import adjusted_rand_index


def sse(x, labels, k):
    return sum(((x[labels == c] - x[labels == c].mean(axis=0)) ** 2).sum() for c in range(k) if np.any(labels == c))


def best_transfer_gain(x, labels, k):
    """Largest decrease of the total SSE that moving one point to another cluster would give (exact)."""
    nc = np.bincount(labels, minlength=k)
    centres = np.array([x[labels == c].mean(axis=0) for c in range(k)])
    best = -np.inf
    for i, l in enumerate(labels):
        if nc[l] == 1:
            continue
        remove = nc[l] / (nc[l] - 1) * ((x[i] - centres[l]) ** 2).sum()
        for m in range(k):
            if m != l:
                best = max(best, remove - nc[m] / (nc[m] + 1) * ((x[i] - centres[m]) ** 2).sum())
    return best


@settings(max_examples=60, deadline=None)
@given(st.integers(8, 60), st.integers(2, 6), st.integers(1, 4), st.integers(0, 2**31 - 1))
def test_converged_solution_is_transfer_optimal(n, k, p, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, p))
    res = hartigan_wong(x, k, n_init=1, rng=rng)
    assert res.converged
    assert sorted(np.unique(res.labels)) == list(range(k))            # no empty cluster
    assert best_transfer_gain(x, res.labels, k) <= 1e-9
    assert np.isclose(res.tot_withinss, sse(x, res.labels, k))
    for c in range(k):
        np.testing.assert_allclose(res.centers[c], x[res.labels == c].mean(axis=0), atol=1e-12)


def test_recovers_separated_blobs():
    rng = np.random.default_rng(3)
    centres = np.array([[0, 0], [5, 0], [0, 5], [5, 5], [10, 10]])
    truth = np.repeat(np.arange(5), 20)
    x = centres[truth] + rng.normal(0, 0.3, size=(100, 2))
    res = hartigan_wong(x, 5, rng=np.random.default_rng(0))
    assert adjusted_rand_index(res.labels, truth) == 1.0


def test_small_worked_example():
    x = np.array([[0.0], [1.0], [10.0], [11.0], [12.0]])
    res = hartigan_wong(x, 2, centers=np.array([[0.0], [1.0]]))
    # from centres 0 and 1 the nearest-centre start is {0} | {1, 10, 11, 12}; transfers reach the optimum
    assert sorted(map(tuple, [np.flatnonzero(res.labels == c) for c in range(2)])) == [(0, 1), (2, 3, 4)]
    assert np.isclose(res.tot_withinss, 0.5 + 2.0)


def test_more_starts_never_worse_and_seeded():
    rng = np.random.default_rng(11)
    x = rng.normal(size=(80, 3))
    one = hartigan_wong(x, 6, n_init=1, rng=np.random.default_rng(5))
    many = hartigan_wong(x, 6, n_init=20, rng=np.random.default_rng(5))
    assert many.tot_withinss <= one.tot_withinss + 1e-12
    again = hartigan_wong(x, 6, n_init=20, rng=np.random.default_rng(5))
    np.testing.assert_array_equal(many.labels, again.labels)


def test_too_many_centres_is_an_error():
    x = np.array([[0.0, 1.0], [0.0, 1.0], [2.0, 2.0]])
    with pytest.raises(ValueError, match="more cluster centers"):
        hartigan_wong(x, 3)


def test_adjusted_rand_index_known_values():
    assert np.isclose(adjusted_rand_index([0, 0, 1, 1], [0, 0, 1, 2]), 0.5714285714285714)
    assert np.isclose(adjusted_rand_index([0, 0, 1, 1], [0, 1, 0, 1]), -0.5)
    assert adjusted_rand_index([0, 0, 1, 1], [5, 5, 7, 7]) == 1.0
