"""Figures 1-4 of seed 000 as matplotlib figures (Agg backend; the caller saves or closes them)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy.cluster import hierarchy  # noqa: E402


def plot_varclus(vc):
    """Dendrogram of complete-linkage clustering on 1 - rho^2, the axis labelled in Spearman rho^2."""
    k = len(vc.predictors)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.45 * k + 2), 4.5))
    if k < 2:
        ax.text(0.5, 0.5, "one predictor: nothing to cluster", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return fig
    hierarchy.dendrogram(vc.linkage, labels=list(vc.predictors), ax=ax, leaf_rotation=90,
                         color_threshold=0, above_threshold_color="#335")
    ax.set_ylim(0.0, 1.0)
    ticks = np.linspace(0.0, 1.0, 6)
    ax.set_yticks(ticks)
    ax.set_yticklabels([f"{1 - t:.1f}" for t in ticks])
    ax.set_ylabel("Spearman ρ²")
    ax.set_title("Predictor clustering (varclus, complete linkage)")
    return fig


def plot_spearman2(table: pd.DataFrame, response: str):
    """Dot chart of adjusted rho^2 (quadratic in ranks) of each predictor with the response."""
    t = table.iloc[::-1]
    fig, ax = plt.subplots(figsize=(6.5, max(3.0, 0.3 * len(t) + 1.2)))
    y = np.arange(len(t))
    ax.hlines(y, 0, t["adjusted_rho2"], color="#ccd", lw=1)
    ax.plot(t["adjusted_rho2"], y, "o", color="#335")
    ax.set_yticks(y)
    ax.set_yticklabels(t["predictor"])
    n = int(table["n"].iloc[0]) if len(table) else 0
    ax.set_xlabel(f"Adjusted ρ² (Spearman, quadratic in ranks), N = {n}, df = 2")
    ax.set_title(f"Strength of marginal relationships with {response}")
    ax.set_xlim(min(0.0, float(t["adjusted_rho2"].min()) - 0.02), 1.0)
    return fig


def plot_coefficients(fit):
    """Estimates of the model's terms with their 95% intervals (the intercept is listed in the title)."""
    coef = fit.coefficients()
    intercept = coef.iloc[0]
    body = coef.iloc[1:].iloc[::-1]
    fig, ax = plt.subplots(figsize=(7.0, max(3.0, 0.28 * len(body) + 1.4)))
    y = np.arange(len(body))
    est = body["estimate"].to_numpy()
    err = np.vstack([est - body["ci95_low"].to_numpy(), body["ci95_high"].to_numpy() - est])
    colors = np.where(body["p"].to_numpy() < 0.05, "#335", "#aab")
    ax.errorbar(est, y, xerr=err, fmt="none", ecolor="#889", elinewidth=1, capsize=2)
    ax.scatter(est, y, c=colors, zorder=3, s=18)
    ax.axvline(0.0, color="#c44", lw=0.8)
    ax.set_yticks(y)
    ax.set_yticklabels(body["term"])
    ax.set_xlabel("estimate per standard deviation of each predictor (95% interval)")
    ax.set_title(f"{fit.label} model: intercept {intercept['estimate']:.4g} ± {intercept['std_error']:.3g} (SE)")
    return fig


def plot_residuals(fit, response: str):
    """Residuals against fitted values with a lowess trend line."""
    from statsmodels.nonparametric.smoothers_lowess import lowess

    fitted = fit.ols.fitted
    resid = fit.ols.resid
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    ax.scatter(fitted, resid, s=10, alpha=0.6, color="#335")
    ax.axhline(0.0, color="#c44", lw=0.8)
    if fitted.size >= 10:
        trend = lowess(resid, fitted, frac=0.6, return_sorted=True)
        ax.plot(trend[:, 0], trend[:, 1], color="#e90", lw=1.5, label="lowess")
        ax.legend(loc="best", fontsize=8)
    ax.set_xlabel(f"fitted {response}")
    ax.set_ylabel("residual")
    ax.set_title(f"Residuals vs fitted, {fit.label} model (σ̂ = {fit.ols.sigma:.4g})")
    return fig
