"""Similarity-engine results -> tables and report sections; shared by ``whatif similarity`` and the
``similarity`` study."""

from __future__ import annotations

import re
from typing import Callable

import pandas as pd

from whatif.models.similarity import SimilarityResults
from whatif.models.similarity.evaluation import SEED002_TABLE9
from whatif.models.similarity.results import PLOT_LIMIT
from whatif.scenarios.results.report import Report, figure_png


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def parquet_safe(df: pd.DataFrame) -> pd.DataFrame:
    out = df.copy()
    for c in out.columns:
        if out[c].dtype == object:
            out[c] = out[c].map(lambda v: None if v is None else (v if isinstance(v, str) else str(v)))
    out.columns = [str(c) for c in out.columns]
    return out


def add_report_sections(report: Report, results: SimilarityResults,
                        figure_sink: Callable[[str, object], bytes] | None = None) -> None:
    """The analogues of seed 002's Tables 1, 5–9 and Figures 3, 5, 6, 7, appended to ``report``.

    ``figure_sink(name, fig)`` saves a figure and returns its PNG bytes (e.g. through
    ``ResultsWriter.figure``); without it the figures are only embedded.
    """

    def add_figure(name: str, fig, caption: str) -> None:
        png = figure_png(fig) if figure_sink is None else figure_sink(name, fig)
        report.figure(png, caption)

    params = results.parameters
    report.paragraph(f"Signature = Pearson r between the CPI series and each stall-ratio series (Eq. 2); similarity "
                     f"= {params['method']} rank correlation between signatures (Eq. 4), distance 1 - similarity; "
                     f"Algorithm 1 with threshold g = {params['threshold']} and stop rule '{params['stop_rule']}'"
                     + (f"; Algorithm 2 with reference {params['reference']}" if params.get("reference") else "")
                     + ". k-means: Hartigan–Wong (AS 136) on the signature vectors.")
    report.notes("Warnings", list(results.warnings))
    for p, r in results.platforms.items():
        report.heading(f"Platform {p}")
        report.paragraph(f"{r.n} applications; stalls: {', '.join(r.stalls)}; MST total distance "
                         f"{r.tree.total_weight:.4g}; Algorithm 1 found {len(r.clusters)} clusters in "
                         f"{len(r.clustering.steps)} cut steps.")
        if r.n > PLOT_LIMIT:
            report.paragraph(f"{r.n} applications: per-application tables and figures are left out of the report "
                             f"(they are in the Parquet tables and results.json).", note=True)
        else:
            report.table(r.signature_frame(), caption=f"Signatures and rank vectors pi(v) on {p} (Table 1 analogue)",
                         float_format="{:.3f}")
            add_figure(f"signatures_{_safe(p)}", r.plot_signatures(), f"Signatures on {p}")
            add_figure(f"similarity_{_safe(p)}", r.plot_similarity(),
                       f"Similarity matrix on {p} (Tables 5–7 analogue), applications in cut-hierarchy order")
            if r.n <= 30:
                report.table(r.similarity_frame(), caption=f"Similarity matrix on {p}", float_format="{:.2f}")
            add_figure(f"mst_{_safe(p)}", r.plot_mst(),
                       f"Minimum spanning tree on {p} (Figure 5 analogue); dashed edges were cut, [step]")
            if r.clustering.steps:
                add_figure(f"cut_steps_{_safe(p)}", r.plot_cut_steps(),
                           f"Recursive maximum-edge cuts on {p} (Figure 6 analogue)")
            add_figure(f"dendrogram_{_safe(p)}", r.plot_dendrogram(),
                       f"Cut hierarchy on {p} (Figure 7 analogue)")
        if r.n <= PLOT_LIMIT:
            report.table(r.cut_steps_frame(), caption=f"Algorithm 1 cut steps on {p}")
            report.table(pd.DataFrame({"cluster": range(1, len(r.clusters) + 1),
                                       "applications": [", ".join(c) for c in r.clusters]}),
                         caption=f"Algorithm 1 clusters on {p}")
        else:
            sizes = pd.Series([len(c) for c in r.clusters]).value_counts().sort_index()
            report.table(pd.DataFrame({"cluster size": sizes.index, "clusters": sizes.to_numpy()}),
                         caption=f"Algorithm 1 cluster sizes on {p}")
        if r.reference_search is not None:
            frame = r.reference_search_frame()
            if r.n > PLOT_LIMIT:
                frame = frame.drop(columns=["set"])
            report.table(frame, caption=f"Algorithm 2 on {p}: the sets examined; the last is the cluster of "
                                        f"{r.reference}: {', '.join(r.reference_cluster[:50])}"
                                        + (" ..." if len(r.reference_cluster) > 50 else ""))
    if params.get("reference") is not None:
        report.heading("Algorithm 2 vs k-means (Table 8 analogue)")
        report.table(results.kmeans_table())
    ev = results.system_evaluation
    if ev is not None and ev.pairs:
        report.heading("System evaluation (Table 9 analogue)")
        report.paragraph("Each benchmark in turn is the reference of Algorithm 2 on the current platform; the "
                         "prediction is the common speedup direction of its similar applications.")
        report.table(ev.table(), float_format="{:.2f}")
        if params.get("reference") is not None:
            report.table(ev.reference_table(), caption=f"Prediction for the reference {params['reference']}",
                         float_format="{:.3f}")
        seed_pairs = set(SEED002_TABLE9["current -> candidate"])
        if any(f"{p.current} -> {p.candidate}" in seed_pairs for p in ev.pairs):
            report.table(SEED002_TABLE9, caption="Seed 002, Table 9 (as published), for comparison",
                         float_format="{:.2f}")
    if results.series is not None:
        app = params.get("reference") or next(iter(results.platforms.values())).applications[0]
        add_figure(f"time_series_{_safe(app)}", results.plot_time_series(app),
                   f"CPI and stall-ratio series of {app} (Figure 3 analogue)")
