"""``whatif mine``: load an EFG (JSON or SQLite profile), run FlowGSP, print or write the results."""

from __future__ import annotations

import time
from contextlib import nullcontext
from functools import cache
from pathlib import Path
from typing import Any

from whatif.models.flowgsp import EFG, FlowGSP, FlowGSPResults, Progress, read_profile
from whatif.scenarios.errors import ScenarioError
from whatif.scenarios.kernels import load_kernels
from whatif.models.flowgsp.results import generations_figure, supports_figure
from whatif.scenarios.results.directory import write_results_dir
from whatif.scenarios.results.figure_worker import FigureWorker
from whatif.scenarios.results.report import Report, figure_png
from whatif.scenarios.results.writer import check_results_target

# CLI option -> engine parameter (for messages that name the option the user typed)
_OPTIONS = {"gap": "gap", "window": "window", "generations": "n_generations", "min-support": "min_support",
            "min-diff-support": "min_diff_support", "workers": "workers", "cluster": "cluster"}


class RichProgress(Progress):
    """One progress bar per generation on stderr."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress as RP, TextColumn, TimeElapsedColumn

        self._bar = RP(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                       console=Console(stderr=True), transient=False)
        self._task = None

    def generation_started(self, n: int, candidates: int, chunks: int) -> None:
        if self._task is None:
            self._bar.start()
        self._task = self._bar.add_task(f"generation {n:>2}: {candidates:>8,} candidates", total=chunks)

    def chunk_done(self) -> None:
        self._bar.advance(self._task)

    def generation_finished(self, n: int, kept: int, seconds: float) -> None:
        self._bar.update(self._task, description=self._bar.tasks[-1].description + f", {kept:,} kept")

    def stop(self) -> None:
        if self._task is not None:
            self._bar.stop()


def make_engine(gap: int, window: int, generations: int, min_support: float, min_diff_support: float,
                workers: int | None, cluster: str | None) -> FlowGSP:
    engine = FlowGSP(gap=gap, window=window, n_generations=generations, min_support=min_support,
                     min_diff_support=min_diff_support, workers=workers, cluster=cluster)
    for option, param in _OPTIONS.items():
        constraint = FlowGSP._parameter_constraints[param]
        value = getattr(engine, param)
        if not constraint.check(value):
            raise ScenarioError(f"--{option} must be {constraint.must}, got {value!r}")
    return engine


def mine_command(profile: Path, *, gap: int = 0, window: int = 0, generations: int = 10, min_support: float = 0.01,
                 min_diff_support: float = 0.01, workers: int | None = None, cluster: str | None = None,
                 top: int | None = None, out: Path | None = None, progress: bool = True
                 ) -> tuple[FlowGSPResults, dict[str, Any]]:
    """Mine ``profile``; returns the results and the ``--json`` document (``top`` sequences)."""
    if top is not None and top < 1:
        raise ScenarioError(f"--top must be an integer >= 1, got {top!r}")
    t0 = time.perf_counter()
    if out is not None:
        check_results_target(out)
    engine = make_engine(gap, window, generations, min_support, min_diff_support, workers, cluster)
    # the report's figures are drawn by a process that loads matplotlib while the graph is mined
    with FigureWorker() if out is not None else nullcontext() as figures:
        efg = read_profile(profile)
        if cluster is None:                  # (a cluster's workers compile their own)
            load_kernels(progress, miner=True)
        bar = RichProgress() if progress else None
        try:
            results = engine.fit(efg, progress=bar)
        finally:
            if bar is not None:
                bar.stop()
        if out is not None:
            write_results(Path(out), results, efg, profile, t0, figures)
    return results, results.to_dict(top=top)


JSON_TOP = 200             # sequences by S_M in results.json


def write_results(out: Path, results: FlowGSPResults, efg: EFG, profile: Path, started: float,
                  figures: FigureWorker | None = None) -> None:
    """Parquet tables, results.json, figures, report.html and manifest.json, atomically; ``figures``
    draws the figures meanwhile (else they are drawn here)."""
    params = dict(results.parameters)
    sequences, generations = results.table(), results.generations_table()
    drawing = [(supports_figure, (sequences, float(params.get("min_support", 0.0)))),
               (generations_figure, (generations,))]
    # each figure as a function that returns its PNG once drawn (by the worker, or here)
    fig_s, fig_g = ([figures.png(make, *args).get for make, args in drawing] if figures is not None
                    else [cache(lambda make=make, args=args: figure_png(make(*args))) for make, args in drawing])
    summary = results.summary(top=50)

    def report(rep: Report) -> None:
        rep.summary(summary)                # what the terminal printed
        rep.heading("Run")
        rep.table(summary.tables["parameters"])
        rep.paragraph("Sequences are kept when S_M = max(S_f, S_w) reaches the S_M threshold or S_D = |S_f - S_w| "
                      "reaches the S_D threshold (seed 001 §3.3.2); supports are sums over counted walks of the "
                      "minimum normalised edge frequency (S_f) and vertex weight (S_w).", note=True)
        rep.heading("Top sequences by S_M")
        rep.table(summary.tables["sequences"])
        rep.figure(fig_s(), "S_w against S_f of the kept sequences")
        rep.heading("Generations")
        rep.table(summary.tables["generations"])
        rep.figure(fig_g(), "Candidates, kept sequences and seconds per generation")

    # results.json holds the top sequences (every kept one is in sequences.parquet: a profile can keep
    # 10^5 of them); the tables hold no host timing, so identical runs write identical tables
    write_results_dir(out, title=f"FlowGSP: {Path(profile).name}", study="flowgsp",
                      results={**results.to_dict(top=JSON_TOP), "sequences_kept": len(results.sequences),
                               "all_sequences": "sequences.parquet", "parameters": params,
                               "graph": dict(results.graph)},
                      started=started, tables={"sequences": sequences,
                                               "generations": generations.drop(columns="seconds")},
                      figures={"supports": fig_s, "generations": fig_g}, report=report, parameters=params,
                      rates={"candidates_per_s": results.n_candidates / max(results.seconds, 1e-9),
                             "vertices": efg.n_vertices},
                      extra={"input": str(profile), "graph": dict(results.graph)})
