"""The regression engine of seed 000: I-, II- (and III-) order models, BIC pruning, F-test, k-fold CV."""

from __future__ import annotations

import warnings
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from whatif.models.errors import ModelInputError
from whatif.models.regression.crossval import cross_validate, kfold_indices
from whatif.models.regression.data import ID_COLUMNS, prepare
from whatif.models.regression.design import (Standardizer, aliased_columns, build_terms, design_matrix, parse_exclude,
                                      term_name)
from whatif.models.regression.ols import BIC_FORMS, f_test, fit_ols
from whatif.models.params import (Boolean, Interval, ListOf, NoneOr, Options, Parameterised, String, unknown_params,
                                  validate_params)
from whatif.models.regression.results import ModelFit, RegressionResults
from whatif.models.regression.stepwise import stepwise
from whatif.models.regression.varclus import redundant_predictors, spearman2, varclus

ROMAN = {1: "I", 2: "II", 3: "III"}


class ModelInputWarning(UserWarning):
    """The analysis could proceed after adjusting the input (e.g. a constant predictor was dropped)."""


class RegressionStudy(Parameterised):
    """Regression of a response (e.g. ``cycles``) on counter events and their interactions.

    Parameters (checked at the start of :meth:`fit`; each may also be passed to ``fit`` as a keyword):

    order : 1, 2 or 3
        Highest interaction order fitted.  Models ``I`` (main effects), ``II`` (plus all 2-way
        interactions not excluded) and ``III`` are fitted up to ``order``.
    prune : "bic" or "none"
        Stepwise BIC pruning (both directions) of the II-order model (of the I-order model when
        ``order == 1``) into ``II_pruned`` (``I_pruned``).
    bic : "seed" or "conventional"
        Criterion: Eq. 5 of the seed, (n + p (ln n - 1)) / (n (n - p)) SSE, or -2 ln L + p ln n.
    hierarchy : bool
        Keep the pruned model hierarchical (no interaction without its main effects).
    folds : int >= 2
        k of the k-fold cross-validation.
    seed : int >= 0 or None
        Seed of the fold assignment.
    alpha : float in (0, 1)
        Level of the F-tests' verdicts ("reject" when p < alpha; the seed uses 99% confidence).
    standardize : bool
        z-score the predictors (seed §IV-B).  The response is never standardised: coefficients are in
        response units per standard deviation of each predictor (per SD x SD for interactions), and
        the intercept is the mean response at mean predictor values (as in the seed's Figure 3).
    redundancy_cut : float in (0, 1] or None
        Drop redundant predictors before modelling: of each group whose pairwise Spearman rho^2 are
        all >= the cut, keep the one most related to the response (spearman2).
    keep_predictors : list of str
        Predictors never dropped as redundant (e.g. the events an analysis is about); a cluster holding
        some keeps those and drops the rest.
    alias_tol : float
        Tolerance of the aliased-term detection (R's ``lm`` uses 1e-7).
    id_columns : list of str
        Identifying columns never used as default predictors.
    """

    _parameter_constraints: dict[str, Any] = {
        "order": Options((1, 2, 3)),
        "prune": Options(("bic", "none")),
        "bic": Options(BIC_FORMS),
        "hierarchy": Boolean(),
        "folds": Interval(int, 2, None),
        "seed": NoneOr(Interval(int, 0, None)),
        "alpha": Interval(float, 0.0, 1.0, "neither"),
        "standardize": Boolean(),
        "redundancy_cut": NoneOr(Interval(float, 0.0, 1.0, "right")),
        "keep_predictors": ListOf(String()),
        "alias_tol": Interval(float, 0.0, 1e-2, "neither"),
        "id_columns": ListOf(String()),
    }

    def __init__(self, order: int = 2, prune: str = "bic", bic: str = "seed", hierarchy: bool = True,
                 folds: int = 10, seed: int | None = 0, alpha: float = 0.01, standardize: bool = True,
                 redundancy_cut: float | None = None, keep_predictors: Sequence[str] = (), alias_tol: float = 1e-7,
                 id_columns: Sequence[str] = ID_COLUMNS):
        self.order = order
        self.prune = prune
        self.bic = bic
        self.hierarchy = hierarchy
        self.folds = folds
        self.seed = seed
        self.alpha = alpha
        self.standardize = standardize
        self.redundancy_cut = redundancy_cut
        self.keep_predictors = keep_predictors
        self.alias_tol = alias_tol
        self.id_columns = id_columns

    # ------------------------------------------------------------------ fit
    def fit(self, data: pd.DataFrame, response: str, predictors: Sequence[str] | None = None,
            exclude: Sequence[str] = (), progress: Callable[[str], None] | None = None,
            **params: Any) -> RegressionResults:
        """Fit the models to a counter-totals table and return immutable :class:`RegressionResults`.

        ``predictors`` default to every numeric non-identifying column except the response;
        ``exclude`` lists interactions (``"a*b"``) left out of the II/III-order models.

        BLAS runs on one thread during the fit: the matrices are small (hundreds of columns), and
        multi-threaded OpenBLAS was measured 4-10x slower on them on a busy two-core host.
        """
        with threadpool_limits(limits=1, user_api="blas"):
            return self._fit(data, response, predictors, exclude, progress, params)

    def _fit(self, data, response, predictors, exclude, progress, params) -> RegressionResults:
        owner = type(self).__name__
        unknown_params(owner, params, self._parameter_constraints)
        prm = {**self.get_params(), **params}
        validate_params(owner, prm, self._parameter_constraints)
        if isinstance(exclude, str):
            exclude = [e for e in exclude.split(",")]
        say = progress or (lambda _msg: None)
        notes: list[str] = []

        say("checking the data")
        prep = prepare(data, response, predictors, prm["id_columns"])
        notes.extend(prep.warnings)
        y, X = prep.y, prep.X
        n = y.shape[0]
        zero = np.flatnonzero(y == 0)
        if zero.size:
            raise ModelInputError(f"response column '{response}' is 0 at row {zero[0] + 1}; the prediction "
                                  f"error in % needs a non-zero response")
        for name in prep.predictors:
            if "*" in name or ":" in name:
                raise ModelInputError(f"predictor column '{name}' contains '*' or ':', which name interactions; "
                                      f"rename the column")
        exclude_sets = parse_exclude(exclude, prep.predictors + prep.dropped_constant)
        folds = kfold_indices(n, prm["folds"], prm["seed"])

        say("clustering the predictors (varclus, spearman2)")
        preds = list(prep.predictors)
        strength = spearman2(preds, X, y)
        vc = varclus(preds, X)
        redundant: dict[str, str] = {}
        if prm["redundancy_cut"] is not None:
            unknown = [k for k in prm["keep_predictors"] if k not in preds]
            if unknown:
                raise ModelInputError(f"keep_predictors: '{unknown[0]}' is not a predictor (predictors: "
                                      f"{', '.join(preds)})")
            redundant = redundant_predictors(vc, strength, prm["redundancy_cut"], prm["keep_predictors"])
            for dropped, kept in redundant.items():
                r2 = vc.rho2[preds.index(dropped), preds.index(kept)]
                notes.append(f"predictor '{dropped}' is redundant with '{kept}' (Spearman rho^2 = {r2:.3f} "
                                f">= {prm['redundancy_cut']}); dropped")
            keep_idx = [i for i, p in enumerate(preds) if p not in redundant]
            preds = [preds[i] for i in keep_idx]
            X = X[:, keep_idx]
        with np.errstate(over="ignore", invalid="ignore"):
            std = Standardizer.fit(preds, X, prm["standardize"])
            Z = std.transform(X)
            y_spread = float(np.var(y))
        unscalable = [p for p, m, s in zip(preds, std.mean, std.scale) if not (np.isfinite(m) and np.isfinite(s))]
        if unscalable:                          # e.g. a count of 1e308: its square is past the largest float
            j = preds.index(unscalable[0])
            raise ModelInputError(f"predictor '{unscalable[0]}': values too large to standardise (their squares "
                                  f"overflow a float; the largest is {float(np.max(np.abs(X[:, j]))):g})")

        order = prm["order"]
        all_terms = build_terms(preds, order, [s for s in exclude_sets if s <= set(preds)])
        excluded = [term_name(t) for t in build_terms(preds, order) if t not in set(all_terms)]
        self._check_sizes(n, folds, preds, all_terms, order)

        say("building the design matrix")
        with np.errstate(over="ignore", invalid="ignore"):
            X_all = design_matrix(Z, preds, all_terms)
        overflow = ~np.isfinite(X_all).all(axis=0)
        overflow[0] |= not np.isfinite(y_spread)
        if overflow.any():                      # e.g. a count of 1e308: its mean or square is past the largest float
            j = int(np.flatnonzero(overflow)[0])
            what = f"response column '{response}'" if j == 0 else f"term '{term_name(all_terms[j - 1])}'"
            largest = float(np.max(np.abs(y if j == 0 else X)))
            raise ModelInputError(f"{what}: values too large to regress (their sums or squares overflow a "
                                  f"float; the largest magnitude in the data is {largest:g})")
        aliased = aliased_columns(X_all, prm["alias_tol"])
        aliased_terms = [term_name(all_terms[j - 1]) for j in np.flatnonzero(aliased[1:]) + 1]
        if aliased_terms:
            shown = ", ".join(aliased_terms[:8]) + (f", ... ({len(aliased_terms) - 8} more)"
                                                    if len(aliased_terms) > 8 else "")
            notes.append(f"{len(aliased_terms)} term(s) are exact linear combinations of earlier terms "
                            f"(aliased) and were dropped: {shown}")
        keep_cols = np.flatnonzero(~aliased)
        if keep_cols.size <= 1:
            raise ModelInputError("every term is aliased; the predictors carry no usable variation")
        terms = [all_terms[j - 1] for j in keep_cols[1:]]
        X_kept = X_all[:, keep_cols]

        models: dict[str, ModelFit] = {}

        def fit_model(name: str, cols: np.ndarray) -> ModelFit:
            say(f"fitting and cross-validating the {name} model ({cols.size - 1} terms)")
            Xm = X_kept[:, cols]
            names = ("(Intercept)",) + tuple(term_name(terms[c - 1]) for c in cols[1:])
            ols = fit_ols(Xm, y, names)
            cv = cross_validate(Xm, y, folds)
            return ModelFit(name=name, terms=tuple(terms[c - 1] for c in cols[1:]), ols=ols, cv=cv,
                            bic_form=prm["bic"])

        term_order = np.array([0] + [len(t) for t in terms])
        for k in range(1, order + 1):
            cols = np.flatnonzero(term_order <= k)
            if k > 1 and cols.size == np.flatnonzero(term_order <= k - 1).size:
                notes.append(f"the {ROMAN[k]}-order model has no terms beyond the {ROMAN[k - 1]}-order "
                                f"model (all excluded or aliased); not fitted")
                continue
            models[ROMAN[k]] = fit_model(ROMAN[k], cols)

        step_result = None
        pruned_from = None
        if prm["prune"] == "bic":
            pruned_from = "II" if "II" in models else "I"
            base_cols = np.flatnonzero(term_order <= (2 if pruned_from == "II" else 1))
            say(f"pruning the {pruned_from} model by stepwise {prm['bic']} BIC ({base_cols.size - 1} terms)")
            Xb = X_kept[:, base_cols]
            base_terms = [terms[c - 1] for c in base_cols[1:]]

            def step_progress(step_no: int, n_terms: int) -> None:
                if step_no % 10 == 0:
                    say(f"pruning: step {step_no}, {n_terms} terms")

            step_result = stepwise(Xb, y, base_terms, start=range(base_cols.size), form=prm["bic"],
                                   hierarchy=prm["hierarchy"], tol=prm["alias_tol"], progress=step_progress)
            models[f"{pruned_from}_pruned"] = fit_model(f"{pruned_from}_pruned",
                                                        base_cols[list(step_result.selected)])

        tests = []
        alpha = prm["alpha"]
        pairs = [("I", "II"), ("II", "III")]
        if pruned_from:
            pairs.append((f"{pruned_from}_pruned", pruned_from))
        for reduced, full in pairs:
            if reduced in models and full in models and models[reduced].ols.p < models[full].ols.p:
                tests.append(f_test(models[reduced].ols, models[full].ols, reduced, full, alpha))
        settings = {k: (list(v) if isinstance(v, tuple) else v) for k, v in prm.items()}
        candidates = prep.predictors + prep.dropped_constant
        settings["exclude"] = ["*".join(sorted(s, key=candidates.index)) for s in exclude_sets]
        for message in notes:
            warnings.warn(message, ModelInputWarning, stacklevel=2)
        return RegressionResults(
            response=response, n=n, predictors=tuple(preds), candidate_predictors=prep.predictors + prep.dropped_constant,
            dropped_constant=prep.dropped_constant, dropped_redundant=redundant, excluded_terms=tuple(excluded),
            aliased_terms=tuple(aliased_terms), settings=settings, standardizer=std, models=models,
            f_tests=tuple(tests), stepwise=step_result, pruned_from=pruned_from, varclus=vc, spearman2=strength,
            folds=tuple(folds), X_raw=X, warnings=tuple(notes))

    @staticmethod
    def _check_sizes(n: int, folds: list[np.ndarray], preds: list[str], terms: list, order: int) -> None:
        """More coefficients than observations (or than the rows of a CV training set) is an error."""
        n_train = n - max(f.size for f in folds)
        for k in range(order, 0, -1):
            n_coef = sum(1 for t in terms if len(t) <= k) + 1
            if n_coef >= n:
                raise ModelInputError(
                    f"the {ROMAN[k]}-order model has {n_coef} coefficients ({n_coef - 1} terms and the intercept) "
                    f"but the table has only {n} rows; use fewer predictors, --exclude or a lower --order")
            if n_coef >= n_train:
                raise ModelInputError(
                    f"the {ROMAN[k]}-order model has {n_coef} coefficients but {len(folds)}-fold cross-validation "
                    f"fits on as few as {n_train} rows; use more rows, fewer predictors or a lower --order")
