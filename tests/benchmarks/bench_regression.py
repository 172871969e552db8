"""Benchmark of the regression engine (issue 5 performance item).

Fits the I-order, II-order and BIC-pruned II-order models with 10-fold cross-validation on 500
observations of 18 counter-like predictors (171 candidate II-order terms), on one core, and prints
the figures.  Also times one stepwise step of the fast search against the refit-everything
reference, and the statsmodels OLS of the full II-order design, to show why the search does not call
statsmodels per candidate.

    python tests/benchmarks/bench_regression.py
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one core
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from whatif.models.regression import ModelInputWarning, RegressionStudy  # noqa: E402
from whatif.models.regression.design import Standardizer, build_terms, design_matrix  # noqa: E402
from whatif.models.regression.stepwise import stepwise, stepwise_reference  # noqa: E402
from whatif.scenarios.checks.regression import planted_counter_table  # noqa: E402

N, K, BUDGET_S = 500, 18, 30.0


def main() -> None:
    df, model = planted_counter_table(N, K, seed=1)
    print(f"data: {N} observations x {K} predictors, {len(build_terms(list(model.predictors), 2))} II-order terms, "
          f"{len(model.interactions)} planted interactions")
    timings = []
    for form in ("seed", "conventional"):
        for rep in range(2):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ModelInputWarning)
                res = RegressionStudy(order=2, prune="bic", bic=form, folds=10, seed=rep).fit(df, response="cycles")
            dt = time.perf_counter() - t0
            timings.append(dt)
            planted = {f"{a}*{b}" for a, b in model.interactions}
            print(f"fit I + II + pruned II, 10-fold CV, {form:>12} BIC, run {rep + 1}: {dt:6.2f} s  "
                  f"(pruning {res.model('II').n_terms} -> {res.model('II_pruned').n_terms} terms in "
                  f"{len(res.stepwise.steps) - 1} steps; planted interactions kept: "
                  f"{len(planted & set(res.kept_interactions))}/{len(planted)})")
    print(f"worst end-to-end fit: {max(timings):.2f} s (budget {BUDGET_S:.0f} s) -> "
          f"{'OK' if max(timings) < BUDGET_S else 'OVER BUDGET'}")

    preds = list(model.predictors)
    X_raw = df[preds].to_numpy()
    terms = build_terms(preds, 2)
    X = design_matrix(Standardizer.fit(preds, X_raw).transform(X_raw), preds, terms)
    y = df["cycles"].to_numpy()
    t0 = time.perf_counter()
    fast = stepwise(X, y, terms, range(X.shape[1]), max_steps=1)
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref = stepwise_reference(X, y, terms, range(X.shape[1]), max_steps=1)
    t_ref = time.perf_counter() - t0
    assert fast.selected == ref.selected, "fast and reference searches disagree"
    print(f"first stepwise step on 171 terms: fast {t_fast * 1e3:.1f} ms, refit-everything reference "
          f"{t_ref * 1e3:.0f} ms (x{t_ref / t_fast:.0f}); same move: {ref.steps[1].action} {ref.steps[1].term}")
    import statsmodels.api as sm

    t0 = time.perf_counter()
    for _ in range(5):
        sm.OLS(y, X).fit()
    t_sm = (time.perf_counter() - t0) / 5
    print(f"one statsmodels OLS fit of the 172-column design: {t_sm * 1e3:.1f} ms "
          f"(a step evaluates ~171 candidates: ~{171 * t_sm:.1f} s per step if refitted with statsmodels)")


if __name__ == "__main__":
    main()
