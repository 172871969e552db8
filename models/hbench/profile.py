"""The application side of HBench:JGC (seed 003 §5.2.2, §5.3.1): what a profiler reports about each
collection of an application run, read from a GC log (contract 4 of DESIGN.md) and its object-size
histogram, simulated or measured.

GC log columns used (one row per collection; others are ignored):

====================  ========  =====================================================================
gc                    required  collection number (the key of the histogram)
duration_s            required  the collection's actual time (or ``duration_ms``)
heap_bytes            required  heap size during the collection (or ``heap_mb``)
live_objects          required  objects that survived (L)
dead_objects          required  objects reclaimed (D)
explicit              optional  System.gc() (bool); default False
bytes_copied          optional  bytes moved by the collection; default 0
compacted             optional  objects were moved; default bytes_copied > 0
mark_visits           optional  incoming references the collector followed to live objects (fan-in)
references_scanned    optional  reference fields of live objects (fan-out)
roots                 optional  root slots the collector scanned (the analyzer's roots term)
====================  ========  =====================================================================

Histogram columns: ``gc``, ``object_size`` (payload bytes), and ``live`` and ``dead`` counts, or one
``count`` column for the pooled distribution (the seed's profiler: one n(s) for live and dead).

Optional spacing table (a heap-dump measure, for the analyzer's spacing extension): ``gc``, ``spacing``
(bytes from the previous live object's start, less the header) and ``count`` of live objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from whatif.files import file_problem
from whatif.models.errors import ModelInputError, shown
from whatif.models.tables import read_csv
from whatif.models.hbench.microbench import MB, _numeric


def read_table(path: str | Path) -> pd.DataFrame:
    """A CSV or Parquet table; errors become one line."""
    path = Path(path)
    if (problem := file_problem(path)) is not None:
        raise ModelInputError(f"{path}: {problem}")
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            return pd.read_parquet(path)
        return read_csv(path)
    except ModelInputError:
        raise
    except Exception as exc:  # pandas/pyarrow raise many types for unreadable files
        raise ModelInputError(f"{path}: cannot read the table ({type(exc).__name__}: {exc})".splitlines()[0]) from None


def _bool(df: pd.DataFrame, col: str, source: str) -> np.ndarray:
    s = df[col]
    if s.dtype == bool:
        return s.to_numpy()
    mapped = s.astype(str).str.strip().str.lower().map({"true": True, "false": False, "1": True, "0": False,
                                                         "yes": True, "no": False})
    if mapped.isna().any():
        row = int(mapped.isna().to_numpy().nonzero()[0][0])
        raise ModelInputError(f"{source}: row {row + 1}, column {col!r}: not a boolean ({shown(s.iloc[row])})")
    return mapped.astype(bool).to_numpy()


@dataclass(frozen=True, eq=False)
class AppProfile:
    """Per-collection characterisation of one application run."""
    name: str
    log: pd.DataFrame            # gc, actual_s, heap_bytes, live, dead, explicit, bytes_copied, compacted, ...
    hist: pd.DataFrame           # gc, object_size, live, dead (pooled-only histograms: live = dead = NaN)
    pooled_only: bool
    spacing: pd.DataFrame | None = None      # gc, spacing, count

    @property
    def collections(self) -> int:
        return len(self.log)

    def distribution(self, gc: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(sizes, live counts, dead counts) of collection ``gc``."""
        h = self.hist[self.hist["gc"] == gc]
        return h["object_size"].to_numpy(float), h["live"].to_numpy(float), h["dead"].to_numpy(float)

    def live_spacing(self, gc: int) -> tuple[np.ndarray, np.ndarray]:
        """(spacings, counts) of the live objects of collection ``gc``."""
        sp = self.spacing[self.spacing["gc"] == gc]
        return sp["spacing"].to_numpy(float), sp["count"].to_numpy(float)

    @classmethod
    def from_tables(cls, log: pd.DataFrame, hist: pd.DataFrame, name: str = "application",
                    source: str = "GC log", hist_source: str = "size histogram",
                    spacing: pd.DataFrame | None = None, spacing_source: str = "spacing table") -> "AppProfile":
        if not isinstance(log, pd.DataFrame) or log.empty:
            raise ModelInputError(f"{source}: the GC log has no collections")
        cols = set(log.columns)
        for need in ("gc", "live_objects", "dead_objects"):
            if need not in cols:
                raise ModelInputError(f"{source}: missing column {need!r}")
        if "duration_s" not in cols and "duration_ms" not in cols:
            raise ModelInputError(f"{source}: missing column 'duration_s' (or 'duration_ms')")
        if "heap_bytes" not in cols and "heap_mb" not in cols:
            raise ModelInputError(f"{source}: missing column 'heap_bytes' (or 'heap_mb')")
        out = pd.DataFrame({"gc": _numeric(log, "gc", source, integer=True).astype(np.int64).to_numpy()})
        if out["gc"].duplicated().any():
            row = int(out["gc"].duplicated().to_numpy().nonzero()[0][0])
            gc = int(out["gc"].iloc[row])
            raise ModelInputError(f"{source}: row {row + 1}, column 'gc': collection {gc} appears twice")
        out["actual_s"] = (_numeric(log, "duration_s", source) if "duration_s" in cols
                           else _numeric(log, "duration_ms", source) / 1e3).to_numpy()
        out["heap_bytes"] = (_numeric(log, "heap_bytes", source, positive=True) if "heap_bytes" in cols
                             else _numeric(log, "heap_mb", source, positive=True) * MB).to_numpy()
        out["live"] = _numeric(log, "live_objects", source).to_numpy()
        out["dead"] = _numeric(log, "dead_objects", source).to_numpy()
        out["explicit"] = _bool(log, "explicit", source) if "explicit" in cols else False
        out["bytes_copied"] = _numeric(log, "bytes_copied", source).to_numpy() if "bytes_copied" in cols else 0.0
        out["compacted"] = (_bool(log, "compacted", source) if "compacted" in cols
                            else out["bytes_copied"].to_numpy() > 0)
        for col in ("mark_visits", "references_scanned", "roots"):
            out[col] = _numeric(log, col, source).to_numpy() if col in cols else np.nan
        if not isinstance(hist, pd.DataFrame) or hist.empty:
            raise ModelInputError(f"{hist_source}: the object-size histogram is empty")
        hcols = set(hist.columns)
        for need in ("gc", "object_size"):
            if need not in hcols:
                raise ModelInputError(f"{hist_source}: missing column {need!r}")
        h = pd.DataFrame({"gc": _numeric(hist, "gc", hist_source, integer=True).astype(np.int64).to_numpy(),
                          "object_size": _numeric(hist, "object_size", hist_source, positive=True).to_numpy()})
        if "live" in hcols and "dead" in hcols:
            h["live"] = _numeric(hist, "live", hist_source).to_numpy()
            h["dead"] = _numeric(hist, "dead", hist_source).to_numpy()
            pooled_only = False
        elif "count" in hcols:
            h["count"] = _numeric(hist, "count", hist_source).to_numpy()
            h["live"] = np.nan
            h["dead"] = np.nan
            pooled_only = True
        else:
            raise ModelInputError(f"{hist_source}: needs 'live' and 'dead' columns, or a 'count' column")
        unknown = sorted(set(h["gc"]) - set(out["gc"]))
        if unknown:
            raise ModelInputError(f"{hist_source}: collection {int(unknown[0])} is not in the GC log")
        # every collection with objects needs a distribution that normalises
        for gc, live, dead in zip(out["gc"], out["live"], out["dead"]):
            sub = h[h["gc"] == gc]
            total = (sub["count"].sum() if pooled_only else (sub["live"] + sub["dead"]).sum())
            if live + dead > 0 and total <= 0:
                raise ModelInputError(f"{hist_source}: collection {int(gc)} has {int(live + dead)} objects but an "
                                      "empty size distribution (it does not normalise)")
        sp = None
        if spacing is not None:
            for need in ("gc", "spacing", "count"):
                if need not in spacing.columns:
                    raise ModelInputError(f"{spacing_source}: missing column {need!r}")
            sp = pd.DataFrame({"gc": _numeric(spacing, "gc", spacing_source, integer=True).astype(np.int64).to_numpy(),
                               "spacing": _numeric(spacing, "spacing", spacing_source).to_numpy(),
                               "count": _numeric(spacing, "count", spacing_source).to_numpy()})
            unknown = sorted(set(sp["gc"]) - set(out["gc"]))
            if unknown:
                raise ModelInputError(f"{spacing_source}: collection {int(unknown[0])} is not in the GC log")
        return cls(name=name, log=out, hist=h, pooled_only=pooled_only, spacing=sp)

    @classmethod
    def read(cls, log_path: str | Path, hist_path: str | Path, name: str | None = None,
             spacing_path: str | Path | None = None) -> "AppProfile":
        log = read_table(log_path)
        hist = read_table(hist_path)
        spacing = read_table(spacing_path) if spacing_path is not None else None
        return cls.from_tables(log, hist, name=name or Path(log_path).stem, source=str(log_path),
                               hist_source=str(hist_path), spacing=spacing,
                               spacing_source=str(spacing_path) if spacing_path else "spacing table")
