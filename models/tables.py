"""Reading CSV tables strictly: what pandas would guess or repair is a :class:`ModelInputError` naming it.

Left alone, ``pandas.read_csv`` takes the first column for the index when the data rows have one field
more than the header (every column then shifts by one), renames a repeated header name ``a`` to
``a.1``, and calls an empty header cell ``Unnamed: 2``.  :func:`read_csv` refuses the three: a row with
more fields than the header (by its line), a name that appears twice, a column without a name.  Rows
with fewer fields than the header keep pandas' reading (the missing cells are empty), which every
engine reports as a missing value on its line.

pandas' own reading errors (``ParserError``, ``EmptyDataError``, ``UnicodeDecodeError``) pass through,
so that each reader words them as before.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import lzma
import re
import warnings
from pathlib import Path
from typing import Any

import pandas as pd

from whatif.models.errors import ModelInputError

_OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
_FIELDS = re.compile(r"Expected (\d+) fields in line (\d+), saw (\d+)")


def read_csv(path: str | Path, strip_names: bool = False, **kwargs: Any) -> pd.DataFrame:
    """``pandas.read_csv(path, **kwargs)`` with the checks of the module docstring; ``strip_names``
    strips the header names (the caller strips them too)."""
    path = Path(path)
    header = _header(path, kwargs.get("skipinitialspace", False))
    if header is not None:
        check_names([h.strip() if strip_names else h for h in header], str(path))
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.ParserWarning)
        try:
            return pd.read_csv(path, index_col=False, **kwargs)
        except pd.errors.ParserWarning:          # the first data row is longer than the header
            n = len(header) if header is not None else 0
            line, fields = _first_long_line(path, n) if n else (None, None)
            if line is None:
                raise ModelInputError(f"{path}: a row has more fields than the header has names; every row "
                                      f"needs one field per column") from None
            raise ModelInputError(f"{path} line {line}: {fields} fields, but the header has {n}; every row "
                                  f"needs one field per column") from None
        except pd.errors.ParserError as exc:
            m = _FIELDS.search(str(exc))
            if m is None:
                raise
            raise ModelInputError(f"{path} line {m.group(2)}: {m.group(3)} fields, but the header has "
                                  f"{m.group(1)}; every row needs one field per column") from None


def check_names(names: list[str], source: str) -> None:
    """Every column has a name, and no name appears twice."""
    seen: set[str] = set()
    for i, name in enumerate(names, start=1):
        if name == "":
            raise ModelInputError(f"{source}: column {i} has no name in the header (a table index written "
                                  f"by pandas? write it with index=False, or name the column)")
        if name in seen:
            raise ModelInputError(f"{source}: column '{name}' appears twice in the header")
        seen.add(name)


def _header(path: Path, skipinitialspace: bool) -> list[str] | None:
    """The header's names as written (None when pandas cannot read even that: it says why next)."""
    try:
        first = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False,
                            skipinitialspace=skipinitialspace)
    except (ValueError, OSError, UnicodeDecodeError):
        return None
    return [str(v) for v in first.iloc[0].tolist()] if len(first) else None


def _first_long_line(path: Path, n_fields: int) -> tuple[int | None, int | None]:
    """The file line and field count of the first row with more than ``n_fields`` fields ((None, None)
    where it cannot be told: a compression this module does not open)."""
    suffix = path.suffix.lower()
    opener = _OPENERS.get(suffix, open if suffix not in (".zst", ".zip", ".tar") else None)
    if opener is None:
        return None, None
    try:
        with opener(path, "rt", newline="", encoding="utf-8", errors="replace") as fh:
            reader = csv.reader(fh)
            for row in reader:
                if len(row) > n_fields:
                    return reader.line_num, len(row)
    except (OSError, csv.Error, EOFError, lzma.LZMAError):
        pass
    return None, None
