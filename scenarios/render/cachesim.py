"""Cache-simulation results -> the headline of a run, tables, figures and the terminal summary; shared by
``whatif cachesim`` and the ``cachesim`` study."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from whatif.simulator.traces import Trace


HEADLINE_KEYS = ("accesses", "misses", "miss_ratio")


def trace_summary(trace: Trace) -> dict[str, Any]:
    c = trace.counts()
    return {"source": trace.source, "records": len(trace), "instructions": c["I"], "loads": c["L"],
            "stores": c["S"], "modifies": c["M"]}


def headline(counters: dict, records: int) -> dict[str, Any]:
    levels = {}
    for name, row in counters["levels"].items():
        levels[name] = {k: row[k] for k in HEADLINE_KEYS}
        levels[name]["mpka"] = 1000.0 * row["misses"] / records if records else 0.0
    tlbs = {name: {"accesses": row["accesses"], "misses": row["misses"],
                   "miss_ratio": row["misses"] / row["accesses"] if row["accesses"] else 0.0}
            for name, row in counters["tlbs"].items()}
    return {"levels": levels, "tlbs": tlbs, "memory": {k: counters["memory"][k] for k in ("reads", "writes")}}


def print_summary(doc: dict[str, Any]) -> None:
    from whatif.scenarios.render import stdout_console
    from rich.table import Table

    console = stdout_console()
    table = Table(title=f"{doc['platform']}: {doc['trace_accesses']:,} trace records "
                        f"in {doc['simulation_seconds']:.3f} s")
    for col in ("structure", "accesses", "hits", "misses", "miss ratio", "writebacks", "prefetches"):
        table.add_column(col, justify="right")
    for name, row in doc["levels"].items():
        table.add_row(name, f"{row['accesses']:,}", f"{row['hits']:,}", f"{row['misses']:,}",
                      f"{row['miss_ratio']:.4f}", f"{row['writebacks']:,}", f"{row['prefetches_issued']:,}")
    for name, row in doc["tlbs"].items():
        ratio = row["misses"] / row["accesses"] if row["accesses"] else 0.0
        table.add_row(name, f"{row['accesses']:,}", f"{row['hits']:,}", f"{row['misses']:,}", f"{ratio:.4f}",
                      "", "")
    console.print(table)


def run_tables(runs: list[dict[str, Any]], id_columns: list[str]) -> dict[str, pd.DataFrame]:
    """Counter tables of a study: totals (contract 1), levels and tlbs (long form)."""
    totals, levels, tlbs = [], [], []
    for run in runs:
        ident = {k: run[k] for k in id_columns}
        row = dict(ident)
        for name, counters in run["counters"]["levels"].items():
            levels.append({**ident, "level": name, **counters})
            for key in ("accesses", "misses", "load_misses", "store_misses", "instr_misses", "walk_accesses",
                        "writebacks", "prefetches_issued", "prefetches_useful"):
                row[f"{name}_{key}"] = counters[key]
        for name, counters in run["counters"]["tlbs"].items():
            tlbs.append({**ident, "tlb": name, **counters})
            row[f"{name}_accesses"] = counters["accesses"]
            row[f"{name}_misses"] = counters["misses"]
        row["memory_reads"] = run["counters"]["memory"]["reads"]
        row["memory_writes"] = run["counters"]["memory"]["writes"]
        totals.append(row)
    return {"totals": pd.DataFrame(totals), "levels": pd.DataFrame(levels), "tlbs": pd.DataFrame(tlbs)}


def grouped_bars(categories: list[str], series: dict[str, list[float]], ylabel: str, title: str):
    """One group of bars per category, one bar per series (run)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(categories) + 0.3 * len(series)), 3.8))
    width = 0.8 / max(1, len(series))
    x = np.arange(len(categories))
    for i, (label, values) in enumerate(series.items()):
        ax.bar(x + i * width - 0.4 + width / 2, values, width, label=label)
    ax.set_xticks(x, categories)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8, ncol=2)
    ax.grid(axis="y", alpha=0.3)
    return fig


def miss_ratio_figure(levels: pd.DataFrame):
    names = list(dict.fromkeys(levels["level"]))
    series = {str(run): sub.set_index("level").reindex(names)["miss_ratio"].tolist()
              for run, sub in levels.groupby("run", sort=False)}
    return grouped_bars(names, series, "miss ratio (demand)", "Cache miss ratio by level")


def mpka_figure(totals: pd.DataFrame, records: int):
    cols = [c for c in totals.columns if c.endswith("_misses") and not c.endswith(
        ("load_misses", "store_misses", "instr_misses"))]
    series = {str(row["run"]): [1000.0 * row[c] / max(records, 1) for c in cols] for _, row in totals.iterrows()}
    return grouped_bars([c.removesuffix("_misses") for c in cols], series, "misses per 1000 records",
                        "Misses per thousand trace records, caches and TLBs")


def side_by_side(levels: pd.DataFrame, tlbs: pd.DataFrame) -> pd.DataFrame:
    """Rows: structure x metric; columns: runs."""
    rows = {}
    for _, r in levels.iterrows():
        for key in ("accesses", "misses", "miss_ratio", "writebacks", "prefetches_issued"):
            rows.setdefault((r["level"], key), {})[r["run"]] = r[key]
    for _, r in tlbs.iterrows():
        ratio = r["misses"] / r["accesses"] if r["accesses"] else 0.0
        for key, value in (("accesses", r["accesses"]), ("misses", r["misses"]), ("miss_ratio", ratio)):
            rows.setdefault((r["tlb"], key), {})[r["run"]] = value
    df = pd.DataFrame.from_dict(rows, orient="index")
    df.index = [f"{a} {b}" for a, b in df.index]
    return df


def headline_table(runs: list[dict[str, Any]]) -> pd.DataFrame:
    """Long form (metric, variant, value) of the study's runs: misses and miss ratio of every cache level,
    misses of every TLB, memory reads (replicates averaged; the platform named when there are several)."""
    rows = []
    platforms = {r["platform"] for r in runs}
    for r in runs:
        at = f" @{r['platform']}" if len(platforms) > 1 else ""
        for name, lv in r["levels"].items():
            rows.append({"metric": f"{name} misses{at}", "variant": r["variant"], "value": lv["misses"]})
            rows.append({"metric": f"{name} miss ratio{at}", "variant": r["variant"], "value": lv["miss_ratio"]})
        for name, tlb in r["tlbs"].items():
            rows.append({"metric": f"{name} misses{at}", "variant": r["variant"], "value": tlb["misses"]})
        rows.append({"metric": f"memory reads{at}", "variant": r["variant"], "value": r["memory"]["reads"]})
    return pd.DataFrame(rows).groupby(["metric", "variant"], sort=False, as_index=False)["value"].mean()
