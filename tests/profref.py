"""A slow, obviously-correct twin of ``simulator.core.profiler``, written from the definitions.

Given every record of a run (the timing kernel's rows, in program order) and the static index of each
instruction: for every sample cycle t, find the oldest instruction not retired at t (the first whose
retire cycle is >= t), take the first instruction of its issue group, and count every event whose
interval contains t, scanning all instructions.  Edges and event-based counters by a plain loop.
"""

from __future__ import annotations

import numpy as np

from whatif.simulator.core import timing as TM
from whatif.simulator.isa import OP_CALL, OP_RET

EVENT_FLAGS = (TM.RF_L1I_MISS, TM.RF_ITLB_MISS, TM.RF_DTLB_MISS, TM.RF_L1D_MISS, TM.RF_MISPREDICT, TM.RF_AGI)


def in_progress(records: np.ndarray, t: int, fe: int) -> np.ndarray:
    """Whether each sampled event (profiler.SAMPLED_EVENTS order) is in progress at cycle t in any record."""
    s, itlb, f, e, agi0, agi1, dtlb, c, fl = (records[:, col] for col in (
        TM.R_S, TM.R_ITLB, TM.R_F, TM.R_E, TM.R_AGI0, TM.R_AGI1, TM.R_DTLB, TM.R_C, TM.R_FLAGS))
    has = lambda flag: (fl & flag) != 0          # noqa: E731
    return np.array([(has(TM.RF_L1I_MISS) & (itlb <= t) & (t < f)).any(),
                     (has(TM.RF_ITLB_MISS) & (s <= t) & (t < itlb)).any(),
                     (has(TM.RF_DTLB_MISS) & (e <= t) & (t < dtlb)).any(),
                     (has(TM.RF_DATA_WAIT) & (dtlb <= t) & (t < c)).any(),
                     (has(TM.RF_AGI) & (agi0 <= t) & (t < agi1)).any(),
                     (has(TM.RF_MISPREDICT) & (c <= t) & (t < c + fe)).any()], dtype=np.int64)


def reference_profile(records: np.ndarray, sids: np.ndarray, n_static: int, period: int, fe: int, start: int,
                      s_tgt: np.ndarray, s_op: np.ndarray, landing: str = "group") -> dict[str, np.ndarray]:
    """``landing="head"``: the sample lands on the head itself instead of its group's first instruction."""
    out = {"ticks": np.zeros(n_static, np.int64), "events": np.zeros((n_static, 6), np.int64),
           "occurrences": np.zeros((n_static, 6), np.int64), "executions": np.zeros(n_static, np.int64),
           "fall": np.zeros(n_static, np.int64), "taken": np.zeros(n_static, np.int64)}
    last = -1
    for k, sid in enumerate(sids):
        sid = int(sid)
        if sid < 0:
            continue
        out["executions"][sid] += 1
        if last >= 0:
            if sid == last + 1:
                out["fall"][last] += 1
            elif sid == s_tgt[last]:
                out["taken"][last] += 1
            if s_op[last] == OP_RET and sid > 0 and s_op[sid - 1] == OP_CALL:
                out["fall"][sid - 1] += 1
        for j, flag in enumerate(EVENT_FLAGS):
            if records[k, TM.R_FLAGS] & flag:
                out["occurrences"][sid, j] += 1
        last = sid
    retire = records[:, TM.R_R]
    samples = outside = 0
    t = start + period
    while len(retire) and t <= retire.max():
        head = next(k for k in range(len(retire)) if retire[k] >= t)
        if landing == "head":
            leader = head
        else:
            leader = next((k for k in range(head, -1, -1) if records[k, TM.R_FLAGS] & TM.RF_LEADER), None)
        land = -1 if leader is None else int(sids[leader])
        bits = in_progress(records, t, fe)
        samples += 1
        if land < 0:
            outside += 1
        else:
            out["ticks"][land] += 1
            out["events"][land] += bits
        t += period
    out["samples"], out["outside"] = samples, outside
    return out
