"""The planted-interaction validation check and its data generator."""

import numpy as np
import pytest

from whatif.models.regression import RegressionStudy
from whatif.scenarios.checks.regression import check_planted_interactions, planted_counter_table
from whatif.scenarios.checks.registry import registered_checks


def test_z_scale_truth_is_exact_on_noise_free_data():
    df, model = planted_counter_table(80, 5, seed=2, noise_frac=0.0)
    res = RegressionStudy(prune="none", folds=4).fit(df, response="cycles")
    coef = res.model("II").coefficients().set_index("term")["estimate"]
    truth = model.z_truth(df[list(model.predictors)].to_numpy())
    scale = np.abs(coef).max()
    for term in coef.index[1:]:
        assert coef[term] == pytest.approx(truth.get(term, 0.0), abs=1e-7 * scale), term
    assert res.model("II").ols.r2 == pytest.approx(1.0, abs=1e-12)
    assert res.model("II").cv.mean < 1e-6


def test_generator_is_deterministic_and_counter_like():
    a, ma = planted_counter_table(50, 4, seed=9)
    b, mb = planted_counter_table(50, 4, seed=9)
    assert a.equals(b) and ma == mb
    assert (a[["ev00", "ev01", "ev02", "ev03", "cycles"]] > 0).all().all()
    assert len(ma.interactions) == 4


def test_quick_check_passes_and_is_registered():
    assert "regression-planted-interactions" in registered_checks()
    rows = check_planted_interactions(quick=True)
    assert len(rows) == 3
    for row in rows:
        assert row.passed, row
    assert rows[0].measured == "8/8"
