"""The numba timing model of a core: one parameterised kernel for in-order and out-of-order cores.

Instructions are processed once, in program order, in O(1) amortised time each.
For every instruction the kernel computes the cycle it is fetched (``f``), reaches
dispatch (``fr = f + FE``), dispatches (``d``), issues (``e``), completes (``c``,
its result usable by dependants from that cycle) and retires (``r``).  Older
instructions are scheduled first and later ones never change them: structures
are granted oldest-first, as in a real core with age-ordered selection.
Semantics (``tests/coreref.py`` implements the same rules, written for clarity):

Fetch
  At most ``fetch_width`` instructions per cycle; a taken transfer ends the fetch
  group (the next instruction is fetched the cycle after).  A new I-cache line, or
  any instruction after a taken transfer or redirect, is one access through the
  ITLB and L1I; a miss delays the instruction by (supplying level's latency - L1I
  latency), an ITLB miss by the second-level TLB latency, or that plus the page
  walk's cycles plus ``page_walk.overhead_cycles``.  The fetch queue holds
  ``fetch_queue`` instructions: ``f[i] >= d[i - fetch_queue] - FE``.
  ``FE = mispredict_penalty``: fetch-to-dispatch depth, so that a redirect at
  cycle t dispatches the first correct-path instruction at ``t + FE``.
Branches
  Predicted at fetch (:mod:`simulator.core.predictors`).  A mispredicted transfer
  redirects fetch when it resolves: the next instruction's fetch is ``>= c[b]``.
  A BTB miss on a correctly predicted taken transfer redirects at decode: the next
  fetch is ``>= f[b] + btb_miss_penalty``.  Wrong-path instructions are counted,
  not simulated: ``dispatch_width`` per cycle in ``[d[b] + 1, c[b])``, at most
  ``rob_entries - 1``.
Dispatch (rename/allocate), in order, at most ``dispatch_width`` per cycle, at
  ``d >= fr`` and:
  * ROB (out-of-order only): ``d[i] >= r[i - rob_entries]``;
  * RS: at most ``rs_entries`` dispatched, unissued instructions: an entry is held
    over ``[d, e)`` and freed at issue, out of order (``d[i] >=`` the
    ``rs_entries``-th largest release cycle of the older instructions; the release
    is the issue cycle, or ``d + HORIZON`` for an issue beyond the horizon);
  * load queue: ``d >= r`` of the load ``load_queue`` loads back;
  * store queue: ``d >= w`` of the store ``store_queue`` stores back, where ``w``
    is the cycle the store drains to the cache after retirement;
  * serialising instructions dispatch after every older instruction has retired,
    and younger ones after they retire;
  * RAT (x86 only): reading a register or the flags whose last write was partial
    (``FLAG_PARTIAL_WRITE`` / ``FLAG_FLAGS_PARTIAL``) and has not retired by the
    candidate dispatch cycle adds ``RAT_PENALTY`` cycles (merge micro-op).
    ALU/MUL/DIV write the flags; conditional branches read them.
  * register read ports (``register_read_ports`` = P > 0, the P6 family's ROB read
    ports): a source register whose last writer retired by the candidate cycle
    (or that was never written) is read from the permanent register file, at most
    P distinct registers a cycle (a register read again in the same cycle is
    free; values not yet retired come from the ROB/bypass without a port).  When
    the instruction's reads do not fit beside those already made in its cycle it
    dispatches the cycle after (a RAT stall: ``RAT_STALLS.ROB_READ_PORT``).
  Entries freed in a cycle can be reallocated in that cycle.
Issue, out of order: ``e >= max(d + 1, operands ready)``; then the earliest cycle
  with a free issue slot (``issue_width`` per cycle) and a free unit of the
  instruction's class (pipelined: ``count`` per cycle; non-pipelined: a unit is
  busy for ``latency`` cycles).  Reservations are kept in a cycle-indexed ring for
  ``HORIZON`` cycles beyond dispatch; a cycle beyond the horizon is granted
  without reservation.
Issue, in order: ``e >= e[i-1]``; the instruction joins the issue group of
  ``i-1`` (same cycle) when the group has fewer than ``group_size`` (and
  ``issue_width``) members, ``i-1`` is not a control transfer (a branch ends a
  group), ``i`` is not serialising, and ``i`` reads no register written by a member
  of the group; otherwise it issues at ``e[i-1] + 1`` at the earliest.  Further
  ``e >= d + 1``, ``e >= r[i - rob_entries] - L1D latency`` (completion window:
  the execution pipeline holds instructions for the L1D load-to-use latency after
  issue, and ``rob_entries`` more may wait beyond that for completion, so L1 hits
  pipeline while a miss blocks issue ``rob_entries`` instructions later), operands
  ready, and a unit instance free (pipelined: one cycle, else ``latency``).
Address-generation interlock (``agi_penalty > 0``): a load/store whose ``areg``
  became ready fewer than ``agi_distance`` cycles before its candidate issue cycle
  issues ``agi_penalty`` cycles later.
Execute: ``c = e + unit latency``; control transfers and stores ``c = e + 1``
  (stores after translation).  Loads: ``c = e + DTLB cost + latency of the
  supplying level`` (load-to-use; memory = ``memory.latency_cycles``).  An L1D miss
  holds one of the L1D's ``mshrs`` from its start to its fill; when all are busy it
  starts when the earliest frees.  Its wait for the memory channel or for a line
  still in flight below (from the memory kernel, counted from its readiness) runs
  at the same time as that wait: the fill is at max(MSHR start, ready + wait) +
  latency (a timed L1D prefetch's alike).  A load that hits a line still being filled by
  an MSHR completes no earlier than the fill.  A store that misses a
  write-allocate L1D takes an MSHR for its read-for-ownership.
Retire: in order, at most ``retire_width`` per cycle, ``r >= c``.  Stores drain
  in order after retirement, one per cycle: ``w = max(r, w_prev + 1, fill)``.
CPI stack (retirement side): a cycle in which an instruction retires is *base*;
  the stall cycles ``(r_prev, r)`` before instruction i retires are charged to
  i's phase at that time: before ``f - penalties + FE``: its fetch cause
  (branch_mispredict, btb or frontend); then itlb, icache; until ``d + 1``: its
  dispatch cause; until ``e``: its issue cause (dependency, agi, execution,
  resource); then its execution: DTLB cost to dtlb, the rest to the data level
  that supplied a load (MSHR waits included) or to execution.  When i had not
  begun executing when the stall began (``r_prev + 1 <= e``), its nominal
  latency (L1D latency for a load, 1 for a store, the unit latency otherwise),
  which would have overlapped older work had i arrived in time, is charged to the
  cause of its late arrival instead (its issue cause if it waited to issue, else
  its dispatch cause): the refill after a mispredict, the load behind an AGI.  A front-end cause is carried through dispatch: the dispatch
  cause is the front end's when no back-end structure held the instruction.
Records (instruction profiling, :mod:`simulator.core.profiler`): when ``rec`` has rows, row ``i``
  receives instruction i's schedule and event intervals (``R_*`` below): fetch start ``s``, the end
  of its ITLB wait, ``f``, ``e``, its AGI wait ``[R_AGI0, R_AGI1)``, the end of its DTLB wait, ``c``,
  ``r`` and ``R_FLAGS`` (``RF_*``).  With an empty ``rec`` nothing is written.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

from whatif.jitcache import drop_stale_caches
from whatif.simulator import isa
from whatif.simulator.core import counters as V
from whatif.simulator.core import predictors
from whatif.simulator.core.predictors import OUT_BTB_LOOKUP, OUT_BTB_MISS, OUT_DIR, OUT_RAS_MISS, OUT_TGT, \
    predict_control
from whatif.simulator.isa import FLAG_FLAGS_PARTIAL, FLAG_PARTIAL_WRITE, FLAG_SERIALIZING, OP_ALU, OP_BRANCH, OP_CALL, \
    OP_DIV, OP_FP, OP_JUMP, OP_LOAD, OP_MUL, OP_RET, OP_STORE
from whatif.simulator.core import memport, raw
from whatif.simulator.memory import caches as MC
from whatif.simulator.memory import kernel as MK
from whatif.simulator.memory import state as MS

U64 = np.uint64
# the loop tells a control transfer by op >= OP_BRANCH: the transfers must be the last ops
assert (OP_BRANCH, OP_JUMP, OP_CALL, OP_RET) == tuple(range(OP_BRANCH, len(isa.OP_NAMES)))

RING = 1 << 15                 # issue-reservation ring (cycles)
HORIZON = RING // 2            # reservations are tracked this many cycles beyond dispatch
RING_COLS = 8                  # per cycle: issues, issues per unit class (6), RS releases
RS_COL = 7
RS_WORDS = RING // 64          # rs_bits: a bit per ring row, set while the row holds RS releases the cursor
#                                has not read (the cursor skips the cycles without one, 64 at a time)
MSHR_WORDS = 3                # an MSHR's words: the cycle it frees, its line, its level word
MSHR_LEVEL = 15               # an MSHR's level word: the supplying level, and
MSHR_PREFETCH = 16            # set when a prefetch holds it
RAT_PENALTY = 3                # [ORM] partial-register merge on Intel Core / Nehalem: 2-3 cycles
NREG = 130                     # register slots: 0 = "no register", 1..128 = registers, 129 = flags
FLAGS_REG = 129
NUNIT = 6
UNIT_NAMES = ("ialu", "imul", "idiv", "fpu", "lsu", "branch")
MAX_UNIT_COUNT = 8

# ---- configuration vector (cfg) ------------------------------------------------------------------
(K_INORDER, K_FW, K_DW, K_IW, K_RW, K_FQ, K_ROB, K_RS, K_LQ, K_SQ, K_FE, K_BTB_PEN, K_AGI_PEN, K_AGI_DIST,
 K_GROUP, K_PRED, K_PC_SHIFT, K_BHT_MASK, K_CTR_MAX, K_CTR_THRESH, K_HIST_MASK, K_BTB_SETS, K_BTB_WAYS,
 K_RAS_N, K_L1I, K_L1D, K_ILINE_BITS, K_DLINE_BITS, K_NLEVELS, K_MSHRS, K_ITLB1_LAT, K_DTLB1_LAT, K_WALK_OVH,
 K_RAT, K_DWALLOC, K_RPORTS) = range(36)
K_UNIT_OF_OP = 40              # 10 entries: unit class of each op
K_UNIT_CNT = 50                # 6 entries
K_UNIT_LAT = 56
K_UNIT_PIPE = 62
NCFG = 68

# ---- per-instruction records (profiling) ---------------------------------------------------------
(R_S, R_ITLB, R_F, R_E, R_AGI0, R_AGI1, R_DTLB, R_C, R_R, R_FLAGS) = range(10)
NREC = 10
RF_L1I_MISS = 1        # this instruction's fetch access missed the L1I (fetch waited [R_ITLB, R_F))
RF_ITLB_MISS = 2       # ... missed the first-level ITLB (waited [R_S, R_ITLB))
RF_DTLB_MISS = 4       # its data access missed the first-level DTLB (waited [R_E, R_DTLB))
RF_L1D_MISS = 8        # its data access missed the L1D (supplied from beyond it)
RF_DATA_WAIT = 16      # a load whose data came later than an L1D hit would: waited [R_DTLB, R_C)
RF_MISPREDICT = 32     # a mispredicted control transfer: fetch redirected at R_C
RF_AGI = 64            # issue delayed by the address-generation interlock: [R_AGI0, R_AGI1)
RF_LEADER = 128        # first instruction of its issue group (every instruction out of order)

# ---- scalar state (S) ----------------------------------------------------------------------------
(S_SEQ, S_LAST_F, S_F_COUNT, S_FETCH_BREAK, S_REDIRECT, S_REDIRECT_CAUSE, S_LAST_LINE, S_NEED_ACCESS,
 S_LAST_D, S_D_COUNT, S_LAST_E, S_G_COUNT, S_G_START, S_PREV_CTRL, S_LAST_R, S_R_COUNT, S_LAST_W,
 S_SERIAL_UNTIL, S_ROB_PTR, S_FQ_PTR, S_LQ_PTR, S_SQ_PTR, S_RS_CUR, S_RS_REL, S_MSHR_MAX, S_PARTIAL_MAX,
 S_PORT_CYCLE, S_PORT_USED) = range(28)
NSTATE = 28
# S_PORT_CYCLE: the latest cycle with a register read through a read port, S_PORT_USED: the reads in it (the
# registers read in a cycle are those whose reg_port_from is the cycle after)
PORT_NEVER = 1 << 62           # reg_port_from of slot 0 ("no register"): never read through a port


def initial_scalars() -> np.ndarray:
    S = np.zeros(NSTATE, dtype=np.int64)
    S[S_LAST_F] = 0
    S[S_F_COUNT] = 0
    S[S_REDIRECT_CAUSE] = V.CS_FRONTEND
    S[S_LAST_LINE] = -1
    S[S_NEED_ACCESS] = 1
    S[S_LAST_D] = 0
    S[S_LAST_E] = -1
    S[S_G_START] = -1
    S[S_LAST_R] = -1
    S[S_LAST_W] = -1
    S[S_PARTIAL_MAX] = -1
    S[S_PORT_CYCLE] = -1
    return S


@njit(cache=True, inline="always")
def _port_read(reg_port_from, u, d):
    """1 if register slot ``u`` is read through a read port at cycle ``d``, which marks it read, else 0.
    ``reg_port_from``: the first cycle from which a dispatch reads the register through a port -- the later
    of its last writer's retirement (a source not yet retired comes from the ROB or the bypass) and the
    cycle after its latest port read (a register read again in its cycle is free; dispatch cycles never
    decrease, so one word holds both); slot 0, "no register": never."""
    if reg_port_from[u] <= d:
        reg_port_from[u] = d + 1
        return 1
    return 0


@njit(cache=True, inline="always")
def _port_reads(reg_port_from, u1, u2, ua, d):
    """The sources' reads through a read port at cycle ``d``, marked read (:func:`_port_read`): a register
    named twice is read once, since the first read marks it.  The marks of reads an instruction then makes
    a cycle later instead (its reads do not fit in ``d``) are harmless: ``d + 1`` reads them anyway."""
    return _port_read(reg_port_from, u1, d) + _port_read(reg_port_from, u2, d) + _port_read(reg_port_from, ua, d)


# ============================================================================ helpers
@njit(cache=True, inline="always")
def _charge(acc, idx, p, b, end):
    """Charge cycles [p, min(b, end)) to acc[idx]; returns the new start."""
    hi = end if end < b else b
    if hi > p:
        acc[idx] += hi - p
        return hi
    return p


@njit(cache=True, inline="always")
def _split(acc, idx, covered, bound):
    """Priority split: cycles [covered, bound) go to acc[idx]."""
    if bound > covered:
        acc[idx] += bound - covered
        return bound
    return covered


@njit(cache=True, inline="always")
def _ring_row(ring_tag, ring_cnt, t):
    """The ring row of cycle ``t``, cleared when it still holds an older cycle; returns the index of its first
    count in ``ring_cnt`` (flat: ``RING_COLS`` counts a row)."""
    row = t & (RING - 1)
    at = row * RING_COLS
    if ring_tag[row] != t:
        ring_tag[row] = t
        for k in range(RING_COLS):
            ring_cnt[at + k] = 0
    return at


@njit(cache=True, inline="always")
def _ooo_issue(ring_tag, ring_cnt, t0, col, occ, iw, ucnt, horizon_end):
    """Earliest cycle >= t0 with an issue slot and a unit (ring column ``col``) free for ``occ`` cycles;
    reserves them.  A cycle beyond the horizon is granted without reservation."""
    t = t0
    if occ == 1:
        while t <= horizon_end:
            row = t & (RING - 1)
            at = row * RING_COLS
            if ring_tag[row] != t:
                ring_tag[row] = t
                for k in range(RING_COLS):
                    ring_cnt[at + k] = 0
                ring_cnt[at] = 1
                ring_cnt[at + col] = 1
                return t
            if ring_cnt[at] < iw and ring_cnt[at + col] < ucnt:
                ring_cnt[at] += 1
                ring_cnt[at + col] += 1
                return t
            t += 1
        return t
    while t + occ - 1 <= horizon_end:
        row = t & (RING - 1)
        ok = ring_tag[row] != t or ring_cnt[row * RING_COLS] < iw
        k = 0
        while ok and k < occ:
            rk = (t + k) & (RING - 1)
            ok = ring_tag[rk] != t + k or ring_cnt[rk * RING_COLS + col] < ucnt
            k += 1
        if ok:
            at = _ring_row(ring_tag, ring_cnt, t)
            ring_cnt[at] += 1
            for k in range(occ):
                ring_cnt[_ring_row(ring_tag, ring_cnt, t + k) + col] += 1
            return t
        t += 1
    return t


@njit(cache=True, inline="always")
def _rs_advance(ring_tag, ring_cnt, rs_bits, cur, rel, upto, first):
    """Move the RS cursor to cycle ``upto``, adding the releases (issues) of the cycles passed; with
    ``first``, stop at the first cycle that has releases instead.  Only the cycles whose ``rs_bits`` bit
    is set can hold releases (every release lies after the cursor when it is recorded), so the others are
    skipped a word at a time; a bit read is cleared."""
    while cur < upto:
        t = cur + 1
        word = U64((t >> 6) & (RS_WORDS - 1))
        bits = rs_bits[word] >> U64(t & 63)
        if bits == 0:
            cur = t | 63                      # no release in the rest of this word's cycles
            if cur > upto:
                cur = upto
            continue
        t += np.int64(trailing_zeros(bits))
        if t > upto:
            cur = upto
            break
        cur = t
        rs_bits[word] &= ~(U64(1) << U64(t & 63))
        row = t & (RING - 1)
        if ring_tag[row] == t:
            rel += ring_cnt[row * RING_COLS + RS_COL]
            if first:
                break
    return cur, rel


@njit(cache=True, inline="always")
def _rs_mark(rs_bits, t):
    """Note that cycle ``t``'s ring row holds an RS release."""
    rs_bits[U64((t >> 6) & (RS_WORDS - 1))] |= U64(1) << U64(t & 63)


@njit(cache=True, inline="always")
def _earliest_mshr(mshr, n):
    """The MSHR that frees first (the lowest-numbered among equals): the index of its first word in
    ``mshr`` (flat: ``MSHR_WORDS`` words an MSHR)."""
    k_best = U64(0)
    best = mshr[0]
    for k in range(U64(1), U64(n)):
        if mshr[k * U64(MSHR_WORDS)] < best:
            best = mshr[k * U64(MSHR_WORDS)]
            k_best = k
    return k_best * U64(MSHR_WORDS)


@njit(cache=True, inline="always")
def _tlb_cost(mv, t1_lat, walk_ovh):
    """Translation cycles of the access just made: second-level TLB latency, plus the walk."""
    tlb = memport.tlb_outcome(mv)
    if tlb == 0:
        return 0
    if tlb == 1:
        return t1_lat
    return t1_lat + walk_ovh + memport.walk_cycles(mv)


# ============================================================================ the kernel
@njit(cache=True, nogil=True)
def simulate(cfg, lat, S, rob_ring, lq_ring, sq_ring, fq_ring, reg_ready, reg_partial, reg_wseq, reg_port_from,
             ring_tag, ring_cnt, rs_bits, ufree, mshr, opcount, bht, btb, ras, bp, CT, CS,
             mem, pc_a, op_a, size_a, dst_a, src1_a, src2_a, areg_a, maddr_a, msize_a, taken_a, target_a, flags_a,
             start, stop, until_cycle, rec, tage=False):
    """Simulate instructions [start, stop) of a block; returns how many were consumed (fewer than
    stop - start when the last retirement reached ``until_cycle`` >= 0).  ``rec``: an int64 array of
    ``NREC`` columns with a row per block instruction to receive the records, or no rows.  ``tage``: pass
    True when the predictor is TAGE, else leave it out (:func:`~simulator.core.predictors.predict_control`)."""
    mv = memport.views(mem)
    # raw views: no reference counting when the helpers below receive them
    cfg, lat, S, rob_ring, lq_ring, sq_ring = raw.i64(cfg), raw.i64(lat), raw.i64(S), raw.i64(rob_ring), \
        raw.i64(lq_ring), raw.i64(sq_ring)
    fq_ring, reg_ready, reg_partial, reg_wseq = raw.i64(fq_ring), raw.i64(reg_ready), raw.i64(reg_partial), \
        raw.i64(reg_wseq)
    reg_port_from = raw.i64(reg_port_from)
    # (the two-dimensional ones flat: an index of a row of runtime length took a multiplication by a word from
    # the stack)
    ring_tag, ring_cnt, rs_bits, ufree, mshr, opcount = raw.i64(ring_tag), raw.i16_flat(ring_cnt), \
        raw.u64(rs_bits), raw.i64(ufree), raw.i64_flat(mshr), raw.i64(opcount)
    bht, btb, ras, bp, CT, CS = raw.u8(bht), raw.u64(btb), raw.u64(ras), raw.i64(bp), raw.i64(CT), raw.i64(CS)
    pc_a, op_a, size_a, dst_a, src1_a, src2_a, areg_a = raw.u64(pc_a), raw.u8(op_a), raw.u8(size_a), \
        raw.i8(dst_a), raw.i8(src1_a), raw.i8(src2_a), raw.i8(areg_a)
    maddr_a, msize_a, taken_a, target_a, flags_a = raw.u64(maddr_a), raw.u8(msize_a), raw.u8(taken_a), \
        raw.u64(target_a), raw.u8(flags_a)
    inorder = cfg[K_INORDER] != 0
    FW = cfg[K_FW]
    DW = cfg[K_DW]
    IW = cfg[K_IW]
    RW = cfg[K_RW]
    FQ = cfg[K_FQ]
    ROB = cfg[K_ROB]
    RS = cfg[K_RS]
    LQ = cfg[K_LQ]
    SQ = cfg[K_SQ]
    FE = cfg[K_FE]
    BTB_PEN = cfg[K_BTB_PEN]
    AGI_PEN = cfg[K_AGI_PEN]
    AGI_DIST = cfg[K_AGI_DIST]
    GROUP = cfg[K_GROUP]
    pkind = cfg[K_PRED]
    pshift = cfg[K_PC_SHIFT]
    bht_mask = cfg[K_BHT_MASK]
    ctr_max = cfg[K_CTR_MAX]
    ctr_thresh = cfg[K_CTR_THRESH]
    hist_mask = cfg[K_HIST_MASK]
    btb_sets = cfg[K_BTB_SETS]
    btb_ways = cfg[K_BTB_WAYS]
    ras_n = cfg[K_RAS_N]
    L1I = cfg[K_L1I]
    L1D = cfg[K_L1D]
    ilb = U64(cfg[K_ILINE_BITS])
    dlb = U64(cfg[K_DLINE_BITS])
    NMSHR = cfg[K_MSHRS]
    itlb1 = cfg[K_ITLB1_LAT]
    dtlb1 = cfg[K_DTLB1_LAT]
    walk_ovh = cfg[K_WALK_OVH]
    rat_on = cfg[K_RAT] != 0
    dwalloc = cfg[K_DWALLOC] != 0
    RPORTS = cfg[K_RPORTS]
    lat_l1i = lat[L1I]
    lat_l1d = lat[L1D]
    group_cap = GROUP if GROUP < IW else IW
    recording = rec.shape[0] > 0

    seq = S[S_SEQ]
    last_f = S[S_LAST_F]
    f_count = S[S_F_COUNT]
    fetch_break = S[S_FETCH_BREAK]
    redirect = S[S_REDIRECT]
    redirect_cause = S[S_REDIRECT_CAUSE]
    last_line = S[S_LAST_LINE]
    need_access = S[S_NEED_ACCESS]
    last_d = S[S_LAST_D]
    d_count = S[S_D_COUNT]
    last_e = S[S_LAST_E]
    g_count = S[S_G_COUNT]
    g_start = S[S_G_START]
    prev_ctrl = S[S_PREV_CTRL]
    last_r = S[S_LAST_R]
    r_count = S[S_R_COUNT]
    last_w = S[S_LAST_W]
    serial_until = S[S_SERIAL_UNTIL]
    # ring pointers (rings are zero-initialised: an absent older instruction gives a bound of 0)
    rob_ptr = S[S_ROB_PTR]
    fq_ptr = S[S_FQ_PTR]
    lq_ptr = S[S_LQ_PTR]
    sq_ptr = S[S_SQ_PTR]
    rs_cur = S[S_RS_CUR]
    rs_rel = S[S_RS_REL]
    mshr_max = S[S_MSHR_MAX]
    partial_max = S[S_PARTIAL_MAX]
    port_cycle = S[S_PORT_CYCLE]
    port_used = S[S_PORT_USED]

    until = until_cycle if until_cycle >= 0 else np.int64(1 << 62)     # (one comparison per instruction)
    i = start
    while i < stop:
        if last_r >= until:
            break
        # indices known to be non-negative are unsigned: numba wraps every signed index around (a negative
        # one counts from the end), which cost 10 % of the loop's host instructions
        iu = U64(i)
        pc = pc_a[iu]
        op = np.int64(op_a[iu])
        size = np.int64(size_a[iu])
        flags = np.int64(flags_a[iu])
        taken = np.int64(taken_a[iu])
        is_load = op == OP_LOAD
        is_store = op == OP_STORE
        is_ctrl = op >= OP_BRANCH           # (OP_BRANCH, OP_JUMP, OP_CALL, OP_RET: the last four ops)
        serial = (flags & FLAG_SERIALIZING) != 0

        # ------------------------------------------------------------------ fetch
        s = last_f if (f_count < FW and fetch_break == 0) else last_f + 1
        pre_cause = V.CS_FRONTEND
        if redirect > s:
            s = redirect
            pre_cause = redirect_cause
        b = fq_ring[U64(fq_ptr)] - FE
        if b > s:
            s = b
            pre_cause = V.CS_FRONTEND
        p_itlb = 0
        p_icache = 0
        first_line = np.int64(pc >> ilb)
        if need_access != 0 or first_line != last_line:
            CT[V.CT_FETCH_ACC] += 1
            lvl = memport.fetch(mv, pc, size, s)
            p_itlb = _tlb_cost(mv, itlb1, walk_ovh)
            if lvl != L1I:
                p_icache = lat[U64(lvl)] - lat_l1i + memport.channel_wait(mv)
            need_access = 0
        last_line = np.int64((pc + U64(size - 1 if size > 0 else 0)) >> ilb)
        f = s + p_itlb + p_icache
        f_count = f_count + 1 if f == last_f else 1
        last_f = f
        fetch_break = 0
        fr = f + FE
        seg0 = s + FE
        seg1 = seg0 + p_itlb
        fe_last = V.CS_ICACHE if p_icache > 0 else (V.CS_ITLB if p_itlb > 0 else pre_cause)

        # ------------------------------------------------------------------ branch prediction
        pout = 0
        mispredicted = False
        if is_ctrl:
            pout = predict_control(op, pc, size, taken, target_a[iu], pkind, pshift, bht_mask, ctr_max, ctr_thresh,
                                   hist_mask, btb_sets, btb_ways, ras_n, bht, btb, ras, bp, tage)
            if taken:
                CT[V.CT_TAKEN] += 1
                fetch_break = 1
                need_access = 1
            if pout & OUT_BTB_LOOKUP:
                CT[V.CT_BTB_LOOKUPS] += 1
            if pout & OUT_BTB_MISS:
                CT[V.CT_BTB_MISSES] += 1
            if pout & OUT_RAS_MISS:
                CT[V.CT_RAS_MISPRED] += 1
            # (inside the transfer's branch: the other instructions skip these tests)
            mispredicted = (pout & (OUT_DIR | OUT_TGT)) != 0
            if mispredicted:
                CT[V.CT_MISPRED] += 1
                if pout & OUT_DIR:
                    CT[V.CT_MISPRED_DIR] += 1
                else:
                    CT[V.CT_MISPRED_TGT] += 1
            elif (pout & OUT_BTB_MISS) != 0 and taken != 0:
                redirect = f + BTB_PEN
                redirect_cause = V.CS_BTB

        # ------------------------------------------------------------------ dispatch
        slot = last_d if d_count < DW else last_d + 1
        base = slot if slot > fr else fr
        b_rob = 0
        if not inorder:
            b_rob = rob_ring[U64(rob_ptr)]
        # RS: occupancy at cycle t = older instructions not released (issued) by t; the cursor follows
        # the dispatch cycle and counts releases
        # (advanced lazily: seq - rs_rel over-counts while the cursor lags, so only a possibly full RS
        # needs it moved to ``base``; it never lags more than HORIZON / 2, so no unread ring row is reused)
        b_rs = 0
        if seq - rs_rel >= RS or base - rs_cur > HORIZON // 2:
            rs_cur, rs_rel = _rs_advance(ring_tag, ring_cnt, rs_bits, rs_cur, rs_rel, base, False)
            if seq - rs_rel >= RS:
                # full: the first cycle after which fewer than RS are held (the occupancy falls only in
                # cycles with releases, and the older instructions' releases all lie ahead)
                while seq - rs_rel >= RS:
                    rs_cur, rs_rel = _rs_advance(ring_tag, ring_cnt, rs_bits, rs_cur, rs_rel, rs_cur + RING, True)
                b_rs = rs_cur
        b_lq = lq_ring[U64(lq_ptr)] if is_load else 0
        b_sq = sq_ring[U64(sq_ptr)] if is_store else 0
        b_ser = serial_until
        if serial and last_r > b_ser:
            b_ser = last_r
        d = base
        dcause = fe_last
        if b_rob > d:
            d = b_rob
            dcause = V.CS_RESOURCE
        if b_rs > d:
            d = b_rs
            dcause = V.CS_RESOURCE
        if b_lq > d:
            d = b_lq
            dcause = V.CS_RESOURCE
        if b_sq > d:
            d = b_sq
            dcause = V.CS_RESOURCE
        if b_ser > d:
            d = b_ser
            dcause = V.CS_SERIAL
        r1 = np.int64(src1_a[iu]) + 1
        r2 = np.int64(src2_a[iu]) + 1
        ra = np.int64(areg_a[iu]) + 1
        u1, u2, ua = U64(r1), U64(r2), U64(ra)       # (their unsigned copies, for indexing)
        b_rat = 0
        if rat_on and partial_max > d:
            pend = reg_partial[u1]
            if reg_partial[u2] > pend:
                pend = reg_partial[u2]
            if reg_partial[ua] > pend:
                pend = reg_partial[ua]
            if op == OP_BRANCH and reg_partial[FLAGS_REG] > pend:
                pend = reg_partial[FLAGS_REG]
            if pend > d:
                b_rat = d + RAT_PENALTY
                d = b_rat
                dcause = V.CS_RAT
                CT[V.CT_RAT_EVENTS] += 1
        if RPORTS > 0:
            # the retired sources not yet read through a port in cycle d
            reads = _port_reads(reg_port_from, u1, u2, ua, d)
            if reads > 0:
                if port_cycle == d and port_used + reads > RPORTS:
                    # the reads do not fit beside this cycle's: rename the cycle after, reading them all
                    d += 1
                    if d > b_rat:
                        b_rat = d
                    dcause = V.CS_RAT
                    CT[V.CT_RAT_EVENTS] += 1
                    CT[V.CT_PORT_EVENTS] += 1
                    reads = _port_reads(reg_port_from, u1, u2, ua, d)
                if port_cycle != d:
                    port_cycle = d
                    port_used = 0
                port_used += reads
        # dispatch-side stall accounting: front-end starvation first, then resources in priority order
        if fr > slot:
            hi = fr if fr < d else d
            p = slot
            p = _charge(CT, V.CT_ST_FETCH if pre_cause == V.CS_FRONTEND else
                        (V.CT_ST_BRCLEAR if pre_cause == V.CS_BRANCH else V.CT_ST_BTB), p, hi, seg0)
            p = _charge(CT, V.CT_ST_ITLB, p, hi, seg1)
            p = _charge(CT, V.CT_ST_ICACHE, p, hi, fr)
        if d > base:
            cov = base
            cov = _split(CT, V.CT_ST_ROB, cov, b_rob)
            cov = _split(CT, V.CT_ST_RS, cov, b_rs)
            cov = _split(CT, V.CT_ST_LQ, cov, b_lq)
            cov = _split(CT, V.CT_ST_SQ, cov, b_sq)
            cov = _split(CT, V.CT_ST_SERIAL, cov, b_ser)
            cov = _split(CT, V.CT_ST_RAT, cov, b_rat)
        d_count = d_count + 1 if d == last_d else 1
        last_d = d
        fq_ring[U64(fq_ptr)] = d
        fq_ptr += 1
        if fq_ptr == FQ:
            fq_ptr = 0

        # ------------------------------------------------------------------ issue
        cls = cfg[U64(K_UNIT_OF_OP + op)]
        ulat = cfg[U64(K_UNIT_LAT + cls)]
        occ = 1 if cfg[U64(K_UNIT_PIPE + cls)] != 0 else ulat
        ucnt = cfg[U64(K_UNIT_CNT + cls)]
        ops = reg_ready[u1]
        if reg_ready[u2] > ops:
            ops = reg_ready[u2]
        if reg_ready[ua] > ops:
            ops = reg_ready[ua]
        agi = False
        if inorder:
            join = (g_count > 0 and g_count < group_cap and prev_ctrl == 0 and not serial and occ == 1
                    and reg_wseq[u1] < g_start and reg_wseq[u2] < g_start and reg_wseq[ua] < g_start)
            slot_e = last_e if join else last_e + 1
            t = slot_e
            if d + 1 > t:
                t = d + 1
            base_e = t
            b_cw = rob_ring[U64(rob_ptr)] - lat_l1d
            t_cw = t if t > b_cw else b_cw
            t = t_cw
            if ops > t:
                t = ops
            t_ops = t
            if AGI_PEN > 0 and (is_load or is_store) and ra > 0 and t - reg_ready[ua] < AGI_DIST:
                t += AGI_PEN
                agi = True
            t_agi = t
            # the unit instance of this class that frees first
            k_best = 0
            for k in range(1, ucnt):
                if ufree[cls, k] < ufree[cls, k_best]:
                    k_best = k
            if ufree[cls, k_best] > t:
                t = ufree[cls, k_best]
            e = t
            ufree[cls, k_best] = e + occ
            cov = base_e
            cov = _split(CT, V.CT_IS_COMPLETION, cov, t_cw)
            cov = _split(CT, V.CT_IS_OPERANDS, cov, t_ops)
            cov = _split(CT, V.CT_IS_AGI, cov, t_agi)
            cov = _split(CT, V.CT_IS_UNIT, cov, e)
            # issue cause: the first bound, in the order completion window, operands, AGI, unit, that
            # sets the issue cycle
            if e == t_cw and t_cw > base_e:
                icause = V.CS_RESOURCE
            elif e == t_ops and t_ops > t_cw:
                icause = V.CS_DEPENDENCY
            elif agi and e == t_agi:
                icause = V.CS_AGI
            else:
                icause = V.CS_EXECUTION
            leader = e > last_e
            if leader:
                g_count = 1
                g_start = seq
                CT[V.CT_GROUPS] += 1
            else:
                g_count += 1
            last_e = e
            prev_ctrl = 1 if (is_ctrl or serial or occ > 1) else 0
        else:
            t = d + 1
            if ops > t:
                t = ops
            t_ops = t
            if AGI_PEN > 0 and (is_load or is_store) and ra > 0 and t - reg_ready[ua] < AGI_DIST:
                t += AGI_PEN
                agi = True
            t_agi = t
            e = _ooo_issue(ring_tag, ring_cnt, t, 1 + cls, occ, IW, ucnt, d + HORIZON)
            leader = True
            if e == t_ops:
                icause = V.CS_DEPENDENCY
            elif agi and e == t_agi:
                icause = V.CS_AGI
            else:
                icause = V.CS_EXECUTION
        if agi:
            CT[V.CT_AGI_EVENTS] += 1
        # reservation station entry released at issue (counted at the horizon when issue is beyond it)
        rel_t = e if e <= d + HORIZON else d + HORIZON
        ring_cnt[_ring_row(ring_tag, ring_cnt, rel_t) + RS_COL] += 1
        _rs_mark(rs_bits, rel_t)

        # ------------------------------------------------------------------ execute
        p_dtlb = 0
        xcause = V.CS_EXECUTION
        fill = 0
        dflags = 0
        if is_load or is_store:
            maddr = maddr_a[iu]
            msz = np.int64(msize_a[iu])
            lvl = memport.data(mv, maddr, msz, 1 if is_load else 2, pc, e)
            p_dtlb = _tlb_cost(mv, dtlb1, walk_ovh)
            tready = e + p_dtlb
            line = np.int64(maddr >> dlb)
            done = tready + lat[U64(lvl)]
            xcause = V.CS_DATA0 + lvl
            if lvl == L1D:
                if mshr_max > tready:
                    for k in range(U64(0), U64(NMSHR * MSHR_WORDS), U64(MSHR_WORDS)):
                        if mshr[k + U64(1)] == line and mshr[k] > tready:
                            busy = mshr[k]
                            if mshr[k + U64(2)] & MSHR_PREFETCH:
                                CT[V.CT_LATE_PF] += 1
                                # (an access timed before the prefetch began would have fetched the line itself)
                                if busy > tready + lat[U64(mshr[k + U64(2)] & MSHR_LEVEL)]:
                                    busy = tready + lat[U64(mshr[k + U64(2)] & MSHR_LEVEL)]
                            if busy > done:
                                done = busy
                            xcause = V.CS_DATA0 + (mshr[k + U64(2)] & MSHR_LEVEL)
                            if is_load:
                                CT[V.CT_MERGES] += 1
                            break
            elif is_load or dwalloc:
                k_best = _earliest_mshr(mshr, NMSHR)
                st = tready
                if mshr[k_best] > st:
                    st = mshr[k_best]
                    CT[V.CT_MSHR_WAIT] += st - tready
                # the wait for the channel (or for a line in flight below) runs from the request's readiness,
                # concurrently with the wait for a fill buffer
                cw = tready + memport.channel_wait(mv)
                done = (st if st > cw else cw) + lat[U64(lvl)]
                mshr[k_best] = done
                mshr[k_best + U64(1)] = line
                mshr[k_best + U64(2)] = lvl
                if done > mshr_max:
                    mshr_max = done
            # prefetches the access sent into the L1D: each holds an MSHR until its line arrives
            for j in range(memport.prefetch_count(mv)):
                pline, plvl, pwait = memport.prefetch_record(mv, j, maddr)
                k_best = _earliest_mshr(mshr, NMSHR)
                st = tready if mshr[k_best] <= tready else mshr[k_best]
                cw = tready + pwait
                pdone = (st if st > cw else cw) + lat[U64(plvl)]
                mshr[k_best] = pdone
                mshr[k_best + U64(1)] = pline
                mshr[k_best + U64(2)] = plvl | MSHR_PREFETCH
                if pdone > mshr_max:
                    mshr_max = pdone
                CT[V.CT_PF_FILLS] += 1
            if lvl != L1D:
                dflags = RF_L1D_MISS
            if is_load:
                c = done
                if done > tready + lat_l1d:
                    dflags |= RF_DATA_WAIT
            else:
                c = tready + 1
                if (lvl == L1D and done > tready + lat_l1d) or (lvl != L1D and dwalloc):
                    fill = done           # the line is being filled: the store drains after the fill
        else:
            c = e + ulat
        opcount[U64(op)] += 1

        # ------------------------------------------------------------------ retire
        rslot = last_r if r_count < RW else last_r + 1
        r = c if c > rslot else rslot
        if r > last_r:
            a = last_r + 1
            if r > a:
                p = a
                if a <= e:
                    # (else every phase before execution, seg0 <= seg1 <= fr <= d + 1 <= e, ended before a)
                    p = _charge(CS, pre_cause, p, r, seg0)
                    p = _charge(CS, V.CS_ITLB, p, r, seg1)
                    p = _charge(CS, V.CS_ICACHE, p, r, fr)
                    p = _charge(CS, dcause, p, r, d + 1)
                    p = _charge(CS, icause, p, r, e)
                    # not yet executing when the stall began: its nominal latency would have overlapped
                    # older work had it arrived in time, so it goes to the cause of its late arrival
                    arrival = icause if e > d + 1 else dcause
                    nom = lat_l1d if is_load else (1 if is_store else ulat)
                    if nom > c - e:
                        nom = c - e
                    p = _charge(CS, arrival, p, r, e + nom)
                    p = _charge(CS, V.CS_DTLB, p, r, e + nom + p_dtlb)
                else:
                    p = _charge(CS, V.CS_DTLB, p, r, e + p_dtlb)
                p = _charge(CS, xcause, p, r, c)
                _charge(CS, V.CS_BASE, p, r, r)
            CS[V.CS_BASE] += 1
            r_count = 1
        else:
            r_count += 1
        last_r = r
        rob_ring[U64(rob_ptr)] = r
        rob_ptr += 1
        if rob_ptr == ROB:
            rob_ptr = 0
        # load/store queue rings: a non-load writes the spare slot at index LQ (branch-free)
        lq_ring[U64(lq_ptr if is_load else LQ)] = r
        lq_ptr += is_load
        lq_ptr = 0 if lq_ptr == LQ else lq_ptr
        if is_store:
            w = r
            if last_w + 1 > w:
                w = last_w + 1
            if fill > w:
                w = fill
            last_w = w
            sq_ring[U64(sq_ptr)] = w
            sq_ptr += 1
            if sq_ptr == SQ:
                sq_ptr = 0

        if recording:
            rf = dflags
            if p_icache > 0:
                rf |= RF_L1I_MISS
            if p_itlb > 0:
                rf |= RF_ITLB_MISS
            if p_dtlb > 0:
                rf |= RF_DTLB_MISS
            if mispredicted:
                rf |= RF_MISPREDICT
            if agi:
                rf |= RF_AGI
            if leader:
                rf |= RF_LEADER
            rec[i, R_S] = s
            rec[i, R_ITLB] = s + p_itlb
            rec[i, R_F] = f
            rec[i, R_E] = e
            rec[i, R_AGI0] = t_agi - AGI_PEN if agi else e
            rec[i, R_AGI1] = t_agi if agi else e
            rec[i, R_DTLB] = e + p_dtlb
            rec[i, R_C] = c
            rec[i, R_R] = r
            rec[i, R_FLAGS] = rf

        # ------------------------------------------------------------------ bookkeeping
        if mispredicted:
            redirect = c
            redirect_cause = V.CS_BRANCH
            need_access = 1
            wp = DW * (c - d - 1)
            if wp > ROB - 1:
                wp = ROB - 1
            if wp > 0:
                CT[V.CT_WRONG_PATH] += wp
                CT[V.CT_DISPATCHED] += wp
        # (a BTB miss's redirect needs a new fetch access too: its transfer is taken, which set need_access)
        dst = np.int64(dst_a[iu]) + 1
        udst = U64(dst)
        if dst > 0:
            reg_ready[udst] = c
            reg_wseq[udst] = seq
            reg_port_from[udst] = r           # (after any port read of this instruction's: r > d + 1)
        if rat_on:
            # partial_max: the latest retirement of any pending partial write (no RAT check needed
            # while the candidate dispatch cycle is past it)
            if dst > 0:
                if (flags & FLAG_PARTIAL_WRITE) != 0:
                    reg_partial[udst] = r
                    partial_max = r
                else:
                    reg_partial[udst] = -1
            if op == OP_ALU or op == OP_MUL or op == OP_DIV:
                if (flags & FLAG_FLAGS_PARTIAL) != 0:
                    reg_partial[FLAGS_REG] = r
                    partial_max = r
                else:
                    reg_partial[FLAGS_REG] = -1
        if serial:
            serial_until = r
        seq += 1
        i += 1

    CT[V.CT_DISPATCHED] += i - start        # (every instruction simulated dispatched once; wrong-path ones above)
    CT[V.CT_INSTRUCTIONS] = seq
    CT[V.CT_LOADS] = opcount[OP_LOAD]
    CT[V.CT_STORES] = opcount[OP_STORE]
    CT[V.CT_FP] = opcount[OP_FP]
    CT[V.CT_COND] = opcount[OP_BRANCH]
    CT[V.CT_BRANCHES] = opcount[OP_BRANCH] + opcount[OP_JUMP] + opcount[OP_CALL] + opcount[OP_RET]
    CT[V.CT_OTHER] = opcount[OP_ALU] + opcount[OP_MUL] + opcount[OP_DIV]
    CT[V.CT_CYCLES] = last_r + 1
    S[S_SEQ] = seq
    S[S_LAST_F] = last_f
    S[S_F_COUNT] = f_count
    S[S_FETCH_BREAK] = fetch_break
    S[S_REDIRECT] = redirect
    S[S_REDIRECT_CAUSE] = redirect_cause
    S[S_LAST_LINE] = last_line
    S[S_NEED_ACCESS] = need_access
    S[S_LAST_D] = last_d
    S[S_D_COUNT] = d_count
    S[S_LAST_E] = last_e
    S[S_G_COUNT] = g_count
    S[S_G_START] = g_start
    S[S_PREV_CTRL] = prev_ctrl
    S[S_LAST_R] = last_r
    S[S_R_COUNT] = r_count
    S[S_LAST_W] = last_w
    S[S_SERIAL_UNTIL] = serial_until
    S[S_ROB_PTR] = rob_ptr
    S[S_FQ_PTR] = fq_ptr
    S[S_LQ_PTR] = lq_ptr
    S[S_SQ_PTR] = sq_ptr
    S[S_RS_CUR] = rs_cur
    S[S_RS_REL] = rs_rel
    S[S_MSHR_MAX] = mshr_max
    S[S_PARTIAL_MAX] = partial_max
    S[S_PORT_CYCLE] = port_cycle
    S[S_PORT_USED] = port_used
    return i - start


# the memory hierarchy's fast paths and the predictors are compiled into the timing kernel
drop_stale_caches("core", (MS, MC, MK, predictors, raw, memport, isa, sys.modules[__name__]))
