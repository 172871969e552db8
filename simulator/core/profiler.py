"""A CPMF-style instruction profiler of the core model (seed 001 §2.3, §2.4.3): sampled and event-based
counters per static instruction, plus the edge profile a JIT's log would give.

*Sampled counters.*  Every ``period`` cycles the machine is sampled.  The sample lands on one
instruction: the oldest instruction not yet retired at that cycle is the *head*, and the sample is
recorded at the first instruction of the head's issue group -- the group is the unit the core
completes, so on the z10, whose instructions issue in pairs, one instruction's samples appear on its
partner (§2.4.3); with ``group_size = 1`` every instruction is its own group.  That instruction gets a
tick (``TICKS``) and every event *in progress* anywhere in the core at that cycle increments that
event's count on it:

==================  ======================================================================
``Icachemiss``      an instruction fetch is waiting for a line from beyond the L1I
``TLBmiss``         an instruction fetch is waiting for a translation (first-level ITLB miss)
``DTLBmiss``        a data access is waiting for a translation (first-level DTLB miss)
``Dcachemiss``      a load is waiting for data from beyond the L1D (or for a line being filled)
``AGIstall``        an instruction is held at issue by the address-generation interlock
``Branchmispredict`` the pipeline is refilling after a mispredicted branch (resolution + front-end depth)
==================  ======================================================================

The intervals come from the timing kernel's per-instruction records (:mod:`simulator.core.timing`,
``R_*``); nothing is drawn.  Because the front end fetches ahead of retirement, an I-fetch miss on a
line is in progress while the instructions of the previous line still retire, so the I-cache-miss
counter spreads over several consecutive instructions (the "long tail" of §6.2).

*Event-based counters* count occurrences on the instruction that incurred them: ``L1I_MISS``,
``ITLB_MISS``, ``DTLB_MISS``, ``L1D_MISS``, ``MISPREDICT``, ``AGI``.

*Edge profile.*  Executions of every static instruction, and for every static instruction how often
control went on to the next one (``fall``) and to its branch target (``taken``), from the dynamic
stream; a return credits the fall-through edge of the call it returns to, as the caller's CFG sees it.

Samples are taken only while the profiler is active (:meth:`InstructionProfiler.start`, after any
warm-up); a sample is resolved once no later instruction can have an event in progress at its cycle
(every interval of an instruction starts at or after its fetch start, which never goes back), and
:meth:`InstructionProfiler.finish` resolves the rest.  ``tests/profref.py`` implements the same
definitions directly.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from whatif.jitcache import drop_stale_caches
from whatif.simulator.core import timing as TM
from whatif.simulator.errors import constraint_error
from whatif.simulator.isa import OP_CALL, OP_RET

SAMPLED_EVENTS = ("Icachemiss", "TLBmiss", "DTLBmiss", "Dcachemiss", "AGIstall", "Branchmispredict")
E_ICACHE, E_TLB, E_DTLB, E_DCACHE, E_AGI, E_MISPREDICT = range(6)
EVENT_COUNTERS = ("L1I_MISS", "ITLB_MISS", "DTLB_MISS", "L1D_MISS", "MISPREDICT", "AGI")
_EVENT_FLAGS = (TM.RF_L1I_MISS, TM.RF_ITLB_MISS, TM.RF_DTLB_MISS, TM.RF_L1D_MISS, TM.RF_MISPREDICT, TM.RF_AGI)
PENDING = 1 << 16                 # samples awaiting resolution (a ring; the oldest is resolved when full)
_ANY_EVENT = TM.RF_L1I_MISS | TM.RF_ITLB_MISS | TM.RF_DTLB_MISS | TM.RF_L1D_MISS | TM.RF_MISPREDICT | TM.RF_AGI
_IN_PROGRESS = TM.RF_L1I_MISS | TM.RF_ITLB_MISS | TM.RF_DTLB_MISS | TM.RF_DATA_WAIT | TM.RF_AGI | TM.RF_MISPREDICT

# scalar state
(P_NEXT_T, P_LEADER, P_HEAD, P_COUNT, P_PREV_R, P_MISP_UNTIL, P_LAST_SID, P_SAMPLES, P_OUTSIDE, P_ACTIVE) = range(10)
NP_STATE = 10


@njit(cache=True, inline="always")
def _resolve(pend_land, pend_bits, slot, ticks, events, st):
    land = pend_land[slot]
    st[P_SAMPLES] += 1
    if land < 0:
        st[P_OUTSIDE] += 1
        return
    ticks[land] += 1
    bits = pend_bits[slot]
    for j in range(6):
        if bits & (1 << j):
            events[land, j] += 1


@njit(cache=True, inline="always")
def _bits_at(t, r, fe):
    """The events of record ``r`` in progress at cycle ``t`` (bit j: SAMPLED_EVENTS[j])."""
    fl = r[TM.R_FLAGS]
    bits = 0
    if (fl & TM.RF_L1I_MISS) != 0 and r[TM.R_ITLB] <= t < r[TM.R_F]:
        bits |= 1 << E_ICACHE
    if (fl & TM.RF_ITLB_MISS) != 0 and r[TM.R_S] <= t < r[TM.R_ITLB]:
        bits |= 1 << E_TLB
    if (fl & TM.RF_DTLB_MISS) != 0 and r[TM.R_E] <= t < r[TM.R_DTLB]:
        bits |= 1 << E_DTLB
    if (fl & TM.RF_DATA_WAIT) != 0 and r[TM.R_DTLB] <= t < r[TM.R_C]:
        bits |= 1 << E_DCACHE
    if (fl & TM.RF_AGI) != 0 and r[TM.R_AGI0] <= t < r[TM.R_AGI1]:
        bits |= 1 << E_AGI
    if (fl & TM.RF_MISPREDICT) != 0 and r[TM.R_C] <= t < r[TM.R_C] + fe:
        bits |= 1 << E_MISPREDICT
    return bits


@njit(cache=True)
def profile_records(rec, pc, n, lut, base, period, fe, st, pend_t, pend_land, pend_bits, ticks, events, occ, execs,
                    fall, taken, s_tgt, s_op):
    """Fold the records of ``n`` simulated instructions at addresses ``pc`` into the profile arrays
    (``lut[pc - base]``: static index, -1 between instructions; addresses outside it are not the
    program's); state persists in ``st`` and the pending ring across calls."""
    cap = len(pend_t)
    active = st[P_ACTIVE] != 0
    span = len(lut)
    for k in range(n):
        r = rec[k]
        off = np.int64(pc[k] - base) if pc[k] >= base else -1
        sid = np.int64(lut[off]) if 0 <= off < span else -1
        fl = r[TM.R_FLAGS]
        if (fl & TM.RF_LEADER) != 0:
            st[P_LEADER] = sid
        if sid >= 0:
            # edge profile and event-based counters
            if active:
                execs[sid] += 1
                last = st[P_LAST_SID]
                if last >= 0:
                    if sid == last + 1:
                        fall[last] += 1
                    elif sid == s_tgt[last]:
                        taken[last] += 1
                    if s_op[last] == OP_RET and sid > 0 and s_op[sid - 1] == OP_CALL:
                        fall[sid - 1] += 1
                if fl & _ANY_EVENT:
                    for j in range(6):
                        if fl & _EVENT_FLAGS[j]:
                            occ[sid, j] += 1
            st[P_LAST_SID] = sid
        if not active:
            st[P_PREV_R] = r[TM.R_R]
            continue
        # resolve the samples no later instruction can touch
        s0 = r[TM.R_S]
        while st[P_COUNT] > 0 and pend_t[st[P_HEAD]] < s0:
            _resolve(pend_land, pend_bits, st[P_HEAD], ticks, events, st)
            st[P_HEAD] = (st[P_HEAD] + 1) % cap
            st[P_COUNT] -= 1
        # samples whose head is this instruction land on its group's first instruction
        rr = r[TM.R_R]
        while st[P_NEXT_T] <= rr:
            if st[P_COUNT] == cap:                      # full: resolve the oldest now
                _resolve(pend_land, pend_bits, st[P_HEAD], ticks, events, st)
                st[P_HEAD] = (st[P_HEAD] + 1) % cap
                st[P_COUNT] -= 1
            slot = (st[P_HEAD] + st[P_COUNT]) % cap
            t = st[P_NEXT_T]
            pend_t[slot] = t
            pend_land[slot] = st[P_LEADER]
            # an older branch's refill can outlast its retirement; every other interval of an older
            # instruction ends by its retirement, before t
            pend_bits[slot] = (1 << E_MISPREDICT) if t < st[P_MISP_UNTIL] else 0
            st[P_COUNT] += 1
            st[P_NEXT_T] = t + period
        # this instruction's events in progress at each pending sample
        if fl & _IN_PROGRESS:
            for q in range(st[P_COUNT]):
                slot = (st[P_HEAD] + q) % cap
                pend_bits[slot] |= _bits_at(pend_t[slot], r, fe)
            if (fl & TM.RF_MISPREDICT) != 0 and r[TM.R_C] + fe > st[P_MISP_UNTIL]:
                st[P_MISP_UNTIL] = r[TM.R_C] + fe
        st[P_PREV_R] = rr


@njit(cache=True)
def _finish(st, pend_land, pend_bits, ticks, events):
    cap = len(pend_land)
    while st[P_COUNT] > 0:
        _resolve(pend_land, pend_bits, st[P_HEAD], ticks, events, st)
        st[P_HEAD] = (st[P_HEAD] + 1) % cap
        st[P_COUNT] -= 1


class InstructionProfiler:
    """Per static instruction of ``program`` (a :class:`~simulator.synth.program.StaticProgram`): sampled
    counters every ``period`` cycles, event-based counters, executions and edge counts.

    The :class:`~simulator.machine.Machine` feeds it (``Machine(profile_every=...)``); read the arrays after
    :meth:`finish`: ``ticks`` [n], ``events`` [n, 6] (:data:`SAMPLED_EVENTS`), ``occurrences`` [n, 6]
    (:data:`EVENT_COUNTERS`), ``executions``, ``fall``, ``taken`` [n]."""

    def __init__(self, program, period: int, front_end_depth: int):
        if not isinstance(period, (int, np.integer)) or isinstance(period, bool) or period < 1:
            raise constraint_error("period", "InstructionProfiler", "an integer >= 1 (cycles between samples)",
                                   period)
        self.program = program
        self.period = int(period)
        self.fe = int(front_end_depth)
        n = len(program)
        self.st = np.zeros(NP_STATE, np.int64)
        self.st[P_LEADER] = -1
        self.st[P_LAST_SID] = -1
        self.st[P_MISP_UNTIL] = -1
        self.pend_t = np.zeros(PENDING, np.int64)
        self.pend_land = np.zeros(PENDING, np.int64)
        self.pend_bits = np.zeros(PENDING, np.int64)
        self.ticks = np.zeros(n, np.int64)
        self.events = np.zeros((n, len(SAMPLED_EVENTS)), np.int64)
        self.occurrences = np.zeros((n, len(EVENT_COUNTERS)), np.int64)
        self.executions = np.zeros(n, np.int64)
        self.fall = np.zeros(n, np.int64)
        self.taken = np.zeros(n, np.int64)
        self._pc = np.ascontiguousarray(program.pc)
        # address -> static index, a dense table over the text segment (O(1) per instruction)
        self._base = np.uint64(self._pc[0]) if n else np.uint64(0)
        span = int(self._pc[-1] - self._pc[0]) + 1 if n else 0
        self._lut = np.full(span, -1, dtype=np.int32)
        self._lut[(self._pc - self._base).astype(np.int64)] = np.arange(n, dtype=np.int32)
        self._tgt = np.ascontiguousarray(program.tgt, dtype=np.int64)
        self._op = np.ascontiguousarray(program.op)
        self.finished = False

    def start(self, cycle: int) -> None:
        """Begin sampling: the first sample is ``period`` cycles after ``cycle``."""
        self.st[P_ACTIVE] = 1
        self.st[P_NEXT_T] = int(cycle) + self.period

    def consume(self, records: np.ndarray, pc: np.ndarray, n: int) -> None:
        """Fold the first ``n`` records (instructions at addresses ``pc``) into the profile."""
        if n <= 0:
            return
        profile_records(records, pc, n, self._lut, self._base, self.period, self.fe, self.st, self.pend_t,
                        self.pend_land, self.pend_bits, self.ticks, self.events, self.occurrences, self.executions,
                        self.fall, self.taken, self._tgt, self._op)

    def finish(self) -> "InstructionProfiler":
        """Resolve the samples still pending (the run has ended: no later instruction can add an event)."""
        _finish(self.st, self.pend_land, self.pend_bits, self.ticks, self.events)
        self.finished = True
        return self

    @property
    def samples(self) -> int:
        """Samples taken (including those that landed outside the program)."""
        return int(self.st[P_SAMPLES])

    @property
    def samples_outside(self) -> int:
        """Samples that landed on instructions outside the program (the OS timer handler)."""
        return int(self.st[P_OUTSIDE])


# the timing kernel, with everything compiled into it, is compiled into the profiling kernel
drop_stale_caches("profiler", (TM.MS, TM.MC, TM.MK, TM.predictors, TM.raw, TM.memport, TM.isa, TM,
                               sys.modules[__name__]))
