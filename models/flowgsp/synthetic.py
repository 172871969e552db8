"""Synthetic WebSphere-like profiles and EFGs: a fixture of the engine's tests, of the planted-sequence
check (``whatif validate --only flowgsp-planted``) and of the mining benchmark -- nothing else.

Every attribute here is *drawn*; this models no hardware, and nothing a user takes for a measurement
comes from it.  Profiles of a simulated processor come from ``whatif profile`` and the ``flowgsp`` study
(the z10's core model sampled instruction by instruction, :mod:`whatif.simulator.profiledb`).

Shape after seed 001 §2.5, §4.2-4.3 and §5.2.1: a flat profile of thousands of JIT-compiled methods
of 50-725 instructions (most of 50-250), ~3.4 instructions per basic block, ~1.45 CFG successors per
block, forward branches with biased probabilities and a few loops; method invocation counts and
per-instruction costs heavy-tailed so that no method holds more than a few percent of the ticks.
Attributes, ~1.4 per vertex from ~40 kinds with a skewed distribution: one ``Opcode=`` per instruction
(12 ordinary opcodes with Zipf-like frequencies, plus ``BRC``/``J``/``BCR`` ending blocks), 20 hardware
counters sampled where time is spent (instruction-cache misses with a long tail over the following
instructions and correlated TLB misses), ``InlineLvl=1..3`` over inlined block ranges, ``Prologue`` and
``JITtarget``.  ``n_methods=1400`` gives the thesis's scale (~100,000 instructions, ~30,000 blocks,
~44,000 inter-block edges).

The profile is produced as the six tables of the SQLite profile database (:mod:`profile_db`), so a
synthetic EFG goes through the same §4.3 construction as a real one.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from whatif.models.flowgsp.graph import EFG
from whatif.models.flowgsp.profile_db import TICKS, efg_from_tables
from whatif.models.params import Interval, validate_params

OPCODES = ("L", "LG", "ST", "LR", "LA", "AHI", "STG", "LGR", "CHI", "CR", "MVC", "SLL")
OPCODE_WEIGHTS = 1.0 / np.arange(1, len(OPCODES) + 1) ** 0.8
COUNTERS = ("Icachemiss", "Dcachemiss", "ITLBmiss", "DTLBmiss", "L1.5miss", "L2miss", "Branchmispredict",
            "AGIstall", "Storebufferfull", "Pipelinereject", "Opsequencerstall", "FPUstall", "Lockcontention",
            "Cacheline_xi", "Pagefault", "Translationstall", "Decodestall", "Groupingbreak", "Millicode",
            "Serialization")
MEMORY_OPS = ("L", "LG", "ST", "STG", "MVC")
STORE_OPS = ("ST", "STG", "MVC")
ADDRESS_OPS = ("LA", "LR", "LGR", "AHI")
INSTRUCTION_BYTES = (2, 4, 6)
INSTRUCTION_BYTES_P = (0.3, 0.55, 0.15)

WEBSPHERE_METHODS = 1400
_PROFILE_CONSTRAINTS = {"n_methods": Interval(int, 1, None), "event_scale": Interval(float, 0.0, 20.0, "right")}


def synthetic_profile(n_methods: int = WEBSPHERE_METHODS, seed: int = 0, ticks_per_instruction: float = 3.0,
                      event_scale: float = 1.0) -> dict[str, pd.DataFrame]:
    """The six profile tables of a synthetic WebSphere-like profile (deterministic in ``seed``).

    ``event_scale`` multiplies the share of instructions exhibiting each hardware event (a denser,
    harder profile for stress tests)."""
    validate_params("synthetic_profile", {"n_methods": n_methods, "event_scale": event_scale},
                    _PROFILE_CONSTRAINTS)
    rng = np.random.default_rng(seed)
    sym_rows, dis_rows, lst_rows, node_rows, edge_rows = [], [], [], [], []
    ins_sym, ins_off, ins_block_freq, ins_pos, ins_len, ins_ops = [], [], [], [], [], []
    opcode_p = OPCODE_WEIGHTS / OPCODE_WEIGHTS.sum()
    invocations = np.maximum(1.0, rng.lognormal(np.log(2000.0), 0.9, size=n_methods)).round()
    for m in range(n_methods):
        n_ins = int(min(725, 50 + round(rng.lognormal(np.log(14.0), 1.0))))
        lengths = []
        while sum(lengths) < n_ins:
            lengths.append(int(rng.geometric(1 / 3.55)))
        lengths[-1] -= sum(lengths) - n_ins
        if lengths[-1] == 0:
            lengths.pop()
        B = len(lengths)
        succ: list[list[tuple[int, float]]] = []
        term: list[str] = []
        for b in range(B - 1):
            r = rng.random()
            fwd_hi = min(B - 1, b + 8)
            if r < 0.40 or (r >= 0.93 and b + 2 > B - 1):
                succ.append([(b + 1, 1.0)])
                term.append("")
            elif r < 0.93:
                if rng.random() < 0.12:  # loop back-edge
                    t = int(rng.integers(max(0, b - 6), b + 1))
                    p = float(rng.uniform(0.4, 0.85))
                elif b + 2 <= fwd_hi:
                    t = int(rng.integers(b + 2, fwd_hi + 1))
                    p = float(np.clip(rng.beta(0.4, 0.4), 0.01, 0.99))
                else:
                    succ.append([(b + 1, 1.0)])
                    term.append("")
                    continue
                succ.append([(b + 1, 1.0 - p), (t, p)])
                term.append("BRC")
            else:
                t = int(rng.integers(b + 2, min(B - 1, b + 12) + 1))
                succ.append([(t, 1.0)])
                term.append("J")
        succ.append([])
        term.append("BCR")
        P = np.zeros((B, B))
        for b, out in enumerate(succ):
            for t, p in out:
                P[b, t] += p
        rhs = np.zeros(B)
        rhs[0] = invocations[m]
        block_freq = np.linalg.solve(np.eye(B) - P.T, rhs)
        block_freq = np.maximum(block_freq, 0.0)
        # inlined regions: contiguous block ranges at levels 1..3
        inline = np.zeros(B, dtype=np.int64)
        if rng.random() < 0.4:
            for _ in range(int(rng.integers(1, 3))):
                lo = int(rng.integers(0, B))
                hi = min(B, lo + int(rng.geometric(1 / 5)))
                inline[lo:hi] = np.maximum(inline[lo:hi], 1)
                if rng.random() < 0.35 and hi - lo > 1:
                    lo2 = int(rng.integers(lo, hi))
                    hi2 = min(hi, lo2 + int(rng.geometric(1 / 2.5)))
                    inline[lo2:hi2] = np.maximum(inline[lo2:hi2], 2)
                    if rng.random() < 0.3:
                        inline[lo2:lo2 + 1] = 3
        name = f"com/ibm/ws/pkg{m % 97}/Class{m}.method{m % 7}"
        sizes = rng.choice(INSTRUCTION_BYTES, size=n_ins, p=INSTRUCTION_BYTES_P)
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        ops = np.asarray(OPCODES, dtype=object)[rng.choice(len(OPCODES), size=n_ins, p=opcode_p)]
        block_of = np.repeat(np.arange(B), lengths)
        pos_in_block = np.arange(n_ins) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        ends = np.cumsum(lengths) - 1
        for b in range(B):
            node_rows.append((m, b, float(np.rint(block_freq[b]))))
            for t, p in succ[b]:
                f = float(np.rint(block_freq[b] * p))
                edge_rows.append((m, "out", b, t, f))
                edge_rows.append((m, "in", b, t, f))
            if term[b]:
                ops[ends[b]] = term[b]
        for i in range(n_ins):
            dis_rows.append((m, int(offsets[i]), ops[i], ""))
            lst_rows.append((m, int(offsets[i]), int(offsets[i] // 8), int(block_of[i]), int(inline[block_of[i]])))
        ins_sym.append(np.full(n_ins, m))
        ins_off.append(offsets)
        ins_block_freq.append(block_freq[block_of])
        ins_pos.append(pos_in_block)
        ins_ops.append(ops)
        ins_len.append(np.asarray(lengths)[block_of])
        jit_entry = int(offsets[min(2, n_ins - 1)])
        sym_rows.append((m, name, jit_entry))
    ins_sym_a = np.concatenate(ins_sym)
    ins_off_a = np.concatenate(ins_off)
    n = len(ins_sym_a)
    cost = rng.lognormal(0.0, 1.2, size=n)
    lam = np.concatenate(ins_block_freq) * cost
    lam *= ticks_per_instruction * n / lam.sum()
    ticks = rng.poisson(lam)
    ia_sym, ia_off, ia_ev, ia_cnt = [], [], [], []
    hit = ticks > 0
    ia_sym.append(ins_sym_a[hit])
    ia_off.append(ins_off_a[hit])
    ia_ev.append(np.full(int(hit.sum()), TICKS, dtype=object))
    ia_cnt.append(ticks[hit])
    ops_all = np.concatenate(ins_ops)
    block_pos = np.concatenate(ins_pos)
    block_len = np.concatenate(ins_len)
    sampled = rng.poisson(lam) > 0          # an event is recorded only where samples land

    def exhibit(mask: np.ndarray, q: float) -> np.ndarray:
        return mask & (rng.random(n) < min(1.0, q * event_scale)) & sampled

    def subset(mask: np.ndarray, q: float) -> np.ndarray:
        return mask & (rng.random(n) < q)

    mem = np.isin(ops_all, MEMORY_OPS)
    stores = np.isin(ops_all, STORE_OPS)
    everywhere = np.ones(n, dtype=bool)
    leader = block_pos == 0
    after_addr = np.r_[False, np.isin(ops_all[:-1], ADDRESS_OPS)] & (block_pos > 0)
    present: dict[str, np.ndarray] = {}
    # instruction-cache misses: mostly at block starts, with a long tail over the next instructions (§6.2)
    icm = exhibit(leader, 0.25) | exhibit(~leader, 0.04)
    src = np.flatnonzero(icm)
    for step in (1, 2, 3):
        ok = src[(block_pos[src] + step < block_len[src]) & (rng.random(len(src)) < 0.5 / step)]
        icm[ok + step] = True
    present["Icachemiss"] = icm
    present["ITLBmiss"] = subset(icm, 0.25)
    present["Dcachemiss"] = exhibit(mem, 0.25)
    present["DTLBmiss"] = subset(present["Dcachemiss"], 0.3)
    present["L1.5miss"] = subset(present["Dcachemiss"], 0.5)
    present["L2miss"] = subset(present["L1.5miss"], 0.4)
    present["Branchmispredict"] = exhibit(ops_all == "BRC", 0.3)
    present["AGIstall"] = exhibit(mem & after_addr, 0.5)
    present["Storebufferfull"] = exhibit(stores, 0.1)
    present["Pipelinereject"] = exhibit(mem, 0.05)
    present["Opsequencerstall"] = exhibit(everywhere, 0.01)
    present["FPUstall"] = exhibit(np.isin(ops_all, ("SLL", "MVC")), 0.05)
    present["Lockcontention"] = exhibit(ops_all == "CR", 0.03)
    present["Cacheline_xi"] = exhibit(stores, 0.03)
    present["Pagefault"] = exhibit(mem, 0.003)
    present["Translationstall"] = exhibit(mem, 0.02)
    present["Decodestall"] = exhibit(everywhere, 0.01)
    present["Groupingbreak"] = exhibit(np.isin(ops_all, ("BRC", "J")), 0.05)
    present["Millicode"] = exhibit(ops_all == "MVC", 0.3)
    present["Serialization"] = exhibit(everywhere, 0.003)
    counts = {c: np.where(present[c], 1 + rng.poisson(lam), 0) for c in COUNTERS}
    for c in COUNTERS:
        hit = counts[c] > 0
        ia_sym.append(ins_sym_a[hit])
        ia_off.append(ins_off_a[hit])
        ia_ev.append(np.full(int(hit.sum()), c, dtype=object))
        ia_cnt.append(counts[c][hit])
    return {
        "Symbol": pd.DataFrame(sym_rows, columns=["symbol_id", "name", "jit_entry_offset"]),
        "Disassm": pd.DataFrame(dis_rows, columns=["symbol_id", "offset", "opcode", "operands"]),
        "IA": pd.DataFrame({"symbol_id": np.concatenate(ia_sym), "offset": np.concatenate(ia_off),
                            "event": np.concatenate(ia_ev), "count": np.concatenate(ia_cnt)}),
        "Listing": pd.DataFrame(lst_rows, columns=["symbol_id", "offset", "bytecode", "block", "inline_level"]),
        "CFGNode": pd.DataFrame(node_rows, columns=["symbol_id", "block", "frequency"]),
        "CFGEdge": pd.DataFrame(edge_rows, columns=["symbol_id", "kind", "src_block", "dst_block", "frequency"]),
    }


def synthetic_efg(n_methods: int = WEBSPHERE_METHODS, seed: int = 0, event_scale: float = 1.0) -> EFG:
    """The EFG of :func:`synthetic_profile` (built by the §4.3 construction)."""
    return efg_from_tables(synthetic_profile(n_methods, seed, event_scale=event_scale),
                           source=f"synthetic(n_methods={n_methods}, seed={seed}, event_scale={event_scale})")


def profile_shape(tables: dict[str, pd.DataFrame]) -> dict[str, int]:
    """Counts comparable with §4.2: instructions, basic blocks, inter-block edges."""
    out_edges = tables["CFGEdge"][tables["CFGEdge"].kind == "out"]
    return {"instructions": len(tables["Disassm"]), "basic_blocks": len(tables["CFGNode"]),
            "inter_block_edges": len(out_edges), "methods": len(tables["Symbol"])}


# ---------------------------------------------------------------------------- planting (ground truth)
def chain_walks(efg: EFG, length: int) -> np.ndarray:
    """Start vertices ``v`` such that ``v, v+1, ..., v+length-1`` is the only walk of ``length`` vertices
    from ``v`` (each of the first ``length-1`` vertices has exactly one out-edge, to the next vertex)."""
    n = efg.n_vertices
    outdeg = np.diff(efg.indptr)
    nxt = np.full(n, -1, dtype=np.int64)
    single = outdeg == 1
    nxt[single] = efg.edge_dst[efg.indptr[:-1][single]]
    ok = np.ones(n, dtype=bool)
    idx = np.arange(n)
    for step in range(length - 1):
        pos = idx + step
        valid = pos < n - 1
        good = np.zeros(n, dtype=bool)
        good[valid] = nxt[pos[valid]] == pos[valid] + 1
        ok &= good
    ok[n - length + 1:] = False
    return np.flatnonzero(ok)


def plant(efg: EFG, placements: Iterable[tuple[int, Sequence[Sequence[str]]]]) -> EFG:
    """Add attributes along chains: ``placements`` holds ``(start, per_vertex_attributes)``; vertex
    ``start + j`` receives ``per_vertex_attributes[j]``."""
    extra: dict[int, set[str]] = {}
    for start, per_vertex in placements:
        for j, attrs in enumerate(per_vertex):
            extra.setdefault(int(start) + j, set()).update(attrs)
    return efg.with_extra_attributes(extra)


def chain_support(efg: EFG, start: int, length: int) -> tuple[float, float]:
    """(S_f, S_w) of the walk ``start, ..., start+length-1`` by the definitions (§3.2)."""
    sf = float(efg.Sf_vertex[start])
    sw = float(efg.W[start])
    for v in range(start, start + length - 1):
        e = int(efg.indptr[v])
        sf = min(sf, float(efg.F[e]))
        sw = min(sw, float(efg.W[v + 1]))
    return sf, sw
