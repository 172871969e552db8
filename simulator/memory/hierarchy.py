"""Build the memory-hierarchy state of a platform and run traces through it.

``MemoryHierarchy(platform, seed)`` lays every cache level and TLB of the
platform out in flat arrays (levels ordered from the core outwards), runs
traces through the numba kernels of :mod:`simulator.memory.kernel`, and reports
counters per level and per TLB.
"""

from __future__ import annotations

import math
import time
from typing import Callable

import numpy as np

from simulator.errors import SimulatorInputError
from simulator.memory import kernel as K
from simulator.memory.policies import PAGE_MAPPINGS, PREFETCHERS, REPLACEMENT, WALKS
from simulator.platform import Platform

SRC_NAMES = ("instr", "load", "store", "walk", "prefetch", "writeback")


def _plru_table(ways: int) -> list[int]:
    """Per way: the AND mask and the OR mask that make every tree-PLRU node on the way's path point
    away from it (node 1 is the root; the children of node k are 2k and 2k+1)."""
    bits = int(math.log2(ways))
    out: list[int] = []
    for way in range(ways):
        node, clear, set_ = 1, 0, 0
        for level in range(bits):
            d = (way >> (bits - 1 - level)) & 1
            clear |= 1 << node
            set_ |= (1 - d) << node
            node = 2 * node + d
        out += [~clear & (2**64 - 1), set_]
    return [v - 2**64 if v >= 2**63 else v for v in out]      # as int64 bit patterns


def _depth_order(platform: Platform) -> list[str]:
    """Cache level names ordered so that every level comes after all levels that feed it."""
    caches = platform.caches
    depth: dict[str, int] = {}

    def d(name: str) -> int:
        if name not in depth:
            uppers = [u for u, c in caches.items() if c.next_level == name]
            depth[name] = 0 if not uppers else 1 + max(d(u) for u in uppers)
        return depth[name]

    return sorted(caches, key=lambda n: (d(n), list(caches).index(n)))


class MemoryHierarchy:
    """The caches, TLBs and page walker of one platform, with their state."""

    def __init__(self, platform: Platform, seed: int = 0):
        self.platform = platform
        self.seed = int(seed)
        self.level_names = _depth_order(platform)
        self.tlb_names = list(platform.tlbs)
        self.state = self._build()
        self.simulation_seconds = 0.0
        self.accesses = 0

    # ------------------------------------------------------------------ construction
    def _build(self) -> K.MemState:
        """Lay the state out in one flat int64 array (see :mod:`simulator.memory.kernel` for the map)."""
        p = self.platform
        names = self.level_names
        index = {nm: i for i, nm in enumerate(names)}
        n = len(names)
        if n > K.MAX_LEVELS:
            raise SimulatorInputError(f"platform {p.name}: at most {K.MAX_LEVELS} cache levels are supported")
        tn = self.tlb_names
        m = len(tn)
        if m > K.MAX_TLBS:
            raise SimulatorInputError(f"platform {p.name}: at most {K.MAX_TLBS} TLBs are supported")
        C = np.zeros((K.MEMROW, K.NCOL), dtype=np.int64)
        G = np.zeros(K.NG, dtype=np.int64)
        top = K.P0 + n * K.IPT_SIZE * 4          # words allocated so far

        def region(words: int) -> int:
            """Allocate ``words`` words at a 64-byte aligned offset."""
            nonlocal top
            top = (top + 7) & ~7
            at = top
            top += words
            return at

        empty: list[tuple[int, int]] = []         # tag regions, filled with EMPTY below
        tables: list[tuple[int, list[int]]] = []  # PLRU touch tables
        for i, name in enumerate(names):
            c = p.caches[name]
            sets = c.sets * c.slices
            slots = sets * c.associativity
            C[i, K.C_TAG0] = region(slots)
            empty.append((C[i, K.C_TAG0], slots))
            C[i, K.C_META0] = region(slots * K.MW)
            C[i, K.C_BITS0] = region(sets)
            if c.replacement == "plru":
                C[i, K.C_PLRU0] = region(2 * c.associativity)
                tables.append((C[i, K.C_PLRU0], _plru_table(c.associativity)))
            C[i, K.C_NSETS] = c.sets
            C[i, K.C_WAYS] = c.associativity
            C[i, K.C_WAY_BITS] = int(math.log2(c.associativity)) if c.replacement == "plru" else 0
            C[i, K.C_LINE_BITS] = int(math.log2(c.line_bytes))
            C[i, K.C_SECTOR_BITS] = int(math.log2(c.sector_bytes or c.line_bytes))
            C[i, K.C_NSECT] = c.sectors
            C[i, K.C_POLICY] = REPLACEMENT[c.replacement]
            C[i, K.C_WRITE_BACK] = int(c.write_policy == "write_back")
            C[i, K.C_WRITE_ALLOC] = int(c.write_allocate)
            C[i, K.C_INCLUSIVE] = int(c.inclusion == "inclusive")
            C[i, K.C_NEXT] = -1 if c.next_level == "memory" else index[c.next_level]
            C[i, K.C_PF_KIND] = sum(1 << (PREFETCHERS[pf] - 1) for pf in set(c.prefetchers) if PREFETCHERS[pf])
            C[i, K.C_PF_DEGREE] = c.prefetch_degree
            C[i, K.C_SLICES] = c.slices
            C[i, K.C_LAT] = c.latency_cycles
            # every level above this one (transitively), for back-invalidation by inclusive levels
            ups: list[int] = []
            frontier = [name]
            while frontier:
                cur = frontier.pop()
                for u, cu in p.caches.items():
                    if cu.next_level == cur and index[u] not in ups:
                        ups.append(index[u])
                        frontier.append(u)
            C[i, K.C_ABOVE:K.C_ABOVE + K.MAX_LEVELS] = -1
            C[i, K.C_ABOVE:K.C_ABOVE + len(ups)] = sorted(ups)
        tindex = {t: i for i, t in enumerate(tn)}
        for i, t in enumerate(tn):
            spec = p.tlbs[t]
            row = K.TROW0 + i
            sets = spec.entries // spec.associativity
            C[row, K.T_TAG0] = region(spec.entries)
            empty.append((C[row, K.T_TAG0], spec.entries))
            C[row, K.T_STAMP0] = region(spec.entries)
            C[row, K.T_BITS0] = region(sets)
            if spec.replacement == "plru":
                C[row, K.T_PLRU0] = region(2 * spec.associativity)
                tables.append((C[row, K.T_PLRU0], _plru_table(spec.associativity)))
            C[row, K.T_NSETS] = sets
            C[row, K.T_WAYS] = spec.associativity
            C[row, K.T_POLICY] = REPLACEMENT[spec.replacement]
            C[row, K.T_WAY_BITS] = int(math.log2(spec.associativity)) if spec.replacement == "plru" else 0
            C[row, K.T_LAT] = spec.latency_cycles

        G[K.G_L1I] = index[p.top_cache("instruction")]
        G[K.G_L1D] = index[p.top_cache("data")]
        ichain = [tindex[t] for t in p.tlb_chain("instruction")] + [-1, -1]
        dchain = [tindex[t] for t in p.tlb_chain("data")] + [-1, -1]
        G[K.G_ITLB0], G[K.G_ITLB1] = ichain[0], ichain[1]
        G[K.G_DTLB0], G[K.G_DTLB1] = dchain[0], dchain[1]
        G[K.G_PAGE_BITS] = int(math.log2(p.memory.page_kb * 1024))
        G[K.G_IPAGE_BITS] = int(math.log2(p.memory.code_page_kb * 1024))
        G[K.G_IWALK_LEVELS] = p.walk_levels("instruction")
        w = p.page_walk
        G[K.G_WALK_KIND] = WALKS[w.kind]
        G[K.G_WALK_LEVELS] = p.walk_levels()
        G[K.G_WALK_BITS] = w.bits_per_level
        G[K.G_WALK_LEVEL] = index[w.cache_level]
        G[K.G_WALK_CACHED] = min(w.cached_levels, p.walk_levels() - 1)
        G[K.G_WALK_POLLUTE] = int(w.pollute)
        G[K.G_HTAB_PTEGS] = w.htab_kb * 1024 // 64
        G[K.G_PTE_BYTES] = w.pte_bytes
        G[K.G_MAPPING] = PAGE_MAPPINGS[p.memory.page_mapping]
        rng = np.random.default_rng(self.seed)
        G[K.G_SALT] = int(rng.integers(0, 2**62))
        G[K.G_RNG] = int(rng.integers(1, 2**62))
        G[K.G_NLEVELS] = n
        G[K.G_NTLBS] = m
        G[K.G_MEM_LAT] = p.memory.latency_cycles
        G[K.G_IP_STRIDE] = int(any(C[i, K.C_PF_KIND] & K.PF_IP_STRIDE for i in range(n)))
        top = (top + 7) & ~7
        G[K.G_SIZE] = top

        # one 64-byte aligned buffer (the view keeps its base alive)
        raw = np.zeros(top + 8, dtype=np.int64)
        off = (-raw.ctypes.data % 64) // 8
        S = raw[off:off + top]
        S[:K.NG] = G
        S[K.C0:K.N0] = C.ravel()
        for at, words in empty:
            S[at:at + words] = -1             # EMPTY tags
        for at, table in tables:
            S[at:at + len(table)] = table
        return K.MemState(S=S)

    # ------------------------------------------------------------------ running
    def run(self, addrs: np.ndarray, sizes: np.ndarray, kinds: np.ndarray,
            progress: Callable[[int], None] | None = None, chunk: int = 1 << 22) -> "MemoryHierarchy":
        """Run trace arrays (uint64 addresses, sizes, kinds 0=I 1=L 2=S 3=M) through the hierarchy.

        ``progress(n)`` is called with the number of records done after each chunk."""
        addrs = np.ascontiguousarray(addrs, dtype=np.uint64)
        sizes = np.ascontiguousarray(sizes, dtype=np.uint16)
        kinds = np.ascontiguousarray(kinds, dtype=np.uint8)
        total = len(addrs)
        t0 = time.perf_counter()
        for start in range(0, total, chunk):
            stop = min(total, start + chunk)
            K.run_trace(*self.state, addrs, sizes, kinds, start, stop)
            if progress is not None:
                progress(stop - start)
        self.simulation_seconds += time.perf_counter() - t0
        self.accesses += total
        return self

    # ------------------------------------------------------------------ results
    def counters(self) -> dict:
        """Counters per cache level, per TLB and for memory, keyed by the platform file's names."""
        v = K.views(self.state.S)
        N = v.N
        levels = {}
        demand = [K.SRC_IFETCH, K.SRC_LOAD, K.SRC_STORE, K.SRC_WALK]
        for i, name in enumerate(self.level_names):
            c = N[i]
            acc = int(sum(c[K.CN_ACC + s] for s in demand))
            miss = int(sum(c[K.CN_MISS + s] for s in demand))
            row = {"accesses": acc, "hits": acc - miss, "misses": miss,
                   "miss_ratio": (miss / acc) if acc else 0.0}
            for s in demand:
                row[f"{SRC_NAMES[s]}_accesses"] = int(c[K.CN_ACC + s])
                row[f"{SRC_NAMES[s]}_misses"] = int(c[K.CN_MISS + s])
            row["data_accesses"] = row["load_accesses"] + row["store_accesses"]
            row["data_misses"] = row["load_misses"] + row["store_misses"]
            row["sector_misses"] = int(c[K.CN_SECTOR_MISS])
            row["straddling_accesses"] = int(c[K.CN_STRADDLE])
            row["evictions"] = int(c[K.CN_EVICTIONS])
            row["writebacks"] = int(c[K.CN_WRITEBACKS])
            row["writebacks_received"] = int(c[K.CN_ACC + K.SRC_WRITEBACK])
            row["back_invalidations"] = int(c[K.CN_BACK_INVAL])
            row["prefetches_issued"] = int(c[K.CN_PF_ISSUED])
            row["prefetches_useful"] = int(c[K.CN_PF_USEFUL])
            row["prefetch_requests_received"] = int(c[K.CN_ACC + K.SRC_PREFETCH])
            row["prefetch_requests_missed"] = int(c[K.CN_MISS + K.SRC_PREFETCH])
            levels[name] = row
        tlbs = {}
        for i, name in enumerate(self.tlb_names):
            c = N[K.TROW0 + i]
            tlbs[name] = {"accesses": int(c[K.TN_ACC]), "misses": int(c[K.TN_MISS]),
                          "hits": int(c[K.TN_ACC] - c[K.TN_MISS]), "walks": int(c[K.TN_WALKS]),
                          "walk_memory_accesses": int(c[K.TN_WALK_ACC]),
                          "walk_accesses_to_memory": int(c[K.TN_WALK_MEM])}
        mem = N[K.MEMROW]
        memory = {f"{SRC_NAMES[s]}_reads": int(mem[s]) for s in range(K.NSRC) if s != K.SRC_WRITEBACK}
        memory["reads"] = int(sum(mem[:K.NSRC]))
        memory["writes"] = int(mem[K.MEM_WRITES])
        return {"levels": levels, "tlbs": tlbs, "memory": memory}
