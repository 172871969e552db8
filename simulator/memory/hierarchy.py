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

from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.memory import kernel as K
from whatif.simulator.memory import state as L
from whatif.simulator.memory.policies import PAGE_MAPPINGS, PREFETCHERS, REPLACEMENT, WALKS
from whatif.simulator.platform import Platform

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


def _depths(platform: Platform) -> dict[str, int]:
    """Each cache level's depth: 0 for a level nothing feeds (the L1s), else one more than the deepest
    level that feeds it."""
    caches = platform.caches
    depth: dict[str, int] = {}

    def d(name: str) -> int:
        if name not in depth:
            uppers = [u for u, c in caches.items() if c.next_level == name]
            depth[name] = 0 if not uppers else 1 + max(d(u) for u in uppers)
        return depth[name]

    return {name: d(name) for name in caches}


def _depth_order(platform: Platform) -> list[str]:
    """Cache level names ordered so that every level comes after all levels that feed it."""
    depth = _depths(platform)
    return sorted(depth, key=lambda n: (depth[n], list(depth).index(n)))


class MemoryHierarchy:
    """The caches, TLBs and page walker of one platform, with their state."""

    def __init__(self, platform: Platform, seed: int = 0):
        self.platform = platform
        self.seed = int(seed)
        self.level_names = _depth_order(platform)
        depth = _depths(platform)
        self.level_depths = [depth[name] for name in self.level_names]    # per level of level_names
        self._depth_count = max(self.level_depths) + 1
        # levels summed into their depth by one product
        self._depth_matrix = (np.arange(self._depth_count)[:, None] == np.array(self.level_depths)).astype(np.int64)
        self.tlb_names = list(platform.tlbs)
        self._time_words: list[tuple[int, int]] = []       # (state offset, words) of times: prefetch engines' busy
                                                            # until, lines' ready at (timed prefetch arrival)
        self._tlb_tags: list[tuple[int, int]] = []         # (state offset, words) of each TLB's tags
        self._cache_lines: list[tuple[int, int, int, int]] = []  # per cache: tag offset, words; metadata's
        self.state = self._build()
        self.simulation_seconds = 0.0
        self.accesses = 0
        self._trace_pc = 0              # the last instruction fetch of the trace run so far (run())

    # ------------------------------------------------------------------ construction
    def _build(self) -> L.MemState:
        """Lay the state out in one flat int64 array (see :mod:`simulator.memory.kernel` for the map)."""
        p = self.platform
        names = self.level_names
        index = {nm: i for i, nm in enumerate(names)}
        n = len(names)
        if n > L.MAX_LEVELS:
            raise SimulatorInputError(f"platform {p.name}: at most {L.MAX_LEVELS} cache levels are supported")
        tn = self.tlb_names
        m = len(tn)
        if m > L.MAX_TLBS:
            raise SimulatorInputError(f"platform {p.name}: at most {L.MAX_TLBS} TLBs are supported")
        C = np.zeros((L.MEMROW, L.NCOL), dtype=np.int64)
        G = np.zeros(L.NG, dtype=np.int64)
        top = L.P0 + n * L.IPT_SIZE * 4          # words allocated so far

        def region(words: int) -> int:
            """Allocate ``words`` words at a 64-byte aligned offset."""
            nonlocal top
            top = (top + 7) & ~7
            at = top
            top += words
            return at

        empty: list[tuple[int, int]] = []         # tag regions, filled with EMPTY below
        tables: list[tuple[int, list[int]]] = []  # PLRU touch tables, streamers' recency lists
        tops = {p.top_cache("instruction"), p.top_cache("data")}
        for i, name in enumerate(names):
            c = p.caches[name]
            sets = c.sets * c.slices
            slots = sets * c.associativity
            C[i, L.C_TAG0] = region(slots + 4)              # + spare words: tags compare four at a time
            empty.append((C[i, L.C_TAG0], slots + 4))
            C[i, L.C_META0] = region(slots * L.MW)
            self._cache_lines.append((int(C[i, L.C_TAG0]), slots + 4, int(C[i, L.C_META0]), slots * L.MW))
            C[i, L.C_BITS0] = region(sets)
            if c.replacement == "plru":
                C[i, L.C_PLRU0] = region(2 * c.associativity)
                tables.append((C[i, L.C_PLRU0], _plru_table(c.associativity)))
            C[i, L.C_NSETS] = c.sets
            C[i, L.C_WAYS] = c.associativity
            C[i, L.C_WAY_BITS] = int(math.log2(c.associativity)) if c.replacement == "plru" else 0
            C[i, L.C_LINE_BITS] = int(math.log2(c.line_bytes))
            C[i, L.C_SECTOR_BITS] = int(math.log2(c.sector_bytes or c.line_bytes))
            C[i, L.C_NSECT] = c.sectors
            C[i, L.C_POLICY] = REPLACEMENT[c.replacement]
            C[i, L.C_WRITE_BACK] = int(c.write_policy == "write_back")
            C[i, L.C_WRITE_ALLOC] = int(c.write_allocate)
            C[i, L.C_INCLUSIVE] = int(c.inclusion == "inclusive")
            C[i, L.C_NEXT] = -1 if c.next_level == "memory" else index[c.next_level]
            C[i, L.C_PF_KIND] = sum(1 << (PREFETCHERS[pf] - 1) for pf in set(c.prefetchers) if PREFETCHERS[pf])
            C[i, L.C_PF_DEGREE] = c.prefetch_degree
            C[i, L.C_SLICES] = c.slices
            C[i, L.C_LAT] = c.latency_cycles
            C[i, L.C_PF_ENGINES] = c.prefetch_engines
            if c.prefetch_engines:
                C[i, L.C_PF_BUSY0] = region(c.prefetch_engines)     # busy-until times, 0: free from the start
                self._time_words.append((int(C[i, L.C_PF_BUSY0]), c.prefetch_engines))
            if "streamer" in c.prefetchers:
                ns = c.streamer_streams
                C[i, L.C_ST0] = region(ns * L.ST_WORDS + L.ST_ENDS)
                # the recency list in index order, entry 0 least recently used (an end's outer link: unused)
                links = [0] * (ns * L.ST_WORDS + L.ST_ENDS)
                for k in range(ns):
                    links[L.ST_OLDER * ns + k] = max(k - 1, 0)
                    links[L.ST_NEWER * ns + k] = min(k + 1, ns - 1)
                links[L.ST_WORDS * ns + L.ST_LRU] = 0
                links[L.ST_WORDS * ns + L.ST_MRU] = ns - 1
                tables.append((C[i, L.C_ST0], links))
                C[i, L.C_ST_N] = ns
                C[i, L.C_ST_DIST] = c.streamer_distance
            if p.memory.prefetch_arrival == "latency" and name not in tops:
                # when each line of a level below the L1s is ready: a prefetch is still bringing it in until then
                G[L.G_READY0 + i] = region(slots)
                self._time_words.append((int(G[L.G_READY0 + i]), slots))
            # every level above this one (transitively), for back-invalidation by inclusive levels
            ups: list[int] = []
            frontier = [name]
            while frontier:
                cur = frontier.pop()
                for u, cu in p.caches.items():
                    if cu.next_level == cur and index[u] not in ups:
                        ups.append(index[u])
                        frontier.append(u)
            C[i, L.C_ABOVE:L.C_ABOVE + L.MAX_LEVELS] = -1
            C[i, L.C_ABOVE:L.C_ABOVE + len(ups)] = sorted(ups)
        tindex = {t: i for i, t in enumerate(tn)}
        for i, t in enumerate(tn):
            spec = p.tlbs[t]
            row = L.TROW0 + i
            sets = spec.entries // spec.associativity
            C[row, L.T_TAG0] = region(spec.entries + 4)
            empty.append((C[row, L.T_TAG0], spec.entries + 4))
            self._tlb_tags.append((int(C[row, L.T_TAG0]), spec.entries + 4))
            C[row, L.T_STAMP0] = region(spec.entries)
            C[row, L.T_BITS0] = region(sets)
            if spec.replacement == "plru":
                C[row, L.T_PLRU0] = region(2 * spec.associativity)
                tables.append((C[row, L.T_PLRU0], _plru_table(spec.associativity)))
            C[row, L.T_NSETS] = sets
            C[row, L.T_WAYS] = spec.associativity
            C[row, L.T_POLICY] = REPLACEMENT[spec.replacement]
            C[row, L.T_WAY_BITS] = int(math.log2(spec.associativity)) if spec.replacement == "plru" else 0
            C[row, L.T_LAT] = spec.latency_cycles

        G[L.G_L1I] = index[p.top_cache("instruction")]
        G[L.G_L1D] = index[p.top_cache("data")]
        ichain = [tindex[t] for t in p.tlb_chain("instruction")] + [-1, -1]
        dchain = [tindex[t] for t in p.tlb_chain("data")] + [-1, -1]
        G[L.G_ITLB0], G[L.G_ITLB1] = ichain[0], ichain[1]
        G[L.G_DTLB0], G[L.G_DTLB1] = dchain[0], dchain[1]
        G[L.G_PAGE_BITS] = int(math.log2(p.memory.page_kb * 1024))
        G[L.G_IPAGE_BITS] = int(math.log2(p.memory.code_page_kb * 1024))
        G[L.G_IWALK_LEVELS] = p.walk_levels("instruction")
        w = p.page_walk
        G[L.G_WALK_KIND] = WALKS[w.kind]
        G[L.G_WALK_LEVELS] = p.walk_levels()
        G[L.G_WALK_BITS] = w.bits_per_level
        G[L.G_WALK_LEVEL] = index[w.cache_level]
        G[L.G_WALK_CACHED] = min(w.cached_levels, p.walk_levels() - 1)
        G[L.G_WALK_POLLUTE] = int(w.pollute)
        G[L.G_HTAB_PTEGS] = w.htab_kb * 1024 // 64
        G[L.G_PTE_BYTES] = w.pte_bytes
        G[L.G_MAPPING] = PAGE_MAPPINGS[p.memory.page_mapping]
        rng = np.random.default_rng(self.seed)
        G[L.G_SALT] = int(rng.integers(0, 2**62))
        G[L.G_RNG] = int(rng.integers(1, 2**62))
        G[L.G_NLEVELS] = n
        G[L.G_NTLBS] = m
        G[L.G_MEM_LAT] = p.memory.latency_cycles
        G[L.G_IP_STRIDE] = int(any(C[i, L.C_PF_KIND] & L.PF_IP_STRIDE for i in range(n)))
        G[L.G_PF_TIMED] = int(p.memory.prefetch_arrival == "latency")
        if p.memory.queueing == "bandwidth":
            # channel time of a byte: clock_ghz cycles per ns over bandwidth_gb_s bytes per ns
            # (rounded up: the channel is never faster than its bandwidth)
            G[L.G_CH_UNITS] = math.ceil(p.clock_ghz / p.memory.bandwidth_gb_s * (1 << L.CH_FRAC))
            G[L.G_CH_RING] = region(2 * L.CH_BUCKETS)
        top = (top + 7) & ~7
        G[L.G_SIZE] = top

        # one 64-byte aligned buffer (the view keeps its base alive)
        raw = np.zeros(top + 8, dtype=np.int64)
        off = (-raw.ctypes.data % 64) // 8
        S = raw[off:off + top]
        S[:L.NG] = G
        S[L.C0:L.N0] = C.ravel()
        for at, words in empty:
            S[at:at + words] = -1             # EMPTY tags
        for at, table in tables:
            S[at:at + len(table)] = table
        return L.MemState(S=S)

    # ------------------------------------------------------------------ running
    def flush_tlbs(self) -> None:
        """Invalidate every TLB entry (an address-space switch without tagged TLBs, or exec's new
        address space): the next translation of every page misses."""
        S = self.state.S
        for at, words in self._tlb_tags:
            S[at:at + words] = -1

    def flush_caches(self, depth: int | None = None, tlbs: bool = True) -> None:
        """Invalidate every line of every cache of ``depth`` or less (None: every cache; 0: the L1s; see
        :attr:`level_depths`) and, with ``tlbs``, every TLB entry; dirty data dropped (no writeback
        traffic): the cold start of a cold-cache measurement, or, flushed to a depth, one whose data
        come from the next level."""
        S = self.state.S
        for (at, words, meta_at, meta_words), d in zip(self._cache_lines, self.level_depths):
            if depth is None or d <= depth:
                S[at:at + words] = -1
                S[meta_at:meta_at + meta_words] = 0
        if tlbs:
            self.flush_tlbs()

    def l1_stand_ins(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Empty stand-ins of the L1I, the L1D and their first-level TLBs for cache warming
        (:func:`simulator.core.warming.warm_caches`): direct-mapped arrays of line (page) numbers, each as many
        entries as its structure holds lines (pages), rounded down to a power of two (one entry when it is
        absent)."""
        S = self.state.S
        G = L.views(S).G

        def entries(row: int, sets: int, ways: int) -> int:
            n = int(S[L.C0 + row * L.NCOL + sets] * S[L.C0 + row * L.NCOL + ways]) if row >= 0 else 1
            return 1 << (max(n, 1).bit_length() - 1)

        def stand_in(n: int) -> np.ndarray:
            return np.full(n, -1, np.int64).view(np.uint64)            # (never a line or page number)

        tlb = [int(G[g]) for g in (L.G_ITLB0, L.G_DTLB0)]
        return (stand_in(entries(int(G[L.G_L1I]), L.C_NSETS, L.C_WAYS)),
                stand_in(entries(int(G[L.G_L1D]), L.C_NSETS, L.C_WAYS)),
                *(stand_in(entries(L.TROW0 + t if t >= 0 else -1, L.T_NSETS, L.T_WAYS)) for t in tlb))

    def memory_demand_reads(self) -> int:
        """Lines read from memory on demand so far (instruction fetches, loads, stores, page walks; not
        prefetches): the misses a cache simulation counts against the last level."""
        mem = L.views(self.state.S).N[L.MEMROW]
        return int(sum(int(mem[s]) for s in (L.SRC_IFETCH, L.SRC_LOAD, L.SRC_STORE, L.SRC_WALK)))

    def counter_snapshot(self) -> np.ndarray:
        """A copy of every raw counter of the hierarchy (a flat array): the cheap snapshot to take around a
        piece of work; :meth:`lines_in` reads the difference of two."""
        return self.state.S[L.N0:L.P0].copy()

    def lines_in(self, counters: np.ndarray | None = None) -> np.ndarray:
        """Lines brought into the caches of each depth from deeper levels or memory so far -- demand misses
        (instruction fetches, loads, stores, page walks) and prefetches issued at a level of that depth
        (element d sums the levels of depth d: ``L2_LINES_IN`` for the L2) -- and, last, the page walks of
        every TLB: the traffic each level of the hierarchy carried, what a cache simulation counts level
        by level.  (Demand misses alone would miss what streams in through the prefetchers: once
        prefetches take time, a stream costs its lines whether or not a demand finds them missing.)
        With ``counters`` (:meth:`counter_snapshot`, or a difference of two): the lines they count."""
        N = L.views(self.state.S).N if counters is None else counters.reshape(L.NROWS, L.NCOL)
        nl, nt = len(self.level_names), len(self.tlb_names)
        per_level = N[:nl, L.CN_MISS + L.SRC_IFETCH:L.CN_MISS + L.SRC_WALK + 1].sum(axis=1) + N[:nl, L.CN_PF_ISSUED]
        return np.append(self._depth_matrix @ per_level, N[L.TROW0:L.TROW0 + nt, L.TN_WALKS].sum())

    def lines_in_names(self) -> list[str]:
        """Names of the elements of :meth:`lines_in`: each depth's levels joined by '+' (``L1I+L1D``, ``L2``,
        ...), then ``walks``."""
        depths = range(self._depth_count)
        return ["+".join(n for n, d in zip(self.level_names, self.level_depths) if d == k) for k in depths] + ["walks"]

    def run(self, addrs: np.ndarray, sizes: np.ndarray, kinds: np.ndarray,
            progress: Callable[[int], None] | None = None, chunk: int = 1 << 22,
            cycles_per_record: int | None = None, timed: bool = False) -> "MemoryHierarchy":
        """Run trace arrays (uint64 addresses, sizes, kinds 0=I 1=L 2=S 3=M) through the hierarchy.

        Time, for the prefetch engines: a trace carries none, so the k-th record run through this
        hierarchy (counting earlier calls: each call continues the last one's timeline) is at cycle
        k x ``cycles_per_record``.  The default spaces
        records by the memory latency, as a blocking in-order core that waits for each access would at
        worst: an engine taken by one record is free by the next, so only prefetches beyond the engines
        within one record are dropped (the core model gives real cycles instead).  ``1`` packs one
        record per cycle.  ``progress(n)`` is called with the number of records done after each chunk.

        That made-up clock serves the prefetch engines only: unless ``timed``, the memory channel does not
        queue the trace's transfers and prefetched lines are ready at once, whatever ``memory.queueing`` and
        ``memory.prefetch_arrival`` say (on the records' clock their waits would be artefacts; neither
        changes a hit or a miss).  ``timed=True`` applies both on the record clock."""
        spacing = self.platform.memory.latency_cycles if cycles_per_record is None else int(cycles_per_record)
        if spacing < 1:
            raise SimulatorInputError(f"cycles_per_record must be >= 1, got {cycles_per_record}")
        addrs = np.ascontiguousarray(addrs, dtype=np.uint64)
        sizes = np.ascontiguousarray(sizes, dtype=np.uint16)
        kinds = np.ascontiguousarray(kinds, dtype=np.uint8)
        total = len(addrs)
        # an empty first call loads (or compiles) the kernel outside the timed region
        K.run_trace(*self.state, addrs, sizes, kinds, 0, 0, 0, 1, 0)
        S = self.state.S
        clocked = [L.G_CH_UNITS, L.G_PF_TIMED, *range(L.G_READY0, L.G_READY0 + L.MAX_LEVELS)]
        saved = S[clocked].copy()
        if not timed:
            S[clocked] = 0
        t0 = time.perf_counter()
        try:
            for start in range(0, total, chunk):
                stop = min(total, start + chunk)
                # (the PC carries over chunks and calls: a data access at a chunk's start belongs to the
                # instruction fetched at the end of the one before, which trains the IP prefetcher)
                self._trace_pc = K.run_trace(*self.state, addrs, sizes, kinds, start, stop, 0, spacing,
                                             self._trace_pc)
                if progress is not None:
                    progress(stop - start)
        finally:
            S[clocked] = saved
        self.simulation_seconds += time.perf_counter() - t0
        self.accesses += total
        # this call's clock ran from 0 to total x spacing: express the busy-until and ready times from the
        # call's end, so a further trace call (its clock from 0 again) continues the same timeline and a
        # core that runs next (its own cycles) finds them busy only for what is left
        end = total * spacing
        for at, n in self._time_words:
            words = self.state.S[at:at + n]
            np.maximum(words - end, 0, out=words)
        return self

    def lookup_rows(self) -> list[np.ndarray]:
        """The state words an access looks up together, as tables with a row per group: per cache level, its
        sets (the ways' tags and metadata, the set's bits word and, with timed prefetch arrival, the ways' ready
        times); and the memory channel's calendar buckets (bucket number, time taken).  An access that looks a
        row up nearly always writes a word of it (a hit its way's stamp or the set's PLRU bits, a miss its
        victim's tag, a booking its bucket), which is how live-points (:mod:`simulator.livepoints`) tell the
        rows a unit's run read, and verify the exceptions."""
        S = self.state.S
        C = S[L.C0:L.N0].reshape(-1, L.NCOL)
        rows = []
        for i, name in enumerate(self.level_names):
            c = self.platform.caches[name]
            ways, s = c.associativity, np.arange(c.sets * c.slices)[:, None]
            cols = [C[i, L.C_TAG0] + s * ways + np.arange(ways), C[i, L.C_META0] + s * (ways * L.MW) +
                    np.arange(ways * L.MW), C[i, L.C_BITS0] + s]
            if S[L.G_READY0 + i]:
                cols.append(S[L.G_READY0 + i] + s * ways + np.arange(ways))
            rows.append(np.concatenate(cols, axis=1))
        if S[L.G_CH_UNITS]:
            rows.append(S[L.G_CH_RING] + np.arange(2 * L.CH_BUCKETS).reshape(-1, 2))
        return rows

    def ready_words(self) -> np.ndarray:
        """The positions of the lines' ready times in the state (timed prefetch arrival): a line is ready when
        its word is at or before the present, so every word in the past reads the same (``caches.ready_wait``)."""
        S = self.state.S
        return np.concatenate([np.zeros(0, np.int64)] + [
            S[L.G_READY0 + i] + np.arange(c.sets * c.slices * c.associativity)
            for i, c in enumerate(self.platform.caches[name] for name in self.level_names) if S[L.G_READY0 + i]])

    def time_dependent_words(self) -> np.ndarray:
        """A mask of the state words whose values depend on time, not only on the sequence of accesses: the
        prefetch engines' busy-until times, the lines' ready times, the memory channel's calendar and its last
        wait, and the late-prefetch counters (what functional warming, which has no cycles, only approximates)."""
        S = self.state.S
        mask = np.zeros(len(S), dtype=bool)
        for at, words in self._time_words:
            mask[at:at + words] = True
        if S[L.G_CH_UNITS]:
            mask[S[L.G_CH_RING]:S[L.G_CH_RING] + 2 * L.CH_BUCKETS] = True
            mask[[L.G_CH_RUN_LO, L.G_CH_RUN_HI]] = True
        mask[L.G_CH_DELAY] = True
        for i in range(len(self.level_names)):
            mask[L.N0 + i * L.NCOL + L.CN_PF_LATE] = True
        return mask

    # ------------------------------------------------------------------ results
    def counters(self) -> dict:
        """Counters per cache level, per TLB and for memory, keyed by the platform file's names."""
        return self.counter_doc(L.views(self.state.S).N, int)

    def counter_words(self) -> np.ndarray:
        """A copy of the counter rows, flat: every counter of :meth:`counters` but the miss ratios is a sum
        of these words, so :meth:`counter_doc` of the difference of two copies is the counters' difference."""
        return self.state.S[L.N0:L.P0].copy()

    def counter_doc(self, N, value=int) -> dict:
        """:meth:`counters` of counter rows ``N`` (``views().N``, or a stack of :meth:`counter_words`
        reshaped to ``(NROWS, NCOL, samples)``, whose every counter is then a column over the samples);
        ``value`` converts each count (``int`` for one state, ``np.asarray`` for columns)."""
        columns = value is not int
        levels = {}
        demand = [L.SRC_IFETCH, L.SRC_LOAD, L.SRC_STORE, L.SRC_WALK]
        for i, name in enumerate(self.level_names):
            c = N[i]
            acc = value(sum(c[L.CN_ACC + s] for s in demand))
            miss = value(sum(c[L.CN_MISS + s] for s in demand))
            if columns:
                ratio = np.divide(miss, acc, out=np.zeros(np.shape(acc)), where=acc != 0)
            else:
                ratio = (miss / acc) if acc else 0.0
            row = {"accesses": acc, "hits": acc - miss, "misses": miss, "miss_ratio": ratio}
            for s in demand:
                row[f"{SRC_NAMES[s]}_accesses"] = value(c[L.CN_ACC + s])
                row[f"{SRC_NAMES[s]}_misses"] = value(c[L.CN_MISS + s])
            row["data_accesses"] = row["load_accesses"] + row["store_accesses"]
            row["data_misses"] = row["load_misses"] + row["store_misses"]
            row["sector_misses"] = value(c[L.CN_SECTOR_MISS])
            row["straddling_accesses"] = value(c[L.CN_STRADDLE])
            row["evictions"] = value(c[L.CN_EVICTIONS])
            row["writebacks"] = value(c[L.CN_WRITEBACKS])
            row["writebacks_received"] = value(c[L.CN_ACC + L.SRC_WRITEBACK])
            row["back_invalidations"] = value(c[L.CN_BACK_INVAL])
            row["prefetches_issued"] = value(c[L.CN_PF_ISSUED])
            row["prefetches_useful"] = value(c[L.CN_PF_USEFUL])
            row["prefetches_dropped"] = value(c[L.CN_PF_DROPPED])
            row["late_prefetches"] = value(c[L.CN_PF_LATE])
            row["prefetch_requests_received"] = value(c[L.CN_ACC + L.SRC_PREFETCH])
            row["prefetch_requests_missed"] = value(c[L.CN_MISS + L.SRC_PREFETCH])
            levels[name] = row
        tlbs = {}
        for i, name in enumerate(self.tlb_names):
            c = N[L.TROW0 + i]
            tlbs[name] = {"accesses": value(c[L.TN_ACC]), "misses": value(c[L.TN_MISS]),
                          "hits": value(c[L.TN_ACC] - c[L.TN_MISS]), "walks": value(c[L.TN_WALKS]),
                          "walk_memory_accesses": value(c[L.TN_WALK_ACC]),
                          "walk_accesses_to_memory": value(c[L.TN_WALK_MEM])}
        mem = N[L.MEMROW]
        memory = {f"{SRC_NAMES[s]}_reads": value(mem[s]) for s in range(L.NSRC) if s != L.SRC_WRITEBACK}
        memory["reads"] = value(sum(mem[s] for s in range(L.NSRC)))
        memory["writes"] = value(mem[L.MEM_WRITES])
        return {"levels": levels, "tlbs": tlbs, "memory": memory}

    def channel_busy_until(self) -> int:
        """The cycle the memory channel's last booked transfer ends (0 without bookings or queueing)."""
        S = self.state.S
        if S[L.G_CH_UNITS] == 0:
            return 0
        ring = S[S[L.G_CH_RING]:S[L.G_CH_RING] + 2 * L.CH_BUCKETS].reshape(-1, 2)
        busy = ring[ring[:, 1] > 0]
        if not len(busy):
            return 0
        return int(((busy[:, 0] << L.CH_BUCKET_BITS) + -(-busy[:, 1] >> L.CH_FRAC)).max())

    def channel_bytes(self) -> int:
        """Bytes the memory channel has carried (reads and writes; counted with ``memory.queueing =
        "bandwidth"``, 0 otherwise)."""
        return int(self.state.S[L.G_CH_BYTES])
