"""The one way every command and study writes its results directory.

``write_results_dir`` does the sequence once: manifest (with the real host seconds), report (the
caller's sections, then provenance), and every table, figure and document through a
:class:`~whatif.scenarios.results.writer.ResultsWriter`, the manifest last with the list of files
written.  Layout::

    results.json     the headline figures (each study documents its keys)
    manifest.json    provenance and the file list (whatif recognises its own directories by it)
    report.html      self-contained: text, tables, embedded figures, provenance
    NAME.parquet     every table (NAME.csv too with ``csv=True``)
    NAME.png         every figure
    NAME             every other file of the run as given (``files``: e.g. ``profile.sqlite``)
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from whatif.scenarios.results.manifest import build_manifest
from whatif.scenarios.results.report import Report
from whatif.scenarios.results.writer import MANIFEST, ResultsWriter

# PNG bytes, or (PNG bytes, caption); or a function that returns them (a figure still being drawn elsewhere)
Figure = bytes | tuple[bytes, str] | Callable[[], bytes]


def write_results_dir(out: str | Path, *, title: str, study: str, results: Any, started: float,
                      tables: dict[str, pd.DataFrame] | None = None, figures: dict[str, Figure] | None = None,
                      report: Callable[[Report], None] | None = None, description: str = "",
                      seed: int | None = None, scenario: Any = None, parameters: Any = None,
                      platforms: dict[str, Any] | None = None, rates: dict[str, float] | None = None,
                      extra: dict[str, Any] | None = None, csv: bool = False,
                      files: dict[str, bytes] | None = None) -> Path:
    """Write the results directory at ``out`` atomically; ``started`` is the ``time.perf_counter()`` of
    the command's start, so that ``host_seconds`` is the run's real wall time.  Returns ``out``."""
    manifest = build_manifest(study=study, seed=seed, parameters=parameters,
                              host_seconds=time.perf_counter() - started, scenario=scenario,
                              platforms=platforms, rates=rates, extra=extra)
    with ResultsWriter(out, csv=csv) as w:
        for name, df in (tables or {}).items():
            w.table(name, df)
        for name, data in (files or {}).items():
            w.bytes(name, data)
        w.json("results.json", results)
        # the report and the figures after the tables: a figure drawn by another process has had the
        # time the tables took (and a report may hand its figures over as it renders them)
        rep = Report(title)
        if description:
            rep.paragraph(description)
        if report is not None:
            report(rep)
        rep.provenance(manifest)
        for name, fig in (figures or {}).items():
            fig = fig() if callable(fig) else fig
            w.figure(name, fig[0] if isinstance(fig, tuple) else fig)
        w.text("report.html", rep.html())
        w.json(MANIFEST, {**manifest, "files": [*w.files, MANIFEST]})
    return Path(out)
