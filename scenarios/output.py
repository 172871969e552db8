"""Atomic results directories.

Every file of a run is first written into a hidden staging directory next to the
target; only when the whole run succeeded is the staging directory renamed into
place.  An interrupted or failed run therefore never leaves a results directory
(or a half-written file in it) that looks complete, and an existing results
directory is replaced only by a complete new one.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def to_json(obj: Any, indent: int | None = 2) -> str:
    """JSON text for results documents: numpy scalars and arrays become plain numbers and lists."""
    return json.dumps(obj, indent=indent, default=_json_default, allow_nan=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())          # mkstemp creates 0600; give the file normal permissions
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


class ResultsWriter:
    """Stage a results directory and move it into place only on success.

    Use as a context manager::

        with ResultsWriter(out_dir) as out:
            out.table("totals", df)
            out.json("results.json", doc)
            out.figure("cpi_stack", fig)
        # out_dir now exists and is complete; on an exception nothing was written.
    """

    def __init__(self, out_dir: str | os.PathLike, csv: bool = False):
        self.out_dir = Path(out_dir)
        self.csv = csv
        self._staging: Path | None = None
        self.files: list[str] = []

    # -- context management -------------------------------------------------
    def __enter__(self) -> "ResultsWriter":
        parent = self.out_dir.resolve().parent
        parent.mkdir(parents=True, exist_ok=True)
        self._staging = Path(tempfile.mkdtemp(prefix=f".{self.out_dir.name}.tmp-", dir=parent))
        os.chmod(self._staging, 0o777 & ~_umask())
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        staging = self._staging
        self._staging = None
        if staging is None:
            return
        if exc_type is not None:
            shutil.rmtree(staging, ignore_errors=True)
            return
        target = self.out_dir.resolve()
        backup = None
        if target.exists():
            backup = target.with_name(f".{target.name}.old-{os.getpid()}")
            os.replace(target, backup)
        try:
            os.replace(staging, target)
        except BaseException:
            if backup is not None:
                os.replace(backup, target)
            shutil.rmtree(staging, ignore_errors=True)
            raise
        if backup is not None:
            shutil.rmtree(backup, ignore_errors=True)

    @property
    def path(self) -> Path:
        """The staging directory while open (write here), for writers that need a raw path."""
        if self._staging is None:
            raise RuntimeError("ResultsWriter is not open; use it as a context manager")
        return self._staging

    # -- writers --------------------------------------------------------------
    def _record(self, name: str) -> Path:
        if name not in self.files:
            self.files.append(name)
        return self.path / name

    def bytes(self, name: str, data: bytes) -> Path:
        target = self._record(name)
        atomic_write_bytes(target, data)
        return target

    def text(self, name: str, text: str) -> Path:
        return self.bytes(name, text.encode("utf-8"))

    def json(self, name: str, obj: Any) -> Path:
        return self.text(name, to_json(obj) + "\n")

    def table(self, name: str, df: pd.DataFrame) -> Path:
        """Write ``df`` as ``name.parquet`` (and ``name.csv`` when CSV output was requested)."""
        buf = io.BytesIO()
        df.to_parquet(buf, index=False)
        target = self.bytes(f"{name}.parquet", buf.getvalue())
        if self.csv:
            self.text(f"{name}.csv", df.to_csv(index=False))
        return target

    def results(self, *, tables: dict[str, pd.DataFrame], figures: dict[str, Any], results: Any,
                manifest: dict[str, Any], report) -> None:
        """The standard results directory: every table (Parquet), every figure (PNG; a value may be a
        figure or a ``(figure, caption)`` pair), ``results.json``, ``manifest.json`` and ``report.html``."""
        for name, df in tables.items():
            self.table(name, df)
        for name, fig in figures.items():
            self.figure(name, fig[0] if isinstance(fig, tuple) else fig)
        self.json("results.json", results)
        self.json("manifest.json", manifest)
        self.text("report.html", report.html())

    def figure(self, name: str, fig) -> Path:
        """Write a matplotlib figure (closed afterwards) or PNG bytes already rendered as ``name.png``."""
        from whatif.scenarios.report import figure_png

        return self.bytes(f"{name}.png", fig if isinstance(fig, (bytes, bytearray)) else figure_png(fig))
