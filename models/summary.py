"""The one summary of every analysis engine's results (statsmodels style).

``results.summary()`` returns a :class:`Summary`: a title, the text the terminal prints, and the named
tables behind that text.  It renders as text (:meth:`Summary.as_text`, also ``str(summary)``), as an
HTML fragment for a report (:meth:`Summary.as_html`) and as a JSON-able dict (:meth:`Summary.to_dict`).
"""

from __future__ import annotations

import html
import math
import numbers
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np
import pandas as pd

__all__ = ["Summary", "display_table"]

SIGNIFICANT = 4            # digits a column of non-whole numbers shows at its largest value (2 at its smallest)
MAX_DECIMALS = 6
SPREAD_FOR_SCIENTIFIC = 1e5   # a column whose nonzero magnitudes span more than this prints in e-notation


def _column_format(values: pd.Series, float_format: str | None = None):
    """One format for a numeric column, so its numbers line up and compare at a glance: thousands
    separators if every value is whole; else ``float_format`` if given, or the decimals that give the
    largest value ``SIGNIFICANT`` significant digits and the smallest two (at most ``MAX_DECIMALS``);
    e-notation where the magnitudes span too much."""
    x = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    finite = x[np.isfinite(x)]
    if not len(finite) or np.all(finite == np.round(finite)) and np.all(np.abs(finite) < 1e15):
        return lambda v: f"{v:,.0f}"
    if float_format is not None:
        return float_format.format
    nonzero = np.abs(finite[finite != 0])
    if len(nonzero) and nonzero.max() / nonzero.min() > SPREAD_FOR_SCIENTIFIC:
        return lambda v: f"{v:.{SIGNIFICANT - 1}e}"
    top, low = (nonzero.max(), nonzero.min()) if len(nonzero) else (1.0, 1.0)
    decimals = max(SIGNIFICANT - 1 - math.floor(math.log10(top)), 1 - math.floor(math.log10(low)))
    decimals = int(min(MAX_DECIMALS, max(0, decimals)))
    return lambda v: f"{v:,.{decimals}f}"


def _display_cell(value: Any, fmt) -> Any:
    if value is None or isinstance(value, (bool, np.bool_, str)):
        return value
    if isinstance(value, (numbers.Real, np.number)):
        v = float(value)
        if math.isnan(v):
            return "–"
        if math.isinf(v):
            return "∞" if v > 0 else "−∞"
        return fmt(v)
    return value


def display_table(df: pd.DataFrame, float_format: str | None = None) -> pd.DataFrame:
    """``df`` with every numeric column formatted as text, one format per column (see
    :func:`_column_format`); other columns unchanged.  For reports: what the reader compares."""
    out = df.copy()
    for col in out.columns:
        series = out[col]
        if series.dtype == object:
            numeric = series.map(lambda v: isinstance(v, (numbers.Real, np.number)) and not isinstance(v, bool))
            if not numeric.any() or not numeric[series.notna()].all():
                continue
        elif not pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
            continue
        fmt = _column_format(series, float_format)
        out[col] = series.map(lambda v, f=fmt: _display_cell(v, f)).astype(object)
    return out


def _has_index(df: pd.DataFrame) -> bool:
    """Whether the row labels carry information (anything but an unnamed 0..n-1 range)."""
    return not (isinstance(df.index, pd.RangeIndex) and df.index.name is None and df.index.start == 0
                and df.index.step == 1)


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return str(value)


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    frame = df.reset_index() if _has_index(df) else df
    return [{str(k): _jsonable(v) for k, v in zip(frame.columns, row)}
            for row in frame.itertuples(index=False, name=None)]


@dataclass(frozen=True, eq=False)
class Summary:
    """Title, terminal text and named tables of a results object.

    ``text`` is exactly what the terminal prints (each engine lays it out, tables included);
    ``tables`` maps a name to the DataFrame behind a part of the text, for reports and JSON.
    """

    title: str
    text: str
    tables: Mapping[str, pd.DataFrame] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tables", MappingProxyType(dict(self.tables)))

    def as_text(self) -> str:
        """What the terminal prints."""
        return self.text

    def __str__(self) -> str:
        return self.as_text()

    def as_html(self) -> str:
        """An HTML fragment for a report: the text in ``<pre>``, then each table (named) in a
        ``<div class="scroll">``."""
        parts = ['<div class="summary">', f"<pre>{html.escape(self.text)}</pre>"]
        for name, df in self.tables.items():
            table = display_table(df).to_html(index=_has_index(df), border=0, na_rep="–", escape=True)
            parts.append(f'<p><b>{html.escape(name)}</b></p><div class="scroll">{table}</div>')
        parts.append("</div>")
        return "\n".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """``{"title", "text", "tables": {name: [row records]}}``; NaN and infinities become None."""
        return {"title": self.title, "text": self.text,
                "tables": {name: _records(df) for name, df in self.tables.items()}}
