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

__all__ = ["Summary"]


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
            table = df.to_html(index=_has_index(df), border=0, na_rep="–", escape=True,
                               float_format=lambda v: f"{v:.6g}")
            parts.append(f'<p><b>{html.escape(name)}</b></p><div class="scroll">{table}</div>')
        parts.append("</div>")
        return "\n".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """``{"title", "text", "tables": {name: [row records]}}``; NaN and infinities become None."""
        return {"title": self.title, "text": self.text,
                "tables": {name: _records(df) for name, df in self.tables.items()}}
