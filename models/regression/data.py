"""Counter-totals tables (contract 1): reading CSV/Parquet and choosing response and predictors.

Row numbers in messages are 1-based data rows (the header is not counted); for a CSV file read by
:func:`read_counter_totals` the file's line number is given as well.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from whatif.files import file_problem
from whatif.models.errors import ModelInputError, shown
from whatif.models.tables import read_csv

#: Identifying columns of contract 1; never chosen as default predictors.  Besides the contract's names,
#: the ones whatif's studies write into their totals tables (the heap size as a factor of H_min, the
#: binary, the program seed); a study's swept keys are read from its manifest by ``whatif regress``.
ID_COLUMNS: tuple[str, ...] = ("workload", "platform", "variant", "replicate", "heap_kb", "seed", "run",
                               "heap_factor", "heap_index", "binary", "program_seed")

#: An object/string column is taken for a numeric column with bad cells (an error) rather than an
#: identifying column (ignored) when at least this fraction of its non-empty cells parse as numbers.
NUMERIC_FRACTION = 0.5


def read_counter_totals(path: str | Path) -> pd.DataFrame:
    """Read a counter-totals table from ``.csv`` (optionally compressed) or ``.parquet``.

    For CSV the index is the file line of each row (named ``"line"``) so that messages can name it.
    """
    path = Path(path)
    if (problem := file_problem(path)) is not None:
        raise ModelInputError(f"{path}: {problem}")
    name = path.name.lower()
    try:
        if name.endswith((".parquet", ".pq")):
            df = pd.read_parquet(path)
            df.index = pd.RangeIndex(len(df))
        elif any(name.endswith(ext) for ext in (".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zst")):
            df = read_csv(path, skip_blank_lines=False)
            df.index = pd.RangeIndex(2, len(df) + 2, name="line")
        else:
            raise ModelInputError(f"{path}: unknown table format; expected a .csv or .parquet file")
    except ModelInputError:
        raise
    except Exception as exc:  # parser errors of pandas / pyarrow
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelInputError(f"{path}: cannot read table: {first}") from None
    if df.shape[1] == 0 or len(df) == 0:
        raise ModelInputError(f"{path}: the table has no rows or no columns")
    return df


def _where(df: pd.DataFrame, pos: int) -> str:
    text = f"row {pos + 1}"
    if df.index.name == "line":
        text += f" (line {df.index[pos]})"
    return text


def _columns_list(cols: Sequence[str], limit: int = 12) -> str:
    cols = [str(c) for c in cols]
    more = f", ... ({len(cols) - limit} more)" if len(cols) > limit else ""
    return ", ".join(cols[:limit]) + more


def _looks_numeric(series: pd.Series) -> bool:
    if pd.api.types.is_bool_dtype(series):
        return False
    if pd.api.types.is_numeric_dtype(series):
        return True
    present = series.dropna()
    present = present[present.astype(str).str.strip() != ""]
    if len(present) == 0:
        return False
    parsed = pd.to_numeric(present, errors="coerce")
    return parsed.notna().mean() >= NUMERIC_FRACTION


def numeric_column(df: pd.DataFrame, column: str, role: str) -> np.ndarray:
    """``df[column]`` as float64; non-numeric, missing or infinite cells raise naming column and row."""
    series = df[column]
    if pd.api.types.is_bool_dtype(series):
        raise ModelInputError(f"{role} column '{column}' is boolean, not numeric")
    if pd.api.types.is_numeric_dtype(series):
        values = series.to_numpy(dtype=float, na_value=np.nan)
    else:
        parsed = pd.to_numeric(series, errors="coerce")
        bad = parsed.isna().to_numpy() & series.notna().to_numpy()
        if bad.any():
            pos = int(np.flatnonzero(bad)[0])
            raise ModelInputError(f"{role} column '{column}' has a non-numeric value {shown(series.iloc[pos])} at "
                                  f"{_where(df, pos)}")
        values = parsed.to_numpy(dtype=float, na_value=np.nan)
    missing = ~np.isfinite(values)
    if missing.any():
        pos = int(np.flatnonzero(missing)[0])
        what = "a missing (NaN) value" if np.isnan(values[pos]) else f"an infinite value ({values[pos]})"
        raise ModelInputError(f"{role} column '{column}' has {what} at {_where(df, pos)}")
    return values


@dataclass(frozen=True)
class PreparedData:
    """Response and predictor values taken from a table, after dropping constant predictors."""

    response: str
    y: np.ndarray
    predictors: tuple[str, ...]
    X: np.ndarray  # (n, len(predictors)) raw (unstandardised) values
    dropped_constant: tuple[str, ...]
    warnings: tuple[str, ...]


def prepare(df: pd.DataFrame, response: str, predictors: Sequence[str] | None = None,
            id_columns: Sequence[str] = ID_COLUMNS) -> PreparedData:
    """Pick the response and predictor columns of a counter-totals table and check their values.

    Without ``predictors``, every numeric column that is neither identifying nor the response is a
    predictor.  Constant predictors are dropped with a warning.
    """
    if not isinstance(df, pd.DataFrame):
        raise ModelInputError(f"the data must be a pandas DataFrame, got {type(df).__name__}")
    columns = [str(c) for c in df.columns]
    if len(set(columns)) != len(columns):
        dup = next(c for c in columns if columns.count(c) > 1)
        raise ModelInputError(f"column '{dup}' appears more than once")
    df = df.set_axis(columns, axis=1)
    if response not in columns:
        raise ModelInputError(f"response column '{response}' not found; columns are: {_columns_list(columns)}")
    if predictors is None:
        ids = set(id_columns)
        chosen = [c for c in columns if c != response and c not in ids and _looks_numeric(df[c])]
        if not chosen:
            raise ModelInputError(f"no numeric predictor columns besides the response '{response}' "
                                  f"(identifying columns {', '.join(id_columns)} are not predictors)")
    else:
        chosen = list(predictors)
        if not chosen:
            raise ModelInputError("the predictor list is empty")
        for c in chosen:
            if c not in columns:
                raise ModelInputError(f"predictor column '{c}' not found; columns are: {_columns_list(columns)}")
        if response in chosen:
            raise ModelInputError(f"the response '{response}' cannot also be a predictor")
        dup = [c for c in chosen if chosen.count(c) > 1]
        if dup:
            raise ModelInputError(f"predictor '{dup[0]}' is listed more than once")
    if len(df) < 3:
        raise ModelInputError(f"the table has {len(df)} rows; a regression needs at least 3")
    y = numeric_column(df, response, "response")
    if np.ptp(y) == 0:
        raise ModelInputError(f"response column '{response}' is constant ({y[0]:g} in every row)")
    kept, values, dropped, warnings = [], [], [], []
    for c in chosen:
        x = numeric_column(df, c, "predictor")
        if np.ptp(x) == 0:
            dropped.append(c)
            warnings.append(f"predictor '{c}' is constant ({x[0]:g} in every row); dropped")
            continue
        kept.append(c)
        values.append(x)
    if not kept:
        raise ModelInputError(f"every predictor is constant ({_columns_list(dropped)}); nothing to regress on")
    return PreparedData(response=response, y=y, predictors=tuple(kept), X=np.column_stack(values),
                        dropped_constant=tuple(dropped), warnings=tuple(warnings))
