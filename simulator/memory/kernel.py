"""Numba kernels of the memory hierarchy: set-associative caches, TLBs and page walks.

The whole state lives in six flat arrays, built by :mod:`simulator.memory.hierarchy`
and passed explicitly (field access through a tuple of many arrays costs reference
counting on every call):

``C`` int64 [levels + tlbs, NCOL]  configuration rows: cache levels first, then TLBs
``G`` int64 [NG]                   global configuration and row offsets
``T`` uint64 [slots + sets]        tags (the ways of a set are adjacent), then tree-PLRU bits per set
``M`` uint64 [slots, 4]            per slot: valid sectors, dirty sectors, prefetched sectors, stamp
``N`` int64 [rows, NCOL]           counters (per level, per TLB, memory), clocks and scratch
``P`` int64 [levels, IPT_SIZE, 4]  IP-stride prefetcher tables

Other numba code (the core timing model) calls :func:`data_access` and
:func:`fetch_access` per instruction.  Semantics (the pure-Python reference in
``tests/memref.py`` implements the same rules):

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
  physical page, and do not train prefetchers.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import carray, njit, types
from numba.core import cgutils
from numba.extending import intrinsic

U64 = np.uint64
EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)
MAX_LEVELS = 8
NCOL = 32

# ---- access kinds (trace encoding) ------------------------------------------------------------
K_IFETCH, K_LOAD, K_STORE, K_MODIFY = 0, 1, 2, 3

# ---- request sources, for per-source counters --------------------------------------------------
SRC_IFETCH, SRC_LOAD, SRC_STORE, SRC_WALK, SRC_PREFETCH, SRC_WRITEBACK = 0, 1, 2, 3, 4, 5
NSRC = 6

# ---- cache configuration columns (C[level, X]) ------------------------------------------------
(C_SLOT0, C_NSETS, C_WAYS, C_LINE_BITS, C_SECTOR_BITS, C_NSECT, C_POLICY, C_WRITE_BACK, C_WRITE_ALLOC,
 C_INCLUSIVE, C_NEXT, C_PF_KIND, C_PF_DEGREE, C_SLICES, C_SET0, C_WAY_BITS, C_LAT) = range(17)
C_ABOVE = 17                      # C_ABOVE .. C_ABOVE+MAX_LEVELS-1: every level above (transitively), -1 ends

# ---- TLB configuration columns (C[G_TROW0 + t, X]) ---------------------------------------------
T_SLOT0, T_NSETS, T_WAYS, T_POLICY, T_SET0, T_WAY_BITS = range(6)

# ---- M columns (M[slot, X]) --------------------------------------------------------------------
M_VALID, M_DIRTY, M_PREF, M_STAMP = range(4)

# ---- cache counters (N[level, X]) -------------------------------------------------------------
CN_ACC, CN_MISS = 0, NSRC         # 0..5 accesses by source, 6..11 misses by source
CN_WRITEBACKS, CN_PF_ISSUED, CN_PF_USEFUL, CN_BACK_INVAL, CN_SECTOR_MISS, CN_EVICTIONS, CN_STRADDLE, \
    CN_CLOCK, CN_LAST = range(2 * NSRC, 2 * NSRC + 9)
# CN_LAST / TN_LAST: the slot touched most recently at this level or TLB.  Touching it again changes no
# replacement state (it is already the most recently used line of its set), which gives the fast path.

# ---- TLB counters (N[G_TROW0 + t, X]) ---------------------------------------------------------
TN_ACC, TN_MISS, TN_WALKS, TN_WALK_ACC, TN_WALK_MEM, TN_CLOCK, TN_LAST = range(7)

# ---- memory counters (N[G_MEMROW, X]): reads by source 0..5, then writes ------------------------
MEM_WRITES = NSRC

# ---- scratch row (N[G_SCRROW, X]) -------------------------------------------------------------
S_NMISSED, S_LEVEL, S_TLB, S_WALK_LOADS, S_WALK_CYCLES, S_FILL_SLOT = range(6)
S_MISSED = 8                      # 8..15 levels missed by the last demand request, 16..23 their lines
S_MISSED_LINE = 16

# ---- fill-path frames (N[G_FRAMEROW + d, X]) --------------------------------------------------
F_LVL, F_WAY, F_SET, F_SLOT0, F_MASK, F_LINE = range(6)

# ---- globals (G[X]) ---------------------------------------------------------------------------
(G_L1I, G_L1D, G_ITLB0, G_ITLB1, G_DTLB0, G_DTLB1, G_PAGE_BITS, G_WALK_KIND, G_WALK_LEVELS, G_WALK_BITS,
 G_WALK_LEVEL, G_WALK_CACHED, G_WALK_POLLUTE, G_HTAB_PTEGS, G_MAPPING, G_SALT, G_NLEVELS, G_PTE_BYTES,
 G_TROW0, G_MEMROW, G_SCRROW, G_FRAMEROW, G_MEM_LAT, G_RNG, G_IP_STRIDE, G_IPAGE_BITS, G_IWALK_LEVELS,
 G_TLB_LAT0) = range(28)
NG = G_TLB_LAT0 + 16              # per-TLB hit latencies follow

# prefetcher bits of C[level, C_PF_KIND] (bit = 1 << (registry id - 1); several may be stacked)
PF_NEXT_LINE, PF_ADJACENT_SECTOR, PF_ADJACENT_LINE, PF_IP_STRIDE = 1, 2, 4, 8

IPT_SIZE = 256                    # IP-stride table entries per level: [pc, last line, stride, confidence]

PT_BASE = np.uint64(0xF000000000000000)     # physical region of radix page tables (per-level sub-regions)
HTAB_BASE = np.uint64(0xE000000000000000)   # physical base of the PowerPC hashed page table

MemState = namedtuple("MemState", ["C", "G", "T", "M", "N", "P"])


# ============================================================================ unmanaged views
@intrinsic
def _voidptr(typingctx, addr):
    """An integer address as a void pointer (numba's documented raw-pointer recipe)."""
    sig = types.voidptr(types.uintp)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], cgutils.voidptr_t)

    return sig, codegen


@njit(cache=True, inline="always")
def unmanaged(C, G, T, M, N, P):
    """Views of the state arrays without a memory-info block.

    Every array passed between numba functions is reference counted with atomic instructions; with
    five arrays handed down a dozen calls per access, that dominated the run time.  Views built from
    the raw data pointers carry no memory info, so the reference counting becomes a null test.  The
    caller keeps the owning arrays alive for the duration of the call."""
    c = carray(_voidptr(C.ctypes.data), C.shape, np.int64)
    g = carray(_voidptr(G.ctypes.data), G.shape, np.int64)
    t = carray(_voidptr(T.ctypes.data), T.shape, np.uint64)
    m = carray(_voidptr(M.ctypes.data), M.shape, np.uint64)
    n = carray(_voidptr(N.ctypes.data), N.shape, np.int64)
    p = carray(_voidptr(P.ctypes.data), P.shape, np.int64)
    return c, g, t, m, n, p


# ============================================================================ helpers
@njit(cache=True, inline="always")
def _mix64(x):
    # splitmix64 finaliser: a fixed bijective scrambling of 64-bit values.
    x = (x ^ (x >> U64(30))) * U64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> U64(27))) * U64(0x94D049BB133111EB)
    return x ^ (x >> U64(31))


@njit(cache=True, inline="always")
def _rand(G):
    # xorshift64*: deterministic, seeded from the run's numpy Generator.
    x = U64(G[G_RNG])
    x ^= x >> U64(12)
    x ^= x << U64(25)
    x ^= x >> U64(27)
    G[G_RNG] = np.int64(x)
    return x * U64(0x2545F4914F6CDD1D)


@njit(cache=True, inline="always")
def _sector_mask(addr, nbytes, sector_bits, nsect):
    if nsect == 1:
        return U64(1)
    first = np.int64((addr >> U64(sector_bits)) & U64(nsect - 1))
    last = np.int64(((addr + U64(nbytes - 1)) >> U64(sector_bits)) & U64(nsect - 1))
    return ((U64(1) << U64(last + 1)) - U64(1)) ^ ((U64(1) << U64(first)) - U64(1))


@njit(cache=True, inline="always")
def _set_of(C, lvl, line):
    nsets = C[lvl, C_NSETS]
    s = np.int64(line & U64(nsets - 1))
    slices = C[lvl, C_SLICES]
    if slices > 1:
        # address-hashed slice selection (Intel's hash is undocumented; any fixed good hash will do)
        s += nsets * np.int64(_mix64(line) % U64(slices))
    return s


@njit(cache=True, inline="always")
def _find(T, slot0, ways, line):
    # no early exit: the way that hits varies from access to access, and a data-dependent loop exit
    # costs a branch misprediction of the simulator itself (tags are unique within a set)
    found = -1
    for w in range(ways):
        if T[slot0 + w] == line:
            found = w
    return found


@njit(cache=True, inline="always")
def _plru_touch(T, set_g, way, way_bits):
    # branch-free: each node on the path points away from the touched way
    bits = T[set_g]
    node = 1
    for level in range(way_bits):
        d = (way >> (way_bits - 1 - level)) & 1
        m = U64(1) << U64(node)
        bits = (bits & ~m) | (m * U64(1 - d))
        node = 2 * node + d
    T[set_g] = bits


@njit(cache=True, inline="always")
def _plru_victim(T, set_g, way_bits):
    bits = T[set_g]
    node = 1
    w = 0
    for level in range(way_bits):
        d = np.int64((bits >> U64(node)) & U64(1))
        w = (w << 1) | d
        node = 2 * node + d
    return w


@njit(cache=True, inline="always")
def _touch(C, T, M, N, lvl, slot, set_id, way):
    N[lvl, CN_LAST] = slot
    policy = C[lvl, C_POLICY]
    if policy == 0:      # LRU
        N[lvl, CN_CLOCK] += 1
        M[slot, M_STAMP] = U64(N[lvl, CN_CLOCK])
    elif policy == 1:    # tree PLRU
        _plru_touch(T, C[lvl, C_SET0] + set_id, way, C[lvl, C_WAY_BITS])
    # FIFO and random: a hit changes nothing


@njit(cache=True)
def _victim(C, G, T, M, lvl, slot0, set_id, ways):
    for w in range(ways):                  # an invalid way first
        if M[slot0 + w, M_VALID] == 0:
            return w
    policy = C[lvl, C_POLICY]
    if policy == 0 or policy == 2:         # LRU / FIFO: the oldest stamp
        best = 0
        best_stamp = M[slot0, M_STAMP]
        for w in range(1, ways):
            if M[slot0 + w, M_STAMP] < best_stamp:
                best_stamp = M[slot0 + w, M_STAMP]
                best = w
        return best
    if policy == 1:
        return _plru_victim(T, C[lvl, C_SET0] + set_id, C[lvl, C_WAY_BITS])
    return np.int64(_rand(G) % U64(ways))


# ============================================================================ cache levels
@njit(cache=True)
def _invalidate_above(C, T, M, lvl, line_addr, nbytes):
    """Back-invalidate [line_addr, +nbytes) in every level above ``lvl``.
    Returns (lines invalidated, whether any of them was dirty)."""
    count = 0
    dirty = False
    for k in range(MAX_LEVELS):
        u = C[lvl, C_ABOVE + k]
        if u < 0:
            break
        lb = C[u, C_LINE_BITS]
        ways = C[u, C_WAYS]
        a = line_addr
        end = line_addr + U64(nbytes)
        while a < end:
            line = a >> U64(lb)
            slot0 = C[u, C_SLOT0] + _set_of(C, u, line) * ways
            w = _find(T, slot0, ways, line)
            if w >= 0:
                slot = slot0 + w
                if M[slot, M_DIRTY] != 0:
                    dirty = True
                T[slot] = EMPTY
                M[slot, M_VALID] = 0
                M[slot, M_DIRTY] = 0
                M[slot, M_PREF] = 0
                count += 1
            a += U64(1) << U64(lb)
    return count, dirty


@njit(cache=True)
def _install(C, G, T, M, N, lvl, line, set_id, slot0, mask, dirty_mask, pref_mask):
    """Put ``line`` into its set at ``lvl``, evicting a victim.

    Returns (slot, victim address, victim bytes): the bytes are 0 unless the victim must be written back
    (the caller sends it on with :func:`_writeback`)."""
    ways = C[lvl, C_WAYS]
    way = _victim(C, G, T, M, lvl, slot0, set_id, ways)
    slot = slot0 + way
    wb_addr = U64(0)
    wb_bytes = 0
    if M[slot, M_VALID] != 0:
        victim_line = T[slot]
        victim_dirty = M[slot, M_DIRTY] != 0
        lb = C[lvl, C_LINE_BITS]
        N[lvl, CN_EVICTIONS] += 1
        T[slot] = EMPTY
        M[slot, M_VALID] = 0
        M[slot, M_DIRTY] = 0
        M[slot, M_PREF] = 0
        if C[lvl, C_INCLUSIVE] != 0:
            n_inv, up_dirty = _invalidate_above(C, T, M, lvl, victim_line << U64(lb), np.int64(1) << lb)
            N[lvl, CN_BACK_INVAL] += n_inv
            victim_dirty = victim_dirty or up_dirty
        if victim_dirty:
            N[lvl, CN_WRITEBACKS] += 1
            wb_addr = victim_line << U64(lb)
            wb_bytes = np.int64(1) << lb
    T[slot] = line
    M[slot, M_VALID] = mask
    M[slot, M_DIRTY] = dirty_mask
    M[slot, M_PREF] = pref_mask
    N[lvl, CN_LAST] = slot
    policy = C[lvl, C_POLICY]
    if policy == 0 or policy == 2:
        N[lvl, CN_CLOCK] += 1
        M[slot, M_STAMP] = U64(N[lvl, CN_CLOCK])
    elif policy == 1:
        _plru_touch(T, C[lvl, C_SET0] + set_id, way, C[lvl, C_WAY_BITS])
    return slot, wb_addr, wb_bytes


@njit(cache=True)
def _writeback(C, G, T, M, N, lvl, addr, nbytes):
    """A dirty victim of ``nbytes`` at ``addr`` travels down from level ``lvl`` (-1: memory) until a
    write-back level absorbs it; installing it may evict further dirty victims, which travel on."""
    while nbytes > 0:
        if lvl < 0:
            N[G[G_MEMROW], MEM_WRITES] += 1
            return
        N[lvl, CN_ACC + SRC_WRITEBACK] += 1
        lb = C[lvl, C_LINE_BITS]
        line = addr >> U64(lb)
        set_id = _set_of(C, lvl, line)
        ways = C[lvl, C_WAYS]
        slot0 = C[lvl, C_SLOT0] + set_id * ways
        nsect = C[lvl, C_NSECT]
        mask = _sector_mask(addr, nbytes, C[lvl, C_SECTOR_BITS], nsect)
        w = _find(T, slot0, ways, line)
        if C[lvl, C_WRITE_BACK] == 0:
            # write-through level: a present copy takes the data, which goes on down
            if w >= 0:
                M[slot0 + w, M_VALID] |= mask
            lvl = C[lvl, C_NEXT]
            continue
        if w >= 0:
            M[slot0 + w, M_VALID] |= mask
            M[slot0 + w, M_DIRTY] |= mask
            return
        N[lvl, CN_MISS + SRC_WRITEBACK] += 1
        nxt = C[lvl, C_NEXT]
        if C[lvl, C_WRITE_ALLOC] == 0:
            lvl = nxt
            continue
        # the written range comes with the victim: installed without a fill (a larger unsectored line
        # is taken as wholly written)
        full = (U64(1) << U64(nsect)) - U64(1)
        valid = mask if (nsect > 1 and nbytes < (np.int64(1) << lb)) else full
        _, addr, nbytes = _install(C, G, T, M, N, lvl, line, set_id, slot0, valid, valid, U64(0))
        lvl = nxt


@njit(cache=True, inline="always")
def _range_of(mask, line, line_bits, sector_bits):
    """First byte address and length of the sector range spanned by ``mask`` in ``line``."""
    first = 0
    while (mask & (U64(1) << U64(first))) == 0:
        first += 1
    last = first
    while (mask >> U64(last + 1)) != 0:
        last += 1
    base = (line << U64(line_bits)) + (U64(first) << U64(sector_bits))
    return base, (last - first + 1) << sector_bits


@njit(cache=True)
def _fill(C, G, T, M, N, lvl, line, set_id, slot0, w, mask, src, pref_mask, record):
    """Service a miss of sectors ``mask`` of ``line`` at ``lvl`` (way ``w`` if the tag is present).

    Down phase: each lower level looks up the missing range (counting one access) until one hits or
    memory supplies it.  Up phase: the line is installed at each missing level, deepest first (fetch
    first, then evict).  Returns the supplying level (G_NLEVELS for memory).  With ``record``, the
    levels that missed are noted for the miss-triggered prefetchers."""
    n = G[G_NLEVELS]
    fr = G[G_FRAMEROW]
    sr = G[G_SCRROW]
    depth = 0
    N[fr, F_LVL] = lvl
    N[fr, F_WAY] = w
    N[fr, F_SET] = set_id
    N[fr, F_SLOT0] = slot0
    N[fr, F_MASK] = np.int64(mask)
    N[fr, F_LINE] = np.int64(line)
    if record:
        N[sr, S_MISSED] = lvl
        N[sr, S_MISSED_LINE] = np.int64(line)
        N[sr, S_NMISSED] = 1
    missing = mask if w < 0 else (mask & ~M[slot0 + w, M_VALID])
    req_addr, req_bytes = _range_of(missing, line, C[lvl, C_LINE_BITS], C[lvl, C_SECTOR_BITS])
    cur = C[lvl, C_NEXT]
    served = n
    while cur >= 0:
        lb = C[cur, C_LINE_BITS]
        cline = req_addr >> U64(lb)
        cset = _set_of(C, cur, cline)
        cways = C[cur, C_WAYS]
        cslot0 = C[cur, C_SLOT0] + cset * cways
        cmask = _sector_mask(req_addr, req_bytes, C[cur, C_SECTOR_BITS], C[cur, C_NSECT])
        N[cur, CN_ACC + src] += 1
        cw = _find(T, cslot0, cways, cline)
        if cw >= 0 and (M[cslot0 + cw, M_VALID] & cmask) == cmask:
            slot = cslot0 + cw
            _touch(C, T, M, N, cur, slot, cset, cw)
            if M[slot, M_PREF] & cmask:
                N[cur, CN_PF_USEFUL] += 1
                M[slot, M_PREF] &= ~cmask
            served = cur
            break
        N[cur, CN_MISS + src] += 1
        if cw >= 0:
            N[cur, CN_SECTOR_MISS] += 1
        depth += 1
        N[fr + depth, F_LVL] = cur
        N[fr + depth, F_WAY] = cw
        N[fr + depth, F_SET] = cset
        N[fr + depth, F_SLOT0] = cslot0
        N[fr + depth, F_MASK] = np.int64(cmask)
        N[fr + depth, F_LINE] = np.int64(cline)
        if record:
            N[sr, S_MISSED + depth] = cur
            N[sr, S_MISSED_LINE + depth] = np.int64(cline)
            N[sr, S_NMISSED] = depth + 1
        missing = cmask if cw < 0 else (cmask & ~M[cslot0 + cw, M_VALID])
        req_addr, req_bytes = _range_of(missing, cline, lb, C[cur, C_SECTOR_BITS])
        cur = C[cur, C_NEXT]
    if served == n:
        N[G[G_MEMROW], src] += 1
    slot = -1
    for d in range(depth, -1, -1):
        lv = N[fr + d, F_LVL]
        lw = N[fr + d, F_WAY]
        lset = N[fr + d, F_SET]
        lslot0 = N[fr + d, F_SLOT0]
        lmask = U64(N[fr + d, F_MASK])
        lline = U64(N[fr + d, F_LINE])
        pm = pref_mask if d == 0 else U64(0)
        if lw >= 0 and T[lslot0 + lw] == lline:
            slot = lslot0 + lw
            M[slot, M_PREF] |= pm & ~M[slot, M_VALID]
            M[slot, M_VALID] |= lmask
            _touch(C, T, M, N, lv, slot, lset, lw)
        else:
            # (a present tag may have been back-invalidated by an inclusive level below meanwhile)
            slot, wb_addr, wb_bytes = _install(C, G, T, M, N, lv, lline, lset, lslot0, lmask, U64(0), pm)
            if wb_bytes > 0:
                _writeback(C, G, T, M, N, C[lv, C_NEXT], wb_addr, wb_bytes)
    N[sr, S_FILL_SLOT] = slot
    return served


@njit(cache=True)
def request(C, G, T, M, N, lvl, addr, nbytes, src, write, count, record):
    """A demand request of ``nbytes`` (within one line) at ``addr`` arriving at level ``lvl``.

    Reads stop at the first level that hits.  Writes are absorbed by the first write-back level (which
    allocates on a miss when it write-allocates); write-through and no-write-allocate levels pass the
    write on.  ``count=False`` leaves the first level's access/miss counters to the caller.  Returns
    the level that supplied the data (G_NLEVELS for memory)."""
    n = G[G_NLEVELS]
    served = n
    if record:
        N[G[G_SCRROW], S_NMISSED] = 0
    first = True
    while lvl >= 0:
        lb = C[lvl, C_LINE_BITS]
        line = addr >> U64(lb)
        set_id = _set_of(C, lvl, line)
        ways = C[lvl, C_WAYS]
        slot0 = C[lvl, C_SLOT0] + set_id * ways
        mask = _sector_mask(addr, nbytes, C[lvl, C_SECTOR_BITS], C[lvl, C_NSECT])
        do_count = count or not first
        if do_count:
            N[lvl, CN_ACC + src] += 1
        w = _find(T, slot0, ways, line)
        if w >= 0 and (M[slot0 + w, M_VALID] & mask) == mask:
            slot = slot0 + w
            _touch(C, T, M, N, lvl, slot, set_id, w)
            if M[slot, M_PREF] & mask:
                N[lvl, CN_PF_USEFUL] += 1
                M[slot, M_PREF] &= ~mask
            if first:
                served = lvl
            if not write:
                return served
            if C[lvl, C_WRITE_BACK] != 0:
                M[slot, M_DIRTY] |= mask
                return served
        else:
            if do_count:
                N[lvl, CN_MISS + src] += 1
                if w >= 0:
                    N[lvl, CN_SECTOR_MISS] += 1
            if not (write and C[lvl, C_WRITE_ALLOC] == 0):
                r = _fill(C, G, T, M, N, lvl, line, set_id, slot0, w, mask, src, U64(0), record and first)
                if first:
                    served = r
                if not write:
                    return served
                if C[lvl, C_WRITE_BACK] != 0:
                    M[N[G[G_SCRROW], S_FILL_SLOT], M_DIRTY] |= mask
                    return served
        # the write goes on to the next level
        first = False
        lvl = C[lvl, C_NEXT]
    N[G[G_MEMROW], MEM_WRITES] += 1
    return served


# ============================================================================ prefetchers
@njit(cache=True)
def prefetch_line(C, G, T, M, N, lvl, line, mask):
    """Bring sectors ``mask`` of ``line`` into ``lvl`` unless present; counts an issued prefetch."""
    set_id = _set_of(C, lvl, line)
    ways = C[lvl, C_WAYS]
    slot0 = C[lvl, C_SLOT0] + set_id * ways
    w = _find(T, slot0, ways, line)
    if w >= 0:
        mask = mask & ~M[slot0 + w, M_VALID]
        if mask == 0:
            return
    N[lvl, CN_PF_ISSUED] += 1
    _fill(C, G, T, M, N, lvl, line, set_id, slot0, w, mask, SRC_PREFETCH, mask, False)


@njit(cache=True)
def _prefetch_after_demand(C, G, T, M, N):
    """Run the miss-triggered prefetchers of every level the last demand request missed, top down."""
    sr = G[G_SCRROW]
    k = N[sr, S_NMISSED]
    if k == 0:
        return
    N[sr, S_NMISSED] = 0
    for i in range(k):
        lvl = N[sr, S_MISSED + i]
        kinds = C[lvl, C_PF_KIND]
        if (kinds & 7) == 0:
            continue
        line = U64(N[sr, S_MISSED_LINE + i])
        lb = C[lvl, C_LINE_BITS]
        full = (U64(1) << U64(C[lvl, C_NSECT])) - U64(1)
        page_lines = U64(1) << U64(max(12 - lb, 0))      # prefetches stay within a 4 KB physical page
        if kinds & PF_ADJACENT_SECTOR:
            prefetch_line(C, G, T, M, N, lvl, line, full)  # the sectors not yet valid
        if kinds & PF_ADJACENT_LINE:
            if page_lines > U64(1):
                prefetch_line(C, G, T, M, N, lvl, line ^ U64(1), full)
        if kinds & PF_NEXT_LINE:
            for d in range(1, C[lvl, C_PF_DEGREE] + 1):
                target = line + U64(d)
                if target // page_lines != line // page_lines:
                    break
                prefetch_line(C, G, T, M, N, lvl, target, full)


@njit(cache=True)
def train_ip_stride(C, G, T, M, N, P, lvl, pc, addr):
    """IP-based stride prefetcher at ``lvl``: one table entry per (hashed) load PC; two equal
    consecutive non-zero line strides arm it, and each further access prefetches degree strides ahead."""
    lb = C[lvl, C_LINE_BITS]
    line = np.int64(addr >> U64(lb))
    key = np.int64(pc & U64(0x7FFFFFFFFFFFFFFF))
    e = np.int64(_mix64(pc) % U64(IPT_SIZE))
    if P[lvl, e, 0] != key:
        P[lvl, e, 0] = key
        P[lvl, e, 1] = line
        P[lvl, e, 2] = 0
        P[lvl, e, 3] = 0
        return
    stride = line - P[lvl, e, 1]
    if stride == 0:
        return
    if stride == P[lvl, e, 2]:
        if P[lvl, e, 3] < 3:
            P[lvl, e, 3] += 1
    else:
        P[lvl, e, 2] = stride
        P[lvl, e, 3] = 0
    P[lvl, e, 1] = line
    if P[lvl, e, 3] >= 1:
        target = line + C[lvl, C_PF_DEGREE] * stride
        page_shift = max(12 - lb, 0)
        if target >= 0 and (target >> page_shift) == (line >> page_shift):
            full = (U64(1) << U64(C[lvl, C_NSECT])) - U64(1)
            prefetch_line(C, G, T, M, N, lvl, U64(target), full)


# ============================================================================ translation
@njit(cache=True, inline="always")
def phys(G, vaddr, page_bits):
    if G[G_MAPPING] == 0:
        return vaddr
    pb = U64(page_bits)
    pfn = _mix64((vaddr >> pb) ^ U64(G[G_SALT])) & U64(0xFFFFFFFFF)     # 36-bit frame numbers
    return (pfn << pb) | (vaddr & ((U64(1) << pb) - U64(1)))


@njit(cache=True)
def _tlb_lookup(C, G, T, M, N, t, vpn):
    """Look ``vpn`` up in TLB ``t``, installing it on a miss.  Returns True on a hit."""
    row = G[G_TROW0] + t
    nsets = C[row, T_NSETS]
    ways = C[row, T_WAYS]
    set_id = np.int64(vpn & U64(nsets - 1))
    slot0 = C[row, T_SLOT0] + set_id * ways
    policy = C[row, T_POLICY]
    for w in range(ways):
        if T[slot0 + w] == vpn:
            N[row, TN_LAST] = slot0 + w
            if policy == 0:
                N[row, TN_CLOCK] += 1
                M[slot0 + w, M_STAMP] = U64(N[row, TN_CLOCK])
            elif policy == 1:
                _plru_touch(T, C[row, T_SET0] + set_id, w, C[row, T_WAY_BITS])
            return True
    victim = -1
    for w in range(ways):
        if T[slot0 + w] == EMPTY:
            victim = w
            break
    if victim < 0:
        if policy == 0 or policy == 2:
            victim = 0
            for w in range(1, ways):
                if M[slot0 + w, M_STAMP] < M[slot0 + victim, M_STAMP]:
                    victim = w
        elif policy == 1:
            victim = _plru_victim(T, C[row, T_SET0] + set_id, C[row, T_WAY_BITS])
        else:
            victim = np.int64(_rand(G) % U64(ways))
    T[slot0 + victim] = vpn
    N[row, TN_LAST] = slot0 + victim
    if policy == 0 or policy == 2:
        N[row, TN_CLOCK] += 1
        M[slot0 + victim, M_STAMP] = U64(N[row, TN_CLOCK])
    elif policy == 1:
        _plru_touch(T, C[row, T_SET0] + set_id, victim, C[row, T_WAY_BITS])
    return False


@njit(cache=True)
def _walk_load(C, G, T, M, N, paddr, row):
    """One page-table load of a walk (counted on TLB row ``row``); returns the supplying level."""
    N[row, TN_WALK_ACC] += 1
    lvl = G[G_WALK_LEVEL]
    n = G[G_NLEVELS]
    if G[G_WALK_POLLUTE] != 0:
        r = request(C, G, T, M, N, lvl, paddr, G[G_PTE_BYTES], SRC_WALK, False, True, False)
    else:
        # the "no pollution" what-if: page tables are cache-inhibited (PowerPC's WIMG bits allow it), so
        # walk loads neither allocate nor disturb cache state, and memory serves every one of them
        r = n
        N[G[G_MEMROW], SRC_WALK] += 1
    if r == n:
        N[row, TN_WALK_MEM] += 1
    return r


@njit(cache=True)
def _walk(C, G, T, M, N, vaddr, t, page_bits):
    """Page walk for ``vaddr`` after TLB ``t`` (the last of its chain) missed.  Adds the cycles of the
    walk's loads, issued one after another (each address depends on the previous load), to the scratch
    row."""
    row = G[G_TROW0] + t
    kind = G[G_WALK_KIND]
    N[row, TN_WALKS] += 1
    cycles = 0
    loads = 0
    vpn = vaddr >> U64(page_bits)
    n = G[G_NLEVELS]
    if kind == 1:
        levels = G[G_WALK_LEVELS] if page_bits == G[G_PAGE_BITS] else G[G_IWALK_LEVELS]
        bits = G[G_WALK_BITS]
        for l in range(G[G_WALK_CACHED], levels):
            prefix = vpn >> U64(bits * (levels - 1 - l))
            paddr = PT_BASE | (U64(l) << U64(56)) | ((prefix * U64(G[G_PTE_BYTES])) & U64(0x00FFFFFFFFFFFFFF))
            r = _walk_load(C, G, T, M, N, paddr, row)
            cycles += G[G_MEM_LAT] if r == n else C[r, C_LAT]
            loads += 1
    elif kind == 2:
        # PowerPC hashed page table: the primary hash of (VSID, page index) selects a 64-byte PTE group;
        # the search reads PTEs in order up to the matching slot.
        vsid = (vaddr >> U64(28)) * U64(897) + U64(0x5A5)          # scattered VSIDs, Linux style
        page_index = (vaddr >> U64(12)) & U64(0xFFFF)
        pteg = ((vsid & U64(0x7FFFF)) ^ page_index) & U64(G[G_HTAB_PTEGS] - 1)
        slot = np.int64(_mix64(vpn) >> U64(61))
        base = HTAB_BASE + pteg * U64(64)
        for k in range(slot + 1):
            r = _walk_load(C, G, T, M, N, base + U64(8 * k), row)
            cycles += G[G_MEM_LAT] if r == n else C[r, C_LAT]
            loads += 1
    sr = G[G_SCRROW]
    N[sr, S_WALK_LOADS] += loads
    N[sr, S_WALK_CYCLES] += cycles


@njit(cache=True)
def translate(C, G, T, M, N, vaddr, t0, t1, page_bits):
    """Translate through the TLB chain (t0, then t1 if >= 0, then a walk).  Returns 0 for a first-level
    hit, 1 for a second-level hit, 2 for a walk.  Counts accesses and misses per TLB."""
    vpn = vaddr >> U64(page_bits)
    r0 = G[G_TROW0] + t0
    N[r0, TN_ACC] += 1
    if _tlb_lookup(C, G, T, M, N, t0, vpn):
        return 0
    N[r0, TN_MISS] += 1
    if t1 >= 0:
        r1 = G[G_TROW0] + t1
        N[r1, TN_ACC] += 1
        if _tlb_lookup(C, G, T, M, N, t1, vpn):
            return 1
        N[r1, TN_MISS] += 1
        _walk(C, G, T, M, N, vaddr, t1, page_bits)
        return 2
    _walk(C, G, T, M, N, vaddr, t0, page_bits)
    return 2


# ============================================================================ top-level accesses
@njit(cache=True)
def _top_access(C, G, T, M, N, lvl, t0, t1, vaddr, size, src, write, page_bits):
    """A demand access from the core: translation, then the first cache level, with the straddling
    rule applied to both pages and lines.  Returns the supplying level; the scratch row holds the TLB
    outcome and the walk's loads and cycles."""
    sr = G[G_SCRROW]
    N[sr, S_WALK_LOADS] = 0
    N[sr, S_WALK_CYCLES] = 0
    if size < 1:
        size = 1
    vlast = vaddr + U64(size - 1)
    pb = U64(page_bits)
    tlb = 0
    if t0 >= 0:
        tlb = translate(C, G, T, M, N, vaddr, t0, t1, page_bits)
        if (vlast >> pb) != (vaddr >> pb):
            r2 = translate(C, G, T, M, N, vlast, t0, t1, page_bits)
            if r2 > tlb:
                tlb = r2
    N[sr, S_TLB] = tlb
    p0 = phys(G, vaddr, page_bits)
    p1 = phys(G, vlast, page_bits)
    lb = U64(C[lvl, C_LINE_BITS])
    line0 = p0 >> lb
    line1 = p1 >> lb
    if line0 == line1:
        r = request(C, G, T, M, N, lvl, p0, size, src, write, True, True)
        _prefetch_after_demand(C, G, T, M, N)
    else:
        # straddling access: one access, a miss if either line misses
        N[lvl, CN_STRADDLE] += 1
        N[lvl, CN_ACC + src] += 1
        end0 = (line0 + U64(1)) << lb
        r0 = request(C, G, T, M, N, lvl, p0, np.int64(end0 - p0), src, write, False, True)
        _prefetch_after_demand(C, G, T, M, N)
        base1 = line1 << lb
        r1 = request(C, G, T, M, N, lvl, base1, np.int64(p1 - base1) + 1, src, write, False, True)
        _prefetch_after_demand(C, G, T, M, N)
        if r0 != lvl or r1 != lvl:
            N[lvl, CN_MISS + src] += 1
        r = r0 if r0 > r1 else r1
    N[sr, S_LEVEL] = r
    return r


@njit(cache=True, inline="always")
def _fast(C, G, T, M, N, lvl, t0, vaddr, size, src, write, page_bits):
    """The common case, inline and without a call: the access stays within one page and one line, hits
    the first TLB and hits the first cache level (which, for a write, is write-back).  Returns the level,
    or -1 when the full path is needed; then no counter has moved, and the only state touched is the
    replacement state of the TLB entry, which the full path touches again (an idempotent repeat)."""
    if t0 < 0 or size < 1:
        return -1
    pb = U64(page_bits)
    vlast = vaddr + U64(size - 1)
    vpn = vaddr >> pb
    if (vlast >> pb) != vpn:
        return -1
    row = G[G_TROW0] + t0
    tways = C[row, T_WAYS]
    tset = np.int64(vpn & U64(C[row, T_NSETS] - 1))
    tslot0 = C[row, T_SLOT0] + tset * tways
    tw = _find(T, tslot0, tways, vpn)
    if tw < 0:
        return -1
    N[row, TN_LAST] = tslot0 + tw
    tpolicy = C[row, T_POLICY]
    if tpolicy == 0:
        N[row, TN_CLOCK] += 1
        M[tslot0 + tw, M_STAMP] = U64(N[row, TN_CLOCK])
    elif tpolicy == 1:
        _plru_touch(T, C[row, T_SET0] + tset, tw, C[row, T_WAY_BITS])
    if write and C[lvl, C_WRITE_BACK] == 0:
        return -1
    p0 = phys(G, vaddr, page_bits)
    lb = U64(C[lvl, C_LINE_BITS])
    line = p0 >> lb
    if ((p0 + U64(size - 1)) >> lb) != line:
        return -1
    set_id = _set_of(C, lvl, line)
    ways = C[lvl, C_WAYS]
    slot0 = C[lvl, C_SLOT0] + set_id * ways
    w = _find(T, slot0, ways, line)
    if w < 0:
        return -1
    slot = slot0 + w
    mask = _sector_mask(p0, size, C[lvl, C_SECTOR_BITS], C[lvl, C_NSECT])
    if (M[slot, M_VALID] & mask) != mask:
        return -1
    N[row, TN_ACC] += 1
    N[lvl, CN_ACC + src] += 1
    _touch(C, T, M, N, lvl, slot, set_id, w)
    if M[slot, M_PREF] & mask:
        N[lvl, CN_PF_USEFUL] += 1
        M[slot, M_PREF] &= ~mask
    if write:
        M[slot, M_DIRTY] |= mask
    sr = G[G_SCRROW]
    N[sr, S_LEVEL] = lvl
    N[sr, S_TLB] = 0
    N[sr, S_WALK_LOADS] = 0
    N[sr, S_WALK_CYCLES] = 0
    return lvl


@njit(cache=True, inline="always")
def fetch_access(C, G, T, M, N, vaddr, size):
    """Instruction fetch of ``size`` bytes at ``vaddr``: ITLB chain, then L1I.  Returns the supplying
    level; the scratch row holds the TLB outcome and the walk's loads and cycles."""
    l1 = G[G_L1I]
    pb = G[G_IPAGE_BITS]
    r = _fast(C, G, T, M, N, l1, G[G_ITLB0], vaddr, size, SRC_IFETCH, False, pb)
    if r >= 0:
        return r
    return _top_access(C, G, T, M, N, l1, G[G_ITLB0], G[G_ITLB1], vaddr, size, SRC_IFETCH, False, pb)


@njit(cache=True)
def _train_prefetchers(C, G, T, M, N, P, vaddr, pc):
    lvl = G[G_L1D]
    while lvl >= 0:
        if C[lvl, C_PF_KIND] & PF_IP_STRIDE:
            train_ip_stride(C, G, T, M, N, P, lvl, pc, phys(G, vaddr, G[G_PAGE_BITS]))
        lvl = C[lvl, C_NEXT]


@njit(cache=True, inline="always")
def data_access(C, G, T, M, N, P, vaddr, size, kind, pc):
    """Load (kind 1), store (2) or modify (3) of ``size`` bytes at ``vaddr`` by the instruction at ``pc``.
    Returns the supplying level; the scratch row holds the TLB outcome and the walk's loads and cycles."""
    write = kind != K_LOAD
    src = SRC_STORE if kind == K_STORE else SRC_LOAD
    l1 = G[G_L1D]
    pb = G[G_PAGE_BITS]
    r = _fast(C, G, T, M, N, l1, G[G_DTLB0], vaddr, size, src, write, pb)
    if r < 0:
        r = _top_access(C, G, T, M, N, l1, G[G_DTLB0], G[G_DTLB1], vaddr, size, src, write, pb)
    if src == SRC_LOAD and G[G_IP_STRIDE] != 0:
        _train_prefetchers(C, G, T, M, N, P, vaddr, pc)
    return r


@njit(cache=True)
def run_trace(C, G, T, M, N, P, addrs, sizes, kinds, start, stop):
    """Simulate trace records [start, stop).  The PC of a data access is the address of the most recent
    instruction fetch (lackey order: an ``I`` record precedes the data accesses of its instruction)."""
    C, G, T, M, N, P = unmanaged(C, G, T, M, N, P)
    pc = U64(0)
    for i in range(start, stop):
        k = kinds[i]
        if k == K_IFETCH:
            pc = addrs[i]
            fetch_access(C, G, T, M, N, addrs[i], np.int64(sizes[i]))
        else:
            data_access(C, G, T, M, N, P, addrs[i], np.int64(sizes[i]), np.int64(k), pc)
