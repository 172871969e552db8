"""Calibration of register dependence distances against the dynamic stream.

Registers are chosen on the static code (a source reads the destination of the instruction a
drawn distance earlier in the layout), but the distance that matters is the dynamic one: where a
taken branch or a loop back edge separates producer and consumer, the value may come from
elsewhere or from long ago.  So the synthesiser walks each phase for a while, measures the
distances its data sources actually see, and corrects the static distance weights and the
long-lived share towards the description (a damped multiplicative correction, a few rounds,
the best round kept).  Control flow and addresses do not depend on registers, so one walk per
phase serves every round.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Callable

import numpy as np

from whatif.simulator.isa import OP_LOAD, OP_STORE
from whatif.simulator.synth import kernel as K
from whatif.simulator.synth.stats import dependence_distances
from whatif.simulator.synth.streams import StreamTable

WALK = 150_000          # instructions walked per phase
ROUNDS = 4
DAMPING = 0.4           # 0.8 oscillated: a hot loop's few choices flip between rounds, and a description
                        # changed a little calibrated to other weights (bench_synth_stability.py)
MAX_DISTANCE = 32


def static_trace(kind: np.ndarray, tgt: np.ndarray, arg: np.ndarray, arg2: np.ndarray, prob: np.ndarray,
                 prob2: np.ndarray, off: np.ndarray, ic_target: np.ndarray, ic_cdf: np.ndarray,
                 streams: StreamTable, entry: int, n: int, seed: int) -> np.ndarray:
    """Static index of each of the first ``n`` instructions walked from ``entry`` (a phase's driver),
    staying in that phase."""
    N = len(kind)
    spc = np.arange(N, dtype=np.uint64)           # the "pc" of an instruction is its static index
    packed = np.zeros(N, dtype=np.uint64)
    out = [np.empty(n, dtype=dt) for dt in (np.uint64, np.uint8, np.uint8, np.int8, np.int8, np.int8, np.int8,
                                            np.uint64, np.uint8, np.uint8, np.uint64, np.uint8)]
    W = np.zeros(K.W_SIZE, np.int64)
    W[K.W_CUR] = entry
    W[K.W_BOUNDARY] = 1 << 62
    got = K.walk(n, *out, spc, packed, K.straight_runs(kind).astype(np.int32), kind.astype(np.uint8),
                 tgt.astype(np.int32), arg, arg2, prob, prob2, off.astype(np.int32), np.zeros(N, np.int32),
                 ic_target, ic_cdf, streams.initial_state(), streams.z_lo, streams.z_width, streams.z_prob,
                 streams.z_alias, np.array([1 << 62], np.int64), np.array([entry], np.int64), W,
                 np.zeros(K.STACK_SIZE, np.int64), np.array([np.uint64(seed)]), np.zeros(4, np.int64),
                 np.zeros(4, np.int64), np.zeros(1, np.int64))
    return out[0][:got].astype(np.int64)


def data_distances(trace: np.ndarray, op: np.ndarray, dst: np.ndarray, src1: np.ndarray,
                   src2: np.ndarray) -> tuple[np.ndarray, float]:
    """Shares of data sources (a store's data register, every source of other ops; not the base
    registers of loads and stores) at distance 1..MAX_DISTANCE, and the share beyond."""
    o = op[trace]
    mem = (o == OP_LOAD) | (o == OP_STORE)
    s1 = np.where(mem, src2[trace], src1[trace])
    s2 = np.where(mem, -1, src2[trace])
    hist, far = dependence_distances(SimpleNamespace(dst=dst[trace], src1=s1, src2=s2), MAX_DISTANCE)
    total = hist.sum() + far
    if total == 0:
        return np.zeros(MAX_DISTANCE), 1.0
    return hist[1:] / total, far / total


def calibrate(traces: list[np.ndarray], op: np.ndarray, targets: list[tuple[np.ndarray, float]],
              assign: Callable[[np.ndarray, np.ndarray], tuple]) -> tuple:
    """Correct each phase's static distance weights and long-lived share until the walked stream
    shows the described distances.  ``targets[p]`` = (weights over distances 1..k, far share);
    ``assign(weights, far)`` (arrays over phases: padded weights, far shares) assigns registers
    and returns (dst, src1, src2, areg, flags).  Returns the best assignment."""
    P = len(targets)
    weights = np.zeros((P, MAX_DISTANCE))
    far = np.zeros(P)
    k = np.zeros(P, dtype=np.int64)              # distances listed; sources further away count as far
    want = np.zeros((P, MAX_DISTANCE + 1))
    for p, (w, f) in enumerate(targets):
        w = np.asarray(w, dtype=float)[:MAX_DISTANCE]
        k[p] = len(w)
        weights[p, :len(w)] = w / w.sum()
        far[p] = f
        want[p, :MAX_DISTANCE] = weights[p] * (1.0 - f)
        want[p, MAX_DISTANCE] = f
    best, best_err = None, np.inf
    for _ in range(ROUNDS + 1):
        regs = assign(weights, far)
        dst, src1, src2 = regs[0], regs[1], regs[2]
        err = 0.0
        got = np.zeros((P, MAX_DISTANCE + 1))
        for p in range(P):
            if len(traces[p]) == 0:
                continue
            near, beyond = data_distances(traces[p], op, dst, src1, src2)
            got[p, :k[p]] = near[:k[p]]
            got[p, MAX_DISTANCE] = beyond + near[k[p]:].sum()
            err += float(np.abs(got[p] - want[p]).sum())
        if err < best_err:
            best, best_err = regs, err
        # damped multiplicative correction of the static weights and the long-lived share
        used = weights > 0
        factor = np.clip((want[:, :MAX_DISTANCE] + 1e-4) / (got[:, :MAX_DISTANCE] + 1e-4), 0.25, 4.0) ** DAMPING
        weights = np.where(used, weights * factor, 0.0)
        weights /= np.maximum(weights.sum(axis=1, keepdims=True), 1e-300)
        far = np.clip(far * ((want[:, MAX_DISTANCE] + 1e-3) / (got[:, MAX_DISTANCE] + 1e-3)) ** DAMPING, 0.0, 1.0)
    return best
