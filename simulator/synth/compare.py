"""How much one static program differs from another of a nearby description (issue 15, item 1: a
description changed a little should give a program changed a little).

:func:`program_change` compares two programs function by function, (phase, function) matched, and
returns the shares of the first one's dynamic weight (``StaticProgram.weight``, the expected share of
the executed instructions) that changed:

* ``structure``: in functions whose control-transfer sequence (walk kinds, fixed trip counts) changed,
  the instructions from the first control transfer that differs on (a function one branch longer grows
  at its end and keeps its head);
* in the functions of the same structure, instructions are matched by their place in the source (their
  block's key and their number in the block, the key the synthesiser deals them by; a block's control
  transfer is matched with the other's control transfer), so a block one instruction longer changes
  that one instruction, not the ones after it:
* ``lengths``: instructions one program has and the other lacks (a block one instruction longer or
  shorter), each program's by its own weight;
* of the matched instructions, those whose operation class changed (``class``), loads and stores bound
  to another stream (``stream``), and instructions of an unchanged class some source of which reads
  another producer (matched by place; a producer further back than ``FAR`` in the function, or none,
  counts as one "far" producer: ``dataflow``).

``tests/benchmarks/bench_synth_stability.py`` prints it for the planted families' one-parameter changes.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from whatif.simulator.isa import OP_LOAD, OP_STORE
from whatif.simulator.synth import kernel as K
from whatif.simulator.synth.program import instruction_key

FAR = 32                  # a producer further back than this (or none) is "far"
STRAIGHT = (K.K_PLAIN, K.K_MEM, K.K_ADV)
CHANGES = ("structure", "lengths", "class", "stream", "dataflow")
END = 511                 # the place number of a block's control transfer (blocks are shorter: MAX_BLOCK)


def function_slices(prog) -> dict[tuple[int, int], slice]:
    """(phase, function) -> the slice of its static instructions."""
    return {(r.phase, r.func): slice(r.first, r.first + r.count) for r in prog.methods().itertuples()}


def producers(prog, sl: slice) -> np.ndarray:
    """(instructions, 3): the instruction (its index in the function) that last wrote each source (src1,
    src2, areg) at most ``FAR`` instructions back in the function; -1 for a producer further back or none."""
    dst, srcs = prog.dst[sl], (prog.src1[sl], prog.src2[sl], prog.areg[sl])
    out = np.full((len(dst), 3), -1, np.int64)
    last: dict[int, int] = {}
    for k in range(len(dst)):
        for c, s in enumerate(srcs):
            r = int(s[k])
            if r >= 0 and r in last and k - last[r] <= FAR:
                out[k, c] = last[r]
        if dst[k] >= 0:
            last[int(dst[k])] = k
    return out


def producer_distances(prog, sl: slice) -> np.ndarray:
    """(instructions, 3): how far back in the function each source (src1, src2, areg) was written; FAR + 1
    for a producer beyond FAR or none."""
    prod = producers(prog, sl)
    return np.where(prod >= 0, np.arange(len(prod))[:, None] - prod, FAR + 1)


def places(prog, sl: slice) -> np.ndarray:
    """The source place of each instruction of the function ``sl``: its block's key and its number in the
    block (``END`` for the block's control transfer), which a block that grows or shrinks leaves alone for
    every instruction but the ones it gains or loses."""
    blk = prog.block[sl]
    starts = np.flatnonzero(np.concatenate([[True], blk[1:] != blk[:-1]]))
    ends = np.concatenate([starts[1:], [len(blk)]])
    number = np.arange(len(blk)) - np.repeat(starts, ends - starts)
    ctl = ~np.isin(prog.kind[sl][ends - 1], STRAIGHT)
    number[ends[ctl] - 1] = END
    return instruction_key(prog.codes[int(prog.phase[sl.start])].b_key[blk], number)


def control(prog, sl: slice) -> tuple[bytes, bytes]:
    """The function's structure: the sequence of its control-transfer kinds, and the fixed loops' trip counts."""
    k = prog.kind[sl]
    ctl = ~np.isin(k, STRAIGHT)
    return k[ctl].tobytes(), np.where(k[ctl] == K.K_LOOP_FIXED, prog.arg[sl][ctl], 0).tobytes()


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
    total_a, total_b = float(a.weight.sum()), float(b.weight.sum())
    fa, fb = function_slices(a), function_slices(b)
    out = dict.fromkeys(CHANGES, 0.0)
    for key, sa in fa.items():
        sb = fb.get(key)
        w = a.weight[sa] / total_a
        if sb is None or control(a, sa) != control(b, sb):
            out["structure"] += float(w[first_difference(a, sa, b, sb):].sum())
            continue
        pa, pb = places(a, sa), places(b, sb)
        order = np.argsort(pb, kind="stable")
        at = order[np.minimum(np.searchsorted(pb[order], pa), len(pb) - 1)]
        hit = pb[at] == pa                     # a's instruction is b's instruction at[k]
        gained = np.ones(len(pb), bool)
        gained[at[hit]] = False
        out["lengths"] += float(w[~hit].sum()) + float(b.weight[sb][gained].sum()) / total_b
        ia, ib = np.flatnonzero(hit), at[hit]
        wm = w[ia]
        same = a.op[sa][ia] == b.op[sb][ib]
        out["class"] += float(wm[~same].sum())
        mem = same & np.isin(a.kind[sa][ia], (K.K_MEM, K.K_ADV))
        out["stream"] += float(wm[mem & (a.arg[sa][ia] != b.arg[sb][ib])].sum())
        qa, qb = producers(a, sa)[ia], producers(b, sb)[ib]
        moved = (np.where(qa >= 0, pa[qa], -1) != np.where(qb >= 0, pb[qb], -1)).any(axis=1)
        out["dataflow"] += float(wm[same & moved].sum())
    return out


class StreamShare(NamedTuple):
    """One phase's loads or stores to one stream (see :func:`stream_shares`)."""
    phase: int
    kind: str            # "load" or "store"
    stream: str
    described: float     # the description's normalised weight
    realised: float      # the share of the phase's loads (stores) by expected dynamic weight
    heaviest: float      # the share the phase's heaviest load (store) carries: how finely shares can be met


def stream_shares(prog) -> list[StreamShare]:
    """Per phase, access kind and stream, the described share beside the expected dynamic share in the
    program, weighting each load or store by ``StaticProgram.weight``.  A description's stream weights are
    what its accesses should realise; a rare stream dealt one hot instruction realises a multiple of its
    share, and a phase whose loads (stores) are one or two hot instructions cannot realise small shares."""
    out = []
    mem = np.isin(prog.kind, (K.K_MEM, K.K_ADV))
    for p, params in enumerate(prog.phases):
        for kind, opc, weights in (("load", OP_LOAD, params.load_weights), ("store", OP_STORE, params.store_weights)):
            sel = mem & (prog.phase == p) & (prog.op == opc)
            w = prog.weight[sel]
            total_w = float(w.sum())
            described = np.array([weights.get(name, 0.0) for name in prog.streams.names], dtype=float)
            if total_w <= 0 or described.sum() <= 0:
                continue
            got = np.bincount(prog.arg[sel], weights=w, minlength=len(described)) / total_w
            heaviest = float(w.max()) / total_w
            for j, name in enumerate(prog.streams.names):
                out.append(StreamShare(p, kind, name, float(described[j] / described.sum()), float(got[j]),
                                       heaviest))
    return out
