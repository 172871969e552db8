"""HBench's vector methodology (seed 003 ch. 3): predicted time = system vector · application vector.

A *system vector* gives each primitive operation's cost on a system (µs per call, per byte, ...); an
*application vector* how often an application uses each primitive (calls, bytes).  The predicted time of
an application on a system is their dot product, with its per-primitive breakdown -- the form of seed
003's Tables 6-2 to 6-5: element, application vector, system vector, total, percentage.  A primitive
may instead carry a size-dependent cost function C(s) on a system and a size distribution N(s) in an
application (§3.1.1): its time is Σ_s C(s) N(s), C interpolated linearly between the measured sizes and
held beyond them.

Across systems (§3.3): the *rank* of the predicted times, and *ratios* -- every system's speed
normalised to a reference system (time on the reference / time on the system; Figures 4-4..4-7, 6-1).
What-ifs edit a primitive's cost (× k) or an application's count and predict again.  The speedup of an
optimisation is r = s1 / s2; with user time u not in the vectors, r' = (1 + u/s1) / (1/r + u/s1)
(§6.3.3.3).

Works on tables, measured or simulated (:func:`read_vector_file` reads CSV and TOML); nothing here
imports the simulator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from whatif.models.errors import ModelInputError, shown
from whatif.models.params import NoneOr, Parameterised, String
from whatif.models.summary import Summary

SYSTEM_COLUMNS = ("system", "primitive", "cost")
APP_COLUMNS = ("application", "primitive", "count")
FUNCTION_COLUMNS = ("system", "primitive", "size", "cost")
DISTRIBUTION_COLUMNS = ("application", "primitive", "size", "count")


def speedup(s1: float, s2: float, user_over_s1: float = 0.0) -> float:
    """r' = (1 + u/s1) / (s2/s1 + u/s1); with ``user_over_s1 = 0`` this is r = s1/s2 (§6.3.3.3)."""
    if not s1 > 0 or not s2 > 0:
        raise ModelInputError(f"speedup needs positive latencies, got s1={shown(s1)}, s2={shown(s2)}")
    if not user_over_s1 >= 0:
        raise ModelInputError(f"speedup needs u/s1 >= 0, got {shown(user_over_s1)}")
    return (1.0 + user_over_s1) / (s2 / s1 + user_over_s1)


def _long(df: pd.DataFrame, columns: tuple[str, ...], what: str, source: str) -> pd.DataFrame:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ModelInputError(f"{source}: {what} lacks column(s) {', '.join(missing)} (expected {', '.join(columns)})")
    out = df[list(columns)].copy()
    for c in columns[:2]:
        empty = out[c].isna().to_numpy() | (out[c].astype(str).str.strip() == "").to_numpy()
        if empty.any():                     # (a missing name is NaN, which no later sort or lookup can take)
            raise ModelInputError(f"{source}: {what} row {int(np.flatnonzero(empty)[0]) + 1}: {c} is empty")
        out[c] = out[c].astype(str).str.strip()
    for c in columns[2:]:
        values = pd.to_numeric(out[c], errors="coerce")
        bad = values.isna() | ~np.isfinite(values.to_numpy(dtype=float, na_value=np.nan)) | (values < 0)
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise ModelInputError(f"{source}: {what} row {row + 1} ({out[columns[0]].iloc[row]}, "
                                  f"{out[columns[1]].iloc[row]}): {c} must be a non-negative number, got "
                                  f"{shown(df[c].iloc[row])}")
        out[c] = values.astype(float)
    dup = out.duplicated(list(columns[:-1]) if len(columns) == 4 else list(columns[:2]))
    if dup.any():
        row = int(np.flatnonzero(dup.to_numpy())[0])
        raise ModelInputError(f"{source}: {what} row {row + 1}: {out[columns[0]].iloc[row]} lists "
                              f"{shown(out[columns[1]].iloc[row])} twice")
    return out.reset_index(drop=True)


def _interpolate(sizes: np.ndarray, costs: np.ndarray, at: np.ndarray) -> np.ndarray:
    order = np.argsort(sizes)
    return np.interp(at, sizes[order], costs[order])


class VectorModel(Parameterised):
    """Dot products of system and application vectors, ranks and ratios across systems.

    Parameters (checked at the start of :meth:`fit`):

    reference : str or None
        The system every other is normalised to (default: the first system of the system table).
    """

    _parameter_constraints = {"reference": NoneOr(String(nonempty=True))}

    def __init__(self, reference: str | None = None):
        self.reference = reference

    def fit(self, systems: pd.DataFrame, applications: pd.DataFrame, functions: pd.DataFrame | None = None,
            distributions: pd.DataFrame | None = None, source: str = "vectors") -> "VectorResults":
        """``systems`` (system, primitive, cost), ``applications`` (application, primitive, count);
        optionally ``functions`` (system, primitive, size, cost) and ``distributions`` (application,
        primitive, size, count) for size-dependent primitives."""
        self.validate_params()
        sys_v = _long(systems, SYSTEM_COLUMNS, "system vector", source)
        app_v = _long(applications, APP_COLUMNS, "application vector", source)
        fun = _long(functions, FUNCTION_COLUMNS, "cost function", source) if functions is not None and len(functions) \
            else pd.DataFrame(columns=list(FUNCTION_COLUMNS))
        dist = _long(distributions, DISTRIBUTION_COLUMNS, "size distribution", source) \
            if distributions is not None and len(distributions) else pd.DataFrame(columns=list(DISTRIBUTION_COLUMNS))
        if not len(sys_v) and not len(fun):
            raise ModelInputError(f"{source}: the system vector is empty")
        if not len(app_v) and not len(dist):
            raise ModelInputError(f"{source}: the application vector is empty")
        system_names = list(dict.fromkeys([*sys_v.system, *fun.system]))
        app_names = list(dict.fromkeys([*app_v.application, *dist.application]))
        common = (set(sys_v.primitive) | set(fun.primitive)) & (set(app_v.primitive) | set(dist.primitive))
        if not common:
            raise ModelInputError(f"{source}: the system and application vectors have no primitive in common")
        reference = self.reference if self.reference is not None else system_names[0]
        if reference not in system_names:
            raise ModelInputError(f"{source}: reference system {reference!r} is not in the system vector "
                                  f"(systems: {', '.join(system_names)})")
        rows, warnings = [], []
        for app in app_names:
            counts = app_v[app_v.application == app].set_index("primitive")["count"]
            sized = dist[dist.application == app]
            prims = list(dict.fromkeys([*counts.index, *sized.primitive]))
            usable = []
            for system in system_names:
                have = set(sys_v[sys_v.system == system].primitive) | set(fun[fun.system == system].primitive)
                lacking = [p for p in prims if p not in have]
                if lacking:
                    warnings.append(f"{app}: {system} has no cost for {', '.join(repr(p) for p in lacking)}; "
                                    f"not predicted there")
                else:
                    usable.append(system)
            if not usable:
                every = set(sys_v.primitive) | set(fun.primitive)
                unknown = [p for p in prims if p not in every]
                if unknown:
                    raise ModelInputError(f"{source}: application {app}: unknown primitive {unknown[0]!r} (no system "
                                          f"vector gives it; primitives: {', '.join(sorted(every))})")
                raise ModelInputError(f"{source}: application {app}: no system has a cost for every one of its "
                                      f"primitives ({', '.join(prims)})")
            for system in usable:
                costs = sys_v[sys_v.system == system].set_index("primitive")["cost"]
                for prim in prims:
                    d = sized[sized.primitive == prim]
                    f = fun[(fun.system == system) & (fun.primitive == prim)]
                    if len(d):
                        if len(f):
                            c_at = _interpolate(f["size"].to_numpy(), f["cost"].to_numpy(), d["size"].to_numpy())
                        else:
                            c_at = np.full(len(d), float(costs[prim]))
                        total = float((c_at * d["count"].to_numpy()).sum())
                        count = float(d["count"].sum())
                        cost = total / count if count else float("nan")
                    else:
                        if prim not in costs.index:
                            raise ModelInputError(f"{source}: {prim!r} has a size-dependent cost on {system}; give "
                                                  f"application {app} a size distribution for it")
                        count = float(counts[prim])
                        cost = float(costs[prim])
                        total = cost * count
                    rows.append({"application": app, "system": system, "element": prim, "application_vector": count,
                                 "system_vector": cost, "total": total})
        breakdown = pd.DataFrame(rows)
        return VectorResults(breakdown=breakdown, reference=reference, systems=tuple(system_names),
                             applications=tuple(app_names), warnings=tuple(warnings), model=self,
                             inputs=MappingProxyType({"systems": sys_v, "applications": app_v, "functions": fun,
                                                      "distributions": dist, "source": source}))


@dataclass(frozen=True)
class VectorResults:
    """Per application and system: the breakdown (element, application vector, system vector, total,
    percentage), the predicted time, rank and speed normalised to the reference system."""

    breakdown: pd.DataFrame
    reference: str
    systems: tuple[str, ...]
    applications: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    model: Any = field(default=None, repr=False, compare=False)
    inputs: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @cached_property
    def predictions(self) -> pd.DataFrame:
        """application, system, predicted time, rank (1 = fastest), normalised speed (time on the reference /
        time on the system; NaN where the reference has no prediction)."""
        pred = self.breakdown.groupby(["application", "system"], sort=False, as_index=False)["total"].sum()
        pred = pred.rename(columns={"total": "predicted"})
        pred["rank"] = pred.groupby("application")["predicted"].rank(method="min").astype(int)
        ref = pred[pred.system == self.reference].set_index("application")["predicted"]
        pred["normalised_speed"] = pred.application.map(ref) / pred["predicted"]
        return pred

    def predicted(self, application: str, system: str) -> float:
        sel = self.predictions[(self.predictions.application == application) & (self.predictions.system == system)]
        if not len(sel):
            raise ModelInputError(f"no prediction for application {application!r} on system {system!r}")
        return float(sel["predicted"].iloc[0])

    def table(self, application: str, system: str) -> pd.DataFrame:
        """The breakdown of one prediction in the form of Tables 6-2..6-5, largest total first."""
        sel = self.breakdown[(self.breakdown.application == application) & (self.breakdown.system == system)]
        if not len(sel):
            raise ModelInputError(f"no prediction for application {application!r} on system {system!r}")
        out = sel[["element", "application_vector", "system_vector", "total"]].copy()
        out["percentage"] = 100.0 * out["total"] / out["total"].sum() if out["total"].sum() else 0.0
        return out.sort_values("total", ascending=False, kind="stable").reset_index(drop=True)

    def what_if(self, scale: Mapping[str, float] | None = None, counts: Mapping[str, float] | None = None,
                systems: tuple[str, ...] | None = None) -> "VectorResults":
        """Predict again with primitives' costs multiplied (``scale``: primitive -> factor, on ``systems`` or
        all) and applications' counts replaced (``counts``: primitive -> count, every application)."""
        scale, counts = dict(scale or {}), dict(counts or {})
        sys_v = self.inputs["systems"].copy()
        fun = self.inputs["functions"].copy()
        app_v = self.inputs["applications"].copy()
        known = set(sys_v.primitive) | set(fun.primitive)
        for prim, k in scale.items():
            if prim not in known:
                raise ModelInputError(f"what-if: unknown primitive {prim!r}; known: {', '.join(sorted(known))}")
            if not (isinstance(k, (int, float)) and math.isfinite(k) and k >= 0):
                raise ModelInputError(f"what-if: the factor of {prim!r} must be a non-negative number, got {shown(k)}")
            on = sys_v.primitive == prim
            fon = fun.primitive == prim
            if systems is not None:
                on &= sys_v.system.isin(systems)
                fon &= fun.system.isin(systems)
            sys_v.loc[on, "cost"] *= k
            fun.loc[fon, "cost"] *= k
        for prim, n in counts.items():
            if prim not in set(app_v.primitive):
                raise ModelInputError(f"what-if: no application counts {prim!r}")
            app_v.loc[app_v.primitive == prim, "count"] = float(n)
        return self.model.fit(sys_v, app_v, fun, self.inputs["distributions"], source=self.inputs["source"])

    # ---- the summary protocol ---------------------------------------------------------------------
    def summary(self) -> Summary:
        pred = self.predictions
        lines = [f"HBench vectors: {len(self.applications)} application(s) on {len(self.systems)} system(s); "
                 f"speeds normalised to {self.reference}", ""]
        lines.append(pred.to_string(index=False, float_format=lambda x: f"{x:.6g}"))
        for app in self.applications:
            for system in pred[pred.application == app].system:
                lines += ["", f"{app} on {system}:",
                          self.table(app, system).to_string(index=False, float_format=lambda x: f"{x:.6g}")]
        for w in self.warnings:
            lines.append(f"warning: {w}")
        return Summary("HBench vector predictions", "\n".join(lines), {"predictions": pred})

    def tables(self) -> dict[str, pd.DataFrame]:
        return {"predictions": self.predictions, "breakdown": self.breakdown}

    def figures(self) -> dict[str, Callable[[], Any]]:
        return {"normalised_speeds": self.plot_speeds}

    def to_dict(self) -> dict[str, Any]:
        return {"reference": self.reference, "predictions": self.predictions.to_dict(orient="records"),
                "breakdown": {f"{a}@{s}": self.table(a, s).to_dict(orient="records")
                              for a, s in zip(self.predictions.application, self.predictions.system)},
                "warnings": list(self.warnings)}

    def plot_speeds(self):
        """Normalised speeds per application and system (Figures 4-4..4-7, 6-1)."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        pred = self.predictions
        fig, ax = plt.subplots(figsize=(7, 3.6))
        apps = list(self.applications)
        width = 0.8 / max(1, len(self.systems))
        for k, system in enumerate(self.systems):
            sel = pred[pred.system == system].set_index("application").reindex(apps)
            ax.bar(np.arange(len(apps)) + k * width, sel["normalised_speed"], width, label=system)
        ax.set_xticks(np.arange(len(apps)) + width * (len(self.systems) - 1) / 2, apps)
        ax.axhline(1.0, color="k", lw=0.6)
        ax.set_ylabel(f"speed relative to {self.reference}")
        ax.legend(fontsize=7)
        ax.set_title("Predicted normalised speeds")
        return fig
