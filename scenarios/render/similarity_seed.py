"""The similarity study's results next to seed 002's published measurements on the real Xeons (the fidelity
tables): simulated signatures against Table 1 (Spearman rho per program and platform), similarity matrices
against Tables 5-7, Table 9 and the §4.3 improvements, and the §4.1 sensitivity of the sample mean CPI to the
sampling schedule against the seed's 6 % and 9 %.  Measurements of how far the models reproduce the real
machines, reported as they come: nothing in the simulator or the workloads is fitted to them.

A platform label may carry a variant (``variant@harpertown``); it is compared with the seed's platform after
the ``@``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from whatif.models.similarity import SimilarityResults, average_ranks
from whatif.models.similarity import seed002
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.workload import load_workload


def seed_platform(label: str) -> str | None:
    """The seed's platform a study's platform label stands for (None: not one of the seed's)."""
    name = label.rpartition("@")[2]
    return name if name in seed002.PLATFORMS else None


def seed_name(app: str) -> str:
    """The application's name as the seed prints it (``462.libquantum``), from the workload name."""
    try:
        return load_workload(app).name
    except SimulatorInputError:
        return app


def rank_corr(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rho of two signatures (average ranks for ties); NaN when either is constant."""
    ra, rb = average_ranks(np.vstack([a, b]))
    if np.ptp(ra) == 0 or np.ptp(rb) == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def signature_comparison(results: SimilarityResults, label: str) -> pd.DataFrame | None:
    """Table 1 analogue next to Table 1: simulated and published signatures and their rank agreement."""
    platform = seed_platform(label)
    if label not in results.platforms or platform is None:
        return None
    r = results.platforms[label]
    stalls = list(seed002.STALLS[platform])
    if not set(stalls) <= set(r.stalls):
        return None
    published = seed002.signatures(platform)
    cols = [r.stalls.index(s) for s in stalls]
    short = [s.replace("RESOURCE_STALLS.", "").replace("RAT_STALLS.ANY", "RAT") for s in stalls]
    rows = []
    for i, app in enumerate(r.applications):
        name = seed_name(app)
        mine = r.signatures[i, cols]
        row = {"application": app, **{f"sim {s}": v for s, v in zip(short, mine)}}
        if name in published.index:
            theirs = published.loc[name].to_numpy(dtype=float)
            row.update({f"seed {s}": v for s, v in zip(short, theirs)})
            row["rank agreement rho"] = rank_corr(mine, theirs)
        rows.append(row)
    return pd.DataFrame(rows)


def similarity_comparison(results: SimilarityResults, label: str) -> dict | None:
    """Tables 5–7: agreement of the simulated and published similarity over the pairs of seed applications."""
    platform = seed_platform(label)
    if label not in results.platforms or platform is None:
        return None
    r = results.platforms[label]
    published = seed002.similarity(platform)
    names = {seed_name(a): i for i, a in enumerate(r.applications)}
    common = [a for a in seed002.APPS if a in names]
    if len(common) < 3:
        return None
    mine, theirs = [], []
    for x in range(len(common)):
        for y in range(x):
            mine.append(r.similarity[names[common[x]], names[common[y]]])
            theirs.append(published.loc[common[x], common[y]])
    mine, theirs = np.asarray(mine), np.asarray(theirs)
    return {"pairs": len(mine), "pearson": float(np.corrcoef(mine, theirs)[0, 1]),
            "mean_abs_difference": float(np.mean(np.abs(mine - theirs))),
            "same_sign_pct": float(100.0 * np.mean(np.sign(mine) == np.sign(theirs)))}


def table9_comparison(results: SimilarityResults) -> pd.DataFrame:
    """Per platform pair: how often the recommendation agrees with the simulated truth, next to Table 9."""
    ev = results.system_evaluation
    seed = seed002.TABLE9.set_index("current -> candidate")
    rows = []
    for p in (ev.pairs if ev is not None else ()):
        key = f"{p.current} -> {p.candidate}"
        pub = seed.loc[key] if key in seed.index else None
        rows.append({"current -> candidate": key, "cases": p.n_cases,
                     "sim % correct": p.correct_pct, "sim % incorrect": p.incorrect_pct,
                     "sim % unpredictable": p.unpredictable_pct,
                     "seed % correct": None if pub is None else pub["% correct"],
                     "seed % incorrect": None if pub is None else pub["% incorrect"],
                     "seed % unpredictable": None if pub is None else pub["% unpredictable"],
                     "reference predicted": p.reference_prediction,
                     "reference true speedup": p.reference_speedup,
                     "reference correct": p.reference_direction_correct,
                     "nearest neighbour correct": p.nearest_neighbour_direction_correct})
    return pd.DataFrame(rows)


def improvement_comparison(results: SimilarityResults) -> pd.DataFrame:
    """§4.3: mean improvement of the reference's similar set vs the suite, next to the published figures."""
    rows = []
    for p in (results.system_evaluation.pairs if results.system_evaluation is not None else ()):
        pub = seed002.MEAN_IMPROVEMENT_PCT.get(p.key, {})
        pct = (lambda s: None if s is None else 100.0 * (s - 1.0))
        rows.append({"current -> candidate": f"{p.current} -> {p.candidate}",
                     "sim % similar set": pct(p.similar_mean_speedup), "sim % suite": pct(p.suite_mean_speedup),
                     "sim % reference": pct(p.reference_speedup),
                     "seed % similar to Y": pub.get("similar to Y"), "seed % suite": pub.get("suite")})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------- §4.1 sensitivity
def setting_label(si: float, sp: float) -> str:
    return f"{100 * si / sp:g}% ({si:g}/{sp:g} s)"


def sensitivity_tables(runs: list[dict], settings: list[tuple[float, float]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Seed 002 §4.1 on the simulated runs: per (platform, application, schedule) the sampling intervals and
    the sample mean of the interval CPIs (mean over replicates); and per consecutive pair of schedules the mean
    |change| of that sample mean, in % of the first, over the applications (per platform and in all), next to
    the seed's figure where the schedules are the seed's."""
    rows = []
    for r in runs:
        for (si, sp), cpis in zip(settings, r.get("sensitivity_cpi") or []):
            rows.append({"platform": r["label"], "application": r["workload"], "setting": setting_label(si, sp),
                         "s_i/s_p (%)": 100 * si / sp, "intervals": len(cpis),
                         "mean_cpi": float(np.mean(cpis)) if cpis else np.nan})
    per = pd.DataFrame(rows, columns=["platform", "application", "setting", "s_i/s_p (%)", "intervals", "mean_cpi"])
    if len(per):
        per = per.groupby(["platform", "application", "setting", "s_i/s_p (%)"], sort=False,
                          as_index=False).mean()
    seed_settings = seed002.SENSITIVITY["settings"]
    summary = []
    for k in range(len(settings) - 1):
        a, b = setting_label(*settings[k]), setting_label(*settings[k + 1])
        published = np.nan
        if k + 1 < len(seed_settings) and tuple(settings[k]) == seed_settings[k] \
                and tuple(settings[k + 1]) == seed_settings[k + 1]:
            published = seed002.SENSITIVITY["mean_cpi_change_pct"][k]
        wide = per.pivot_table(index=["platform", "application"], columns="setting", values="mean_cpi", sort=False)
        change = (100 * (wide[b] - wide[a]).abs() / wide[a]).dropna() if a in wide and b in wide else pd.Series()
        groups = [("all", change)] + [(p, change.xs(p, level="platform")) for p in
                                      dict.fromkeys(change.index.get_level_values("platform"))]
        for where, c in groups:
            summary.append({"from": a, "to": b, "platform": where, "applications": len(c),
                            "sim mean |change| (%)": float(c.mean()) if len(c) else np.nan,
                            "sim max |change| (%)": float(c.max()) if len(c) else np.nan,
                            "seed mean change (%)": published})
    return per, pd.DataFrame(summary)


# ---------------------------------------------------------------------------------------- fidelity
@dataclass
class Fidelity:
    """The fidelity tables of one similarity study: ``doc`` (results.json's ``fidelity``), ``tables`` (written
    as Parquet), ``table1_rho`` (application x platform, with the mean), ``sensitivity`` and its summary,
    ``table9``."""
    doc: dict[str, Any]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    table1_rho: pd.DataFrame = field(default_factory=pd.DataFrame)
    sensitivity: pd.DataFrame = field(default_factory=pd.DataFrame)
    sensitivity_summary: pd.DataFrame = field(default_factory=pd.DataFrame)
    table9: pd.DataFrame = field(default_factory=pd.DataFrame)
    labels: dict[str, str] = field(default_factory=dict)       # platform label -> variant

    def headline(self, variant: str | None = None) -> pd.DataFrame:
        """The headline rows (metric, variant, value, published): Table 1's mean rho per platform, the §4.1
        changes, Table 9's % correct.  ``variant`` names the rows that have none of their own."""
        rows = []
        for label, rho in self.doc.get("table1_mean_rho", {}).items():
            rows.append({"metric": f"Table 1 signature rho, mean @{label.rpartition('@')[2]}",
                         "variant": self.labels.get(label, variant), "value": rho, "published": np.nan})
        s = self.sensitivity_summary
        for r in (s[s["platform"] == "all"].to_dict("records") if len(s) else []):
            span = f"{r['from'].partition('(')[2].rstrip(')')} -> {r['to'].partition('(')[2].rstrip(')')}"
            rows.append({"metric": f"§4.1 mean CPI change {span} (%)", "variant": variant,
                         "value": r["sim mean |change| (%)"], "published": r["seed mean change (%)"]})
        for r in self.table9.to_dict("records"):
            rows.append({"metric": f"Table 9 % correct {r['current -> candidate']}", "variant": variant,
                         "value": r["sim % correct"], "published": r["seed % correct"]})
        return pd.DataFrame(rows, columns=["metric", "variant", "value", "published"])


def fidelity(results: SimilarityResults, runs: list[dict], settings: list[tuple[float, float]]) -> Fidelity:
    """Every fidelity table of the study (module docstring)."""
    labels = {r["label"]: r["variant"] for r in runs}
    long, rho, mean_rho, matrices = [], {}, {}, {}
    for label in results.platforms:
        sig = signature_comparison(results, label)
        if sig is None:
            continue
        platform = seed_platform(label)
        short = [c[4:] for c in sig.columns if c.startswith("sim ")]
        for row in sig.to_dict("records"):
            for st in short:
                long.append({"platform": label, "application": row["application"], "stall": st,
                             "sim": row[f"sim {st}"], "seed": row.get(f"seed {st}", np.nan),
                             "rho": row.get("rank agreement rho", np.nan)})
        known = sig.dropna(subset=["rank agreement rho"]) if "rank agreement rho" in sig else sig.iloc[:0]
        rho[label] = {a: float(v) for a, v in zip(known["application"], known["rank agreement rho"])}
        mean_rho[label] = float(np.nanmean(list(rho[label].values()))) if rho[label] else float("nan")
        sc = similarity_comparison(results, label)
        if sc is not None:
            matrices[label] = {"seed_table": {"harpertown": 5, "nehalem": 6, "westmere": 7}[platform], **sc}
    wide = pd.DataFrame(rho)
    if len(wide):
        wide.loc["mean"] = wide.mean()
    per, summary = sensitivity_tables(runs, settings)
    t9 = table9_comparison(results)
    doc = {"source": seed002.SOURCE, "table1_rho": rho, "table1_mean_rho": mean_rho,
           "similarity_matrices": matrices,
           "table9_correct_pct": {r["current -> candidate"].replace(" -> ", "->"):
                                  {"sim": r["sim % correct"], "seed": r["seed % correct"]} for r in t9.to_dict("records")},
           "sensitivity": {"settings": [list(x) for x in settings],
                           "pairs": summary[summary["platform"] == "all"].to_dict("records") if len(summary) else [],
                           "per_platform": summary[summary["platform"] != "all"].to_dict("records")
                           if len(summary) else [],
                           "seed_mean_cpi_change_pct": seed002.SENSITIVITY["mean_cpi_change_pct"]}}
    tables = {"fidelity_table1": pd.DataFrame(long, columns=["platform", "application", "stall", "sim", "seed", "rho"]),
              "sensitivity": per, "sensitivity_summary": summary}
    return Fidelity(doc=doc, tables=tables, table1_rho=wide.reset_index(names="application") if len(wide) else wide,
                    sensitivity=per, sensitivity_summary=summary, table9=t9, labels=labels)
