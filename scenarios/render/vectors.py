"""HBench vector predictions -> what the terminal prints and report sections; shared by ``whatif hbench``
and the studies that predict from vectors."""

from __future__ import annotations

import pandas as pd

from whatif.models.hbench.vectors import VectorResults
from whatif.scenarios.results.report import Report


def comparison(base: VectorResults, edited: VectorResults) -> pd.DataFrame:
    """Predicted time before and after a what-if, per application and system, and the change in percent."""
    a = base.predictions.set_index(["application", "system"])["predicted"].rename("predicted")
    b = edited.predictions.set_index(["application", "system"])["predicted"].rename("what_if")
    out = pd.concat([a, b], axis=1).reset_index()
    out["change_pct"] = 100.0 * (out["what_if"] - out["predicted"]) / out["predicted"]
    out["speedup"] = out["predicted"] / out["what_if"]
    return out


def add_report(rep: Report, base: VectorResults, edited: VectorResults | None, figure: bytes) -> None:
    rep.summary(base.summary())
    rep.figure(figure, f"Predicted speeds normalised to {base.reference}")
    if edited is not None:
        rep.heading("What-if")
        rep.table(comparison(base, edited))


def print_predictions(base: VectorResults, edited: VectorResults | None = None) -> None:
    from whatif.scenarios.render import stdout_console
    from rich.table import Table

    console = stdout_console()
    t = Table(title=f"predicted time (µs), rank and speed relative to {base.reference}")
    for col in ("application", "system", "predicted", "rank", "speed"):
        t.add_column(col, justify="left" if col in ("application", "system") else "right")
    for r in base.predictions.itertuples(index=False):
        t.add_row(r.application, r.system, f"{r.predicted:,.3f}", str(r.rank),
                  "–" if pd.isna(r.normalised_speed) else f"{r.normalised_speed:.3f}")
    console.print(t)
    for app, system in zip(base.predictions.application, base.predictions.system):
        b = Table(title=f"{app} on {system}")
        for col in ("element", "application vector", "system vector", "total", "%"):
            b.add_column(col, justify="left" if col == "element" else "right")
        for r in base.table(app, system).itertuples(index=False):
            b.add_row(r.element, f"{r.application_vector:,.6g}", f"{r.system_vector:.6g}", f"{r.total:,.3f}",
                      f"{r.percentage:.2f}")
        console.print(b)
    if edited is not None:
        w = Table(title="what-if")
        for col in ("application", "system", "predicted", "what-if", "change %"):
            w.add_column(col, justify="left" if col in ("application", "system") else "right")
        for r in comparison(base, edited).itertuples(index=False):
            w.add_row(r.application, r.system, f"{r.predicted:,.3f}", f"{r.what_if:,.3f}", f"{r.change_pct:+.2f}")
        console.print(w)
    for warning in base.warnings:
        console.print(f"[yellow]warning[/]: {warning}")
