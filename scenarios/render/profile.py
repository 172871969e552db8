"""Instruction profiles -> the SQLite profile database, tables, report sections and the terminal summary;
shared by ``whatif profile`` and the ``flowgsp`` study."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from whatif.models.flowgsp.profile_db import write_tables
from whatif.scenarios.results.report import Report

# seed 001 §4.2: the thesis's most recent WebSphere profile
THESIS_SHAPE = {"instructions": 102_865, "blocks": 30_430, "edges": 44_178}
THESIS_ICACHE_SHARE = 0.12          # §2.5 (Nagpurkar et al.): I-cache misses, 12 % of the execution time


def sqlite_bytes(tables: dict[str, pd.DataFrame]) -> bytes:
    """The profile tables as the bytes of a SQLite database (the FlowGSP reader's schema)."""
    with tempfile.TemporaryDirectory(prefix="whatif-profile-") as tmp:
        path = Path(tmp) / "profile.sqlite"
        write_tables(tables, path)
        return path.read_bytes()


def method_table(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per method: instructions, ticks and sampled events, hottest first."""
    ia = tables["IA"].pivot_table(index="symbol_id", columns="event", values="count", aggfunc="sum", fill_value=0)
    size = tables["Disassm"].groupby("symbol_id").size().rename("instructions")
    out = tables["Symbol"].set_index("symbol_id")[["name"]].join(size).join(ia).fillna(0)
    if "TICKS" not in out:
        out["TICKS"] = 0
    out = out.sort_values("TICKS", ascending=False)
    total = out["TICKS"].sum()
    out["ticks_share"] = out["TICKS"] / total if total else 0.0
    return out.reset_index()


def shape_table(summary: dict[str, Any]) -> pd.DataFrame:
    shape = summary["shape"]
    return pd.DataFrame([{"quantity": k, "simulated": shape[k], "thesis (§4.2)": v} for k, v in THESIS_SHAPE.items()])


def event_table(summary: dict[str, Any]) -> pd.DataFrame:
    samples = max(1, summary["samples"])
    return pd.DataFrame([{"event": k, "samples": v, "share of samples": v / samples}
                         for k, v in summary["sampled_events"].items()])


def add_report(rep: Report, summary: dict[str, Any], methods: pd.DataFrame, title: str = "") -> None:
    pre = f"{title}: " if title else ""
    rep.heading(pre + "Profiled run")
    rep.paragraph(f"{summary['workload']} on {summary['platform']}: {summary['instructions']:,} instructions after "
                  f"{summary['warmup']:,} of warm-up, {summary['cycles']:,} cycles (CPI {summary['cpi']:.3f}); a "
                  f"sample every {summary['sample_every']:,} cycles: {summary['samples']:,} samples. Requests: "
                  f"{summary['requests']:,}" + (f", {summary['cycles_per_request']:,.0f} cycles each."
                                                 if summary['cycles_per_request'] else "."))
    rep.paragraph(f"Cycles lost to I-cache misses: {100 * summary['icache_cycle_share']:.1f} % of the run (seed 001 "
                  f"§2.5: {100 * THESIS_ICACHE_SHARE:.0f} %); to ITLB misses {100 * summary['itlb_cycle_share']:.2f} %.")
    rep.table(event_table(summary), caption="Sampled counters: samples with each event in progress")
    rep.table(shape_table(summary), caption="Profile size against the thesis's WebSphere profile")
    rep.table(methods.head(25), caption="Hottest methods by sampling ticks")


def print_summary(summary: dict[str, Any], methods: pd.DataFrame) -> None:
    from whatif.scenarios.render import stdout_console
    from rich.table import Table

    console = stdout_console()
    console.print(f"{summary['workload']} on {summary['platform']}: {summary['instructions']:,} instructions, CPI "
                  f"{summary['cpi']:.3f}, {summary['samples']:,} samples (every {summary['sample_every']:,} cycles), "
                  f"I-cache misses {100 * summary['icache_cycle_share']:.1f} % of the cycles")
    events = Table(title="sampled counters")
    for col in ("event", "samples", "share"):
        events.add_column(col, justify="left" if col == "event" else "right")
    for row in event_table(summary).itertuples(index=False):
        events.add_row(row.event, f"{row.samples:,}", f"{row[2]:.3f}")
    console.print(events)
    shape = Table(title="profile size")
    for col in ("quantity", "simulated", "thesis"):
        shape.add_column(col, justify="left" if col == "quantity" else "right")
    for row in shape_table(summary).itertuples(index=False):
        shape.add_row(row[0], f"{row[1]:,}", f"{row[2]:,}")
    console.print(shape)
    hot = Table(title="hottest methods")
    for col in ("method", "instructions", "ticks", "share"):
        hot.add_column(col, justify="left" if col == "method" else "right")
    for row in methods.head(10).itertuples(index=False):
        hot.add_row(str(row.name), f"{int(row.instructions):,}", f"{int(row.TICKS):,}", f"{row.ticks_share:.3f}")
    console.print(hot)
