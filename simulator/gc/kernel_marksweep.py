"""Numba kernels of the mark-sweep collector (JDK 1.2.2 classic style) and its sliding compaction.

Each collection is a sequence of phases run by :func:`ms_step`, which does the collector's work on the
heap arrays and writes, as it goes, the instructions a real collector executes for it into an
instruction buffer (see :mod:`simulator.gc.layout`).  ``ms_step`` returns when the buffer is nearly full
(ST_MORE: time the buffer, call again), when it needs a larger mark stack (ST_GROW_STACK) or a larger
buffer for one object (ST_NEED_BUF, ``S[S_NEED]`` instructions), or when the phases asked for are done
(ST_FINISHED, at P_SWEPT after a plain collection or at P_DONE after a compaction).

Phases and what they execute, per unit of work:

* clear   -- the mark bitmap is zeroed, one 8-byte store per 512 bytes of heap (the heap-size cost);
* roots   -- every slot of the root table is loaded; non-null ones are pushed on the mark stack;
* mark    -- pop a reference; load its bitmap word, test and set the mark bit; load the header and the
             class descriptor; load every reference field and push the non-null ones;
* sweep   -- walk the heap by sizes: load each header (the next address depends on it), load its
             bitmap word and test the mark bit; runs of dead objects and free chunks coalesce into one
             free chunk, whose header (size, next) is written when the run ends;
* forward, fix-roots, fix-refs, move -- Lisp-2 sliding compaction after the sweep: compute forwarding
             addresses (stored in the headers), rewrite every root and reference field through the
             target's forwarding word, then copy every object that moves, 8 bytes at a time.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from whatif.simulator.gc.layout import (BITMAP_BASE, CLASS_BASE, HEAP_BASE, PC_CLEAR, PC_FIXROOTS, PC_FIXUP, PC_FWD,
                                 PC_MARK, PC_MOVE, PC_ROOTS, PC_SWEEP, R_BIT, R_BMW, R_CLS, R_CNT, R_DST,
                                 R_FLD, R_HDR, R_HEAD, R_OBJ, R_POS, R_ROOT, R_RUN, R_SP, R_TMP, R_TST, ROOT_BASE,
                                 STACK_BASE, alu, branch, load, store)
from whatif.simulator.gc.state import (FAR, HIST_BINS, S_LASTLIVE, P_CLEAR, P_DONE, P_FIXROOTS, P_FIXUP, P_FWD, P_MARK, P_MOVE,
                                P_ROOTS, P_SWEEP, P_SWEPT, S_CFIELD, S_CNREF, S_COBJ, S_COPIED_BYTES,
                                S_COPIED_OBJ, S_DEAD_BYTES, S_DEAD_OBJ, S_DEST, S_HDR, S_HEAP, S_LIVE_BYTES,
                                S_LIVE_OBJ, S_MARK_VISITS, S_MAX_STACK, S_NEED, S_NF, S_NIDFREE, S_NROOTS,
                                S_OBJBYTES, S_OBJS, S_PHASE, S_POS, S_REFS_SCANNED, S_ROOTS_SCANNED, S_RUN,
                                S_TOP, ST_FINISHED, ST_GROW_STACK, ST_MORE, ST_NEED_BUF)

MARK_OBJ_INSTRS = 13     # most instructions one popped reference costs before its fields
FIELD_INSTRS = 5         # most instructions one reference field costs while marking
SWEEP_INSTRS = 14        # most instructions one heap block costs in the sweep


@njit(cache=True, inline="always")
def _bm(gran):
    """Address of the 32-bit bitmap word of a granule."""
    return BITMAP_BASE + (gran >> 5) * 4


@njit(cache=True, inline="always")
def _cls(payload):
    """Address of an object's class descriptor (classes are told apart by size here)."""
    return CLASS_BASE + ((payload >> 2) & 255) * 64


@njit(cache=True, inline="always")
def _hbin(payload):
    return min(payload >> 2, HIST_BINS - 1)


@njit(cache=True, inline="always")
def _close_run(H, B, n, emit, run, pos):
    """End a run of free granules [run, pos): it becomes one free chunk at the end of the free list."""
    S = H.S
    H.gmap[run] = -np.int32(pos - run)
    k = S[S_NF]
    H.f_start[k] = run << 3
    H.f_size[k] = (pos - run) << 3
    S[S_NF] = k + 1
    a = HEAP_BASE + (run << 3)
    n = alu(B, n, emit, PC_SWEEP + 32, R_TMP, R_POS, R_RUN)
    n = store(B, n, emit, PC_SWEEP + 36, R_TMP, R_RUN, a, 4)
    n = store(B, n, emit, PC_SWEEP + 40, R_HEAD, R_RUN, a + 4, 4)
    n = alu(B, n, emit, PC_SWEEP + 44, R_HEAD, R_RUN, -1)
    return n


@njit(cache=True)
def ms_step(H, B, emit, cap, stop_phase):
    """Run collection phases until ``stop_phase`` (P_SWEPT or P_DONE) is reached or the buffer fills.
    Returns ``(instructions written, status)``."""
    S = H.S
    hdr = S[S_HDR]
    gmap = H.gmap
    mark = H.mark
    mem = H.mem
    n = 0
    while True:
        ph = S[S_PHASE]
        if ph == stop_phase:
            return n, ST_FINISHED
        if ph == P_CLEAR:
            words = (S[S_HEAP] >> 9) + 1          # 8-byte bitmap words (one bit per 8-byte granule)
            pos = S[S_POS]
            if pos == 0:
                mark[:(S[S_HEAP] >> 3) + 1] = 0
            while pos < words:
                if emit and n + 3 > cap:
                    S[S_POS] = pos
                    return n, ST_MORE
                n = store(B, n, emit, PC_CLEAR, R_TMP, R_BIT, BITMAP_BASE + pos * 8, 8)
                n = alu(B, n, emit, PC_CLEAR + 4, R_BIT, R_BIT, -1)
                n = branch(B, n, emit, PC_CLEAR + 8, R_BIT, pos + 1 < words, PC_CLEAR)
                pos += 1
            S[S_PHASE] = P_ROOTS
            S[S_POS] = 0
        elif ph == P_ROOTS:
            slot = S[S_POS]
            top = S[S_TOP]
            nroots = S[S_NROOTS]
            while slot < nroots:
                if emit and n + 5 > cap:
                    S[S_POS] = slot
                    S[S_TOP] = top
                    return n, ST_MORE
                if top >= len(H.stack):
                    S[S_POS] = slot
                    S[S_TOP] = top
                    return n, ST_GROW_STACK
                r = H.r_addr[slot]
                n = load(B, n, emit, PC_ROOTS, R_OBJ, R_ROOT, ROOT_BASE + 4 * slot, 4)
                n = alu(B, n, emit, PC_ROOTS + 4, R_ROOT, R_ROOT, -1)
                n = branch(B, n, emit, PC_ROOTS + 8, R_OBJ, r == 0, PC_ROOTS + 20)
                if r != 0:
                    H.stack[top] = r - 1
                    n = store(B, n, emit, PC_ROOTS + 12, R_OBJ, R_SP, STACK_BASE + 4 * top, 4)
                    n = alu(B, n, emit, PC_ROOTS + 16, R_SP, R_SP, -1)
                    top += 1
                n = branch(B, n, emit, PC_ROOTS + 20, R_ROOT, slot + 1 < nroots, PC_ROOTS)
                slot += 1
            S[S_ROOTS_SCANNED] += nroots
            S[S_TOP] = top
            S[S_MAX_STACK] = max(S[S_MAX_STACK], top)
            S[S_PHASE] = P_MARK
            S[S_COBJ] = -1
        elif ph == P_MARK:
            top = S[S_TOP]
            while True:
                if S[S_COBJ] < 0:
                    if top == 0:
                        break
                    if emit and n + MARK_OBJ_INSTRS > cap:
                        S[S_TOP] = top
                        return n, ST_MORE
                    top -= 1
                    a = H.stack[top]
                    g = a >> 3
                    S[S_MARK_VISITS] += 1
                    n = load(B, n, emit, PC_MARK, R_OBJ, R_SP, STACK_BASE + 4 * top, 4)
                    n = alu(B, n, emit, PC_MARK + 4, R_SP, R_SP, -1)
                    n = alu(B, n, emit, PC_MARK + 8, R_BIT, R_OBJ, -1)
                    n = load(B, n, emit, PC_MARK + 12, R_BMW, R_BIT, _bm(g), 4)
                    n = alu(B, n, emit, PC_MARK + 16, R_TST, R_BMW, R_BIT)
                    marked = mark[g] != 0
                    n = branch(B, n, emit, PC_MARK + 20, R_TST, marked, PC_MARK + 72)
                    if marked:
                        n = branch(B, n, emit, PC_MARK + 72, R_SP, top > 0, PC_MARK)
                        continue
                    mark[g] = 1
                    oid = gmap[g]
                    nf = np.int64(H.o_nref[oid])
                    n = alu(B, n, emit, PC_MARK + 24, R_BMW, R_BMW, R_BIT)
                    n = store(B, n, emit, PC_MARK + 28, R_BMW, R_BIT, _bm(g), 4)
                    n = load(B, n, emit, PC_MARK + 32, R_HDR, R_OBJ, HEAP_BASE + a, 4)
                    n = load(B, n, emit, PC_MARK + 36, R_CLS, R_HDR, _cls(np.int64(H.o_payload[oid])), 4)
                    n = alu(B, n, emit, PC_MARK + 40, R_CNT, R_CLS, -1)
                    n = branch(B, n, emit, PC_MARK + 44, R_CNT, nf == 0, PC_MARK + 72)
                    if nf == 0:
                        n = branch(B, n, emit, PC_MARK + 72, R_SP, top > 0, PC_MARK)
                        continue
                    S[S_COBJ] = a
                    S[S_CFIELD] = 0
                    S[S_CNREF] = nf
                a = S[S_COBJ]
                k = S[S_CFIELD]
                nf = S[S_CNREF]
                base = (a + hdr) >> 2
                while k < nf:
                    if emit and n + FIELD_INSTRS + 1 > cap:
                        S[S_CFIELD] = k
                        S[S_TOP] = top
                        return n, ST_MORE
                    if top >= len(H.stack):
                        S[S_CFIELD] = k
                        S[S_TOP] = top
                        return n, ST_GROW_STACK
                    t = np.int64(mem[base + k])
                    n = load(B, n, emit, PC_MARK + 48, R_FLD, R_OBJ, HEAP_BASE + a + hdr + 4 * k, 4)
                    n = branch(B, n, emit, PC_MARK + 52, R_FLD, t == 0, PC_MARK + 64)
                    if t != 0:
                        H.stack[top] = t - 1
                        n = store(B, n, emit, PC_MARK + 56, R_FLD, R_SP, STACK_BASE + 4 * top, 4)
                        n = alu(B, n, emit, PC_MARK + 60, R_SP, R_SP, -1)
                        top += 1
                    n = branch(B, n, emit, PC_MARK + 64, R_CNT, k + 1 < nf, PC_MARK + 48)
                    k += 1
                S[S_REFS_SCANNED] += nf
                if top > S[S_MAX_STACK]:
                    S[S_MAX_STACK] = top
                S[S_COBJ] = -1
                n = branch(B, n, emit, PC_MARK + 72, R_SP, top > 0, PC_MARK)
            S[S_TOP] = 0
            S[S_PHASE] = P_SWEEP
            S[S_POS] = 0
            S[S_RUN] = -1
            S[S_NF] = 0
            S[S_LASTLIVE] = -FAR
        elif ph == P_SWEEP:
            pos = S[S_POS]
            run = S[S_RUN]
            end = S[S_HEAP] >> 3
            while pos < end:
                if emit and n + SWEEP_INSTRS > cap:
                    S[S_POS] = pos
                    S[S_RUN] = run
                    return n, ST_MORE
                v = np.int64(gmap[pos])
                isobj = v >= 0
                if isobj:
                    g = np.int64(H.o_size[v]) >> 3
                    live = mark[pos] != 0
                else:
                    g = -v
                    live = False
                a = HEAP_BASE + (pos << 3)
                n = load(B, n, emit, PC_SWEEP, R_HDR, R_POS, a, 4)
                n = alu(B, n, emit, PC_SWEEP + 4, R_BIT, R_POS, -1)
                n = load(B, n, emit, PC_SWEEP + 8, R_BMW, R_BIT, _bm(pos), 4)
                n = alu(B, n, emit, PC_SWEEP + 12, R_TST, R_BMW, R_BIT)
                n = branch(B, n, emit, PC_SWEEP + 16, R_TST, live, PC_SWEEP + 28)
                if live:
                    n = branch(B, n, emit, PC_SWEEP + 28, R_RUN, run < 0, PC_SWEEP + 48)
                    if run >= 0:
                        n = _close_run(H, B, n, emit, run, pos)
                        run = -1
                    p = np.int64(H.o_payload[v])
                    S[S_LIVE_OBJ] += 1
                    S[S_LIVE_BYTES] += g << 3
                    H.hist_live[_hbin(p)] += 1
                    H.hist_gap[_hbin(max(0, (pos << 3) - S[S_LASTLIVE] - hdr))] += 1
                    S[S_LASTLIVE] = pos << 3
                else:
                    n = branch(B, n, emit, PC_SWEEP + 20, R_RUN, run >= 0, PC_SWEEP + 48)
                    if run < 0:
                        run = pos
                        n = alu(B, n, emit, PC_SWEEP + 24, R_RUN, R_POS, -1)
                    if isobj:
                        p = np.int64(H.o_payload[v])
                        S[S_DEAD_OBJ] += 1
                        S[S_DEAD_BYTES] += g << 3
                        H.hist_dead[_hbin(p)] += 1
                        H.id_free[S[S_NIDFREE]] = v
                        S[S_NIDFREE] += 1
                n = alu(B, n, emit, PC_SWEEP + 48, R_POS, R_POS, R_HDR)
                n = branch(B, n, emit, PC_SWEEP + 52, R_POS, pos + g < end, PC_SWEEP)
                pos += g
            if run >= 0:
                n = _close_run(H, B, n, emit, run, pos)
            S[S_OBJS] -= S[S_DEAD_OBJ]
            S[S_OBJBYTES] -= S[S_DEAD_BYTES]
            S[S_PHASE] = P_SWEPT
            S[S_POS] = 0
        elif ph == P_SWEPT:
            # a compaction was asked for (stop_phase == P_DONE)
            S[S_PHASE] = P_FWD
            S[S_POS] = 0
            S[S_DEST] = 0
        elif ph == P_FWD:
            pos = S[S_POS]
            dest = S[S_DEST]
            end = S[S_HEAP] >> 3
            while pos < end:
                if emit and n + 8 > cap:
                    S[S_POS] = pos
                    S[S_DEST] = dest
                    return n, ST_MORE
                v = np.int64(gmap[pos])
                a = HEAP_BASE + (pos << 3)
                n = load(B, n, emit, PC_FWD, R_HDR, R_POS, a, 4)
                n = alu(B, n, emit, PC_FWD + 4, R_TST, R_HDR, -1)
                n = branch(B, n, emit, PC_FWD + 8, R_TST, v < 0, PC_FWD + 20)
                if v >= 0:
                    g = np.int64(H.o_size[v]) >> 3
                    H.o_fwd[v] = dest
                    n = store(B, n, emit, PC_FWD + 12, R_DST, R_POS, a, 4)
                    n = alu(B, n, emit, PC_FWD + 16, R_DST, R_DST, R_HDR)
                    dest += g << 3
                else:
                    g = -v
                n = alu(B, n, emit, PC_FWD + 20, R_POS, R_POS, R_HDR)
                n = branch(B, n, emit, PC_FWD + 24, R_POS, pos + g < end, PC_FWD)
                pos += g
            S[S_DEST] = dest
            S[S_PHASE] = P_FIXROOTS
            S[S_POS] = 0
        elif ph == P_FIXROOTS:
            slot = S[S_POS]
            nroots = S[S_NROOTS]
            while slot < nroots:
                if emit and n + 6 > cap:
                    S[S_POS] = slot
                    return n, ST_MORE
                r = H.r_addr[slot]
                n = load(B, n, emit, PC_FIXROOTS, R_OBJ, R_ROOT, ROOT_BASE + 4 * slot, 4)
                n = branch(B, n, emit, PC_FIXROOTS + 4, R_OBJ, r == 0, PC_FIXROOTS + 16)
                if r != 0:
                    t = r - 1
                    n = load(B, n, emit, PC_FIXROOTS + 8, R_TMP, R_OBJ, HEAP_BASE + t, 4)
                    n = store(B, n, emit, PC_FIXROOTS + 12, R_TMP, R_ROOT, ROOT_BASE + 4 * slot, 4)
                    H.r_addr[slot] = H.o_fwd[gmap[t >> 3]] + 1
                n = branch(B, n, emit, PC_FIXROOTS + 16, R_ROOT, slot + 1 < nroots, PC_FIXROOTS)
                slot += 1
            S[S_PHASE] = P_FIXUP
            S[S_POS] = 0
            S[S_COBJ] = -1
        elif ph == P_FIXUP:
            pos = S[S_POS]
            end = S[S_HEAP] >> 3
            while pos < end:
                v = np.int64(gmap[pos])
                a = pos << 3
                if S[S_COBJ] < 0:
                    if emit and n + 8 > cap:
                        S[S_POS] = pos
                        return n, ST_MORE
                    n = load(B, n, emit, PC_FIXUP, R_HDR, R_POS, HEAP_BASE + a, 4)
                    n = alu(B, n, emit, PC_FIXUP + 4, R_TST, R_HDR, -1)
                    n = branch(B, n, emit, PC_FIXUP + 8, R_TST, v < 0, PC_FIXUP + 40)
                    if v >= 0:
                        n = load(B, n, emit, PC_FIXUP + 12, R_CLS, R_HDR, _cls(np.int64(H.o_payload[v])), 4)
                        S[S_COBJ] = a
                        S[S_CFIELD] = 0
                if S[S_COBJ] >= 0:
                    nf = np.int64(H.o_nref[v])
                    k = S[S_CFIELD]
                    base = (a + hdr) >> 2
                    while k < nf:
                        if emit and n + 6 > cap:
                            S[S_POS] = pos
                            S[S_CFIELD] = k
                            return n, ST_MORE
                        t = np.int64(mem[base + k])
                        fa = HEAP_BASE + a + hdr + 4 * k
                        n = load(B, n, emit, PC_FIXUP + 16, R_FLD, R_POS, fa, 4)
                        n = branch(B, n, emit, PC_FIXUP + 20, R_FLD, t == 0, PC_FIXUP + 32)
                        if t != 0:
                            n = load(B, n, emit, PC_FIXUP + 24, R_TMP, R_FLD, HEAP_BASE + t - 1, 4)
                            n = store(B, n, emit, PC_FIXUP + 28, R_TMP, R_POS, fa, 4)
                            mem[base + k] = np.int32(H.o_fwd[gmap[(t - 1) >> 3]] + 1)
                        n = branch(B, n, emit, PC_FIXUP + 32, R_CNT, k + 1 < nf, PC_FIXUP + 16)
                        k += 1
                    S[S_COBJ] = -1
                    g = np.int64(H.o_size[v]) >> 3
                else:
                    g = -v
                n = alu(B, n, emit, PC_FIXUP + 40, R_POS, R_POS, R_HDR)
                n = branch(B, n, emit, PC_FIXUP + 44, R_POS, pos + g < end, PC_FIXUP)
                pos += g
            S[S_PHASE] = P_MOVE
            S[S_POS] = 0
        elif ph == P_MOVE:
            pos = S[S_POS]
            end = S[S_HEAP] >> 3
            while pos < end:
                v = np.int64(gmap[pos])
                a = pos << 3
                if v >= 0:
                    size = np.int64(H.o_size[v])
                    new = H.o_fwd[v]
                    moves = new != a
                    need = 6 + (4 * (size >> 3) if moves else 0)
                else:
                    size = (-v) << 3
                    moves = False
                    need = 6
                if emit and n + need > cap:
                    S[S_POS] = pos
                    if n == 0:
                        S[S_NEED] = need
                        return n, ST_NEED_BUF
                    return n, ST_MORE
                n = load(B, n, emit, PC_MOVE, R_HDR, R_POS, HEAP_BASE + a, 4)
                n = alu(B, n, emit, PC_MOVE + 4, R_TST, R_HDR, -1)
                n = branch(B, n, emit, PC_MOVE + 8, R_TST, not moves, PC_MOVE + 32)
                if moves:
                    for off in range(0, size, 8):
                        n = load(B, n, emit, PC_MOVE + 12, R_TMP, R_POS, HEAP_BASE + a + off, 8)
                        n = store(B, n, emit, PC_MOVE + 16, R_TMP, R_DST, HEAP_BASE + new + off, 8)
                        n = alu(B, n, emit, PC_MOVE + 20, R_CNT, R_CNT, -1)
                        n = branch(B, n, emit, PC_MOVE + 24, R_CNT, off + 8 < size, PC_MOVE + 12)
                    nf = np.int64(H.o_nref[v])
                    src = (a + hdr) >> 2
                    dst = (new + hdr) >> 2
                    for k in range(nf):
                        mem[dst + k] = mem[src + k]
                    gmap[new >> 3] = v
                    H.o_addr[v] = new
                    S[S_COPIED_OBJ] += 1
                    S[S_COPIED_BYTES] += size
                n = alu(B, n, emit, PC_MOVE + 32, R_POS, R_POS, R_HDR)
                n = branch(B, n, emit, PC_MOVE + 36, R_POS, pos + (size >> 3) < end, PC_MOVE)
                pos += size >> 3
            dest = S[S_DEST]
            heap = S[S_HEAP]
            S[S_NF] = 0
            if dest < heap:
                gmap[dest >> 3] = -np.int32((heap - dest) >> 3)
                H.f_start[0] = dest
                H.f_size[0] = heap - dest
                S[S_NF] = 1
                n = store(B, n, emit, PC_MOVE + 40, R_TMP, R_DST, HEAP_BASE + dest, 4)
                n = store(B, n, emit, PC_MOVE + 44, R_HEAD, R_DST, HEAP_BASE + dest + 4, 4)
            S[S_PHASE] = P_DONE
        else:
            return n, ST_FINISHED
