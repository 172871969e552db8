"""Branch predictors: direction predictors chosen by name, a set-associative BTB, a return stack.

Registry (``PREDICTORS``; the platform file's ``branch_predictor.kind`` names one):

``bimodal``       a table of ``bht_entries`` saturating ``counter_bits`` counters indexed by the
                  branch address (the MPC7447A's 2048-entry 2-bit BHT)
``gshare``        the same table indexed by address XOR the global history of the last
                  ``history_bits`` conditional-branch outcomes (McFarling's gshare; the Xeons, z10)
``always_taken``  static prediction: every conditional branch is predicted taken
``perfect``       an oracle (what-if): no direction or target mispredictions, no BTB redirects

Counters start weakly not-taken and predict taken at or above half their range.
The index is the instruction address shifted right by the ISA's instruction
alignment (2 bits for PowerPC, 1 for z/Architecture, none for x86).

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

PREDICTORS = {"bimodal": 0, "gshare": 1, "always_taken": 2, "perfect": 3}
P_BIMODAL, P_GSHARE, P_ALWAYS_TAKEN, P_PERFECT = 0, 1, 2, 3

# outcome bits returned by predict_control
OUT_DIR = 1          # conditional branch direction mispredicted
OUT_TGT = 2          # predicted target wrong (BTB hit with a stale target, or return stack)
OUT_BTB_MISS = 4     # BTB looked up and missed
OUT_BTB_LOOKUP = 8   # BTB looked up
OUT_RAS_MISS = 16    # return mispredicted by the return stack
OUT_MISPREDICT = OUT_DIR | OUT_TGT

# scalars of the predictor state (BP array)
BP_GHIST, BP_RAS_TOP, BP_RAS_COUNT, BP_BTB_CLOCK = range(4)

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

    @classmethod
    def from_platform(cls, platform, kind: str | None = None) -> "PredictorConfig":
        bp = platform.branch_predictor
        sizes = {"powerpc32": 2, "z/Architecture": 1}
        return cls(kind=predictor_id(kind or bp.kind), bht_entries=bp.bht_entries, counter_bits=bp.counter_bits,
                   history_bits=bp.history_bits, btb_sets=bp.btb_entries // bp.btb_associativity,
                   btb_ways=bp.btb_associativity, ras_entries=bp.ras_entries, pc_shift=sizes.get(platform.isa, 0))

    @property
    def ctr_max(self) -> int:
        return (1 << self.counter_bits) - 1

    @property
    def ctr_thresh(self) -> int:
        return 1 << (self.counter_bits - 1)

    @property
    def hist_mask(self) -> int:
        return (1 << self.history_bits) - 1

    def new_state(self) -> PredictorState:
        n = self.btb_sets * self.btb_ways
        btb = np.zeros((n, 3), dtype=np.uint64)
        btb[:, B_TAG] = EMPTY
        return PredictorState(bht=np.full(self.bht_entries, self.ctr_thresh - 1, dtype=np.uint8), btb=btb,
                              ras=np.zeros(self.ras_entries, dtype=np.uint64), bp=np.zeros(4, dtype=np.int64))

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
def predict_control(op, pc, size, taken, target, kind, shift, bht_mask, ctr_max, ctr_thresh, hist_mask,
                    btb_sets, btb_ways, ras_n, bht, btb, ras, bp):
    """Predict the control transfer ``op`` at ``pc`` at fetch, train on its outcome, return OUT_* bits."""
    if kind == P_PERFECT:
        return 0
    out = 0
    if op == OP_BRANCH:
        if kind == P_ALWAYS_TAKEN:
            pred = 1
        else:
            h = bp[BP_GHIST] if kind == P_GSHARE else 0
            idx = np.int64(((pc >> U64(shift)) ^ U64(h)) & U64(bht_mask))
            ctr = np.int64(bht[U64(idx)])
            pred = 1 if ctr >= ctr_thresh else 0
            if taken:
                if ctr < ctr_max:
                    bht[U64(idx)] = ctr + 1
            elif ctr > 0:
                bht[U64(idx)] = ctr - 1
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
    for i in range(len(pc)):
        o = np.int64(op[i])
        if o == OP_BRANCH or o == OP_JUMP or o == OP_CALL or o == OP_RET:
            out[i] = predict_control(o, pc[i], np.int64(size[i]), np.int64(taken[i]), target[i], kind, shift,
                                     bht_mask, ctr_max, ctr_thresh, hist_mask, sets, ways, ras_n,
                                     bht, btb, ras, bp)


def run_predictor(config: PredictorConfig, state: PredictorState, block) -> np.ndarray:
    """Predict every control transfer of ``block`` (an InstrBlock) in order; OUT_* bits per instruction."""
    out = np.zeros(len(block), dtype=np.int64)
    _run_predictor(block.pc, block.op, block.size, block.taken, block.target, config.scalars(), *state, out)
    return out
