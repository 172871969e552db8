"""Measurements of a dynamic instruction stream (an InstrBlock): what the synthesis promised.

Vectorised numpy over a block: the dynamic instruction mix, the taken rate of conditional
branches, the distance from each source register to its producer, distinct cache lines touched,
the trip counts of a loop branch, per-stream access counts, and a check of control-flow
consistency (the next pc after a taken transfer is its target, after anything else pc + size,
and calls and returns nest).
"""

from __future__ import annotations

import numpy as np

from whatif.simulator.isa import OP_BRANCH, OP_CALL, OP_FP, OP_JUMP, OP_LOAD, OP_RET, OP_STORE, InstrBlock

CONTROL = (OP_BRANCH, OP_JUMP, OP_CALL, OP_RET)


def mix(block: InstrBlock) -> dict[str, float]:
    """Shares of loads, stores, control transfers ("branch"), FP ops and the rest."""
    n = max(1, len(block))
    op = block.op
    out = {"load": float((op == OP_LOAD).sum() / n), "store": float((op == OP_STORE).sum() / n),
           "branch": float(np.isin(op, CONTROL).sum() / n), "fp": float((op == OP_FP).sum() / n)}
    out["other"] = 1.0 - sum(out.values())
    return out


def taken_rate(block: InstrBlock) -> float:
    cond = block.op == OP_BRANCH
    return float(block.taken[cond].mean()) if cond.any() else 0.0


def dependence_distances(block: InstrBlock, max_distance: int = 64) -> tuple[np.ndarray, int]:
    """Histogram of the distance from each source (src1, src2) to the last earlier writer of that
    register: ``hist[d]`` counts distance d (1..max_distance); the second value counts sources with
    no writer within ``max_distance`` instructions (long-lived values)."""
    pos = np.arange(len(block.dst), dtype=np.int64)
    hist = np.zeros(max_distance + 1, dtype=np.int64)
    far = 0
    srcs = [(block.src1, pos), (block.src2, pos)]
    regs = np.unique(np.concatenate([block.src1[block.src1 >= 0], block.src2[block.src2 >= 0]]))
    for r in regs:
        writes = np.flatnonzero(block.dst == r)
        for src, p in srcs:
            reads = p[src == r]
            if not len(reads):
                continue
            if not len(writes):
                far += len(reads)
                continue
            k = np.searchsorted(writes, reads, side="left") - 1
            has = k >= 0
            d = np.where(has, reads - writes[np.maximum(k, 0)], max_distance + 1)
            near = d <= max_distance
            hist += np.bincount(d[near], minlength=max_distance + 1)[:max_distance + 1]
            far += int((~near).sum())
    return hist, far


def distinct_lines(block: InstrBlock, line_bytes: int = 64, mask: np.ndarray | None = None) -> int:
    """Distinct data cache lines touched by loads and stores (optionally only where ``mask``)."""
    mem = np.isin(block.op, (OP_LOAD, OP_STORE))
    if mask is not None:
        mem &= mask
    return int(len(np.unique(block.mem_addr[mem] // np.uint64(line_bytes))))


def distinct_code_lines(block: InstrBlock, line_bytes: int = 64) -> int:
    return int(len(np.unique(block.pc // np.uint64(line_bytes))))


def loop_trips(block: InstrBlock, pc: int) -> np.ndarray:
    """Trip counts of the loop whose back branch is at ``pc``: 1 + the taken outcomes before each
    not-taken one (complete loop executions only)."""
    t = block.taken[block.pc == np.uint64(pc)].astype(np.int64)
    exits = np.flatnonzero(t == 0)
    if len(exits) < 2:
        return np.zeros(0, dtype=np.int64)
    return np.diff(exits)


def control_flow_errors(block: InstrBlock, max_report: int = 5) -> list[str]:
    """Violations of control-flow consistency inside the block (empty when consistent)."""
    errs: list[str] = []
    pc, op, size, taken, target = block.pc, block.op, block.size, block.taken, block.target
    nxt = pc[1:]
    expect = np.where(taken[:-1] == 1, target[:-1], pc[:-1] + size[:-1].astype(np.uint64))
    bad = np.flatnonzero(nxt != expect)
    for i in bad[:max_report]:
        errs.append(f"instruction {i} ({op[i]}) at {pc[i]:#x}: next pc {nxt[i]:#x}, expected {expect[i]:#x}")
    uncond = np.isin(op, (OP_JUMP, OP_CALL, OP_RET)) & (taken == 0)
    for i in np.flatnonzero(uncond)[:max_report]:
        errs.append(f"instruction {i}: unconditional transfer not taken")
    # calls and returns nest: each return goes to the instruction after its call
    stack: list[int] = []
    calls = np.flatnonzero(np.isin(op, (OP_CALL, OP_RET)))
    for i in calls:
        if op[i] == OP_CALL:
            stack.append(int(pc[i]) + int(size[i]))
        elif stack:
            ret_to = stack.pop()
            if int(target[i]) != ret_to:
                errs.append(f"instruction {i}: return to {int(target[i]):#x}, call site expects {ret_to:#x}")
                if len(errs) >= max_report:
                    break
    return errs


def stream_accesses(block: InstrBlock, bases: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Accesses per data region [bases[j], bases[j] + sizes[j])."""
    mem = np.isin(block.op, (OP_LOAD, OP_STORE))
    a = block.mem_addr[mem]
    return np.array([int(((a >= np.uint64(b)) & (a < np.uint64(b) + np.uint64(s))).sum())
                     for b, s in zip(bases, sizes)], dtype=np.int64)
