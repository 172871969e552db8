"""The static program of a workload: built once per (workload, ISA, seed), then walked by the kernel.

``build_program`` generates every phase's structure (:mod:`.structure`), calibrates it
(branch directions for the taken rate, block lengths for the branch share), fills it with
instructions (:mod:`.assign`), lays all functions of all phases out in one text segment in
random order, and produces the flat static-instruction arrays the walker reads.  It also
keeps what the calibration expects of the dynamic stream (:meth:`StaticProgram.expected`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from whatif.simulator.isa import OP_ALU, OP_BRANCH, OP_CALL, OP_FP, OP_JUMP, OP_LOAD, OP_MUL, OP_RET, OP_STORE, IsaSpec
from whatif.simulator.lru import LruCache
from whatif.simulator.synth import depcal
from whatif.simulator.synth import kernel as K
from whatif.simulator.synth.jit import apply_jit
from whatif.simulator.synth.assign import SLOT_OPS, assign_behaviours, assign_registers, block_lengths, weighted_classes
from whatif.simulator.synth.streams import S_CHASE, S_RANDOM, StreamTable, build_streams
from whatif.simulator.synth.structure import (B_PERIODIC, T_CALL, T_IF, T_JUMP, T_LOOP, T_NONE, T_PH_CONT, T_PH_EXIT,
                                       T_PH_SWITCH, T_RET, PhaseCode, SourceDraws, block_weights,
                                       bound_call_sizes, calibrate_taken, generate, mean_floor, trip_range)
from whatif.simulator.workload import PhaseParams, Workload, phase_lengths, resolve_phases

TEXT_BASE = 0x400000
# what a binary (program seed) varies, each from its own generator: the data placement (the streams'
# scatter), the functions' order in the text, instruction sizes
CODEGEN = ("data", "order", "sizes")
FUNC_ALIGN = 16
TERM_OP = {T_IF: OP_BRANCH, T_LOOP: OP_BRANCH, T_PH_EXIT: OP_BRANCH, T_PH_CONT: OP_BRANCH, T_JUMP: OP_JUMP,
           T_PH_SWITCH: OP_JUMP, T_CALL: OP_CALL, T_RET: OP_RET}


@dataclass(frozen=True)
class StaticProgram:
    """Flat static-instruction arrays (layout order) plus what the walker and the reports need."""
    name: str
    isa: IsaSpec
    seed: int
    phases: tuple[PhaseParams, ...]
    streams: StreamTable
    # per static instruction
    pc: np.ndarray
    op: np.ndarray
    size: np.ndarray
    dst: np.ndarray
    src1: np.ndarray
    src2: np.ndarray
    areg: np.ndarray
    msize: np.ndarray
    flags: np.ndarray
    kind: np.ndarray      # K_*
    tgt: np.ndarray       # static index of the branch / jump / call target, -1
    arg: np.ndarray       # stream (memory), trip count (fixed loop), pattern (periodic), table offset (icall)
    arg2: np.ndarray      # period (periodic), target count (icall)
    prob: np.ndarray      # taken probability (Bernoulli), lowest trip count + 0.5 (variable loop)
    prob2: np.ndarray     # variable loop: width of the uniform trip-count draw
    off: np.ndarray       # offset within a node / block (memory)
    phase: np.ndarray     # phase of the instruction's function
    weight: np.ndarray    # expected executions per driver iteration of its phase
    func: np.ndarray      # function (within its phase; the driver is number code.functions)
    block: np.ndarray     # block (within its phase)
    ic_target: np.ndarray
    ic_cdf: np.ndarray
    driver_entry: np.ndarray   # per phase: static index of its driver's first instruction
    codes: tuple[PhaseCode, ...] = field(repr=False)
    chase_regs: dict = field(default_factory=dict)
    inline_level: np.ndarray | None = None     # JIT code: inlining level of each instruction (0: none)
    jit_entry: np.ndarray | None = None        # JIT code: True where JIT-to-JIT calls enter a method
    jit_inserted: np.ndarray | None = None     # JIT code: True for the inserted entry stubs and prologues
    agi_planted: np.ndarray | None = None      # JIT code: accesses whose base the previous ALU op generates

    def __len__(self) -> int:
        return len(self.pc)

    def methods(self) -> pd.DataFrame:
        """One row per function of every phase, in layout order: ``phase``, ``func``, ``first`` (static
        index of its first instruction), ``count`` (instructions), ``jit_entry`` (static index where calls
        enter: the first instruction unless the program is JIT code), ``bytes``, ``is_driver``."""
        key = self.phase * (int(self.func.max()) + 2) + self.func
        first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        count = np.diff(np.r_[first, len(self)])
        entry = first.copy()
        if self.jit_entry is not None:
            marked = np.flatnonzero(self.jit_entry)
            owner = np.searchsorted(first, marked, side="right") - 1
            entry[owner] = marked
        drivers = np.array([code.n_functions for code in self.codes])
        size = np.add.reduceat(self.size.astype(np.int64), first) if len(self) else np.zeros(0, np.int64)
        return pd.DataFrame({"phase": self.phase[first], "func": self.func[first], "first": first, "count": count,
                             "jit_entry": entry, "bytes": size,
                             "is_driver": self.func[first] == drivers[self.phase[first]]})

    @property
    def phase_names(self) -> list[str]:
        return [p.name for p in self.phases]

    def static_arrays(self) -> tuple[np.ndarray, ...]:
        return (self.pc, self.op, self.size, self.dst, self.src1, self.src2, self.areg, self.msize, self.flags,
                self.kind, self.tgt, self.arg, self.arg2, self.prob, self.prob2, self.off)

    def code_bytes(self, phase: int | None = None) -> int:
        sel = slice(None) if phase is None else self.phase == phase
        return int(self.size[sel].astype(np.int64).sum())

    def expected(self, phase: int) -> dict:
        """What calibration expects of the dynamic stream of ``phase`` (shares of instructions,
        branch behaviour, call rate, code footprints, stream shares); of JIT code, the methods' bodies
        (the calibrated part: entry stubs and prologues are added to them)."""
        sel = self.phase == phase
        if self.jit_inserted is not None:
            sel = sel & ~self.jit_inserted
        w = self.weight[sel]
        op = self.op[sel]
        kind = self.kind[sel]
        tot = w.sum()
        mem = kind == K.K_MEM
        adv = kind == K.K_ADV
        cond = op == OP_BRANCH
        pc = self.codes[phase]
        wb, inv = block_weights(pc)
        taken = np.zeros(len(w))
        taken[kind == K.K_BERN] = self.prob[sel][kind == K.K_BERN]
        per = kind == K.K_PERIODIC
        if per.any():
            bits = np.array([bin(int(a) & ((1 << 64) - 1)).count("1") for a in self.arg[sel][per]])
            taken[per] = bits / self.arg2[sel][per]
        lf = kind == K.K_LOOP_FIXED
        taken[lf] = 1.0 - 1.0 / self.arg[sel][lf]
        lv = kind == K.K_LOOP_VAR
        if lv.any():
            taken[lv] = 1.0 - 1.0 / mean_floor(self.prob[sel][lv], self.prob2[sel][lv])
        taken[kind == K.K_PH_CONT] = 1.0
        wc = (w * cond).sum()
        share = {"load": op == OP_LOAD, "store": op == OP_STORE, "branch": np.isin(op, (OP_BRANCH, OP_JUMP, OP_CALL,
                 OP_RET)), "fp": op == OP_FP}
        out = {k: float((w * v).sum() / tot) for k, v in share.items()}
        out["other"] = 1.0 - sum(out.values())
        out["taken_rate"] = float((w * taken).sum() / wc) if wc else 0.0
        bkind = {"loop": lf | lv, "periodic": per, "biased_or_random": kind == K.K_BERN}
        out["cond_branch_kinds"] = {k: float((w * v).sum() / wc) if wc else 0.0 for k, v in bkind.items()}
        out["calls_per_kinstr"] = float(1000 * (w * (op == OP_CALL)).sum() / tot)
        out["instructions_per_iteration"] = float(tot)
        drv = pc.n_functions
        calls_from_driver = int((pc.b_func[pc.cs_block] == drv).sum())
        out["instructions_per_top_call"] = float(tot / max(1, calls_from_driver))
        fsel = self.func[sel]
        fsize = np.bincount(fsel, weights=self.size[sel].astype(float), minlength=drv + 1)
        fdyn = np.bincount(fsel, weights=w, minlength=drv + 1)
        out["code_kb"] = float(fsize.sum() / 1024)
        out["code_touched_kb"] = float(fsize[fdyn > 0].sum() / 1024)
        order = np.argsort(-fdyn)
        cum = np.cumsum(fdyn[order]) / max(fdyn.sum(), 1e-300)
        hot = order[: int(np.searchsorted(cum, 0.9)) + 1]
        out["code_hot90_kb"] = float(fsize[hot].sum() / 1024)
        out["functions_touched"] = int((fdyn[:drv] > 0).sum())
        arg = self.arg[sel]
        wm = (w * (mem | adv)).sum()
        out["stream_shares"] = {name: float((w * ((mem | adv) & (arg == j))).sum() / wm) if wm else 0.0
                                for j, name in enumerate(self.streams.names)}
        return out


def _mix_shares(params: PhaseParams) -> np.ndarray:
    m = params.mix
    nonctl = m.load + m.store + m.fp + m.other
    other = m.other
    alu = other * (1.0 - m.mul_share - m.div_share)
    shares = np.array([m.load, m.store, m.fp, alu, other * m.mul_share, other * m.div_share])
    return shares / nonctl if nonctl > 0 else np.array([0, 0, 0, 1.0, 0, 0])


def instruction_key(block_key: np.ndarray, index: np.ndarray) -> np.ndarray:
    """The source draw key of an instruction: its block's key and its number in the block, so that a block
    that grows or shrinks leaves the draws of every other block's instructions alone."""
    return np.asarray(block_key, dtype=np.int64) * (1 << 9) + np.asarray(index, dtype=np.int64)   # MAX_BLOCK < 512


class _Phase:
    """One phase's instructions in phase-local (block) order before layout."""

    def __init__(self, pc: PhaseCode, ell: np.ndarray, w: np.ndarray):
        self.pc, self.ell, self.w = pc, ell, w
        self.start = np.concatenate([[0], np.cumsum(ell)])
        n = int(self.start[-1])
        self.block = np.repeat(np.arange(pc.n_blocks), ell)
        self.func = pc.b_func[self.block]
        self.place = instruction_key(pc.b_key[self.block], np.arange(n) - self.start[self.block])   # draw keys
        self.op = np.zeros(n, np.uint8)
        self.stream = np.full(n, -1, np.int64)
        self.adv = np.zeros(n, bool)
        self.fpdata = np.zeros(n, bool)
        self.term = np.zeros(n, bool)
        self.term[self.start[1:][pc.b_term != T_NONE] - 1] = True


def _fill(pc: PhaseCode, w: np.ndarray, streams: StreamTable, source: SourceDraws) -> _Phase:
    """The phase's instructions: block lengths, operation classes and stream bindings, all the source's."""
    params = pc.params
    ell = block_lengths(pc, w, source)
    ph = _Phase(pc, ell, w)
    slots = np.flatnonzero(~ph.term)

    def deal_key(use: int, at: np.ndarray) -> np.ndarray:
        """The instructions ``at``'s places in the deal of one kind of choice (class, stream, ...)."""
        return source.uniform(SourceDraws.DEAL, ph.place[at], use)

    ph.op[slots] = SLOT_OPS[weighted_classes(w[ph.block[slots]], deal_key(0, slots), _mix_shares(params))]
    ends = ph.start[1:][pc.b_term != T_NONE] - 1
    ph.op[ends] = [TERM_OP[t] for t in pc.b_term[pc.b_term != T_NONE]]
    wi = w[ph.block]
    names = streams.names
    m = params.mix
    phi = m.fp / (m.fp + m.other) if (m.fp + m.other) > 0 else 0.0
    for opc, weights in ((OP_LOAD, params.load_weights), (OP_STORE, params.store_weights)):
        idx = np.flatnonzero(ph.op == opc)
        if not len(idx):
            continue
        sh = np.array([weights.get(nm, 0.0) for nm in names])
        ph.stream[idx] = weighted_classes(wi[idx], deal_key(1, idx), sh)
        if phi > 0:
            ph.fpdata[idx] = weighted_classes(wi[idx], deal_key(2, idx), np.array([1 - phi, phi])) == 1
    for j in np.flatnonzero(streams.kind == S_CHASE):
        loads = np.flatnonzero((ph.op == OP_LOAD) & (ph.stream == j))
        if not len(loads):
            continue
        acc = wi[(ph.stream == j)].sum()
        lw = wi[loads].sum()
        adv_share = min(1.0, acc / (1.0 + streams.fields[j]) / lw) if lw > 0 else 1.0 / (1 + streams.fields[j])
        adv_share = max(adv_share, 1e-9)
        ph.adv[loads] = weighted_classes(wi[loads], deal_key(3, loads), np.array([1 - adv_share, adv_share])) == 1
        ph.fpdata[loads[ph.adv[loads]]] = False
    return ph


def build_program(spec: Workload, isa: IsaSpec, seed: int, name: str = "workload") -> StaticProgram:
    """Generate, calibrate, fill and lay out the static program of ``spec`` for ``isa``.

    The program is the description's: its control structure, trip counts, branch behaviours, block sizes,
    instructions and their dataflow (register dependences) are drawn from ``spec.source_seed``, each
    function's from its own draws (so a description changed a little gives a program changed a little).
    ``seed`` is the binary's: the functions' order in the text, instruction sizes (so every address), the
    data placement (the streams' scatter) and, for JIT code, the code cache's layout."""
    phases = resolve_phases(spec, name)
    codegen = {part: np.random.default_rng(np.random.SeedSequence([int(seed), 0x5EED, k]))
               for k, part in enumerate(CODEGEN)}
    streams = build_streams(spec.streams, codegen["data"])
    filled, sources = [], []
    for p, params in enumerate(phases):
        source = SourceDraws(spec.source_seed, 0x50C, p)
        sources.append(source)
        pc = generate(params, source)
        bound_call_sizes(pc, params.code.max_call_instructions)
        assign_behaviours(pc, source)
        bound_call_sizes(pc, params.code.max_call_instructions)
        calibrate_taken(pc)
        w, _ = block_weights(pc)
        filled.append(_fill(pc, w, streams, source))
    prog = _layout(spec, isa, seed, name, phases, streams, filled, sources, codegen)
    return prog if spec.jit is None else apply_jit(prog, spec.jit, seed)


def _layout(spec, isa, seed, name, phases, streams, filled, sources, codegen) -> StaticProgram:
    funcs = [(p, f) for p, ph in enumerate(filled) for f in range(ph.pc.n_functions + 1)]
    order = codegen["order"].permutation(len(funcs))
    # global start of each (phase, function), in layout order
    gstart: dict[tuple[int, int], int] = {}
    pos = 0
    for i in order:
        p, f = funcs[i]
        ph = filled[p]
        lo = int(ph.start[ph.pc.f_first[f]])
        hi = int(ph.start[ph.pc.f_first[f] + ph.pc.f_count[f]])
        gstart[(p, f)] = pos
        pos += hi - lo
    N = pos
    local2global = []
    for p, ph in enumerate(filled):
        lg = np.empty(len(ph.op), np.int64)
        for f in range(ph.pc.n_functions + 1):
            lo = int(ph.start[ph.pc.f_first[f]])
            hi = int(ph.start[ph.pc.f_first[f] + ph.pc.f_count[f]])
            lg[lo:hi] = np.arange(gstart[(p, f)], gstart[(p, f)] + hi - lo)
        local2global.append(lg)
    g = {k: np.zeros(N, dt) for k, dt in (("op", np.uint8), ("stream", np.int64), ("adv", bool), ("fpdata", bool),
                                          ("phase", np.int64), ("func", np.int64), ("weight", float),
                                          ("fstart", np.int64), ("block", np.int64), ("place", np.int64))}
    for p, ph in enumerate(filled):
        lg = local2global[p]
        g["op"][lg] = ph.op
        g["stream"][lg] = ph.stream
        g["adv"][lg] = ph.adv
        g["fpdata"][lg] = ph.fpdata
        g["phase"][lg] = p
        g["func"][lg] = ph.func
        g["weight"][lg] = ph.w[ph.block]
        g["block"][lg] = ph.block
        g["place"][lg] = ph.place
        fl = ph.start[ph.pc.f_first[ph.func]]
        g["fstart"][lg] = lg[fl]
    # instruction sizes and addresses: functions aligned, instructions contiguous inside a function
    sizes = codegen["sizes"].choice(np.array(isa.sizes, dtype=np.int64), size=N, p=np.array(isa.size_weights) / sum(isa.size_weights))
    pcs = np.zeros(N, np.uint64)
    addr = TEXT_BASE
    starts = np.array(sorted(set(g["fstart"].tolist())) + [N], dtype=np.int64)
    for a, b in zip(starts[:-1], starts[1:]):
        seg = sizes[a:b]
        pcs[a:b] = np.uint64(addr) + np.concatenate([[0], np.cumsum(seg[:-1])]).astype(np.uint64)
        addr = (addr + int(seg.sum()) + FUNC_ALIGN - 1) // FUNC_ALIGN * FUNC_ALIGN
    # walk kinds, targets and arguments
    kind = np.full(N, K.K_PLAIN, np.int64)
    tgt = np.full(N, -1, np.int64)
    arg = np.zeros(N, np.int64)
    arg2 = np.zeros(N, np.int64)
    prob = np.zeros(N)
    prob2 = np.zeros(N)
    off = np.zeros(N, np.int64)
    ic_target, ic_cdf = [], []
    driver_entry = np.array([gstart[(p, ph.pc.n_functions)] for p, ph in enumerate(filled)], np.int64)
    for p, ph in enumerate(filled):
        pc, lg = ph.pc, local2global[p]
        pr = pc.if_probabilities()
        for blk in np.flatnonzero(pc.b_term != T_NONE):
            t = pc.b_term[blk]
            i = lg[ph.start[blk + 1] - 1]
            if pc.b_target[blk] >= 0:
                tgt[i] = lg[ph.start[pc.b_target[blk]]]
            c = pc.b_construct[blk]
            if t == T_IF:
                if pc.c_behaviour[c] == B_PERIODIC:
                    kind[i], arg2[i] = K.K_PERIODIC, pc.c_period[c]
                    bits = pc.pattern_bits(c)
                    arg[i] = bits - (1 << 64) if bits >= (1 << 63) else bits
                else:
                    kind[i], prob[i] = K.K_BERN, pr[c]
            elif t == T_LOOP:
                if pc.c_fixed[c]:
                    kind[i], arg[i] = K.K_LOOP_FIXED, int(pc.c_mu[c])
                else:
                    lo, width = trip_range(pc.c_base[c], pc.params.branches.loop_trip_spread)
                    kind[i], prob[i], prob2[i] = K.K_LOOP_VAR, float(lo), float(width)
            elif t == T_JUMP:
                kind[i] = K.K_JUMP
            elif t == T_RET:
                kind[i] = K.K_RET
            elif t == T_PH_EXIT:
                kind[i] = K.K_PH_EXIT
            elif t == T_PH_CONT:
                kind[i] = K.K_PH_CONT
            elif t == T_PH_SWITCH:
                kind[i] = K.K_PH_SWITCH
                tgt[i] = driver_entry[(p + 1) % len(filled)]
            elif t == T_CALL:
                s = pc.b_call[blk]
                entries = [gstart[(p, int(f))] for f in pc.cs_targets[s]]
                if pc.cs_indirect[s]:
                    kind[i], arg[i], arg2[i] = K.K_ICALL, len(ic_target), len(entries)
                    tgt[i] = entries[0]
                    ic_target.extend(entries)
                    ic_cdf.extend(np.cumsum(pc.cs_probs[s]).tolist())
                    ic_cdf[-1] = 1.0
                else:
                    kind[i], tgt[i] = K.K_CALL, entries[0]
    memi = np.flatnonzero(g["stream"] >= 0)
    kind[memi] = np.where(g["adv"][memi], K.K_ADV, K.K_MEM)
    arg[memi] = g["stream"][memi]
    word = 8 if isa.name != "powerpc32" else 4
    msize = np.zeros(N, np.uint8)
    st = g["stream"][memi]
    unit = streams.unit[st]
    limit = np.where(np.isin(streams.kind[st], (0, 1)), streams.elem[st], unit)
    ms = np.where(g["fpdata"][memi], 8, word)
    ms = np.minimum(ms, 2 ** np.floor(np.log2(np.maximum(limit, 1))).astype(np.int64))
    msize[memi] = ms
    # offsets: chase fields after the next pointer, random accesses anywhere in the block
    chase_field = (streams.kind[st] == S_CHASE) & ~g["adv"][memi]
    rnd = streams.kind[st] == S_RANDOM
    slots = np.maximum(unit // ms, 1)
    # field offsets are the source's (a structure's layout), as is the dataflow below: keyed by place
    place = g["place"]

    def source_uniform(tag: int, at: np.ndarray, *more: int) -> np.ndarray:
        """Each phase's source draws for the instructions ``at``."""
        out = np.empty(len(at))
        for p, source in enumerate(sources):
            sel = g["phase"][at] == p
            out[sel] = source.uniform(tag, place[at[sel]], *more)
        return out

    r = (source_uniform(SourceDraws.OFFSET, memi) * (1 << 30)).astype(np.int64) % slots
    o = np.where(chase_field, np.where(slots > 1, 1 + r % np.maximum(slots - 1, 1), 0) * ms,
                 np.where(rnd, r * ms, 0))
    off[memi] = o
    # registers
    G = isa.gprs
    chase_streams = np.flatnonzero(streams.kind == S_CHASE)
    chase_reg_of = {int(j): G - 3 - q for q, j in enumerate(chase_streams)}
    n_rot = G - 2 - len(chase_streams)
    chase_reg = np.full(N, -1, np.int64)
    for j, reg in chase_reg_of.items():
        chase_reg[g["stream"] == j] = reg
    small = streams.size <= 64 * 1024
    base_reg = np.full(N, G - 2, np.int64)
    base_reg[memi[small[st]]] = G - 1
    cond = np.isin(kind, (K.K_BERN, K.K_PERIODIC, K.K_LOOP_FIXED, K.K_LOOP_VAR))
    icall = kind == K.K_ICALL
    P = len(phases)
    agi_cdf = np.ones((P, 32))
    par = {k: np.zeros(P) for k in ("far", "two", "agi", "partial", "pflags")}
    for p, params in enumerate(phases):
        d = params.dependences
        aw = np.array(d.agi_distance_weights)
        agi_cdf[p, :len(aw)] = np.cumsum(aw) / aw.sum()
        par["far"][p], par["two"][p], par["agi"][p] = d.far, d.two_sources, d.agi
        if isa.partial_registers:
            par["partial"][p], par["pflags"][p] = d.partial_writes, d.partial_flag_writes
    # address-generating dependences only where an ALU op precedes the access in its block; the
    # probability is raised so that the weighted share of such accesses meets dependences.agi
    block_key = g["phase"] * (1 << 32) + g["block"]
    bstart = np.flatnonzero(np.concatenate([[True], block_key[1:] != block_key[:-1]]))
    bstart_of = np.repeat(bstart, np.diff(np.concatenate([bstart, [N]])))
    alu = np.isin(g["op"], (OP_ALU, OP_MUL)).astype(np.int64)
    csum = np.concatenate([[0], np.cumsum(alu)])
    agi_ok = (csum[np.arange(N)] - csum[bstart_of]) > 0
    plain_mem = np.isin(g["op"], (OP_LOAD, OP_STORE)) & (chase_reg < 0)
    for p, params in enumerate(phases):
        sel = plain_mem & (g["phase"] == p)
        wsum = float(g["weight"][sel].sum())
        ok = float(g["weight"][sel & agi_ok].sum()) / wsum if wsum > 0 else 1.0
        par["agi"][p] = min(1.0, params.dependences.agi / ok) if ok > 0 else 0.0
    everything = np.arange(N)
    # the uniforms assign_registers reads (by their draw tags: 5 and 6 drew the producers before the race)
    u = np.stack([source_uniform(SourceDraws.REGISTERS, everything, c) for c in (0, 1, 2, 3, 4, 7, 8, 9)], axis=1)
    race_key = (source_uniform(SourceDraws.REGISTERS, everything, 10) * 2.0 ** 53).astype(np.uint64)

    def assign(weights: np.ndarray, far: np.ndarray) -> tuple:
        cdf = np.cumsum(weights, axis=1)
        cdf /= cdf[:, -1:]
        dst = np.full(N, -1, np.int64)
        src1 = np.full(N, -1, np.int64)
        src2 = np.full(N, -1, np.int64)
        areg = np.full(N, -1, np.int64)
        flags = np.zeros(N, np.uint8)
        assign_registers(g["op"], g["fpdata"], g["fstart"], bstart_of, agi_ok, g["phase"], chase_reg, g["adv"],
                         base_reg, icall, cond, np.ascontiguousarray(cdf), far.astype(float), par["two"],
                         par["agi"], agi_cdf, par["partial"], par["pflags"], n_rot, G, isa.fprs, G - 2, u, race_key,
                         dst, src1, src2, areg, flags)
        return dst, src1, src2, areg, flags

    # walk each phase a while and correct the static distances towards the described dynamic ones
    ic_t, ic_c = np.array(ic_target, np.int64), np.array(ic_cdf, float)
    traces = [depcal.static_trace(kind, tgt, arg, arg2, prob, prob2, off, ic_t, ic_c, streams,
                                  int(driver_entry[p]), depcal.WALK, int(spec.source_seed) * 7919 + p) for p in range(P)]
    targets = [(np.array(ph.dependences.distance_weights), ph.dependences.far) for ph in phases]
    dst, src1, src2, areg, flags = depcal.calibrate(traces, g["op"], targets, assign)
    prog = StaticProgram(
        name=name, isa=isa, seed=int(seed), phases=tuple(phases), streams=streams,
        pc=pcs, op=g["op"], size=sizes.astype(np.uint8), dst=dst.astype(np.int8), src1=src1.astype(np.int8),
        src2=src2.astype(np.int8), areg=areg.astype(np.int8), msize=msize, flags=flags, kind=kind, tgt=tgt,
        arg=arg, arg2=arg2, prob=prob, prob2=prob2, off=off, phase=g["phase"], weight=g["weight"], func=g["func"],
        block=g["block"],
        ic_target=ic_t, ic_cdf=ic_c, driver_entry=driver_entry,
        codes=tuple(ph.pc for ph in filled), chase_regs={streams.names[j]: r for j, r in chase_reg_of.items()})
    return prog


# ------------------------------------------------------------------------------------ cache
_CACHE_SIZE = 8
_CACHE: "LruCache[StaticProgram]" = LruCache(_CACHE_SIZE)


def program_for(spec: Workload, isa: IsaSpec, seed: int, name: str = "workload") -> StaticProgram:
    """``build_program`` with a small in-process cache keyed by the description, ISA and seed."""
    digest = hashlib.sha256(json.dumps(spec.model_dump(), sort_keys=True).encode()).hexdigest()
    key = (name, digest, isa.name, int(seed))
    return _CACHE.get(key, lambda: build_program(spec, isa, seed, name))


def nominal_lengths(spec: Workload, instructions: int | None) -> np.ndarray:
    return np.array(phase_lengths(spec, instructions), dtype=np.int64)
