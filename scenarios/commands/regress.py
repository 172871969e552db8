"""Glue of ``whatif regress``: read a counter-totals table, run the regression engine, write outputs."""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Sequence


from whatif.models.errors import ModelInputError
from whatif.models.regression import (ID_COLUMNS, ModelInputWarning, RegressionResults, RegressionStudy,
                                      read_counter_totals)
from whatif.scenarios.render.regression import regression_figures, report_sections
from whatif.scenarios.results.directory import write_results_dir
from whatif.scenarios.results.progress import status
from whatif.scenarios.results.writer import check_results_target, read_manifest


def split_list(text: str | None) -> list[str] | None:
    """``"a,b, c"`` -> ``["a", "b", "c"]``; None or empty -> None."""
    if text is None:
        return None
    items = [t.strip() for t in text.split(",") if t.strip()]
    return items or None


def identifying_columns(data: Path) -> tuple[str, ...]:
    """Contract 1's identifying columns, plus -- for a table in a results directory whatif wrote -- every
    key of a run's identity its manifest records (swept parameters such as ``l2.size_kb``, ``binary``)."""
    extra: list[str] = []
    manifest = read_manifest(Path(data).parent)
    params = manifest.get("parameters") if manifest else None
    runs = params.get("runs") if isinstance(params, dict) else None
    for run in runs if isinstance(runs, list) else ():
        if isinstance(run, dict):
            extra += [str(k) for k in run if k != "overrides"]
    sweep = (manifest.get("scenario") or {}).get("sweep") if manifest else None
    if isinstance(sweep, dict):
        extra += [str(k) for k in sweep]
    return tuple(dict.fromkeys([*ID_COLUMNS, *extra]))


def run_regression(data: Path, response: str, predictors: Sequence[str] | None = None,
                   exclude: Sequence[str] = (), progress: bool = False, **params) -> RegressionResults:
    """Read ``data`` and fit; input errors are re-raised with the file name in front."""
    df = read_counter_totals(data)
    params.setdefault("id_columns", identifying_columns(data))
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
    if out is not None:
        check_results_target(out)
    res = run_regression(Path(data), response, split_list(predictors), split_list(exclude) or (),
                         progress=progress, **params)
    doc = res.to_dict()
    doc["input"] = str(data)
    if out is not None:
        write_outputs(res, doc, Path(out), Path(data), started)
    return res, doc


def write_outputs(res: RegressionResults, doc: dict, out: Path, data: Path, started: float) -> None:
    """Tables (Parquet), figures (PNG), results.json, manifest.json and report.html, all or nothing."""
    tables = res.tables()
    figs = regression_figures(res)
    seconds = time.perf_counter() - started
    write_results_dir(out, title=f"whatif regress: {res.response} ~ counter events ({data.name})", study="regression",
                      results=doc, started=started, tables=tables, figures=figs,
                      report=lambda rep: report_sections(rep.summary(res.summary()), res, figs), seed=res.settings["seed"],
                      parameters={"input": str(data), "response": res.response, "predictors": list(res.predictors),
                                  **res.settings},
                      rates={"observations_per_s": res.n / max(seconds, 1e-9)})
