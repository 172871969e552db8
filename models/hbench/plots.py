"""Figures of HBench:JGC (seed 003 Figures 5-1 to 5-10 analogues).  Every function returns a figure."""

from __future__ import annotations

import numpy as np

MB = 1024 * 1024


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_heap_size(costs):
    """Figures 5-1, 5-2, 5-5: collection time against heap size for the empty, fully reclaimable and
    fully live heap (the 'fixed' configurations), with the C_fixed regression line."""
    plt = _plt()
    mb = costs.microbench
    fixed = mb[mb["purpose"] == "fixed"] if "purpose" in mb else mb
    if fixed.empty:
        fixed = mb[mb["step"] == "empty"]
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for step, marker in (("live", "o"), ("dead", "s"), ("empty", "^")):
        g = fixed[fixed["step"] == step].sort_values("heap_bytes")
        if not g.empty:
            ax.plot(g["heap_bytes"] / MB, g["gc_seconds"] * 1e3, marker=marker, label=step)
    h = np.linspace(0, fixed["heap_bytes"].max(), 50)
    ax.plot(h / MB, costs.c_fixed(h) * 1e3, "k--", lw=1,
            label=f"C_fixed = {costs.fixed.intercept * 1e3:.3g} + {costs.fixed.slope * MB * 1e3:.3g} h")
    ax.set_xlabel("heap size (MB)")
    ax.set_ylabel("GC time (ms)")
    ax.set_title("Collection time against heap size")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def plot_object_size(costs):
    """Figures 5-3 and 5-6: C_dead(s) and C_live(s) against object size (up to 132 bytes, Table 5-4)."""
    plt = _plt()
    t = costs.table
    small = t[t["object_size"] <= 140]
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    ax.plot(small["object_size"], small["c_live"] * 1e9, "o-", label="C_live (fully live heap)")
    ax.plot(small["object_size"], small["c_dead"] * 1e9, "s-", label="C_dead (fully reclaimable heap)")
    for which, style in (("live", ":"), ("dead", "--")):
        ax.axvline(costs.knee(which), color="grey", ls=style, lw=1)
    ax.set_xlabel("object size (bytes, header excluded)")
    ax.set_ylabel("cost per object (ns)")
    ax.set_title("Per-object collection cost against object size")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def plot_memory_reads(costs):
    """Figures 5-4 and 5-7: memory reads per object during the live and dead collections."""
    plt = _plt()
    mb = costs.microbench
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    if "memory_reads" not in mb:
        ax.text(0.5, 0.5, "no memory_reads column in the microbenchmark table", ha="center", va="center")
        return fig
    plain = mb[(mb["fields"] == 1) & (mb["fan_in"] == 1) & (mb["object_size"] <= 140)]
    empty = mb[mb["step"] == "empty"]
    for step, marker in (("live", "o"), ("dead", "s")):
        g = plain[plain["step"] == step]
        if g.empty:
            continue
        per = g.assign(per=(g["memory_reads"]) / g["objects"]).groupby("object_size")["per"].mean()
        ax.plot(per.index, per.to_numpy(), marker=marker, label=f"{step} heap")
    if not empty.empty:
        ax.axhline(0, color="grey", lw=0.5)
    ax.set_xlabel("object size (bytes, header excluded)")
    ax.set_ylabel("memory reads per object")
    ax.set_title("Memory reads during collection")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def plot_predicted_vs_actual(res, title: str | None = None):
    """Figure 5-9: predicted against actual time of every collection; explicit collections marked."""
    plt = _plt()
    t = res.table
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    x = np.arange(1, len(t) + 1)
    ax.plot(x, t["actual_s"] * 1e3, "o-", label="actual (simulated)")
    ax.plot(x, t["predicted_s"] * 1e3, "s--", label="predicted")
    ex = t["explicit"].to_numpy()
    if ex.any():
        ax.scatter(x[ex], t["actual_s"].to_numpy()[ex] * 1e3, s=120, facecolors="none", edgecolors="red",
                   label="explicit System.gc()")
    cp = t["compacted"].to_numpy()
    if cp.any():
        ax.scatter(x[cp], t["actual_s"].to_numpy()[cp] * 1e3, marker="x", color="black", s=60, label="compacted")
    e = res.errors
    ax.set_title(title or f"{res.profile.name}: mean |error| {e['mean_abs_error_pct']:.1f}%, "
                          f"total {e['time_difference_pct']:+.1f}%")
    ax.set_xlabel("collection")
    ax.set_ylabel("GC time (ms)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def plot_size_distributions(profiles: dict):
    """Figure 5-8: cumulative object-size distribution (number of objects) of each application."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for name, prof in profiles.items():
        h = prof.hist
        counts = (h["count"] if prof.pooled_only else h["live"] + h["dead"]).groupby(h["object_size"]).sum()
        counts = counts.sort_index()
        cum = counts.cumsum() / counts.sum()
        ax.step(counts.index, cum.to_numpy(), where="post", label=name)
    ax.set_xscale("log")
    ax.axvline(100, color="grey", ls=":", lw=1)
    ax.set_xlabel("object size (bytes, header excluded)")
    ax.set_ylabel("cumulative fraction of objects")
    ax.set_title("Cumulative object-size distribution")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig
