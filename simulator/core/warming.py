"""Functional warming: the instruction stream through caches, TLBs, prefetchers and branch predictors,
without timing (SMARTS, Wunderlich et al., ISCA 2003, §4).

Between the detailed units of a sampled run (:mod:`simulator.smarts`) the program's instructions — the
very ``InstrBlock`` chunks the timing kernel consumes — go through :func:`warm`, which makes, per
instruction and in program order, exactly the state-changing calls that
:func:`simulator.core.timing.simulate` makes, and nothing else:

* the instruction fetch (:func:`simulator.core.memport.fetch` semantics) when the instruction starts a
  new I-cache line or follows a taken transfer, a misprediction or a BTB miss of a taken transfer (the
  timing kernel's ``need_access`` rule; ``S[S_LAST_LINE]`` and ``S[S_NEED_ACCESS]`` of the core's scalar
  state carry over between the two kernels);
* the branch prediction and training of a control transfer (:func:`~simulator.core.predictors.predict_control`);
* the data access of a load or store (:func:`simulator.core.memport.data` semantics, which also trains
  the IP-stride prefetchers).

So the sequence of memory accesses and predictor updates is the detailed run's, access for access.
What is *not* the same is time: the memory kernel reads the current cycle (``SCR_NOW``) for the
busy-until times of its prefetch engines (``prefetch_engines`` > 0: the MPC7447A's L1D), the ready
times of prefetched lines, and the memory channel's calendar.  Warming has no cycles; its clock starts
at ``now0`` and advances ``cpi_q16 / 65536`` cycles per instruction (the sampled run passes the CPI its
detailed units have measured so far).  With ``pace`` (:meth:`Machine.warm_functionally`) the clock also
never runs ahead of the memory channel: an access whose own transfers wait longer than the memory latency
for the channel (``memport.channel_wait``: its queue of earlier bookings -- demand fills, prefetches,
writebacks at ``memory.bandwidth_gb_s`` -- or the rest of a line still in flight) stands the clock for the
excess before the next instruction.  A core that saturates its channel keeps about latency x bandwidth
bytes in flight (Little's law); a clock that ran faster would book the channel ever further ahead (429.mcf
at one cycle an instruction asks for 1.5 times the Nehalem's bandwidth and, unpaced, booked it 262,144
cycles ahead, which the first detailed instructions after warming then waited for).  Those times are
still approximated, and on a platform with prefetch
engines warmed state differs from detailed state in which prefetches were dropped.  On every other
platform the cache, TLB, page-walk and prefetcher state and the memory counters (all but the late
prefetches) after warming N instructions are equal, word for word, to those after simulating them in
detail (``MemoryHierarchy.time_dependent_words`` are the words that may differ); the predictor state
is equal on every platform (``tests/test_smarts.py`` checks both).

:func:`warm_caches` is bounded SMARTS's cheaper warming (:mod:`simulator.smarts`): only the levels below the L1s,
the TLBs and the page walks see the instructions, behind stand-ins of the L1s and first-level TLBs.

The core's generic counters (``CT``), its CPI stack and its pipeline state are not touched: warmed
instructions never enter the pipeline.  :func:`shift_time` then moves the pipeline's clock past the
warmed stretch, as if the pipeline had stood still while those instructions ran.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from whatif.jitcache import drop_stale_caches
from whatif.simulator import isa
from whatif.simulator.core import counters as V
from whatif.simulator.core import memport, predictors, raw
from whatif.simulator.core import timing as TM
from whatif.simulator.core.predictors import OUT_DIR, OUT_TGT, predict_control
from whatif.simulator.isa import CONTROL_OPS, OP_BRANCH, OP_LOAD, OP_STORE
from whatif.simulator.memory import caches as MC
from whatif.simulator.memory import kernel as MK
from whatif.simulator.memory import state as MS

U64 = np.uint64
CPI_ONE = 1 << 16              # the warming clock's fixed point: cycles per instruction x 65536
if CONTROL_OPS != tuple(range(OP_BRANCH, len(isa.OP_NAMES))):       # warm() tests ``op >= OP_BRANCH``
    raise RuntimeError(f"warming expects the control transfers to be the last op classes, got {CONTROL_OPS}")


@njit(cache=True, nogil=True)
def warm(cfg, S, bht, btb, ras, bp, mem, pc_a, op_a, size_a, maddr_a, msize_a, taken_a, target_a,
         start, stop, now0, cpi_q16, pace, tage=False):
    """Functionally warm instructions [start, stop) of a block (see the module docstring); instruction
    ``start + j`` accesses memory at cycle ``now0 + j * cpi_q16 / 65536``, plus, with ``pace``, the cycles
    the clock has stood for the memory channel so far (module docstring).  Returns those cycles (0 without
    ``pace``).  ``tage`` as :func:`simulator.core.timing.simulate` has it."""
    mv = memport.views(mem)
    cfg, S = raw.i64(cfg), raw.i64(S)
    bht, btb, ras, bp = raw.u8(bht), raw.u64(btb), raw.u64(ras), raw.i64(bp)
    pc_a, op_a, size_a, maddr_a, msize_a, taken_a, target_a = raw.u64(pc_a), raw.u8(op_a), raw.u8(size_a), \
        raw.u64(maddr_a), raw.u8(msize_a), raw.u8(taken_a), raw.u64(target_a)
    pkind = cfg[TM.K_PRED]
    pshift = cfg[TM.K_PC_SHIFT]
    bht_mask = cfg[TM.K_BHT_MASK]
    ctr_max = cfg[TM.K_CTR_MAX]
    ctr_thresh = cfg[TM.K_CTR_THRESH]
    hist_mask = cfg[TM.K_HIST_MASK]
    btb_sets = cfg[TM.K_BTB_SETS]
    btb_ways = cfg[TM.K_BTB_WAYS]
    ras_n = cfg[TM.K_RAS_N]
    ilb = U64(cfg[TM.K_ILINE_BITS])
    last_line = S[TM.S_LAST_LINE]
    need_access = S[TM.S_NEED_ACCESS]
    clock_q16 = np.int64(0)
    # pacing: an access may wait at most ``slack`` cycles for the channel (or a line in flight)
    slack = MK._cfg(mv, MS.G_MEM_LAT) if pace else np.int64(1) << 62
    stall = np.int64(0)
    for i in range(start, stop):
        iu = U64(i)                              # (an unsigned index: no wraparound code)
        pc = pc_a[iu]
        op = np.int64(op_a[iu])
        size = np.int64(size_a[iu])
        now = now0 + stall + (clock_q16 >> 16)
        clock_q16 += cpi_q16
        # fetch: as the timing kernel decides it
        first_line = np.int64(pc >> ilb)
        if need_access != 0 or first_line != last_line:
            memport.fetch(mv, pc, size, now)
            need_access = 0
            wait = memport.channel_wait(mv)
            if wait > slack:
                stall += wait - slack
        last_line = np.int64((pc + U64(size - 1 if size > 0 else 0)) >> ilb)
        if op >= OP_BRANCH:                      # the control transfers (CONTROL_OPS) are the last op classes
            taken = np.int64(taken_a[iu])
            pout = predict_control(op, pc, size, taken, target_a[iu], pkind, pshift, bht_mask, ctr_max, ctr_thresh,
                                   hist_mask, btb_sets, btb_ways, ras_n, bht, btb, ras, bp, tage)
            if taken != 0 or (pout & (OUT_DIR | OUT_TGT)) != 0:
                need_access = 1                  # taken, mispredicted, or a BTB miss of a taken transfer
        elif op == OP_LOAD or op == OP_STORE:
            memport.data(mv, maddr_a[iu], np.int64(msize_a[iu]), 1 if op == OP_LOAD else 2, pc, now)
            wait = memport.channel_wait(mv)
            if wait > slack:
                stall += wait - slack            # the next instruction waits for the rest
    S[TM.S_LAST_LINE] = last_line
    S[TM.S_NEED_ACCESS] = need_access
    return stall


@njit(cache=True, nogil=True)
def _shift_ring(ring_tag, ring_cnt, rs_bits, delta, live_after):
    """Move the issue-reservation ring's rows of cycles > ``live_after`` ``delta`` cycles later (row
    ``t & (RING - 1)`` to row ``(t + delta) & (RING - 1)``), and the RS-release bits with them.  The timing
    kernel reads no cycle at or before the older of the RS cursor and the last dispatch again (issue looks
    at cycles after dispatch; the RS cursor reads the cycles after itself), so the other rows are dead and
    stay as they are: their tags never match a cycle that is read, and their bits are cleared."""
    mask = TM.RING - 1
    n = 0
    for row in range(TM.RING):
        if ring_tag[row] > live_after:
            n += 1
    tags = np.empty(n, np.int64)
    rows = np.empty((n, TM.RING_COLS), np.int16)
    k = 0
    for row in range(TM.RING):
        if ring_tag[row] > live_after:
            tags[k] = ring_tag[row]
            rows[k] = ring_cnt[row]
            ring_tag[row] = -1                   # vacated (a row whose tag does not match reads as empty)
            k += 1
    rs_bits[:] = 0                               # (the dead rows' releases are never read again)
    for k in range(n):
        t = tags[k] + delta
        row = t & mask
        ring_tag[row] = t
        ring_cnt[row] = rows[k]
        if rows[k, TM.RS_COL] != 0:
            rs_bits[row >> 6] |= np.uint64(1) << np.uint64(row & 63)


def shift_time(state, CT: np.ndarray, delta: int) -> None:
    """Move the core's pipeline state ``delta`` cycles later (exactly: every cycle-valued word, the
    issue-reservation ring rotated with it), so that the core resumes as if it had stood still for
    ``delta`` cycles; ``cycles`` (``CT``) moves with it.  Sequence numbers, counts and the CPI stack
    are unchanged.  ``state``: :class:`simulator.core.model.CoreState`."""
    delta = int(delta)
    if delta <= 0:
        return
    S = state.S
    for k in (TM.S_LAST_F, TM.S_REDIRECT, TM.S_LAST_D, TM.S_LAST_E, TM.S_LAST_R, TM.S_LAST_W, TM.S_SERIAL_UNTIL,
              TM.S_RS_CUR, TM.S_MSHR_MAX, TM.S_PARTIAL_MAX, TM.S_PORT_CYCLE):
        S[k] += delta
    # (reg_port_from: every word; slot 0's stays out of reach, and a register never written nor read, whose
    # word was 0, reads through a port from the first cycle after the shift as before it)
    for ring in (state.rob_ring, state.lq_ring, state.sq_ring, state.fq_ring, state.reg_ready, state.reg_port_from,
                 state.ufree):
        ring += delta
    state.reg_partial[state.reg_partial >= 0] += delta       # -1: no pending partial write
    state.mshr[:, 0] += delta                                 # busy until (line and level stay)
    _shift_ring(state.ring_tag, state.ring_cnt, state.rs_bits, delta, min(S[TM.S_RS_CUR], S[TM.S_LAST_D]) - delta)
    CT[V.CT_CYCLES] += delta


# ============================================================================ cache warming (bounded SMARTS)
@njit(cache=True, inline="always")
def _below_l1(mv, l1, lines, paddr, src, write, now, page_bits, slack):
    """One L1 miss of the stand-in L1 ``lines`` (direct-mapped, a line number per entry): the L1's line of
    ``paddr`` requested from the level below it, as the real L1's fill would; returns the cycles the warming
    clock stands for the channel (pacing, as in :func:`warm`).  A hit in the stand-in changes nothing."""
    c = MS.C0 + l1 * MS.NCOL
    lb = U64(MK._cfg(mv, c + MS.C_LINE_BITS))
    line = paddr >> lb
    k = line & U64(len(lines) - 1)
    key = line | (U64(1) << U64(63)) if write else line       # a line first read, then written, goes again
    if lines[k] == key or (not write and lines[k] == (line | (U64(1) << U64(63)))):
        return np.int64(0)
    lines[k] = key
    nxt = MK._cfg(mv, c + MS.C_NEXT)
    if nxt < 0:
        return np.int64(0)
    MK._st(mv, MS.SCR_NOW, now)
    MK._st(mv, MS.G_CH_DELAY, 0)
    first = line << lb
    # (run-time values: constants would compile another specialisation of the cache access, 5 s cold each)
    MK._cache_access(mv, nxt, first, first + ((U64(1) << lb) - U64(1)), MS._var(src), MS._var(write), page_bits,
                     MS._var(True))
    if MK._ld(mv, MS.G_ST_N) != 0:
        MC.run_streamers(mv)
    wait = memport.channel_wait(mv)
    return wait - slack if wait > slack else np.int64(0)


@njit(cache=True, inline="always")
def _translated(mv, pages, vaddr, t0, t1, page_bits, now):
    """A page new to the stand-in first-level TLB ``pages`` (direct-mapped, a page number per entry) goes
    through the real TLB chain (walks included); a page it holds changes nothing."""
    if t0 < 0:
        return
    vpn = vaddr >> U64(page_bits)
    k = vpn & U64(len(pages) - 1)
    if pages[k] != vpn:
        pages[k] = vpn
        MK._st(mv, MS.SCR_NOW, now)
        MK.translate(mv, vaddr, t0, t1, page_bits)


@njit(cache=True, nogil=True)
def warm_caches(mem, iline, dline, ipage, dpage, pc_a, op_a, maddr_a, start, stop, now0, cpi_q16, pace):
    """Cache warming of instructions [start, stop) of a block (bounded SMARTS, :mod:`simulator.smarts`): the
    levels below the L1s, the TLBs and the page walks see the instructions' fetch lines and data lines
    through stand-ins of the L1s and first-level TLBs (``iline``/``dline``: direct-mapped arrays of line
    numbers, ``ipage``/``dpage``: of page numbers, all with power-of-two lengths, kept by the caller between
    calls); no predictor, no L1, no pipeline.  A line the stand-in L1 misses is requested from the level
    below as the L1's fill would request it, with that level's miss-triggered prefetchers and streamer
    running; a store's line is requested as a write (its line arrives dirty below, as the L1's writeback
    would leave it).  Clock and pacing as :func:`warm`; returns the cycles the clock stood."""
    mv = memport.views(mem)
    pc_a, op_a, maddr_a = raw.u64(pc_a), raw.u8(op_a), raw.u64(maddr_a)
    l1i = MK._cfg(mv, MS.G_L1I)
    l1d = MK._cfg(mv, MS.G_L1D)
    it0, it1 = MK._cfg(mv, MS.G_ITLB0), MK._cfg(mv, MS.G_ITLB1)
    dt0, dt1 = MK._cfg(mv, MS.G_DTLB0), MK._cfg(mv, MS.G_DTLB1)
    ipb = MK._cfg(mv, MS.G_IPAGE_BITS)
    dpb = MK._cfg(mv, MS.G_PAGE_BITS)
    ilb = U64(MK._cfg(mv, MS.C0 + l1i * MS.NCOL + MS.C_LINE_BITS)) if l1i >= 0 else U64(6)
    slack = MK._cfg(mv, MS.G_MEM_LAT) if pace else np.int64(1) << 62
    stall = np.int64(0)
    clock_q16 = np.int64(0)
    last_line = U64(0xFFFFFFFFFFFFFFFF)
    for i in range(start, stop):
        iu = U64(i)
        pc = pc_a[iu]
        op = np.int64(op_a[iu])
        now = now0 + stall + (clock_q16 >> 16)
        clock_q16 += cpi_q16
        if l1i >= 0 and (pc >> ilb) != last_line:
            last_line = pc >> ilb
            _translated(mv, ipage, pc, it0, it1, ipb, now)
            stall += _below_l1(mv, l1i, iline, MK.phys(mv, pc, ipb), MS.SRC_IFETCH, False, now, ipb, slack)
        if (op == OP_LOAD or op == OP_STORE) and l1d >= 0:
            va = maddr_a[iu]
            _translated(mv, dpage, va, dt0, dt1, dpb, now)
            stall += _below_l1(mv, l1d, dline, MK.phys(mv, va, dpb), MS.SRC_LOAD if op == OP_LOAD else MS.SRC_STORE,
                               op == OP_STORE, now, dpb, slack)
    return stall


# the memory hierarchy's fast paths and the predictors are compiled into the warming kernel
drop_stale_caches("warming", (MS, MC, MK, predictors, raw, memport, isa, TM, sys.modules[__name__]))
