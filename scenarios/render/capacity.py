"""Capacity-planning results -> the throughput-latency curves and report sections."""

from __future__ import annotations

import pandas as pd

from whatif.scenarios.results.report import Report


def curve_figure(curves: pd.DataFrame, objective_s: float):
    """Throughput against offered load (simulated, the operational-law bound, MVA), and p95 latency."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.8))
    for run, g in curves.groupby("run", sort=False):
        line, = ax.plot(g.clients, g.throughput, "o-", label=run)
        ax.plot(g.clients, g.mva_throughput, ":", color=line.get_color())
        ax.plot(g.clients, g.bound_throughput, "--", color=line.get_color(), lw=0.8)
        bx.plot(g.throughput, 1e3 * g.latency_p95, "o-", label=run, color=line.get_color())
    ax.set_xlabel("clients (offered load)")
    ax.set_ylabel("throughput (requests/s)")
    ax.set_title("simulated (o), MVA (:), bound (--)")
    bx.axhline(1e3 * objective_s, color="k", lw=0.6)
    bx.set_xlabel("throughput (requests/s)")
    bx.set_ylabel("p95 latency (ms)")
    ax.legend(fontsize=7)
    return fig


def add_report(rep: Report, results: dict, curves: pd.DataFrame, what_if: pd.DataFrame, figure: bytes) -> None:
    rep.heading("Throughput and latency against load")
    rep.figure(figure, f"p95 objective {results['objective_s']:g} s")
    rep.table(curves)
    rep.heading("Planner's cross-check")
    rep.paragraph("D (CPU busy time per request served) and Z (a request's bytes on the client's line) are measured "
                  "at the lightest load, as a planner would; the operational laws bound the throughput by "
                  "min(N / (D + Z), 1 / D), exact MVA with one queueing centre (the CPU) and one delay centre "
                  "predicts it at every load, and the simulated server gives the truth.  Where D at saturation "
                  "differs from D at light load, the requests' cache interference changed with the load.")
    rows = [{"run": k, "saturation (req/s)": v["saturation_throughput"],
             "saturated at (clients)": ", ".join(map(str, v["saturated_loads"])) or "none",
             "peak (req/s)": v["peak_throughput"], "bound 1/D (req/s)": v["bound_throughput"],
             "saturation vs bound (%)": v["saturation_vs_bound_pct"], "D light (µs)": v["demand_us"],
             "D at saturation (µs)": v["demand_at_saturation_us"], "Z (s)": v["think_s"],
             "knee N*": v["knee_clients"], "max clients within objective": v["max_clients_within_objective"]}
            for k, v in results["runs"].items()]
    rep.table(pd.DataFrame(rows))
    gaps = [{"run": k, "clients": g["clients"], "vs bound (%)": g["vs_bound_pct"],
             "CPU idle (%)": g["gap_utilisation_pct"], "files drawn (%)": g["gap_files_pct"],
             "types drawn (%)": g["gap_types_pct"], "interference (%)": g["gap_interference_pct"],
             "window edges (%)": g["gap_edges_pct"],
             "interference, paired (%)": g["interference_paired_pct"],
             "paired 95 % interval": (f"{g['interference_ci95_low_pct']:+.1f} to {g['interference_ci95_high_pct']:+.1f}"
                                      if g["interference_pairs"] else "–"),
             "pairs": g["interference_pairs"]}
            for k, v in results["runs"].items() for g in v["saturation_gap"]]
    if gaps:
        rep.paragraph("A saturated window's throughput against the bound 1/D, split into exact factors (their "
                      "product is the whole; positive helps): the CPU's idle share; the window's sample -- its "
                      "requests priced at light-load costs (per type, CPU time linear in bytes and a new "
                      "connection), the files it drew within each type against the light window's, then its "
                      "mix of types against the nominal one; the caches' interference -- what the same "
                      "requests took under this load against that price; and CPU time in the window its "
                      "requests do not carry (work in flight at its edges).  The interference again without a "
                      "fit: the light window's requests that recur in this one (the same files), their CPU time "
                      "at light load against this load's.")
        rep.table(pd.DataFrame(gaps))
    sizing = [{"run": k, "workers": s["workers"], "p95 (s)": s["latency_p95"]}
              for k, v in results["runs"].items() for s in v["sizing"]]
    if sizing:
        rep.heading(f"Worker pool at {results['objective_clients']} clients")
        needed = {k: v["workers_needed"] for k, v in results["runs"].items() if v["sizing"]}
        rep.paragraph("Fewest workers meeting the p95 objective: " +
                      "; ".join(f"{k}: {n if n is not None else 'none of those tried'}" for k, n in needed.items()))
        rep.table(pd.DataFrame(sizing))
    rep.heading("What-ifs")
    rep.paragraph("Capacity change: of the saturation throughputs (or of the bounds 1/D where a run does not "
                  "saturate); paired: on the requests a what-if and its baseline both served at the loads where "
                  "both saturate -- every run serves each client the same files (common random numbers) -- with "
                  "its 95 % interval.")
    rep.table(what_if)
