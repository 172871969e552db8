"""Timing the collector's instruction streams on a platform: the one place that picks the core model.

``make_core(platform, memory, seed)`` returns the core timing model that runs :class:`InstrBlock`
chunks against a :class:`~simulator.memory.hierarchy.MemoryHierarchy`: ``simulator.core.Core`` (the
out-of-order/in-order core models) when that package is present (``USE_CORE``), otherwise
:class:`StandInCore`, a dataflow model that sends every load and store through the real memory
hierarchy and times instructions by their register dependences.  (On the collector's streams the two
agree within 1%: jack's collections on the 7447A took 805,573 and 800,264 cycles.)

The stand-in, per instruction in program order:

* dispatch: at most ``dispatch_width`` per cycle, and not before the instruction ``rob_entries``
  earlier has retired (a full reorder buffer stalls);
* issue when the sources (including the address register) are ready;
* latency: the functional unit's (platform ``core.units``); for a load, the load-to-use latency of the
  level that supplied it (``caches.*.latency_cycles``, ``memory.latency_cycles``) plus the page walk's
  cycles and ``page_walk.overhead_cycles`` on a TLB miss; at most ``mshrs`` L1D misses are in flight
  (a new miss waits for the oldest); stores complete into the store queue, which drains in order at
  the latency of the level that supplied the line, a store miss taking an MSHR like a load miss;
* retire in order, at most ``retire_width`` per cycle.

So a chain of dependent loads (the sweep's header walk, pointer chasing while marking) pays every miss
in full, and independent misses overlap up to the MSHR limit: the cache effects of seed 003 Figures
5-3 and 5-6 come from these mechanics.
"""

from __future__ import annotations

import importlib.util

import numpy as np
from numba import njit

from simulator.isa import FIELDS, OP_BRANCH, OP_CALL, OP_DIV, OP_FP, OP_JUMP, OP_LOAD, OP_MUL, OP_RET, OP_STORE
from simulator.memory import kernel as K
from simulator.memory.hierarchy import MemoryHierarchy
from simulator.platform import Platform

USE_CORE = importlib.util.find_spec("simulator.core") is not None     # Core(platform, memory_hierarchy, seed)

# ---- the memory kernel's per-access entry points ------------------------------------------------------
@njit(cache=True, inline="always")
def _data(state, vaddr, size, kind, pc):
    return K.data_access(state[0], vaddr, size, kind, pc)


@njit(cache=True, inline="always")
def _fetch(state, vaddr, size):
    return K.fetch_access(state[0], vaddr, size)


@njit(cache=True, inline="always")
def _walk_info(state):
    S = state[0]
    return S[K.SCR_TLB], S[K.SCR_WALK_CYCLES]


# ---- stand-in state: T[..] ------------------------------------------------------------------------
T_DISP, T_DISP_N, T_RET, T_RET_N, T_INSTR, T_LOADS, T_STORES, T_BRANCHES, T_MISS_K, T_SQ_K, T_FLINE, \
    T_L1_MISSES, T_WALK_CYC, T_STALL_MEM = range(14)
NT = 16
MAXRING = 256


@njit(cache=True)
def _time_block(state, arrays, T, ready, rob, mshr, sq, P, lat):
    """Advance the stand-in core over one block.  ``P``: dispatch width, retire width, ROB entries,
    MSHRs, store-queue entries, L1D level index, memory level index, walk overhead, L1I level index,
    unit latencies alu, mul, div, fp, branch, lsu; ``lat[level]``: load-to-use latency per level."""
    pc_a, op_a, size_a, dst_a, s1_a, s2_a, ar_a, addr_a, msz_a, taken_a, tgt_a, flags_a = arrays
    width = P[0]
    rwidth = P[1]
    nrob = P[2]
    nmshr = P[3]
    nsq = P[4]
    l1d = P[5]
    walk_ovh = P[7]
    for i in range(len(op_a)):
        op = op_a[i]
        idx = T[T_INSTR]
        # fetch: one access per new instruction-cache line (the collector's loops are tiny)
        line = np.int64(pc_a[i] >> np.uint64(5))
        if line != T[T_FLINE] and P[15] != 0:
            T[T_FLINE] = line
            _fetch(state, pc_a[i], np.int64(size_a[i]))
        # dispatch
        d = T[T_DISP]
        cnt = T[T_DISP_N]
        if cnt >= width:
            d += 1
            cnt = 0
        old = rob[idx % nrob]
        if old > d:
            d = old
            cnt = 0
        T[T_DISP] = d
        T[T_DISP_N] = cnt + 1
        start = d + 1
        s = s1_a[i]
        if s >= 0 and ready[s] > start:
            start = ready[s]
        s = s2_a[i]
        if s >= 0 and ready[s] > start:
            start = ready[s]
        s = ar_a[i]
        if s >= 0 and ready[s] > start:
            start = ready[s]
        if op == OP_LOAD:
            T[T_LOADS] += 1
            lvl = _data(state, addr_a[i], np.int64(msz_a[i]), np.int64(1), pc_a[i])
            tlb, wc = _walk_info(state)
            extra = 0
            if tlb == 2:
                extra = wc + walk_ovh
                T[T_WALK_CYC] += extra
            if lvl != l1d:
                T[T_L1_MISSES] += 1
                k = T[T_MISS_K]
                slot = k % nmshr
                if mshr[slot] > start:
                    T[T_STALL_MEM] += mshr[slot] - start
                    start = mshr[slot]
                done = start + lat[lvl] + extra
                mshr[slot] = done
                T[T_MISS_K] = k + 1
            else:
                done = start + lat[lvl] + extra
        elif op == OP_STORE:
            T[T_STORES] += 1
            lvl = _data(state, addr_a[i], np.int64(msz_a[i]), np.int64(2), pc_a[i])
            tlb, wc = _walk_info(state)
            extra = wc + walk_ovh if tlb == 2 else 0
            k = T[T_SQ_K]
            slot = k % nsq
            if sq[slot] > start:
                start = sq[slot]          # store queue full: wait for the oldest store to drain
            if lvl != l1d:
                mk = T[T_MISS_K]
                ms = mk % nmshr
                s0 = mshr[ms] if mshr[ms] > start else start
                drain = s0 + lat[lvl] + extra
                mshr[ms] = drain
                T[T_MISS_K] = mk + 1
            else:
                drain = start + 1 + extra
            sq[slot] = drain
            T[T_SQ_K] = k + 1
            done = start + 1
        elif op == OP_BRANCH or op == OP_JUMP or op == OP_CALL or op == OP_RET:
            T[T_BRANCHES] += 1
            done = start + P[13]
        elif op == OP_MUL:
            done = start + P[10]
        elif op == OP_DIV:
            done = start + P[11]
        elif op == OP_FP:
            done = start + P[12]
        else:
            done = start + P[9]
        dst = dst_a[i]
        if dst >= 0:
            ready[dst] = done
        r = T[T_RET]
        if done > r:
            r = done
            T[T_RET_N] = 0
        if T[T_RET_N] >= rwidth:
            r += 1
            T[T_RET_N] = 0
        T[T_RET] = r
        T[T_RET_N] += 1
        rob[idx % nrob] = r
        T[T_INSTR] = idx + 1
    return T[T_RET]


class StandInCore:
    """Dataflow timing of InstrBlocks through the platform's memory hierarchy (see module docstring).
    Same calling convention as ``simulator.core.Core``: ``run(block)``, ``counters()``."""

    def __init__(self, platform: Platform, memory: MemoryHierarchy, seed: int = 0):
        self.platform = platform
        self.memory = memory
        c = platform.core
        units = c.units

        def unit(name, default):
            u = units.get(name)
            return u.latency if u is not None else default

        names = memory.level_names
        l1d = names.index(platform.top_cache("data"))
        l1i = names.index(platform.top_cache("instruction"))
        self.P = np.array([c.dispatch_width, c.retire_width, min(c.rob_entries, MAXRING),
                           min(platform.caches[names[l1d]].mshrs, MAXRING), min(c.store_queue, MAXRING),
                           l1d, len(names), platform.page_walk.overhead_cycles, l1i,
                           unit("ialu", 1), unit("imul", 4), unit("idiv", 20), unit("fpu", 4),
                           unit("branch", 1), unit("lsu", 3), 0], dtype=np.int64)
        self.lat = np.array([platform.caches[nm].latency_cycles for nm in names]
                            + [platform.memory.latency_cycles], dtype=np.int64)
        self.T = np.zeros(NT, np.int64)
        self.T[T_FLINE] = -1
        self.ready = np.zeros(128, np.int64)
        self.rob = np.zeros(MAXRING, np.int64)
        self.mshr = np.zeros(MAXRING, np.int64)
        self.sq = np.zeros(MAXRING, np.int64)

    def run(self, block, until_cycle=None) -> int:
        _time_block(tuple(self.memory.state), block.arrays(), self.T, self.ready, self.rob, self.mshr, self.sq,
                    self.P, self.lat)
        return len(block)

    def counters(self) -> dict:
        T = self.T
        return {"cycles": int(T[T_RET]), "instructions": int(T[T_INSTR]), "loads": int(T[T_LOADS]),
                "stores": int(T[T_STORES]), "branches": int(T[T_BRANCHES]), "l1d_load_misses": int(T[T_L1_MISSES]),
                "walk_cycles": int(T[T_WALK_CYC]), "mshr_stall_cycles": int(T[T_STALL_MEM])}


def make_core(platform: Platform, memory: MemoryHierarchy, seed: int = 0):
    """The core timing model for collector streams (the stand-in until simulator.core is merged)."""
    if USE_CORE:
        from simulator.core import Core

        return Core(platform, memory, seed)
    return StandInCore(platform, memory, seed)


class GcTimer:
    """A platform's memory hierarchy and core, timing the blocks a heap simulator hands it."""

    def __init__(self, platform: Platform, seed: int = 0, memory: MemoryHierarchy | None = None, core=None):
        self.platform = platform
        self.memory = memory if memory is not None else MemoryHierarchy(platform, seed=seed)
        self.core = core if core is not None else make_core(platform, self.memory, seed)

    def run(self, block) -> None:
        self.core.run(block)

    @property
    def cycles(self) -> int:
        return int(self.core.counters()["cycles"])

    def seconds(self, cycles: float) -> float:
        return self.platform.cycles_to_seconds(cycles)

    def counters(self) -> dict:
        return {"core": dict(self.core.counters()), **self.memory.counters()}


def empty_buffer(n: int):
    """Arrays of an instruction buffer of ``n`` entries, in FIELDS order."""
    return tuple(np.zeros(n, dtype=dt) for _, dt in FIELDS)
