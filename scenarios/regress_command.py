"""Glue of ``whatif regress``: read a counter-totals table, run the regression engine, write outputs."""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Sequence

import pandas as pd

from whatif.models.errors import ModelInputError
from whatif.models.regression import ModelInputWarning, RegressionResults, RegressionStudy, read_counter_totals
from whatif.scenarios.manifest import build_manifest
from whatif.scenarios.output import ResultsWriter
from whatif.scenarios.progress import status
from whatif.scenarios.report import Report, figure_png


def split_list(text: str | None) -> list[str] | None:
    """``"a,b, c"`` -> ``["a", "b", "c"]``; None or empty -> None."""
    if text is None:
        return None
    items = [t.strip() for t in text.split(",") if t.strip()]
    return items or None


def run_regression(data: Path, response: str, predictors: Sequence[str] | None = None,
                   exclude: Sequence[str] = (), progress: bool = False, **params) -> RegressionResults:
    """Read ``data`` and fit; input errors are re-raised with the file name in front."""
    df = read_counter_totals(data)
    with status("whatif regress", progress) as say, warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelInputWarning)
        try:
            return RegressionStudy(**params).fit(df, response=response, predictors=predictors,
                                                 exclude=list(exclude), progress=say)
        except ModelInputError as exc:
            raise ModelInputError(f"{data}: {exc}") from None


def regress_command(data: Path, response: str, predictors: str | None = None, exclude: str | None = None,
                    out: Path | None = None, progress: bool = False, **params) -> tuple[RegressionResults, dict]:
    """Everything ``whatif regress`` does besides printing: returns the results and the JSON document."""
    started = time.perf_counter()
    res = run_regression(Path(data), response, split_list(predictors), split_list(exclude) or (),
                         progress=progress, **params)
    doc = res.to_dict()
    doc["input"] = str(data)
    if out is not None:
        write_outputs(res, doc, Path(out), Path(data), time.perf_counter() - started)
    return res, doc


def _coefficients(res: RegressionResults) -> pd.DataFrame:
    frames = []
    for name in res.models:
        t = res.model(name).coefficients()
        t.insert(0, "model", name)
        frames.append(t)
    return pd.concat(frames, ignore_index=True)


def _cv_tables(res: RegressionResults) -> tuple[pd.DataFrame, pd.DataFrame]:
    folds = [{"model": name, "fold": f, "rows": int(len(res.folds[f])), "error_pct": float(e)}
             for name, fit in res.models.items() for f, e in enumerate(fit.cv.fold_errors)]
    first = next(iter(res.models.values()))
    pred = pd.DataFrame({"row": range(1, res.n + 1), res.response: first.ols.y, "fold": first.cv.fold_of_row})
    for name, fit in res.models.items():
        pred[f"fitted_{name}"] = fit.ols.fitted
        pred[f"cv_predicted_{name}"] = fit.cv.predictions
        pred[f"cv_error_pct_{name}"] = fit.cv.row_errors
    return pd.DataFrame(folds), pred


def regression_tables(res: RegressionResults) -> dict[str, pd.DataFrame]:
    """Every table of a regression result, by file stem (reusable by study runners)."""
    folds, predictions = _cv_tables(res)
    tables = {
        "table_iv": res.table_iv().reset_index(),
        "table_iv_numeric": res.table_iv_numeric().reset_index(names="diagnostic").astype(str),
        "coefficients": _coefficients(res),
        "f_tests": pd.DataFrame([t.to_dict() for t in res.f_tests]),
        "spearman2": res.spearman2,
        "varclus_rho2": res.varclus.similarity().reset_index(names="predictor"),
        "vif": pd.concat([res.vif_table(m).assign(model=m) for m in res.models], ignore_index=True),
        "cv_folds": folds,
        "predictions": predictions,
    }
    if res.stepwise is not None:
        tables["stepwise"] = pd.DataFrame([s.to_dict() for s in res.stepwise.steps])
    return tables


def regression_figures(res: RegressionResults) -> dict[str, bytes]:
    """Figures 1-4 (and residual plots of the other models) as PNG bytes, by file stem (rendered once:
    the report embeds them and the writer saves them)."""
    pruned = res.pruned_name or list(res.models)[-1]
    figs = {"fig1_varclus": res.plot_varclus(), "fig2_spearman2": res.plot_spearman2(),
            "fig3_coefficients": res.plot_coefficients(pruned), "fig4_residuals": res.plot_residuals(pruned)}
    for name in res.models:
        if name != pruned:
            figs[f"residuals_{name}"] = res.plot_residuals(name)
    return {name: figure_png(fig) for name, fig in figs.items()}


def write_outputs(res: RegressionResults, doc: dict, out: Path, data: Path, seconds: float) -> None:
    """Tables (Parquet), figures (PNG), results.json, manifest.json and report.html, all or nothing."""
    tables = regression_tables(res)
    figs = regression_figures(res)
    manifest = build_manifest(scenario=None, study="regression", seed=res.settings["seed"],
                              parameters={"input": str(data), "response": res.response,
                                          "predictors": list(res.predictors), **res.settings},
                              host_seconds=seconds, rates={"observations_per_s": res.n / max(seconds, 1e-9)})
    report = Report(f"whatif regress: {res.response} ~ counter events ({data.name})")
    report_sections(report, res, figs)
    report.provenance(manifest)
    with ResultsWriter(out) as w:
        w.results(tables=tables, figures=figs, results=doc, manifest=manifest, report=report)


def report_sections(rep: Report, res: RegressionResults, figs: dict, title: str = "") -> Report:
    """Add the regression sections (Table IV, Figures 1-4, VIFs, pruning) to ``rep``; ``title`` prefixes
    the headings (e.g. a variant name).  ``figs`` comes from :func:`regression_figures` (PNG bytes)."""
    pre = f"{title}: " if title else ""
    pruned = res.pruned_name or list(res.models)[-1]
    f_tests = pd.DataFrame([t.to_dict() for t in res.f_tests])
    if title:
        rep.heading(title)
    rep.paragraph(f"{res.n} observations of {len(res.predictors)} predictors: {', '.join(res.predictors)}. "
                  f"Predictors are {'z-scored' if res.settings['standardize'] else 'raw'}, the response "
                  f"'{res.response}' is in its own units; {res.settings['folds']}-fold cross-validation with seed "
                  f"{res.settings['seed']}; pruning: {res.settings['prune']} ({res.settings['bic']} BIC form, "
                  f"hierarchy {'kept' if res.settings['hierarchy'] else 'not enforced'}).")
    for w in res.warnings:
        rep.paragraph("warning: " + w, note=True)
    rep.heading(pre + "Table IV: model diagnostics")
    rep.table(res.table_iv(), index=True)
    rep.paragraph("R² is 1 - SSE/SST; Eq. 6 of the seed (1 - σ̂²/s_y²) is the adjusted R². The F-test "
                  "(Eq. 7) compares each model with the unpruned II-order model ('reject' = the model lacks "
                  "fit at the stated alpha). Prediction error: mean over folds of the mean |y - ŷ|/y·100 "
                  "of held-out rows, ± the half-width of the Student-t 95% interval over folds; spread95 is "
                  "1.96 × the standard deviation of single-prediction errors.", note=True)
    if len(f_tests):
        rep.table(f_tests, caption="F-tests (Eq. 7)")
    rep.heading(pre + "Figure 1: predictor clustering")
    rep.figure(figs["fig1_varclus"], "Complete-linkage clustering on squared Spearman ρ (Hmisc varclus)")
    rep.heading(pre + "Figure 2: strength of marginal relationships")
    rep.figure(figs["fig2_spearman2"],
               "Adjusted ρ² of rank(response) on rank(x) and rank(x)² (Hmisc spearman2)")
    rep.table(res.spearman2, caption="spearman2")
    rep.heading(pre + "Multicollinearity")
    rep.table(res.vif_table("I"), caption="Variance inflation factors, I-order model")
    rep.heading(pre + f"Figure 3: {res.model(pruned).label} model")
    rep.table(res.coefficient_table(pruned), caption="Coefficients (per standard deviation of each predictor)")
    rep.figure(figs["fig3_coefficients"], "Estimates with 95% intervals")
    rep.heading(pre + "Figure 4: residuals")
    rep.figure(figs["fig4_residuals"], f"Residuals vs fitted, {res.model(pruned).label} model")
    if res.stepwise is not None:
        rep.heading(pre + "Pruning")
        rep.paragraph(f"{res.model(res.pruned_from).n_terms} → {res.model(pruned).n_terms} terms in "
                      f"{len(res.stepwise.steps) - 1} steps. Kept interactions: "
                      f"{', '.join(res.kept_interactions) or 'none'}.")
    return rep

