"""OLS fit, BIC forms and the F-test agree with statsmodels on the same design matrix."""

import warnings

import numpy as np
import pytest
import statsmodels.api as sm
from statsmodels.stats.anova import anova_lm
from statsmodels.stats.outliers_influence import variance_inflation_factor

from whatif.models.regression import RegressionStudy
from whatif.models.regression.ols import bic_conventional, bic_seed, f_test, fit_ols
from whatif.scenarios.checks.regression import planted_counter_table

RTOL = 1e-8


@pytest.fixture(scope="module")
def fitted():
    df, _ = planted_counter_table(240, 7, seed=11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RegressionStudy(folds=5, seed=1).fit(df, response="cycles")


def _rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)))


@pytest.mark.parametrize("model", ["I", "II", "II_pruned"])
def test_coefficients_se_r2_agree_with_statsmodels(fitted, model):
    X = fitted.design(model).to_numpy()
    fit = fitted.model(model).ols
    ref = sm.OLS(fit.y, X).fit()
    assert _rel(fit.coef, ref.params) < RTOL
    assert _rel(fit.std_error, ref.bse) < RTOL
    assert _rel(fit.t, ref.tvalues) < RTOL
    assert _rel(fit.r2, ref.rsquared) < RTOL
    assert _rel(fit.r2_adj, ref.rsquared_adj) < RTOL
    assert _rel(fit.sigma, np.sqrt(ref.scale)) < RTOL
    assert _rel(fit.loglik, ref.llf) < RTOL
    assert _rel(fit.bic_conventional, ref.bic) < RTOL
    assert _rel(fit.conf_int(), ref.conf_int()) < 1e-7
    small = ref.pvalues > 1e-250  # p-values that are not underflowing to 0
    assert _rel(fit.p_values[small], ref.pvalues[small]) < 1e-6


def test_seed_bic_formula_by_hand():
    # Eq. 5 with n = 10, p = 3, SSE = 7: (10 + 3 (ln 10 - 1)) / (10 * 7) * 7
    assert bic_seed(7.0, 10, 3) == pytest.approx((10 + 3 * (np.log(10) - 1)) / 70 * 7, rel=1e-14)
    assert bic_conventional(7.0, 10, 3) == pytest.approx(10 * (np.log(2 * np.pi) + np.log(0.7) + 1) + 3 * np.log(10))


def test_r2_adj_is_eq6_of_the_seed(fitted):
    fit = fitted.model("II").ols
    s_y2 = fit.y.var(ddof=1)
    assert fit.r2_adj == pytest.approx(1 - fit.sigma ** 2 / s_y2, rel=1e-12)


@pytest.mark.parametrize("reduced", ["I", "II_pruned"])
def test_f_test_agrees_with_compare_f_test_and_anova_lm(fitted, reduced):
    full = fitted.model("II").ols
    red = fitted.model(reduced).ols
    ours = fitted.find_f_test(reduced, "II")
    ref_full = sm.OLS(full.y, fitted.design("II").to_numpy()).fit()
    ref_red = sm.OLS(red.y, fitted.design(reduced).to_numpy()).fit()
    F, p, df = ref_full.compare_f_test(ref_red)
    assert ours.F == pytest.approx(F, rel=1e-8)
    assert ours.p == pytest.approx(p, rel=1e-6, abs=1e-300)
    assert ours.df_num == df
    table = anova_lm(ref_red, ref_full)
    assert ours.F == pytest.approx(table["F"].iloc[1], rel=1e-8)
    assert ours.df_den == table["df_resid"].iloc[1]
    # Eq. 7 written with R^2: ((R^2 - R_o^2)/k) / ((1 - R^2)/(n - p - 1))
    eq7 = ((full.r2 - red.r2) / ours.df_num) / ((1 - full.r2) / (full.n - (full.p - 1) - 1))
    assert ours.F == pytest.approx(eq7, rel=1e-6)


def test_f_test_verdict_uses_alpha():
    rng = np.random.default_rng(0)
    X = np.column_stack([np.ones(50), rng.normal(size=(50, 2))])
    y = X @ [1.0, 2.0, 0.0] + rng.normal(size=50)
    full = fit_ols(X, y, ("c", "a", "b"))
    red = fit_ols(X[:, :2], y, ("c", "a"))
    t = f_test(red, full, "red", "full", alpha=0.01)
    assert t.verdict == ("reject" if t.p < 0.01 else "accept")
    assert f_test(red, full, "red", "full", alpha=0.999999).verdict == "reject"
    with pytest.raises(ValueError):
        f_test(full, red, "full", "red")


def test_vif_agrees_with_statsmodels(fitted):
    X = fitted.design("I").to_numpy()
    ours = fitted.model("I").ols.vif
    ref = [variance_inflation_factor(X, j) for j in range(1, X.shape[1])]
    assert _rel(ours, ref) < 1e-8


def test_agreement_on_a_full_171_term_design():
    """The acceptance case: II-order design of 18 counter-like predictors (171 terms), 400 rows."""
    from whatif.models.regression.design import Standardizer, build_terms, design_matrix

    df, _ = planted_counter_table(400, 18, seed=3)
    preds = [f"ev{j:02d}" for j in range(18)]
    X_raw = df[preds].to_numpy()
    terms = build_terms(preds, 2)
    assert len(terms) == 171
    X = design_matrix(Standardizer.fit(preds, X_raw).transform(X_raw), preds, terms)
    y = df["cycles"].to_numpy()
    fit = fit_ols(X, y, tuple(["c"] + ["*".join(t) for t in terms]))
    ref = sm.OLS(y, X).fit()
    assert _rel(fit.coef, ref.params) < RTOL
    assert _rel(fit.std_error, ref.bse) < RTOL
    assert _rel(fit.r2, ref.rsquared) < RTOL
