"""varclus, spearman2 and redundant-predictor elimination (Hmisc semantics)."""

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats

from whatif.models.regression.varclus import redundant_predictors, spearman2, spearman_rho2, varclus


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    n = 120
    a = rng.lognormal(size=n)
    b = a * np.exp(0.05 * rng.normal(size=n))  # nearly the same ranks as a
    c = rng.normal(size=n)
    d = c + 0.8 * rng.normal(size=n)
    e = rng.normal(size=n)
    X = np.column_stack([a, b, c, d, e])
    y = 3 * a + e ** 2 + 0.1 * rng.normal(size=n)  # U-shaped in e
    return ["a", "b", "c", "d", "e"], X, y


def test_rho2_matrix_is_squared_spearman(data):
    names, X, _ = data
    rho, _ = stats.spearmanr(X)
    np.testing.assert_allclose(spearman_rho2(X), rho ** 2, rtol=1e-12)


def test_spearman2_is_r2_of_rank_y_on_rank_and_squared_rank(data):
    names, X, y = data
    table = spearman2(names, X, y).set_index("predictor")
    ry = stats.rankdata(y)
    for j, name in enumerate(names):
        r = stats.rankdata(X[:, j])
        ref = sm.OLS(ry, sm.add_constant(np.column_stack([r, r * r]))).fit()
        assert table.loc[name, "rho2"] == pytest.approx(ref.rsquared, rel=1e-10)
        assert table.loc[name, "adjusted_rho2"] == pytest.approx(ref.rsquared_adj, rel=1e-10)
        assert table.loc[name, "F"] == pytest.approx(ref.fvalue, rel=1e-8)
        assert table.loc[name, "p"] == pytest.approx(ref.f_pvalue, rel=1e-6, abs=1e-300)
    # the quadratic in ranks catches the U shape that plain Spearman misses
    e = X[:, 4]
    u = e ** 2
    assert stats.spearmanr(e, u)[0] ** 2 < 0.1
    assert spearman2(["e"], e[:, None], u)["rho2"].iloc[0] > 0.8
    assert list(table.index[:2]) in (["a", "b"], ["b", "a"])  # sorted by adjusted rho2


def test_varclus_merges_most_similar_first(data):
    names, X, _ = data
    vc = varclus(names, X)
    merges = vc.merges()
    assert sorted(merges[0]["left"] + merges[0]["right"]) == ["a", "b"]
    assert merges[0]["rho2"] == pytest.approx(vc.rho2[0, 1])
    assert sorted(merges[1]["left"] + merges[1]["right"]) == ["c", "d"]
    assert len(merges) == 4
    # complete linkage: a merge height is the smallest rho2 between the two sides
    last = merges[-1]
    idx = {n: i for i, n in enumerate(names)}
    expect = min(vc.rho2[idx[p], idx[q]] for p in last["left"] for q in last["right"])
    assert last["rho2"] == pytest.approx(expect)
    assert isinstance(vc.similarity(), pd.DataFrame)


def test_redundancy_keeps_the_predictor_more_related_to_the_response(data):
    names, X, y = data
    vc = varclus(names, X)
    strength = spearman2(names, X, y)
    dropped = redundant_predictors(vc, strength, cut=0.95)
    score = dict(zip(strength["predictor"], strength["adjusted_rho2"]))
    keep = "a" if score["a"] >= score["b"] else "b"
    other = "b" if keep == "a" else "a"
    assert dropped == {other: keep}
    assert redundant_predictors(vc, strength, cut=1.0) == {}
    everything = redundant_predictors(vc, strength, cut=1e-9)
    assert len(everything) == 4  # one cluster, one survivor


def test_redundancy_never_drops_a_kept_predictor(data):
    names, X, y = data
    vc = varclus(names, X)
    strength = spearman2(names, X, y)
    score = dict(zip(strength["predictor"], strength["adjusted_rho2"]))
    weaker = "a" if score["a"] < score["b"] else "b"
    stronger = "b" if weaker == "a" else "a"
    # forcing the less related one of the redundant pair keeps it and drops the other instead
    assert redundant_predictors(vc, strength, cut=0.95, keep=[weaker]) == {stronger: weaker}
    # forcing both keeps the pair; at a cut that makes one cluster of everything, the forced survive
    assert redundant_predictors(vc, strength, cut=0.95, keep=["a", "b"]) == {}
    everything = redundant_predictors(vc, strength, cut=1e-9, keep=["a", "c"])
    assert set(everything) == set(names) - {"a", "c"}
    assert set(everything.values()) <= {"a", "c"}
