"""How much one static program differs from another of a nearby description (issue 15, item 1: a
description changed a little should give a program changed a little).

:func:`program_change` compares two programs function by function, (phase, function) matched, and
returns the shares of the first one's dynamic weight (``StaticProgram.weight``, the expected share of
the executed instructions) that changed:

* ``structure``: in functions whose control-transfer sequence (walk kinds, fixed trip counts) changed,
  the instructions from the first control transfer that differs on (a function one branch longer grows
  at its end and keeps its head);
* ``lengths``: functions of the same structure with some block longer or shorter;
* in the functions that kept both, instructions whose operation class changed (``class``), loads and
  stores bound to another stream (``stream``), and instructions of an unchanged class whose sources read
  producers at other distances in their function (``dataflow``; a producer further back than ``FAR``, or
  none, counts as one "far" distance).

``tests/benchmarks/bench_synth_stability.py`` prints it for the planted families' one-parameter changes.
"""

from __future__ import annotations

import numpy as np

from whatif.simulator.synth import kernel as K

FAR = 32                  # a producer further back than this (or none) is "far"
STRAIGHT = (K.K_PLAIN, K.K_MEM, K.K_ADV)
CHANGES = ("structure", "lengths", "class", "stream", "dataflow")


def function_slices(prog) -> dict[tuple[int, int], slice]:
    """(phase, function) -> the slice of its static instructions."""
    return {(r.phase, r.func): slice(r.first, r.first + r.count) for r in prog.methods().itertuples()}


def producer_distances(prog, sl: slice) -> np.ndarray:
    """(instructions, 3): how far back in the function each source (src1, src2, areg) was written; FAR + 1
    for a producer beyond FAR or none."""
    dst, srcs = prog.dst[sl], (prog.src1[sl], prog.src2[sl], prog.areg[sl])
    out = np.full((len(dst), 3), FAR + 1, np.int64)
    last: dict[int, int] = {}
    for k in range(len(dst)):
        for c, s in enumerate(srcs):
            r = int(s[k])
            if r >= 0 and r in last and k - last[r] <= FAR:
                out[k, c] = k - last[r]
        if dst[k] >= 0:
            last[int(dst[k])] = k
    return out


def control(prog, sl: slice) -> tuple[bytes, bytes]:
    """The function's structure: the sequence of its control-transfer kinds, and the fixed loops' trip counts."""
    k = prog.kind[sl]
    ctl = ~np.isin(k, STRAIGHT)
    return k[ctl].tobytes(), np.where(k[ctl] == K.K_LOOP_FIXED, prog.arg[sl][ctl], 0).tobytes()


def block_lengths(prog, sl: slice) -> np.ndarray:
    """The lengths of the function's blocks, in layout order."""
    blk = prog.block[sl]
    starts = np.flatnonzero(np.concatenate([[True], blk[1:] != blk[:-1]]))
    return np.diff(np.concatenate([starts, [len(blk)]]))


def first_difference(a, sa: slice, b, sb: slice | None) -> int:
    """Index in ``a``'s function of its first control transfer whose kind (or fixed trip count) differs from
    the same-numbered control transfer of ``b``'s: the function's structure is the same up to there (a
    function one branch longer grows at its end; a block one instruction longer shifts what follows but
    keeps the structure)."""
    if sb is None:
        return 0
    ctl_a = np.flatnonzero(~np.isin(a.kind[sa], STRAIGHT))
    ctl_b = np.flatnonzero(~np.isin(b.kind[sb], STRAIGHT))
    n = min(len(ctl_a), len(ctl_b))
    ka, kb = a.kind[sa][ctl_a[:n]], b.kind[sb][ctl_b[:n]]
    trips = (ka == K.K_LOOP_FIXED) & (a.arg[sa][ctl_a[:n]] != b.arg[sb][ctl_b[:n]])
    diff = np.flatnonzero((ka != kb) | trips)
    if len(diff):
        return int(ctl_a[diff[0]])
    return int(ctl_a[n]) if n < len(ctl_a) else sa.stop - sa.start


def program_change(a, b) -> dict[str, float]:
    """Shares of ``a``'s dynamic weight changed in ``b``, by kind of change (see the module docstring)."""
    total = float(a.weight.sum())
    fa, fb = function_slices(a), function_slices(b)
    out = dict.fromkeys(CHANGES, 0.0)
    for key, sa in fa.items():
        sb = fb.get(key)
        w = a.weight[sa]
        if sb is None or control(a, sa) != control(b, sb):
            out["structure"] += float(w[first_difference(a, sa, b, sb):].sum())
            continue
        if not np.array_equal(block_lengths(a, sa), block_lengths(b, sb)):
            out["lengths"] += float(w.sum())       # same structure, some block longer or shorter
            continue
        same = a.op[sa] == b.op[sb]
        out["class"] += float(w[~same].sum())
        mem = same & np.isin(a.kind[sa], (K.K_MEM, K.K_ADV))
        out["stream"] += float(w[mem & (a.arg[sa] != b.arg[sb])].sum())
        moved = (producer_distances(a, sa) != producer_distances(b, sb)).any(axis=1)
        out["dataflow"] += float(w[same & moved].sum())
    return {k: v / total for k, v in out.items()}
