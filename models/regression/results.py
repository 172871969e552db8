"""Immutable results of :class:`models.regression.RegressionStudy`: fitted models, tests, tables, plots."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from whatif.models.errors import ModelInputError
from whatif.models.regression.crossval import CVResult
from whatif.models.regression.data import numeric_column
from whatif.models.regression.design import INTERCEPT, Standardizer, Term, design_matrix, term_name
from whatif.models.regression.ols import FTest, OLSFit
from whatif.models.regression.stepwise import StepwiseResult
from whatif.models.regression.varclus import Varclus
from whatif.models.summary import Summary

#: Display names of the models (seed Table IV).
MODEL_LABELS = {"I": "I-order", "II": "II-order", "III": "III-order", "II_pruned": "II-order pruned",
                "I_pruned": "I-order pruned"}


@dataclass(frozen=True, eq=False)
class ModelFit:
    """One fitted model: its terms, the OLS fit on all rows and its cross-validation."""

    name: str
    terms: tuple[Term, ...]
    ols: OLSFit
    cv: CVResult
    bic_form: str

    @property
    def label(self) -> str:
        return MODEL_LABELS.get(self.name, self.name)

    @property
    def n_terms(self) -> int:
        """Terms besides the intercept."""
        return len(self.terms)

    @property
    def term_names(self) -> tuple[str, ...]:
        return tuple(term_name(t) for t in self.terms)

    @property
    def interactions(self) -> tuple[str, ...]:
        return tuple(term_name(t) for t in self.terms if len(t) > 1)

    @property
    def bic(self) -> float:
        return self.ols.bic_seed if self.bic_form == "seed" else self.ols.bic_conventional

    def coefficients(self) -> pd.DataFrame:
        """Coefficient table (seed Figure 3): estimate, standard error, t, p, 95% interval and VIF."""
        ci = self.ols.conf_int(0.95)
        return pd.DataFrame({
            "term": (INTERCEPT,) + self.term_names,
            "estimate": self.ols.coef,
            "std_error": self.ols.std_error,
            "t": self.ols.t,
            "p": self.ols.p_values,
            "ci95_low": ci[:, 0],
            "ci95_high": ci[:, 1],
            "vif": np.concatenate([[np.nan], self.ols.vif]),
        })

    def to_dict(self) -> dict[str, Any]:
        ols = self.ols
        terms = {}
        for i, name in enumerate((INTERCEPT,) + self.term_names):
            terms[name] = {"estimate": float(ols.coef[i]), "std_error": float(ols.std_error[i]),
                           "t": float(ols.t[i]), "p": float(ols.p_values[i])}
            if i > 0:
                terms[name]["vif"] = float(ols.vif[i - 1])
        lo, hi = self.cv.ci95_bounds
        return {
            "r2": ols.r2, "r2_adj": ols.r2_adj, "sigma": ols.sigma, "n_terms": self.n_terms,
            "n_coefficients": ols.p, "df_resid": ols.df_resid, "sse": ols.sse,
            "bic": self.bic, "bic_seed": ols.bic_seed, "bic_conventional": ols.bic_conventional,
            "cv_error_pct": self.cv.mean, "cv_error_ci95": self.cv.ci95, "cv_error_ci95_bounds": [lo, hi],
            "cv_error_spread95": self.cv.spread95, "cv_fold_errors_pct": self.cv.fold_errors.tolist(),
            "terms": terms,
        }


@dataclass(frozen=True, eq=False)
class RegressionResults:
    """Everything :meth:`RegressionStudy.fit` computed.  Read-only; derived tables are computed lazily."""

    response: str
    n: int
    predictors: tuple[str, ...]  # used in the models
    candidate_predictors: tuple[str, ...]  # before constant/redundant predictors were dropped
    dropped_constant: tuple[str, ...]
    dropped_redundant: Mapping[str, str]  # dropped -> kept representative
    excluded_terms: tuple[str, ...]  # interactions removed by ``exclude``
    aliased_terms: tuple[str, ...]  # terms dropped as exact linear combinations of earlier ones
    settings: Mapping[str, Any]
    standardizer: Standardizer
    models: Mapping[str, ModelFit]
    f_tests: tuple[FTest, ...]
    stepwise: StepwiseResult | None
    pruned_from: str | None
    varclus: Varclus
    spearman2: pd.DataFrame
    folds: tuple[np.ndarray, ...] = field(repr=False)
    X_raw: np.ndarray = field(repr=False)  # predictor values of the fitted rows, unstandardised
    warnings: tuple[str, ...] = ()

    # ------------------------------------------------------------------ access
    def model(self, name: str) -> ModelFit:
        if name not in self.models:
            raise ModelInputError(f"no model {name!r}; models are: {', '.join(self.models)}")
        return self.models[name]

    @property
    def pruned_name(self) -> str | None:
        return next((k for k in self.models if k.endswith("_pruned")), None)

    @property
    def f_test(self) -> FTest | None:
        """The I-order vs II-order F-test (seed Table IV), when both were fitted."""
        return self.find_f_test("I", "II")

    def find_f_test(self, reduced: str, full: str) -> FTest | None:
        return next((t for t in self.f_tests if t.reduced == reduced and t.full == full), None)

    @property
    def kept_interactions(self) -> tuple[str, ...]:
        """Interaction terms that survived pruning (empty without pruning)."""
        name = self.pruned_name
        return self.models[name].interactions if name else ()

    @property
    def removed_terms(self) -> tuple[str, ...]:
        name = self.pruned_name
        if not name:
            return ()
        kept = set(self.models[name].term_names)
        return tuple(t for t in self.models[self.pruned_from].term_names if t not in kept)

    # ------------------------------------------------------------------ tables
    def coefficient_table(self, model: str | None = None) -> pd.DataFrame:
        return self.model(model or self.pruned_name or list(self.models)[-1]).coefficients()

    def vif_table(self, model: str = "I") -> pd.DataFrame:
        fit = self.model(model)
        return pd.DataFrame({"term": fit.term_names, "vif": fit.ols.vif})

    def _f_cell(self, name: str) -> tuple[str, float]:
        base = self.pruned_from
        for t in self.f_tests:
            if t.reduced == name and t.full == base:
                return t.verdict, t.p
        return "-", float("nan")

    @cached_property
    def _table_iv_numeric(self) -> pd.DataFrame:
        rows = {}
        for name, fit in self.models.items():
            verdict, p = self._f_cell(name)
            rows[fit.label] = {"R2": fit.ols.r2, "R2_adj_eq6": fit.ols.r2_adj, "sigma": fit.ols.sigma,
                               "terms": fit.n_terms, "F-test": verdict, "F-test p": p,
                               "prediction error (%)": fit.cv.mean, "ci95 half-width (%)": fit.cv.ci95,
                               "spread95 (%)": fit.cv.spread95}
        return pd.DataFrame(rows)

    def table_iv(self) -> pd.DataFrame:
        """Seed Table IV: R^2, F-test verdict (against the unpruned II-order model) and prediction
        error +- 95% CI half-width, one column per model; values formatted as text."""
        num = self._table_iv_numeric
        out = {}
        for col in num.columns:
            c = num[col]
            p = c["F-test p"]
            out[col] = {
                "R²": f"{c['R2']:.4f}",
                "adjusted R² (Eq. 6)": f"{c['R2_adj_eq6']:.4f}",
                "σ̂": f"{c['sigma']:.4g}",
                "terms": str(int(c["terms"])),
                "F-test": c["F-test"] + ("" if np.isnan(p) else f" (p = {p:.3g})"),
                "prediction error (%)": f"{c['prediction error (%)']:.2f} ± {c['ci95 half-width (%)']:.2f}",
                "per-prediction spread95 (%)": f"± {c['spread95 (%)']:.2f}",
            }
        table = pd.DataFrame(out)
        table.index.name = "diagnostic"
        return table

    def table_iv_numeric(self) -> pd.DataFrame:
        return self._table_iv_numeric.copy()

    def design(self, model: str) -> pd.DataFrame:
        """The model's design matrix (intercept and z-scored term columns) on the fitted rows."""
        fit = self.model(model)
        return pd.DataFrame(self._design_of(fit, None), columns=(INTERCEPT,) + fit.term_names)

    def _design_of(self, fit: ModelFit, X_raw: np.ndarray | None) -> np.ndarray:
        Z = self.standardizer.transform(self.X_raw if X_raw is None else X_raw)
        return design_matrix(Z, self.predictors, fit.terms)

    def predict(self, data: pd.DataFrame, model: str | None = None) -> np.ndarray:
        """Predicted response for new rows of a counter-totals table (same predictor columns)."""
        fit = self.model(model or self.pruned_name or list(self.models)[-1])
        missing = [p for p in self.predictors if p not in data.columns]
        if missing:
            raise ModelInputError(f"predictor column '{missing[0]}' not found in the data to predict")
        X = np.column_stack([numeric_column(data, p, "predictor") for p in self.predictors])
        return self._design_of(fit, X) @ fit.ols.coef

    # ------------------------------------------------------------------ text / JSON
    def summary(self) -> Summary:
        lines = [f"Regression of '{self.response}' on {len(self.predictors)} predictors, n = {self.n} "
                 f"(predictors {'z-scored' if self.settings['standardize'] else 'raw'}, response in its own units)"]
        if self.dropped_constant:
            lines.append("dropped (constant): " + ", ".join(self.dropped_constant))
        if self.dropped_redundant:
            lines.append("dropped (redundant): " + ", ".join(f"{a} (kept {b})" for a, b in self.dropped_redundant.items()))
        if self.aliased_terms:
            lines.append(f"aliased terms dropped: {len(self.aliased_terms)}")
        tables = {"table_iv": self.table_iv()}
        lines += ["", "Table IV -- model diagnostics", tables["table_iv"].to_string()]
        if self.f_tests:
            ft = pd.DataFrame([t.to_dict() for t in self.f_tests])
            tables["f_tests"] = ft
            lines += ["", "F-tests (Eq. 7)", ft.to_string(index=False, float_format=lambda v: f"{v:.4g}")]
        name = self.pruned_name or list(self.models)[-1]
        coef = self.coefficient_table(name)
        tables["coefficients"] = coef
        lines += ["", f"Coefficients of the {self.model(name).label} model",
                  coef[["term", "estimate", "std_error", "t", "p"]].to_string(
                      index=False, float_format=lambda v: f"{v:.4g}")]
        tables["spearman2"] = self.spearman2
        if self.stepwise is not None:
            lines += ["", f"pruning: {self.model(self.pruned_from).n_terms} -> {self.model(name).n_terms} terms in "
                          f"{len(self.stepwise.steps) - 1} steps ({self.settings['bic']} BIC"
                          f"{', hierarchical' if self.stepwise.hierarchy else ''})"]
        return Summary("Regression results", "\n".join(lines), tables)

    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table of the results directory, by file stem: Table IV (formatted and numeric), the
        coefficients, F-tests, spearman2, varclus similarities and VIFs of every model, the
        cross-validation folds, per-row fitted and cross-validated predictions, and the pruning steps."""
        coefficients = []
        for name in self.models:
            t = self.model(name).coefficients()
            t.insert(0, "model", name)
            coefficients.append(t)
        folds = [{"model": name, "fold": f, "rows": int(len(self.folds[f])), "error_pct": float(e)}
                 for name, fit in self.models.items() for f, e in enumerate(fit.cv.fold_errors)]
        first = next(iter(self.models.values()))
        pred = pd.DataFrame({"row": range(1, self.n + 1), self.response: first.ols.y, "fold": first.cv.fold_of_row})
        for name, fit in self.models.items():
            pred[f"fitted_{name}"] = fit.ols.fitted
            pred[f"cv_predicted_{name}"] = fit.cv.predictions
            pred[f"cv_error_pct_{name}"] = fit.cv.row_errors
        tables = {
            "table_iv": self.table_iv().reset_index(),
            "table_iv_numeric": self.table_iv_numeric().reset_index(names="diagnostic").astype(str),
            "coefficients": pd.concat(coefficients, ignore_index=True),
            "f_tests": pd.DataFrame([t.to_dict() for t in self.f_tests]),
            "spearman2": self.spearman2,
            "varclus_rho2": self.varclus.similarity().reset_index(names="predictor"),
            "vif": pd.concat([self.vif_table(m).assign(model=m) for m in self.models], ignore_index=True),
            "cv_folds": pd.DataFrame(folds),
            "predictions": pred,
        }
        if self.stepwise is not None:
            tables["stepwise"] = pd.DataFrame([s.to_dict() for s in self.stepwise.steps])
        return tables

    def to_dict(self) -> dict[str, Any]:
        """The ``whatif regress --json`` document."""
        doc: dict[str, Any] = {
            "response": self.response,
            "n_observations": self.n,
            "predictors": list(self.predictors),
            "dropped_predictors": {"constant": list(self.dropped_constant),
                                   "redundant": dict(self.dropped_redundant)},
            "excluded_terms": list(self.excluded_terms),
            "aliased_terms": list(self.aliased_terms),
            "settings": dict(self.settings),
            "models": {name: fit.to_dict() for name, fit in self.models.items()},
            "f_test": self.f_test.to_dict() if self.f_test else None,
            "f_tests": [t.to_dict() for t in self.f_tests],
        }
        if self.stepwise is not None:
            doc["pruning"] = {
                "from": self.pruned_from, "criterion": self.stepwise.form, "hierarchy": self.stepwise.hierarchy,
                "kept_interactions": list(self.kept_interactions), "removed_terms": list(self.removed_terms),
                "steps": [s.to_dict() for s in self.stepwise.steps],
            }
        doc["spearman2"] = self.spearman2.to_dict(orient="records")
        doc["varclus"] = {"similarity": {p: {q: float(v) for q, v in zip(self.varclus.predictors, row)}
                                         for p, row in zip(self.varclus.predictors, self.varclus.rho2)},
                          "merges": self.varclus.merges()}
        doc["warnings"] = list(self.warnings)
        return doc

    def variant_dict(self) -> dict[str, Any]:
        """The per-variant entry of a regression study's results.json (issue 5 item 3):
        ``{"I": {"r2", "cv_error_pct", "cv_error_ci95", "n_terms"}, "II": ..., "II_pruned": ...,
        "f_test_p": p of I vs II, "pruned_interactions": interactions kept by pruning}``."""
        doc: dict[str, Any] = {}
        for name, fit in self.models.items():
            doc[name] = {"r2": fit.ols.r2, "cv_error_pct": fit.cv.mean, "cv_error_ci95": fit.cv.ci95,
                         "n_terms": fit.n_terms}
        doc["f_test_p"] = self.f_test.p if self.f_test else None
        doc["pruned_interactions"] = list(self.kept_interactions)
        return doc

    # ------------------------------------------------------------------ figures
    def figures(self) -> dict[str, Callable[[], Any]]:
        """Figures 1-4 (and the residuals of the other models), by file stem, as functions that draw them."""
        pruned = self.pruned_name or list(self.models)[-1]
        figs: dict[str, Callable[[], Any]] = {
            "fig1_varclus": self.plot_varclus, "fig2_spearman2": self.plot_spearman2,
            "fig3_coefficients": partial(self.plot_coefficients, pruned),
            "fig4_residuals": partial(self.plot_residuals, pruned)}
        for name in self.models:
            if name != pruned:
                figs[f"residuals_{name}"] = partial(self.plot_residuals, name)
        return figs

    def plot_varclus(self):
        """Figure 1: dendrogram of the predictors on Spearman rho^2."""
        from whatif.models.regression.plots import plot_varclus

        return plot_varclus(self.varclus)

    def plot_spearman2(self):
        """Figure 2: strength of the marginal relationships (adjusted spearman2 rho^2)."""
        from whatif.models.regression.plots import plot_spearman2

        return plot_spearman2(self.spearman2, self.response)

    def plot_coefficients(self, model: str | None = None):
        """Figure 3: estimates with 95% intervals."""
        from whatif.models.regression.plots import plot_coefficients

        return plot_coefficients(self.model(model or self.pruned_name or list(self.models)[-1]))

    def plot_residuals(self, model: str | None = None):
        """Figure 4: residuals against fitted values."""
        from whatif.models.regression.plots import plot_residuals

        return plot_residuals(self.model(model or self.pruned_name or list(self.models)[-1]), self.response)
