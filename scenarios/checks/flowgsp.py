"""Ground-truth checks of FlowGSP for ``whatif validate``: planted sequences are found with the supports
the definitions give.

Fresh attributes (used nowhere else) are planted on chains of consecutive instructions inside basic
blocks of a synthetic WebSphere-like EFG, one instance per method in the hottest chains.  Inside a block
every vertex has a single out-edge, so from the chain's first vertex the chain is the only walk that
contains the sequence without a proper prefix containing it; the expected supports are therefore the sums
over the instances of ``min(S_f(v0), F of the chain's edges)`` and ``min(W over the chain)`` (§3.2).
"""

from __future__ import annotations

import numpy as np

from whatif.models.flowgsp import FlowGSP
from whatif.models.flowgsp.synthetic import chain_support, chain_walks, plant, synthetic_efg
from whatif.scenarios.checks.registry import CheckResult, register_check

# (label, g_max, w_max, sequence, attributes per chain vertex)
CASES = (
    ("g0w0", 0, 0, (("P1",), ("P2", "P3")), (("P1",), ("P2", "P3"))),
    ("g1w1", 1, 1, (("Q1",), ("Q2", "Q3")), (("Q1",), (), ("Q2",), ("Q3",))),
)
INSTANCES = 8
REL_TOL = 1e-9


def _instances(efg, length: int, count: int) -> list[int]:
    """Chain starts in distinct methods, hottest (largest S_M of the chain) first."""
    starts = chain_walks(efg, length)
    method = np.searchsorted(efg.method_ptr, starts, side="right") - 1
    score = np.array([max(chain_support(efg, int(v), length)) for v in starts])
    chosen: list[int] = []
    used: set[int] = set()
    for i in np.argsort(-score, kind="stable"):
        if int(method[i]) not in used and score[i] > 0:
            used.add(int(method[i]))
            chosen.append(int(starts[i]))
        if len(chosen) == count:
            break
    return chosen


@register_check("flowgsp-planted")
def planted_sequences(quick: bool) -> list[CheckResult]:
    base = synthetic_efg(n_methods=40 if quick else 300, seed=2024)
    results: list[CheckResult] = []
    for label, gap, window, sequence, per_vertex in CASES:
        starts = _instances(base, len(per_vertex), INSTANCES)
        efg = plant(base, [(v, per_vertex) for v in starts])
        exp_sf = sum(chain_support(efg, v, len(per_vertex))[0] for v in starts)
        exp_sw = sum(chain_support(efg, v, len(per_vertex))[1] for v in starts)
        threshold = 0.5 * max(exp_sf, exp_sw)
        res = FlowGSP(gap=gap, window=window, n_generations=3, min_support=threshold,
                      min_diff_support=threshold, workers=1).fit(efg)
        found = {tuple(frozenset(e) for e in s.elements): s for s in res.sequences}
        hit = found.get(tuple(frozenset(e) for e in sequence))
        text = "<" + ", ".join("(" + ", ".join(e) + ")" for e in sequence) + ">"
        for what, expected, measured in (("S_f", exp_sf, hit.sf if hit else None),
                                         ("S_w", exp_sw, hit.sw if hit else None)):
            ok = measured is not None and abs(measured - expected) <= REL_TOL * max(abs(expected), 1e-300)
            results.append(CheckResult(name=f"flowgsp planted {text} {label} {what}", expected=round(expected, 9),
                                       measured=None if measured is None else round(measured, 9), passed=ok,
                                       detail=f"{len(starts)} instances, g_max={gap}, w_max={window}, "
                                              f"threshold {threshold:.4g}, {len(res.sequences)} sequences kept"))
    return results
