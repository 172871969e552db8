"""Rank vectors and rank-correlation similarity agree with scipy to 1e-12 (issue 7 acceptance)."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.stats import kendalltau, rankdata, spearmanr

from whatif.models.similarity.rank import (average_ranks, degenerate_rows, distance_matrix, kendall_embedding, pair_distance,
                                    quantise_distance, similarity_matrix, spearman_embedding)

# signatures with many ties: components from a coarse grid
tied_signatures = st.integers(2, 9).flatmap(
    lambda m: arrays(np.float64, st.tuples(st.integers(1, 12), st.just(m)),
                     elements=st.sampled_from([-0.5, -0.25, 0.0, 0.1, 0.25, 0.7, 1.0])))
real_signatures = st.integers(2, 9).flatmap(
    lambda m: arrays(np.float64, st.tuples(st.integers(1, 12), st.just(m)),
                     elements=st.floats(-1, 1, allow_nan=False, width=64)))


@settings(max_examples=60, deadline=None)
@given(st.one_of(tied_signatures, real_signatures))
def test_average_ranks_equal_scipy_rankdata(s):
    ranks = average_ranks(s)
    for row, r in zip(s, ranks):
        np.testing.assert_array_equal(r, rankdata(row, method="average"))


def _scipy_matrix(s, fn):
    n = len(s)
    out = np.full((n, n), np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for a in range(n):
            for b in range(n):
                out[a, b] = fn(s[a], s[b]).statistic
    return out


@settings(max_examples=60, deadline=None)
@given(st.one_of(tied_signatures, real_signatures))
def test_spearman_matrix_equals_scipy_spearmanr(s):
    sim = similarity_matrix(spearman_embedding(s))
    ref = _scipy_matrix(s, spearmanr)
    defined = ~np.isnan(ref)
    np.testing.assert_allclose(sim[defined], ref[defined], rtol=0, atol=1e-12)
    # undefined (a signature with all components tied): 0 off the diagonal
    off = ~defined & ~np.eye(len(s), dtype=bool)
    assert np.all(sim[off] == 0.0)
    assert np.all(np.diag(sim) == 1.0)


@settings(max_examples=60, deadline=None)
@given(st.one_of(tied_signatures, real_signatures))
def test_kendall_matrix_equals_scipy_kendalltau_b(s):
    sim = similarity_matrix(kendall_embedding(s))
    ref = _scipy_matrix(s, kendalltau)
    defined = ~np.isnan(ref)
    np.testing.assert_allclose(sim[defined], ref[defined], rtol=0, atol=1e-12)


def test_eq4_without_ties():
    """Spearman's rho = 1 - 6 sum d^2 / (N^3 - N) when there are no ties (Eq. 4)."""
    rng = np.random.default_rng(4)
    s = rng.uniform(-1, 1, size=(30, 5))
    r = average_ranks(s)
    d2 = ((r[:, None, :] - r[None, :, :]) ** 2).sum(axis=2)
    eq4 = 1 - 6 * d2 / (5 ** 3 - 5)
    np.testing.assert_allclose(similarity_matrix(spearman_embedding(s)), eq4, atol=1e-12)


def test_degenerate_signature_has_no_ranking():
    s = np.array([[0.2, 0.2, 0.2], [0.1, 0.5, 0.3], [0.0, 0.0, 0.0]])
    emb = spearman_embedding(s)
    assert degenerate_rows(emb).tolist() == [True, False, True]
    sim = similarity_matrix(emb)
    assert sim[0, 1] == 0.0 and sim[0, 2] == 0.0 and sim[0, 0] == 1.0


def test_numba_pair_distance_matches_numpy_grid():
    rng = np.random.default_rng(7)
    s = np.round(rng.uniform(-1, 1, size=(25, 5)), 1)     # many ties
    emb = spearman_embedding(s)
    dense = distance_matrix(emb)
    for i in range(25):
        for j in range(25):
            if i != j:
                assert pair_distance(emb, True, i, j) == dense[i, j]
    assert np.all(dense >= 0) and np.all(dense <= 2)


def test_quantised_distances_make_exact_ties():
    # 0.7 reached along two rounding paths is one value on the grid
    assert quantise_distance(1 - 0.7) == quantise_distance(0.30000000000000004) == 0.3
    assert quantise_distance(-1e-17) == 0.0


@pytest.mark.parametrize("row,expected", [
    # seed 002 §4.2, Harpertown rank vectors printed in the paper (Table 1 values)
    ([0.71, 0.37, 0.15, 0.45, 0.87], [4, 2, 1, 3, 5]),          # 483.xalancbmk
    ([-0.50, 0.37, -0.42, -0.12, 0.60], [1, 4, 2, 3, 5]),       # 403.gcc
    ([0.57, 0.56, 0.56, 0.55, 0.55], [5, 3.5, 3.5, 1.5, 1.5]),  # 471.omnetpp (ties averaged)
    ([0.99, 0.08, 0.38, -0.93, -0.75], [5, 3, 4, 1, 2]),        # 462.libquantum
    ([0.30, 0.71, 0.56, 0.42, -0.61], [2, 5, 4, 3, 1]),         # 400.perlbench
    ([0.21, 0.18, 0.21, 0.31, 0.31], [2.5, 1, 2.5, 4.5, 4.5]),  # 471.omnetpp on Westmere
    ([0.03, 0.41, 0.33, 0.21, 0.34], [1, 5, 3, 2, 4]),          # 473.astar on Westmere
])
def test_rank_vectors_printed_in_seed002(row, expected):
    assert average_ranks(np.array([row]))[0].tolist() == expected
