"""The HBench:JGC analyzer (seed 003 §5.3.3, §5.4.3): the time of every collection of an application
from the collector's cost functions and the application's profile.

For a collection of a heap of ``h`` bytes with ``L`` live and ``D`` dead objects:

* ``distribution="pooled"`` (the seed's formula of §5.4.3, live and dead objects share one normalised
  size distribution n(s))::

      T_GC = C_fixed(h) + L · Σ_s C_live(s) n(s) + D · Σ_s C_dead(s) n(s)

* ``distribution="separate"`` (Eq. (1) with the live and dead size distributions N_l, N_d)::

      T_GC = C_fixed(h) + Σ_s C_live(s) N_l(s) + Σ_s C_dead(s) N_d(s)

* ``connectivity=True`` adds the fan-out and fan-in terms of §5.2.1.2 (C_live(s, d_i, d_o), taken as
  linear in the degrees): ``C_ref · (R − L) + C_visit · (V − L)``, with R the reference fields of the
  live objects and V the references the collector followed to them (the microbenchmark's objects have
  one of each);
* ``spacing=True`` prices the marking of each live object at its spacing in the heap rather than at its
  size: ``Σ_g C_mark(g) N_sp(g) − Σ_s C_mark(s) N_l(s)`` (pooled: ``L Σ_s C_mark(s) n(s)``), where
  ``N_sp`` is the profile's histogram of the distance from each live object to the previous one (less
  the header) and ``C_mark(s)`` the mark-phase part of C_live(s).  In the microbenchmark's lists the
  spacing is the size; survivors scattered among garbage each bring in a cache line of their own, as
  objects larger than a line do (an extension toward "modelling the memory cache hierarchy", §5.5);
* ``copy=True`` adds, for collections that moved objects, the copy approximation: bytes copied /
  copy bandwidth;
* ``roots=True`` adds the roots phase: ``C_root · (roots − 1)``, with roots the root slots the collection
  scanned (the microbenchmark's lists hang off one root, whose scan C_fixed already holds).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import pandas as pd

from whatif.models.errors import ModelInputError
from whatif.models.hbench.profile import AppProfile
from whatif.models.params import Boolean, Options, Parameterised
from whatif.models.summary import Summary

if TYPE_CHECKING:      # costs.GcCostResults.predict builds a GcTimePredictor: a runtime import would loop
    from whatif.models.hbench.costs import GcCostResults


class GcTimePredictor(Parameterised):
    """Predicts every collection of a profile.  Parameters (checked at the start of :meth:`fit`):

    distribution : "pooled" | "separate"
    connectivity : bool
    copy : bool
    spacing : bool
    roots : bool
    """

    _parameter_constraints = {"distribution": Options(("pooled", "separate")), "connectivity": Boolean(),
                              "copy": Boolean(), "spacing": Boolean(), "roots": Boolean()}

    def __init__(self, distribution: str = "pooled", connectivity: bool = False, copy: bool = True,
                 spacing: bool = False, roots: bool = False):
        self.distribution = distribution
        self.connectivity = connectivity
        self.copy = copy
        self.spacing = spacing
        self.roots = roots

    def fit(self, costs: GcCostResults, profile: AppProfile) -> "PredictionResults":
        self.validate_params()
        if self.distribution == "separate" and profile.pooled_only:
            raise ModelInputError(f"{profile.name}: distribution 'separate' needs live and dead size "
                                  "histograms; the profile has one pooled 'count' column")
        log = profile.log
        if self.connectivity:
            if costs.c_ref is None or costs.c_visit is None:
                raise ModelInputError("connectivity terms need the microbenchmark's fanout and fanin rows "
                                      "(C_ref, C_visit)")
            if log["mark_visits"].isna().any() or log["references_scanned"].isna().any():
                raise ModelInputError(f"{profile.name}: connectivity terms need the GC log columns "
                                      "'mark_visits' and 'references_scanned'")
        if self.spacing:
            if not costs.has_mark:
                raise ModelInputError("the spacing extension needs the microbenchmark's mark-phase times "
                                      "(column 'mark_seconds')")
            if profile.spacing is None:
                raise ModelInputError(f"{profile.name}: the spacing extension needs the live-spacing table "
                                      "(gc, spacing, count)")
        if self.roots:
            if costs.c_root is None:
                raise ModelInputError("the roots term needs the microbenchmark's root counts and roots-phase "
                                      "times (columns 'roots', 'roots_seconds' at two or more root counts)")
            if log["roots"].isna().any():
                raise ModelInputError(f"{profile.name}: the roots term needs the GC log column 'roots'")
        warnings: list[str] = []
        rows = []
        for r in log.itertuples(index=False):
            sizes, nl, nd = profile.distribution(r.gc)
            fixed = float(costs.c_fixed(r.heap_bytes))
            cl = costs.c_live(sizes) if len(sizes) else np.zeros(0)
            cd = costs.c_dead(sizes) if len(sizes) else np.zeros(0)
            if self.distribution == "pooled":
                h = profile.hist[profile.hist["gc"] == r.gc]
                counts = h["count"].to_numpy(float) if profile.pooled_only else nl + nd
                total = counts.sum()
                n = counts / total if total > 0 else counts
                live_s = r.live * float((cl * n).sum())
                dead_s = r.dead * float((cd * n).sum())
            else:
                live_s = float((cl * nl).sum())
                dead_s = float((cd * nd).sum())
            spacing_s = 0.0
            if self.spacing:
                gaps, counts = profile.live_spacing(r.gc)
                at_spacing = float((costs.c_mark(gaps) * counts).sum()) if len(gaps) else 0.0
                cm = costs.c_mark(sizes) if len(sizes) else np.zeros(0)
                if self.distribution == "pooled":
                    at_size = r.live * float((cm * n).sum())
                else:
                    at_size = float((cm * nl).sum())
                spacing_s = at_spacing - at_size
            conn_s = 0.0
            if self.connectivity:
                conn_s = costs.c_ref * (r.references_scanned - r.live) + costs.c_visit * (r.mark_visits - r.live)
            copy_s = 0.0
            if self.copy and r.compacted and r.bytes_copied > 0:
                if costs.copy_bandwidth:
                    copy_s = r.bytes_copied / costs.copy_bandwidth
                elif not warnings:
                    warnings.append("collections copied objects but no copy bandwidth was given: "
                                    "their copy term is 0")
            roots_s = costs.c_root * max(float(r.roots) - 1.0, 0.0) if self.roots else 0.0
            pred = fixed + live_s + dead_s + spacing_s + conn_s + copy_s + roots_s
            actual = float(r.actual_s)
            err = 100.0 * (pred - actual) / actual if actual > 0 else float("nan")
            rows.append({"gc": int(r.gc), "explicit": bool(r.explicit), "compacted": bool(r.compacted),
                         "heap_bytes": float(r.heap_bytes), "live_objects": float(r.live),
                         "dead_objects": float(r.dead), "bytes_copied": float(r.bytes_copied),
                         "actual_s": actual, "predicted_s": pred, "error_pct": err, "fixed_s": fixed,
                         "live_s": live_s, "dead_s": dead_s, "spacing_s": spacing_s, "connectivity_s": conn_s,
                         "copy_s": copy_s, "roots_s": roots_s})
        return PredictionResults(predictor=self, costs=costs, profile=profile, table=pd.DataFrame(rows),
                                 warnings=tuple(warnings))


def _stats(t: pd.DataFrame) -> dict[str, Any]:
    if t.empty:
        return {"collections": 0, "mean_abs_error_pct": float("nan"), "max_abs_error_pct": float("nan"),
                "time_difference_pct": float("nan"), "actual_s": 0.0, "predicted_s": 0.0}
    err = t["error_pct"].abs()
    actual = float(t["actual_s"].sum())
    pred = float(t["predicted_s"].sum())
    return {"collections": int(len(t)), "mean_abs_error_pct": float(err.mean()),
            "max_abs_error_pct": float(err.max()),
            "time_difference_pct": 100.0 * (pred - actual) / actual if actual > 0 else float("nan"),
            "actual_s": actual, "predicted_s": pred}


@dataclass(frozen=True, eq=False)
class PredictionResults:
    """Predicted against actual time of every collection (seed Figure 5-9) and the error summary
    (Table 5-5: ``time_difference_pct`` is the difference of the totals, as the seed reports it)."""
    predictor: GcTimePredictor
    costs: GcCostResults
    profile: AppProfile
    table: pd.DataFrame
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @cached_property
    def errors(self) -> dict[str, Any]:
        t = self.table
        doc = _stats(t)
        doc["without_explicit"] = _stats(t[~t["explicit"]])
        doc["without_compaction"] = _stats(t[~t["compacted"]])
        doc["explicit_collections"] = int(t["explicit"].sum())
        doc["compacting_collections"] = int(t["compacted"].sum())
        return doc

    def to_dict(self) -> dict[str, Any]:
        return {"application": self.profile.name, "parameters": self.predictor.get_params(), **self.errors,
                "per_collection": self.table.to_dict(orient="records"), "warnings": list(self.warnings)}

    def summary(self) -> Summary:
        e = self.errors
        lines = [f"{self.profile.name}: {e['collections']} collections, mean |error| "
                 f"{e['mean_abs_error_pct']:.2f}%, max {e['max_abs_error_pct']:.2f}%, total time difference "
                 f"{e['time_difference_pct']:+.2f}%"]
        if e["explicit_collections"]:
            w = e["without_explicit"]
            lines.append(f"  without the {e['explicit_collections']} explicit collections: mean |error| "
                         f"{w['mean_abs_error_pct']:.2f}%, total difference {w['time_difference_pct']:+.2f}%")
        return Summary(f"HBench:JGC prediction of {self.profile.name}", "\n".join(lines),
                       {"errors": error_table({self.profile.name: self})})

    def tables(self) -> dict[str, pd.DataFrame]:
        """``predictions``: predicted against actual time of every collection, with the terms."""
        return {"predictions": self.table.copy()}

    def figures(self) -> dict[str, Callable[[], Any]]:
        """Figure 5-9 analogue, as a function that draws it."""
        return {"predicted_vs_actual": self.plot_predicted_vs_actual}

    def plot_predicted_vs_actual(self, title: str | None = None):
        from whatif.models.hbench.plots import plot_predicted_vs_actual

        return plot_predicted_vs_actual(self, title)


def error_table(results: dict[str, PredictionResults]) -> pd.DataFrame:
    """Seed Table 5-5 over several applications."""
    rows = []
    for name, res in results.items():
        e = res.errors
        rows.append({"application": name, "collections": e["collections"],
                     "explicit": e["explicit_collections"], "compacting": e["compacting_collections"],
                     "mean_abs_error_pct": e["mean_abs_error_pct"], "max_abs_error_pct": e["max_abs_error_pct"],
                     "time_difference_pct": e["time_difference_pct"],
                     "time_difference_without_explicit_pct": e["without_explicit"]["time_difference_pct"],
                     "mean_abs_error_without_explicit_pct": e["without_explicit"]["mean_abs_error_pct"]})
    return pd.DataFrame(rows)
