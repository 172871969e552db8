"""The RegressionStudy engine end to end: models, JSON shape, parameters and bad input."""

import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from whatif.models.errors import ModelInputError  # noqa: E402
from whatif.models.regression import ModelInputWarning, RegressionStudy  # noqa: E402
from whatif.scenarios.checks.regression import planted_counter_table  # noqa: E402


def _fit(df, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelInputWarning)
        return RegressionStudy(folds=5, seed=3).fit(df, response="cycles", **kw)


@pytest.fixture(scope="module")
def planted():
    return planted_counter_table(160, 5, seed=21)


@pytest.fixture(scope="module")
def res(planted):
    return _fit(planted[0])


def test_json_shape_of_the_issue(res):
    doc = res.to_dict()
    assert list(doc["models"]) == ["I", "II", "II_pruned"]
    for name, m in doc["models"].items():
        for key in ("r2", "sigma", "terms", "cv_error_pct", "cv_error_ci95"):
            assert key in m, (name, key)
        assert isinstance(m["cv_error_ci95"], float) and m["cv_error_ci95"] > 0
        for term, vals in m["terms"].items():
            assert {"estimate", "std_error", "p"} <= set(vals)
    assert set(doc["models"]["I"]["terms"]) == {"(Intercept)", "ev00", "ev01", "ev02", "ev03", "ev04"}
    assert len(doc["models"]["II"]["terms"]) == 1 + 5 + 10
    assert doc["f_test"]["reduced"] == "I" and doc["f_test"]["full"] == "II"
    assert doc["f_test"]["verdict"] == "reject"
    assert doc["pruning"]["kept_interactions"] == list(res.kept_interactions)
    import json
    json.dumps(doc)  # plain JSON


def test_planted_interactions_survive_and_model_ordering(res, planted):
    _, model = planted
    planted_names = {f"{a}*{b}" for a, b in model.interactions}
    assert planted_names <= set(res.kept_interactions)
    I, II, P = (res.model(m) for m in ("I", "II", "II_pruned"))
    assert II.ols.r2 > I.ols.r2
    assert II.cv.mean < I.cv.mean
    assert P.n_terms < II.n_terms
    assert res.find_f_test("II_pruned", "II").verdict == "accept"
    assert set(res.removed_terms) == set(II.term_names) - set(P.term_names)


def test_intercept_is_mean_response_in_the_first_order_model(res):
    coef = res.model("I").ols.coef
    assert coef[0] == pytest.approx(res.model("I").ols.y.mean(), rel=1e-10)


def test_predict_reproduces_fitted_values(res, planted):
    np.testing.assert_allclose(res.predict(planted[0], "II_pruned"), res.model("II_pruned").ols.fitted, rtol=1e-9)


def test_same_seed_same_results_other_seed_other_folds(planted):
    a, b = _fit(planted[0]).to_dict(), _fit(planted[0]).to_dict()
    assert a == b
    c = RegressionStudy(folds=5, seed=4).fit(planted[0], response="cycles")
    assert c.model("I").cv.mean != a["models"]["I"]["cv_error_pct"]
    assert c.model("I").ols.r2 == a["models"]["I"]["r2"]


def test_table_iv_summary_and_plots(res):
    t = res.table_iv()
    assert list(t.columns) == ["I-order", "II-order", "II-order pruned"]
    assert t.loc["F-test", "II-order"] == "-"
    assert t.loc["F-test", "I-order"].startswith("reject")
    assert " ± " in t.loc["prediction error (%)", "I-order"]
    text = str(res.summary())
    assert "Table IV" in text and "II-order pruned" in text
    for fig, ylabel in ((res.plot_varclus(), "Spearman ρ²"), (res.plot_residuals(), "residual")):
        assert fig.axes[0].get_ylabel() == ylabel
        plt.close(fig)
    fig = res.plot_spearman2()
    assert len(fig.axes[0].get_yticklabels()) == 5
    plt.close(fig)
    fig = res.plot_coefficients()
    assert len(fig.axes[0].get_yticklabels()) == res.model("II_pruned").n_terms
    plt.close(fig)


def test_orders_and_no_pruning(planted):
    df = planted[0]
    one = _fit(df, order=1)
    assert list(one.models) == ["I", "I_pruned"] and one.f_test is None
    none = _fit(df, prune="none")
    assert list(none.models) == ["I", "II"] and none.stepwise is None
    three = _fit(df, predictors=["ev00", "ev01", "ev02", "ev03"], order=3)
    assert list(three.models) == ["I", "II", "III", "II_pruned"]
    assert three.model("III").n_terms == 4 + 6 + 4
    assert three.find_f_test("II", "III") is not None


def test_exclude_and_redundancy(planted):
    df = planted[0].copy()
    res = _fit(df, exclude=["ev01*ev00", "ev03:ev04"])
    assert "ev00*ev01" not in res.model("II").term_names and "ev03*ev04" not in res.model("II").term_names
    assert res.excluded_terms == ("ev00*ev01", "ev03*ev04")
    df["ev00_copy"] = df["ev00"] * 1.0001 + 1.0
    red = _fit(df, redundancy_cut=0.99)
    assert set(red.dropped_redundant.items()) <= {("ev00_copy", "ev00"), ("ev00", "ev00_copy")}
    assert len(red.dropped_redundant) == 1
    assert any("redundant with" in w for w in red.warnings)
    # a kept predictor survives its redundant twin, which goes instead
    for kept in ("ev00", "ev00_copy"):
        forced = _fit(df, redundancy_cut=0.99, keep_predictors=[kept])
        other = "ev00_copy" if kept == "ev00" else "ev00"
        assert dict(forced.dropped_redundant) == {other: kept}
        assert kept in forced.predictors and other not in forced.predictors
    with pytest.raises(ModelInputError, match=r"keep_predictors: 'ev99' is not a predictor"):
        _fit(df, redundancy_cut=0.99, keep_predictors=["ev99"])


def test_aliased_and_constant_predictors_warn_and_proceed(planted):
    df = planted[0].copy()
    df["total"] = df["ev00"] + df["ev01"]
    df["fpu"] = 7
    with pytest.warns(ModelInputWarning) as rec:
        res = RegressionStudy(folds=5).fit(df, response="cycles")
    messages = [str(w.message) for w in rec]
    assert "predictor 'fpu' is constant (7 in every row); dropped" in messages
    assert any("aliased" in m and "total" in m for m in messages)
    assert "total" in res.aliased_terms and "fpu" in res.dropped_constant
    assert "total" not in res.model("II").term_names


def test_every_parameter_has_a_constraint_and_bad_values_are_named(planted):
    import inspect

    params = [p for p in inspect.signature(RegressionStudy).parameters]
    assert sorted(params) == sorted(RegressionStudy._parameter_constraints)
    for name, bad, must in [("order", 4, "one of 1, 2, 3"), ("prune", "aic", "one of 'bic', 'none'"),
                            ("folds", 1, "an integer >= 2"), ("bic", "BIC", "one of 'seed'"),
                            ("alpha", 1.0, "a number in the open interval (0, 1)"), ("hierarchy", 1, "a bool")]:
        with pytest.raises(ModelInputError) as exc:
            RegressionStudy(**{name: bad}).fit(planted[0], response="cycles")
        assert str(exc.value).startswith(f"The '{name}' parameter of RegressionStudy must be {must}")
        assert str(exc.value).endswith(f"Got {bad!r} instead.")
    with pytest.raises(ModelInputError, match="The 'keyword' parameter"):
        RegressionStudy().fit(planted[0], response="cycles", folds_=3)


def test_more_terms_than_observations(planted):
    df = planted[0].iloc[:14]
    with pytest.raises(ModelInputError, match=r"the II-order model has 16 coefficients \(15 terms and the "
                                               r"intercept\) but the table has only 14 rows"):
        RegressionStudy(folds=2).fit(df, response="cycles")


def test_cross_validation_training_set_too_small(planted):
    df = planted[0].iloc[:24]
    with pytest.raises(ModelInputError, match="the II-order model has 16 coefficients but 2-fold cross-validation "
                                              "fits on as few as 12 rows"):
        RegressionStudy(folds=2).fit(df, response="cycles")


def test_fewer_rows_than_folds(planted):
    with pytest.raises(ModelInputError, match="the table has 8 rows, fewer than the 10 cross-validation folds"):
        RegressionStudy(order=1).fit(planted[0].iloc[:8], response="cycles")


def test_zero_response_is_refused(planted):
    df = planted[0].copy()
    df.loc[3, "cycles"] = 0.0
    with pytest.raises(ModelInputError, match="response column 'cycles' is 0 at row 4"):
        RegressionStudy().fit(df, response="cycles")


def test_variant_dict_for_the_study_kind(res):
    v = res.variant_dict()
    assert set(v) == {"I", "II", "II_pruned", "f_test_p", "pruned_interactions"}
    assert v["II"] == {"r2": res.model("II").ols.r2, "cv_error_pct": res.model("II").cv.mean,
                       "cv_error_ci95": res.model("II").cv.ci95, "n_terms": 15}
    assert v["f_test_p"] == res.f_test.p
    assert v["pruned_interactions"] == list(res.kept_interactions)


def test_fit_keywords_override_constructor(planted):
    r = RegressionStudy(order=1).fit(planted[0], response="cycles", order=2, folds=4, prune="none")
    assert list(r.models) == ["I", "II"] and r.settings["folds"] == 4


def test_predictor_names_with_interaction_marks_are_refused(planted):
    df = planted[0].rename(columns={"ev00": "a*b"})
    with pytest.raises(ModelInputError, match=r"predictor column 'a\*b' contains '\*' or ':'"):
        RegressionStudy().fit(df, response="cycles")


def test_raw_predictors_give_the_same_fit_and_raw_design(planted):
    df = planted[0]
    raw = _fit(df, standardize=False, prune="none")
    z = _fit(df, prune="none")
    assert raw.model("II").ols.r2 == pytest.approx(z.model("II").ols.r2, rel=1e-9)
    np.testing.assert_allclose(raw.design("I")["ev00"], df["ev00"])
