"""A slow, obviously-correct reference of the core timing model, written from the documented semantics
(``simulator/core/timing.py`` and ``simulator/core/predictors.py`` docstrings).

It keeps every instruction's schedule in a list of records and answers each structural question by
brute force over that history: the RS occupancy by counting the older instructions not yet issued,
issue slots and units from a dict of per-cycle reservations, the BTB as lists in LRU order, the return
stack as a Python list.  The memory hierarchy is the project's (the reference is of the core, not of
the caches): the same numba access functions (through :mod:`simulator.core.memport`) are called in
the same order and at the same cycles (a fetch at its start cycle, a load or store at its issue cycle:
the memory's prefetch engines are busy until a cycle).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from whatif.simulator.core import counters as V
from whatif.simulator.core import memport
from whatif.simulator.core import timing as TM
from whatif.simulator.core.model import build_config, default_btb_miss_penalty
from whatif.simulator.core.timing import HORIZON, RAT_PENALTY, UNIT_NAMES
from whatif.simulator.isa import (FLAG_FLAGS_PARTIAL, FLAG_PARTIAL_WRITE, FLAG_SERIALIZING, OP_ALU, OP_BRANCH, OP_CALL,
                           OP_DIV, OP_FP, OP_JUMP, OP_LOAD, OP_MUL, OP_RET, OP_STORE, isa_for)

CONTROL = (OP_BRANCH, OP_JUMP, OP_CALL, OP_RET)
MASK64 = (1 << 64) - 1


# ============================================================================ predictors
class RefDirection:
    """bimodal / gshare / always_taken / perfect direction prediction with n-bit counters."""

    def __init__(self, kind: str, entries: int, bits: int, history_bits: int, shift: int):
        self.kind, self.entries, self.shift = kind, entries, shift
        self.max, self.thresh = (1 << bits) - 1, 1 << (bits - 1)
        self.table = [self.thresh - 1] * entries
        self.history_bits = history_bits
        self.history = 0

    def predict_and_train(self, pc: int, taken: int) -> int:
        if self.kind == "always_taken":
            return 1
        if self.kind == "tage":
            return self.tage.predict_and_train(pc >> self.shift, taken, self)
        h = self.history if self.kind == "gshare" else 0
        idx = ((pc >> self.shift) ^ h) % self.entries
        pred = int(self.table[idx] >= self.thresh)
        self.table[idx] = min(self.max, self.table[idx] + 1) if taken else max(0, self.table[idx] - 1)
        if self.kind == "gshare":
            self.history = ((self.history << 1) | taken) % (1 << self.history_bits)
        return pred


class RefTage:
    """The tagged tables of TAGE as the predictors module's docstring defines them; the folded histories
    computed from the whole outcome history at every branch, not kept incrementally."""

    def __init__(self, entries: int, tag_bits: int, history: list, reset_period: int):
        self.entries, self.tag_bits, self.lengths, self.period = entries, tag_bits, list(history), reset_period
        self.loge = entries.bit_length() - 1
        # per table, per entry: [tag or None, counter, useful]
        self.tables = [[[None, 0, 0] for _ in range(entries)] for _ in history]
        self.outcomes: list[int] = []        # newest first
        self.branches = 0

    def fold(self, length: int, w: int) -> int:
        f = 0
        for j, h in enumerate(self.outcomes[:length]):
            f ^= h << (j % w)
        return f

    def slot(self, i: int, a: int) -> tuple[int, int]:
        """Table i's (index, tag) for aligned address a."""
        a &= (1 << 62) - 1
        length, t = self.lengths[i], self.tag_bits
        index = (a ^ (a >> self.loge) ^ self.fold(length, self.loge)) % self.entries
        tag = (a ^ self.fold(length, t) ^ (self.fold(length, t - 1) << 1)) % (1 << t)
        return index, tag

    def predict_and_train(self, a: int, taken: int, base: "RefDirection") -> int:
        n = len(self.lengths)
        slots = [self.slot(i, a) for i in range(n)]
        hits = [i for i in range(n) if self.tables[i][slots[i][0]][0] == slots[i][1]]
        b_idx = (a & ((1 << 62) - 1)) % base.entries
        base_pred = int(base.table[b_idx] >= base.thresh)
        provider = hits[-1] if hits else None
        if provider is None:
            pred = base_pred
            base.table[b_idx] = min(base.max, base.table[b_idx] + 1) if taken else max(0, base.table[b_idx] - 1)
        else:
            alt = self.tables[hits[-2]][slots[hits[-2]][0]] if len(hits) > 1 else None
            alt_pred = int(alt[1] >= 4) if alt is not None else base_pred
            entry = self.tables[provider][slots[provider][0]]
            prov_pred = int(entry[1] >= 4)
            pred = alt_pred if entry[1] in (3, 4) and entry[2] == 0 else prov_pred
            if prov_pred != alt_pred:
                entry[2] = min(3, entry[2] + 1) if prov_pred == taken else max(0, entry[2] - 1)
            entry[1] = min(7, entry[1] + 1) if taken else max(0, entry[1] - 1)
        first_longer = 0 if provider is None else provider + 1
        if pred != taken and first_longer < n:
            free = [j for j in range(first_longer, n) if self.tables[j][slots[j][0]][2] == 0]
            if free:
                self.tables[free[0]][slots[free[0]][0]] = [slots[free[0]][1], 4 if taken else 3, 0]
            else:
                for j in range(first_longer, n):
                    e = self.tables[j][slots[j][0]]
                    e[2] = max(0, e[2] - 1)
        self.branches += 1
        if self.branches == self.period:
            self.branches = 0
            for table in self.tables:
                for e in table:
                    e[2] >>= 1
        self.outcomes.insert(0, taken)
        del self.outcomes[max(self.lengths) + 1:]
        return pred


class RefBTB:
    """Set-associative BTB; each set a list of [pc, target], most recently used last."""

    def __init__(self, sets: int, ways: int, shift: int):
        self.sets = [[] for _ in range(sets)]
        self.ways, self.shift = ways, shift

    def _set(self, pc: int) -> list:
        return self.sets[(pc >> self.shift) % len(self.sets)]

    def lookup(self, pc: int):
        s = self._set(pc)
        for k, (tag, target) in enumerate(s):
            if tag == pc:
                s.append(s.pop(k))
                return target
        return None

    def update(self, pc: int, target: int) -> None:
        s = self._set(pc)
        for k, (tag, _) in enumerate(s):
            if tag == pc:
                s.pop(k)
                break
        else:
            if len(s) == self.ways:
                s.pop(0)
        s.append([pc, target])


class RefRAS:
    def __init__(self, entries: int):
        self.entries = entries
        self.stack: list[int] = []

    def push(self, addr: int) -> None:
        self.stack.append(addr)
        if len(self.stack) > self.entries:
            self.stack.pop(0)

    def pop(self):
        return self.stack.pop() if self.stack else None


class RefPredictor:
    """Outcome of one control transfer: dict(dir=, tgt=, btb_lookup=, btb_miss=, ras_miss=)."""

    def __init__(self, kind: str, bp, shift: int):
        self.kind = kind
        self.direction = RefDirection(kind, bp.bht_entries, bp.counter_bits, bp.history_bits, shift)
        if kind == "tage":
            self.direction.tage = RefTage(bp.tage_entries, bp.tage_tag_bits, bp.tage_history, bp.tage_reset_period)
        self.btb = RefBTB(bp.btb_entries // bp.btb_associativity, bp.btb_associativity, shift)
        self.ras = RefRAS(bp.ras_entries)

    def predict(self, op: int, pc: int, size: int, taken: int, target: int) -> dict:
        out = dict(dir=False, tgt=False, btb_lookup=False, btb_miss=False, ras_miss=False)
        if self.kind == "perfect":
            return out
        if op == OP_BRANCH:
            pred = self.direction.predict_and_train(pc, taken)
            out["dir"] = pred != taken
            if pred:
                out["btb_lookup"] = True
                t = self.btb.lookup(pc)
                out["btb_miss"] = t is None
                out["tgt"] = t is not None and bool(taken) and t != target
            if taken:
                self.btb.update(pc, target)
        elif op == OP_RET:
            t = self.ras.pop()
            out["tgt"] = out["ras_miss"] = t is None or t != target
        else:
            out["btb_lookup"] = True
            t = self.btb.lookup(pc)
            out["btb_miss"] = t is None
            out["tgt"] = t is not None and t != target
            self.btb.update(pc, target)
            if op == OP_CALL:
                self.ras.push((pc + size) & MASK64)
        return out


# ============================================================================ the core
@dataclass
class Rec:
    f: int
    d: int
    e: int
    c: int
    r: int
    w: int = -1
    record: tuple = ()      # the profiling record (simulator.core.timing R_* order)


@dataclass
class RefCore:
    platform: object
    hierarchy: object
    predictor: str | None = None
    btb_miss_penalty: int | None = None
    recs: list = field(default_factory=list)

    def __post_init__(self):
        p = self.platform
        cfg, lat, pcfg = build_config(p, self.hierarchy, self.predictor, self.btb_miss_penalty)
        self.core = p.core
        self.inorder = p.core.kind == "in_order"
        self.FE = p.core.mispredict_penalty
        self.btb_pen = default_btb_miss_penalty(p) if self.btb_miss_penalty is None else self.btb_miss_penalty
        self.lat = [int(x) for x in lat]
        names = self.hierarchy.level_names
        self.L1I, self.L1D = names.index(p.top_cache("instruction")), names.index(p.top_cache("data"))
        self.iline = p.caches[p.top_cache("instruction")].line_bytes
        self.dline = p.caches[p.top_cache("data")].line_bytes
        ich, dch = p.tlb_chain("instruction"), p.tlb_chain("data")
        self.itlb1 = p.tlbs[ich[1]].latency_cycles if len(ich) > 1 else 0
        self.dtlb1 = p.tlbs[dch[1]].latency_cycles if len(dch) > 1 else 0
        self.walk_ovh = p.page_walk.overhead_cycles
        self.rat = isa_for(p.isa).partial_registers
        self.walloc = p.caches[p.top_cache("data")].write_allocate
        units = p.core.units
        pref = {"alu": ("ialu",), "mul": ("imul", "ialu"), "div": ("idiv", "imul", "ialu"), "fp": ("fpu", "ialu"),
                "load": ("lsu", "ialu"), "store": ("lsu", "ialu")}
        self.unit_of = {}
        for op, name in enumerate(("alu", "mul", "div", "fp", "load", "store", "branch", "jump", "call", "ret")):
            self.unit_of[op] = next(u for u in pref.get(name, ("branch", "ialu")) if u in units)
        shift = {"powerpc32": 2, "z/Architecture": 1}.get(p.isa, 0)
        self.pred = RefPredictor(self.predictor or p.branch_predictor.kind, p.branch_predictor, shift)
        # per MSHR: busy until, line, supplying level, held by a prefetch
        self.mshrs = [[0, 0, 0, False] for _ in range(p.caches[p.top_cache("data")].mshrs)]
        self.reserv: dict[int, dict] = {}           # cycle -> {"issue": n, unit: n}
        self.unit_free = {u: [0] * units[u].count for u in units}
        self.ready: dict[int, int] = {}
        self.partial: dict[int, int] = {}           # register (or "flags") -> retire cycle of a pending partial write
        self.writer: dict[int, int] = {}            # register -> index of its last writer
        self.ports = p.core.register_read_ports     # 0: unlimited
        self.timed_prefetch = p.memory.prefetch_arrival == "latency"
        self.port_reads: dict[int, set] = {}        # dispatch cycle -> registers read through a port in it
        self.loads: list[int] = []                  # retire cycles of loads
        self.stores: list[int] = []                 # drain cycles of stores
        self.ct = {n: 0 for n in V.COUNTER_NAMES}
        self.cs = [0] * V.NCAUSES
        self.redirect, self.redirect_cause = 0, V.CS_FRONTEND
        self.need_access, self.last_line = True, None
        self.fetch_break = False
        self.serial_until = 0
        self.group: list[int] = []                  # indices in the current in-order issue group
        self.catch_all = 0

    # -------------------------------------------------------------- memory (the project's kernels)
    def _tlb_cost(self, tlb: int, walk: int, t1: int) -> int:
        return 0 if tlb == 0 else t1 if tlb == 1 else t1 + self.walk_ovh + walk

    def _fetch(self, pc: int, size: int, now: int) -> tuple[int, int]:
        lvl, tlb, walk = memport.fetch_outcome(tuple(self.hierarchy.state), np.uint64(pc), size, now)
        wait = memport.channel_wait_of(tuple(self.hierarchy.state))
        icache = (self.lat[lvl] - self.lat[self.L1I] + wait) if lvl != self.L1I else 0
        return self._tlb_cost(tlb, walk, self.itlb1), icache

    def _data(self, addr: int, size: int, kind: int, pc: int, now: int) -> tuple[int, int]:
        lvl, tlb, walk = memport.data_outcome(tuple(self.hierarchy.state), np.uint64(addr), size, kind,
                                              np.uint64(pc), now)
        self.channel_wait = int(memport.channel_wait_of(tuple(self.hierarchy.state)))
        return int(lvl), self._tlb_cost(tlb, walk, self.dtlb1)

    # -------------------------------------------------------------- structures
    def _earliest_mshr(self) -> int:
        """The MSHR that frees first (the lowest-numbered among equals)."""
        return min(range(len(self.mshrs)), key=lambda j: (self.mshrs[j][0], j))

    def _rs_bound(self, i: int) -> int:
        """Earliest cycle at which fewer than rs_entries older instructions are still unissued (an issue
        beyond the reservation horizon releases its entry at the horizon)."""
        older = sorted(min(rec.e, rec.d + HORIZON) for rec in self.recs)
        rs = self.core.rs_entries
        return older[-rs] if len(older) >= rs else 0

    def _slot_free(self, t: int, key: str, limit: int) -> bool:
        return self.reserv.get(t, {}).get(key, 0) < limit

    def _ooo_issue(self, t0: int, unit: str, occ: int, horizon_end: int) -> int:
        count = self.core.units[unit].count
        t = t0
        while True:
            if t + occ - 1 > horizon_end:
                return t
            if self._slot_free(t, "issue", self.core.issue_width) and \
                    all(self._slot_free(t + k, unit, count) for k in range(occ)):
                self.reserv.setdefault(t, {}).setdefault("issue", 0)
                self.reserv[t]["issue"] += 1
                for k in range(occ):
                    row = self.reserv.setdefault(t + k, {})
                    row[unit] = row.get(unit, 0) + 1
                return t
            t += 1

    # -------------------------------------------------------------- one instruction
    def step(self, pc, op, size, dst, s1, s2, ar, maddr, msize, taken, target, flags) -> None:
        core, recs, ct = self.core, self.recs, self.ct
        i = len(recs)
        prev = recs[-1] if recs else None
        is_mem = op in (OP_LOAD, OP_STORE)
        is_ctrl = op in CONTROL
        serial = bool(flags & FLAG_SERIALIZING)

        # fetch
        same_cycle = [k for k in range(i) if recs[k].f == prev.f] if prev else []
        if prev is None or (len(same_cycle) < core.fetch_width and not self.fetch_break):
            s = prev.f if prev else 0
        else:
            s = prev.f + 1
        pre = V.CS_FRONTEND
        if self.redirect > s:
            s, pre = self.redirect, self.redirect_cause
        if i >= core.fetch_queue and recs[i - core.fetch_queue].d - self.FE > s:
            s, pre = recs[i - core.fetch_queue].d - self.FE, V.CS_FRONTEND
        p_itlb = p_icache = 0
        line = pc // self.iline
        if self.need_access or line != self.last_line:
            ct["fetch_accesses"] += 1
            p_itlb, p_icache = self._fetch(pc, size, s)     # the access at the fetch's start
            self.need_access = False
        self.last_line = (pc + max(size, 1) - 1) // self.iline
        f = s + p_itlb + p_icache
        self.fetch_break = False
        fr = f + self.FE
        seg0, seg1 = s + self.FE, s + self.FE + p_itlb
        fe_last = V.CS_ICACHE if p_icache else (V.CS_ITLB if p_itlb else pre)

        # prediction
        out = dict(dir=False, tgt=False, btb_lookup=False, btb_miss=False, ras_miss=False)
        if is_ctrl:
            out = self.pred.predict(op, pc, size, taken, target)
            ct["branches"] += 1
            ct["conditional_branches"] += op == OP_BRANCH
            if taken:
                ct["taken_branches"] += 1
                self.fetch_break = True
                self.need_access = True
            ct["btb_lookups"] += out["btb_lookup"]
            ct["btb_misses"] += out["btb_miss"]
            ct["ras_mispredicts"] += out["ras_miss"]
        mispredicted = out["dir"] or out["tgt"]
        if mispredicted:
            ct["mispredicts"] += 1
            ct["mispredicts_direction" if out["dir"] else "mispredicts_target"] += 1
        elif out["btb_miss"] and taken:
            self.redirect, self.redirect_cause = f + self.btb_pen, V.CS_BTB

        # dispatch
        same_d = [k for k in range(i) if recs[k].d == prev.d] if prev else []
        slot = (prev.d if len(same_d) < core.dispatch_width else prev.d + 1) if prev else 0
        base = max(slot, fr)
        b = {}
        b["rob"] = recs[i - core.rob_entries].r if (not self.inorder and i >= core.rob_entries) else 0
        b["rs"] = self._rs_bound(i)
        b["lq"] = self.loads[-core.load_queue] if op == OP_LOAD and len(self.loads) >= core.load_queue else 0
        b["sq"] = self.stores[-core.store_queue] if op == OP_STORE and len(self.stores) >= core.store_queue else 0
        b["ser"] = max(self.serial_until, prev.r if (serial and prev) else 0)
        d = max([base] + list(b.values()))
        dcause = fe_last
        for key, cause in (("rob", V.CS_RESOURCE), ("rs", V.CS_RESOURCE), ("lq", V.CS_RESOURCE),
                           ("sq", V.CS_RESOURCE), ("ser", V.CS_SERIAL)):
            if b[key] == d and d > base:
                dcause = cause
                break
        b["rat"] = 0
        if self.rat:
            reads = [r for r in (s1, s2, ar) if r >= 0] + (["flags"] if op == OP_BRANCH else [])
            if any(self.partial.get(r, -1) > d for r in reads):
                d = b["rat"] = d + RAT_PENALTY
                dcause = V.CS_RAT
                ct["rat_events"] += 1
        if self.ports:
            def port_reads(t):      # retired (or never written) sources not yet read through a port in t
                return {r for r in (s1, s2, ar) if r >= 0 and (r not in self.writer or recs[self.writer[r]].r <= t)
                        } - self.port_reads.get(t, set())
            need = port_reads(d)
            if need and len(self.port_reads.get(d, set())) + len(need) > self.ports:
                d += 1
                b["rat"] = max(b["rat"], d)
                dcause = V.CS_RAT
                ct["rat_events"] += 1
                ct["rat_read_port_events"] += 1
                need = port_reads(d)
            if need:
                self.port_reads = {d: self.port_reads.get(d, set()) | need}
        if fr > slot:
            p = slot
            hi = min(fr, d)
            fe_counter = {V.CS_FRONTEND: "stall_fetch", V.CS_BRANCH: "stall_branch_miss_clear",
                          V.CS_BTB: "stall_btb"}[pre]
            for name, end in ((fe_counter, seg0), ("stall_itlb", seg1), ("stall_icache", fr)):
                if min(hi, end) > p:
                    ct[name] += min(hi, end) - p
                    p = min(hi, end)
        covered = base
        for key, name in (("rob", "stall_rob_full"), ("rs", "stall_rs_full"), ("lq", "stall_load_queue_full"),
                          ("sq", "stall_store_queue_full"), ("ser", "stall_serialize"), ("rat", "stall_rat")):
            if b[key] > covered:
                ct[name] += b[key] - covered
                covered = b[key]
        ct["dispatched"] += 1

        # issue
        unit = self.unit_of[op]
        uspec = core.units[unit]
        occ = 1 if uspec.pipelined else uspec.latency
        ops = max([self.ready.get(r, 0) for r in (s1, s2, ar) if r >= 0] + [0])
        agi = False
        if self.inorder:
            g = self.group
            join = (bool(g) and len(g) < min(core.group_size, core.issue_width) and not serial and occ == 1
                    and not getattr(self, "prev_ends_group", False)
                    and all(self.writer.get(r, -1) not in g for r in (s1, s2, ar) if r >= 0))
            slot_e = (prev.e if join else prev.e + 1) if prev else 0
            base_e = max(slot_e, d + 1)
            t_cw = max(base_e, recs[i - core.rob_entries].r - self.lat[self.L1D] if i >= core.rob_entries else 0)
            t_ops = max(t_cw, ops)
            t_agi = t_ops
            if core.agi_penalty > 0 and is_mem and ar >= 0 and t_ops - self.ready.get(ar, 0) < core.agi_distance:
                t_agi, agi = t_ops + core.agi_penalty, True
            free = self.unit_free[unit]
            k = min(range(len(free)), key=lambda j: (free[j], j))
            e = max(t_agi, free[k])
            free[k] = e + occ
            covered = base_e
            for bound, name in ((t_cw, "issue_stall_completion"), (t_ops, "issue_stall_operands"),
                                (t_agi, "issue_stall_agi"), (e, "issue_stall_unit")):
                if bound > covered:
                    ct[name] += bound - covered
                    covered = bound
            if e == t_cw and t_cw > base_e:
                icause = V.CS_RESOURCE
            elif e == t_ops and t_ops > t_cw:
                icause = V.CS_DEPENDENCY
            elif agi and e == t_agi:
                icause = V.CS_AGI
            else:
                icause = V.CS_EXECUTION
            leader = prev is None or e > prev.e
            if leader:
                self.group = [i]
                ct["issue_groups"] += 1
            else:
                self.group.append(i)
            self.prev_ends_group = is_ctrl or serial or occ > 1
        else:
            t_ops = max(d + 1, ops)
            t_agi = t_ops
            if core.agi_penalty > 0 and is_mem and ar >= 0 and t_ops - self.ready.get(ar, 0) < core.agi_distance:
                t_agi, agi = t_ops + core.agi_penalty, True
            e = self._ooo_issue(t_agi, unit, occ, d + HORIZON)
            leader = True
            icause = V.CS_DEPENDENCY if e == t_ops else (V.CS_AGI if agi and e == t_agi else V.CS_EXECUTION)
        ct["agi_events"] += agi

        # execute
        p_dtlb, xcause, fill = 0, V.CS_EXECUTION, 0
        data_miss = data_wait = False
        if is_mem:
            lvl, p_dtlb = self._data(maddr, msize, 1 if op == OP_LOAD else 2, pc, e)   # at issue
            tready = e + p_dtlb
            line = maddr // self.dline
            done = tready + self.lat[lvl]
            xcause = V.CS_DATA0 + lvl
            merged = False
            if lvl == self.L1D:
                for busy, mline, mlevel, by_prefetch in self.mshrs:
                    if mline == line and busy > tready:
                        if by_prefetch:        # an access before the prefetch began fetches the line itself
                            busy = min(busy, tready + self.lat[mlevel])
                        done = max(done, busy)
                        xcause = V.CS_DATA0 + mlevel
                        merged = True
                        ct["load_miss_merges"] += op == OP_LOAD
                        ct["late_prefetches"] += by_prefetch
                        break
            elif op == OP_LOAD or self.walloc:
                k = self._earliest_mshr()
                start = max(tready, self.mshrs[k][0])
                ct["mshr_wait_cycles"] += start - tready
                # the channel (or a line in flight below) and the fill buffer are waited for at once
                done = max(start, tready + self.channel_wait) + self.lat[lvl]
                self.mshrs[k] = [done, line, lvl, False]
            # each prefetch the access sent into the L1D holds an MSHR until its line arrives
            for pline, plvl, pwait in (memport.prefetch_records(tuple(self.hierarchy.state), np.uint64(maddr)).tolist()
                                       if self.timed_prefetch else []):
                k = self._earliest_mshr()
                self.mshrs[k] = [max(tready, self.mshrs[k][0], tready + pwait) + self.lat[plvl], pline, plvl, True]
                ct["l1d_prefetch_fills"] += 1
            data_miss = lvl != self.L1D
            if op == OP_LOAD:
                c = done
                data_wait = done > tready + self.lat[self.L1D]
                ct["loads"] += 1
            else:
                c = tready + 1
                if (lvl == self.L1D and merged and done > tready + self.lat[self.L1D]) or \
                        (lvl != self.L1D and self.walloc):
                    fill = done
                ct["stores"] += 1
        else:
            c = e + uspec.latency
            if op == OP_FP:
                ct["fp"] += 1
            elif not is_ctrl:
                ct["other"] += 1

        # retire
        same_r = [k for k in range(i) if recs[k].r == prev.r] if prev else []
        rslot = (prev.r if len(same_r) < core.retire_width else prev.r + 1) if prev else -1
        r = max(c, rslot)
        last_r = prev.r if prev else -1
        if r > last_r:
            a = last_r + 1
            segments = [(seg0, pre), (seg1, V.CS_ITLB), (fr, V.CS_ICACHE), (d + 1, dcause), (e, icause)]
            if a <= e:
                nominal = min(c - e, self.lat[self.L1D] if op == OP_LOAD else 1 if op == OP_STORE
                              else uspec.latency)
                segments.append((e + nominal, icause if e > d + 1 else dcause))
                segments += [(e + nominal + p_dtlb, V.CS_DTLB), (c, xcause)]
            else:
                segments += [(e + p_dtlb, V.CS_DTLB), (c, xcause)]
            p = a
            for end, cause in segments:
                hi = min(end, r)
                if hi > p:
                    self.cs[cause] += hi - p
                    p = hi
            if r > p:
                self.catch_all += r - p
                self.cs[V.CS_BASE] += r - p
            self.cs[V.CS_BASE] += 1
        flags_rec = ((TM.RF_L1I_MISS if p_icache else 0) | (TM.RF_ITLB_MISS if p_itlb else 0)
                     | (TM.RF_DTLB_MISS if p_dtlb else 0) | (TM.RF_L1D_MISS if data_miss else 0)
                     | (TM.RF_DATA_WAIT if data_wait else 0) | (TM.RF_MISPREDICT if mispredicted else 0)
                     | (TM.RF_AGI if agi else 0) | (TM.RF_LEADER if leader else 0))
        rec = Rec(f, d, e, c, r, record=(s, s + p_itlb, f, e, t_ops if agi else e, t_agi if agi else e,
                                         e + p_dtlb, c, r, flags_rec))
        if op == OP_LOAD:
            self.loads.append(r)
        if op == OP_STORE:
            w = max(r, (self.stores[-1] + 1) if self.stores else 0, fill)
            self.stores.append(w)
            rec.w = w
        recs.append(rec)

        # bookkeeping
        if mispredicted:
            self.redirect, self.redirect_cause = c, V.CS_BRANCH
            self.need_access = True
            wp = min(core.dispatch_width * (c - d - 1), core.rob_entries - 1)
            if wp > 0:
                ct["dispatched_wrong_path"] += wp
                ct["dispatched"] += wp
        elif out["btb_miss"] and taken:
            self.need_access = True
        if dst >= 0:
            self.ready[dst] = c
            self.writer[dst] = i
            if self.rat:
                self.partial[dst] = r if flags & FLAG_PARTIAL_WRITE else -1
        if self.rat and op in (OP_ALU, OP_MUL, OP_DIV):
            self.partial["flags"] = r if flags & FLAG_FLAGS_PARTIAL else -1
        if serial:
            self.serial_until = r
        ct["instructions"] = len(recs)
        ct["cycles"] = r + 1

    def run(self, block) -> "RefCore":
        for k in range(len(block)):
            self.step(int(block.pc[k]), int(block.op[k]), int(block.size[k]), int(block.dst[k]),
                      int(block.src1[k]), int(block.src2[k]), int(block.areg[k]), int(block.mem_addr[k]),
                      int(block.mem_size[k]), int(block.taken[k]), int(block.target[k]), int(block.flags[k]))
        return self
