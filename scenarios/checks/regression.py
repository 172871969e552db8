"""Ground-truth check of the regression engine (issue 5 item 5): planted interactions must be found.

Data come from a known linear model with interaction terms on correlated, counter-like predictors
plus Gaussian noise.  Because the engine standardises predictors with the sample mean m and standard
deviation s, the true model in z-scores is known exactly for each data set: for
y = b0 + sum b_i x_i + sum b_ij x_i x_j + e, the coefficient of z_i z_j is b_ij s_i s_j and that of z_i is
s_i (b_i + sum_j b_ij m_j).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from whatif.models.regression import ModelInputWarning, RegressionStudy
from whatif.scenarios.checks.registry import CheckResult, register_check


@dataclass(frozen=True)
class PlantedModel:
    predictors: tuple[str, ...]
    intercept: float
    main: dict[str, float]
    interactions: dict[tuple[str, str], float]
    noise_sd: float

    def z_truth(self, X: np.ndarray) -> dict[str, float]:
        """True coefficients of the z-scored model for the data ``X`` (term name -> value)."""
        m = X.mean(axis=0)
        s = X.std(axis=0, ddof=1)
        idx = {p: i for i, p in enumerate(self.predictors)}
        truth: dict[str, float] = {}
        for p in self.predictors:
            i = idx[p]
            b = self.main.get(p, 0.0)
            for (a, c), bij in self.interactions.items():
                if a == p:
                    b += bij * m[idx[c]]
                elif c == p:
                    b += bij * m[idx[a]]
            truth[p] = s[i] * b
        for (a, c), bij in self.interactions.items():
            truth[f"{a}*{c}"] = bij * s[idx[a]] * s[idx[c]]
        return truth


def planted_counter_table(n: int, n_predictors: int, seed: int, n_interactions: int = 4,
                          noise_frac: float = 0.02) -> tuple[pd.DataFrame, PlantedModel]:
    """A counter-totals-like table (positive, correlated event counts) and the model that made ``cycles``.

    Predictors share two latent factors (workload size and memory intensity) so that they are
    correlated as real counters are.  The noise standard deviation is ``noise_frac`` of the mean response.
    """
    rng = np.random.default_rng(seed)
    names = tuple(f"ev{j:02d}" for j in range(n_predictors))
    latent = rng.normal(size=(n, 2))
    load = rng.uniform(0.2, 0.8, size=(n_predictors, 2))
    log_x = latent @ load.T + 0.5 * rng.normal(size=(n, n_predictors))
    scale = 10.0 ** rng.uniform(5, 8, size=n_predictors)
    X = scale * np.exp(0.5 * log_x)
    sd = X.std(axis=0, ddof=1)
    main_idx = rng.choice(n_predictors, size=min(n_predictors, max(3, n_predictors // 2)), replace=False)
    main = {names[i]: float(rng.choice([-1, 1]) * rng.uniform(1.0, 3.0) * 1e9 / sd[i]) for i in sorted(main_idx)}
    pairs = list(combinations(range(n_predictors), 2))
    chosen = rng.choice(len(pairs), size=n_interactions, replace=False)
    inter = {}
    for c in sorted(chosen):
        i, j = pairs[c]
        inter[(names[i], names[j])] = float(rng.choice([-1, 1]) * rng.uniform(1.0, 2.0) * 1e9 / (sd[i] * sd[j]))
    rest = sum(main[p] * X[:, names.index(p)] for p in main)
    rest = rest + sum(b * X[:, names.index(a)] * X[:, names.index(c)] for (a, c), b in inter.items())
    intercept = 1e10 - float(rest.min())  # every row's cycles well above zero
    mean_part = intercept + rest
    noise_sd = noise_frac * float(np.mean(mean_part))
    y = mean_part + rng.normal(scale=noise_sd, size=n)
    model = PlantedModel(names, intercept, main, inter, noise_sd)
    df = pd.DataFrame(X, columns=list(names))
    df.insert(0, "workload", [f"w{i % 7}" for i in range(n)])
    df.insert(1, "replicate", np.arange(n) % 5)
    df["cycles"] = y
    return df, model


def planted_interaction_trials(n: int, n_predictors: int, replicates: int, seed: int) -> dict:
    """Fit pruned II-order models to ``replicates`` planted data sets; count kept terms and CI coverage."""
    kept_all, covered, intervals, null_kept, null_total, f_rejects = 0, 0, 0, 0, 0, 0
    for r in range(replicates):
        df, model = planted_counter_table(n, n_predictors, seed=seed + r)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ModelInputWarning)
            res = RegressionStudy(order=2, prune="bic", folds=5, seed=r).fit(df, response="cycles")
        pruned = res.model("II_pruned")
        coef = pruned.coefficients().set_index("term")
        truth = model.z_truth(df[list(model.predictors)].to_numpy())
        planted = [f"{a}*{c}" for a, c in model.interactions]
        kept_all += all(t in coef.index for t in planted)
        for term in planted + [p for p in model.main]:
            if term in coef.index:
                intervals += 1
                covered += coef.loc[term, "ci95_low"] <= truth[term] <= coef.loc[term, "ci95_high"]
        nulls = [f"{a}*{c}" for a, c in combinations(model.predictors, 2) if f"{a}*{c}" not in planted]
        null_total += len(nulls)
        null_kept += sum(t in coef.index for t in nulls)
        f_rejects += res.f_test is not None and res.f_test.verdict == "reject"
    return {"replicates": replicates, "kept_all": kept_all, "covered": covered, "intervals": intervals,
            "null_kept": null_kept, "null_total": null_total, "f_rejects": f_rejects}


@register_check("regression-planted-interactions")
def check_planted_interactions(quick: bool) -> list[CheckResult]:
    replicates, n, k = (8, 300, 6) if quick else (20, 400, 8)
    t = planted_interaction_trials(n, k, replicates, seed=5000)
    cov = t["covered"] / max(t["intervals"], 1)
    # Coverage of nominal 95% intervals: accept down to 3 binomial standard deviations below 0.95.
    floor = 0.95 - 3.0 * float(np.sqrt(0.95 * 0.05 / max(t["intervals"], 1)))
    tag = (f"{replicates} data sets, n = {n}, {k} predictors, 4 planted interactions; null interactions kept: "
           f"{t['null_kept']}/{t['null_total']}")
    return [
        CheckResult("regression: pruned II model keeps every planted interaction",
                    f"{replicates}/{replicates}", f"{t['kept_all']}/{replicates}",
                    t["kept_all"] == replicates, tag),
        CheckResult("regression: 95% intervals cover the planted coefficients",
                    f"coverage >= {floor:.3f} (nominal 0.95)", f"{cov:.3f} ({t['covered']}/{t['intervals']})",
                    cov >= floor, "planted main effects and interactions, z-scale truth"),
        CheckResult("regression: F-test rejects the I-order model",
                    f"{replicates}/{replicates}", f"{t['f_rejects']}/{replicates}",
                    t["f_rejects"] == replicates, "alpha = 0.01"),
    ]
