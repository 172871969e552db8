"""HBench:OS study results -> figures (Figures 6-1 and 6-2 analogues) and report sections."""

from __future__ import annotations

import numpy as np
import pandas as pd

from whatif.scenarios.results.report import Report


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def speed_figure(throughputs: pd.DataFrame, reference: str):
    """Figure 6-1: throughputs normalised to the reference platform, predicted beside simulated."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    x = np.arange(len(throughputs))
    ax.bar(x - 0.2, throughputs["predicted_speed"], 0.4, label="predicted (vectors)")
    ax.bar(x + 0.2, throughputs["simulated_speed"], 0.4, label="simulated server")
    ax.set_xticks(x, throughputs["platform"])
    ax.set_ylabel(f"throughput relative to {reference}")
    ax.legend(fontsize=8)
    ax.set_title("Static requests: normalised throughputs")
    return fig


def speedup_figure(speedups: pd.DataFrame):
    """Figure 6-2: CGI -> FastCGI speedups, predicted r and r' beside the simulated, a panel per platform."""
    plt = _plt()
    platforms = list(dict.fromkeys(speedups["platform"]))
    fig, axes = plt.subplots(1, len(platforms), figsize=(4.2 * len(platforms), 3.4), squeeze=False)
    for ax, label in zip(axes[0], platforms):
        g = speedups[speedups.platform == label]
        x = 100 * g["dynamic"].to_numpy()
        ax.plot(x, g["simulated"], "ko-", lw=2, label="simulated server")
        ax.plot(x, g["r"], "s--", label="r = s1/s2")
        for col in [c for c in g.columns if c.startswith("r_prime_") and not c.endswith("_pct")]:
            ax.plot(x, g[col], "^:", label=f"r' u/s1 = {col[len('r_prime_'):]}")
        ax.set_xlabel("dynamic requests (%)")
        ax.set_title(label, fontsize=9)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("speedup CGI -> FastCGI")
    return fig


def add_report(rep: Report, results: dict, tables: dict[str, pd.DataFrame], fig_speed: bytes,
               fig_speedup: bytes | None) -> None:
    rank = results["ranking"]
    rep.heading("Ranking (Figure 6-1)")
    rep.paragraph(f"Predicted order {', '.join(rank['predicted'])}; simulated {', '.join(rank['simulated'])}; "
                  f"{rank['pairs_agree']} of {rank['pairs']} platform pairs agree (Kendall τ "
                  f"{rank['kendall_tau']:.2f}).  Predicted: the static application vector of the reference's "
                  f"server laid over each platform's microbenchmarked system vector (kernel time only, as the "
                  f"seed); simulated: the server's saturated throughput.")
    if results.get("unsaturated"):
        rep.paragraph("Not saturated (CPU utilisation below 0.95), so their throughput is the clients' and not the "
                      f"server's: {', '.join(results['unsaturated'])}.  Add clients or faster lines.")
    rep.table(tables["throughputs"])
    rep.figure(fig_speed, "Throughputs normalised to the reference: predicted from the vectors, simulated")
    if "pairs_resolved" in rank:
        unresolved = "; ".join(f"{a} and {b}" for a, b in rank["unresolved"]) or "none"
        rep.paragraph(f"Every run serves each client the same files (common random numbers), so each pair of "
                      f"platforms is also compared on the requests both static runs measured: the ratio of their "
                      f"CPU seconds per request with a 95 % interval.  {rank['pairs_resolved']} of {rank['pairs']} "
                      f"pairs are resolved (the interval excludes 1) and the prediction orders "
                      f"{rank['pairs_agree_resolved']} of them as the simulation does; unresolved: {unresolved}.")
        rep.table(tables["pairs"])
    hyb = results.get("ranking_hybrid")
    if hyb is not None:
        rep.heading("The hybrid methodology (§3.1.3)")
        rep.paragraph(f"The reference's static server trace (every kernel call and user burst, in order) replayed "
                      f"on each platform as a cache simulation; per primitive of the truss, the lines it brought "
                      f"into each cache depth (demand misses and prefetches) and its page walks beyond what the "
                      f"warm loops counted for the same count, each priced at the platform's µs per line of that "
                      f"depth (the microbenchmark once "
                      f"more after the caches were flushed to each depth, and after the TLBs alone were: a "
                      f"triangular solve), added to the vector prediction.  Order {', '.join(hyb['predicted'])}: "
                      f"{hyb['pairs_agree']} of {hyb['pairs']} pairs agree with the simulation (Kendall τ "
                      f"{hyb['kendall_tau']:.2f}).")
        rep.table(tables["hybrid"])
    if len(tables["speedups"]):
        rep.heading("CGI -> FastCGI (Figure 6-2, §6.3.3.3)")
        rep.table(tables["speedups"])
        if fig_speedup is not None:
            rep.figure(fig_speedup, "Speedups: simulated, r = s1/s2, r' with user time")
    rep.heading("Breakdowns (Tables 6-2..6-5 analogues)")
    for (platform, request), g in tables["breakdown"].groupby(["platform", "request"], sort=False):
        rep.table(g.drop(columns=["platform", "request"]), caption=f"{request} on {platform}")
    rep.heading("Context independence (§3.1.1.2)")
    if len(tables["type_errors"]):
        rep.paragraph("Each request type's kernel time per request predicted from the microbenchmarks (its truss "
                      "· the system vector) against the kernel time the server spent on it.")
        rep.table(tables["type_errors"])
    rep.paragraph("Each primitive's cost in a loop of itself (the microbenchmark) against what the server paid for "
                  "it in the static runs, with other requests' code and data in the caches.")
    rep.table(tables["context"])
