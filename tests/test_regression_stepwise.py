"""The fast stepwise search takes exactly the path of the slow refit-everything reference."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from whatif.models.regression.design import Standardizer, build_terms, design_matrix
from whatif.models.regression.ols import bic, fit_ols
from whatif.models.regression.stepwise import stepwise, stepwise_reference


def _problem(seed, n, k, n_active):
    rng = np.random.default_rng(seed)
    preds = [f"x{i}" for i in range(k)]
    raw = rng.normal(size=(n, k)) + 0.5 * rng.normal(size=(n, 1))
    terms = build_terms(preds, 2)
    X = design_matrix(Standardizer.fit(preds, raw).transform(raw), preds, terms)
    beta = np.zeros(X.shape[1])
    beta[0] = 10.0
    n_active = min(n_active, X.shape[1] - 1)
    active = rng.choice(np.arange(1, X.shape[1]), size=n_active, replace=False)
    beta[active] = rng.choice([-1, 1], size=n_active) * rng.uniform(0.3, 1.5, size=n_active)
    y = X @ beta + rng.normal(size=n)
    return X, y, terms


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(40, 90), k=st.integers(2, 5), n_active=st.integers(0, 4),
       form=st.sampled_from(["seed", "conventional"]), hierarchy=st.booleans())
def test_fast_path_equals_reference(seed, n, k, n_active, form, hierarchy):
    X, y, terms = _problem(seed, n, k, n_active)
    start = range(X.shape[1])
    fast = stepwise(X, y, terms, start, form=form, hierarchy=hierarchy)
    ref = stepwise_reference(X, y, terms, start, form=form, hierarchy=hierarchy)
    assert fast.selected == ref.selected
    assert [(s.action, s.term) for s in fast.steps] == [(s.action, s.term) for s in ref.steps]
    np.testing.assert_allclose([s.criterion for s in fast.steps], [s.criterion for s in ref.steps], rtol=1e-9)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), form=st.sampled_from(["seed", "conventional"]))
def test_forward_from_intercept_equals_reference(seed, form):
    X, y, terms = _problem(seed, 70, 4, 3)
    fast = stepwise(X, y, terms, [0], form=form, hierarchy=True)
    ref = stepwise_reference(X, y, terms, [0], form=form, hierarchy=True)
    assert fast.selected == ref.selected
    assert any(s.action == "add" for s in fast.steps) == any(s.action == "add" for s in ref.steps)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_result_is_a_local_minimum_and_hierarchical(seed):
    X, y, terms = _problem(seed, 80, 4, 3)
    res = stepwise(X, y, terms, range(X.shape[1]), form="seed", hierarchy=True)
    chosen = set(res.selected)
    sets = {i + 1: set(t) for i, t in enumerate(terms)}
    for c in chosen - {0}:  # every kept interaction has its main effects
        for other, s in sets.items():
            if s < sets[c]:
                assert other in chosen
    n = X.shape[0]

    def crit(cols):
        return bic("seed", fit_ols(X[:, sorted(cols)], y, tuple(map(str, sorted(cols)))).sse, n, len(cols))

    best = crit(chosen)
    assert res.steps[-1].criterion == pytest.approx(best, rel=1e-9)
    for c in chosen - {0}:
        if not any(sets[c] < sets[o] for o in chosen - {0}):
            assert crit(chosen - {c}) >= best * (1 - 1e-12)


def test_finds_planted_terms_and_drops_noise():
    X, y, terms = _problem(7, 400, 5, 0)
    beta_cols = {1: 2.0, 3: -1.5, 7: 1.0}  # x0, x2 and the interaction x0*x2 (column 7)
    assert terms[6] == ("x0", "x2")
    rng = np.random.default_rng(1)
    y = 10 + sum(b * X[:, c] for c, b in beta_cols.items()) + 0.5 * rng.normal(size=400)
    res = stepwise(X, y, terms, range(X.shape[1]), form="conventional", hierarchy=True)
    assert set(beta_cols) <= set(res.selected)
    assert len(res.selected) <= len(beta_cols) + 1 + 2  # at most two spurious terms
    assert res.steps[0].action == "start" and res.steps[0].n_terms == len(terms)


def test_without_hierarchy_a_main_effect_can_go():
    X, y, terms = _problem(3, 300, 3, 0)
    rng = np.random.default_rng(2)
    inter = terms.index(("x0", "x1")) + 1
    y = 5 + 3.0 * X[:, inter] + 0.3 * rng.normal(size=300)
    free = stepwise(X, y, terms, range(X.shape[1]), hierarchy=False)
    kept = stepwise(X, y, terms, range(X.shape[1]), hierarchy=True)
    assert free.selected == (0, inter)
    assert {0, 1, 2, inter} <= set(kept.selected)


def test_max_steps_limits_both_searches():
    X, y, terms = _problem(5, 80, 4, 2)
    fast = stepwise(X, y, terms, range(X.shape[1]), max_steps=2)
    ref = stepwise_reference(X, y, terms, range(X.shape[1]), max_steps=2)
    assert len(fast.steps) == len(ref.steps) == 3
    assert fast.selected == ref.selected
