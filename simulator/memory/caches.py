"""Numba kernels of the cache levels: lookup, replacement, fills, writebacks, prefetchers.

Every function takes the raw address ``s`` of the state (see :mod:`simulator.memory.state` for the
layout).  Semantics are documented in :mod:`simulator.memory.kernel`; the pure-Python reference in
``tests/memref.py`` implements the same rules and the tests demand identical counts.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from whatif.simulator.memory.state import (
    C0, C_ABOVE, C_BITS0, C_INCLUSIVE, C_LAT, C_LINE_BITS, C_META0, C_NEXT, C_NSECT, C_NSETS, C_PF_DEGREE, C_PF_BUSY0,
    C_PF_ENGINES, C_PF_KIND, C_PLRU0, C_POLICY, C_SECTOR_BITS, C_SLICES, C_TAG0, C_WAY_BITS, C_WAYS, C_WRITE_ALLOC,
    C_WRITE_BACK, CN_ACC, CN_BACK_INVAL, CN_CLOCK, CN_EVICTIONS, CN_MISS, CN_PF_DROPPED, CN_PF_ISSUED, CN_PF_USEFUL,
    CN_SECTOR_MISS, CN_WRITEBACKS, EMPTY, F_LINE, F_LVL, F_MASK, F_SET, F_SLOT0, CH_BUCKET_BITS, CH_BUCKETS, CH_FRAC,
    F_WAY, FRAMEROW, G_CH_BYTES, G_CH_DELAY, G_CH_RING, G_CH_RUN_HI, G_CH_RUN_LO, G_CH_UNITS, G_L1D, G_MEM_LAT,
    G_NLEVELS, G_PAGE_BITS, G_PF_TIMED, G_READY0, G_ST_N, G_ST_REC0, I64, C_ST0, C_ST_DIST, C_ST_N,
    CN_PF_LATE, PF_STREAMER, ST_DIR, ST_KEY, ST_LAST, ST_LRU, ST_MRU, ST_NEWER, ST_NEXT, ST_OLDER, ST_PAGE_BITS,
    ST_RECORDS, ST_WORDS, SRC_WALK,
    IP_STRIDE_MAX_BYTES, IPT_SIZE, LOW32, M_PS, M_VD, MAX_LEVELS, MEM_WRITES, MEMROW, MW, N0, NCOL, P0,
    PF_ADJACENT_LINE, PF_ADJACENT_SECTOR, PF_MISS_TRIGGERED, PF_NEXT_LINE, PF_RECORDS, PF_TAGGED, PF_WAIT_MAX,
    PF_WITHIN_SHIFT, S_FILL_SLOT, S_MISSED, S_MISSED_LINE, S_NMISSED, S_PF_N, S_PF_REC0, SCR, SCR_NOW, SRC_PREFETCH,
    SRC_WRITEBACK, STAMP_MAX, U64, _add, _cfg, _clz, _ctz, _find, _ld, _ldu, _mix64, _plru_touch, _plru_victim,
    _prefetch, _rand, _sector_mask, _set_of, _st, _var)


# ============================================================================ host-cache hints
@njit(cache=True)
def prefetch_sets(s, lvl, addr):
    """Ask the host CPU for the tags and metadata of the sets ``addr`` maps to at ``lvl`` and every level
    below: a miss path that will look them up soon overlaps their host-cache misses with its other work.
    Changes no simulated state."""
    while lvl >= 0:
        c = C0 + lvl * NCOL
        _, ways, slot0 = _locate(s, lvl, addr >> U64(_cfg(s, c + C_LINE_BITS)))
        t0 = _cfg(s, c + C_TAG0) + slot0
        _prefetch(s, t0)
        _prefetch(s, t0 + ways - 1)
        m0 = _cfg(s, c + C_META0) + slot0 * MW
        _prefetch(s, m0)
        _prefetch(s, m0 + ways * MW - 1)
        lvl = _cfg(s, c + C_NEXT)


@njit(cache=True, inline="always")
def _locate(s, lvl, line):
    """(set, ways, first slot) of ``line`` at ``lvl``."""
    ways = _cfg(s, C0 + lvl * NCOL + C_WAYS)
    set_id = _set_of(s, lvl, line)
    return set_id, ways, set_id * ways


# ============================================================================ replacement
@njit(cache=True)
def _renumber(s, lvl):
    """Before the level's 32-bit clock wraps: renumber the stamps of every set 1..ways in their order
    (valid ways; an invalid way's stamp stays 0, which the victim choice relies on).  Returns the largest
    stamp now in use."""
    c = C0 + lvl * NCOL
    ways = _cfg(s, c + C_WAYS)
    meta0 = _cfg(s, c + C_META0)
    rank = np.empty(ways, dtype=np.uint64)
    for st in range(_cfg(s, c + C_NSETS) * _cfg(s, c + C_SLICES)):
        m0 = meta0 + st * ways * MW
        for w in range(ways):
            rank[w] = U64(0)
            if (_ldu(s, m0 + w * MW + M_VD) & LOW32) != 0:
                mine = _ldu(s, m0 + w * MW + M_PS) >> U64(32)
                r = U64(1)
                for v in range(ways):
                    if (_ldu(s, m0 + v * MW + M_VD) & LOW32) != 0 and (_ldu(s, m0 + v * MW + M_PS) >> U64(32)) < mine:
                        r += U64(1)
                rank[w] = r
        for w in range(ways):
            m = m0 + w * MW + M_PS
            _st(s, m, (_ldu(s, m) & LOW32) | (rank[w] << U64(32)))
    return ways


@njit(cache=True)
def _tick(s, lvl):
    """The level's clock, advanced: the stamp of a touch (LRU) or of an install (LRU, FIFO)."""
    i = N0 + lvl * NCOL + CN_CLOCK
    clock = _ld(s, i) + 1
    if clock > STAMP_MAX:
        clock = _renumber(s, lvl) + 1
    _st(s, i, clock)
    return U64(clock)


@njit(cache=True)
def _touch(s, lvl, slot, set_id, way):
    c = C0 + lvl * NCOL
    policy = _cfg(s, c + C_POLICY)
    if policy == 0:      # LRU
        stamp = _tick(s, lvl)
        m = _cfg(s, c + C_META0) + slot * MW + M_PS
        _st(s, m, (_ldu(s, m) & LOW32) | (stamp << U64(32)))
    elif policy == 1:    # tree PLRU
        _plru_touch(s, _cfg(s, c + C_PLRU0), _cfg(s, c + C_BITS0) + set_id, way)
    # FIFO and random: a hit changes nothing


@njit(cache=True, inline="always")
def _victim(s, c, tag0, m0, set_id, ways):
    """The way to evict from the set whose tags start at ``tag0`` and metadata at ``m0``: an invalid way
    first (the lowest), else by the replacement policy."""
    policy = _cfg(s, c + C_POLICY)
    if policy == 0 or policy == 2:
        # LRU / FIFO: the oldest stamp; an invalid way's stamp is 0 (every invalidation clears it), below
        # every stamp (stamps start at 1), and the first of equal keys wins, so this is also "the lowest
        # invalid way first"
        way = 0
        best = _ldu(s, m0 + M_PS) >> U64(32)
        for w in range(1, ways):
            key = _ldu(s, m0 + w * MW + M_PS) >> U64(32)
            if key < best:
                best = key
                way = w
        return way
    w = _find(s, tag0, ways, EMPTY)                # an invalid way's tag is EMPTY (the lowest such way)
    if w >= 0:
        return w
    if policy == 1:
        return _plru_victim(s, _cfg(s, c + C_BITS0) + set_id, _cfg(s, c + C_WAY_BITS))
    return I64(_rand(s) % U64(ways))


# ============================================================================ installs and writebacks
@njit(cache=True)
def _invalidate_above(s, lvl, line_addr, nbytes):
    """Back-invalidate [line_addr, +nbytes) in every level above ``lvl``.
    Returns (lines invalidated, whether any of them was dirty)."""
    count = 0
    dirty = False
    for k in range(MAX_LEVELS):
        u = _cfg(s, C0 + lvl * NCOL + C_ABOVE + k)
        if u < 0:
            break
        cu = C0 + u * NCOL
        lb = _cfg(s, cu + C_LINE_BITS)
        ways = _cfg(s, cu + C_WAYS)
        a = line_addr
        end = line_addr + U64(nbytes)
        while a < end:
            line = a >> U64(lb)
            slot0 = _set_of(s, u, line) * ways
            w = _find(s, _cfg(s, cu + C_TAG0) + slot0, ways, line)
            if w >= 0:
                slot = slot0 + w
                m = _cfg(s, cu + C_META0) + slot * MW
                if (_ldu(s, m + M_VD) >> U64(32)) != 0:
                    dirty = True
                _st(s, _cfg(s, cu + C_TAG0) + slot, EMPTY)
                _st(s, m + M_VD, 0)
                _st(s, m + M_PS, 0)
                count += 1
            a += U64(1) << U64(lb)
    return count, dirty


@njit(cache=True, inline="always")
def _install(s, lvl, line, set_id, slot0, mask, dirty_mask, pref_mask):
    """Put ``line`` into its set at ``lvl``, evicting a victim.

    Returns (slot, victim address, victim bytes): the bytes are 0 unless the victim must be written back
    (the caller sends it on with :func:`_writeback`)."""
    c = C0 + lvl * NCOL
    n = N0 + lvl * NCOL
    ways = _cfg(s, c + C_WAYS)
    meta0 = _cfg(s, c + C_META0)
    tag0 = _cfg(s, c + C_TAG0) + slot0
    way = _victim(s, c, tag0, meta0 + slot0 * MW, set_id, ways)
    slot = slot0 + way
    ti = tag0 + way
    m = meta0 + slot * MW
    wb_addr = U64(0)
    wb_bytes = 0
    vd = _ldu(s, m + M_VD)
    if (vd & LOW32) != 0:
        victim_line = _ldu(s, ti)
        victim_dirty = (vd >> U64(32)) != 0
        lb = _cfg(s, c + C_LINE_BITS)
        _add(s, n + CN_EVICTIONS, 1)
        _st(s, ti, EMPTY)
        _st(s, m + M_VD, 0)
        _st(s, m + M_PS, 0)
        if _cfg(s, c + C_INCLUSIVE) != 0:
            n_inv, up_dirty = _invalidate_above(s, lvl, victim_line << U64(lb), I64(1) << lb)
            _add(s, n + CN_BACK_INVAL, n_inv)
            victim_dirty = victim_dirty or up_dirty
        if victim_dirty:
            _add(s, n + CN_WRITEBACKS, 1)
            wb_addr = victim_line << U64(lb)
            wb_bytes = I64(1) << lb
    _st(s, ti, line)
    _st(s, m + M_VD, mask | (dirty_mask << U64(32)))
    r0 = _ld(s, G_READY0 + lvl)
    if r0 != 0:
        _st(s, r0 + slot, 0)                       # a new line: ready unless a prefetch fill says otherwise
    policy = _cfg(s, c + C_POLICY)
    if policy == 0 or policy == 2:
        _st(s, m + M_PS, pref_mask | (_tick(s, lvl) << U64(32)))
    else:
        _st(s, m + M_PS, pref_mask)
        if policy == 1:
            _plru_touch(s, _cfg(s, c + C_PLRU0), _cfg(s, c + C_BITS0) + set_id, way)
    return slot, wb_addr, wb_bytes


@njit(cache=True)
def channel(s, nbytes):
    """Book ``nbytes`` of transfer on the memory channel at the current time ``S[SCR_NOW]``; returns how long
    it waits for the channel.  The channel is a calendar of buckets of 2**CH_BUCKET_BITS cycles, each able to
    carry that many cycles of transfer (bytes x G_CH_UNITS): the transfer starts in the first bucket from
    now's with room left, where that bucket's earlier bookings end, and spills into the next buckets if it
    does not fit.  Bookings need not arrive in time order (an out-of-order core issues younger accesses
    first), and in no stretch of buckets does the channel carry more than its bandwidth.  The calendar looks
    CH_BUCKETS buckets ahead: a transfer with no room in them waits until they have passed, and is not booked.

    A backlog (a channel asked for more than its bandwidth, as functional warming at too low a CPI asks)
    would make every booking walk the full buckets before its own: buckets [G_CH_RUN_LO, G_CH_RUN_HI) are
    known to be full, each holding its own bucket's bookings, and a booking passes them in one step.  A full
    bucket stays full until its slot is taken by a bucket CH_BUCKETS later, which drops it from the run; the
    run grows at its end as bookings fill it, and starts anew at a booking beyond it.  The bookings made are
    those of the walk over every bucket (``tests/test_memory_hierarchy.py`` holds the two equal)."""
    units = _cfg(s, G_CH_UNITS)
    if units == 0:
        return 0
    now = _ld(s, SCR_NOW)
    _add(s, G_CH_BYTES, nbytes)
    left = nbytes * units
    cap = I64(1) << (CH_BUCKET_BITS + CH_FRAC)
    b0 = now >> CH_BUCKET_BITS
    b = b0
    ring = _cfg(s, G_CH_RING)
    lo = _ld(s, G_CH_RUN_LO)
    hi = _ld(s, G_CH_RUN_HI)
    if b > hi:
        lo = b
        hi = b
    start = -1
    k = 0
    while k < CH_BUCKETS:
        if lo <= b and b < hi:                 # full: nothing to take before the run's end
            k += hi - b
            b = hi
            continue
        e = ring + (b & (CH_BUCKETS - 1)) * 2
        old = _ld(s, e)
        if old != b:
            if lo <= old and old < hi:         # a bucket of the run leaves the calendar: the run keeps what follows
                lo = old + 1
            _st(s, e, b)
            _st(s, e + 1, 0)
        used = _ld(s, e + 1)
        if used < cap:
            if start < 0:
                start = (b << CH_BUCKET_BITS) + (used >> CH_FRAC)
            take = cap - used if left > cap - used else left
            used += take
            _st(s, e + 1, used)
            left -= take
            if used >= cap and b == hi:
                hi = b + 1
            if left == 0:
                break
        elif b == hi:
            hi = b + 1
        b += 1
        k += 1
    _st(s, G_CH_RUN_LO, lo)
    _st(s, G_CH_RUN_HI, hi)
    if start < 0:
        start = (b0 + CH_BUCKETS) << CH_BUCKET_BITS
    return start - now if start > now else 0


@njit(cache=True)
def _writeback(s, lvl, addr, nbytes):
    """A dirty victim of ``nbytes`` at ``addr`` travels down from level ``lvl`` (-1: memory) until a
    write-back level absorbs it; installing it may evict further dirty victims, which travel on."""
    while nbytes > 0:
        if lvl < 0:
            _add(s, N0 + MEMROW * NCOL + MEM_WRITES, 1)
            channel(s, nbytes)
            return
        c = C0 + lvl * NCOL
        _add(s, N0 + lvl * NCOL + CN_ACC + SRC_WRITEBACK, 1)
        lb = _cfg(s, c + C_LINE_BITS)
        line = addr >> U64(lb)
        set_id, ways, slot0 = _locate(s, lvl, line)
        nsect = _cfg(s, c + C_NSECT)
        mask = _sector_mask(addr, nbytes, _cfg(s, c + C_SECTOR_BITS), nsect)
        w = _find(s, _cfg(s, c + C_TAG0) + slot0, ways, line)
        m = _cfg(s, c + C_META0) + (slot0 + w) * MW + M_VD
        if _cfg(s, c + C_WRITE_BACK) == 0:
            # write-through level: a present copy takes the data, which goes on down
            if w >= 0:
                _st(s, m, _ldu(s, m) | mask)
            lvl = _cfg(s, c + C_NEXT)
            continue
        if w >= 0:
            _st(s, m, _ldu(s, m) | mask | (mask << U64(32)))
            return
        _add(s, N0 + lvl * NCOL + CN_MISS + SRC_WRITEBACK, 1)
        nxt = _cfg(s, c + C_NEXT)
        if _cfg(s, c + C_WRITE_ALLOC) == 0:
            lvl = nxt
            continue
        # the written range comes with the victim: installed without a fill (a larger unsectored line
        # is taken as wholly written)
        full = (U64(1) << U64(nsect)) - U64(1)
        valid = mask if (nsect > 1 and nbytes < (I64(1) << lb)) else full
        _, addr, nbytes = _install(s, lvl, line, set_id, slot0, valid, valid, U64(0))
        lvl = nxt


# ============================================================================ fills and requests
@njit(cache=True)
def _range_of(mask, line, line_bits, sector_bits):
    """First byte address and length of the sector range spanned by ``mask`` (non-zero) in ``line``."""
    first = _ctz(mask)
    last = 63 - _clz(mask)
    base = (line << U64(line_bits)) + (U64(first) << U64(sector_bits))
    return base, (last - first + 1) << sector_bits


@njit(cache=True)
def _note_miss(s, lvl, line):
    """Note a demand miss at a level with miss-triggered prefetchers (they run after the access)."""
    k = _ld(s, SCR + S_NMISSED)
    _st(s, SCR + S_MISSED + k, lvl)
    _st(s, SCR + S_MISSED_LINE + k, line)
    _st(s, SCR + S_NMISSED, k + 1)


@njit(cache=True, inline="always")
def prefetched_hit(s, lvl, m, mask, line, record):
    """A demand hit on sectors ``mask`` of ``line`` (metadata at ``m``) that a prefetch brought in: the
    prefetch was useful (counted once); with ``record``, a tagged prefetcher at ``lvl`` treats the hit as
    a miss and fetches on ahead."""
    _add(s, N0 + lvl * NCOL + CN_PF_USEFUL, 1)
    _st(s, m + M_PS, _ldu(s, m + M_PS) & ~mask)
    if record and (_cfg(s, C0 + lvl * NCOL + C_PF_KIND) & PF_TAGGED) != 0:
        _note_miss(s, lvl, line)


@njit(cache=True, inline="always")
def _note_stream(s, cc, lvl, line, src):
    """Note a request from above that looks up ``line`` at ``lvl`` (config row ``cc``) for the level's streamer,
    which trains on it after the access (:func:`run_streamers`): demand and prefetch requests, not page-walk
    loads or writebacks."""
    if ((_cfg(s, cc + C_PF_KIND) & PF_STREAMER) != 0) & (src != SRC_WALK) & (src != SRC_WRITEBACK):
        k = _ld(s, G_ST_N)
        if k < ST_RECORDS:
            _st(s, G_ST_REC0 + k, I64(line << U64(4)) | lvl)
            _st(s, G_ST_N, k + 1)


@njit(cache=True, inline="always")
def ready_wait(s, lvl, slot, src):
    """With timed prefetch arrival, a hit at ``lvl`` (below the L1s) on a line a prefetch is still bringing in
    waits for the rest: returns the wait, which is added to the access's (``S[G_CH_DELAY]``); a demand request
    counts a late prefetch."""
    r0 = _ld(s, G_READY0 + lvl)
    if r0 == 0:
        return 0
    left = _ld(s, r0 + slot) - _ld(s, SCR_NOW)
    if left <= 0:
        return 0
    _add(s, G_CH_DELAY, left)
    if src != SRC_PREFETCH:
        _add(s, N0 + lvl * NCOL + CN_PF_LATE, 1)
    return left


@njit(cache=True)
def _fill(s, lvl, line, set_id, slot0, w, mask, src, pref_mask, record):
    """Service a miss of sectors ``mask`` of ``line`` at ``lvl`` (way ``w`` if the tag is present).

    Down phase: each lower level looks up the missing range (counting one access) until one hits or
    memory supplies it.  Up phase: the line is installed at each missing level, deepest first (fetch
    first, then evict).  Returns the supplying level (G_NLEVELS for memory).  With ``record``, the
    levels that missed and have miss-triggered prefetchers are noted for them."""
    n = _cfg(s, G_NLEVELS)
    fr = N0 + FRAMEROW * NCOL
    depth = 0
    _st(s, fr + F_LVL, lvl)
    _st(s, fr + F_WAY, w)
    _st(s, fr + F_SET, set_id)
    _st(s, fr + F_SLOT0, slot0)
    _st(s, fr + F_MASK, mask)
    _st(s, fr + F_LINE, line)
    c = C0 + lvl * NCOL
    extra = 0                 # the waits this request meets: a line in flight, the memory channel
    if record and (_cfg(s, c + C_PF_KIND) & PF_MISS_TRIGGERED) != 0:
        _note_miss(s, lvl, line)
    missing = mask if w < 0 else (mask & ~_ldu(s, _cfg(s, c + C_META0) + (slot0 + w) * MW + M_VD))
    req_addr, req_bytes = _range_of(missing, line, _cfg(s, c + C_LINE_BITS), _cfg(s, c + C_SECTOR_BITS))
    cur = _cfg(s, c + C_NEXT)
    served = n
    while cur >= 0:
        cc = C0 + cur * NCOL
        cn = N0 + cur * NCOL
        lb = _cfg(s, cc + C_LINE_BITS)
        cline = req_addr >> U64(lb)
        cset, cways, cslot0 = _locate(s, cur, cline)
        cm0 = _cfg(s, cc + C_META0) + cslot0 * MW
        _prefetch(s, cm0)                          # the set's metadata, while its tags are compared
        _prefetch(s, cm0 + cways * MW - 1)
        cmask = _sector_mask(req_addr, req_bytes, _cfg(s, cc + C_SECTOR_BITS), _cfg(s, cc + C_NSECT))
        _add(s, cn + CN_ACC + src, 1)
        _note_stream(s, cc, cur, cline, src)
        cw = _find(s, _cfg(s, cc + C_TAG0) + cslot0, cways, cline)
        m = cm0 + cw * MW
        if cw >= 0 and (_ldu(s, m + M_VD) & cmask) == cmask:
            _touch(s, cur, cslot0 + cw, cset, cw)
            if _ldu(s, m + M_PS) & cmask:
                prefetched_hit(s, cur, m, cmask, cline, record)
            extra += ready_wait(s, cur, cslot0 + cw, src)
            served = cur
            break
        _add(s, cn + CN_MISS + src, 1)
        if cw >= 0:
            _add(s, cn + CN_SECTOR_MISS, 1)
        depth += 1
        f = fr + depth * NCOL
        _st(s, f + F_LVL, cur)
        _st(s, f + F_WAY, cw)
        _st(s, f + F_SET, cset)
        _st(s, f + F_SLOT0, cslot0)
        _st(s, f + F_MASK, cmask)
        _st(s, f + F_LINE, cline)
        if record and (_cfg(s, cc + C_PF_KIND) & PF_MISS_TRIGGERED) != 0:
            _note_miss(s, cur, cline)
        missing = cmask if cw < 0 else (cmask & ~_ldu(s, m + M_VD))
        req_addr, req_bytes = _range_of(missing, cline, lb, _cfg(s, cc + C_SECTOR_BITS))
        cur = _cfg(s, cc + C_NEXT)
    if served == n:
        _add(s, N0 + MEMROW * NCOL + src, 1)
        wait = channel(s, req_bytes)
        _add(s, G_CH_DELAY, wait)
        extra += wait
    # with timed prefetch arrival, a prefetched line arrives at each level below the L1s when the supplying
    # level's latency (and the waits met on the way) have passed, less that level's own latency
    arrive = 0
    if pref_mask != 0 and _cfg(s, G_PF_TIMED) != 0:
        arrive = _ld(s, SCR_NOW) + extra + (_cfg(s, G_MEM_LAT) if served == n else _cfg(s, C0 + served * NCOL + C_LAT))
    slot = -1
    for d in range(depth, -1, -1):
        f = fr + d * NCOL
        lv = _ld(s, f + F_LVL)
        lw = _ld(s, f + F_WAY)
        lset = _ld(s, f + F_SET)
        lslot0 = _ld(s, f + F_SLOT0)
        lmask = _ldu(s, f + F_MASK)
        lline = _ldu(s, f + F_LINE)
        pm = pref_mask if d == 0 else U64(0)
        lc = C0 + lv * NCOL
        if lw >= 0 and _ldu(s, _cfg(s, lc + C_TAG0) + lslot0 + lw) == lline:
            slot = lslot0 + lw
            m = _cfg(s, lc + C_META0) + slot * MW
            vd = _ldu(s, m + M_VD)
            _st(s, m + M_PS, _ldu(s, m + M_PS) | (pm & ~vd))
            _st(s, m + M_VD, vd | lmask)
            _touch(s, lv, slot, lset, lw)
        else:
            # (a present tag may have been back-invalidated by an inclusive level below meanwhile)
            slot, wb_addr, wb_bytes = _install(s, lv, lline, lset, lslot0, lmask, U64(0), pm)
            if wb_bytes > 0:
                _writeback(s, _cfg(s, lc + C_NEXT), wb_addr, wb_bytes)
        r0 = _ld(s, G_READY0 + lv)
        if arrive != 0 and r0 != 0:
            _st(s, r0 + slot, arrive - _cfg(s, lc + C_LAT))
    _st(s, SCR + S_FILL_SLOT, slot)
    return served


@njit(cache=True, inline="always")
def request(s, lvl, addr, nbytes, src, write, count, record):
    """A demand request of ``nbytes`` (within one line) at ``addr`` arriving at level ``lvl``.

    Reads stop at the first level that hits.  Writes are absorbed by the first write-back level (which
    allocates on a miss when it write-allocates); write-through and no-write-allocate levels pass the
    write on.  ``count=False`` leaves the first level's access/miss counters to the caller.  Returns
    the level that supplied the data (G_NLEVELS for memory)."""
    n = _cfg(s, G_NLEVELS)
    served = n
    if record:
        _st(s, SCR + S_NMISSED, 0)
    first = True
    while lvl >= 0:
        c = C0 + lvl * NCOL
        cn = N0 + lvl * NCOL
        lb = _cfg(s, c + C_LINE_BITS)
        line = addr >> U64(lb)
        set_id, ways, slot0 = _locate(s, lvl, line)
        m0 = _cfg(s, c + C_META0) + slot0 * MW
        _prefetch(s, m0)
        _prefetch(s, m0 + ways * MW - 1)
        mask = _sector_mask(addr, nbytes, _cfg(s, c + C_SECTOR_BITS), _cfg(s, c + C_NSECT))
        do_count = count or not first
        if do_count:
            _add(s, cn + CN_ACC + src, 1)
        w = _find(s, _cfg(s, c + C_TAG0) + slot0, ways, line)
        m = m0 + w * MW
        if w >= 0 and (_ldu(s, m + M_VD) & mask) == mask:
            _touch(s, lvl, slot0 + w, set_id, w)
            if _ldu(s, m + M_PS) & mask:
                prefetched_hit(s, lvl, m, mask, line, record and first)
            ready_wait(s, lvl, slot0 + w, src)
            if first:
                served = lvl
            if not write:
                return served
            if _cfg(s, c + C_WRITE_BACK) != 0:
                _st(s, m + M_VD, _ldu(s, m + M_VD) | (mask << U64(32)))
                return served
        else:
            if do_count:
                _add(s, cn + CN_MISS + src, 1)
                if w >= 0:
                    _add(s, cn + CN_SECTOR_MISS, 1)
            if not (write and _cfg(s, c + C_WRITE_ALLOC) == 0):
                r = _fill(s, lvl, line, set_id, slot0, w, mask, _var(src), U64(0), _var(record and first))
                if first:
                    served = r
                if not write:
                    return served
                if _cfg(s, c + C_WRITE_BACK) != 0:
                    fm = _cfg(s, c + C_META0) + _ld(s, SCR + S_FILL_SLOT) * MW + M_VD
                    _st(s, fm, _ldu(s, fm) | (mask << U64(32)))
                    return served
        # the write goes on to the next level
        first = False
        lvl = _cfg(s, c + C_NEXT)
    _add(s, N0 + MEMROW * NCOL + MEM_WRITES, 1)
    channel(s, nbytes)
    return served


@njit(cache=True, inline="always")
def line_miss(s, lvl, addr, nbytes, src, write, record):
    """request() for the commonest miss, without its generality: an access (one line, counted here; with
    ``record``, noted for prefetchers) whose line is absent at ``lvl`` (write-back and write-allocate for a
    write).
    When the next level holds the missing range, the fill is done here, else by _fill().  The same updates
    as request() in the same order.  Returns the supplying level, or -1 (nothing changed) when the case
    does not apply."""
    c = C0 + lvl * NCOL
    if write & ((_cfg(s, c + C_WRITE_BACK) == 0) | (_cfg(s, c + C_WRITE_ALLOC) == 0)):
        return -1
    lb = _cfg(s, c + C_LINE_BITS)
    line = addr >> U64(lb)
    set_id, ways, slot0 = _locate(s, lvl, line)
    if _find(s, _cfg(s, c + C_TAG0) + slot0, ways, line) >= 0:
        return -1
    sb = _cfg(s, c + C_SECTOR_BITS)
    mask = _sector_mask(addr, nbytes, sb, _cfg(s, c + C_NSECT))
    # request(): the first level counts the access and the miss
    cn = N0 + lvl * NCOL
    _add(s, cn + CN_ACC + src, 1)
    _add(s, cn + CN_MISS + src, 1)
    if record:
        _st(s, SCR + S_NMISSED, 0)
    nxt = _cfg(s, c + C_NEXT)
    served = -1
    if nxt >= 0:
        req_addr, req_bytes = _range_of(mask, line, lb, sb)
        cc = C0 + nxt * NCOL
        cline = req_addr >> U64(_cfg(s, cc + C_LINE_BITS))
        cset, cways, cslot0 = _locate(s, nxt, cline)
        cmask = _sector_mask(req_addr, req_bytes, _cfg(s, cc + C_SECTOR_BITS), _cfg(s, cc + C_NSECT))
        cw = _find(s, _cfg(s, cc + C_TAG0) + cslot0, cways, cline)
        m = _cfg(s, cc + C_META0) + (cslot0 + cw) * MW
        if cw >= 0 and (_ldu(s, m + M_VD) & cmask) == cmask:
            # _fill() with the next level hitting: note the miss, count and touch the hit, install above
            if record and (_cfg(s, c + C_PF_KIND) & PF_MISS_TRIGGERED) != 0:
                _note_miss(s, lvl, line)
            _add(s, N0 + nxt * NCOL + CN_ACC + src, 1)
            _note_stream(s, cc, nxt, cline, src)
            _touch(s, nxt, cslot0 + cw, cset, cw)
            if _ldu(s, m + M_PS) & cmask:
                prefetched_hit(s, nxt, m, cmask, cline, record)
            ready_wait(s, nxt, cslot0 + cw, src)
            slot, wb_addr, wb_bytes = _install(s, lvl, line, set_id, slot0, mask, U64(0), U64(0))
            if wb_bytes > 0:
                _writeback(s, nxt, wb_addr, wb_bytes)
            _st(s, SCR + S_FILL_SLOT, slot)
            served = nxt
    if served < 0:
        served = _fill(s, lvl, line, set_id, slot0, _var(-1), mask, _var(src), U64(0), _var(record))
    fm = _cfg(s, c + C_META0) + _ld(s, SCR + S_FILL_SLOT) * MW + M_VD
    _st(s, fm, _ldu(s, fm) | ((mask << U64(32)) * U64(write)))     # a write dirties the filled line
    return served


# ============================================================================ prefetchers
@njit(cache=True)
def _prefetch_on_engine(s, lvl, line, set_id, slot0, w, mask):
    """Issue a prefetch at a level with a limited number of prefetch engines: the engine that frees first
    (the lowest-numbered among equals) takes it if it is free at the current time ``S[SCR_NOW]``, and is
    busy until now + the load-to-use latency of the level that supplies the line (memory's if every
    level below misses).  With every engine busy the prefetch is dropped: counted, nothing fetched."""
    c = C0 + lvl * NCOL
    b0 = _cfg(s, c + C_PF_BUSY0)
    k = b0
    free_at = _ld(s, b0)
    for e in range(b0 + 1, b0 + _cfg(s, c + C_PF_ENGINES)):
        if _ld(s, e) < free_at:
            free_at = _ld(s, e)
            k = e
    now = _ld(s, SCR_NOW)
    if free_at > now:
        _add(s, N0 + lvl * NCOL + CN_PF_DROPPED, 1)
        return
    _add(s, N0 + lvl * NCOL + CN_PF_ISSUED, 1)
    served, wait = _prefetch_fill(s, lvl, line, set_id, slot0, w, mask)
    lat = _cfg(s, G_MEM_LAT) if served == _cfg(s, G_NLEVELS) else _cfg(s, C0 + served * NCOL + C_LAT)
    _st(s, k, now + wait + lat)


@njit(cache=True)
def _prefetch_fill(s, lvl, line, set_id, slot0, w, mask):
    """Fill a prefetched line; returns the supplying level and how long its transfer waited for the memory
    channel (kept apart from the demand access's own wait), and reports a prefetch into the L1D."""
    before = _ld(s, G_CH_DELAY)
    served = _fill(s, lvl, line, set_id, slot0, w, mask, _var(SRC_PREFETCH), mask, _var(False))
    wait = _ld(s, G_CH_DELAY) - before
    _st(s, G_CH_DELAY, before)
    _note_top_prefetch(s, lvl, line, served, wait)
    return served, wait


@njit(cache=True, inline="always")
def _note_top_prefetch(s, lvl, line, served, wait):
    """With timed prefetch arrival, report a prefetch into the top data level to the core (scratch ``S_PF_*``),
    which holds an MSHR for it until its channel wait and the supplying level's latency have passed: a demand
    access that comes sooner waits for the rest.  The record: the line's number within its page, the wait
    (capped) and the level."""
    if lvl == _cfg(s, G_L1D) and _cfg(s, G_PF_TIMED) != 0:
        n = _ld(s, SCR + S_PF_N)
        if n < PF_RECORDS:
            within = I64(line) & ((I64(1) << (_cfg(s, G_PAGE_BITS) - _cfg(s, C0 + lvl * NCOL + C_LINE_BITS))) - 1)
            _st(s, SCR + S_PF_REC0 + n, (within << PF_WITHIN_SHIFT) | (min(wait, PF_WAIT_MAX) << 4) | served)
            _st(s, SCR + S_PF_N, n + 1)


@njit(cache=True, inline="always")
def prefetch_line(s, lvl, line, mask):
    """Bring sectors ``mask`` of ``line`` into ``lvl`` unless present; counts an issued prefetch (or, at a
    level whose prefetch engines are all busy, a dropped one)."""
    c = C0 + lvl * NCOL
    set_id, ways, slot0 = _locate(s, lvl, line)
    w = _find(s, _cfg(s, c + C_TAG0) + slot0, ways, line)
    if w >= 0:
        mask = mask & ~_ldu(s, _cfg(s, c + C_META0) + (slot0 + w) * MW + M_VD)
        if mask == 0:
            return
    if _cfg(s, c + C_PF_ENGINES) != 0:
        _prefetch_on_engine(s, lvl, line, set_id, slot0, w, mask)
        return
    _add(s, N0 + lvl * NCOL + CN_PF_ISSUED, 1)
    _prefetch_fill(s, lvl, line, set_id, slot0, w, mask)


@njit(cache=True)
def _prefetch_after_demand(s, page_bits):
    """Run the miss-triggered prefetchers of every level the last demand request missed, top down: per
    level the other sectors of the line, then the buddy line, then the next lines -- never past the end
    of the demand's page (``page_bits``): a prefetcher has no translation for the next page, so under
    1 MB code pages the next-line prefetcher runs on where under 4 KB pages it stops every 4 KB."""
    k = _ld(s, SCR + S_NMISSED)
    if k == 0:
        return
    _st(s, SCR + S_NMISSED, 0)
    for i in range(k):
        lvl = _ld(s, SCR + S_MISSED + i)
        c = C0 + lvl * NCOL
        kinds = _cfg(s, c + C_PF_KIND)
        line = _ldu(s, SCR + S_MISSED_LINE + i)
        full = (U64(1) << U64(_cfg(s, c + C_NSECT))) - U64(1)
        page_line_bits = U64(max(page_bits - _cfg(s, c + C_LINE_BITS), 0))
        page_lines = U64(1) << page_line_bits
        for j in range(2 + _cfg(s, c + C_PF_DEGREE)):
            if j == 0:
                if (kinds & PF_ADJACENT_SECTOR) == 0:
                    continue
                target = line                      # the sectors not yet valid
            elif j == 1:
                if (kinds & PF_ADJACENT_LINE) == 0 or page_lines == U64(1):
                    continue
                target = line ^ U64(1)
            else:
                if (kinds & (PF_NEXT_LINE | PF_TAGGED)) == 0:
                    break
                target = line + U64(j - 1)
                if (target >> page_line_bits) != (line >> page_line_bits):     # (shifts: a division is slow)
                    break
            prefetch_line(s, lvl, target, full)


@njit(cache=True)
def train_ip_stride(s, lvl, pc, addr):
    """IP-based stride prefetcher at ``lvl``: one table entry per (hashed) load PC holding its last byte
    address, stride and confidence.  Two equal consecutive non-zero byte strides of at most
    ``IP_STRIDE_MAX_BYTES`` arm it; each further access then prefetches the line of addr + degree * stride
    when that is another line of the same page."""
    c = C0 + lvl * NCOL
    a = I64(addr)
    key = I64(pc & U64(0x7FFFFFFFFFFFFFFF))
    e = P0 + (lvl * IPT_SIZE + I64(_mix64(pc) % U64(IPT_SIZE))) * 4
    if _ld(s, e) != key:
        _st(s, e, key)
        _st(s, e + 1, a)
        _st(s, e + 2, 0)
        _st(s, e + 3, 0)
        return
    stride = a - _ld(s, e + 1)
    if stride == 0:
        return
    if stride == _ld(s, e + 2):
        if _ld(s, e + 3) < 3:
            _add(s, e + 3, 1)
    else:
        _st(s, e + 2, stride)
        _st(s, e + 3, 0)
    _st(s, e + 1, a)
    if _ld(s, e + 3) >= 1 and -IP_STRIDE_MAX_BYTES <= stride <= IP_STRIDE_MAX_BYTES:
        target = a + _cfg(s, c + C_PF_DEGREE) * stride
        lb = _cfg(s, c + C_LINE_BITS)
        pb = _cfg(s, G_PAGE_BITS)                  # (the data page: loads train it)
        if target >= 0 and (target >> lb) != (a >> lb) and (target >> pb) == (a >> pb):
            full = (U64(1) << U64(_cfg(s, c + C_NSECT))) - U64(1)
            prefetch_line(s, lvl, U64(target >> lb), full)


@njit(cache=True, inline="always")
def _first_of(s, i0, n, v):
    """The first of the ``n`` words from ``i0`` that equals ``v``, or -1 (compared 4 at a time, 64 words a
    step).  It may read up to 3 words past them, as :func:`_find` does: the column it searches, the streamer's
    keys, is followed by others."""
    for b in range(0, n, 64):
        w = _find(s, i0 + b, min(n - b, 64), v)
        if w >= 0:
            return b + w
    return -1


@njit(cache=True, inline="always")
def _streamer_to_mru(s, t0, n, ends, k):
    """Put streamer entry ``k`` (out of the recency list) at its most recently used end."""
    mru = _ld(s, ends + ST_MRU)
    _st(s, t0 + ST_NEWER * n + mru, k)
    _st(s, t0 + ST_OLDER * n + k, mru)
    _st(s, ends + ST_MRU, k)


@njit(cache=True)
def train_streamer(s, lvl, line):
    """The streamer at ``lvl`` sees a request for ``line`` (this level's line number) from above.  One table
    entry per 4 KB region (LRU among ``C_ST_N`` entries) holds the last line requested there, the direction of
    the last step and the next line to prefetch.  A step (another line of the region) in the direction of the
    step before confirms a stream; a confirmed stream then prefetches up to two lines a request from its next
    line on, never more than ``C_ST_DIST`` lines ahead of the request nor out of the region, and never behind
    it.  A step the other way turns the entry round unconfirmed."""
    c = C0 + lvl * NCOL
    region_bits = ST_PAGE_BITS - _cfg(s, c + C_LINE_BITS)
    per = I64(1) << region_bits
    # (a shift and a mask, not // and %: numba's signed floor division is a slow idiv and sign fixups)
    key = I64(line >> U64(region_bits)) + 1
    within = I64(line) & (per - 1)
    n = _cfg(s, c + C_ST_N)
    t0 = _cfg(s, c + C_ST0)
    ends = t0 + ST_WORDS * n
    k = _first_of(s, t0 + ST_KEY * n, n, key)
    if k < 0:
        # a new region takes the least recently used entry (an empty one first, the lowest: the list starts
        # in index order and an empty entry is never used)
        k = _ld(s, ends + ST_LRU)
        _st(s, ends + ST_LRU, _ld(s, t0 + ST_NEWER * n + k))
        _streamer_to_mru(s, t0, n, ends, k)
        _st(s, t0 + ST_KEY * n + k, key)
        _st(s, t0 + ST_LAST * n + k, within)
        _st(s, t0 + ST_DIR * n + k, 0)
        _st(s, t0 + ST_NEXT * n + k, 0)
        return
    if k != _ld(s, ends + ST_MRU):
        # out of the list (the LRU end moves on, or the neighbours join), in again at the MRU end
        newer = _ld(s, t0 + ST_NEWER * n + k)
        if k == _ld(s, ends + ST_LRU):
            _st(s, ends + ST_LRU, newer)
        else:
            older = _ld(s, t0 + ST_OLDER * n + k)
            _st(s, t0 + ST_NEWER * n + older, newer)
            _st(s, t0 + ST_OLDER * n + newer, older)
        _streamer_to_mru(s, t0, n, ends, k)
    last = t0 + ST_LAST * n + k
    step = within - _ld(s, last)
    if step == 0:
        return
    d = I64(1) if step > 0 else I64(-1)
    _st(s, last, within)
    if _ld(s, t0 + ST_DIR * n + k) != d:
        _st(s, t0 + ST_DIR * n + k, d)
        _st(s, t0 + ST_NEXT * n + k, within + d)
        return
    nxt = _ld(s, t0 + ST_NEXT * n + k)
    if (nxt - within) * d <= 0:
        nxt = within + d
    full = (U64(1) << U64(_cfg(s, c + C_NSECT))) - U64(1)
    dist = _cfg(s, c + C_ST_DIST)
    base = (key - 1) * per
    for _ in range(2):
        if nxt < 0 or nxt >= per or (nxt - within) * d > dist:
            break
        prefetch_line(s, lvl, U64(base + nxt), full)
        nxt += d
    _st(s, t0 + ST_NEXT * n + k, nxt)


@njit(cache=True)
def run_streamers(s):
    """Train the streamers on the requests noted during the last access, in the order they were made (the
    streamers' own prefetches may note more, at the levels below)."""
    i = 0
    while i < _ld(s, G_ST_N):
        rec = _ld(s, G_ST_REC0 + i)
        train_streamer(s, rec & 15, U64(rec) >> U64(4))
        i += 1
    _st(s, G_ST_N, 0)
