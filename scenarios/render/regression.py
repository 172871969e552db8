"""Regression-engine results -> tables, figures and report sections (``whatif regress``); and the outputs of
the ``regression`` study: results.json, tables, figures and report sections, per variant
and across variants (Table IV next to the seed's; which interaction terms survive pruning; whether the
TLB x cache interactions need the page-walk pollution)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from whatif.models.regression import RegressionResults, fit_ols, seed000
from whatif.models.regression.ols import f_test
from whatif.scenarios.results.report import Report, figure_png

MODELS = ("I", "II", "II_pruned")


def tlb_cache_block(res: RegressionResults) -> dict[str, Any]:
    """How much the TLB x cache interactions carry in the unpruned II-order model: the F-test (Eq. 7) of
    the II-order model without them against the full one, and the R² they add."""
    full = res.model("II")
    names = ("(Intercept)",) + full.term_names
    keep = [i for i, n in enumerate(names) if not is_tlb_cache(n)]
    block = [n for n in names if is_tlb_cache(n)]
    if not block:
        return {"terms": 0, "f": None, "p": None, "r2_drop": 0.0}
    X = res.design("II").to_numpy()
    reduced = fit_ols(X[:, keep], full.ols.y, tuple(names[i] for i in keep))
    t = f_test(reduced, full.ols, "II without TLBxcache", "II", res.settings["alpha"])
    return {"terms": len(block), "f": t.F, "p": t.p, "r2_drop": float(full.ols.r2 - reduced.r2)}


def measurement_ci95_pct(totals: pd.DataFrame, response: str) -> pd.Series:
    """Per variant, the measurement error interval of seed 000 §III-A: the half-width of the Student-t 95%
    interval of the response's mean over a configuration's replicates, in % of that mean, averaged over
    the configurations.  NaN for a variant with a single replicate."""
    from scipy import stats

    g = totals.groupby(["variant", "workload", "heap_factor"], sort=False)[response]
    n, mean, sd = g.count(), g.mean(), g.std(ddof=1)
    t = stats.t.ppf(0.975, np.maximum(n - 1, 1))
    half = pd.Series(np.where(n > 1, t * sd / np.sqrt(n) / mean * 100.0, np.nan), index=mean.index)
    return half.groupby(level="variant", sort=False).mean()


def variant_doc(res: RegressionResults) -> dict[str, Any]:
    doc = res.variant_dict()
    for name in MODELS:
        if name in res.models:
            doc[name]["cv_error_spread95"] = float(res.model(name).cv.spread95)
            doc[name]["r2_adj"] = float(res.model(name).ols.r2_adj)
    kept = [t for t in doc["pruned_interactions"] if is_tlb_cache(t)]
    doc["tlb_cache_interactions"] = kept
    doc["tlb_cache_block"] = tlb_cache_block(res) if "II" in res.models else None
    doc["observations"] = res.n
    doc["warnings"] = list(res.warnings)
    return doc


def table_iv_comparison(fits: dict[str, RegressionResults]) -> pd.DataFrame:
    rows = []
    for model in MODELS:
        s = seed000.TABLE_IV[model]
        rows.append({"source": "seed 000 (7447A, measured)", "model": model, "R2": s["r2"], "terms": np.nan,
                     "F_test_p_vs_II": np.nan, "cv_error_pct": s["cv_error_pct"], "cv_error_ci95": np.nan,
                     "cv_error_spread95": s["cv_error_spread"]})
    for variant, res in fits.items():
        num = res.table_iv_numeric()
        for model in MODELS:
            if model not in res.models:
                continue
            fit = res.model(model)
            col = num[fit.label]
            rows.append({"source": f"whatif: {variant}", "model": model, "R2": fit.ols.r2, "terms": fit.n_terms,
                         "F_test_p_vs_II": col["F-test p"], "cv_error_pct": fit.cv.mean,
                         "cv_error_ci95": fit.cv.ci95, "cv_error_spread95": fit.cv.spread95})
    return pd.DataFrame(rows)


def interaction_table(fits: dict[str, RegressionResults]) -> pd.DataFrame:
    """Every interaction kept by pruning in some variant: its estimate and t in each variant (NaN: pruned)."""
    per = {}
    for variant, res in fits.items():
        if res.pruned_name is None:
            continue
        c = res.model(res.pruned_name).coefficients().set_index("term")
        per[variant] = c
    terms = sorted({t for c in per.values() for t in c.index if "*" in t},
                   key=lambda t: (not is_tlb_cache(t), t))
    rows = []
    for t in terms:
        row = {"term": t, "tlb_x_cache": is_tlb_cache(t)}
        for variant, c in per.items():
            row[f"{variant}_estimate"] = float(c.loc[t, "estimate"]) if t in c.index else np.nan
            row[f"{variant}_t"] = float(c.loc[t, "t"]) if t in c.index else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def comparison_doc(fits: dict[str, RegressionResults], docs: dict[str, dict]) -> dict[str, Any]:
    out = {}
    for variant, res in fits.items():
        d = docs[variant]
        inter = d["pruned_interactions"]
        out[variant] = {"pruned_interactions": len(inter), "tlb_cache_kept": len(d["tlb_cache_interactions"]),
                        "tlb_cache_block_p": (d["tlb_cache_block"] or {}).get("p"),
                        "tlb_cache_block_r2_drop": (d["tlb_cache_block"] or {}).get("r2_drop")}
    sets = {v: set(d["pruned_interactions"]) for v, d in docs.items()}
    common = set.intersection(*sets.values()) if sets else set()
    out["kept_in_every_variant"] = sorted(common)
    return out


def verdict_text(docs: dict[str, dict], base: str = "as-shipped", off: str = "no-walk-pollution",
                 alpha: float = 0.01) -> str:
    """One plain sentence on whether the TLB x cache interactions weaken without walk pollution: the number
    pruning keeps, and the F-test and R² of the whole TLB x cache block of the II-order model."""
    if base not in docs or off not in docs:
        return ""
    b, o = docs[base], docs[off]
    bb, ob = b["tlb_cache_block"] or {}, o["tlb_cache_block"] or {}
    nb, no = len(b["tlb_cache_interactions"]), len(o["tlb_cache_interactions"])
    pb, po = bb.get("p"), ob.get("p")
    pb = float("nan") if pb is None else pb
    po = float("nan") if po is None else po
    rb, ro = bb.get("r2_drop") or 0.0, ob.get("r2_drop") or 0.0
    signals = [no < nb, pb < alpha <= po, ro < 0.5 * rb]
    against = [no > nb, po < alpha <= pb, ro > 2 * rb]
    if sum(signals) >= 2 and not any(against):
        word = "weaken without the pollution"
    elif sum(signals) > sum(against):
        word = "weaken only marginally without the pollution"
    else:
        word = "do not weaken without the pollution"
    return (f"TLB×cache interactions kept by pruning: {nb} as shipped, {no} without page-walk pollution; the "
            f"whole TLB×cache block of the II-order model adds R² {rb:.2g} as shipped (F-test p = {pb:.3g}) and "
            f"{ro:.2g} without pollution (p = {po:.3g}): they {word}.")


def h_min_table(found: dict[tuple[str, int], dict], short_name) -> pd.DataFrame:
    """H_min found by bisection per (workload, program seed), next to seed 000's Table III (the real 7447A's,
    floored at the Sun JVM's least heap)."""
    rows = []
    for (workload, program_seed), h in found.items():
        name = short_name(workload)
        seed_kb = seed000.TABLE_III_KB.get(name)
        rows.append({"workload": name, "program_seed": program_seed, "h_min_found_kb": h["full_size_kb"],
                     "heap_bytes_simulated": h["heap_bytes"], "out_of_memory_below_bytes": h["below_bytes"],
                     "probes": h["probes"], "seconds": h["seconds"],
                     "seed_table_iii_kb": np.nan if seed_kb is None else float(seed_kb),
                     "found_over_seed": np.nan if seed_kb is None else h["full_size_kb"] / seed_kb,
                     "seed_at_jvm_floor": seed_kb is not None and seed_kb <= seed000.JVM_FLOOR_KB})
    return pd.DataFrame(rows)


def h_min_doc(h_min: pd.DataFrame) -> dict[str, Any]:
    """results.json's ``h_min``: per workload (and program seed, when a workload has several binaries)."""
    multi = h_min["workload"].duplicated(keep=False)
    out = {}
    for (_, r), m in zip(h_min.iterrows(), multi):
        key = f"{r['workload']}@{r['program_seed']}" if m else r["workload"]
        out[key] = {"found_kb": float(r["h_min_found_kb"]), "heap_bytes": int(r["heap_bytes_simulated"]),
                    "below_bytes": int(r["out_of_memory_below_bytes"]), "probes": int(r["probes"]),
                    "seconds": float(r["seconds"]),
                    "seed_table_iii_kb": None if pd.isna(r["seed_table_iii_kb"]) else float(r["seed_table_iii_kb"])}
    return out


FIDELITY_METRICS = (("R² I-order", "I", "r2"), ("R² II-order", "II", "r2"), ("R² II-order pruned", "II_pruned", "r2"),
                    ("CV error I-order (%)", "I", "cv_error_pct"), ("CV error II-order (%)", "II", "cv_error_pct"),
                    ("CV error II-order pruned (%)", "II_pruned", "cv_error_pct"))


def fidelity(docs: dict[str, dict]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Table IV and the measurement error, whatif's variants next to seed 000's real 7447A: the headline rows
    (metric, variant, value, published) and results.json's ``fidelity``."""
    rows = []
    for label, model, key in FIDELITY_METRICS:
        for v, d in docs.items():
            if model in d:
                rows.append({"metric": label, "variant": v, "value": float(d[model][key]),
                             "published": float(seed000.TABLE_IV[model][key])})
    for v, d in docs.items():
        rows.append({"metric": "F-test I vs II p (seed: reject at 99 %)", "variant": v,
                     "value": float(d["f_test_p"]) if d.get("f_test_p") is not None else np.nan,
                     "published": np.nan})
        rows.append({"metric": "measurement error ±% (95 %, replicates)", "variant": v,
                     "value": d["measurement_ci95_pct"], "published": seed000.MEASUREMENT_CI95_PCT})
    head = pd.DataFrame(rows)
    doc = {"source": seed000.SOURCE,
           "table_iv": {m: {"seed": seed000.TABLE_IV[m],
                            "whatif": {v: {k: d[m][k] for k in ("r2", "cv_error_pct", "cv_error_ci95", "n_terms")}
                                       for v, d in docs.items() if m in d}} for m in MODELS},
           "f_test_p": {v: d.get("f_test_p") for v, d in docs.items()},
           "measurement_ci95_pct": {"seed": seed000.MEASUREMENT_CI95_PCT,
                                    "whatif": {v: d["measurement_ci95_pct"] for v, d in docs.items()}}}
    return head, doc


def build_output(spec, scenario, totals: pd.DataFrame, gc: pd.DataFrame,
                 fits: dict[str, RegressionResults], rates: dict, h_min: pd.DataFrame) -> dict[str, Any]:
    """The keyword arguments of :class:`scenarios.studies.StudyOutput`."""
    docs = {v: variant_doc(res) for v, res in fits.items()}
    measured = measurement_ci95_pct(totals, spec.response)
    for v, d in docs.items():
        d["measurement_ci95_pct"] = float(measured.get(v, np.nan))
    t4 = table_iv_comparison(fits)
    inter = interaction_table(fits)
    headline, fidelity_doc = fidelity(docs)
    tables: dict[str, pd.DataFrame] = {"totals": totals, "java_runs": gc, "h_min": h_min, "table_iv": t4,
                                       "interactions": inter}
    figures: dict[str, tuple] = {}
    figs_by_variant = {}
    for variant, res in fits.items():
        for name, df in res.tables().items():
            if name != "table_iv":
                tables[f"{variant}_{name}"] = df
        tables[f"{variant}_table_iv"] = res.table_iv().reset_index()
        figs = regression_figures(res)
        figs_by_variant[variant] = figs
        for name, fig in figs.items():
            figures[f"{variant}_{name}"] = (fig, f"{variant}: {name}")
    verdict = verdict_text(docs)
    results = {"variants": docs, "h_min": h_min_doc(h_min), "fidelity": fidelity_doc,
               "seed_table_iv": seed000.TABLE_IV, "seed_measurement_ci95_pct": seed000.MEASUREMENT_CI95_PCT,
               "interaction_comparison": comparison_doc(fits, docs),
               "tlb_cache_verdict": verdict,
               "design": {"workloads": list(scenario.workloads), "heap_factors": spec.heap_factors,
                          "replicates": scenario.replicates, "instructions": spec.instructions,
                          "instructions_per_unit": spec.instructions_per_unit, "heap_scale": spec.heap_scale,
                          "pmu": spec.pmu, "exclude": spec.exclude, **rates}}

    def report(rep) -> None:
        fill_report(rep, spec, scenario, totals, gc, fits, figs_by_variant, t4, inter, docs, verdict, rates, h_min)

    return {"results": results, "tables": tables, "figures": figures, "report": report, "rates": rates,
            "parameters": {"regression": spec.model_dump()}, "headline": headline,
            "headline_absolute": tuple(headline["metric"].unique())}


def fill_report(rep, spec, scenario, totals, gc, fits, figs_by_variant, t4, inter, docs, verdict, rates,
                h_min) -> None:
    rep.heading("Method")
    rep.paragraph(
        f"{len(scenario.workloads)} workloads × {len(spec.heap_factors)} heap sizes (H_min × "
        f"{', '.join(f'{f:g}' for f in spec.heap_factors)}, H_min found by bisection: below) × "
        f"{scenario.replicates} replicates per variant; each "
        f"configuration is a Java run on the platform: {spec.instructions:,} mutator instructions interleaved with "
        f"allocation stores and {spec.collector} collections decided by the heap simulator (heaps and allocation "
        f"volumes × {spec.heap_scale:g}, {spec.instructions_per_unit:g} mutator instructions per bytecode unit), "
        f"{'under OS timer noise' if spec.os_noise else 'without OS timer noise'}, "
        f"{'every run reading the same input' if spec.same_input else 'each run drawing its own input'}, "
        f"with the events counted in {spec.pmu} PMU mode "
        f"({int(rates['simulated_runs'])} simulated runs for {int(rates['configurations'])} configurations). "
        f"Response {spec.response}; excluded pairs {', '.join(spec.exclude) or 'none'}; redundant predictors "
        f"{'dropped at Spearman ρ² ≥ %g' % spec.redundancy_cut if spec.redundancy_cut else 'kept'}"
        f"{' (never ' + ', '.join(spec.keep_predictors) + ')' if spec.redundancy_cut and spec.keep_predictors else ''}.")
    rep.heading("Minimum heap H_min: found by the simulator, next to seed 000 Table III")
    rep.paragraph(f"H_min is the smallest fixed {spec.collector} heap in which the workload's whole allocation stream "
                  f"(volumes × {spec.heap_scale:g}, the stream the runs allocate) runs without running out of memory, "
                  f"found by bisection on the simulated heap to {spec.min_heap_rel_tol:g} of its size "
                  f"({int(rates['h_min_probes'])} functional runs, {rates['h_min_wall_seconds']:.1f} s). The study's "
                  "heap axis is the found H_min; seed 000's Table III (the real 7447A with Sun's JVM, whose least "
                  f"heap is {seed000.JVM_FLOOR_KB:,} kB: values at that floor are upper bounds) is shown for "
                  "comparison only.")
    rep.table(h_min, caption="h_min_found_kb: full-size equivalent (simulated bytes / heap_scale); "
                             "seed_table_iii_kb: seed 000 Table III (measured)", float_format="{:.4g}")
    rep.paragraph("Measurement error (seed 000 §III-A: the 95% interval of a configuration's mean over its "
                  f"replicates, averaged over configurations): seed ±{seed000.MEASUREMENT_CI95_PCT:g}%; whatif "
                  + ", ".join(f"{v} ±{d['measurement_ci95_pct']:.2f}%" for v, d in docs.items()) + ".")
    rep.heading("Table IV: whatif next to seed 000")
    rep.table(t4, caption="Seed: R² and prediction error ± the seed's interval (its ± matches the per-prediction "
                          "spread95 column); whatif: cv_error_ci95 is the Student-t interval over folds",
              float_format="{:.4g}")
    rep.heading("Interaction terms surviving pruning, across variants")
    if verdict:
        rep.paragraph(verdict)
    rep.table(inter, caption="Estimate (cycles per SD × SD) and t of each kept interaction; empty = pruned",
              float_format="{:.3g}")
    summary = gc.groupby(["variant", "workload", "heap_factor"])[["collections", "gc_instructions", "cycles"]].mean()
    rep.heading("Collections against heap size")
    rep.table(summary.reset_index().query("heap_factor in [1.0, 2.0, 4.0, 6.0]"),
              caption="Mean over replicates and PMU runs", float_format="{:.4g}")
    for variant, res in fits.items():
        report_sections(rep, res, figs_by_variant[variant], title=f"Variant {variant}")


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


SEED_EXCLUDE = ["l2_imiss*l2_dmiss", "dl1_miss*l2_imiss"]      # seed 000 §IV-B: "not meaningful"


TLB_EVENTS = ("dtlb_miss", "itlb_miss")


CACHE_EVENTS = ("il1_miss", "dl1_miss", "l2_hits", "l2_miss", "l2_dmiss", "l2_imiss")


def is_tlb_cache(term: str) -> bool:
    """An interaction of a TLB event with a cache event (the walk-pollution mechanism of seed 000 §I)."""
    parts = term.split("*")
    return len(parts) == 2 and (
        (parts[0] in TLB_EVENTS and parts[1] in CACHE_EVENTS) or (parts[1] in TLB_EVENTS and parts[0] in CACHE_EVENTS))

