"""Glue of ``whatif hbench predict``: system and application vectors from files, the predictions (and a
what-if beside them), the results directory."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pandas as pd

from whatif.models.hbench.vector_files import read_vectors
from whatif.models.hbench.vectors import VectorModel, VectorResults
from whatif.scenarios.errors import ScenarioError
from whatif.scenarios.render.vectors import add_report, comparison
from whatif.scenarios.results.directory import write_results_dir
from whatif.scenarios.results.report import figure_png
from whatif.scenarios.results.writer import check_results_target

_SCALE = re.compile(r"^\s*([^=]+?)\s*=\s*[x×*]\s*([0-9.eE+-]+)\s*$")
_COUNT = re.compile(r"^\s*([^=]+?)\s*=\s*([0-9.eE+-]+)\s*$")


def parse_edits(what_if: list[str], counts: list[str]) -> tuple[dict[str, float], dict[str, float]]:
    """``PRIM=x0.5`` (or ``×0.5``, ``*0.5``): the primitive's cost times 0.5; ``PRIM=N``: its count N."""
    scale, count = {}, {}
    for item in what_if:
        m = _SCALE.match(item)
        if m is None:
            raise ScenarioError(f"--what-if {item!r}: expected PRIMITIVE=x<factor>, e.g. tcp_connect=x0.5")
        scale[m.group(1)] = _number(m.group(2), f"--what-if {item!r}")
    for item in counts:
        m = _COUNT.match(item)
        if m is None:
            raise ScenarioError(f"--count {item!r}: expected PRIMITIVE=<count>, e.g. tcp_connect=0.5")
        count[m.group(1)] = _number(m.group(2), f"--count {item!r}")
    return scale, count


def _number(text: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ScenarioError(f"{where}: {text!r} is not a number") from None
    if not value >= 0:
        raise ScenarioError(f"{where}: must be >= 0, got {value:g}")
    return value


def predict_command(system: Path, app: Path, reference: str | None = None, what_if: list[str] = (),
                    counts: list[str] = (), out: Path | None = None) -> tuple[VectorResults, VectorResults | None,
                                                                                 dict[str, Any]]:
    """The predictions, the what-if's (when asked) and the JSON document."""
    started = time.perf_counter()
    if out is not None:
        check_results_target(out)
    scale, count = parse_edits(list(what_if), list(counts))
    tables = read_vectors(system, app)
    base = VectorModel(reference=reference).fit(tables.systems, tables.applications, tables.functions,
                                                tables.distributions, source=f"{system} + {app}")
    edited = base.what_if(scale, count) if (scale or count) else None
    doc = {**base.to_dict(), "units": tables.units, "source": tables.source}
    if edited is not None:
        doc["what_if"] = {"scale": scale, "counts": count, **edited.to_dict(),
                          "comparison": comparison(base, edited).to_dict(orient="records")}
    if out is not None:
        result_tables: dict[str, pd.DataFrame] = dict(base.tables())
        if edited is not None:
            result_tables.update({f"what_if_{k}": v for k, v in edited.tables().items()})
            result_tables["what_if_comparison"] = comparison(base, edited)
        figure = figure_png(base.plot_speeds())
        write_results_dir(out, title=f"HBench vectors: {Path(app).name} on {Path(system).name}", study="hbench-vectors",
                          results=doc, started=started, tables=result_tables, figures={"normalised_speeds": figure},
                          report=lambda rep: add_report(rep, base, edited, figure),
                          parameters={"system": str(system), "app": str(app), "reference": base.reference,
                                      "what_if": scale, "counts": count})
    return base, edited, doc


def os_vector_command(platform_name: str, overrides: list[str], primitives: list[str] | None, seed: int,
                      out: Path | None, progress: bool) -> pd.DataFrame:
    """HBench:OS microbenchmarks on a simulated platform: its system vector (and a results directory
    whose ``system_vector.csv`` ``whatif hbench predict --system`` reads)."""
    from whatif.scenarios.results.progress import progress_bar
    from whatif.simulator.os.microbench import system_vector
    from whatif.simulator.os.primitives import primitive_names
    from whatif.simulator.platform import load_platform

    started = time.perf_counter()
    if out is not None:
        check_results_target(out)
    platform = load_platform(platform_name, overrides)
    names = primitives or primitive_names()
    unknown = [n for n in names if n not in primitive_names()]
    if unknown:                                   # before the first microbenchmark, not after some
        raise ScenarioError(f"--primitive: unknown primitive {unknown[0]!r}; known: {', '.join(primitive_names())}")
    with progress_bar(len(names), f"microbenchmarks on {platform.name}", enabled=progress) as advance:
        vector = system_vector(platform, names, seed=seed, progress=advance)
    if out is not None:
        wide = vector.pivot(index="primitive", columns="system", values="cost").reset_index()
        wide.insert(1, "unit", vector.set_index("primitive").loc[wide.primitive, "unit"].to_numpy())
        write_results_dir(out, title=f"HBench:OS system vector of {platform.name}", study="hbench-os-vector",
                          results={"system": platform.name, "vector": vector.to_dict(orient="records")},
                          started=started, tables={"system_vector": vector},
                          files={"system_vector.csv": wide.to_csv(index=False).encode()},
                          report=lambda rep: rep.table(vector, caption="System vector (µs per call or per byte)"),
                          seed=seed, parameters={"platform": platform.name, "primitives": names},
                          platforms={platform.name: platform.model_dump()})
    return vector
