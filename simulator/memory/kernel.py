"""Numba kernels of the memory hierarchy: set-associative caches, TLBs and page walks.

The whole state lives in ONE flat int64 array ``S`` (``MemState(S)``), built by
:mod:`simulator.memory.hierarchy`.  The kernels work on its raw address: every
internal function takes that address ``s`` (one integer argument) and reads and
writes words through the load/store intrinsics below.  Passing numba arrays
between functions costs a dozen arguments and reference counting per array per
call, which dominated the run time; an integer costs one register.

Layout of ``S`` (word offsets; rows have ``NCOL`` columns):

``[0, NG)``            G: globals (``G_*``)
``[C0, N0)``           C: configuration rows: cache levels 0..MAX_LEVELS-1, then TLBs at ``TROW0 + t``
``[N0, P0)``           N: counter rows (same row numbers as C; memory at ``MEMROW``), the scratch row
                       ``SCRROW`` and the fill-path frames ``FRAMEROW + d``
``[P0, ...)``          IP-stride prefetcher tables: ``[level, IPT_SIZE, 4]``
then per level and TLB, at the absolute offsets held in its C row: tags (the ways of a set adjacent,
64-byte aligned), per-slot metadata (``MW`` words: valid, dirty, prefetched sector masks, stamp),
tree-PLRU bits (one word per set) and the PLRU touch table (per way: the AND mask and the OR mask that
point every node on the way's path away from it).

Other numba code (the core timing model) calls :func:`data_access` and :func:`fetch_access` per
instruction with the state array first; after each call the scratch words ``S[SCR_LEVEL]``,
``S[SCR_TLB]``, ``S[SCR_WALK_LOADS]`` and ``S[SCR_WALK_CYCLES]`` hold the supplying level, the TLB
outcome and the walk's loads and cycles.  Semantics (the pure-Python reference in ``tests/memref.py``
implements the same rules):

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
from llvmlite import ir
from numba import carray, njit, types
from numba.core import cgutils
from numba.extending import intrinsic

U64 = np.uint64
I64 = np.int64
EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)
MAX_LEVELS = 8
MAX_TLBS = 16
NCOL = 32

# ---- access kinds (trace encoding) ------------------------------------------------------------
K_IFETCH, K_LOAD, K_STORE, K_MODIFY = 0, 1, 2, 3

# ---- request sources, for per-source counters --------------------------------------------------
SRC_IFETCH, SRC_LOAD, SRC_STORE, SRC_WALK, SRC_PREFETCH, SRC_WRITEBACK = 0, 1, 2, 3, 4, 5
NSRC = 6

# ---- rows of C and N ------------------------------------------------------------------------------
TROW0 = MAX_LEVELS                # TLB t is row TROW0 + t
MEMROW = TROW0 + MAX_TLBS         # N only: memory
SCRROW = MEMROW + 1               # N only: scratch
FRAMEROW = SCRROW + 1             # N only: fill-path frames, one per level
NROWS = FRAMEROW + MAX_LEVELS

# ---- regions of S -----------------------------------------------------------------------------
NG = 64
C0 = NG
N0 = C0 + MEMROW * NCOL
P0 = N0 + NROWS * NCOL
IPT_SIZE = 256                    # IP-stride table entries per level: [pc, last line, stride, confidence]
MW = 4                            # metadata words per cache slot

# ---- cache configuration columns (C row = level) ------------------------------------------------
(C_TAG0, C_META0, C_BITS0, C_PLRU0, C_NSETS, C_WAYS, C_LINE_BITS, C_SECTOR_BITS, C_NSECT, C_POLICY,
 C_WRITE_BACK, C_WRITE_ALLOC, C_INCLUSIVE, C_NEXT, C_PF_KIND, C_PF_DEGREE, C_SLICES, C_WAY_BITS, C_LAT) = range(19)
C_ABOVE = 19                      # C_ABOVE .. C_ABOVE+MAX_LEVELS-1: every level above (transitively), -1 ends

# ---- TLB configuration columns (C row = TROW0 + t) ---------------------------------------------
T_TAG0, T_STAMP0, T_BITS0, T_PLRU0, T_NSETS, T_WAYS, T_POLICY, T_WAY_BITS, T_LAT = range(9)

# ---- metadata words of a cache slot ------------------------------------------------------------
M_VALID, M_DIRTY, M_PREF, M_STAMP = range(4)

# ---- cache counters (N row = level) -------------------------------------------------------------
CN_ACC, CN_MISS = 0, NSRC         # 0..5 accesses by source, 6..11 misses by source
CN_WRITEBACKS, CN_PF_ISSUED, CN_PF_USEFUL, CN_BACK_INVAL, CN_SECTOR_MISS, CN_EVICTIONS, CN_STRADDLE, \
    CN_CLOCK = range(2 * NSRC, 2 * NSRC + 8)

# ---- TLB counters (N row = TROW0 + t) ----------------------------------------------------------
TN_ACC, TN_MISS, TN_WALKS, TN_WALK_ACC, TN_WALK_MEM, TN_CLOCK = range(6)

# ---- memory counters (N row MEMROW): reads by source 0..5, then writes --------------------------
MEM_WRITES = NSRC

# ---- scratch row (N row SCRROW) ---------------------------------------------------------------
S_NMISSED, S_LEVEL, S_TLB, S_WALK_LOADS, S_WALK_CYCLES, S_FILL_SLOT = range(6)
S_MISSED = 8                      # 8..15 levels missed by the last demand request, 16..23 their lines
S_MISSED_LINE = 16
SCR = N0 + SCRROW * NCOL          # absolute word offsets of the scratch outputs, for callers
SCR_LEVEL, SCR_TLB, SCR_WALK_LOADS, SCR_WALK_CYCLES = SCR + S_LEVEL, SCR + S_TLB, SCR + S_WALK_LOADS, \
    SCR + S_WALK_CYCLES

# ---- fill-path frames (N row FRAMEROW + d) -----------------------------------------------------
F_LVL, F_WAY, F_SET, F_SLOT0, F_MASK, F_LINE = range(6)

# ---- globals (S[X]) ---------------------------------------------------------------------------
(G_L1I, G_L1D, G_ITLB0, G_ITLB1, G_DTLB0, G_DTLB1, G_PAGE_BITS, G_WALK_KIND, G_WALK_LEVELS, G_WALK_BITS,
 G_WALK_LEVEL, G_WALK_CACHED, G_WALK_POLLUTE, G_HTAB_PTEGS, G_MAPPING, G_SALT, G_NLEVELS, G_PTE_BYTES,
 G_MEM_LAT, G_RNG, G_IP_STRIDE, G_IPAGE_BITS, G_IWALK_LEVELS, G_NTLBS, G_SIZE) = range(25)

# prefetcher bits of the C_PF_KIND column (bit = 1 << (registry id - 1); several may be stacked)
PF_NEXT_LINE, PF_ADJACENT_SECTOR, PF_ADJACENT_LINE, PF_IP_STRIDE = 1, 2, 4, 8

PT_BASE = np.uint64(0xF000000000000000)     # physical region of radix page tables (per-level sub-regions)
HTAB_BASE = np.uint64(0xE000000000000000)   # physical base of the PowerPC hashed page table

MemState = namedtuple("MemState", ["S"])
Views = namedtuple("Views", ["G", "C", "N"])


def views(S: np.ndarray) -> Views:
    """numpy views of the globals, configuration rows and counter rows of a state array."""
    return Views(S[:NG], S[C0:N0].reshape(MEMROW, NCOL), S[N0:P0].reshape(NROWS, NCOL))


# ============================================================================ raw word access
_i64p = ir.IntType(64).as_pointer()


def _addr(context, builder, sig, args):
    base = builder.inttoptr(context.cast(builder, args[0], sig.args[0], types.uintp), _i64p)
    return builder.gep(base, [context.cast(builder, args[1], sig.args[1], types.int64)], inbounds=True)


def _ints(*tys):
    return all(isinstance(t, (types.Integer, types.Boolean)) for t in tys)


@intrinsic
def _ld(typingctx, s, i):
    """The int64 word ``i`` of the state at address ``s``."""
    if not _ints(s, i):
        return None

    def codegen(context, builder, sig, args):
        return builder.load(_addr(context, builder, sig, args))
    return types.int64(types.unliteral(s), types.unliteral(i)), codegen


@intrinsic
def _ldu(typingctx, s, i):
    """Word ``i`` as uint64 (tags, masks, addresses)."""
    if not _ints(s, i):
        return None

    def codegen(context, builder, sig, args):
        return builder.load(_addr(context, builder, sig, args))
    return types.uint64(types.unliteral(s), types.unliteral(i)), codegen


@intrinsic
def _st(typingctx, s, i, v):
    """Store integer ``v`` (its 64-bit pattern) into word ``i``."""
    if not _ints(s, i, v):
        return None
    vt = types.unliteral(v)

    def codegen(context, builder, sig, args):
        val = context.cast(builder, args[2], sig.args[2], types.uint64 if vt.signed is False else types.int64)
        builder.store(val, _addr(context, builder, sig, args))
        return context.get_dummy_value()
    return types.void(types.unliteral(s), types.unliteral(i), vt), codegen


@intrinsic
def _add(typingctx, s, i, v):
    """Word ``i`` += ``v``."""
    if not _ints(s, i, v):
        return None

    def codegen(context, builder, sig, args):
        p = _addr(context, builder, sig, args)
        builder.store(builder.add(builder.load(p), context.cast(builder, args[2], sig.args[2], types.int64)), p)
        return context.get_dummy_value()
    return types.void(types.unliteral(s), types.unliteral(i), types.unliteral(v)), codegen


@intrinsic
def _voidptr(typingctx, addr):
    """An integer address as a void pointer (numba's documented raw-pointer recipe)."""
    sig = types.voidptr(types.uintp)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], cgutils.voidptr_t)

    return sig, codegen


@njit(cache=True, inline="always")
def unmanaged(S):
    """A view of the state array without a memory-info block (no reference counting when it is passed
    to non-inlined numba functions); the caller keeps ``S`` alive.  The entry points take the raw
    address anyway, so this is only a convenience for callers that pass the state around."""
    return (carray(_voidptr(S.ctypes.data), S.shape, np.int64),)


# ============================================================================ helpers
@njit(cache=True, inline="always")
def _mix64(x):
    # splitmix64 finaliser: a fixed bijective scrambling of 64-bit values.
    x = (x ^ (x >> U64(30))) * U64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> U64(27))) * U64(0x94D049BB133111EB)
    return x ^ (x >> U64(31))


@njit(cache=True)
def _rand(s):
    # xorshift64*: deterministic, seeded from the run's numpy Generator.
    x = _ldu(s, G_RNG)
    x ^= x >> U64(12)
    x ^= x << U64(25)
    x ^= x >> U64(27)
    _st(s, G_RNG, x)
    return x * U64(0x2545F4914F6CDD1D)


@njit(cache=True)
def _sector_mask(addr, nbytes, sector_bits, nsect):
    if nsect == 1:
        return U64(1)
    first = I64((addr >> U64(sector_bits)) & U64(nsect - 1))
    last = I64(((addr + U64(nbytes - 1)) >> U64(sector_bits)) & U64(nsect - 1))
    return ((U64(1) << U64(last + 1)) - U64(1)) ^ ((U64(1) << U64(first)) - U64(1))


@njit(cache=True)
def _set_of(s, row, line):
    nsets = _ld(s, C0 + row * NCOL + C_NSETS)
    st = I64(line & U64(nsets - 1))
    slices = _ld(s, C0 + row * NCOL + C_SLICES)
    if slices > 1:
        # address-hashed slice selection (Intel's hash is undocumented; any fixed good hash will do)
        st += nsets * I64(_mix64(line) % U64(slices))
    return st


@njit(cache=True)
def _find(s, tag0, ways, line):
    # no early exit: the way that hits varies from access to access, and a data-dependent loop exit
    # costs a branch misprediction of the simulator itself (tags are unique within a set)
    found = -1
    for w in range(ways):
        if _ldu(s, tag0 + w) == line:
            found = w
    return found


@njit(cache=True)
def _plru_touch(s, table, bi, way):
    # branch- and loop-free: every node on the way's path points away from it (masks built by the builder)
    _st(s, bi, (_ldu(s, bi) & _ldu(s, table + 2 * way)) | _ldu(s, table + 2 * way + 1))


@njit(cache=True)
def _plru_victim(s, bi, way_bits):
    bits = _ldu(s, bi)
    node = 1
    w = 0
    for level in range(way_bits):
        d = I64((bits >> U64(node)) & U64(1))
        w = (w << 1) | d
        node = 2 * node + d
    return w


@njit(cache=True)
def _touch(s, lvl, slot, set_id, way):
    c = C0 + lvl * NCOL
    policy = _ld(s, c + C_POLICY)
    if policy == 0:      # LRU
        clock = _ld(s, N0 + lvl * NCOL + CN_CLOCK) + 1
        _st(s, N0 + lvl * NCOL + CN_CLOCK, clock)
        _st(s, _ld(s, c + C_META0) + slot * MW + M_STAMP, clock)
    elif policy == 1:    # tree PLRU
        _plru_touch(s, _ld(s, c + C_PLRU0), _ld(s, c + C_BITS0) + set_id, way)
    # FIFO and random: a hit changes nothing


@njit(cache=True)
def _victim(s, lvl, slot0, set_id, ways):
    """The way to evict: an invalid way first (the lowest), else by the replacement policy."""
    c = C0 + lvl * NCOL
    m0 = _ld(s, c + C_META0) + slot0 * MW
    policy = _ld(s, c + C_POLICY)
    if policy == 0 or policy == 2:
        # LRU / FIFO: the oldest stamp; an invalid way has key 0, below every stamp (stamps start at 1),
        # and the first of equal keys wins, so this is also "the lowest invalid way first"
        way = 0
        best = _ld(s, m0 + M_STAMP) if _ld(s, m0 + M_VALID) != 0 else 0
        for w in range(1, ways):
            m = m0 + w * MW
            key = _ld(s, m + M_STAMP) if _ld(s, m + M_VALID) != 0 else 0
            if key < best:
                best = key
                way = w
        return way
    for w in range(ways):
        if _ld(s, m0 + w * MW + M_VALID) == 0:
            return w
    if policy == 1:
        return _plru_victim(s, _ld(s, c + C_BITS0) + set_id, _ld(s, c + C_WAY_BITS))
    return I64(_rand(s) % U64(ways))


# ============================================================================ cache levels
@njit(cache=True)
def _invalidate_above(s, lvl, line_addr, nbytes):
    """Back-invalidate [line_addr, +nbytes) in every level above ``lvl``.
    Returns (lines invalidated, whether any of them was dirty)."""
    count = 0
    dirty = False
    for k in range(MAX_LEVELS):
        u = _ld(s, C0 + lvl * NCOL + C_ABOVE + k)
        if u < 0:
            break
        cu = C0 + u * NCOL
        lb = _ld(s, cu + C_LINE_BITS)
        ways = _ld(s, cu + C_WAYS)
        a = line_addr
        end = line_addr + U64(nbytes)
        while a < end:
            line = a >> U64(lb)
            slot0 = _set_of(s, u, line) * ways
            w = _find(s, _ld(s, cu + C_TAG0) + slot0, ways, line)
            if w >= 0:
                slot = slot0 + w
                m = _ld(s, cu + C_META0) + slot * MW
                if _ld(s, m + M_DIRTY) != 0:
                    dirty = True
                _st(s, _ld(s, cu + C_TAG0) + slot, EMPTY)
                _st(s, m + M_VALID, 0)
                _st(s, m + M_DIRTY, 0)
                _st(s, m + M_PREF, 0)
                count += 1
            a += U64(1) << U64(lb)
    return count, dirty


@njit(cache=True)
def _install(s, lvl, line, set_id, slot0, mask, dirty_mask, pref_mask):
    """Put ``line`` into its set at ``lvl``, evicting a victim.

    Returns (slot, victim address, victim bytes): the bytes are 0 unless the victim must be written back
    (the caller sends it on with :func:`_writeback`)."""
    c = C0 + lvl * NCOL
    n = N0 + lvl * NCOL
    ways = _ld(s, c + C_WAYS)
    way = _victim(s, lvl, slot0, set_id, ways)
    slot = slot0 + way
    ti = _ld(s, c + C_TAG0) + slot
    m = _ld(s, c + C_META0) + slot * MW
    wb_addr = U64(0)
    wb_bytes = 0
    if _ld(s, m + M_VALID) != 0:
        victim_line = _ldu(s, ti)
        victim_dirty = _ld(s, m + M_DIRTY) != 0
        lb = _ld(s, c + C_LINE_BITS)
        _add(s, n + CN_EVICTIONS, 1)
        _st(s, ti, EMPTY)
        _st(s, m + M_VALID, 0)
        _st(s, m + M_DIRTY, 0)
        _st(s, m + M_PREF, 0)
        if _ld(s, c + C_INCLUSIVE) != 0:
            n_inv, up_dirty = _invalidate_above(s, lvl, victim_line << U64(lb), I64(1) << lb)
            _add(s, n + CN_BACK_INVAL, n_inv)
            victim_dirty = victim_dirty or up_dirty
        if victim_dirty:
            _add(s, n + CN_WRITEBACKS, 1)
            wb_addr = victim_line << U64(lb)
            wb_bytes = I64(1) << lb
    _st(s, ti, line)
    _st(s, m + M_VALID, mask)
    _st(s, m + M_DIRTY, dirty_mask)
    _st(s, m + M_PREF, pref_mask)
    policy = _ld(s, c + C_POLICY)
    if policy == 0 or policy == 2:
        clock = _ld(s, n + CN_CLOCK) + 1
        _st(s, n + CN_CLOCK, clock)
        _st(s, m + M_STAMP, clock)
    elif policy == 1:
        _plru_touch(s, _ld(s, c + C_PLRU0), _ld(s, c + C_BITS0) + set_id, way)
    return slot, wb_addr, wb_bytes


@njit(cache=True)
def _writeback(s, lvl, addr, nbytes):
    """A dirty victim of ``nbytes`` at ``addr`` travels down from level ``lvl`` (-1: memory) until a
    write-back level absorbs it; installing it may evict further dirty victims, which travel on."""
    while nbytes > 0:
        if lvl < 0:
            _add(s, N0 + MEMROW * NCOL + MEM_WRITES, 1)
            return
        c = C0 + lvl * NCOL
        _add(s, N0 + lvl * NCOL + CN_ACC + SRC_WRITEBACK, 1)
        lb = _ld(s, c + C_LINE_BITS)
        line = addr >> U64(lb)
        set_id = _set_of(s, lvl, line)
        ways = _ld(s, c + C_WAYS)
        slot0 = set_id * ways
        nsect = _ld(s, c + C_NSECT)
        mask = _sector_mask(addr, nbytes, _ld(s, c + C_SECTOR_BITS), nsect)
        w = _find(s, _ld(s, c + C_TAG0) + slot0, ways, line)
        m = _ld(s, c + C_META0) + (slot0 + w) * MW
        if _ld(s, c + C_WRITE_BACK) == 0:
            # write-through level: a present copy takes the data, which goes on down
            if w >= 0:
                _st(s, m + M_VALID, _ldu(s, m + M_VALID) | mask)
            lvl = _ld(s, c + C_NEXT)
            continue
        if w >= 0:
            _st(s, m + M_VALID, _ldu(s, m + M_VALID) | mask)
            _st(s, m + M_DIRTY, _ldu(s, m + M_DIRTY) | mask)
            return
        _add(s, N0 + lvl * NCOL + CN_MISS + SRC_WRITEBACK, 1)
        nxt = _ld(s, c + C_NEXT)
        if _ld(s, c + C_WRITE_ALLOC) == 0:
            lvl = nxt
            continue
        # the written range comes with the victim: installed without a fill (a larger unsectored line
        # is taken as wholly written)
        full = (U64(1) << U64(nsect)) - U64(1)
        valid = mask if (nsect > 1 and nbytes < (I64(1) << lb)) else full
        _, addr, nbytes = _install(s, lvl, line, set_id, slot0, valid, valid, U64(0))
        lvl = nxt


@njit(cache=True)
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
def _fill(s, lvl, line, set_id, slot0, w, mask, src, pref_mask, record):
    """Service a miss of sectors ``mask`` of ``line`` at ``lvl`` (way ``w`` if the tag is present).

    Down phase: each lower level looks up the missing range (counting one access) until one hits or
    memory supplies it.  Up phase: the line is installed at each missing level, deepest first (fetch
    first, then evict).  Returns the supplying level (G_NLEVELS for memory).  With ``record``, the
    levels that missed are noted for the miss-triggered prefetchers."""
    n = _ld(s, G_NLEVELS)
    fr = N0 + FRAMEROW * NCOL
    sr = SCR
    depth = 0
    _st(s, fr + F_LVL, lvl)
    _st(s, fr + F_WAY, w)
    _st(s, fr + F_SET, set_id)
    _st(s, fr + F_SLOT0, slot0)
    _st(s, fr + F_MASK, mask)
    _st(s, fr + F_LINE, line)
    if record:
        _st(s, sr + S_MISSED, lvl)
        _st(s, sr + S_MISSED_LINE, line)
        _st(s, sr + S_NMISSED, 1)
    c = C0 + lvl * NCOL
    missing = mask if w < 0 else (mask & ~_ldu(s, _ld(s, c + C_META0) + (slot0 + w) * MW + M_VALID))
    req_addr, req_bytes = _range_of(missing, line, _ld(s, c + C_LINE_BITS), _ld(s, c + C_SECTOR_BITS))
    cur = _ld(s, c + C_NEXT)
    served = n
    while cur >= 0:
        cc = C0 + cur * NCOL
        cn = N0 + cur * NCOL
        lb = _ld(s, cc + C_LINE_BITS)
        cline = req_addr >> U64(lb)
        cset = _set_of(s, cur, cline)
        cways = _ld(s, cc + C_WAYS)
        cslot0 = cset * cways
        cmask = _sector_mask(req_addr, req_bytes, _ld(s, cc + C_SECTOR_BITS), _ld(s, cc + C_NSECT))
        _add(s, cn + CN_ACC + src, 1)
        cw = _find(s, _ld(s, cc + C_TAG0) + cslot0, cways, cline)
        m = _ld(s, cc + C_META0) + (cslot0 + cw) * MW
        if cw >= 0 and (_ldu(s, m + M_VALID) & cmask) == cmask:
            _touch(s, cur, cslot0 + cw, cset, cw)
            if _ldu(s, m + M_PREF) & cmask:
                _add(s, cn + CN_PF_USEFUL, 1)
                _st(s, m + M_PREF, _ldu(s, m + M_PREF) & ~cmask)
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
        if record:
            _st(s, sr + S_MISSED + depth, cur)
            _st(s, sr + S_MISSED_LINE + depth, cline)
            _st(s, sr + S_NMISSED, depth + 1)
        missing = cmask if cw < 0 else (cmask & ~_ldu(s, m + M_VALID))
        req_addr, req_bytes = _range_of(missing, cline, lb, _ld(s, cc + C_SECTOR_BITS))
        cur = _ld(s, cc + C_NEXT)
    if served == n:
        _add(s, N0 + MEMROW * NCOL + src, 1)
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
        if lw >= 0 and _ldu(s, _ld(s, lc + C_TAG0) + lslot0 + lw) == lline:
            slot = lslot0 + lw
            m = _ld(s, lc + C_META0) + slot * MW
            valid = _ldu(s, m + M_VALID)
            _st(s, m + M_PREF, _ldu(s, m + M_PREF) | (pm & ~valid))
            _st(s, m + M_VALID, valid | lmask)
            _touch(s, lv, slot, lset, lw)
        else:
            # (a present tag may have been back-invalidated by an inclusive level below meanwhile)
            slot, wb_addr, wb_bytes = _install(s, lv, lline, lset, lslot0, lmask, U64(0), pm)
            if wb_bytes > 0:
                _writeback(s, _ld(s, lc + C_NEXT), wb_addr, wb_bytes)
    _st(s, sr + S_FILL_SLOT, slot)
    return served


@njit(cache=True)
def request(s, lvl, addr, nbytes, src, write, count, record):
    """A demand request of ``nbytes`` (within one line) at ``addr`` arriving at level ``lvl``.

    Reads stop at the first level that hits.  Writes are absorbed by the first write-back level (which
    allocates on a miss when it write-allocates); write-through and no-write-allocate levels pass the
    write on.  ``count=False`` leaves the first level's access/miss counters to the caller.  Returns
    the level that supplied the data (G_NLEVELS for memory)."""
    n = _ld(s, G_NLEVELS)
    served = n
    if record:
        _st(s, SCR + S_NMISSED, 0)
    first = True
    while lvl >= 0:
        c = C0 + lvl * NCOL
        cn = N0 + lvl * NCOL
        lb = _ld(s, c + C_LINE_BITS)
        line = addr >> U64(lb)
        set_id = _set_of(s, lvl, line)
        ways = _ld(s, c + C_WAYS)
        slot0 = set_id * ways
        mask = _sector_mask(addr, nbytes, _ld(s, c + C_SECTOR_BITS), _ld(s, c + C_NSECT))
        do_count = count or not first
        if do_count:
            _add(s, cn + CN_ACC + src, 1)
        w = _find(s, _ld(s, c + C_TAG0) + slot0, ways, line)
        m = _ld(s, c + C_META0) + (slot0 + w) * MW
        if w >= 0 and (_ldu(s, m + M_VALID) & mask) == mask:
            _touch(s, lvl, slot0 + w, set_id, w)
            if _ldu(s, m + M_PREF) & mask:
                _add(s, cn + CN_PF_USEFUL, 1)
                _st(s, m + M_PREF, _ldu(s, m + M_PREF) & ~mask)
            if first:
                served = lvl
            if not write:
                return served
            if _ld(s, c + C_WRITE_BACK) != 0:
                _st(s, m + M_DIRTY, _ldu(s, m + M_DIRTY) | mask)
                return served
        else:
            if do_count:
                _add(s, cn + CN_MISS + src, 1)
                if w >= 0:
                    _add(s, cn + CN_SECTOR_MISS, 1)
            if not (write and _ld(s, c + C_WRITE_ALLOC) == 0):
                r = _fill(s, lvl, line, set_id, slot0, w, mask, src, U64(0), record and first)
                if first:
                    served = r
                if not write:
                    return served
                if _ld(s, c + C_WRITE_BACK) != 0:
                    fm = _ld(s, c + C_META0) + _ld(s, SCR + S_FILL_SLOT) * MW + M_DIRTY
                    _st(s, fm, _ldu(s, fm) | mask)
                    return served
        # the write goes on to the next level
        first = False
        lvl = _ld(s, c + C_NEXT)
    _add(s, N0 + MEMROW * NCOL + MEM_WRITES, 1)
    return served


# ============================================================================ prefetchers
@njit(cache=True)
def prefetch_line(s, lvl, line, mask):
    """Bring sectors ``mask`` of ``line`` into ``lvl`` unless present; counts an issued prefetch."""
    c = C0 + lvl * NCOL
    set_id = _set_of(s, lvl, line)
    ways = _ld(s, c + C_WAYS)
    slot0 = set_id * ways
    w = _find(s, _ld(s, c + C_TAG0) + slot0, ways, line)
    if w >= 0:
        mask = mask & ~_ldu(s, _ld(s, c + C_META0) + (slot0 + w) * MW + M_VALID)
        if mask == 0:
            return
    _add(s, N0 + lvl * NCOL + CN_PF_ISSUED, 1)
    _fill(s, lvl, line, set_id, slot0, w, mask, SRC_PREFETCH, mask, False)


@njit(cache=True)
def _prefetch_after_demand(s):
    """Run the miss-triggered prefetchers of every level the last demand request missed, top down."""
    k = _ld(s, SCR + S_NMISSED)
    if k == 0:
        return
    _st(s, SCR + S_NMISSED, 0)
    for i in range(k):
        lvl = _ld(s, SCR + S_MISSED + i)
        c = C0 + lvl * NCOL
        kinds = _ld(s, c + C_PF_KIND)
        if (kinds & 7) == 0:
            continue
        line = _ldu(s, SCR + S_MISSED_LINE + i)
        lb = _ld(s, c + C_LINE_BITS)
        full = (U64(1) << U64(_ld(s, c + C_NSECT))) - U64(1)
        page_lines = U64(1) << U64(max(12 - lb, 0))      # prefetches stay within a 4 KB physical page
        if kinds & PF_ADJACENT_SECTOR:
            prefetch_line(s, lvl, line, full)  # the sectors not yet valid
        if kinds & PF_ADJACENT_LINE:
            if page_lines > U64(1):
                prefetch_line(s, lvl, line ^ U64(1), full)
        if kinds & PF_NEXT_LINE:
            for d in range(1, _ld(s, c + C_PF_DEGREE) + 1):
                target = line + U64(d)
                if target // page_lines != line // page_lines:
                    break
                prefetch_line(s, lvl, target, full)


@njit(cache=True)
def train_ip_stride(s, lvl, pc, addr):
    """IP-based stride prefetcher at ``lvl``: one table entry per (hashed) load PC; two equal
    consecutive non-zero line strides arm it, and each further access prefetches degree strides ahead."""
    c = C0 + lvl * NCOL
    lb = _ld(s, c + C_LINE_BITS)
    line = I64(addr >> U64(lb))
    key = I64(pc & U64(0x7FFFFFFFFFFFFFFF))
    e = P0 + (lvl * IPT_SIZE + I64(_mix64(pc) % U64(IPT_SIZE))) * 4
    if _ld(s, e) != key:
        _st(s, e, key)
        _st(s, e + 1, line)
        _st(s, e + 2, 0)
        _st(s, e + 3, 0)
        return
    stride = line - _ld(s, e + 1)
    if stride == 0:
        return
    if stride == _ld(s, e + 2):
        if _ld(s, e + 3) < 3:
            _add(s, e + 3, 1)
    else:
        _st(s, e + 2, stride)
        _st(s, e + 3, 0)
    _st(s, e + 1, line)
    if _ld(s, e + 3) >= 1:
        target = line + _ld(s, c + C_PF_DEGREE) * stride
        page_shift = max(12 - lb, 0)
        if target >= 0 and (target >> page_shift) == (line >> page_shift):
            full = (U64(1) << U64(_ld(s, c + C_NSECT))) - U64(1)
            prefetch_line(s, lvl, U64(target), full)


# ============================================================================ translation
@njit(cache=True, inline="always")
def phys(s, vaddr, page_bits):
    if _ld(s, G_MAPPING) == 0:
        return vaddr
    pb = U64(page_bits)
    pfn = _mix64((vaddr >> pb) ^ _ldu(s, G_SALT)) & U64(0xFFFFFFFFF)     # 36-bit frame numbers
    return (pfn << pb) | (vaddr & ((U64(1) << pb) - U64(1)))


@njit(cache=True, inline="always")
def _tlb_touch(s, c, clock, stamp0, bits, way):
    """Replacement-state update of a TLB hit at ``way`` (C row ``c``)."""
    policy = _ld(s, c + T_POLICY)
    if policy == 0:
        _add(s, clock, 1)
        _st(s, stamp0 + way, _ld(s, clock))
    elif policy == 1:
        _plru_touch(s, _ld(s, c + T_PLRU0), bits, way)


@njit(cache=True)
def _tlb_lookup(s, t, vpn):
    """Look ``vpn`` up in TLB ``t``, installing it on a miss.  Returns True on a hit."""
    c = C0 + (TROW0 + t) * NCOL
    ways = _ld(s, c + T_WAYS)
    set_id = I64(vpn & U64(_ld(s, c + T_NSETS) - 1))
    tag0 = _ld(s, c + T_TAG0) + set_id * ways
    stamp0 = _ld(s, c + T_STAMP0) + set_id * ways
    bits = _ld(s, c + T_BITS0) + set_id
    clock = N0 + (TROW0 + t) * NCOL + TN_CLOCK
    w = _find(s, tag0, ways, vpn)
    if w >= 0:
        _tlb_touch(s, c, clock, stamp0, bits, w)
        return True
    policy = _ld(s, c + T_POLICY)
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
                victim = _plru_victim(s, bits, _ld(s, c + T_WAY_BITS))
            else:
                victim = I64(_rand(s) % U64(ways))
        if policy == 1:
            _plru_touch(s, _ld(s, c + T_PLRU0), bits, victim)
    _st(s, tag0 + victim, vpn)
    return False


@njit(cache=True)
def _walk_load(s, paddr, t):
    """One page-table load of a walk (counted on TLB ``t``); returns the supplying level."""
    nt = N0 + (TROW0 + t) * NCOL
    _add(s, nt + TN_WALK_ACC, 1)
    n = _ld(s, G_NLEVELS)
    if _ld(s, G_WALK_POLLUTE) != 0:
        r = request(s, _ld(s, G_WALK_LEVEL), paddr, _ld(s, G_PTE_BYTES), SRC_WALK, False, True, False)
    else:
        # the "no pollution" what-if: page tables are cache-inhibited (PowerPC's WIMG bits allow it), so
        # walk loads neither allocate nor disturb cache state, and memory serves every one of them
        r = n
        _add(s, N0 + MEMROW * NCOL + SRC_WALK, 1)
    if r == n:
        _add(s, nt + TN_WALK_MEM, 1)
    return r


@njit(cache=True)
def _walk(s, vaddr, t, page_bits):
    """Page walk for ``vaddr`` after TLB ``t`` (the last of its chain) missed.  Adds the cycles of the
    walk's loads, issued one after another (each address depends on the previous load), to the scratch
    row."""
    kind = _ld(s, G_WALK_KIND)
    _add(s, N0 + (TROW0 + t) * NCOL + TN_WALKS, 1)
    cycles = 0
    loads = 0
    vpn = vaddr >> U64(page_bits)
    n = _ld(s, G_NLEVELS)
    if kind == 1:
        levels = _ld(s, G_WALK_LEVELS) if page_bits == _ld(s, G_PAGE_BITS) else _ld(s, G_IWALK_LEVELS)
        bits = _ld(s, G_WALK_BITS)
        for l in range(_ld(s, G_WALK_CACHED), levels):
            prefix = vpn >> U64(bits * (levels - 1 - l))
            paddr = PT_BASE | (U64(l) << U64(56)) | ((prefix * _ldu(s, G_PTE_BYTES)) & U64(0x00FFFFFFFFFFFFFF))
            r = _walk_load(s, paddr, t)
            cycles += _ld(s, G_MEM_LAT) if r == n else _ld(s, C0 + r * NCOL + C_LAT)
            loads += 1
    elif kind == 2:
        # PowerPC hashed page table: the primary hash of (VSID, page index) selects a 64-byte PTE group;
        # the search reads PTEs in order up to the matching slot.
        vsid = (vaddr >> U64(28)) * U64(897) + U64(0x5A5)          # scattered VSIDs, Linux style
        page_index = (vaddr >> U64(12)) & U64(0xFFFF)
        pteg = ((vsid & U64(0x7FFFF)) ^ page_index) & U64(_ld(s, G_HTAB_PTEGS) - 1)
        slot = I64(_mix64(vpn) >> U64(61))
        base = HTAB_BASE + pteg * U64(64)
        for k in range(slot + 1):
            r = _walk_load(s, base + U64(8 * k), t)
            cycles += _ld(s, G_MEM_LAT) if r == n else _ld(s, C0 + r * NCOL + C_LAT)
            loads += 1
    _add(s, SCR + S_WALK_LOADS, loads)
    _add(s, SCR + S_WALK_CYCLES, cycles)


@njit(cache=True)
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
@njit(cache=True)
def _cache_access(s, lvl, p0, p1, src, write):
    """The cache part of a demand access of physical bytes [p0, p1] at first level ``lvl``, with the
    straddling rule.  Returns the supplying level (also left in the scratch row)."""
    lb = U64(_ld(s, C0 + lvl * NCOL + C_LINE_BITS))
    line0 = p0 >> lb
    line1 = p1 >> lb
    if line0 == line1:
        r = request(s, lvl, p0, I64(p1 - p0) + 1, src, write, True, True)
        if _ld(s, SCR + S_NMISSED) != 0:
            _prefetch_after_demand(s)
    else:
        # straddling access: one access, a miss if either line misses
        cn = N0 + lvl * NCOL
        _add(s, cn + CN_STRADDLE, 1)
        _add(s, cn + CN_ACC + src, 1)
        end0 = (line0 + U64(1)) << lb
        r0 = request(s, lvl, p0, I64(end0 - p0), src, write, False, True)
        _prefetch_after_demand(s)
        base1 = line1 << lb
        r1 = request(s, lvl, base1, I64(p1 - base1) + 1, src, write, False, True)
        _prefetch_after_demand(s)
        if r0 != lvl or r1 != lvl:
            _add(s, cn + CN_MISS + src, 1)
        r = r0 if r0 > r1 else r1
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
    tlb = 0
    if t0 >= 0:
        tlb = translate(s, vaddr, t0, t1, page_bits)
        if (vlast >> pb) != (vaddr >> pb):
            r2 = translate(s, vlast, t0, t1, page_bits)
            if r2 > tlb:
                tlb = r2
    _st(s, SCR + S_TLB, tlb)
    return _cache_access(s, lvl, phys(s, vaddr, page_bits), phys(s, vlast, page_bits), src, write)


@njit(cache=True, inline="always")
def _access(s, lvl, t0, t1, vaddr, size, src, write, page_bits):
    """A demand access, with the common case inline and without a call: the access stays within one
    page, hits the first TLB (then only the cache part follows) and, within one line, hits the first
    cache level (which, for a write, is write-back)."""
    if t0 < 0 or size < 1:
        return _top_access(s, lvl, t0, t1, vaddr, size, src, write, page_bits)
    pb = U64(page_bits)
    vlast = vaddr + U64(size - 1)
    vpn = vaddr >> pb
    if (vlast >> pb) != vpn:
        return _top_access(s, lvl, t0, t1, vaddr, size, src, write, page_bits)
    tc = C0 + (TROW0 + t0) * NCOL
    tways = _ld(s, tc + T_WAYS)
    tset = I64(vpn & U64(_ld(s, tc + T_NSETS) - 1))
    tw = _find(s, _ld(s, tc + T_TAG0) + tset * tways, tways, vpn)
    if tw < 0:
        return _top_access(s, lvl, t0, t1, vaddr, size, src, write, page_bits)
    # first-level TLB hit: as translate() would count it
    tn = N0 + (TROW0 + t0) * NCOL
    _add(s, tn + TN_ACC, 1)
    _tlb_touch(s, tc, tn + TN_CLOCK, _ld(s, tc + T_STAMP0) + tset * tways, _ld(s, tc + T_BITS0) + tset, tw)
    _st(s, SCR + S_TLB, 0)
    _st(s, SCR + S_WALK_LOADS, 0)
    _st(s, SCR + S_WALK_CYCLES, 0)
    p0 = phys(s, vaddr, page_bits)
    p1 = p0 + U64(size - 1)                  # the same page: the same frame
    c = C0 + lvl * NCOL
    lb = U64(_ld(s, c + C_LINE_BITS))
    line = p0 >> lb
    if (p1 >> lb) != line or (write and _ld(s, c + C_WRITE_BACK) == 0):
        return _cache_access(s, lvl, p0, p1, src, write)
    set_id = _set_of(s, lvl, line)
    ways = _ld(s, c + C_WAYS)
    slot0 = set_id * ways
    w = _find(s, _ld(s, c + C_TAG0) + slot0, ways, line)
    if w < 0:
        return _cache_access(s, lvl, p0, p1, src, write)
    slot = slot0 + w
    m = _ld(s, c + C_META0) + slot * MW
    mask = _sector_mask(p0, size, _ld(s, c + C_SECTOR_BITS), _ld(s, c + C_NSECT))
    if (_ldu(s, m + M_VALID) & mask) != mask:
        return _cache_access(s, lvl, p0, p1, src, write)
    _add(s, N0 + lvl * NCOL + CN_ACC + src, 1)
    _touch(s, lvl, slot, set_id, w)
    if _ldu(s, m + M_PREF) & mask:
        _add(s, N0 + lvl * NCOL + CN_PF_USEFUL, 1)
        _st(s, m + M_PREF, _ldu(s, m + M_PREF) & ~mask)
    if write:
        _st(s, m + M_DIRTY, _ldu(s, m + M_DIRTY) | mask)
    _st(s, SCR + S_LEVEL, lvl)
    return lvl


@njit(cache=True, inline="always")
def _fetch(s, vaddr, size):
    return _access(s, _ld(s, G_L1I), _ld(s, G_ITLB0), _ld(s, G_ITLB1), vaddr, size, SRC_IFETCH, False,
                   _ld(s, G_IPAGE_BITS))


@njit(cache=True)
def _train_prefetchers(s, vaddr, pc):
    lvl = _ld(s, G_L1D)
    while lvl >= 0:
        if _ld(s, C0 + lvl * NCOL + C_PF_KIND) & PF_IP_STRIDE:
            train_ip_stride(s, lvl, pc, phys(s, vaddr, _ld(s, G_PAGE_BITS)))
        lvl = _ld(s, C0 + lvl * NCOL + C_NEXT)


@njit(cache=True, inline="always")
def _data(s, vaddr, size, kind, pc):
    write = kind != K_LOAD
    src = SRC_STORE if kind == K_STORE else SRC_LOAD
    r = _access(s, _ld(s, G_L1D), _ld(s, G_DTLB0), _ld(s, G_DTLB1), vaddr, size, src, write,
                _ld(s, G_PAGE_BITS))
    if src == SRC_LOAD and _ld(s, G_IP_STRIDE) != 0:
        _train_prefetchers(s, vaddr, pc)
    return r


@njit(cache=True, inline="always")
def fetch_access(S, vaddr, size):
    """Instruction fetch of ``size`` bytes at ``vaddr``: ITLB chain, then L1I.  Returns the supplying
    level; the scratch words hold the TLB outcome and the walk's loads and cycles."""
    return _fetch(S.ctypes.data, vaddr, size)


@njit(cache=True, inline="always")
def data_access(S, vaddr, size, kind, pc):
    """Load (kind 1), store (2) or modify (3) of ``size`` bytes at ``vaddr`` by the instruction at ``pc``.
    Returns the supplying level; the scratch words hold the TLB outcome and the walk's loads and cycles."""
    return _data(S.ctypes.data, vaddr, size, kind, pc)


@njit(cache=True)
def run_trace(S, addrs, sizes, kinds, start, stop):
    """Simulate trace records [start, stop).  The PC of a data access is the address of the most recent
    instruction fetch (lackey order: an ``I`` record precedes the data accesses of its instruction)."""
    s = S.ctypes.data
    pc = U64(0)
    for i in range(start, stop):
        k = kinds[i]
        if k == K_IFETCH:
            pc = addrs[i]
            _fetch(s, addrs[i], I64(sizes[i]))
        else:
            _data(s, addrs[i], I64(sizes[i]), I64(k), pc)
