"""Branch predictors: direction predictors chosen by name, a set-associative BTB, a return stack.

Registry (``PREDICTORS``; the platform file's ``branch_predictor.kind`` names one):

``bimodal``       a table of ``bht_entries`` saturating ``counter_bits`` counters indexed by the
                  branch address (the MPC7447A's 2048-entry 2-bit BHT)
``gshare``        the same table indexed by address XOR the global history of the last
                  ``history_bits`` conditional-branch outcomes (McFarling's gshare; the Xeons, z10)
``tage``          a bimodal base (as ``bimodal``) and ``len(tage_history)`` tagged tables of
                  ``tage_entries`` entries, table i indexed and tagged by the address hashed with
                  the last ``tage_history[i]`` conditional-branch outcomes (Seznec & Michaud's
                  TAGE, below); a branch's state is found by its tag, so branches that share an
                  index do not train each other's counters as they do in gshare
``always_taken``  static prediction: every conditional branch is predicted taken
``perfect``       an oracle (what-if): no direction or target mispredictions, no BTB redirects

Counters start weakly not-taken and predict taken at or above half their range.
The index is the instruction address shifted right by the ISA's instruction
alignment (2 bits for PowerPC, 1 for z/Architecture, none for x86).

TAGE (A. Seznec, P. Michaud, "A case for (partially) TAgged GEometric history length branch
predictors", JILP 8, 2006), as simplified here.  An entry holds a 3-bit counter (taken at 4 and
above), a ``tage_tag_bits`` tag and a 2-bit useful counter.  With a = (address >> alignment) mod 2^62, E =
``tage_entries`` and F(L, w) = XOR over j < L of h_j << (j mod w) (h_0 the newest outcome), table i
is indexed by (a ^ (a >> log2 E) ^ F(L_i, log2 E)) mod E and tagged by (a ^ F(L_i, t) ^ (F(L_i, t - 1)
<< 1)) mod 2^t.  The *provider* is the matching table of longest history, the *alternate* the next
matching one (else the base).  The prediction is the provider's, except that a provider with a weak
counter (3 or 4) and a useful counter of 0 -- most likely just allocated -- defers to the alternate;
with no match it is the base's.  Training: the provider's counter moves toward the outcome (the
base's when nothing matched); when the provider's and the alternate's predictions differed, its
useful counter moves up if the provider was right, down if not.  On a misprediction, the first
table of longer history than the provider's whose entry at its index has a useful counter of 0 is
allocated (tag, weak counter toward the outcome, useful 0); if none has, their useful counters are
decremented.  Every ``tage_reset_period`` conditional branches every useful counter is halved.  The
history register keeps the last max(L_i) + 1 outcomes and F is kept incrementally per table
(Seznec's folded history: shift in the new bit, take out the one leaving the window), so the
tables' history lengths are at most 62.

Targets.  A predicted-taken conditional branch, a jump or a call looks its target
up in the BTB (the 7447A's BTIC): ``btb_entries / btb_associativity`` sets, LRU,
tagged by the full address.  A hit with the right target costs nothing beyond the
taken-transfer fetch bubble; a hit with a wrong target is a target misprediction
(resolved at execute); a miss is a *BTB miss*, redirected at decode.  Every taken
transfer except a return writes its target into the BTB.  Calls push their
return address on a circular return stack of ``ras_entries``; a return pops it and
is a target misprediction when the stack is empty or the address differs.

All predictor state lives in numpy arrays (``PredictorState``); the per-branch
function :func:`predict_control` is inlined into the core timing kernel, and
:func:`run_predictor` runs it alone over a stream (tests, benchmarks).
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

import numpy as np
from numba import njit

from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.isa import OP_BRANCH, OP_CALL, OP_JUMP, OP_RET

U64 = np.uint64
EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)

PREDICTORS = {"bimodal": 0, "gshare": 1, "always_taken": 2, "perfect": 3, "tage": 4}
P_BIMODAL, P_GSHARE, P_ALWAYS_TAKEN, P_PERFECT, P_TAGE = 0, 1, 2, 3, 4

# outcome bits returned by predict_control
OUT_DIR = 1          # conditional branch direction mispredicted
OUT_TGT = 2          # predicted target wrong (BTB hit with a stale target, or return stack)
OUT_BTB_MISS = 4     # BTB looked up and missed
OUT_BTB_LOOKUP = 8   # BTB looked up
OUT_RAS_MISS = 16    # return mispredicted by the return stack
OUT_MISPREDICT = OUT_DIR | OUT_TGT

# scalars of the predictor state (BP array)
BP_GHIST, BP_RAS_TOP, BP_RAS_COUNT, BP_BTB_CLOCK = range(4)
# TAGE's geometry (set once) and running words, after those: tables, log2 entries, tag bits, conditional
# branches since the last halving of the useful counters, the halving period, and per table (at most
# TAGE_MAX_TABLES) its history length, its three folded histories (index, tag, tag shifted) and where the
# outcome leaving the history leaves each of them (length mod width: set once, as a division per fold and
# branch cost more than the rest of the fold)
TAGE_MAX_TABLES = 8
BP_T_N, BP_T_LOGE, BP_T_TAGBITS, BP_T_COUNT, BP_T_PERIOD = range(4, 9)
BP_T_LEN = 9
BP_T_FI = BP_T_LEN + TAGE_MAX_TABLES
BP_T_FT1 = BP_T_FI + TAGE_MAX_TABLES
BP_T_FT2 = BP_T_FT1 + TAGE_MAX_TABLES
BP_T_OI = BP_T_FT2 + TAGE_MAX_TABLES
BP_T_OT1 = BP_T_OI + TAGE_MAX_TABLES
BP_T_OT2 = BP_T_OT1 + TAGE_MAX_TABLES
NBP_TAGE = BP_T_OT2 + TAGE_MAX_TABLES
# a tagged table's bytes in the BHT array, after the base's: counters, useful counters, tags + 1 (two bytes
# each, little-endian; 0 = empty)
T_CTR, T_U, T_TAG = 0, 1, 2

# btb: one row per way, [tag, target, LRU stamp], the ways of a set adjacent (one or two host cache lines)
PredictorState = namedtuple("PredictorState", ["bht", "btb", "ras", "bp"])
B_TAG, B_TGT, B_STAMP = 0, 1, 2


def predictor_id(name: str, where: str = "branch_predictor.kind") -> int:
    try:
        return PREDICTORS[name]
    except KeyError:
        raise SimulatorInputError(f"{where}: unknown branch predictor {name!r}; known: "
                                  f"{', '.join(sorted(PREDICTORS))}") from None


@dataclass(frozen=True)
class PredictorConfig:
    """Sizes of one predictor, from a platform's ``[branch_predictor]`` table."""
    kind: int
    bht_entries: int
    counter_bits: int
    history_bits: int
    btb_sets: int
    btb_ways: int
    ras_entries: int
    pc_shift: int
    tage_entries: int
    tage_tag_bits: int
    tage_history: tuple[int, ...]
    tage_reset_period: int

    @classmethod
    def from_platform(cls, platform, kind: str | None = None) -> "PredictorConfig":
        bp = platform.branch_predictor
        sizes = {"powerpc32": 2, "z/Architecture": 1}
        return cls(kind=predictor_id(kind or bp.kind), bht_entries=bp.bht_entries, counter_bits=bp.counter_bits,
                   history_bits=bp.history_bits, btb_sets=bp.btb_entries // bp.btb_associativity,
                   btb_ways=bp.btb_associativity, ras_entries=bp.ras_entries, pc_shift=sizes.get(platform.isa, 0),
                   tage_entries=bp.tage_entries, tage_tag_bits=bp.tage_tag_bits,
                   tage_history=tuple(bp.tage_history), tage_reset_period=bp.tage_reset_period)

    @property
    def ctr_max(self) -> int:
        return (1 << self.counter_bits) - 1

    @property
    def ctr_thresh(self) -> int:
        return 1 << (self.counter_bits - 1)

    @property
    def hist_mask(self) -> int:
        """The global history register's mask: history_bits outcomes (gshare), or for TAGE the longest
        history and the outcome leaving it."""
        if self.kind == P_TAGE:
            return (1 << (max(self.tage_history) + 1)) - 1
        return (1 << self.history_bits) - 1

    def new_state(self) -> PredictorState:
        n = self.btb_sets * self.btb_ways
        btb = np.zeros((n, 3), dtype=np.uint64)
        btb[:, B_TAG] = EMPTY
        tagged = 4 * self.tage_entries * len(self.tage_history) if self.kind == P_TAGE else 0
        bht = np.zeros(self.bht_entries + tagged, dtype=np.uint8)
        bht[:self.bht_entries] = self.ctr_thresh - 1
        bp = np.zeros(NBP_TAGE if self.kind == P_TAGE else 4, dtype=np.int64)
        if self.kind == P_TAGE:
            n_tables, loge = len(self.tage_history), self.tage_entries.bit_length() - 1
            bp[BP_T_N], bp[BP_T_LOGE] = n_tables, loge
            bp[BP_T_TAGBITS], bp[BP_T_PERIOD] = self.tage_tag_bits, self.tage_reset_period
            bp[BP_T_LEN:BP_T_LEN + n_tables] = self.tage_history
            for i, length in enumerate(self.tage_history):
                bp[BP_T_OI + i] = length % loge
                bp[BP_T_OT1 + i] = length % self.tage_tag_bits
                bp[BP_T_OT2 + i] = length % (self.tage_tag_bits - 1)
        return PredictorState(bht=bht, btb=btb, ras=np.zeros(self.ras_entries, dtype=np.uint64), bp=bp)

    def scalars(self) -> tuple[int, ...]:
        """The configuration as predict_control takes it."""
        return (self.kind, self.pc_shift, self.bht_entries - 1, self.ctr_max, self.ctr_thresh, self.hist_mask,
                self.btb_sets, self.btb_ways, self.ras_entries)


# ============================================================================ kernels
@njit(cache=True, inline="always")
def _btb_find(btb, pc, shift, sets, ways):
    """(first row of pc's set, way holding pc or -1)."""
    base = np.int64((pc >> U64(shift)) & U64(sets - 1)) * ways
    found = -1
    for w in range(ways):
        if btb[U64(base + w), B_TAG] == pc:
            found = w
    return base, found


@njit(cache=True, inline="always")
def _btb_write(btb, bp, base, way, pc, target, ways):
    """Write ``target`` for ``pc`` into ``way`` of the set at ``base`` (-1: an empty way, else the LRU way)."""
    victim = way
    if victim < 0:
        for w in range(ways):
            if btb[U64(base + w), B_TAG] == EMPTY:
                victim = w
                break
    if victim < 0:
        victim = 0
        for w in range(1, ways):
            if btb[U64(base + w), B_STAMP] < btb[U64(base + victim), B_STAMP]:
                victim = w
    bp[BP_BTB_CLOCK] += 1
    btb[U64(base + victim), B_TAG] = pc
    btb[U64(base + victim), B_TGT] = target
    btb[U64(base + victim), B_STAMP] = U64(bp[BP_BTB_CLOCK])


@njit(cache=True, inline="always")
def _tage(a, taken, bht, bp, bht_mask, ctr_thresh, ctr_max, hist_mask):
    """TAGE's prediction for the conditional branch at (aligned) address ``a``, trained on ``taken``
    (module docstring).  Inlined: called as a function from the core's kernel it cost a TAGE run a third
    of its speed (445.gobmk on Nehalem, an experimental build: 9.1 M instructions/s against 15.5 with gshare
    in the same process; the first inlined build 14.3 against 15.7)."""
    n = bp[BP_T_N]
    loge = bp[BP_T_LOGE]
    tbits = bp[BP_T_TAGBITS]
    emask = (1 << loge) - 1
    tmask = (1 << tbits) - 1
    tsize = 4 << loge
    base = bht_mask + 1
    ai = np.int64(a & U64(0x3FFFFFFFFFFFFFFF))
    prov, alt, p_at, a_at = -1, -1, 0, 0
    for i in range(n - 1, -1, -1):
        k = (ai ^ (ai >> loge) ^ bp[BP_T_FI + i]) & emask
        tag = (ai ^ bp[BP_T_FT1 + i] ^ (bp[BP_T_FT2 + i] << 1)) & tmask
        at = base + i * tsize
        t2 = at + (T_TAG << loge) + 2 * k
        if np.int64(bht[U64(t2)]) | (np.int64(bht[U64(t2 + 1)]) << 8) == tag + 1:
            if prov < 0:
                prov, p_at = i, at + k
            else:
                alt, a_at = i, at + k
                break
    b_idx = ai & bht_mask
    b_ctr = np.int64(bht[U64(b_idx)])
    altpred = (1 if bht[U64(a_at)] >= 4 else 0) if alt >= 0 else (1 if b_ctr >= ctr_thresh else 0)
    if prov >= 0:
        ctr = np.int64(bht[U64(p_at)])
        u_at = p_at + (T_U << loge)
        u = np.int64(bht[U64(u_at)])
        provpred = 1 if ctr >= 4 else 0
        pred = altpred if (ctr == 3 or ctr == 4) and u == 0 else provpred
        if provpred != altpred:
            if provpred == taken:
                if u < 3:
                    bht[U64(u_at)] = u + 1
            elif u > 0:
                bht[U64(u_at)] = u - 1
        _step(bht, p_at, ctr, taken, 7)
    else:
        pred = 1 if b_ctr >= ctr_thresh else 0
        _step(bht, b_idx, b_ctr, taken, ctr_max)
    if pred != taken and prov < n - 1:
        # allocate in the first longer-history table whose entry is not useful; else age them all
        found = False
        for j in range(prov + 1, n):
            k = (ai ^ (ai >> loge) ^ bp[BP_T_FI + j]) & emask
            at = base + j * tsize
            if bht[U64(at + (T_U << loge) + k)] == 0:
                tag = ((ai ^ bp[BP_T_FT1 + j] ^ (bp[BP_T_FT2 + j] << 1)) & tmask) + 1
                t2 = at + (T_TAG << loge) + 2 * k
                bht[U64(t2)] = tag & 0xFF
                bht[U64(t2 + 1)] = tag >> 8
                bht[U64(at + k)] = 4 if taken else 3
                found = True
                break
        if not found:
            for j in range(prov + 1, n):
                k = (ai ^ (ai >> loge) ^ bp[BP_T_FI + j]) & emask
                u_at = base + j * tsize + (T_U << loge) + k
                if bht[U64(u_at)] > 0:
                    bht[U64(u_at)] -= 1
    bp[BP_T_COUNT] += 1
    if bp[BP_T_COUNT] == bp[BP_T_PERIOD]:
        bp[BP_T_COUNT] = 0
        for j in range(n):
            u0 = base + j * tsize + (T_U << loge)
            for k in range(1 << loge):
                bht[U64(u0 + k)] >>= 1
    h = ((bp[BP_GHIST] << 1) | taken) & hist_mask
    bp[BP_GHIST] = h
    for i in range(n):
        leaving = (h >> bp[BP_T_LEN + i]) & 1
        bp[BP_T_FI + i] = _fold(bp[BP_T_FI + i], taken, leaving, bp[BP_T_OI + i], loge)
        bp[BP_T_FT1 + i] = _fold(bp[BP_T_FT1 + i], taken, leaving, bp[BP_T_OT1 + i], tbits)
        bp[BP_T_FT2 + i] = _fold(bp[BP_T_FT2 + i], taken, leaving, bp[BP_T_OT2 + i], tbits - 1)
    return pred


@njit(cache=True, inline="always")
def _step(bht, at, ctr, taken, top):
    """Move the saturating counter ``ctr`` (0..top), stored at ``bht[at]``, one step toward ``taken``."""
    if taken:
        if ctr < top:
            bht[U64(at)] = ctr + 1
    elif ctr > 0:
        bht[U64(at)] = ctr - 1


@njit(cache=True, inline="always")
def _fold(f, entering, leaving, out_point, w):
    """F(length, w) after one more outcome: every bit's position mod w moves up by one (a rotation of the
    w-bit word), the new outcome enters at 0 and the one now ``length`` back leaves from ``out_point`` =
    length mod w."""
    f = (f << 1) | entering
    f ^= leaving << out_point
    f ^= f >> w
    return f & ((1 << w) - 1)


@njit(cache=True, inline="always")
def predict_control(op, pc, size, taken, target, kind, shift, bht_mask, ctr_max, ctr_thresh, hist_mask,
                    btb_sets, btb_ways, ras_n, bht, btb, ras, bp, tage):
    """Predict the control transfer ``op`` at ``pc`` at fetch, train on its outcome, return OUT_* bits.

    ``tage`` is true exactly when ``kind`` is TAGE.  The kernels that inline this take it as an argument
    left out (numba's omitted default, a constant) unless the predictor is TAGE, so the code of the other
    predictors is compiled without TAGE's branch: with it, compiled in for every predictor, the core's
    kernel ran 21 more host instructions per simulated instruction on gshare (623.9 against 602.9,
    ``bench_core_ir.py --functions``, the program stream)."""
    if kind == P_PERFECT:
        return 0
    out = 0
    if op == OP_BRANCH:
        if kind == P_ALWAYS_TAKEN:
            pred = 1
        elif tage:
            pred = _tage(pc >> U64(shift), taken, bht, bp, bht_mask, ctr_thresh, ctr_max, hist_mask)
        else:
            h = bp[BP_GHIST] if kind == P_GSHARE else 0
            idx = np.int64(((pc >> U64(shift)) ^ U64(h)) & U64(bht_mask))
            ctr = np.int64(bht[U64(idx)])
            pred = 1 if ctr >= ctr_thresh else 0
            _step(bht, idx, ctr, taken, ctr_max)
            if kind == P_GSHARE:
                bp[BP_GHIST] = ((bp[BP_GHIST] << 1) | taken) & hist_mask
        if pred != taken:
            out |= OUT_DIR
        if pred or taken:
            base, way = _btb_find(btb, pc, shift, btb_sets, btb_ways)
            if pred:
                out |= OUT_BTB_LOOKUP
                if way < 0:
                    out |= OUT_BTB_MISS
                else:
                    # a lookup hit makes the way the most recently used
                    bp[BP_BTB_CLOCK] += 1
                    btb[U64(base + way), B_STAMP] = U64(bp[BP_BTB_CLOCK])
                    if taken and btb[U64(base + way), B_TGT] != target:
                        out |= OUT_TGT
            if taken:
                _btb_write(btb, bp, base, way, pc, target, btb_ways)
    elif op == OP_RET:
        if bp[BP_RAS_COUNT] == 0:
            out |= OUT_TGT | OUT_RAS_MISS
        else:
            top = bp[BP_RAS_TOP]
            if ras[U64(top)] != target:
                out |= OUT_TGT | OUT_RAS_MISS
            bp[BP_RAS_TOP] = top - 1 if top > 0 else ras_n - 1
            bp[BP_RAS_COUNT] -= 1
    elif op == OP_JUMP or op == OP_CALL:
        out |= OUT_BTB_LOOKUP
        base, way = _btb_find(btb, pc, shift, btb_sets, btb_ways)
        if way < 0:
            out |= OUT_BTB_MISS
        elif btb[U64(base + way), B_TGT] != target:
            out |= OUT_TGT
        _btb_write(btb, bp, base, way, pc, target, btb_ways)
        if op == OP_CALL:
            top = bp[BP_RAS_TOP] + 1
            if top == ras_n:
                top = 0
            ras[U64(top)] = pc + U64(size)
            bp[BP_RAS_TOP] = top
            if bp[BP_RAS_COUNT] < ras_n:
                bp[BP_RAS_COUNT] += 1
    return out


@njit(cache=True)
def _run_predictor(pc, op, size, taken, target, cfg, bht, btb, ras, bp, out):
    kind, shift, bht_mask, ctr_max, ctr_thresh, hist_mask, sets, ways, ras_n = cfg
    tage = kind == P_TAGE
    for i in range(len(pc)):
        o = np.int64(op[i])
        if o == OP_BRANCH or o == OP_JUMP or o == OP_CALL or o == OP_RET:
            out[i] = predict_control(o, pc[i], np.int64(size[i]), np.int64(taken[i]), target[i], kind, shift,
                                     bht_mask, ctr_max, ctr_thresh, hist_mask, sets, ways, ras_n,
                                     bht, btb, ras, bp, tage)


def run_predictor(config: PredictorConfig, state: PredictorState, block) -> np.ndarray:
    """Predict every control transfer of ``block`` (an InstrBlock) in order; OUT_* bits per instruction."""
    out = np.zeros(len(block), dtype=np.int64)
    _run_predictor(block.pc, block.op, block.size, block.taken, block.target, config.scalars(), *state, out)
    return out
