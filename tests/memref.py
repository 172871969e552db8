"""A slow, obviously-correct reference memory hierarchy, written from the documented semantics.

It shares nothing with the numba kernel but the platform description: caches are
lists of sets, sets are lists of ``Line`` objects, LRU order is list order, the
tree PLRU is an explicit list of node bits, prefetch engines a list of busy-until
cycles (trace record k is cycle k).  The tests run both on the same traces and
demand identical counters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

MASK64 = (1 << 64) - 1
SRC = ("instr", "load", "store", "walk", "prefetch", "writeback")
IFETCH, LOAD, STORE, WALK, PREFETCH, WRITEBACK = range(6)
PT_BASE = 0xF000000000000000
HTAB_BASE = 0xE000000000000000
IPT_SIZE = 256
IP_STRIDE_MAX_BYTES = 2048     # the longest stride the IP prefetcher follows


def mix64(x: int) -> int:
    x &= MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


class XorShift:
    def __init__(self, state: int):
        self.state = state & MASK64

    def next(self) -> int:
        x = self.state
        x ^= x >> 12
        x ^= (x << 25) & MASK64
        x ^= x >> 27
        self.state = x
        return (x * 0x2545F4914F6CDD1D) & MASK64


@dataclass
class Line:
    tag: int
    valid: int = 0        # sector bit mask
    dirty: int = 0
    pref: int = 0
    ready: int = 0        # timed prefetch arrival, below the L1s: the cycle the line arrives


class PLRUTree:
    def __init__(self, ways: int):
        self.bits = [0] * ways          # node 1..ways-1 used
        self.levels = int(math.log2(ways))

    def touch(self, way: int) -> None:
        node = 1
        for level in range(self.levels):
            d = (way >> (self.levels - 1 - level)) & 1
            self.bits[node] = 1 - d      # point away from the touched half
            node = 2 * node + d

    def victim(self) -> int:
        node, w = 1, 0
        for _ in range(self.levels):
            d = self.bits[node]
            w = (w << 1) | d
            node = 2 * node + d
        return w


class CacheSet:
    """Ways in a fixed array (way index matters for PLRU) plus a recency list for LRU/FIFO."""

    def __init__(self, ways: int, policy: str):
        self.ways: list[Line | None] = [None] * ways
        self.order: list[int] = []       # way indices, least recent (or oldest) first
        self.policy = policy
        self.tree = PLRUTree(ways) if policy == "plru" else None

    def find(self, tag: int) -> int:
        for w, line in enumerate(self.ways):
            if line is not None and line.tag == tag:
                return w
        return -1

    def touch(self, w: int) -> None:
        if self.policy == "lru":
            self.order.remove(w)
            self.order.append(w)
        elif self.policy == "plru":
            self.tree.touch(w)

    def victim(self, rng: XorShift) -> int:
        for w, line in enumerate(self.ways):
            if line is None:
                return w
        if self.policy in ("lru", "fifo"):
            return self.order[0]
        if self.policy == "plru":
            return self.tree.victim()
        return rng.next() % len(self.ways)

    def install(self, w: int, line: Line) -> None:
        self.ways[w] = line
        if w in self.order:
            self.order.remove(w)
        self.order.append(w)
        if self.policy == "plru":
            self.tree.touch(w)

    def remove(self, w: int) -> None:
        self.ways[w] = None
        if w in self.order:
            self.order.remove(w)


@dataclass
class Counters:
    acc: list = field(default_factory=lambda: [0] * 6)
    miss: list = field(default_factory=lambda: [0] * 6)
    writebacks: int = 0
    pf_issued: int = 0
    pf_useful: int = 0
    pf_dropped: int = 0
    pf_late: int = 0
    back_inval: int = 0
    sector_miss: int = 0
    evictions: int = 0
    straddle: int = 0


class RefCache:
    def __init__(self, name, spec, rng):
        self.name = name
        self.spec = spec
        self.line_bytes = spec.line_bytes
        self.sector_bytes = spec.sector_bytes or spec.line_bytes
        self.nsect = spec.line_bytes // self.sector_bytes
        self.nsets = spec.sets
        self.slices = spec.slices
        self.sets = [CacheSet(spec.associativity, spec.replacement) for _ in range(self.nsets * self.slices)]
        self.write_back = spec.write_policy == "write_back"
        self.write_allocate = spec.write_allocate
        self.inclusive = spec.inclusion == "inclusive"
        self.prefetchers = set(spec.prefetchers)
        self.degree = spec.prefetch_degree
        self.engines = [0] * spec.prefetch_engines     # busy-until time per prefetch engine ([]: unlimited)
        self.next: RefCache | None = None
        self.above: list[RefCache] = []
        self.c = Counters()
        self.rng = rng
        self.ipt = {}
        self.streamer = "streamer" in self.prefetchers
        self.streams: list[list[int]] = [[0, 0, 0, 0, 0] for _ in range(spec.streamer_streams)]
        self.stream_distance = spec.streamer_distance
        self.timed = False             # lines below the L1s arrive late when a prefetch brings them (set by the hierarchy)

    def line_of(self, addr): return addr // self.line_bytes

    def set_of(self, line):
        s = line % self.nsets
        if self.slices > 1:
            s += self.nsets * (mix64(line) % self.slices)
        return self.sets[s]

    def sector_mask(self, addr, nbytes):
        if self.nsect == 1:
            return 1
        first = (addr // self.sector_bytes) % self.nsect
        last = ((addr + nbytes - 1) // self.sector_bytes) % self.nsect
        return sum(1 << s for s in range(first, last + 1))

    @property
    def full(self): return (1 << self.nsect) - 1


class RefHierarchy:
    """The reference: same public counters as simulator.memory.hierarchy.MemoryHierarchy."""

    def __init__(self, platform, seed: int = 0):
        import numpy as np

        self.p = platform
        rng = np.random.default_rng(seed)
        self.salt = int(rng.integers(0, 2**62))
        self.rng = XorShift(int(rng.integers(1, 2**62)))
        self.caches = {n: RefCache(n, c, self.rng) for n, c in platform.caches.items()}
        for n, c in self.caches.items():
            nxt = platform.caches[n].next_level
            c.next = None if nxt == "memory" else self.caches[nxt]
        for n, c in self.caches.items():
            c.above = self._above(n)
        self.l1i = self.caches[platform.top_cache("instruction")]
        self.l1d = self.caches[platform.top_cache("data")]
        # the memory channel (memory.queueing = "bandwidth"): channel time per byte in 2**-16 cycles, and per
        # 64-cycle bucket the channel time booked in it
        self.ch_units = (math.ceil(platform.clock_ghz / platform.memory.bandwidth_gb_s * (1 << 16))
                         if platform.memory.queueing == "bandwidth" else 0)
        self.ch_used: dict[int, int] = {}
        self.timed = platform.memory.prefetch_arrival == "latency"
        for c in self.caches.values():
            c.timed = self.timed and c is not self.l1i and c is not self.l1d
        self.clocked = True            # the channel and prefetch arrival run on the clock (run(): only if timed)
        self.stream_notes: list[tuple[RefCache, int]] = []
        self.stream_clock = 0
        self.tlbs = {n: {"spec": t, "sets": [CacheSet(t.associativity, t.replacement)
                                             for _ in range(t.entries // t.associativity)],
                         "acc": 0, "miss": 0, "walks": 0, "walk_acc": 0, "walk_mem": 0}
                     for n, t in platform.tlbs.items()}
        self.ichain = platform.tlb_chain("instruction")
        self.dchain = platform.tlb_chain("data")
        self.page_bytes = {"data": platform.memory.page_kb * 1024,
                           "instruction": platform.memory.code_page_kb * 1024}
        self.mem = {s: 0 for s in range(6)}
        self.mem_writes = 0
        self.missed: list[tuple[RefCache, int]] = []
        self.now = 0                   # the current cycle: the trace record's index

    def channel(self, nbytes: int) -> int:
        """Book a transfer at the current time: the first bucket from now's with room takes what fits, the rest
        spills into the next ones; returns the wait from now to where that bucket's earlier bookings end."""
        if not (self.ch_units and self.clocked):
            return 0
        cap, left, b, start = 1 << 22, nbytes * self.ch_units, self.now >> 6, None
        while left:
            free = cap - self.ch_used.get(b, 0)
            if free > 0:
                if start is None:
                    start = (b << 6) + (self.ch_used.get(b, 0) >> 16)
                take = min(free, left)
                self.ch_used[b] = self.ch_used.get(b, 0) + take
                left -= take
            b += 1
        return max(0, start - self.now)

    def latency(self, served: str) -> int:
        return self.p.memory.latency_cycles if served == "memory" else self.p.caches[served].latency_cycles

    def _above(self, name):
        out, frontier = [], [name]
        while frontier:
            cur = frontier.pop()
            for n, spec in self.p.caches.items():
                if spec.next_level == cur and self.caches[n] not in out:
                    out.append(self.caches[n])
                    frontier.append(n)
        return out

    # ------------------------------------------------------------------ caches
    def install(self, c: RefCache, line: int, valid: int, dirty: int, pref: int):
        """Install into c; returns (victim address, bytes) of a needed writeback or None."""
        cset = c.set_of(line)
        w = cset.victim(self.rng)
        wb = None
        old = cset.ways[w]
        if old is not None:
            c.c.evictions += 1
            cset.remove(w)
            victim_dirty = old.dirty != 0
            if c.inclusive:
                base = old.tag * c.line_bytes
                for u in c.above:
                    a = base
                    while a < base + c.line_bytes:
                        uline = u.line_of(a)
                        us = u.set_of(uline)
                        uw = us.find(uline)
                        if uw >= 0:
                            if us.ways[uw].dirty:
                                victim_dirty = True
                            us.remove(uw)
                            c.c.back_inval += 1
                        a += u.line_bytes
            if victim_dirty:
                c.c.writebacks += 1
                wb = (old.tag * c.line_bytes, c.line_bytes)
        cset.install(w, Line(line, valid, dirty, pref))
        return wb

    def writeback(self, c: RefCache | None, addr: int, nbytes: int):
        while nbytes > 0:
            if c is None:
                self.mem_writes += 1
                self.channel(nbytes)
                return
            c.c.acc[WRITEBACK] += 1
            line = c.line_of(addr)
            cset = c.set_of(line)
            mask = c.sector_mask(addr, nbytes)
            w = cset.find(line)
            if not c.write_back:
                if w >= 0:
                    cset.ways[w].valid |= mask
                c = c.next
                continue
            if w >= 0:
                cset.ways[w].valid |= mask
                cset.ways[w].dirty |= mask
                return
            c.c.miss[WRITEBACK] += 1
            nxt = c.next
            if not c.write_allocate:
                c = nxt
                continue
            valid = mask if (c.nsect > 1 and nbytes < c.line_bytes) else c.full
            wb = self.install(c, line, valid, valid, 0)
            if wb is None:
                return
            addr, nbytes = wb
            c = nxt

    def fill(self, c: RefCache, line: int, mask: int, src: int, pref_mask: int, record: bool) -> str:
        """Miss of ``mask`` sectors of ``line`` at c: look down, then install bottom-up."""
        path = [(c, line, mask)]
        if record:
            self.missed = [(c, line)]
        cset = c.set_of(line)
        w = cset.find(line)
        missing = mask if w < 0 else mask & ~cset.ways[w].valid
        first = (missing & -missing).bit_length() - 1
        last = missing.bit_length() - 1
        req_addr = line * c.line_bytes + first * c.sector_bytes
        req_bytes = (last - first + 1) * c.sector_bytes
        cur = c.next
        served = "memory"
        extra = 0
        while cur is not None:
            cl = cur.line_of(req_addr)
            cs = cur.set_of(cl)
            cm = cur.sector_mask(req_addr, req_bytes)
            cur.c.acc[src] += 1
            if cur.streamer and src not in (WALK, WRITEBACK) and len(self.stream_notes) < 8:
                self.stream_notes.append((cur, cl))
            cw = cs.find(cl)
            if cw >= 0 and (cs.ways[cw].valid & cm) == cm:
                cs.touch(cw)
                if cs.ways[cw].pref & cm:
                    self.prefetched_hit(cur, cs.ways[cw], cm, cl, record)
                extra += self.ready_wait(cur, cs.ways[cw], src)
                served = cur.name
                break
            cur.c.miss[src] += 1
            if cw >= 0:
                cur.c.sector_miss += 1
            path.append((cur, cl, cm))
            if record:
                self.missed.append((cur, cl))
            missing = cm if cw < 0 else cm & ~cs.ways[cw].valid
            first = (missing & -missing).bit_length() - 1
            last = missing.bit_length() - 1
            req_addr = cl * cur.line_bytes + first * cur.sector_bytes
            req_bytes = (last - first + 1) * cur.sector_bytes
            cur = cur.next
        if served == "memory":
            self.mem[src] += 1
            extra += self.channel(req_bytes)
        self.fill_wait = extra
        arrive = self.now + extra + self.latency(served) if pref_mask and self.timed and self.clocked else 0
        result = None
        for depth in range(len(path) - 1, -1, -1):
            lc, ll, lm = path[depth]
            pm = pref_mask if depth == 0 else 0
            ls = lc.set_of(ll)
            lw = ls.find(ll)
            if lw >= 0:
                ln = ls.ways[lw]
                ln.pref |= pm & ~ln.valid
                ln.valid |= lm
                ls.touch(lw)
                result = ln
            else:
                wb = self.install(lc, ll, lm, 0, pm)
                result = ls.ways[ls.find(ll)]
                if wb is not None:
                    self.writeback(lc.next, *wb)
            if arrive and lc.timed:
                result.ready = arrive - lc.spec.latency_cycles
        self.filled = result
        return served

    def request(self, c: RefCache, addr: int, nbytes: int, src: int, write: bool, count: bool,
                record: bool) -> str:
        served = "memory"
        if record:
            self.missed = []
        first = True
        while c is not None:
            line = c.line_of(addr)
            cset = c.set_of(line)
            mask = c.sector_mask(addr, nbytes)
            do_count = count or not first
            if do_count:
                c.c.acc[src] += 1
            w = cset.find(line)
            if w >= 0 and (cset.ways[w].valid & mask) == mask:
                ln = cset.ways[w]
                cset.touch(w)
                if ln.pref & mask:
                    self.prefetched_hit(c, ln, mask, line, record and first)
                self.ready_wait(c, ln, src)
                if first:
                    served = c.name
                if not write:
                    return served
                if c.write_back:
                    ln.dirty |= mask
                    return served
            else:
                if do_count:
                    c.c.miss[src] += 1
                    if w >= 0:
                        c.c.sector_miss += 1
                if not (write and not c.write_allocate):
                    r = self.fill(c, line, mask, src, 0, record and first)
                    if first:
                        served = r
                    if not write:
                        return served
                    if c.write_back:
                        self.filled.dirty |= mask
                        return served
            first = False
            c = c.next
        self.mem_writes += 1
        self.channel(nbytes)
        return served

    def prefetch_line(self, c: RefCache, line: int, mask: int):
        cset = c.set_of(line)
        w = cset.find(line)
        if w >= 0:
            mask &= ~cset.ways[w].valid
            if mask == 0:
                return
        if not c.engines:
            c.c.pf_issued += 1
            self.fill(c, line, mask, PREFETCH, mask, False)
            return
        k = min(range(len(c.engines)), key=lambda j: (c.engines[j], j))    # frees first
        if c.engines[k] > self.now:
            c.c.pf_dropped += 1                        # every engine busy: dropped
            return
        c.c.pf_issued += 1
        served = self.fill(c, line, mask, PREFETCH, mask, False)
        c.engines[k] = self.now + self.fill_wait + self.latency(served)

    def ready_wait(self, c: RefCache, ln: Line, src: int) -> int:
        """A hit on a line a prefetch is still bringing in waits for the rest; a demand counts it late."""
        left = ln.ready - self.now if c.timed and self.clocked else 0
        if left <= 0:
            return 0
        if src != PREFETCH:
            c.c.pf_late += 1
        return left

    def train_streamer(self, c: RefCache, line: int):
        """Per 4 KB region: two steps one way confirm a stream, which then prefetches up to two lines a
        request, at most the distance ahead, within the region, never behind the request."""
        per = 4096 // c.line_bytes
        key, within = line // per + 1, line % per
        self.stream_clock += 1
        ent = next((e for e in c.streams if e[0] == key), None)
        if ent is None:
            victim = min(c.streams, key=lambda e: e[4])          # (the first of equal stamps; empty: 0)
            victim[:] = [key, within, 0, 0, self.stream_clock]
            return
        ent[4] = self.stream_clock
        step = within - ent[1]
        if step == 0:
            return
        d = 1 if step > 0 else -1
        ent[1] = within
        if ent[2] != d:
            ent[2], ent[3] = d, within + d
            return
        nxt = ent[3]
        if (nxt - within) * d <= 0:
            nxt = within + d
        for _ in range(2):
            if not (0 <= nxt < per) or (nxt - within) * d > c.stream_distance:
                break
            self.prefetch_line(c, (key - 1) * per + nxt, c.full)
            nxt += d
        ent[3] = nxt

    def run_streamers(self):
        i = 0
        while i < len(self.stream_notes):
            self.train_streamer(*self.stream_notes[i])
            i += 1
        self.stream_notes = []

    def prefetched_hit(self, c: RefCache, ln, mask: int, line: int, record: bool):
        """A demand hit on prefetched sectors: useful once; a tagged prefetcher fetches on as on a miss."""
        c.c.pf_useful += 1
        ln.pref &= ~mask
        if record and "tagged_next_line" in c.prefetchers:
            self.missed.append((c, line))

    def prefetch_after_demand(self, page: int):
        todo, self.missed = self.missed, []
        for c, line in todo:
            if not (c.prefetchers & {"next_line", "tagged_next_line", "adjacent_sector", "adjacent_line"}):
                continue
            page_lines = max(1, page // c.line_bytes)
            if "adjacent_sector" in c.prefetchers:
                self.prefetch_line(c, line, c.full)
            if "adjacent_line" in c.prefetchers and page_lines > 1:
                self.prefetch_line(c, line ^ 1, c.full)
            if c.prefetchers & {"next_line", "tagged_next_line"}:
                for d in range(1, c.degree + 1):
                    if (line + d) // page_lines != line // page_lines:
                        break
                    self.prefetch_line(c, line + d, c.full)

    def train_ip_stride(self, c: RefCache, pc: int, addr: int):
        key = pc & 0x7FFFFFFFFFFFFFFF
        e = mix64(pc) % IPT_SIZE
        ent = c.ipt.get(e)
        if ent is None or ent[0] != key:
            c.ipt[e] = [key, addr, 0, 0]        # last byte address, byte stride, confidence
            return
        stride = addr - ent[1]
        if stride == 0:
            return
        if stride == ent[2]:
            ent[3] = min(ent[3] + 1, 3)
        else:
            ent[2], ent[3] = stride, 0
        ent[1] = addr
        if ent[3] >= 1 and abs(stride) <= IP_STRIDE_MAX_BYTES:
            target = addr + c.degree * stride
            page = self.page_bytes['data']
            if target >= 0 and target // c.line_bytes != addr // c.line_bytes and target // page == addr // page:
                self.prefetch_line(c, target // c.line_bytes, c.full)

    # ------------------------------------------------------------------ translation
    def phys(self, vaddr: int, side: str) -> int:
        if self.p.memory.page_mapping == "identity":
            return vaddr
        page = self.page_bytes[side]
        pb = int(math.log2(page))
        pfn = mix64((vaddr >> pb) ^ self.salt) & 0xFFFFFFFFF
        return (pfn << pb) | (vaddr & (page - 1))

    def tlb_lookup(self, name: str, vpn: int) -> bool:
        t = self.tlbs[name]
        tset = t["sets"][vpn % len(t["sets"])]
        w = tset.find(vpn)
        if w >= 0:
            tset.touch(w)
            return True
        v = tset.victim(self.rng)
        tset.remove(v)
        tset.install(v, Line(vpn))
        return False

    def walk_load(self, name: str, paddr: int) -> None:
        t = self.tlbs[name]
        t["walk_acc"] += 1
        c = self.caches[self.p.page_walk.cache_level]
        if self.p.page_walk.pollute:
            served = self.request(c, paddr, self.p.page_walk.pte_bytes, WALK, False, True, False)
        else:
            served = "memory"          # cache-inhibited page tables
            self.mem[WALK] += 1
            self.channel(self.p.page_walk.pte_bytes)
        if served == "memory":
            t["walk_mem"] += 1

    def walk(self, name: str, vaddr: int, side: str) -> None:
        t = self.tlbs[name]
        t["walks"] += 1
        w = self.p.page_walk
        vpn = vaddr // self.page_bytes[side]
        if w.kind == "radix":
            levels = self.p.walk_levels(side)
            for l in range(min(w.cached_levels, levels - 1), levels):
                prefix = vpn >> (w.bits_per_level * (levels - 1 - l))
                paddr = PT_BASE | (l << 56) | ((prefix * w.pte_bytes) & 0x00FFFFFFFFFFFFFF)
                self.walk_load(name, paddr)
        elif w.kind == "hashed":
            vsid = ((vaddr >> 28) * 897 + 0x5A5) & MASK64
            page_index = (vaddr >> 12) & 0xFFFF
            ptegs = w.htab_kb * 1024 // 64
            pteg = ((vsid & 0x7FFFF) ^ page_index) & (ptegs - 1)
            slot = mix64(vpn) >> 61
            for k in range(slot + 1):
                self.walk_load(name, HTAB_BASE + pteg * 64 + 8 * k)

    def translate(self, vaddr: int, chain: list[str], side: str) -> None:
        vpn = vaddr // self.page_bytes[side]
        for name in chain:
            t = self.tlbs[name]
            t["acc"] += 1
            if self.tlb_lookup(name, vpn):
                return
            t["miss"] += 1
        self.walk(chain[-1], vaddr, side)

    # ------------------------------------------------------------------ accesses
    def top(self, c: RefCache, chain, vaddr, size, src, write):
        side = "instruction" if src == IFETCH else "data"
        page = self.page_bytes[side]
        size = max(size, 1)
        vlast = vaddr + size - 1
        if chain:
            self.translate(vaddr, chain, side)
            if vlast // page != vaddr // page:
                self.translate(vlast, chain, side)
        p0, p1 = self.phys(vaddr, side), self.phys(vlast, side)
        if c.line_of(p0) == c.line_of(p1):
            self.request(c, p0, size, src, write, True, True)
            self.prefetch_after_demand(page)
            return
        c.c.straddle += 1
        c.c.acc[src] += 1
        end0 = (c.line_of(p0) + 1) * c.line_bytes
        r0 = self.request(c, p0, end0 - p0, src, write, False, True)
        self.prefetch_after_demand(page)
        base1 = c.line_of(p1) * c.line_bytes
        r1 = self.request(c, base1, p1 - base1 + 1, src, write, False, True)
        self.prefetch_after_demand(page)
        if r0 != c.name or r1 != c.name:
            c.c.miss[src] += 1

    def run(self, addrs, sizes, kinds, cycles_per_record=None, timed=False):
        spacing = self.p.memory.latency_cycles if cycles_per_record is None else cycles_per_record
        self.clocked = timed           # a trace carries no time: no channel queueing, prefetches ready at once
        pc = 0
        for i, (a, s, k) in enumerate(zip(addrs.tolist(), sizes.tolist(), kinds.tolist())):
            self.now = i * spacing             # records cycles_per_record apart
            if k == 0:
                pc = a
                self.top(self.l1i, self.ichain, a, s, IFETCH, False)
            else:
                src = STORE if k == 2 else LOAD
                self.top(self.l1d, self.dchain, a, s, src, k != 1)
                if src == LOAD:
                    c = self.l1d
                    while c is not None:
                        if "ip_stride" in c.prefetchers:
                            self.train_ip_stride(c, pc, self.phys(a, "data"))
                        c = c.next
            self.run_streamers()
        return self

    def counters(self) -> dict:
        levels = {}
        for name, c in self.caches.items():
            acc = sum(c.c.acc[s] for s in (IFETCH, LOAD, STORE, WALK))
            miss = sum(c.c.miss[s] for s in (IFETCH, LOAD, STORE, WALK))
            row = {"accesses": acc, "hits": acc - miss, "misses": miss, "miss_ratio": miss / acc if acc else 0.0}
            for s in (IFETCH, LOAD, STORE, WALK):
                row[f"{SRC[s]}_accesses"] = c.c.acc[s]
                row[f"{SRC[s]}_misses"] = c.c.miss[s]
            row["data_accesses"] = row["load_accesses"] + row["store_accesses"]
            row["data_misses"] = row["load_misses"] + row["store_misses"]
            row.update(sector_misses=c.c.sector_miss, straddling_accesses=c.c.straddle, evictions=c.c.evictions,
                       writebacks=c.c.writebacks, writebacks_received=c.c.acc[WRITEBACK],
                       back_invalidations=c.c.back_inval, prefetches_issued=c.c.pf_issued,
                       prefetches_useful=c.c.pf_useful, prefetches_dropped=c.c.pf_dropped, late_prefetches=c.c.pf_late,
                       prefetch_requests_received=c.c.acc[PREFETCH], prefetch_requests_missed=c.c.miss[PREFETCH])
            levels[name] = row
        tlbs = {n: {"accesses": t["acc"], "misses": t["miss"], "hits": t["acc"] - t["miss"], "walks": t["walks"],
                    "walk_memory_accesses": t["walk_acc"], "walk_accesses_to_memory": t["walk_mem"]}
                for n, t in self.tlbs.items()}
        memory = {f"{SRC[s]}_reads": self.mem[s] for s in range(5)}
        memory["reads"] = sum(self.mem.values())
        memory["writes"] = self.mem_writes
        return {"levels": levels, "tlbs": tlbs, "memory": memory}
