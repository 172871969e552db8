"""A slow, plain-Python walker of a static program: the reference the numba kernel is tested against.

It re-implements, with Python integers and no numba, everything the kernel does per
instruction (the splitmix64 generator, the bijection of node and block numbers, the Zipf
popularity tables, stream addresses, branch behaviours, calls and returns, phase switches),
reading the same static program.  Same program, schedule and run seed -> the same instructions.
"""

from __future__ import annotations

import numpy as np

from whatif.simulator.isa import FIELDS, InstrBlock
from whatif.simulator.synth import kernel as K
from whatif.simulator.synth.program import StaticProgram
from whatif.simulator.synth.streams import RENEW_ONE, S_CHASE, S_RANDOM, S_SEQ, S_STRIDED

MASK64 = (1 << 64) - 1
GOLDEN, MIX1, MIX2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


class ReferenceWalker:
    def __init__(self, program: StaticProgram, schedule: np.ndarray, run_seed: int):
        self.p = program
        self.schedule = [int(x) for x in schedule]
        self.rng = int(np.random.SeedSequence([int(run_seed), 0xD1CE]).generate_state(1, np.uint64)[0])
        self.cur = int(program.driver_entry[0])
        self.stack: list[int] = []
        self.count = 0
        self.sched = 0
        self.boundary = self.schedule[0]
        self.state: dict[int, int] = {}
        st = program.streams
        self.pos = [0] * len(st.names)
        self.node = [0] * len(st.names)
        for j in range(len(st.names)):
            if st.kind[j] == S_CHASE:
                self.node[j] = self.perm_walk(0, j)
            if st.kind[j] == S_RANDOM:
                self.node[j] = -1
        self.switches: list[tuple[int, int]] = []

    # ---------------------------------------------------------------- random numbers
    def next_u64(self) -> int:
        self.rng = (self.rng + GOLDEN) & MASK64
        z = self.rng
        z = ((z ^ (z >> 30)) * MIX1) & MASK64
        z = ((z ^ (z >> 27)) * MIX2) & MASK64
        return z ^ (z >> 31)

    def uniform(self) -> float:
        return (self.next_u64() >> 11) * (1.0 / 9007199254740992.0)

    def perm(self, x: int, j: int) -> int:
        bits = int(self.p.streams.bits[j])
        if bits == 0:
            return 0
        mask = (1 << bits) - 1
        h = (bits + 1) // 2
        y = (x ^ int(self.p.streams.salt[j])) & mask
        for mult in (GOLDEN, MIX1, MIX2):
            y = (y * mult) & mask
            y ^= y >> h
        return y

    def perm_walk(self, x: int, j: int) -> int:
        n = int(self.p.streams.n[j])
        y = self.perm(x, j)
        while y >= n:
            y = self.perm(y, j)
        return y

    def rank(self, j: int) -> int:
        st = self.p.streams
        n = int(st.n[j])
        u = self.uniform()
        if st.zoff[j] < 0:
            return min(int(u * n), n - 1)
        zlen = int(st.zlen[j])
        x = u * zlen
        i = min(int(x), zlen - 1)
        b = int(st.zoff[j]) + i
        if x - i >= st.z_prob[b]:
            b = int(st.z_alias[b])
        width = int(st.z_width[b])
        if width == 1:
            return int(st.z_lo[b])
        return int(st.z_lo[b]) + (((self.next_u64() >> 32) * width) >> 32)

    # ---------------------------------------------------------------- one stream access
    def address(self, j: int, advance: bool, off: int) -> int:
        st = self.p.streams
        kind, base, size, unit = int(st.kind[j]), int(st.base[j]), int(st.size[j]), int(st.unit[j])
        if kind == S_SEQ:
            a = self.pos[j]
            self.pos[j] = 0 if a + unit >= size else a + unit
            return base + a
        if kind == S_STRIDED:
            a = self.pos[j]
            nxt = a + unit
            if nxt >= size:
                nxt = nxt - size + int(st.elem[j])
                if nxt >= unit:
                    nxt = 0
            self.pos[j] = nxt
            return base + a
        if kind == S_CHASE:
            node = self.node[j]
            if advance:
                c = self.pos[j] + 1
                if c >= int(st.n[j]):
                    c = 0
                self.pos[j] = c
                self.node[j] = self.perm_walk(c, j)
                return base + node * unit
            return base + node * unit + off
        renew = int(st.renew[j])
        if self.node[j] < 0 or renew >= RENEW_ONE or (self.next_u64() >> 11) < renew:
            self.node[j] = self.perm_walk(self.rank(j), j)
        return base + self.node[j] * unit + off

    # ---------------------------------------------------------------- the walk
    def walk(self, n: int) -> InstrBlock:
        p = self.p
        out = {name: [] for name, _ in FIELDS}
        for _ in range(n):
            s = self.cur
            k = int(p.kind[s])
            nxt = s + 1
            maddr, taken, target = 0, 0, 0
            if k in (K.K_MEM, K.K_ADV):
                maddr = self.address(int(p.arg[s]), k == K.K_ADV, int(p.off[s]))
            elif k == K.K_CALL:
                self.stack.append(s + 1)
                nxt, taken = int(p.tgt[s]), 1
            elif k == K.K_RET:
                nxt, taken = self.stack.pop(), 1
            elif k == K.K_ICALL:
                u = self.uniform()
                base, m = int(p.arg[s]), int(p.arg2[s])
                pick = next((q for q in range(m) if u < p.ic_cdf[base + q]), m - 1)
                self.stack.append(s + 1)
                nxt, taken = int(p.ic_target[base + pick]), 1
            elif k == K.K_JUMP:
                nxt, taken = int(p.tgt[s]), 1
            elif k == K.K_PH_SWITCH:
                self.sched = (self.sched + 1) % len(self.schedule)
                self.boundary += self.schedule[self.sched]
                nxt, taken = int(p.driver_entry[self.sched]), 1
                self.switches.append((self.count + 1, self.sched))
            elif k != K.K_PLAIN:
                tgt = int(p.tgt[s])
                target = int(p.pc[tgt])
                if k == K.K_BERN:
                    t = self.uniform() < p.prob[s]
                elif k == K.K_LOOP_FIXED:        # loops exit once the phase has run its length
                    c = self.state.get(s, 0) + 1
                    t = c < int(p.arg[s]) and self.count < self.boundary
                    self.state[s] = c if t else 0
                elif k == K.K_LOOP_VAR:
                    rem = self.state.get(s, 0)
                    if self.count >= self.boundary:
                        rem = 1
                    elif rem == 0:
                        rem = max(1, int(p.prob[s] + p.prob2[s] * self.uniform()))
                    rem -= 1
                    self.state[s] = rem
                    t = rem > 0
                elif k == K.K_PERIODIC:
                    pos = self.state.get(s, 0)
                    t = (int(p.arg[s]) >> pos) & 1 == 1
                    self.state[s] = 0 if pos + 1 >= int(p.arg2[s]) else pos + 1
                elif k == K.K_PH_EXIT:
                    t = self.count >= self.boundary
                else:   # K_PH_CONT
                    t = self.count < self.boundary
                if t:
                    nxt, taken = tgt, 1
            if taken and target == 0:
                target = int(p.pc[nxt])
            for name, value in (("pc", p.pc[s]), ("op", p.op[s]), ("size", p.size[s]), ("dst", p.dst[s]),
                                ("src1", p.src1[s]), ("src2", p.src2[s]), ("areg", p.areg[s]),
                                ("mem_addr", maddr), ("mem_size", p.msize[s]), ("taken", taken),
                                ("target", target), ("flags", p.flags[s])):
                out[name].append(int(value))
            self.count += 1
            self.cur = nxt
        return InstrBlock(**{name: np.array(out[name], dtype=dt) for name, dt in FIELDS})
