"""The HBench:JGC microbenchmark driver (seed 003 §5.3.2): which configurations to run, and the table
they produce.

The microbenchmark populates the heap with an array of ``n_lists`` singly linked lists of
``list_length`` objects of ``object_size`` payload bytes, then collects three times: all objects live
(step ``live``), all reclaimable (``dead``, after the list heads were set to null) and an empty heap
(``empty``).  :class:`MicrobenchPlan` lists the configurations:

* ``fixed`` -- one object size and count, several heap sizes: C_fixed(h) from the ``empty`` steps;
* ``size``  -- per object size, several object counts at one heap size: C_live(s) and C_dead(s) are the
  slopes of the ``live`` and ``dead`` times over the count (seed Table 5-4);
* ``fanout`` and ``fanin`` -- the future work of §5.2.1.2/§5.3.2: objects with a second reference field
  (null), and with a second field pointing to the same next object (fan-in two), which give the cost
  of each further reference field and of each further incoming reference;
* ``roots`` -- one-object lists, each held by a root slot of its own, at several root counts: C_root, the
  time the roots phase spends per root slot (the seed's lists hang off one array, so its formula has no
  root term; an application's collector scans thousands of roots).

The table a run of the plan produces (and that measured microbenchmark results must follow), one row
per step of each configuration:

==============  ============================================================
step            live | dead | empty
heap_bytes      heap size (or ``heap_mb``)
object_size     payload bytes per object (header excluded)
objects         list objects (n_lists x list_length)
gc_seconds      the collection's time (or ``gc_ms``)
purpose         fixed | size | fanout | fanin | roots (optional; inferred otherwise: roots when a row
                scanned more than one root)
fields          reference fields per object (optional, default 1)
fan_in          incoming references per object (optional, default 1)
memory_reads    memory reads during the collection (optional; seed Figures 5-4, 5-7)
mark_seconds    time of the collection's mark phase (optional; for the spacing extension)
roots           root slots the collection scanned (optional; with ``roots_seconds``, for C_root)
roots_seconds   time of the collection's roots phase (optional)
==============  ============================================================
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from whatif.models.errors import ModelInputError, shown
from whatif.models.params import Interval, ListOf, Parameterised

#: object sizes of seed 003 Table 5-4 (payload bytes)
TABLE_5_4_SIZES = tuple(range(12, 133, 8))
#: larger sizes, measured so that large arrays are not priced at 132 bytes (TLB and page effects)
LARGE_SIZES = (252, 508, 1020, 4092, 16380)
STEPS = ("live", "dead", "empty")
PURPOSES = ("fixed", "size", "fanout", "fanin", "roots")
MB = 1024 * 1024


def object_bytes(object_size: int, header_bytes: int = 4) -> int:
    return (object_size + header_bytes + 7) // 8 * 8


_POSITIVE_INT = Interval(int, 1, None)
_POSITIVE = Interval(float, 0.0, None, "neither")


@dataclass(frozen=True)
class MicrobenchPlan(Parameterised):
    """Configurations of the microbenchmark.  Volumes are in MB of list objects; ``scale`` multiplies
    every heap size and volume (studies shrink the heaps of their applications by the same factor).
    The fields are checked on construction (``ModelInputError`` naming the field)."""

    _parameter_constraints = {
        "object_sizes": ListOf(_POSITIVE_INT, nonempty=True),
        "n_lists": _POSITIVE_INT,
        "volumes_mb": ListOf(_POSITIVE, nonempty=True),
        "size_heap_mb": _POSITIVE,
        "fixed_object_size": _POSITIVE_INT,
        "fixed_list_length": _POSITIVE_INT,
        "fixed_heaps_mb": ListOf(_POSITIVE, nonempty=True),
        "connectivity_object_size": _POSITIVE_INT,
        "connectivity_volume_mb": _POSITIVE,
        "header_bytes": Interval(int, 0, None),
        "scale": _POSITIVE,
        "large_lists": _POSITIVE_INT,
        "root_counts": ListOf(_POSITIVE_INT),
    }

    object_sizes: tuple[int, ...] = TABLE_5_4_SIZES + LARGE_SIZES
    n_lists: int = 512
    volumes_mb: tuple[float, ...] = (16.0, 24.0, 32.0)      # objects per size: these volumes
    size_heap_mb: float = 40.0                               # heap of the "size" configurations
    fixed_object_size: int = 28
    fixed_list_length: int = 1024
    fixed_heaps_mb: tuple[float, ...] = (24.0, 32.0, 48.0, 64.0, 96.0, 128.0)
    connectivity_object_size: int = 28
    connectivity_volume_mb: float = 24.0
    header_bytes: int = 4
    scale: float = 1.0
    large_lists: int = 4                                     # lists of objects of 4 KB and more
    root_counts: tuple[int, ...] = (1024, 4096, 16384)       # roots rows (not scaled: a root is a slot)

    def __post_init__(self) -> None:
        self.validate_params()
        if len(set(self.volumes_mb)) < 2:
            raise ModelInputError("MicrobenchPlan: at least two object volumes are needed for the slopes")

    def scaled(self, scale: float) -> "MicrobenchPlan":
        return replace(self, scale=scale)

    def _lists(self, object_size: int) -> int:
        if object_bytes(object_size, self.header_bytes) >= 4096:
            return self.large_lists
        return max(1, int(round(self.n_lists * self.scale)))

    def configurations(self) -> list[dict]:
        """One dict per microbenchmark run: purpose, heap_bytes, n_lists, list_length, object_size,
        fields, twin, rooted."""
        out = []
        sc = self.scale
        fixed_lists = self._lists(self.fixed_object_size)
        fixed_len = max(1, int(round(self.fixed_list_length * sc * self.n_lists / fixed_lists)))
        for h in self.fixed_heaps_mb:
            out.append(dict(purpose="fixed", heap_bytes=int(h * sc * MB) // 8 * 8, n_lists=fixed_lists,
                            list_length=fixed_len, object_size=self.fixed_object_size, fields=1, twin=False))
        size_heap = int(self.size_heap_mb * sc * MB)
        for s in self.object_sizes:
            ob = object_bytes(s, self.header_bytes)
            nl = self._lists(s)
            lengths = [max(1, math.ceil(v * sc * MB / (nl * ob))) for v in self.volumes_mb]
            # one heap per size (the regression over counts holds heap size fixed), large enough for the most
            heap = max(size_heap, int(1.25 * nl * max(lengths) * ob) + 4 * nl + 4096) // 8 * 8
            for length in lengths:
                out.append(dict(purpose="size", heap_bytes=heap, n_lists=nl, list_length=length,
                                object_size=s, fields=1, twin=False))
        s = self.connectivity_object_size
        nl = self._lists(s)
        length = max(1, math.ceil(self.connectivity_volume_mb * sc * MB / (nl * object_bytes(s, self.header_bytes))))
        for purpose, fields, twin in (("fanout", 1, False), ("fanout", 2, False), ("fanin", 2, True)):
            out.append(dict(purpose=purpose, heap_bytes=size_heap // 8 * 8, n_lists=nl, list_length=length,
                            object_size=s, fields=fields, twin=twin))
        for r in self.root_counts:
            out.append(dict(purpose="roots", heap_bytes=size_heap // 8 * 8, n_lists=int(r), list_length=1,
                            object_size=self.fixed_object_size, fields=1, twin=False))
        return [dict(c, rooted=c["purpose"] == "roots") for c in out]

    def to_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


def _fmt(v) -> str:
    v = v.item() if hasattr(v, "item") else v
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return repr(v)


def _numeric(df: pd.DataFrame, col: str, source: str, positive: bool = False, nonneg: bool = True,
             allow_missing: bool = False, integer: bool = False) -> pd.Series:
    """``df[col]`` as numbers: every cell a finite number (``integer``: a whole one that fits 64 bits),
    else an error naming the first row that is not."""
    s = pd.to_numeric(df[col], errors="coerce")
    bad = s.isna() & ~(df[col].isna() if allow_missing else False)
    if bad.any():
        row = int(bad.to_numpy().nonzero()[0][0])
        raise ModelInputError(f"{source}: row {row + 1}, column {col!r}: not a number ({_fmt(df[col].iloc[row])})")
    values = s.to_numpy(dtype=float, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        bad = np.isinf(values) | (integer & np.isfinite(values) & ((values != np.floor(values))
                                                                   | (np.abs(values) >= 2.0 ** 63)))
    if bad.any():
        row = int(bad.nonzero()[0][0])
        must = "a whole number" if integer and np.isfinite(values[row]) else "a finite number"
        raise ModelInputError(f"{source}: row {row + 1}, column {col!r}: must be {must}, got {_fmt(s.iloc[row])}")
    if positive and (s <= 0).any():
        row = int((s <= 0).to_numpy().nonzero()[0][0])
        raise ModelInputError(f"{source}: row {row + 1}, column {col!r}: must be > 0, got {_fmt(s.iloc[row])}")
    if nonneg and (s < 0).any():
        row = int((s < 0).to_numpy().nonzero()[0][0])
        raise ModelInputError(f"{source}: row {row + 1}, column {col!r}: must be >= 0, got {_fmt(s.iloc[row])}")
    return s


def normalise_microbench(df: pd.DataFrame, source: str = "microbenchmark table") -> pd.DataFrame:
    """Check a microbenchmark table (simulated or measured) and return it with canonical columns:
    step, heap_bytes, object_size, objects, gc_seconds, purpose, fields, fan_in (+ memory_reads if given)."""
    if not isinstance(df, pd.DataFrame) or df.empty:
        raise ModelInputError(f"{source}: the microbenchmark table is empty")
    cols = set(df.columns)
    for need in ("step", "object_size", "objects"):
        if need not in cols:
            raise ModelInputError(f"{source}: missing column {need!r} (columns: {', '.join(map(str, df.columns))})")
    if "heap_bytes" not in cols and "heap_mb" not in cols:
        raise ModelInputError(f"{source}: missing column 'heap_bytes' (or 'heap_mb')")
    if "gc_seconds" not in cols and "gc_ms" not in cols:
        raise ModelInputError(f"{source}: missing column 'gc_seconds' (or 'gc_ms')")
    out = pd.DataFrame()
    steps = df["step"].astype(str).str.lower()
    bad = ~steps.isin(STEPS)
    if bad.any():
        row = int(bad.to_numpy().nonzero()[0][0])
        raise ModelInputError(f"{source}: row {row + 1}, column 'step': must be one of {', '.join(STEPS)}, "
                              f"got {shown(df['step'].iloc[row])}")
    out["step"] = steps.to_numpy()
    if "heap_bytes" in cols:
        out["heap_bytes"] = _numeric(df, "heap_bytes", source, positive=True).to_numpy()
    else:
        out["heap_bytes"] = (_numeric(df, "heap_mb", source, positive=True) * MB).to_numpy()
    out["object_size"] = _numeric(df, "object_size", source, positive=True).to_numpy()
    out["objects"] = _numeric(df, "objects", source, positive=True).to_numpy()
    if "gc_seconds" in cols:
        out["gc_seconds"] = _numeric(df, "gc_seconds", source).to_numpy()
    else:
        out["gc_seconds"] = (_numeric(df, "gc_ms", source) / 1000.0).to_numpy()
    out["fields"] = _numeric(df, "fields", source, positive=True).to_numpy() if "fields" in cols else 1
    out["fan_in"] = _numeric(df, "fan_in", source, positive=True).to_numpy() if "fan_in" in cols else 1
    if "purpose" in cols:
        purpose = df["purpose"].astype(str).str.lower()
        bad = ~purpose.isin(PURPOSES)
        if bad.any():
            row = int(bad.to_numpy().nonzero()[0][0])
            raise ModelInputError(f"{source}: row {row + 1}, column 'purpose': must be one of "
                                  f"{', '.join(PURPOSES)}, got {shown(df['purpose'].iloc[row])}")
        out["purpose"] = purpose.to_numpy()
    for col in ("memory_reads", "mark_seconds", "roots", "roots_seconds"):
        if col in cols:
            out[col] = _numeric(df, col, source, allow_missing=True).to_numpy()
    if "purpose" not in cols:
        many_roots = out["roots"].to_numpy() > 1 if "roots" in out else np.zeros(len(out), bool)
        out["purpose"] = ["roots" if r else "fanin" if fi > 1 else "fanout" if f > 1 else "size"
                          for r, f, fi in zip(many_roots, out["fields"], out["fan_in"])]
    return out
