"""Data streams: their address regions and the numba functions that produce their addresses.

Four kinds (``STREAM_KINDS``), each over its own region of ``footprint_kb``:

* ``sequential`` — element after element, wrapping at the end of the region;
* ``strided`` — ``stride_bytes`` apart; each pass over the region starts one element further on,
  so every element is eventually touched (a column walk of a row-major matrix);
* ``chase`` — a linked list threaded through the nodes in a random cyclic order (a bijective
  mixing function over the node numbers, so no permutation array is stored): the *advance*
  load reads the current node's next pointer and moves to the next node; field accesses read
  the current node;
* ``random`` — blocks (objects) chosen with Zipf popularity (exponent ``skew``) whose ranks are
  scattered over the region by the same bijection; a chosen block serves ``accesses_per_block``
  accesses on average (geometric) before the next is chosen, each instruction at its own offset
  (the fields of an object).

Every function here is deterministic given the stream's state; the walker in
:mod:`simulator.synth.kernel` owns the state arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from whatif.simulator.workload import Stream

STREAM_KINDS = ("sequential", "strided", "chase", "random")
S_SEQ, S_STRIDED, S_CHASE, S_RANDOM = range(4)
DATA_BASE = 0x10000000          # first data region (256 MB), above the program text
REGION_ALIGN = 1 << 21          # regions start on 2 MB boundaries, with a 2 MB gap between them

# stream matrix columns (int64 matrix ST, one row per stream)
C_KIND, C_BASE, C_SIZE, C_UNIT, C_ELEM, C_N, C_BITS, C_SALT, C_POS, C_CUR, C_ZOFF, C_ZLEN, C_RENEW = range(13)
NCOL = 13
RENEW_ONE = 1 << 53    # C_RENEW is the probability of choosing a new block, in units of 2**-53
ZIPF_HEAD = 512        # ranks below this have a bucket each in a popularity table
ZIPF_RATIO = 1.03      # further buckets span [a, a * ratio)

U64 = np.uint64
M1 = U64(0x9E3779B97F4A7C15)
M2 = U64(0xBF58476D1CE4E5B9)
M3 = U64(0x94D049BB133111EB)


@dataclass(frozen=True)
class StreamTable:
    """Per-stream constants (arrays indexed by stream) and the initial dynamic state."""
    names: tuple[str, ...]
    kind: np.ndarray      # int64 S_*
    base: np.ndarray      # uint64 first byte of the region
    size: np.ndarray      # int64 bytes used (a whole number of units)
    unit: np.ndarray      # int64 element (sequential), stride (strided), node (chase), block (random) bytes
    elem: np.ndarray      # int64 element bytes (strided: shift of each new pass)
    n: np.ndarray         # int64 number of units
    bits: np.ndarray      # int64 bits of the bijection domain (2**bits >= n)
    salt: np.ndarray      # uint64 per-stream salt of the bijection
    skew: np.ndarray      # float64 Zipf exponent (random)
    fields: np.ndarray    # float64 chase: field accesses per hop
    renew: np.ndarray     # int64 random: probability of a new block per access, times 2**53
    zoff: np.ndarray      # int64 random with skew: first bucket of its popularity table, -1 for uniform
    zlen: np.ndarray      # int64 number of buckets
    z_lo: np.ndarray      # popularity tables of all streams, concatenated: first rank of each bucket,
    z_width: np.ndarray   # its number of ranks,
    z_prob: np.ndarray    # the alias-method probability and
    z_alias: np.ndarray   # alias bucket (global index)

    def initial_state(self) -> np.ndarray:
        """The walker's stream matrix ``ST`` (int64, columns ``C_*``): constants, then the
        sequential/strided byte position or chase hop counter, and the chase current node."""
        S = len(self.names)
        ST = np.zeros((S, NCOL), dtype=np.int64)
        ST[:, C_KIND], ST[:, C_BASE], ST[:, C_SIZE], ST[:, C_UNIT] = (self.kind, self.base.astype(np.int64),
                                                                      self.size, self.unit)
        ST[:, C_ELEM], ST[:, C_N], ST[:, C_BITS] = self.elem, self.n, self.bits
        ST[:, C_SALT] = self.salt.view(np.int64)
        ST[:, C_ZOFF], ST[:, C_ZLEN], ST[:, C_RENEW] = self.zoff, self.zlen, self.renew
        ST[self.kind == S_RANDOM, C_CUR] = -1
        for j in range(S):
            if self.kind[j] == S_CHASE:
                ST[j, C_CUR] = perm_walk(np.int64(0), self.n[j], self.bits[j], self.salt[j])
        return ST

    def footprint_bytes(self) -> np.ndarray:
        return self.size.copy()


def build_streams(streams: dict[str, Stream], rng: np.random.Generator) -> StreamTable:
    names = tuple(streams)
    S = len(names)
    kind = np.zeros(S, np.int64)
    base = np.zeros(S, np.uint64)
    size = np.zeros(S, np.int64)
    unit = np.zeros(S, np.int64)
    elem = np.zeros(S, np.int64)
    n = np.zeros(S, np.int64)
    bits = np.zeros(S, np.int64)
    salt = np.zeros(S, np.uint64)
    skew = np.zeros(S)
    fields = np.zeros(S)
    renew = np.full(S, RENEW_ONE, np.int64)
    zoff = np.full(S, -1, np.int64)
    zlen = np.zeros(S, np.int64)
    tables = []
    nz = 0
    addr = DATA_BASE
    for j, name in enumerate(names):
        st = streams[name]
        k = STREAM_KINDS.index(st.kind)
        u = {S_SEQ: st.element_bytes, S_STRIDED: st.stride_bytes, S_CHASE: st.node_bytes,
             S_RANDOM: st.block_bytes}[k]
        total = int(st.footprint_kb * 1024)
        units = max(1, total // u)
        kind[j], unit[j], n[j] = k, u, units
        elem[j] = st.element_bytes
        size[j] = units * u
        bits[j] = max(0, math.ceil(math.log2(units))) if units > 1 else 0
        salt[j] = U64(int(rng.integers(0, 2 ** 63)))
        skew[j] = st.skew if k == S_RANDOM else 0.0
        if k == S_RANDOM and st.skew > 0:
            lo, width, prob, alias = zipf_table(units, st.skew)
            zoff[j], zlen[j] = nz, len(lo)
            tables.append((lo, width, prob, alias + nz))
            nz += len(lo)
        fields[j] = st.fields
        renew[j] = int(round(RENEW_ONE / st.accesses_per_block))
        base[j] = U64(addr)
        addr = ((addr + size[j] + REGION_ALIGN - 1) // REGION_ALIGN + 1) * REGION_ALIGN
    cat = [np.concatenate([t[i] for t in tables]) if tables else np.zeros(0, dt)
           for i, dt in enumerate((np.int64, np.int64, float, np.int64))]
    return StreamTable(names, kind, base, size, unit, elem, n, bits, salt, skew, fields, renew, zoff, zlen,
                       cat[0].astype(np.int64), cat[1].astype(np.int64), cat[2].astype(float), cat[3].astype(np.int64))


def zipf_weights(lo: np.ndarray, hi: np.ndarray, skew: float) -> np.ndarray:
    """Total Zipf weight sum_{k in [lo, hi)} (k + 1) ** -skew (exact for single ranks, the integral
    of the continuous power law over wider buckets)."""
    lo = lo.astype(float)
    hi = hi.astype(float)
    single = hi - lo == 1
    out = np.empty(len(lo))
    out[single] = (lo[single] + 1.0) ** -skew
    a, b = lo[~single] + 0.5, hi[~single] + 0.5
    if abs(skew - 1.0) < 1e-12:
        out[~single] = np.log(b / a)
    else:
        out[~single] = (b ** (1.0 - skew) - a ** (1.0 - skew)) / (1.0 - skew)
    return out


def zipf_table(n: int, skew: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Popularity buckets of ranks [0, n) and their alias table (Vose): single ranks below
    ZIPF_HEAD, then buckets growing by ZIPF_RATIO, a uniform rank inside a bucket."""
    edges = list(range(min(n, ZIPF_HEAD) + 1))
    a = edges[-1]
    while a < n:
        a = min(n, max(a + 1, int(math.ceil(a * ZIPF_RATIO))))
        edges.append(a)
    e = np.array(edges, dtype=np.int64)
    lo, hi = e[:-1], e[1:]
    w = zipf_weights(lo, hi, skew)
    prob, alias = alias_table(w / w.sum())
    return lo, hi - lo, prob, alias


def alias_table(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vose's alias method: bucket i is kept with probability prob[i], else alias[i] is taken."""
    m = len(p)
    scaled = p * m
    prob = np.ones(m)
    alias = np.arange(m, dtype=np.int64)
    small = [i for i in range(m) if scaled[i] < 1.0]
    large = [i for i in range(m) if scaled[i] >= 1.0]
    while small and large:
        s_, l_ = small.pop(), large.pop()
        prob[s_] = scaled[s_]
        alias[s_] = l_
        scaled[l_] = scaled[l_] + scaled[s_] - 1.0
        (small if scaled[l_] < 1.0 else large).append(l_)
    return prob, alias


# ------------------------------------------------------------------------------------ numba helpers
# The walker keeps the generator state in a local scalar and calls only scalar functions: numba
# passes arrays to a called function with reference counting, which costs more than the work.
@njit(cache=True)
def mix64(z):
    """The splitmix64 output function of state ``z`` (the state advances by M1 per draw)."""
    z = (z ^ (z >> U64(30))) * M2
    z = (z ^ (z >> U64(27))) * M3
    return z ^ (z >> U64(31))


@njit(cache=True)
def to_unit(bits):
    """A float in [0, 1) from the top 53 of 64 random bits."""
    return float(bits >> U64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def next_u64(rng):
    """splitmix64 step on ``rng[0]``; returns 64 random bits (for tests and setup code)."""
    rng[0] = rng[0] + M1
    return mix64(rng[0])


@njit(cache=True)
def perm(x, bits, salt):
    """A bijection of [0, 2**bits)."""
    if bits == 0:
        return np.int64(0)
    mask = (U64(1) << U64(bits)) - U64(1)
    h = U64((bits + 1) // 2)
    y = (U64(x) ^ salt) & mask
    y = (y * M1) & mask
    y = y ^ (y >> h)
    y = (y * M2) & mask
    y = y ^ (y >> h)
    y = (y * M3) & mask
    y = y ^ (y >> h)
    return np.int64(y)


@njit(cache=True)
def perm_walk(x, n, bits, salt):
    """A bijection of [0, n) by cycle walking the bijection of [0, 2**bits)."""
    y = perm(x, bits, salt)
    while y >= n:
        y = perm(y, bits, salt)
    return y


@njit(cache=True)
def random_rank(n, zoff, zlen, z_lo, z_width, z_prob, z_alias, rng):
    """A rank in [0, n): uniform when ``zoff`` < 0, else from the stream's popularity table (alias
    method over buckets, then a uniform rank inside the bucket).  The walker inlines the same
    steps; this version serves the tests."""
    u = to_unit(next_u64(rng))
    if zoff < 0:
        r = np.int64(u * n)
        return r if r < n else n - 1
    x = u * zlen
    i = np.int64(x)
    if i >= zlen:
        i = zlen - 1
    b = zoff + i
    if x - i >= z_prob[b]:
        b = z_alias[b]
    w = z_width[b]
    if w == 1:
        return z_lo[b]
    # uniform in [0, w) by multiply-high of 32 random bits (w < 2**32; no division)
    return z_lo[b] + np.int64(((next_u64(rng) >> U64(32)) * U64(w)) >> U64(32))
