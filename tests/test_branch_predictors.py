"""Branch predictors: the numba kernels against the plain-Python reference predictor, and the textbook
behaviours of bimodal and gshare, the BTB and the return stack."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coreref import RefPredictor
from whatif.simulator.core.predictors import (OUT_BTB_LOOKUP, OUT_BTB_MISS, OUT_DIR, OUT_RAS_MISS, OUT_TGT, PREDICTORS,
                                       TAGE_MAX_TABLES, PredictorConfig, predictor_id, run_predictor)
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.isa import OP_ALU, OP_BRANCH, OP_CALL, OP_JUMP, OP_RET, InstrBlock
from whatif.simulator.platform import TAGE_MAX_TABLES as PLATFORM_TAGE_MAX_TABLES
from whatif.simulator.platform import load_platform

SMALL_BP = ["branch_predictor.bht_entries=32", "branch_predictor.history_bits=4", "branch_predictor.btb_entries=8",
            "branch_predictor.btb_associativity=2", "branch_predictor.ras_entries=3",
            # TAGE: tables small enough that streams of 200 branches allocate, alias, age and halve
            "branch_predictor.tage_entries=8", "branch_predictor.tage_tag_bits=3",
            "branch_predictor.tage_history=[2,5,9]", "branch_predictor.tage_reset_period=50"]


def branches(ops, pcs, taken, targets, sizes=None) -> InstrBlock:
    n = len(ops)
    b = InstrBlock.empty(n)
    b.op[:] = ops
    b.pc[:] = pcs
    b.taken[:] = taken
    b.target[:] = targets
    b.size[:] = 4 if sizes is None else sizes
    return b


def predict(platform, block, kind=None) -> np.ndarray:
    cfg = PredictorConfig.from_platform(platform, kind)
    return run_predictor(cfg, cfg.new_state(), block)


def reference(platform, block, kind=None) -> np.ndarray:
    shift = {"powerpc32": 2, "z/Architecture": 1}.get(platform.isa, 0)
    ref = RefPredictor(kind or platform.branch_predictor.kind, platform.branch_predictor, shift)
    out = np.zeros(len(block), np.int64)
    for i in range(len(block)):
        op = int(block.op[i])
        if op in (OP_BRANCH, OP_JUMP, OP_CALL, OP_RET):
            o = ref.predict(op, int(block.pc[i]), int(block.size[i]), int(block.taken[i]), int(block.target[i]))
            out[i] = (OUT_DIR * o["dir"] | OUT_TGT * o["tgt"] | OUT_BTB_LOOKUP * o["btb_lookup"]
                      | OUT_BTB_MISS * o["btb_miss"] | OUT_RAS_MISS * o["ras_miss"])
    return out


@st.composite
def control_streams(draw):
    n = draw(st.integers(1, 200))
    ops = draw(st.lists(st.sampled_from([OP_BRANCH] * 6 + [OP_JUMP, OP_CALL, OP_CALL, OP_RET, OP_RET, OP_ALU]),
                        min_size=n, max_size=n))
    pcs = draw(st.lists(st.sampled_from([0x1000 + 4 * k for k in range(24)] + [0x9000, 0x9004]), min_size=n,
                        max_size=n))
    taken = [1 if op != OP_BRANCH else draw(st.integers(0, 1)) for op in ops]
    targets = [draw(st.sampled_from([0x2000, 0x2040, 0x3000, 0x1004, 0x1008])) if t else 0 for t in taken]
    return branches(ops, pcs, taken, targets)


@settings(max_examples=80, deadline=None)
@given(block=control_streams(), name=st.sampled_from(["mpc7447a", "nehalem", "z10"]),
       kind=st.sampled_from([None, "bimodal", "gshare", "always_taken", "perfect", "tage"]))
def test_numba_predictor_matches_reference(block, name, kind):
    p = load_platform(name, SMALL_BP)
    assert predict(p, block, kind).tolist() == reference(p, block, kind).tolist()


def test_tage_matches_reference_over_long_histories():
    """The shipped TAGE sizes, 3,000 branches: histories up to 57 outcomes, folded incrementally in the kernel
    and from the whole history in the reference."""
    rng = np.random.default_rng(7)
    n = 3000
    pcs = 0x40_0000 + 16 * rng.integers(0, 40, n)
    bias = (pcs // 16) % 3                    # never, always, or by a period-7 pattern with noise
    taken = np.where(bias == 0, 0, np.where(bias == 1, 1, (np.arange(n) % 7 == 0) ^ (rng.random(n) < 0.05)))
    b = branches([OP_BRANCH] * n, pcs, taken.astype(int), np.where(taken, 0x2000, 0))
    p = load_platform("nehalem")
    got = predict(p, b, "tage")
    assert got.tolist() == reference(p, b, "tage").tolist()
    assert ((got & OUT_DIR) != 0).sum() > 50          # the stream is not trivial


def test_tage_learns_a_period_longer_than_gshares_history():
    """One branch taken every 40th time: gshare's 14 outcomes of history cannot tell the taken instance from
    the 25 not-taken ones before it that saw the same history; TAGE's 57-outcome table can."""
    n = 40 * 200
    taken = [1 if i % 40 == 39 else 0 for i in range(n)]
    b = branches([OP_BRANCH] * n, [0x1000] * n, taken, [0x0F00 if t else 0 for t in taken])
    p = load_platform("nehalem")
    last = slice(n - 40 * 50, n)
    assert ((predict(p, b, "gshare")[last] & OUT_DIR) != 0).sum() >= 50         # once a period at least
    assert ((predict(p, b, "tage")[last] & OUT_DIR) != 0).sum() == 0


def test_tage_tags_keep_apart_branches_that_share_a_counter():
    """Two branches 16 K apart share a bimodal counter of the 16 K-entry table and train it against each
    other; in TAGE each finds its own tagged entry after a few mispredictions."""
    n = 4000
    pcs = [0x1000 if i % 2 == 0 else 0x1000 + 16384 for i in range(n)]
    taken = [1 if i % 2 == 0 else 0 for i in range(n)]
    b = branches([OP_BRANCH] * n, pcs, taken, [0x0F00 if t else 0 for t in taken])
    p = load_platform("nehalem")
    assert ((predict(p, b, "bimodal")[n // 2:] & OUT_DIR) != 0).mean() >= 0.5
    assert ((predict(p, b, "tage")[n // 2:] & OUT_DIR) != 0).sum() == 0


def test_tage_geometry_is_checked_at_the_boundary():
    for value, problem in (("[5,5]", "strictly increasing"), ("[5,63]", "at most 62"),
                           ("[1,2,3,4,5,6,7,8,9]", "1 to 8")):
        with pytest.raises(SimulatorInputError, match=rf"tage_history.*{problem}"):
            load_platform("nehalem", [f"branch_predictor.tage_history={value}"])
    for entries in (1000, 1):           # (one entry would leave the index fold no bits)
        with pytest.raises(SimulatorInputError, match="tage_entries must be a power of two, at least 2"):
            load_platform("nehalem", [f"branch_predictor.tage_entries={entries}"])


def test_always_taken_loop_branch_is_learned_by_both_direction_predictors():
    for name, kind in (("mpc7447a", "bimodal"), ("nehalem", "gshare")):   # (named: not the platform's default)
        p = load_platform(name)
        b = branches([OP_BRANCH] * 1000, [0x1000] * 1000, [1] * 1000, [0x0F00] * 1000)
        out = predict(p, b, kind)
        # weakly not-taken counters: bimodal misses once; gshare once per new history value until the
        # history register is all ones (history_bits + 1 branches); then nothing
        warm = 1 + p.branch_predictor.history_bits
        dir_miss = (out & OUT_DIR) != 0
        assert dir_miss[:warm].all() and not dir_miss[warm:].any()
        assert ((out & OUT_BTB_MISS) != 0).sum() <= 1


def test_alternating_branch_defeats_bimodal_but_not_gshare():
    n = 2000
    taken = [i % 2 for i in range(n)]
    b = branches([OP_BRANCH] * n, [0x1000] * n, taken, [0x0F00 if t else 0 for t in taken])
    bimodal = predict(load_platform("mpc7447a"), b, "bimodal")
    gshare = predict(load_platform("nehalem"), b, "gshare")
    # a 2-bit counter oscillating between weakly states mispredicts at least half of an alternating pattern
    assert ((bimodal & OUT_DIR) != 0).mean() >= 0.5
    # gshare separates the two histories after warm-up
    assert ((gshare[200:] & OUT_DIR) != 0).sum() == 0


def test_two_bit_counter_tolerates_one_loop_exit():
    """A loop of trip count 10: the bimodal counter saturates and mispredicts only the exit."""
    taken = ([1] * 9 + [0]) * 100
    b = branches([OP_BRANCH] * 1000, [0x1000] * 1000, taken, [0x0F00 if t else 0 for t in taken])
    out = predict(load_platform("mpc7447a"), b)
    assert ((out[100:] & OUT_DIR) != 0).sum() == 90     # one per remaining trip


def test_btb_set_conflicts_follow_lru():
    # 2-way sets: three jumps mapping to one set evict each other in LRU order
    p = load_platform("nehalem", ["branch_predictor.btb_entries=8", "branch_predictor.btb_associativity=2"])
    a, b_, c = 0x1000, 0x1000 + 4, 0x1000 + 8      # x86: no shift; 4 sets -> pcs 4 apart share set 0
    pcs = [a, b_, a, c, a, b_]
    out = predict(p, branches([OP_JUMP] * 6, pcs, [1] * 6, [0x5000] * 6))
    misses = [(o & OUT_BTB_MISS) != 0 for o in out]
    # a, b miss (cold); a hits; c misses and evicts b (LRU); a hits; b misses
    assert misses == [True, True, False, True, False, True]


def test_changing_indirect_target_is_a_target_mispredict():
    p = load_platform("nehalem")
    out = predict(p, branches([OP_JUMP] * 3, [0x1000] * 3, [1] * 3, [0x2000, 0x2000, 0x3000]))
    assert [(o & OUT_TGT) != 0 for o in out] == [False, False, True]


def test_return_stack_predicts_nested_returns_and_overflows():
    p = load_platform("nehalem", ["branch_predictor.ras_entries=2"])
    calls = [0x1000, 0x2000, 0x3000]
    ops = [OP_CALL] * 3 + [OP_RET] * 3
    pcs = calls + [0x9000, 0x9100, 0x9200]
    targets = [0x2000, 0x3000, 0x4000, 0x3004, 0x2004, 0x1004]
    out = predict(p, branches(ops, pcs, [1] * 6, targets))
    # the two innermost returns are predicted; the third call's return address fell off the 2-entry stack
    assert [(o & OUT_RAS_MISS) != 0 for o in out[3:]] == [False, False, True]


def test_perfect_predictor_never_mispredicts():
    rng = np.random.default_rng(1)
    n = 500
    taken = rng.integers(0, 2, n)
    b = branches([OP_BRANCH] * n, 0x1000 + 4 * rng.integers(0, 50, n), taken, np.where(taken, 0x2000, 0))
    assert (predict(load_platform("nehalem"), b, "perfect") == 0).all()


def test_registry_names_and_unknown_name():
    assert set(PREDICTORS) == {"bimodal", "gshare", "always_taken", "perfect", "tage"}
    assert predictor_id("gshare") == PREDICTORS["gshare"]
    with pytest.raises(SimulatorInputError, match="unknown branch predictor 'ltage'; known: always_taken, bimodal"):
        predictor_id("ltage")


def test_sizes_come_from_the_platform():
    cfg = PredictorConfig.from_platform(load_platform("mpc7447a"))
    assert (cfg.bht_entries, cfg.counter_bits, cfg.btb_sets, cfg.btb_ways, cfg.ras_entries, cfg.pc_shift) == \
        (2048, 2, 32, 4, 8, 2)
    state = cfg.new_state()
    assert state.bht.shape == (2048,) and state.btb.shape == (128, 3) and state.ras.shape == (8,)
    # TAGE: the base, then four bytes an entry per tagged table (counter, useful, two of tag); its geometry
    # in the scalar words
    tage = PredictorConfig.from_platform(load_platform("nehalem"), "tage")
    state = tage.new_state()
    assert state.bht.shape == (16384 + 4 * 1024 * 4,) and (state.bht[:16384] == 1).all() and not state.bht[16384:].any()
    assert state.bp[4:9].tolist() == [4, 10, 9, 0, 1 << 18] and state.bp[9:13].tolist() == [5, 11, 25, 57]
    assert tage.hist_mask == (1 << 58) - 1
    assert TAGE_MAX_TABLES == PLATFORM_TAGE_MAX_TABLES
