"""Readers for the similarity engine's real-data inputs: CSV and Parquet tables.

* counter time series (contract 2): see ``signatures.py`` for the columns;
* signatures typed into a table (e.g. seed 002's Table 1): application, platform, one column per stall;
* run times per (application, platform) for the system evaluation: ``application`` (or ``workload``),
  ``platform`` and ``run_time`` (or ``run_time_s``), in seconds.  Several rows for the same pair are
  averaged (replicates).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from whatif.files import file_problem

from ..errors import ModelInputError, shown
from ..tables import read_csv
from .signatures import APPLICATION_COLUMNS

RUN_TIME_COLUMNS = ("run_time", "run_time_s")
FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def read_table(path: str | Path) -> tuple[pd.DataFrame, bool]:
    """Read a CSV or Parquet table; returns (frame, rows_are_csv_lines) for error messages."""
    path = Path(path)
    kind = FORMATS.get(path.suffix.lower())
    if kind is None:
        raise ModelInputError(f"{path}: unknown table format '{path.suffix}'; expected .csv or .parquet")
    if (problem := file_problem(path)) is not None:
        raise ModelInputError(f"{path}: {problem}")
    try:
        if kind == "csv":
            df = read_csv(path, strip_names=True, skipinitialspace=True)
            df.columns = [str(c).strip() for c in df.columns]
        else:
            df = pd.read_parquet(path)
            df = df.reset_index(drop=True)
    except ModelInputError:
        raise
    except (ValueError, OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ModelInputError(f"{path}: cannot read {kind} table: {first}") from None
    if len(df.columns) != len(set(df.columns)):
        dup = [c for c in df.columns if list(df.columns).count(c) > 1][0]
        raise ModelInputError(f"{path}: column '{dup}' appears twice")
    return df, kind == "csv"


def run_times_from_table(df: pd.DataFrame, source: str = "run times", csv_lines: bool = False) -> pd.DataFrame:
    """Normalise a run-time table to columns application, platform, run_time (mean per pair)."""
    app = next((c for c in APPLICATION_COLUMNS if c in df.columns), None)
    rt = next((c for c in RUN_TIME_COLUMNS if c in df.columns), None)
    missing = [name for name, col in (("application/workload", app), ("platform", "platform" if "platform" in
                                                                       df.columns else None),
                                      ("run_time/run_time_s", rt)) if col is None]
    if missing:
        raise ModelInputError(f"{source}: missing column {missing[0]} (columns: {', '.join(map(str, df.columns))})")
    values = pd.to_numeric(df[rt], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values) | (values <= 0)
    if bad.any():
        i = np.flatnonzero(bad)[0]
        where = f"line {df.index[i] + 2}" if csv_lines else f"row {df.index[i]}"
        raise ModelInputError(f"{source} {where}: column '{rt}' must be a positive time in seconds; "
                              f"got {shown(df[rt].iloc[i])}")
    out = pd.DataFrame({"application": df[app].astype(str), "platform": df["platform"].astype(str),
                        "run_time": values})
    return out.groupby(["application", "platform"], sort=False, as_index=False)["run_time"].mean()
