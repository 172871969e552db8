"""Glue for ``whatif similarity``: read the table, run the similarity engine, write the results directory.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Sequence


from whatif.models.similarity import SimilarityEngine, SimilarityResults, SimilarityWarning, read_table, run_times_from_table
from whatif.scenarios.errors import ScenarioError
from whatif.scenarios.render.similarity import add_report_sections, parquet_safe
from whatif.scenarios.results.directory import write_results_dir
from whatif.scenarios.results.progress import status
from whatif.scenarios.results.report import figure_png
from whatif.scenarios.results.writer import check_results_target


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
    if out is not None:
        check_results_target(out)
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
        note(f"writing {out}")
        write_outputs(out, results, doc, started, title=f"whatif similarity: {Path(table).name}", matrix=matrix,
                      csv=csv, seed=seed, inputs={"command": "similarity", "input": str(table),
                                                  "run_times": None if run_times is None else str(run_times),
                                                  "signatures_table": signatures})
    return doc, results


def write_outputs(out: Path, results: SimilarityResults, doc: dict, started: float, *, title: str,
                  matrix: bool, csv: bool, seed: int, inputs: dict) -> None:
    """Tables (Parquet), figures (PNG), results.json, report.html and manifest.json."""
    figures: dict[str, bytes] = {}

    def sink(name: str, fig) -> bytes:        # the report renders each figure once; the writer saves it too
        figures[name] = figure_png(fig)
        return figures[name]

    n_sig = sum(r.n for r in results.platforms.values())
    write_results_dir(out, title=title, study="similarity", results=doc, started=started,
                      tables={name: parquet_safe(df) for name, df in results.tables(matrix).items()},
                      figures=figures, report=lambda rep: add_report_sections(rep.summary(results.summary()), results,
                                                                          figure_sink=sink),
                      seed=seed, scenario=inputs, parameters=dict(results.parameters), csv=csv,
                      rates={"signatures_per_s": n_sig / max(time.perf_counter() - started, 1e-9)})
