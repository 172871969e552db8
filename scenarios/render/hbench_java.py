"""HBench:Java study results -> the normalised-speed figure (Figures 4-4..4-7) and report sections."""

from __future__ import annotations

import numpy as np
import pandas as pd

from whatif.scenarios.results.report import Report

NAMES = {"simulated": "simulated", "hbench": "HBench:Java", "hybrid": "HBench:Java hybrid",
         "system_classes": "system classes only", "specjvm98": "SPECjvm98 composite"}


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def speeds_figure(speeds: pd.DataFrame, reference: str):
    """A panel per application: each configuration's speed normalised to the reference, simulated beside
    the predictors."""
    plt = _plt()
    apps = list(dict.fromkeys(speeds["application"]))
    fig, axes = plt.subplots(len(apps), 1, figsize=(8.5, 2.6 * len(apps)), squeeze=False)
    keys = ("simulated", "hbench", "hybrid", "system_classes", "specjvm98")
    for ax, app in zip(axes[:, 0], apps):
        g = speeds[speeds.application == app]
        x = np.arange(len(g))
        w = 0.8 / len(keys)
        for k, key in enumerate(keys):
            ax.bar(x + (k - (len(keys) - 1) / 2) * w, g[key], w, label=NAMES[key])
        ax.set_xticks(x, g["configuration"], fontsize=6, rotation=30, ha="right")
        ax.set_ylabel(f"speed / {reference}", fontsize=7)
        ax.set_title(app, fontsize=9)
    axes[0, 0].legend(fontsize=7, ncol=4)
    fig.tight_layout()
    return fig


def add_report(rep: Report, results: dict, tables: dict[str, pd.DataFrame], fig: bytes) -> None:
    ref = results["reference"]
    rep.heading("Normalised running speeds (Figures 4-4..4-7)")
    s = results["summary"]
    rep.paragraph(f"{len(results['configurations'])} JVM x platform configurations, speeds normalised to {ref}.  "
                  f"HBench:Java (application vector · system vector + J(N,S) x compile cost): worst Kendall τ "
                  f"{s['hbench']['min_tau']:.2f}, mean speed error {s['hbench']['mean_error_pct']:.1f} %; the hybrid "
                  f"methodology (§3.1.3: each element's misses beyond its warm loop's, counted by a cache simulation "
                  f"of the application on the configuration, priced at the element's cold-call cost per miss): "
                  f"worst τ {s['hybrid']['min_tau']:.2f}, {s['hybrid']['mean_error_pct']:.1f} %; system "
                  f"classes only (the seed's prototype): worst τ {s['system_classes']['min_tau']:.2f}, "
                  f"{s['system_classes']['mean_error_pct']:.1f} %; SPECjvm98-style composite: worst τ "
                  f"{s['specjvm98']['min_tau']:.2f}, {s['specjvm98']['mean_error_pct']:.1f} %.")
    rows = [{"application": a, **{f"tau {NAMES[p]}": r["kendall_tau"][p] for p in r["kendall_tau"]},
             **{f"error % {NAMES[p]}": r["mean_error_pct"][p] for p in r["mean_error_pct"]}}
            for a, r in results["applications"].items()]
    rep.table(pd.DataFrame(rows))
    rep.figure(fig, "Normalised speeds: simulated, HBench:Java, its hybrid, system classes only, SPECjvm98 composite")
    rep.table(tables["speeds"])
    rep.heading("Important primitives (Tables 4-3 and 4-4)")
    for app, g in tables["important_primitives"].groupby("application", sort=False):
        rep.table(g.drop(columns=["application"]).dropna(axis=1, how="all"), caption=f"{app}: µs (per unit)")
    rep.heading("System and user classes (Tables 4-5 and 4-6)")
    rep.paragraph(f"Simulated share of the running time inside system-class calls on {ref}, beside the seed's "
                  "hprof figures (JDK 1.2.2).")
    rep.table(tables["time_split"])
    rep.heading("Where the vectors miss: each primitive in the application against its microbenchmark")
    rep.paragraph("The microbenchmarks time each primitive in a warm loop; in an application its calls find the "
                  "caches, TLBs and predictors as the rest of the program left them (seed 003 §3.1.1.2).  Per "
                  "primitive: the predicted µs against the cycles its calls took in the run (JIT compilations "
                  "apart), as the prediction error in %, per configuration.")
    ctx = tables["in_application"]
    for app, g in ctx.groupby("application", sort=False):
        for col, what in (("error_pct", "vectors"), ("hybrid_error_pct", "hybrid")):
            wide = g.pivot(index="primitive", columns="configuration", values=col)
            rep.table(wide[list(dict.fromkeys(g.configuration))].reset_index(),
                      caption=f"{app}: prediction error (%), {what}")
    rep.heading("Breakdowns on the reference")
    b = tables["breakdown"]
    for app, g in b[b.configuration == ref].groupby("application", sort=False):
        rep.table(g.drop(columns=["application", "configuration"]), caption=app)
    rep.heading("Application runs")
    rep.table(tables["runs"])
