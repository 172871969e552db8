"""Microbenchmark instruction streams whose timing is known from first principles, and a random program.

Each generator returns an :class:`~simulator.isa.InstrBlock` (vectorised with numpy; every random draw
from a seeded ``numpy.random.Generator``).  Code is laid out from ``CODE_BASE`` with the ISA's
instruction lengths; data from ``DATA_BASE``.  Register conventions: registers ``0..3`` are never
written (always-ready address bases and sources), the others are written as the stream needs.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from whatif.jitcache import drop_stale_caches
from whatif.simulator import isa
from whatif.simulator.isa import (FIELDS, OP_ALU, OP_BRANCH, OP_CALL, OP_DIV, OP_FP, OP_JUMP, OP_LOAD, OP_MUL, OP_RET,
                           OP_STORE, InstrBlock, isa_for)

CODE_BASE = 0x400000
DATA_BASE = 0x10000000
STABLE_REGS = 4                     # registers 0..3 are never written by these streams


def _block(n: int, **cols) -> InstrBlock:
    b = InstrBlock.empty(n)
    for name, dtype in FIELDS:
        if name in cols:
            getattr(b, name)[:] = np.asarray(cols[name]).astype(dtype, copy=False)
    return b


def _layout(isa: str, count: int, base: int = CODE_BASE) -> tuple[np.ndarray, np.ndarray]:
    """Addresses and lengths of ``count`` consecutive static instructions (lengths cycle through the ISA's
    sizes deterministically: a loop body has fixed code)."""
    spec = isa_for(isa)
    sizes = np.resize(np.array(spec.sizes, dtype=np.int64), count)
    if len(spec.sizes) > 1:
        sizes = np.resize(np.repeat(np.array(spec.sizes), np.maximum(1, np.round(np.array(spec.size_weights) * 20)
                                                                     .astype(int))), count)
    pcs = base + np.concatenate(([0], np.cumsum(sizes)[:-1]))
    return pcs.astype(np.uint64), sizes.astype(np.uint8)


def _loop(isa: str, body_ops: np.ndarray, iterations: int) -> dict:
    """Columns of ``iterations`` runs of a loop: the body, then a jump back to its start."""
    k = len(body_ops)
    pcs, sizes = _layout(isa, k + 1)
    op = np.append(body_ops, OP_JUMP)
    taken = np.zeros(k + 1, np.uint8)
    taken[-1] = 1
    target = np.zeros(k + 1, np.uint64)
    target[-1] = pcs[0]
    return dict(pc=np.tile(pcs, iterations), size=np.tile(sizes, iterations), op=np.tile(op, iterations),
                taken=np.tile(taken, iterations), target=np.tile(target, iterations))


def dependent_chain(n: int, isa: str = "x86_64", op: int = OP_ALU, body: int = 512) -> InstrBlock:
    """A chain of ``op`` each reading the previous one's result (loop of ``body`` ops): CPI = the op's latency."""
    it = max(1, n // (body + 1))
    cols = _loop(isa, np.full(body, op, np.uint8), it)
    m = len(cols["pc"])
    is_op = cols["op"] == op
    return _block(m, **cols, dst=np.where(is_op, 8, -1), src1=np.where(is_op, 8, -1))


def independent_ops(n: int, isa: str, mix: dict[int, int], body: int = 960) -> InstrBlock:
    """Independent operations in the proportions ``mix`` (op -> weight), interleaved round-robin; loads
    read an L1-resident 4 KB array.  CPI = max(1 / width, max over units of share / unit count)."""
    pattern = np.concatenate([np.full(w, o, np.uint8) for o, w in mix.items()])
    order = np.argsort(np.arange(len(pattern)) % max(mix.values()), kind="stable")
    pattern = pattern[order]
    ops = np.resize(pattern, body)
    it = max(1, n // (body + 1))
    cols = _loop(isa, ops, it)
    m = len(cols["pc"])
    o = cols["op"]
    mem = (o == OP_LOAD) | (o == OP_STORE)
    compute = ~mem & (o != OP_JUMP)
    dst = np.where(compute | (o == OP_LOAD), STABLE_REGS + (np.arange(m) % 8), -1)
    addr = np.where(mem, DATA_BASE + (np.arange(m) * 8) % 4096, 0)
    return _block(m, **cols, dst=dst, src1=np.where(compute, 0, -1), src2=np.where(compute, 1, -1),
                  areg=np.where(mem, 2, -1), mem_addr=addr, mem_size=np.where(mem, 8, 0))


READ_POOL = 32                      # registers 32..63: never written by ``register_reads``


def register_reads(n: int, isa: str, reads: int, spread: bool = True, body: int = 960) -> InstrBlock:
    """Independent ALU ops, each reading ``reads`` (1-3) registers that are never written (their values sit
    in the permanent register file) and writing one that is never read.  With ``spread`` the registers
    rotate through a pool of 32, so neighbouring ops read different ones; without it every op reads the
    same ``reads`` registers.  On a core with P register read ports (a register read twice in a cycle
    counts once) a spread op needs ``reads`` ports, so ``max(1, P // reads)`` ops rename a cycle."""
    if not 1 <= reads <= 3:
        raise ValueError(f"reads must be 1, 2 or 3, got {reads}")
    it = max(1, n // (body + 1))
    cols = _loop(isa, np.full(body, OP_ALU, np.uint8), it)
    m = len(cols["pc"])
    alu = cols["op"] == OP_ALU
    k = np.arange(m)
    srcs = [(READ_POOL + (k * reads + j) % 32) if spread else np.full(m, READ_POOL + j) for j in range(3)]
    srcs = [np.where(alu & (j < reads), s, -1) for j, s in enumerate(srcs)]
    return _block(m, **cols, dst=np.where(alu, STABLE_REGS + 4 + k % 8, -1), src1=srcs[0], src2=srcs[1],
                  areg=srcs[2])


def chase_addresses(n: int, footprint: int, stride: int, page: int, seed: int) -> np.ndarray:
    """``n`` distinct addresses spread over ``footprint`` bytes: pages in random order, and within a page
    every ``stride``-th byte in random order (TLB misses amortised over page/stride loads; no two
    addresses share a ``stride``-aligned block, so no adjacent-line prefetch serves the chase).  When the
    footprint holds fewer than ``n`` such addresses the chase goes round its cycle again, as a linked
    list traversed repeatedly does."""
    rng = np.random.default_rng(seed)
    per_page = page // stride
    pages_needed = min(-(-n // per_page), footprint // page)
    pages = rng.permutation(footprint // page)[:pages_needed]
    within = rng.permuted(np.tile(np.arange(per_page), (len(pages), 1)), axis=1)
    cycle = (pages[:, None] * page + within * stride).ravel()
    addrs = np.resize(cycle, n)
    return DATA_BASE + addrs.astype(np.uint64)


def pointer_chase(n: int, footprint: int, stride: int, page: int, seed: int, isa: str = "x86_64",
                  body: int = 256) -> InstrBlock:
    """Loads each of whose address is the previous load's result (``r8 = [r8]``): cycles per load =
    the latency of the level that holds the footprint."""
    it = max(1, -(-n // body))
    cols = _loop(isa, np.full(body, OP_LOAD, np.uint8), it)
    m = len(cols["pc"])
    is_load = cols["op"] == OP_LOAD
    addr = np.zeros(m, np.uint64)
    addr[is_load] = chase_addresses(int(is_load.sum()), footprint, stride, page, seed)
    r = np.where(is_load, 8, -1)
    return _block(m, **cols, dst=r, src1=r, areg=r, mem_addr=addr, mem_size=np.where(is_load, 8, 0))


def prefetch_use(pairs: int, gap: int, footprint: int, line: int, page: int, seed: int, isa: str = "x86_64",
                 body: int = 16) -> InstrBlock:
    """Pairs of loads to the two lines of a ``2 * line``-byte block no pair shares (blocks in random order,
    see :func:`chase_addresses`): the first load misses, and a next-line prefetcher fetches the second line;
    ``gap`` dependent ALU ops from the pair's pointer compute the second load's address, so it issues
    ``gap`` cycles after the first; the next pair's pointer is the second load's result.  With the prefetch
    issued at the first load, the second waits for what is left of its latency: a prefetch issued k cycles
    before its use hides min(k, latency - L1D latency) cycles.  ``body`` pairs per loop iteration."""
    if gap < 0:
        raise ValueError(f"gap must be >= 0, got {gap}")
    per = gap + 3
    it = max(1, -(-pairs // body))
    ops = np.tile(np.concatenate(([OP_LOAD], np.full(gap, OP_ALU), [OP_LOAD, OP_ALU])).astype(np.uint8), body)
    cols = _loop(isa, ops, it)
    m = len(cols["pc"])
    slot = np.full(m, -1)                        # position within its pair (-1: the loop jump)
    not_jump = cols["op"] != OP_JUMP
    slot[not_jump] = np.arange(int(not_jump.sum())) % per
    first, second = slot == 0, slot == gap + 1
    chain, advance = (slot >= 1) & (slot <= gap), slot == gap + 2
    blocks = chase_addresses(int(first.sum()), footprint, 2 * line, page, seed)
    addr = np.zeros(m, np.uint64)
    addr[first] = blocks
    addr[second] = blocks + np.uint64(line)
    dst = np.select([first, chain, second, advance], [9, 10, 11, 8], -1)
    src1 = np.select([chain & (slot == 1), chain, advance], [8, 10, 11], -1)
    areg = np.select([first, second], [8, 10 if gap else 8], -1)
    return _block(m, **cols, dst=dst, src1=src1, areg=areg, mem_addr=addr,
                  mem_size=np.where(first | second, 8, 0))


def stream_copy(lines: int, line: int, isa: str = "x86_64", body: int = 64) -> InstrBlock:
    """A copy loop that moves a line per iteration: a load from ``src[i]`` and a store to ``dst[i]``, each the
    first touch of its line (``line`` bytes apart), with no dependences (the loaded value is not stored: the
    store writes an always-ready register), so nothing but the memory system bounds it.  The two arrays lie
    ``lines`` lines apart from ``DATA_BASE``.  Memory traffic per iteration: the source line, the
    destination line's read for ownership, and its writeback once evicted."""
    it = max(1, -(-lines // body))
    cols = _loop(isa, np.tile(np.array([OP_LOAD, OP_STORE], np.uint8), body), it)
    m = len(cols["pc"])
    load, store = cols["op"] == OP_LOAD, cols["op"] == OP_STORE
    i = np.cumsum(load) - 1                          # iteration (line) of each load; stores follow their load
    addr = np.zeros(m, np.uint64)
    addr[load] = DATA_BASE + (i[load] * line).astype(np.uint64)
    addr[store] = DATA_BASE + ((i[store] + it * body) * line).astype(np.uint64)
    return _block(m, **cols, dst=np.where(load, 9, -1), src1=np.where(store, 1, -1), areg=np.where(load | store, 0, -1),
                  mem_addr=addr, mem_size=np.where(load | store, 8, 0))


def loop_branch(iterations: int, trip: int, body: int = 6, isa: str = "x86_64") -> InstrBlock:
    """An inner loop of ``trip`` iterations (``body`` independent ALU ops and a backward conditional
    branch, not taken on exit), the exit followed by a jump back: the branch mispredicts about once per
    ``trip`` iterations (at the exit) once trained."""
    pcs, sizes = _layout(isa, body + 2)
    ops = np.array([OP_ALU] * body + [OP_BRANCH], np.uint8)
    outer = max(1, iterations // trip)
    n_inner = trip * (body + 1)
    pc = np.tile(pcs[:body + 1], trip)
    size = np.tile(sizes[:body + 1], trip)
    op = np.tile(ops, trip)
    taken = np.tile(np.array([0] * body + [1], np.uint8), trip)
    taken[n_inner - 1] = 0
    target = np.where(op == OP_BRANCH, pcs[0], 0)
    pc, size, op = np.append(pc, pcs[body + 1]), np.append(size, sizes[body + 1]), np.append(op, OP_JUMP)
    taken, target = np.append(taken, 1), np.append(target, pcs[0])
    m = len(pc)
    dst = np.where(op == OP_ALU, STABLE_REGS + np.arange(m) % 8, -1)
    cols = dict(pc=np.tile(pc, outer), size=np.tile(size, outer), op=np.tile(op, outer),
                taken=np.tile(taken, outer), target=np.tile(target, outer), dst=np.tile(dst, outer))
    src = np.where(cols["op"] == OP_ALU, 0, -1)
    return _block(len(cols["pc"]), **cols, src1=src)


def random_branch(iterations: int, p_taken: float, seed: int, body: int = 6, isa: str = "x86_64") -> InstrBlock:
    """A loop whose body ends in a conditional branch taken with probability ``p_taken`` independently
    each time (over one ALU op), then a jump back: no predictor beats max(p, 1 - p)."""
    rng = np.random.default_rng(seed)
    pcs, sizes = _layout(isa, body + 3)
    ops = np.array([OP_ALU] * body + [OP_BRANCH, OP_ALU, OP_JUMP], np.uint8)
    k = body + 3
    outcome = (rng.random(iterations) < p_taken).astype(np.uint8)
    pc = np.tile(pcs, iterations)
    size = np.tile(sizes, iterations)
    op = np.tile(ops, iterations)
    taken = np.zeros(iterations * k, np.uint8)
    taken[body::k] = outcome
    taken[k - 1::k] = 1
    target = np.zeros(iterations * k, np.uint64)
    target[body::k] = pcs[body + 2]
    target[k - 1::k] = pcs[0]
    keep = np.ones(iterations * k, bool)
    keep[body + 1::k] = outcome == 0           # the skipped op runs only when the branch falls through
    m = int(keep.sum())
    o = op[keep]
    dst = np.where(o == OP_ALU, STABLE_REGS + np.arange(m) % 8, -1)
    return _block(m, pc=pc[keep], size=size[keep], op=o, taken=taken[keep], target=target[keep], dst=dst,
                  src1=np.where(o == OP_ALU, 0, -1))


def agi_stream(n: int, distance: int, isa: str = "z/Architecture") -> InstrBlock:
    """Repeated [producer of base register; ``distance`` independent ALU ops; load through that base
    register].  The producer rotates over registers 8..15 so only the address dependence matters."""
    unit = 2 + distance
    units = max(1, n // unit)
    body = unit * 8
    pcs, sizes = _layout(isa, body + 1)
    reps = max(1, units // 8)
    idx = np.arange(body)
    pos = idx % unit
    base_reg = 8 + (idx // unit)
    op = np.where(pos == unit - 1, OP_LOAD, OP_ALU).astype(np.uint8)
    dst = np.where(pos == 0, base_reg, np.where(pos == unit - 1, 4 + (idx // unit) % 4, 4 + pos % 4))
    # fillers write registers 4..7, which nothing reads; loads write 4..7 as well
    src1 = np.where(pos == 0, 0, np.where(pos == unit - 1, base_reg, 1))
    areg = np.where(pos == unit - 1, base_reg, -1)
    addr = np.where(pos == unit - 1, DATA_BASE + (idx * 8) % 2048, 0)
    op = np.append(op, OP_JUMP)
    cols = dict(pc=np.tile(pcs, reps), size=np.tile(sizes, reps), op=np.tile(op, reps))
    tail = lambda a, fill: np.tile(np.append(a, fill), reps)  # noqa: E731
    cols.update(dst=tail(dst, -1), src1=tail(src1, -1), areg=tail(areg, -1), mem_addr=tail(addr, 0),
                mem_size=tail(np.where(op[:-1] == OP_LOAD, 8, 0), 0), taken=tail(np.zeros(body), 1),
                target=tail(np.zeros(body), pcs[0]))
    return _block(len(cols["pc"]), **cols)


# ============================================================================ random program
@njit(cache=True)
def _walk(n_instr, first, length, term, tgt, p_taken, u, start):
    """Random walk over static blocks: block ids and terminator outcomes until ``n_instr`` instructions."""
    nb = len(first)
    cap = n_instr // 2 + 16
    blocks = np.empty(cap, np.int64)
    outcome = np.empty(cap, np.uint8)
    stack = np.empty(64, np.int64)
    sp = 0
    b = start
    total = 0
    k = 0
    while total < n_instr and k < cap:
        blocks[k] = b
        total += length[b]
        t = term[b]
        nxt = (b + 1) % nb
        taken = 1
        if t == OP_BRANCH:
            taken = 1 if u[k] < p_taken[b] else 0
            if taken:
                nxt = tgt[b]
        elif t == OP_JUMP:
            nxt = tgt[b]
        elif t == OP_CALL:
            if sp == 64:
                for j in range(63):
                    stack[j] = stack[j + 1]
                sp = 63
            stack[sp] = (b + 1) % nb
            sp += 1
            nxt = tgt[b]
        else:
            if sp > 0:
                sp -= 1
                nxt = stack[sp]
            else:
                nxt = tgt[b]
        outcome[k] = taken
        b = nxt
        k += 1
    return blocks[:k], outcome[:k]


def random_program(n: int, seed: int, isa: str = "x86_64", *, code_kb: int = 32, data_kb: int = 2048,
                   mix: tuple[float, ...] = (0.50, 0.03, 0.002, 0.05, 0.27, 0.13, 0.0, 0.0, 0.0, 0.0),
                   block_mean: float = 6.0, dep_mean: float = 3.0, bias: float = 0.97,
                   random_sites: float = 0.05, partial_rate: float = 0.0, serial_rate: float = 0.0) -> InstrBlock:
    """A random program and a run of it: ``code_kb`` of static basic blocks (geometric lengths, mean
    ``block_mean``; bodies drawn from ``mix`` over OP_ALU..OP_STORE; terminators: conditional branches
    (77%), jumps (8%), calls (8%) and returns (7%) with fixed targets), walked at random: each branch site
    is taken with its own probability (``bias`` or ``1 - bias``; a fraction ``random_sites`` near 50%),
    calls and returns match through a stack.  Sources read registers written at geometric static
    distances (mean ``dep_mean``); each load/store site is a stack slot (50%), a sequential stream (30%)
    or random over ``data_kb`` (20%)."""
    rng = np.random.default_rng(seed)
    spec = isa_for(isa)
    n_static = max(16, code_kb * 1024 // 4)
    lengths = 1 + rng.geometric(1.0 / block_mean, size=n_static)
    nb = int(np.searchsorted(np.cumsum(lengths), n_static)) + 1
    lengths = lengths[:nb]
    first = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    ns = int(lengths.sum())
    mixa = np.asarray(mix[:OP_STORE + 1], float)
    sop = rng.choice(OP_STORE + 1, size=ns, p=mixa / mixa.sum()).astype(np.uint8)
    term = rng.choice(np.array([OP_BRANCH, OP_JUMP, OP_CALL, OP_RET]), size=nb, p=(0.77, 0.08, 0.08, 0.07))
    sop[first + lengths - 1] = term
    ssize = rng.choice(np.array(spec.sizes), size=ns, p=np.asarray(spec.size_weights) / sum(spec.size_weights))
    spc = (CODE_BASE + np.concatenate(([0], np.cumsum(ssize)[:-1]))).astype(np.uint64)
    # targets: a quarter of the branches close short loops (backward, taken with probability ``bias``), the rest skip
    # forward; jumps skip forward; calls go anywhere.  Every cycle of the walk can be left.
    backward = (rng.random(nb) < 0.25) & (term == OP_BRANCH)
    hop = np.where(backward, rng.integers(1, 5, nb), rng.integers(1, 17, nb))
    tgt = np.where(term == OP_CALL, rng.integers(0, nb, nb),
                   np.where((term == OP_BRANCH) & backward, np.arange(nb) - hop + 1, np.arange(nb) + hop)) % nb
    p_taken = np.where(backward, 0.85, np.where(rng.random(nb) < 0.3, bias, 1 - bias))
    p_taken = np.where(rng.random(nb) < random_sites, rng.uniform(0.3, 0.7, nb), p_taken)
    # static registers
    writes = sop <= OP_LOAD
    sdst = np.where(writes, rng.integers(STABLE_REGS, spec.gprs, ns), -1)
    idx = np.arange(ns)

    def source(p_none: float) -> np.ndarray:
        j = idx - rng.geometric(1.0 / dep_mean, size=ns)
        s = np.where(j >= 0, sdst[np.maximum(j, 0)], -1)
        s = np.where(s < 0, rng.integers(0, STABLE_REGS, ns), s)
        return np.where(rng.random(ns) < p_none, -1, s)

    ssrc1, ssrc2 = source(0.1), source(0.5)
    smem = (sop == OP_LOAD) | (sop == OP_STORE)
    sareg = np.where(smem, np.where(rng.random(ns) < 0.3, ssrc1, rng.integers(0, STABLE_REGS, ns)), -1)
    ssrc1 = np.where(smem, sareg, ssrc1)
    skind = rng.choice(3, size=ns, p=(0.5, 0.3, 0.2))
    sflags = np.zeros(ns, np.uint8)
    if partial_rate:
        sflags |= (rng.random(ns) < partial_rate).astype(np.uint8) * 1
        sflags |= ((rng.random(ns) < partial_rate) & (sop == OP_ALU)).astype(np.uint8) * 2
    if serial_rate:
        sflags |= (rng.random(ns) < serial_rate).astype(np.uint8) * 4
    # the walk
    blocks, outcome = _walk(n, first, lengths, term.astype(np.int64), tgt, p_taken, rng.random(n // 2 + 16), 0)
    reps = lengths[blocks]
    sidx = np.repeat(first[blocks], reps) + (np.arange(int(reps.sum())) - np.repeat(np.cumsum(reps) - reps, reps))
    sidx = sidx[:n]
    m = len(sidx)
    op = sop[sidx]
    last = np.cumsum(reps)[:len(blocks)] - 1
    taken = np.zeros(m, np.uint8)
    target = np.zeros(m, np.uint64)
    keep = last < m
    taken[last[keep]] = outcome[keep]
    nxt_block = np.append(blocks[1:], blocks[-1])
    target[last[keep]] = np.where(outcome[keep] == 1, spc[first[nxt_block[keep]]], 0)
    is_ret = op == OP_RET
    # a return's target is where the walk went next (the matching call's successor when the stack held one)
    # conditional branches not taken have no target; jumps, calls and taken branches target their block
    mem = smem[sidx]
    kind = skind[sidx]
    occurrence = np.zeros(m, np.int64)
    order = np.argsort(sidx, kind="stable")
    sorted_sites = sidx[order]
    starts = np.flatnonzero(np.concatenate(([True], sorted_sites[1:] != sorted_sites[:-1])))
    counts = np.diff(np.append(starts, m))
    occurrence[order] = np.arange(m) - np.repeat(starts, counts)
    stack_addr = 0x7FFF0000 + (sidx % 64) * 8
    stream_addr = DATA_BASE + ((sidx * 7919 * 64) % (data_kb * 1024)) + (occurrence * 8) % (64 * 1024)
    rand_addr = DATA_BASE + 0x8000000 + rng.integers(0, data_kb * 1024 // 8, m) * 8
    addr = np.where(kind == 0, stack_addr, np.where(kind == 1, stream_addr, rand_addr))
    del is_ret
    return _block(m, pc=spc[sidx], op=op, size=ssize[sidx], dst=sdst[sidx], src1=ssrc1[sidx], src2=ssrc2[sidx],
                  areg=sareg[sidx], mem_addr=np.where(mem, addr, 0), mem_size=np.where(mem, 8, 0), taken=taken,
                  target=target, flags=sflags[sidx])


drop_stale_caches("core_microbench", (isa, sys.modules[__name__]))
