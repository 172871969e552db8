"""GC characterisation: the cost functions C_fixed(h), C_live(s), C_dead(s) of seed 003 §5.2.1.2,
regressed from microbenchmark results (Table 5-4), plus the connectivity costs of the fan-out and
fan-in extension and the copy bandwidth of the copy approximation.

* ``C_fixed(h) = a + b h``: ordinary least squares of the ``empty`` steps' times on heap size
  (seed Figure 5-1: "GC times are linearly dependent on the heap size when collecting an empty heap").
* ``C_live(s)``, ``C_dead(s)``: per object size, the slope of the ``live`` (``dead``) step's time over
  the number of objects at a fixed heap size (§5.3.2); with a single count at a size, the time less
  C_fixed(h), divided by the count.  Between measured sizes C(s) is interpolated linearly; below the
  smallest it takes the smallest's value, above the largest the largest's ("for objects with size
  larger than 132 bytes, the values for 132 bytes are used").
* ``C_mark(s)`` (when the table has ``mark_seconds``): the part of C_live(s) spent marking, from the
  live steps' mark-phase times the same way; the analyzer's spacing extension uses it.
* ``C_ref``: the extra time per further reference field (``fanout`` rows: two fields against one);
  ``C_visit``: per further incoming reference (``fanin`` rows against the two-field ``fanout`` rows).
* ``C_root`` (when the table has ``roots`` and ``roots_seconds`` at two or more root counts): the slope of
  the ``live`` steps' roots-phase times over the root slots scanned.  The ``roots`` rows serve this fit
  alone (their empty steps scan null slots, their lists are one object long).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable

import numpy as np
import pandas as pd

from whatif.models.errors import ModelInputError
from whatif.models.hbench.microbench import MB, normalise_microbench
from whatif.models.params import Interval, NoneOr, Parameterised
from whatif.models.summary import Summary


@dataclass(frozen=True)
class LinearFit:
    intercept: float
    slope: float
    r2: float
    n: int

    def __call__(self, x):
        return self.intercept + self.slope * np.asarray(x, dtype=float)


def ols(x: np.ndarray, y: np.ndarray) -> LinearFit:
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    if len(x) < 2 or np.ptp(x) == 0:
        raise ValueError("needs two distinct x values")
    A = np.column_stack([np.ones_like(x), x])
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    resid = y - A @ coef
    ss = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float((resid ** 2).sum()) / ss if ss > 0 else 1.0
    return LinearFit(float(coef[0]), float(coef[1]), r2, len(x))


class GcCostModel(Parameterised):
    """Fit the cost functions of a collector from a microbenchmark table.

    Parameters (checked at the start of :meth:`fit`):

    copy_bandwidth : float > 0 or None
        Bytes per second of copying (the copy approximation: bytes copied / bandwidth).  None leaves
        copying collections without their copy term.
    """

    _parameter_constraints = {"copy_bandwidth": NoneOr(Interval(float, 0.0, None, closed="neither"))}

    def __init__(self, copy_bandwidth: float | None = None):
        self.copy_bandwidth = copy_bandwidth

    def fit(self, microbench: pd.DataFrame, source: str = "microbenchmark table") -> "GcCostResults":
        self.validate_params()
        params = self.get_params()
        if params["copy_bandwidth"] is not None:
            params["copy_bandwidth"] = float(params["copy_bandwidth"])
        everything = normalise_microbench(microbench, source)
        mb = everything[everything["purpose"] != "roots"]
        if mb.empty:
            raise ModelInputError(f"{source}: only 'roots' rows; C_fixed, C_live and C_dead need the others")
        empty = mb[mb["step"] == "empty"]
        if empty["heap_bytes"].nunique() < 2:
            raise ModelInputError(f"{source}: C_fixed needs 'empty' steps at two or more heap sizes "
                                  f"(found {empty['heap_bytes'].nunique()})")
        fixed = ols(empty["heap_bytes"], empty["gc_seconds"])
        plain = mb[(mb["fields"] == 1) & (mb["fan_in"] == 1)]
        rows = []
        for size, g in plain.groupby("object_size"):
            row = {"object_size": float(size)}
            for step in ("live", "dead"):
                gs = g[g["step"] == step]
                if gs.empty:
                    raise ModelInputError(f"{source}: object size {size:g} has no {step!r} step")
                # the regression at the heap size with the most distinct object counts
                best = max(gs.groupby("heap_bytes"), key=lambda kv: kv[1]["objects"].nunique())[1]
                if best["objects"].nunique() >= 2:
                    f = ols(best["objects"], best["gc_seconds"])
                    row[f"c_{step}"] = f.slope
                    row[f"{step}_r2"] = f.r2
                    row[f"{step}_points"] = f.n
                else:
                    per = (gs["gc_seconds"] - fixed(gs["heap_bytes"])) / gs["objects"]
                    row[f"c_{step}"] = float(per.mean())
                    row[f"{step}_r2"] = float("nan")
                    row[f"{step}_points"] = len(gs)
            row["c_mark"] = float("nan")
            if "mark_seconds" in g:
                gm = g[(g["step"] == "live") & g["mark_seconds"].notna()]
                if not gm.empty:
                    best = max(gm.groupby("heap_bytes"), key=lambda kv: kv[1]["objects"].nunique())[1]
                    row["c_mark"] = (ols(best["objects"], best["mark_seconds"]).slope if best["objects"].nunique() >= 2
                                     else float((best["mark_seconds"] / best["objects"]).mean()))
            rows.append(row)
        if not rows:
            raise ModelInputError(f"{source}: no rows with one reference field per object (fields = 1, fan_in = 1)")
        table = pd.DataFrame(rows).sort_values("object_size").reset_index(drop=True)
        c_ref = c_visit = None
        conn = {}
        live = mb[mb["step"] == "live"]

        def per_object(fields: int, fan_in: int) -> pd.DataFrame:
            g = live[(live["fields"] == fields) & (live["fan_in"] == fan_in)]
            return g.assign(per=(g["gc_seconds"] - fixed(g["heap_bytes"])) / g["objects"])

        one, two, twin = per_object(1, 1), per_object(2, 1), per_object(2, 2)
        if not two.empty:
            base = one[one["object_size"].isin(two["object_size"])]
            if not base.empty:
                s = two["object_size"].iloc[0]
                c_ref = float(two[two["object_size"] == s]["per"].mean() - base[base["object_size"] == s]["per"].mean())
                conn["c_ref_object_size"] = float(s)
        if not twin.empty and not two.empty:
            s = twin["object_size"].iloc[0]
            c_visit = float(twin[twin["object_size"] == s]["per"].mean() - two[two["object_size"] == s]["per"].mean())
        c_root = None
        if {"roots", "roots_seconds"} <= set(everything.columns):
            rooted = everything[(everything["step"] == "live") & everything["roots"].notna()
                                & everything["roots_seconds"].notna()]
            if rooted["roots"].nunique() >= 2:
                fit = ols(rooted["roots"], rooted["roots_seconds"])
                c_root = fit.slope
                conn["c_root_r2"], conn["c_root_points"] = fit.r2, fit.n
        return GcCostResults(model=self, fixed=fixed, table=table, c_ref=c_ref, c_visit=c_visit,
                             copy_bandwidth=params["copy_bandwidth"], microbench=mb, extra=conn,
                             c_root=c_root)


@dataclass(frozen=True, eq=False)
class GcCostResults:
    """The fitted cost functions (seconds; sizes in payload bytes)."""
    model: GcCostModel
    fixed: LinearFit
    table: pd.DataFrame
    c_ref: float | None
    c_visit: float | None
    copy_bandwidth: float | None
    microbench: pd.DataFrame
    extra: dict = field(default_factory=dict)
    c_root: float | None = None

    # ---- evaluation ----------------------------------------------------------------------------
    def c_fixed(self, heap_bytes) -> np.ndarray:
        return self.fixed(heap_bytes)

    def _interp(self, col: str, sizes) -> np.ndarray:
        t = self.table
        return np.interp(np.asarray(sizes, float), t["object_size"].to_numpy(), t[col].to_numpy())

    def c_live(self, sizes) -> np.ndarray:
        return self._interp("c_live", sizes)

    def c_dead(self, sizes) -> np.ndarray:
        return self._interp("c_dead", sizes)

    @property
    def has_mark(self) -> bool:
        return bool(self.table["c_mark"].notna().all()) if "c_mark" in self.table else False

    def c_mark(self, sizes) -> np.ndarray:
        return self._interp("c_mark", sizes)

    @property
    def sizes(self) -> np.ndarray:
        return self.table["object_size"].to_numpy()

    # ---- tables --------------------------------------------------------------------------------
    @cached_property
    def table_5_4(self) -> pd.DataFrame:
        """Seed Table 5-4's layout: C_fixed per MB, C_live and C_dead per object, in milliseconds."""
        t = self.table
        return pd.DataFrame({"object_size": t["object_size"].astype(int),
                             "c_fixed_ms_per_mb": self.fixed.slope * MB * 1e3,
                             "c_live_ms_per_object": t["c_live"] * 1e3,
                             "c_dead_ms_per_object": t["c_dead"] * 1e3})

    def knee(self, which: str = "dead", max_size: float = 132.0) -> float:
        """The object size where the rise of C(s) ends (seed Figures 5-3, 5-6): the break of the best
        two-piece fit, a line up to the break and a constant from it on, over sizes up to ``max_size``."""
        t = self.table[self.table["object_size"] <= max_size]
        s = t["object_size"].to_numpy(float)
        c = t[f"c_{which}"].to_numpy(float)
        if len(s) < 4:
            return float(s[-1]) if len(s) else float("nan")
        best, best_k = np.inf, len(s) - 1
        for k in range(2, len(s) - 1):
            coef = np.polyfit(s[:k + 1], c[:k + 1], 1)
            sse = float(((np.polyval(coef, s[:k + 1]) - c[:k + 1]) ** 2).sum() + ((c[k:] - c[k:].mean()) ** 2).sum())
            if sse < best - 1e-30:
                best, best_k = sse, k
        return float(s[best_k])

    def to_dict(self) -> dict[str, Any]:
        return {
            "c_fixed": {"intercept_s": self.fixed.intercept, "per_mb_s": self.fixed.slope * MB,
                        "r2": self.fixed.r2, "points": self.fixed.n},
            "c_live_s": {str(int(s)): float(v) for s, v in zip(self.table["object_size"], self.table["c_live"])},
            "c_dead_s": {str(int(s)): float(v) for s, v in zip(self.table["object_size"], self.table["c_dead"])},
            "c_mark_s": ({str(int(s)): float(v) for s, v in zip(self.table["object_size"], self.table["c_mark"])}
                         if self.has_mark else None),
            "c_ref_s": self.c_ref, "c_visit_s": self.c_visit, "c_root_s": self.c_root,
            "copy_bandwidth_bytes_per_s": self.copy_bandwidth,
            "knee_live_bytes": self.knee("live"), "knee_dead_bytes": self.knee("dead"),
        }

    def summary(self) -> Summary:
        lines = ["HBench:JGC cost functions (seed 003 Table 5-4 layout)",
                 f"  C_fixed(h) = {self.fixed.intercept * 1e3:.4g} ms + {self.fixed.slope * MB * 1e3:.4g} ms/MB x h"
                 f"   (R^2 {self.fixed.r2:.4f}, {self.fixed.n} points)"]
        if self.c_ref is not None:
            lines.append(f"  C_ref = {self.c_ref * 1e6:.4g} us per further reference field")
        if self.c_visit is not None:
            lines.append(f"  C_visit = {self.c_visit * 1e6:.4g} us per further incoming reference")
        if self.c_root is not None:
            lines.append(f"  C_root = {self.c_root * 1e9:.4g} ns per root slot")
        if self.copy_bandwidth:
            lines.append(f"  copy bandwidth = {self.copy_bandwidth / MB:.4g} MB/s")
        lines.append(self.table_5_4.to_string(index=False, float_format=lambda v: f"{v:.3e}"))
        return Summary("HBench:JGC cost functions", "\n".join(lines), {"table_5_4": self.table_5_4})

    def tables(self) -> dict[str, pd.DataFrame]:
        """``cost_functions`` (Table 5-4 layout, ms) and ``cost_fit`` (seconds, with each slope's R^2 and
        points), by file stem."""
        return {"cost_functions": self.table_5_4.copy(), "cost_fit": self.table.copy()}

    # ---- plots ---------------------------------------------------------------------------------
    def figures(self) -> dict[str, Callable[[], Any]]:
        """Figures 5-1 to 5-7 analogues, by file stem, as functions that draw them (memory reads only
        when the microbenchmark table has them)."""
        figs: dict[str, Callable[[], Any]] = {"heap_size": self.plot_heap_size, "object_size": self.plot_object_size}
        if "memory_reads" in self.microbench:
            figs["memory_reads"] = self.plot_memory_reads
        return figs

    def plot_heap_size(self):
        from whatif.models.hbench.plots import plot_heap_size

        return plot_heap_size(self)

    def plot_object_size(self):
        from whatif.models.hbench.plots import plot_object_size

        return plot_object_size(self)

    def plot_memory_reads(self):
        from whatif.models.hbench.plots import plot_memory_reads

        return plot_memory_reads(self)

    def predict(self, profile, distribution: str = "pooled", connectivity: bool = False, copy: bool = True,
                spacing: bool = False, roots: bool = False):
        """Predict every collection of an application profile; see :mod:`models.hbench.analyzer`."""
        from whatif.models.hbench.analyzer import GcTimePredictor

        return GcTimePredictor(distribution=distribution, connectivity=connectivity, copy=copy,
                               spacing=spacing, roots=roots).fit(self, profile)
