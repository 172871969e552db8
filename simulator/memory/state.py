"""Layout of the memory-hierarchy state, and raw word access for the numba kernels.

The whole state of a hierarchy lives in ONE flat int64 array ``S`` (``MemState(S)``), built by
:mod:`simulator.memory.hierarchy`.  The kernels work on its raw address: every internal function
takes that address ``s`` (one integer argument) and reads and writes words through the intrinsics
below.  Passing numba arrays between functions costs a dozen arguments and reference counting per
array per call, which dominated the run time; an integer costs one register.

Layout of ``S`` (word offsets; rows have ``NCOL`` columns):

``[0, NG)``     G: globals (``G_*``)
``[C0, N0)``    C: configuration rows: cache levels 0..MAX_LEVELS-1, then TLB t at row ``TROW0 + t``
``[N0, P0)``    N: counter rows (the same row numbers as C; memory at ``MEMROW``), the scratch row
                ``SCRROW`` and the fill-path frames ``FRAMEROW + d``
``[P0, ...)``   IP-stride prefetcher tables, ``[level, IPT_SIZE, 4]``

then, per cache level and TLB, at the absolute offsets held in its C row:

* tags, the ways of a set adjacent and each set 64-byte aligned when the ways are a multiple of 8
  (a region ends with 4 spare words: tags are compared four at a time);
* per cache slot ``MW`` = 2 metadata words: ``M_VD`` = valid sector mask (bits 0-31) | dirty sector
  mask (bits 32-63), ``M_PS`` = prefetched sector mask (bits 0-31) | replacement stamp (bits 32-63;
  LRU and FIFO).  Lines have at most 32 sectors (the platform schema's limit).  A stamp is the
  level's 32-bit clock at the last touch (LRU) or install (FIFO); before the clock would pass 2**32
  every set's stamps are renumbered 1..ways in the same order, which keeps every victim choice.  An
  invalid slot's tag is EMPTY and its two words are 0 (every invalidation clears all three): the victim
  choice looks for an invalid way among the tags and compares stamps only;
* per TLB entry a 64-bit stamp (TLBs keep no sector state);
* per prefetch engine (levels with ``C_PF_ENGINES`` > 0) the time until which it is busy;
* per streamer (levels with the ``streamer`` prefetcher) ``C_ST_N`` entries of ``ST_WORDS`` words, stored
  by column (``ST_KEY``...: every entry's key, then every entry's link to the next older, ...), then the two
  ends of the entries' recency list (a doubly linked list: the victim is its LRU end, found without a scan);
* with timed prefetch arrival, per slot of each level below the L1s the cycle its line is ready
  (offset ``S[G_READY0 + level]``);
* tree-PLRU bits (one word per set) and the PLRU touch table (per way: the AND mask and the OR mask
  that point every node on the way's path away from it).

Other numba code (the core timing model) calls ``kernel.data_access`` / ``kernel.fetch_access`` per
instruction with the state array first; after each call the words ``S[SCR_LEVEL]``, ``S[SCR_TLB]``,
``S[SCR_WALK_LOADS]`` and ``S[SCR_WALK_CYCLES]`` hold the supplying level, the TLB outcome and the
walk's loads and cycles, ``S[G_CH_DELAY]`` how long the access's memory transfers waited for the memory
channel, and ``S[SCR_PF_N]`` the number of prefetches the access sent into the top data level (the L1D),
``S[SCR_PF_REC0 + j]`` a record of each (at most ``PF_RECORDS``: line within its page, channel wait,
supplying level; only with ``G_PF_TIMED``): the memory kernel installs a prefetched line at once, and the
core times its arrival (an MSHR until the wait and the supplying level's latency have passed).  Before each
call the caller sets ``S[SCR_NOW]`` to the current time (the core's cycle; the trace record's index in
trace-driven runs): prefetch engines are busy until a time.
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
EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)        # the tag of an empty way
LOW32 = np.uint64(0xFFFFFFFF)
STAMP_MAX = 0xFFFFFFFF
MAX_LEVELS = 8
MAX_TLBS = 16
NCOL = 32

# ---- access kinds (trace encoding) ------------------------------------------------------------
K_IFETCH, K_LOAD, K_STORE, K_MODIFY = 0, 1, 2, 3

# ---- request sources, for per-source counters --------------------------------------------------
SRC_IFETCH, SRC_LOAD, SRC_STORE, SRC_WALK, SRC_PREFETCH, SRC_WRITEBACK = 0, 1, 2, 3, 4, 5
NSRC = 6

# ---- rows of C and N ----------------------------------------------------------------------------
TROW0 = MAX_LEVELS                # TLB t is row TROW0 + t
MEMROW = TROW0 + MAX_TLBS         # N only: memory
SCRROW = MEMROW + 1               # N only: scratch
FRAMEROW = SCRROW + 1             # N only: fill-path frames, one per level
NROWS = FRAMEROW + MAX_LEVELS

# ---- regions of S ---------------------------------------------------------------------------------
NG = 64
C0 = NG
N0 = C0 + MEMROW * NCOL
P0 = N0 + NROWS * NCOL
IPT_SIZE = 256                    # IP-stride table entries per level: [pc, last byte address, byte stride,
                                  # confidence]
IP_STRIDE_MAX_BYTES = 2048        # the longest stride the IP prefetcher follows (Intel ORM, "Data Prefetch to
                                  # the L1 Data Cache": strides up to 2 KB, forward or backward)
MW = 2                            # metadata words per cache slot
M_VD, M_PS = 0, 1

# ---- cache configuration columns (C row = level) -----------------------------------------------
(C_TAG0, C_META0, C_BITS0, C_PLRU0, C_NSETS, C_WAYS, C_LINE_BITS, C_SECTOR_BITS, C_NSECT, C_POLICY,
 C_WRITE_BACK, C_WRITE_ALLOC, C_INCLUSIVE, C_NEXT, C_PF_KIND, C_PF_DEGREE, C_SLICES, C_WAY_BITS, C_LAT) = range(19)
C_ABOVE = 19                      # C_ABOVE .. C_ABOVE+MAX_LEVELS-1: every level above (transitively), -1 ends
C_PF_ENGINES = C_ABOVE + MAX_LEVELS   # prefetch engines (0: unlimited, no engine state)
C_PF_BUSY0 = C_PF_ENGINES + 1         # absolute offset of the engines' busy-until times (one word each)
C_ST0, C_ST_N, C_ST_DIST = C_PF_BUSY0 + 1, C_PF_BUSY0 + 2, C_PF_BUSY0 + 3   # streamer: offset of its table,
                                      # streams (table entries), lines it runs ahead of the access at most

# ---- TLB configuration columns (C row = TROW0 + t) ---------------------------------------------
T_TAG0, T_STAMP0, T_BITS0, T_PLRU0, T_NSETS, T_WAYS, T_POLICY, T_WAY_BITS, T_LAT = range(9)

# ---- cache counters (N row = level) ---------------------------------------------------------------
CN_ACC, CN_MISS = 0, NSRC         # 0..5 accesses by source, 6..11 misses by source
CN_WRITEBACKS, CN_PF_ISSUED, CN_PF_USEFUL, CN_BACK_INVAL, CN_SECTOR_MISS, CN_EVICTIONS, CN_STRADDLE, \
    CN_CLOCK, CN_PF_DROPPED, CN_PF_LATE = range(2 * NSRC, 2 * NSRC + 10)

# ---- TLB counters (N row = TROW0 + t) -------------------------------------------------------------
TN_ACC, TN_MISS, TN_WALKS, TN_WALK_ACC, TN_WALK_MEM, TN_CLOCK = range(6)

# ---- memory counters (N row MEMROW): reads by source 0..5, then writes -----------------------------
MEM_WRITES = NSRC

# ---- scratch row (N row SCRROW) -------------------------------------------------------------------
S_NMISSED, S_LEVEL, S_TLB, S_WALK_LOADS, S_WALK_CYCLES, S_FILL_SLOT, S_NOW, S_P0 = range(8)
# S_P0: the physical address of the last demand access's first byte (the IP prefetcher trains on it)
S_MISSED = 8                      # 8..15 levels missed by the last demand request, 16..23 their lines
S_MISSED_LINE = 16
S_PF_N = 24                       # prefetches into the top data level during the last data access, and
S_PF_REC0 = 25                    # 25..31 their records (the core times them): the line's number within its
PF_RECORDS = 7                    # page << PF_WITHIN_SHIFT | channel wait << 4 | supplying level
PF_WITHIN_SHIFT = 28
PF_WAIT_MAX = (1 << 24) - 1
SCR = N0 + SCRROW * NCOL          # absolute word offset of the scratch row
SCR_LEVEL, SCR_TLB, SCR_WALK_LOADS, SCR_WALK_CYCLES = (SCR + S_LEVEL, SCR + S_TLB, SCR + S_WALK_LOADS,
                                                       SCR + S_WALK_CYCLES)
SCR_NOW = SCR + S_NOW             # the current time (cycles), set by the caller before each access
SCR_PF_N, SCR_PF_REC0 = SCR + S_PF_N, SCR + S_PF_REC0

# ---- fill-path frames (N row FRAMEROW + d) --------------------------------------------------------
F_LVL, F_WAY, F_SET, F_SLOT0, F_MASK, F_LINE = range(6)

# ---- globals (S[X]) -------------------------------------------------------------------------------
(G_L1I, G_L1D, G_ITLB0, G_ITLB1, G_DTLB0, G_DTLB1, G_PAGE_BITS, G_WALK_KIND, G_WALK_LEVELS, G_WALK_BITS,
 G_WALK_LEVEL, G_WALK_CACHED, G_WALK_POLLUTE, G_HTAB_PTEGS, G_MAPPING, G_SALT, G_NLEVELS, G_PTE_BYTES,
 G_MEM_LAT, G_RNG, G_IP_STRIDE, G_IPAGE_BITS, G_IWALK_LEVELS, G_NTLBS, G_SIZE, G_CH_UNITS, G_CH_RING,
 G_CH_DELAY, G_CH_BYTES, G_PF_TIMED, G_ST_N, _G_SPARE) = range(32)
G_ST_REC0 = 32                    # 32..39: lookups noted for the streamers during the last access (line << 4 | level)
ST_RECORDS = 8
G_READY0 = 40                     # 40..47: per cache level, the offset of its lines' ready times (0: none)
G_CH_RUN_LO, G_CH_RUN_HI = 48, 49  # the memory channel's calendar: buckets [LO, HI) are full (see caches.channel)
# G_PF_TIMED: memory.prefetch_arrival = "latency" (prefetches into the L1D are reported to the core, S_PF_*)
# memory channel (memory.queueing = "bandwidth"): G_CH_UNITS is the channel time of one byte in 2**-16 cycles
# (0: no queueing); G_CH_RING the offset of its calendar, CH_BUCKETS buckets of 2**CH_BUCKET_BITS cycles, each
# two words (bucket number, channel time taken in it); G_CH_DELAY the queueing delay of the last access
# (its demand transfers; cleared by the access functions); G_CH_BYTES the bytes it has carried
CH_BUCKET_BITS = 6
CH_BUCKETS = 4096
CH_FRAC = 16

# prefetcher bits of the C_PF_KIND column (bit = 1 << (registry id - 1); several may be stacked)
PF_NEXT_LINE, PF_ADJACENT_SECTOR, PF_ADJACENT_LINE, PF_IP_STRIDE, PF_TAGGED, PF_STREAMER = 1, 2, 4, 8, 16, 32
ST_WORDS = 6                      # words per streamer table entry, kept as six columns of C_ST_N words each (a
ST_KEY, ST_OLDER, ST_NEWER, ST_LAST, ST_DIR, ST_NEXT = range(6)   # column's offset is its number x C_ST_N):
#                                   page + 1 (0: empty); the next entry towards the least and the most recently
#                                   used; last line, direction, next line to prefetch.  Keys contiguous, so that
#                                   the lookup compares them 4 at a time
ST_LRU, ST_MRU = 0, 1             # after the columns: the least and the most recently used entry (the recency
#                                   list starts in index order, empty entries being taken lowest first)
ST_ENDS = 2
ST_PAGE_BITS = 12                 # streams live in 4 KB regions whatever the page size
PF_MISS_TRIGGERED = PF_NEXT_LINE | PF_ADJACENT_SECTOR | PF_ADJACENT_LINE | PF_TAGGED

PT_BASE = np.uint64(0xF000000000000000)     # physical region of radix page tables (per-level sub-regions)
HTAB_BASE = np.uint64(0xE000000000000000)   # physical base of the PowerPC hashed page table

MemState = namedtuple("MemState", ["S"])
Views = namedtuple("Views", ["G", "C", "N"])


def views(S: np.ndarray) -> Views:
    """numpy views of the globals, the configuration rows and the counter rows of a state array."""
    return Views(S[:NG], S[C0:N0].reshape(MEMROW, NCOL), S[N0:P0].reshape(NROWS, NCOL))


# ============================================================================ raw word access
_i64 = ir.IntType(64)
_i64p = _i64.as_pointer()
_i32 = ir.IntType(32)


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
def _cfg(typingctx, s, i):
    """A configuration word (C rows, and G but for G_RNG): never written by the kernels, so the load is
    marked invariant and LLVM may reuse it across stores."""
    if not _ints(s, i):
        return None

    def codegen(context, builder, sig, args):
        load = builder.load(_addr(context, builder, sig, args))
        load.set_metadata("invariant.load", builder.module.add_metadata([]))
        return load
    return types.int64(types.unliteral(s), types.unliteral(i)), codegen


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
def _match4(typingctx, s, i, v):
    """Bit k (k < 4) set where word ``i + k`` equals ``v``: one SIMD compare and a move-mask."""
    if not _ints(s, i, v):
        return None

    def codegen(context, builder, sig, args):
        vt = ir.VectorType(_i64, 4)
        vec = builder.load(builder.bitcast(_addr(context, builder, sig, args), vt.as_pointer()), align=8)
        x = context.cast(builder, args[2], sig.args[2], types.uint64)
        splat = builder.insert_element(ir.Constant(vt, ir.Undefined), x, ir.Constant(_i32, 0))
        splat = builder.shuffle_vector(splat, ir.Constant(vt, ir.Undefined),
                                       ir.Constant(ir.VectorType(_i32, 4), [0, 0, 0, 0]))
        bits = builder.bitcast(builder.icmp_unsigned("==", vec, splat), ir.IntType(4))
        return builder.zext(bits, _i64)
    return types.uint64(types.unliteral(s), types.unliteral(i), types.unliteral(v)), codegen


@intrinsic
def _var(typingctx, x):
    """``x`` as a run-time value: a constant argument (``SRC_PREFETCH``, ``False``, ``-1``) passed on to a
    non-inlined kernel would otherwise compile a separate specialisation of it per constant, each as slow
    to compile as the general one; LLVM still folds the constant where the callee is inlined."""
    if not isinstance(x, (types.Integer, types.Boolean)):       # (their literal types included)
        return None
    ty = types.unliteral(x)

    def codegen(context, builder, sig, args):
        return args[0]
    return ty(ty), codegen


@intrinsic
def _ctz(typingctx, x):
    """Trailing zero bits of a non-zero uint64."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        return builder.cttz(context.cast(builder, args[0], sig.args[0], types.uint64), ir.Constant(ir.IntType(1), 1))
    return types.int64(types.unliteral(x)), codegen


@intrinsic
def _clz(typingctx, x):
    """Leading zero bits of a non-zero uint64."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        return builder.ctlz(context.cast(builder, args[0], sig.args[0], types.uint64), ir.Constant(ir.IntType(1), 1))
    return types.int64(types.unliteral(x)), codegen


@intrinsic
def _prefetch(typingctx, s, i):
    """Hint the host CPU to bring word ``i`` into its caches (the next lookup of a set will need it)."""
    if not _ints(s, i):
        return None

    def codegen(context, builder, sig, args):
        i8p = ir.IntType(8).as_pointer()
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, _i32, _i32, _i32]),
                                            "llvm.prefetch.p0")
        p = builder.bitcast(_addr(context, builder, sig, args), i8p)
        builder.call(fn, [p, ir.Constant(_i32, 0), ir.Constant(_i32, 3), ir.Constant(_i32, 1)])
        return context.get_dummy_value()
    return types.void(types.unliteral(s), types.unliteral(i)), codegen


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


# ============================================================================ small helpers
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


@njit(cache=True, inline="always")
def _find(s, tag0, ways, line):
    """The way of ``line`` among the ``ways`` tags at ``tag0``, or -1.  Branch-free: the tags are compared
    four at a time and the match mask is cut to the set (tags are unique within a set)."""
    m = _match4(s, tag0, line)
    if ways > 4:
        m |= _match4(s, tag0 + 4, line) << U64(4)
        for j in range(8, ways, 4):
            m |= _match4(s, tag0 + j, line) << U64(j)
    m &= EMPTY >> U64(64 - ways)
    return _ctz(m) if m != 0 else -1


@njit(cache=True)
def _sector_mask(addr, nbytes, sector_bits, nsect):
    if nsect == 1:
        return U64(1)
    first = I64((addr >> U64(sector_bits)) & U64(nsect - 1))
    last = I64(((addr + U64(nbytes - 1)) >> U64(sector_bits)) & U64(nsect - 1))
    return ((U64(1) << U64(last + 1)) - U64(1)) ^ ((U64(1) << U64(first)) - U64(1))


@njit(cache=True)
def _set_of(s, row, line):
    nsets = _cfg(s, C0 + row * NCOL + C_NSETS)
    st = I64(line & U64(nsets - 1))
    slices = _cfg(s, C0 + row * NCOL + C_SLICES)
    if slices > 1:
        # address-hashed slice selection (Intel's hash is undocumented; any fixed good hash will do)
        st += nsets * I64(_mix64(line) % U64(slices))
    return st


@njit(cache=True)
def _plru_touch(s, table, bi, way):
    # branch- and loop-free: every node on the way's path points away from it (masks built by the builder)
    _st(s, bi, (_ldu(s, bi) & _ldu(s, table + 2 * way)) | _ldu(s, table + 2 * way + 1))


@njit(cache=True, inline="always")
def _plru_victim(s, bi, way_bits):
    bits = _ldu(s, bi)
    node = 1
    w = 0
    for level in range(way_bits):
        d = I64((bits >> U64(node)) & U64(1))
        w = (w << 1) | d
        node = 2 * node + d
    return w
