"""Filling the block structure with instructions: block lengths, operation classes, streams, registers.

Calibration uses the expected block weights of :func:`simulator.synth.structure.block_weights`:

* block lengths are scaled so that the expected share of control transfers is ``mix.branch``;
* operation classes and stream bindings are dealt by weight (:func:`weighted_classes`: heaviest tier
  first, each tier by a systematic deal over what the heavier ones left short), so that the expected
  dynamic mix and stream shares match the description even when one hot loop dominates, and a
  description changed a little re-deals few instructions;
* registers are chosen by a sequential pass over the static code: each source reads the
  destination of the instruction a drawn distance earlier (destinations rotate through the
  register file, so that value is still live), loads and stores of chase streams use the
  stream's own pointer register, address-generating dependences take the base from a recent
  ALU op, and partial-register writes are followed by a full read.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from whatif.jitcache import drop_stale_caches
from whatif.simulator.isa import FLAG_FLAGS_PARTIAL, FLAG_PARTIAL_WRITE, OP_ALU, OP_BRANCH, OP_CALL, OP_DIV, OP_FP, \
    OP_LOAD, OP_MUL, OP_STORE
from whatif.simulator.synth import streams as streams_module
from whatif.simulator.synth.streams import M1, mix64, to_unit
from whatif.simulator.synth.structure import (T_IF, T_LOOP, T_NONE, PhaseCode, SourceDraws, block_weights,
                                              expected_trips)

MAX_BLOCK = 400
U64 = np.uint64
SLOT_OPS = np.array([OP_LOAD, OP_STORE, OP_FP, OP_ALU, OP_MUL, OP_DIV], dtype=np.uint8)


def block_lengths(pc: PhaseCode, w: np.ndarray, source: SourceDraws) -> np.ndarray:
    """Instructions per block (terminator included) such that sum(w * terminators) / sum(w * length)
    meets ``mix.branch``.  Driver blocks are single control instructions."""
    b = pc.params.mix.branch
    t = (pc.b_term != T_NONE).astype(np.int64)
    drv = pc.b_func == pc.driver
    # relative sizes gamma(2, 1/2): half the sum of two unit exponentials, keyed by block
    g = -0.5 * (np.log1p(-source.uniform(SourceDraws.BLOCK, pc.b_key, 0))
                + np.log1p(-source.uniform(SourceDraws.BLOCK, pc.b_key, 1)))
    target = float((w * t).sum()) / b
    # lengths t + s g, dithered to integers by a fixed uniform per block, with s from the weighted sums in
    # closed form: a description changed a little moves s a little and re-rounds only the blocks whose
    # s g crossed their dither (a bisection over the rounded lengths could jump between far-apart s with
    # equal weighted sums, and change every cold block's length for a 1e-5 change of a branch bias)
    wg = float((w * g).sum())
    s = max(0.0, (target - float((w * t).sum())) / wg) if wg > 0 else 0.0
    dither = source.uniform(SourceDraws.BLOCK, pc.b_key, 2)
    ell = np.clip(t + np.floor(s * g + dither).astype(np.int64), 1, MAX_BLOCK)
    ell[drv] = 1
    # rounding leaves a residual dominated by the hottest blocks: correct it there
    resid = target - float((w * ell).sum())
    order = np.argsort(-w, kind="stable")
    for i in order:
        if w[i] <= 0 or abs(resid) <= 1e-3 * target or drv[i]:
            if w[i] <= 0:
                break
            continue
        lo_d, hi_d = max(1, t[i]) - ell[i], MAX_BLOCK - ell[i]
        # (the residual is clipped to what the block can absorb before the division: resid / w overflows
        # for a block of negligible weight)
        delta = int(np.clip(np.rint(np.clip(resid, lo_d * w[i], hi_d * w[i]) / w[i]), lo_d, hi_d))
        ell[i] += delta
        resid -= delta * w[i]
    return ell


MAX_TIER = 40           # items lighter than 2**-40 of the total are dealt together


def systematic_deal(weights: np.ndarray, key: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """The items laid end to end along [0, 1) in the order of ``key``, each taking its share of the total
    weight; an item gets the class whose stretch of the cumulative ``shares`` holds its midpoint.  The
    layout does not depend on the shares, so moving a share by d re-deals only the items within d of a
    boundary."""
    bounds = np.cumsum(shares / shares.sum())
    bounds[bounds >= bounds[-1] - 1e-12] = np.inf        # rounding must not hand the end to a class of share 0
    order = np.argsort(key, kind="stable")
    cum = np.cumsum(weights[order])
    out = np.empty(len(weights), dtype=np.int64)
    out[order] = np.searchsorted(bounds, (cum - 0.5 * weights[order]) / cum[-1], side="right")
    return out


def weighted_classes(weights: np.ndarray, key: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """Classes for items of the given (expected dynamic) weights, so that each class's weighted share is
    ``shares``: the items are dealt in tiers of weight (within a factor of two), heaviest first, each tier
    by :func:`systematic_deal` over what the heavier tiers left each class short of its share.  No class
    ends more than one item over its share, and the lighter tiers make up what the heavy items left short;
    a share or a weight moved a little re-deals only the items near a boundary of some tier (the quota
    rule this replaces, item by item, cascaded: a 1 % change re-dealt a fifth of them).  An item heavier
    than twice its class's whole share is dealt again, heaviest first, to the class that then lacks the
    most: the deal's rounding would otherwise bind a hot loop's load to a rare stream (458.sjeng's hash
    loads realised 19 times their share, 445.gobmk's 8.8 times).  ``key`` is a
    fixed uniform per item.  Unreached items (weight 0) are dealt by the static shares."""
    shares = np.asarray(shares, dtype=float)
    shares = shares / shares.sum()
    weights = np.asarray(weights, dtype=float)
    out = np.empty(len(weights), dtype=np.int64)
    cold = np.flatnonzero(weights <= 0)
    if len(cold):
        out[cold] = systematic_deal(np.ones(len(cold)), key[cold], shares)
    hot = np.flatnonzero(weights > 0)
    if not len(hot):
        return out
    w = weights[hot]
    total = float(w.sum())
    tier = np.minimum(np.floor(np.log2(total) - np.log2(w)), MAX_TIER).astype(np.int64)
    got = np.zeros(len(shares))
    dealt = 0.0
    for t in np.unique(tier):
        sel = np.flatnonzero(tier == t)
        ws = w[sel]
        dealt += float(ws.sum())
        short = np.maximum(shares * dealt - got, 0.0)
        lacking = short.sum() > 0
        cls = systematic_deal(ws, key[hot[sel]], short if lacking else shares)
        over = ws > 2.0 * shares[cls] * total
        if lacking and over.any():
            # heavy items too big for the class the rounding gave them go where most is still lacking
            rest = short - np.bincount(cls[~over], weights=ws[~over], minlength=len(shares))
            for i in np.flatnonzero(over)[np.argsort(-ws[over], kind="stable")]:
                c = int(np.argmax(rest))
                cls[i] = c
                rest[c] -= ws[i]
        out[hot[sel]] = cls
        got += np.bincount(cls, weights=ws, minlength=len(shares))
    return out


# ------------------------------------------------------------------------------------ registers
@njit(cache=True)
def _draw(cdf, u):
    for i in range(len(cdf)):
        if u < cdf[i]:
            return i + 1
    return len(cdf)


@njit(cache=True)
def _producer(k, cdf, key, cls, fstart, dst, dcls, lastw):
    """A live register of class ``cls`` (0 integer, 1 floating point) written ``d`` instructions
    before ``k``, with ``d`` drawn from the distance distribution ``cdf`` restricted to the
    distances that have such a producer (in the same function); -1 when none has.

    The draw is a race (Efraimidis and Spirakis): each candidate distance ``d`` gets a keyed uniform
    ``v_d`` (of ``key`` and ``d``) and the largest ``v_d ** (1 / p_d)`` wins, which picks ``d`` with
    probability proportional to ``p_d``.  An inverse-CDF draw moves every boundary when one weight moves;
    a race keeps its winner unless the weights move enough to reorder the leaders, so a calibration
    that moves the distance weights a little re-draws few producers."""
    m = len(cdf)
    prev = 0.0
    best = -np.inf
    reg = -1
    for d in range(1, m + 1):
        p = cdf[d - 1] - prev
        prev = cdf[d - 1]
        j = k - d
        if p > 0.0 and j >= fstart and dcls[j] == cls and lastw[dst[j]] == j:
            v = to_unit(mix64(key + U64(d) * M1))
            score = np.log(v if v > 0.0 else 1e-300) / p
            if score > best:
                best = score
                reg = dst[j]
    return reg


@njit(cache=True)
def _agi_base(k, d, fstart, op, dst, dcls, lastw, window):
    lo = k - window
    if lo < fstart:
        lo = fstart
    j = k - d
    while j >= lo:
        if (op[j] == OP_ALU or op[j] == OP_MUL) and dcls[j] == 0 and lastw[dst[j]] == j:
            return dst[j]
        j -= 1
    j = k - d + 1
    while j < k:
        if (op[j] == OP_ALU or op[j] == OP_MUL) and dcls[j] == 0 and lastw[dst[j]] == j:
            return dst[j]
        j += 1
    return -1


@njit(cache=True)
def assign_registers(op, fpdata, fstart, bstart, agi_ok, phase, chase_reg, advance, base_reg, icall, cond,
                     dist_cdf, far, two, agi, agi_cdf, partial, partial_flags,
                     n_int_rot, fp0, n_fp, gp, u, race_key,
                     dst, src1, src2, areg, flags):
    """Sequential register assignment over the static code (see the module docstring).

    Per instruction: ``fpdata`` (load: FP destination; store: FP data), ``fstart`` / ``bstart``
    (first instruction of its function / basic block), ``agi_ok`` (an ALU op precedes it in its
    block, so an address-generating dependence holds dynamically too), ``phase``, ``chase_reg`` (-1 or the chase stream's pointer
    register), ``advance`` (chase advance load), ``base_reg`` (long-lived base register),
    ``icall`` (indirect call), ``cond`` (conditional branch with a data source), ``u`` (uniforms,
    8 per instruction), ``race_key`` (the producer races' key, see :func:`_producer`).  Per phase: the parameter rows.  Output arrays are filled in place."""
    n = len(op)
    nregs = fp0 + n_fp
    lastw = np.full(nregs, -(1 << 40), dtype=np.int64)
    dcls = np.full(n, -1, dtype=np.int64)
    int_next = 0
    fp_next = 0
    pend_reg = -1
    pend_pos = -1
    for k in range(n):
        o = op[k]
        ph = phase[k]
        fs = fstart[k]
        uu = u[k]
        if k == fs:
            # each function is allocated on its own, so its registers do not depend on the layout
            int_next = 0
            fp_next = 0
            pend_reg = -1
        # ---- sources
        need_int = 0
        need_fp = 0
        if o == OP_ALU or o == OP_MUL or o == OP_DIV:
            need_int = 2 if uu[0] < two[ph] else 1
        elif o == OP_FP:
            need_fp = 2 if uu[0] < two[ph] else 1
        elif o == OP_STORE:
            if fpdata[k]:
                need_fp = 1
            else:
                need_int = 1
        elif (o == OP_BRANCH and cond[k]) or (o == OP_CALL and icall[k]):
            need_int = 1
        srcs = [-1, -1]
        ns = 0
        if o == OP_LOAD or o == OP_STORE:
            if chase_reg[k] >= 0:
                a = chase_reg[k]
            else:
                a = -1
                if agi_ok[k] and uu[1] < agi[ph]:
                    # the base comes from an ALU op of the same basic block (static order = dynamic order)
                    d = _draw(agi_cdf[ph], uu[2])
                    a = _agi_base(k, d, bstart[k], op, dst, dcls, lastw, k - bstart[k])
                if a < 0:
                    a = base_reg[k]
            areg[k] = a
            srcs[0] = a
            ns = 1
        for r in range(need_int + need_fp):
            cls = 1 if need_fp > 0 else 0
            reg = -1
            if cls == 0 and pend_reg >= 0 and k - pend_pos <= 3 and lastw[pend_reg] == pend_pos:
                reg = pend_reg          # the full read after a partial write
                pend_reg = -1
            elif uu[3 + r] >= far[ph]:
                reg = _producer(k, dist_cdf[ph], race_key[k] + U64(64 * (r + 1)) * M1, cls, fs, dst, dcls, lastw)
            if reg < 0:
                if cls == 1:
                    reg = fp0 + fp_next          # least recently written FP register
                elif uu[5] < 0.5:
                    reg = gp
                else:
                    reg = int_next               # least recently written rotating register
            srcs[ns] = reg
            ns += 1
        src1[k] = srcs[0]
        src2[k] = srcs[1]
        # ---- destination
        d_reg = -1
        if o == OP_ALU or o == OP_MUL or o == OP_DIV or (o == OP_LOAD and not fpdata[k]):
            if o == OP_LOAD and advance[k]:
                d_reg = chase_reg[k]
            else:
                d_reg = int_next
                int_next = (int_next + 1) % n_int_rot
            dcls[k] = 0
            if partial[ph] > 0 and uu[6] < partial[ph] and not advance[k]:
                flags[k] |= FLAG_PARTIAL_WRITE
                pend_reg = d_reg
                pend_pos = k
        elif o == OP_FP or (o == OP_LOAD and fpdata[k]):
            d_reg = fp0 + fp_next
            fp_next = (fp_next + 1) % n_fp
            dcls[k] = 1
        if o == OP_ALU and k + 1 < n and cond[k + 1] and partial_flags[ph] > 0 and uu[7] < partial_flags[ph]:
            flags[k] |= FLAG_FLAGS_PARTIAL
        if d_reg >= 0:
            dst[k] = d_reg
            lastw[d_reg] = k


def assign_behaviours(pc: PhaseCode, source: SourceDraws) -> None:
    """Re-deal the branch behaviours by dynamic weight: forward branches get biased / periodic /
    random, loops fixed / variable trip counts, by :func:`weighted_classes`, so that the requested
    shares hold for executed branches, not just for static ones."""
    br = pc.params.branches
    w, _ = block_weights(pc)
    heads = np.flatnonzero(pc.b_term == T_IF)
    if len(heads):
        cons = pc.b_construct[heads]
        shares = np.array([br.biased, br.periodic, br.random])
        pc.c_behaviour[cons] = weighted_classes(w[heads], source.uniform(SourceDraws.DEAL, pc.c_key[cons]), shares)
    backs = np.flatnonzero(pc.b_term == T_LOOP)
    if len(backs) and 0.0 < br.fixed_trip_loops < 1.0:
        cons = pc.b_construct[backs]
        fixed = weighted_classes(w[backs], source.uniform(SourceDraws.DEAL, pc.c_key[cons]),
                                 np.array([1 - br.fixed_trip_loops, br.fixed_trip_loops])) == 1
        pc.c_fixed[cons] = fixed
        base = pc.c_base[cons]
        pc.c_base[cons] = np.where(fixed, np.maximum(1.0, np.rint(base)), base)
        pc.c_mu[cons] = np.where(fixed, pc.c_base[cons], expected_trips(pc.c_base[cons], br.loop_trip_spread))


# the walker's and the register draws' kernels inline the splitmix64 helpers of streams.py: an edit there
# must drop their cached machine code too
drop_stale_caches("synth_assign", (streams_module, sys.modules[__name__]))
