"""Java workload inputs taken from a seed, labelled as inputs wherever a report shows them.

The allocation behaviours (``simulator/workloads/alloc/*.toml``) take some of their values from seed 003:
the allocation volumes of Table 5-3, the heap sizes of Figures 5-9 and 5-10, and javac's explicit
``System.gc()`` calls (Figure 5-9(d)); the catalog cites each.  A run allocates exactly its input volume and
calls ``System.gc()`` where its input says, so those figures are inputs, not results: reports show them in
an inputs table with their source (:func:`inputs_table`, :func:`inputs_doc`), never as a results column.
Values the seed does not give are estimates of the catalog and are labelled so.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from whatif.simulator.gc.behaviour import AllocBehaviour

_TABLE_5_3 = {"compress", "jess", "db", "javac", "mtrt", "jack", "r2mark"}
# field -> (what it is, {workload: the seed's place}); the catalog's [S003] citations
SEED_INPUTS: dict[str, tuple[str, dict[str, str]]] = {
    "total_alloc_mb": ("allocation volume of a full run (MB)", {w: "seed 003 Table 5-3" for w in _TABLE_5_3}),
    "heap_mb": ("heap of the seed's measurement (MB)",
                {**{w: f"seed 003 Figure 5-9({c})" for w, c in zip(("compress", "jess", "db", "javac", "mtrt", "jack"),
                                                                  "abcdef")},
                 "r2mark": "seed 003 Figure 5-10"}),
    "explicit_gc": ("System.gc() calls (fractions of the run)", {"javac": "seed 003 Figure 5-9(d)"}),
}


def input_label(field: str, workload: str) -> str:
    """``"input (seed 003 Table 5-3)"``, or ``"input (estimate)"`` for a value the seed does not give."""
    where = SEED_INPUTS[field][1].get(workload.rpartition("/")[2].rpartition(":")[2])
    return f"input ({where})" if where else "input (estimate)"


def inputs_doc(workload: str, behaviour: AllocBehaviour, scale: float = 1.0) -> dict[str, Any]:
    """results.json's ``inputs`` of one workload: each seed-derived field with its value and source."""
    out = {}
    for field, (what, _) in SEED_INPUTS.items():
        value = getattr(behaviour, field)
        if field == "explicit_gc" and not value:
            continue
        out[field] = {"value": list(value) if isinstance(value, list) else float(value), "what": what,
                      "source": input_label(field, workload)}
    out["scale"] = scale
    return out


def inputs_table(behaviours: dict[str, AllocBehaviour], scale: float = 1.0,
                 heap_mb: dict[str, float] | None = None) -> pd.DataFrame:
    """One row per (application, input): value, value as simulated (× ``scale``) and source.  ``heap_mb``
    overrides a behaviour's heap (a scenario's own choice: labelled as the scenario's input)."""
    rows = []
    for name, b in behaviours.items():
        for field, (what, _) in SEED_INPUTS.items():
            value = getattr(b, field)
            source = input_label(field, name)
            if field == "explicit_gc":
                if not value:
                    continue
                rows.append({"application": name, "input": what, "value": ", ".join(f"{v:g}" for v in value),
                             "as simulated": f"{len(value)} calls", "source": source})
                continue
            if field == "heap_mb" and heap_mb and name in heap_mb:
                value, source = heap_mb[name], "input (the scenario's heap_mb)"
            rows.append({"application": name, "input": what, "value": f"{value:g}",
                         "as simulated": f"{value * scale:.4g} (x{scale:g})", "source": source})
    return pd.DataFrame(rows, columns=["application", "input", "value", "as simulated", "source"])
