"""Terms, exclusions, z-scores, design matrices and aliased-term detection."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from whatif.models.errors import ModelInputError
from whatif.models.regression.design import (Standardizer, aliased_columns, aliased_columns_reference, build_terms,
                                      design_matrix, parse_exclude, term_name)


def test_term_counts():
    preds = [f"e{i}" for i in range(18)]
    assert len(build_terms(preds, 1)) == 18
    assert len(build_terms(preds, 2)) == 18 + 153
    assert len(build_terms(preds, 3)) == 18 + 153 + 816
    terms = build_terms(["a", "b", "c"], 2)
    assert [term_name(t) for t in terms] == ["a", "b", "c", "a*b", "a*c", "b*c"]


def test_exclusion_removes_pair_and_triples_containing_it():
    ex = parse_exclude(["b*a", "c:d"], ["a", "b", "c", "d"])
    terms = [term_name(t) for t in build_terms(["a", "b", "c", "d"], 3, ex)]
    assert "a*b" not in terms and "c*d" not in terms
    assert "a*b*c" not in terms and "a*c*d" not in terms
    assert "a*c" in terms and "b*d" in terms
    assert [t for t in terms if t.count("*") == 2] == []  # every triple holds a*b or c*d


@pytest.mark.parametrize("entry, fragment", [("a*zz", "'zz', which is not a predictor"),
                                             ("a", "must name an interaction"),
                                             ("a*a", "names a predictor twice"),
                                             ("a**b", "must name an interaction")])
def test_bad_exclude_entries(entry, fragment):
    with pytest.raises(ModelInputError, match="exclude entry") as exc:
        parse_exclude([entry], ["a", "b"])
    assert fragment in str(exc.value)


def test_standardizer_uses_sample_sd_and_products_of_z_scores():
    X = np.array([[1.0, 10.0], [2.0, 30.0], [3.0, 20.0], [6.0, 60.0]])
    std = Standardizer.fit(["a", "b"], X)
    Z = std.transform(X)
    np.testing.assert_allclose(Z.mean(axis=0), 0, atol=1e-15)
    np.testing.assert_allclose(Z.std(axis=0, ddof=1), 1)
    D = design_matrix(Z, ["a", "b"], [("a",), ("b",), ("a", "b")])
    np.testing.assert_allclose(D[:, 0], 1)
    np.testing.assert_allclose(D[:, 3], Z[:, 0] * Z[:, 1])
    raw = Standardizer.fit(["a", "b"], X, enabled=False)
    np.testing.assert_array_equal(raw.transform(X), X)


def test_exact_linear_combination_is_aliased_with_its_interactions():
    rng = np.random.default_rng(0)
    raw = rng.lognormal(size=(60, 3))
    raw = np.column_stack([raw, raw[:, 0] + 2 * raw[:, 1]])  # "other" = inst - ld ... style identity
    preds = ["a", "b", "c", "s"]
    terms = build_terms(preds, 2)
    X = design_matrix(Standardizer.fit(preds, raw).transform(raw), preds, terms)
    mask = aliased_columns(X)
    names = [term_name(t) for t, m in zip(terms, mask[1:]) if m]
    # s is a combination of a and b; s*c is one of a*c and b*c; a*s and b*s are not (squares are absent)
    assert names == ["s", "c*s"]
    np.testing.assert_array_equal(mask, aliased_columns_reference(X))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(8, 40), k=st.integers(1, 8), n_dup=st.integers(0, 3))
def test_aliased_columns_equals_reference(seed, n, k, n_dup):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=(n, k))])
    for _ in range(n_dup):  # append exact combinations of random earlier columns
        w = rng.normal(size=X.shape[1]) * (rng.random(X.shape[1]) < 0.5)
        X = np.column_stack([X, X @ w])
    perm = np.concatenate([[0], 1 + rng.permutation(X.shape[1] - 1)])
    X = X[:, perm]
    fast, ref = aliased_columns(X), aliased_columns_reference(X)
    np.testing.assert_array_equal(fast, ref)
    assert (~fast).sum() == np.linalg.matrix_rank(X)
