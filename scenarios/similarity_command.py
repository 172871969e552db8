"""Glue for ``whatif similarity``: read the table, run the similarity engine, write the results directory.

``write_outputs`` and ``add_report_sections`` are also what a study of kind ``similarity`` calls to put the
engine's tables, figures and report sections into its own results directory.
"""

from __future__ import annotations

import re
import time
import warnings
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd

from whatif.models.similarity import SimilarityEngine, SimilarityResults, SimilarityWarning, read_table, run_times_from_table
from whatif.models.similarity.evaluation import SEED002_TABLE9
from whatif.models.similarity.results import MATRIX_LIMIT, PLOT_LIMIT
from whatif.scenarios.errors import ScenarioError
from whatif.scenarios.manifest import build_manifest
from whatif.scenarios.output import ResultsWriter
from whatif.scenarios.progress import status
from whatif.scenarios.report import Report


def parse_kmeans(text: str | None) -> tuple[int, ...]:
    """``"3,5"`` -> (3, 5); ``""`` or ``"none"`` -> ()."""
    if text is None or text.strip().lower() in ("", "none", "0"):
        return ()
    try:
        ks = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ScenarioError(f"--kmeans must be a comma-separated list of integers >= 2 (e.g. 3,5); "
                            f"got {text!r}") from None
    if any(k < 2 for k in ks):
        raise ScenarioError(f"--kmeans must be a comma-separated list of integers >= 2 (e.g. 3,5); got {text!r}")
    return tuple(dict.fromkeys(ks))


def parse_list(text: str | None) -> list[str] | None:
    if text is None:
        return None
    items = [x.strip() for x in text.split(",") if x.strip()]
    return items or None


def run(table: Path, *, signatures: bool = False, platforms: Sequence[str] | None = None, threshold: float = 0.5,
        reference: str | None = None, kmeans: str | None = "3,5", method: str = "spearman",
        stop_rule: str = "graph", stalls: str | None = None, cycles: str | None = None,
        instructions: str | None = None, on_constant: str = "zero", run_times: Path | None = None,
        matrix: bool = False, seed: int = 0, out: Path | None = None, csv: bool = False,
        progress: bool = False) -> tuple[dict, SimilarityResults]:
    """Run the engine on ``table``; returns the JSON document and the results (and writes ``out`` if given).

    ``progress`` shows a rich status line on stderr (reading, each platform, writing).
    """
    with status("whatif similarity", progress) as note:
        return _run(table, signatures, platforms, threshold, reference, kmeans, method, stop_rule, stalls, cycles,
                    instructions, on_constant, run_times, matrix, seed, out, csv, note)


def _run(table, signatures, platforms, threshold, reference, kmeans, method, stop_rule, stalls, cycles,
         instructions, on_constant, run_times, matrix, seed, out, csv, note) -> tuple[dict, SimilarityResults]:
    started = time.perf_counter()
    engine = SimilarityEngine(threshold=threshold, method=method, stop_rule=stop_rule, reference=reference,
                              kmeans=parse_kmeans(kmeans), seed=seed, on_constant=on_constant,
                              stalls=parse_list(stalls), cycles=cycles, instructions=instructions,
                              platforms=list(platforms) if platforms else None)
    engine.validate_params()          # parameter errors before any file is read
    df, csv_lines = read_table(table)
    rt = None
    if run_times is not None:
        rt_df, rt_lines = read_table(run_times)
        rt = run_times_from_table(rt_df, source=str(run_times), csv_lines=rt_lines)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SimilarityWarning)   # reported through results.warnings
        fit = engine.fit_signatures if signatures else engine.fit
        results = fit(df, rt, source=str(table), csv_lines=csv_lines,
                      progress=lambda p: note(f"analysing platform {p}"))
    doc = results.to_dict(matrix=True if matrix else None)
    if out is not None:
        seconds = time.perf_counter() - started
        n_sig = sum(r.n for r in results.platforms.values())
        manifest = build_manifest(scenario={"command": "similarity", "input": str(table),
                                            "run_times": None if run_times is None else str(run_times),
                                            "signatures_table": signatures},
                                  study="similarity", seed=seed, parameters=dict(results.parameters),
                                  host_seconds=seconds, rates={"signatures_per_s": n_sig / max(seconds, 1e-9)})
        note(f"writing {out}")
        with ResultsWriter(out, csv=csv) as writer:
            write_outputs(writer, results, doc, manifest, title=f"whatif similarity: {Path(table).name}",
                          matrix=matrix)
    return doc, results


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def result_tables(results: SimilarityResults, matrix: bool = False) -> dict[str, pd.DataFrame]:
    """The engine's tables, keyed by file stem."""
    tables: dict[str, pd.DataFrame] = {}
    sig, mst, clusters, steps, search = [], [], [], [], []
    for p, r in results.platforms.items():
        for frame, acc in ((r.signature_frame(), sig), (r.mst_frame(), mst), (r.clusters_frame(), clusters),
                           (r.cut_steps_frame(), steps), (r.reference_search_frame(), search)):
            frame = frame.copy()
            frame.insert(0, "platform", p)
            acc.append(frame)
        if matrix or r.n <= MATRIX_LIMIT:
            tables[f"similarity_{_safe(p)}"] = r.similarity_frame()
    for name, acc in (("signatures", sig), ("mst", mst), ("clusters", clusters), ("cut_steps", steps),
                      ("reference_search", search)):
        if acc:
            tables[name] = pd.concat(acc, ignore_index=True)
    if results.parameters.get("reference") is None:
        tables.pop("reference_search", None)
    else:
        tables["kmeans_comparison"] = results.kmeans_table()
    if results.system_evaluation is not None:
        tables["system_evaluation"] = results.system_evaluation.table()
        tables["system_evaluation_reference"] = results.system_evaluation.reference_table()
        tables["system_evaluation_cases"] = results.system_evaluation.cases
    return tables


def write_outputs(writer: ResultsWriter, results: SimilarityResults, doc: dict, manifest: dict, *, title: str,
                  matrix: bool = False) -> None:
    """Tables (Parquet), figures (PNG), results.json, report.html and manifest.json into an open writer."""
    for name, df in result_tables(results, matrix).items():
        writer.table(name, _parquet_safe(df))
    writer.json("results.json", doc)
    report = Report(title)
    add_report_sections(report, results, figure_sink=lambda name, fig: writer.figure(name, fig).read_bytes())
    report.provenance(manifest)
    writer.text("report.html", report.html())
    writer.json("manifest.json", manifest)


def _parquet_safe(df: pd.DataFrame) -> pd.DataFrame:
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
    from whatif.scenarios.report import figure_png

    def add_figure(name: str, fig, caption: str) -> None:
        png = figure_png(fig) if figure_sink is None else figure_sink(name, fig)
        report.figure(png, caption)

    params = results.parameters
    report.paragraph(f"Signature = Pearson r between the CPI series and each stall-ratio series (Eq. 2); similarity "
                     f"= {params['method']} rank correlation between signatures (Eq. 4), distance 1 - similarity; "
                     f"Algorithm 1 with threshold g = {params['threshold']} and stop rule '{params['stop_rule']}'"
                     + (f"; Algorithm 2 with reference {params['reference']}" if params.get("reference") else "")
                     + ". k-means: Hartigan–Wong (AS 136) on the signature vectors.")
    if results.warnings:
        report.heading("Warnings")
        for w in results.warnings:
            report.paragraph(w, note=True)
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
