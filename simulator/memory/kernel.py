"""Numba kernels of the memory hierarchy: translation, page walks and the demand accesses of the core.

The state is one flat int64 array (``MemState(S)``; layout in :mod:`simulator.memory.state`), built
by :mod:`simulator.memory.hierarchy`; the cache-level kernels are in :mod:`simulator.memory.caches`.

Other numba code (the core timing model) calls :func:`data_access` and :func:`fetch_access` per
instruction, with the state array first (``data_access(*state, vaddr, size, kind, pc)``).  They return
the supplying level (levels ordered from the core outwards; memory = number of levels); afterwards the
words ``S[SCR_LEVEL]``, ``S[SCR_TLB]`` (0 first-level TLB hit, 1 second-level hit, 2 walk),
``S[SCR_WALK_LOADS]`` and ``S[SCR_WALK_CYCLES]`` hold the supplying level, the TLB outcome and the
walk's loads and cycles.  Before each access the caller sets ``S[SCR_NOW]`` to the current time in
cycles (the core: the cycle of the access; :func:`run_trace`: the trace record's index times a
spacing).  Semantics (the pure-Python reference in ``tests/memref.py`` implements the
same rules):

* A demand access looks up its level; on a miss the missing sectors are looked up
  level by level going down (one access per level) until a level hits or memory
  supplies them; then the line is installed at each missing level, deepest first,
  evicting a victim at each.  A dirty victim is written back to the next level
  (a writeback that hits does not promote the line, as in ChampSim).
* An inclusive level that evicts a line invalidates it in every level above it;
  dirty upper copies make the evicted line dirty.
* An access that straddles two lines is one access, and a miss if either line
  misses (cachegrind's convention); the next level sees one access per missing line.
* ``M`` (modify) accesses count as one load with write semantics (cachegrind).
* Stores to a write-through level update it and go on to the next level; a store
  miss at a no-write-allocate level goes on without allocating.
* Prefetches are issued after the demand access completes, never cross a 4 KB
  physical page, and do not train prefetchers -- except a ``streamer``, which trains on
  every demand and prefetch request that reaches its level from above (after the access
  and the IP-stride training, in the order the requests were made).
* With timed prefetch arrival (``memory.prefetch_arrival = "latency"``), a line a prefetch
  brings into a level below the L1s is ready there at now + the waits the prefetch met +
  the supplying level's latency - that level's latency: a request that hits it sooner waits
  for the rest (added to the access's wait, ``S[G_CH_DELAY]``; a demand counts a late
  prefetch).  Prefetches into the L1D are timed by the core (``S[SCR_PF_N]``).
* A level with ``prefetch_engines`` = n > 0 has n engines, each busy until a time.  A
  prefetch that would be issued (its sectors not all present) takes the engine that
  frees first if that one is free at the current time (busy-until <= now), and keeps
  it busy until now + the load-to-use latency of the level that supplies the line
  (memory's if every level below misses); otherwise it is dropped (counted in
  ``prefetches_dropped``, not issued, nothing filled).  n = 0: unlimited.
"""

from __future__ import annotations

import sys

from numba import njit

from whatif.jitcache import drop_stale_caches
from whatif.simulator.memory import caches, state
from whatif.simulator.memory.caches import (_prefetch_after_demand, _touch, channel, line_miss, prefetch_sets,
                                            prefetched_hit, request, run_streamers, train_ip_stride)
from whatif.simulator.memory.state import (  # noqa: F401  (re-exported: the layout callers need)
    C0, C_LAT, C_LINE_BITS, C_META0, C_NEXT, C_NSECT, C_PF_KIND, C_SECTOR_BITS, C_TAG0, C_WAYS, C_WRITE_BACK, CN_ACC,
    CN_MISS, CN_PF_USEFUL, CN_STRADDLE, G_CH_DELAY, G_DTLB0, G_DTLB1, G_HTAB_PTEGS, G_IP_STRIDE, G_IPAGE_BITS,
    G_ITLB0, G_ITLB1, G_IWALK_LEVELS, G_L1D, G_L1I, G_MAPPING, G_MEM_LAT, G_NLEVELS, G_PAGE_BITS, G_PTE_BYTES, G_SALT,
    G_ST_N, G_WALK_BITS, G_WALK_CACHED, G_WALK_KIND, G_WALK_LEVEL, G_WALK_LEVELS, G_WALK_POLLUTE, HTAB_BASE, I64, K_IFETCH,
    K_LOAD, K_MODIFY, K_STORE, M_PS, M_VD, MAX_LEVELS, MAX_TLBS, MEMROW, MW, N0, NCOL, NSRC, PF_IP_STRIDE,
    PF_WAIT_MAX, PF_WITHIN_SHIFT, PT_BASE, S_LEVEL, S_NMISSED, S_P0, S_TLB, S_WALK_CYCLES, S_WALK_LOADS, SCR, SCR_LEVEL,
    SCR_TLB, SCR_NOW, SCR_PF_N, SCR_PF_REC0, SCR_WALK_CYCLES, SCR_WALK_LOADS, SRC_IFETCH, SRC_LOAD, SRC_STORE,
    SRC_WALK, T_BITS0, T_NSETS, T_PLRU0, T_POLICY, T_STAMP0, T_TAG0, T_WAY_BITS, T_WAYS, TN_ACC, TN_CLOCK, TN_MISS,
    TN_WALK_ACC, TN_WALK_MEM, TN_WALKS, TROW0, U64, EMPTY, MemState, Views, _add, _cfg, _find, _ld, _ldu, _mix64,
    _plru_touch, _plru_victim, _rand, _sector_mask, _set_of, _st, _var, unmanaged, views)


# ============================================================================ translation
@njit(cache=True, inline="always")
def phys(s, vaddr, page_bits):
    if _cfg(s, G_MAPPING) == 0:
        return vaddr
    pb = U64(page_bits)
    pfn = _mix64((vaddr >> pb) ^ U64(_cfg(s, G_SALT))) & U64(0xFFFFFFFFF)     # 36-bit frame numbers
    return (pfn << pb) | (vaddr & ((U64(1) << pb) - U64(1)))


@njit(cache=True, inline="always")
def _tlb_touch(s, c, clock, stamp0, bits, way):
    """Replacement-state update of a TLB hit at ``way`` (C row ``c``)."""
    policy = _cfg(s, c + T_POLICY)
    if policy == 0:
        _add(s, clock, 1)
        _st(s, stamp0 + way, _ld(s, clock))
    elif policy == 1:
        _plru_touch(s, _cfg(s, c + T_PLRU0), bits, way)


@njit(cache=True, inline="always")
def _tlb_lookup(s, t, vpn):
    """Look ``vpn`` up in TLB ``t``, installing it on a miss.  Returns True on a hit."""
    c = C0 + (TROW0 + t) * NCOL
    ways = _cfg(s, c + T_WAYS)
    set_id = I64(vpn & U64(_cfg(s, c + T_NSETS) - 1))
    tag0 = _cfg(s, c + T_TAG0) + set_id * ways
    stamp0 = _cfg(s, c + T_STAMP0) + set_id * ways
    bits = _cfg(s, c + T_BITS0) + set_id
    clock = N0 + (TROW0 + t) * NCOL + TN_CLOCK
    w = _find(s, tag0, ways, vpn)
    if w >= 0:
        _tlb_touch(s, c, clock, stamp0, bits, w)
        return True
    policy = _cfg(s, c + T_POLICY)
    if policy == 0 or policy == 2:
        # the oldest stamp, an empty entry (key 0) first: entries are never invalidated, stamps start at 1
        victim = 0
        best = _ld(s, stamp0) if _ldu(s, tag0) != EMPTY else 0
        for w in range(1, ways):
            key = _ld(s, stamp0 + w) if _ldu(s, tag0 + w) != EMPTY else 0
            if key < best:
                best = key
                victim = w
        _add(s, clock, 1)
        _st(s, stamp0 + victim, _ld(s, clock))
    else:
        victim = -1
        for w in range(ways):
            if _ldu(s, tag0 + w) == EMPTY:
                victim = w
                break
        if victim < 0:
            if policy == 1:
                victim = _plru_victim(s, bits, _cfg(s, c + T_WAY_BITS))
            else:
                victim = I64(_rand(s) % U64(ways))
        if policy == 1:
            _plru_touch(s, _cfg(s, c + T_PLRU0), bits, victim)
    _st(s, tag0 + victim, vpn)
    return False


@njit(cache=True)
def _walk(s, vaddr, t, page_bits):
    """Page walk for ``vaddr`` after TLB ``t`` (the last of its chain) missed.  Adds the cycles of the
    walk's loads, issued one after another (each address depends on the previous load), to the scratch
    row."""
    kind = _cfg(s, G_WALK_KIND)
    nt = N0 + (TROW0 + t) * NCOL
    _add(s, nt + TN_WALKS, 1)
    vpn = vaddr >> U64(page_bits)
    if kind == 1:
        # radix tables: one load per level not held by a paging-structure cache
        levels = _cfg(s, G_WALK_LEVELS) if page_bits == _cfg(s, G_PAGE_BITS) else _cfg(s, G_IWALK_LEVELS)
        bits = _cfg(s, G_WALK_BITS)
        first = _cfg(s, G_WALK_CACHED)
        stop = levels
        base = U64(0)
    elif kind == 2:
        # PowerPC hashed page table: the primary hash of (VSID, page index) selects a 64-byte PTE group;
        # the search reads PTEs in order up to the matching slot.
        vsid = (vaddr >> U64(28)) * U64(897) + U64(0x5A5)          # scattered VSIDs, Linux style
        page_index = (vaddr >> U64(12)) & U64(0xFFFF)
        pteg = ((vsid & U64(0x7FFFF)) ^ page_index) & U64(_cfg(s, G_HTAB_PTEGS) - 1)
        base = HTAB_BASE + pteg * U64(64)
        levels = 0
        bits = 0
        first = 0
        stop = I64(_mix64(vpn) >> U64(61)) + 1
    else:
        return
    n = _cfg(s, G_NLEVELS)
    lvl = _cfg(s, G_WALK_LEVEL)
    pte = _cfg(s, G_PTE_BYTES)
    pollute = _cfg(s, G_WALK_POLLUTE) != 0
    cycles = 0
    loads = 0
    for phase in range(2 if pollute else 1):
        for l in range(first, stop):
            if kind == 1:
                prefix = vpn >> U64(bits * (levels - 1 - l))
                paddr = PT_BASE | (U64(l) << U64(56)) | ((prefix * U64(pte)) & U64(0x00FFFFFFFFFFFFFF))
            else:
                paddr = base + U64(8 * l)
            if phase == 0 and pollute:
                # first pass: host-cache hints for the sets every load of the walk will look up
                if kind == 1 or l == first or l == stop - 1:
                    prefetch_sets(s, lvl, paddr)
                continue
            _add(s, nt + TN_WALK_ACC, 1)
            waited = _ld(s, G_CH_DELAY)
            if pollute:
                # (the demand path's code, not a copy of it inlined here: that made this function 9 KB)
                r = _cache_access(s, lvl, paddr, paddr + U64(pte - 1), _var(SRC_WALK), _var(False), page_bits,
                                  _var(False))
            else:
                # the "no pollution" what-if: page tables are cache-inhibited (PowerPC's WIMG bits allow it),
                # so walk loads neither allocate nor disturb cache state, and memory serves every one of them
                r = n
                _add(s, N0 + MEMROW * NCOL + SRC_WALK, 1)
                _add(s, G_CH_DELAY, channel(s, pte))
            if r == n:
                _add(s, nt + TN_WALK_MEM, 1)
                cycles += _cfg(s, G_MEM_LAT)
            else:
                cycles += _cfg(s, C0 + r * NCOL + C_LAT)
            # a walk load's wait (for the memory channel, for a line in flight) is part of the walk, not of the
            # data access
            cycles += _ld(s, G_CH_DELAY) - waited
            _st(s, G_CH_DELAY, waited)
            loads += 1
    _add(s, SCR + S_WALK_LOADS, loads)
    _add(s, SCR + S_WALK_CYCLES, cycles)


@njit(cache=True, inline="always")
def translate(s, vaddr, t0, t1, page_bits):
    """Translate through the TLB chain (t0, then t1 if >= 0, then a walk).  Returns 0 for a first-level
    hit, 1 for a second-level hit, 2 for a walk.  Counts accesses and misses per TLB."""
    vpn = vaddr >> U64(page_bits)
    n0 = N0 + (TROW0 + t0) * NCOL
    _add(s, n0 + TN_ACC, 1)
    if _tlb_lookup(s, t0, vpn):
        return 0
    _add(s, n0 + TN_MISS, 1)
    if t1 >= 0:
        n1 = N0 + (TROW0 + t1) * NCOL
        _add(s, n1 + TN_ACC, 1)
        if _tlb_lookup(s, t1, vpn):
            return 1
        _add(s, n1 + TN_MISS, 1)
        _walk(s, vaddr, t1, page_bits)
        return 2
    _walk(s, vaddr, t0, page_bits)
    return 2


# ============================================================================ top-level accesses
@njit(cache=True, inline="always")
def _hit(s, lvl, p0, nbytes, src, write):
    """The first-level hit of a demand access without a call: if [p0, p0 + nbytes) lies in one line that
    ``lvl`` holds with all the sectors needed (and, for a write, ``lvl`` is write-back), count the hit as
    request() would and return True; otherwise change nothing and return False.  (A page walk's loads take
    _cache_access, not this.)"""
    c = C0 + lvl * NCOL
    lb = U64(_cfg(s, c + C_LINE_BITS))
    line = p0 >> lb
    # (bitwise, not short-circuit: whether an access writes is random, a branch on it mispredicts)
    if (((p0 + U64(nbytes - 1)) >> lb) != line) | (write & (_cfg(s, c + C_WRITE_BACK) == 0)):
        return False
    set_id = _set_of(s, lvl, line)
    ways = _cfg(s, c + C_WAYS)
    slot0 = set_id * ways
    w = _find(s, _cfg(s, c + C_TAG0) + slot0, ways, line)
    if w < 0:
        return False
    slot = slot0 + w
    m = _cfg(s, c + C_META0) + slot * MW
    mask = _sector_mask(p0, nbytes, _cfg(s, c + C_SECTOR_BITS), _cfg(s, c + C_NSECT))
    vd = _ldu(s, m + M_VD)
    if (vd & mask) != mask:
        return False
    _add(s, N0 + lvl * NCOL + CN_ACC + src, 1)
    _touch(s, lvl, slot, set_id, w)
    if _ldu(s, m + M_PS) & mask:
        prefetched_hit(s, lvl, m, mask, line, True)
    _st(s, m + M_VD, vd | ((mask << U64(32)) * U64(write)))      # dirty on a write, branch-free
    return True


@njit(cache=True)
def _cache_access(s, lvl, p0, p1, src, write, page_bits, record):
    """The cache part of an access of physical bytes [p0, p1] at first level ``lvl``, with the straddling
    rule: an access over two lines is one access, and a miss if either line misses.  Returns the supplying
    level (also left in the scratch row).  ``page_bits``: the size of the page the access lies in, which the
    miss-triggered prefetchers stay inside.  ``record``: a demand access, noted for the miss-triggered
    prefetchers (not a page walk's load)."""
    lb = U64(_cfg(s, C0 + lvl * NCOL + C_LINE_BITS))
    line0 = p0 >> lb
    line1 = p1 >> lb
    cn = N0 + lvl * NCOL
    nxt = _cfg(s, C0 + lvl * NCOL + C_NEXT)
    if nxt >= 0:
        prefetch_sets(s, nxt, p0)                 # host-cache hint: the lower sets a miss will look up
    pieces = 1
    if line0 != line1:
        pieces = 2
        _add(s, cn + CN_STRADDLE, 1)
        _add(s, cn + CN_ACC + src, 1)
    r = 0
    missed = False
    for k in range(pieces):
        if k == 0:
            a = p0
            nbytes = I64(p1 - p0) + 1 if pieces == 1 else I64(((line0 + U64(1)) << lb) - p0)
        else:
            a = line1 << lb
            nbytes = I64(p1 - a) + 1
        rk = line_miss(s, lvl, a, nbytes, src, write, record) if pieces == 1 else -1
        if rk < 0:
            rk = request(s, lvl, a, nbytes, src, write, pieces == 1, record)
        if record and _ld(s, SCR + S_NMISSED) != 0:
            _prefetch_after_demand(s, page_bits)
        missed = missed or rk != lvl
        r = max(r, rk)
    if pieces == 2 and missed:
        _add(s, cn + CN_MISS + src, 1)
    _st(s, SCR + S_LEVEL, r)
    return r


@njit(cache=True)
def _top_access(s, lvl, t0, t1, vaddr, size, src, write, page_bits):
    """A demand access from the core: translation, then the first cache level, with the straddling
    rule applied to both pages and lines.  Returns the supplying level; the scratch row holds the TLB
    outcome and the walk's loads and cycles."""
    _st(s, SCR + S_WALK_LOADS, 0)
    _st(s, SCR + S_WALK_CYCLES, 0)
    if size < 1:
        size = 1
    vlast = vaddr + U64(size - 1)
    pb = U64(page_bits)
    p0 = phys(s, vaddr, page_bits)
    _st(s, SCR + S_P0, p0)
    prefetch_sets(s, lvl, p0)      # host-cache hint: the data sets, during translation
    tlb = 0
    if t0 >= 0:
        for k in range(1 if (vlast >> pb) == (vaddr >> pb) else 2):
            tlb = max(tlb, translate(s, vaddr if k == 0 else vlast, t0, t1, page_bits))
    _st(s, SCR + S_TLB, tlb)
    return _cache_access(s, lvl, p0, phys(s, vlast, page_bits), src, write, page_bits, _var(True))


@njit(cache=True, inline="always")
def _access(s, lvl, t0, t1, vaddr, size, src, write, page_bits):
    """A demand access, with the common case inline and without a call: the access stays within one
    page, hits the first TLB (then only the cache part follows) and, within one line, hits the first
    cache level (which, for a write, is write-back)."""
    if t0 >= 0 and size >= 1:
        pb = U64(page_bits)
        vpn = vaddr >> pb
        tc = C0 + (TROW0 + t0) * NCOL
        tways = _cfg(s, tc + T_WAYS)
        tset = I64(vpn & U64(_cfg(s, tc + T_NSETS) - 1))
        tw = _find(s, _cfg(s, tc + T_TAG0) + tset * tways, tways, vpn)
        if tw >= 0 and ((vaddr + U64(size - 1)) >> pb) == vpn:
            # first-level TLB hit: as translate() would count it
            tn = N0 + (TROW0 + t0) * NCOL
            _add(s, tn + TN_ACC, 1)
            _tlb_touch(s, tc, tn + TN_CLOCK, _cfg(s, tc + T_STAMP0) + tset * tways, _cfg(s, tc + T_BITS0) + tset,
                       tw)
            _st(s, SCR + S_TLB, 0)
            _st(s, SCR + S_WALK_LOADS, 0)
            _st(s, SCR + S_WALK_CYCLES, 0)
            # (hashed from the address, not read from a frame kept in the TLB entry, tried: 10 % fewer host
            # instructions, but the cache lookup then waits for the TLB's, and it ran no faster)
            p0 = phys(s, vaddr, page_bits)
            _st(s, SCR + S_P0, p0)
            if not _hit(s, lvl, p0, size, src, write):
                # (the same page: the same frame)
                return _cache_access(s, lvl, p0, p0 + U64(size - 1), _var(src), _var(write), page_bits, _var(True))
            if _ld(s, SCR + S_NMISSED) != 0:          # a hit on a prefetched line at a tagged prefetcher
                _prefetch_after_demand(s, page_bits)
            _st(s, SCR + S_LEVEL, lvl)
            return lvl
    return _top_access(s, lvl, t0, t1, vaddr, size, _var(src), _var(write), page_bits)


@njit(cache=True, inline="always")
def _fetch(s, vaddr, size):
    _st(s, G_CH_DELAY, 0)
    r = _access(s, _cfg(s, G_L1I), _cfg(s, G_ITLB0), _cfg(s, G_ITLB1), vaddr, size, SRC_IFETCH, False,
                _cfg(s, G_IPAGE_BITS))
    if _ld(s, G_ST_N) != 0:
        run_streamers(s)
    return r


@njit(cache=True)
def _train_prefetchers(s, vaddr, pc):
    lvl = _cfg(s, G_L1D)
    while lvl >= 0:
        if _cfg(s, C0 + lvl * NCOL + C_PF_KIND) & PF_IP_STRIDE:
            train_ip_stride(s, lvl, pc, _ldu(s, SCR + S_P0))       # phys(vaddr), as the access left it
        lvl = _cfg(s, C0 + lvl * NCOL + C_NEXT)


@njit(cache=True, inline="always")
def _data(s, vaddr, size, kind, pc):
    _st(s, SCR_PF_N, 0)
    _st(s, G_CH_DELAY, 0)
    write = kind != K_LOAD
    src = SRC_LOAD + I64(kind == K_STORE)
    r = _access(s, _cfg(s, G_L1D), _cfg(s, G_DTLB0), _cfg(s, G_DTLB1), vaddr, size, src, write,
                _cfg(s, G_PAGE_BITS))
    if _cfg(s, G_IP_STRIDE) != 0 and src == SRC_LOAD:
        _train_prefetchers(s, vaddr, U64(pc))      # (one type: a signed PC compiled it again)
    if _ld(s, G_ST_N) != 0:
        run_streamers(s)
    return r


@njit(cache=True, inline="always")
def fetch_access(S, vaddr, size):
    """Instruction fetch of ``size`` bytes at ``vaddr``: ITLB chain, then L1I.  Returns the supplying
    level; the scratch words hold the TLB outcome and the walk's loads and cycles.  Prefetch engines read
    the time from ``S[SCR_NOW]``, which the caller keeps current."""
    return _fetch(S.ctypes.data, vaddr, size)


@njit(cache=True, inline="always")
def data_access(S, vaddr, size, kind, pc):
    """Load (kind 1), store (2) or modify (3) of ``size`` bytes at ``vaddr`` by the instruction at ``pc``.
    Returns the supplying level; the scratch words hold the TLB outcome and the walk's loads and cycles.
    Prefetch engines read the time from ``S[SCR_NOW]``, which the caller keeps current."""
    return _data(S.ctypes.data, vaddr, size, kind, pc)


@njit(cache=True, nogil=True)     # (a reader thread parses the next chunk meanwhile)
def run_trace(S, addrs, sizes, kinds, start, stop, t0, spacing, pc):
    """Simulate trace records [start, stop); returns the PC after them.  The PC of a data access is the
    address of the most recent instruction fetch (lackey order: an ``I`` record precedes the data
    accesses of its instruction); ``pc``: the one before ``start`` (a chunk continues its predecessor).
    Time (``S[SCR_NOW]``, for the prefetch engines): record ``i`` at cycle ``(t0 + i) * spacing``."""
    s = S.ctypes.data
    pc = U64(pc)
    for i in range(U64(start), U64(stop)):          # (unsigned: no negative-index wraparound code)
        _st(s, SCR_NOW, (I64(t0) + I64(i)) * I64(spacing))
        k = kinds[i]
        if k == K_IFETCH:
            pc = addrs[i]
            _fetch(s, addrs[i], I64(sizes[i]))
        else:
            _data(s, addrs[i], I64(sizes[i]), I64(k), pc)
    return pc


@njit(cache=True)
def book_channel(S, now, nbytes):
    """From Python (tests): book ``nbytes`` on the memory channel at cycle ``now``; returns the wait."""
    s = S.ctypes.data
    _st(s, SCR_NOW, now)
    return channel(s, nbytes)


# ============================================================================ cache coherence
drop_stale_caches("memory", (state, caches, sys.modules[__name__]))
