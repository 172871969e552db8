"""Numba kernel of the semispace copying collector (Cheney's algorithm), the what-if alternative.

The heap is split into two halves; the mutator bumps objects out of the current half.  A collection
evacuates every object reachable from the roots into the other half: roots first, then a scan pointer
walks the copied objects and evacuates what their reference fields point to.  Evacuating loads the old
header (a forwarding address there means "already copied"), copies the object 8 bytes at a time, and
stores the forwarding address; the reference field is then rewritten.  Dead objects are never touched
(their accounting below costs no instructions).  ``cp_step`` follows the protocol of
:func:`simulator.gc.kernel_marksweep.ms_step`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from whatif.simulator.gc.layout import (CLASS_BASE, HEAP_BASE, PC_CROOTS, PC_EVAC, PC_SCAN, R_CLS, R_CNT, R_DST,
                                 R_FLD, R_HDR, R_OBJ, R_POS, R_ROOT, R_TMP, R_TST, ROOT_BASE, alu, branch, load,
                                 store)
from whatif.simulator.gc.state import (FAR, HIST_BINS, P_CDEAD, P_CROOTS, P_DONE, P_SCAN, S_CFIELD, S_COBJ,
                                S_COPIED_BYTES, S_COPIED_OBJ, S_DEAD_BYTES, S_DEAD_OBJ, S_DEST, S_EPOCH, S_FROM,
                                S_HDR, S_LIVE_BYTES, S_LIVE_OBJ, S_NEED, S_NIDFREE, S_NROOTS, S_OBJBYTES,
                                S_OBJS, S_PHASE, S_POS, S_REFS_SCANNED, S_ROOTS_SCANNED, S_SCAN,
                                S_SEMISIZE, ST_FINISHED, ST_MORE, ST_NEED_BUF)


@njit(cache=True, inline="always")
def _hbin(payload):
    return min(payload >> 2, HIST_BINS - 1)


@njit(cache=True, inline="always")
def _evac_cost(H, t):
    """Instructions evacuating the object at heap offset ``t`` takes (3 when it was already copied)."""
    oid = H.gmap[t >> 3]
    if H.o_copied[oid] == H.S[S_EPOCH]:
        return 3
    return 6 + 4 * (np.int64(H.o_size[oid]) >> 3)


@njit(cache=True, inline="always")
def _evacuate(H, B, n, emit, t, src_reg):
    """Copy the object at from-space offset ``t`` unless already copied; returns (n, new offset)."""
    S = H.S
    oid = np.int64(H.gmap[t >> 3])
    n = load(B, n, emit, PC_EVAC, R_HDR, src_reg, HEAP_BASE + t, 4)
    n = alu(B, n, emit, PC_EVAC + 4, R_TST, R_HDR, -1)
    done = H.o_copied[oid] == S[S_EPOCH]
    n = branch(B, n, emit, PC_EVAC + 8, R_TST, done, PC_EVAC + 36)
    if done:
        return n, H.o_addr[oid]
    size = np.int64(H.o_size[oid])
    new = S[S_DEST]
    n = alu(B, n, emit, PC_EVAC + 12, R_CNT, R_HDR, -1)
    for off in range(0, size, 8):
        n = load(B, n, emit, PC_EVAC + 16, R_TMP, src_reg, HEAP_BASE + t + off, 8)
        n = store(B, n, emit, PC_EVAC + 20, R_TMP, R_DST, HEAP_BASE + new + off, 8)
        n = alu(B, n, emit, PC_EVAC + 24, R_CNT, R_CNT, -1)
        n = branch(B, n, emit, PC_EVAC + 28, R_CNT, off + 8 < size, PC_EVAC + 16)
    n = store(B, n, emit, PC_EVAC + 32, R_DST, src_reg, HEAP_BASE + t, 4)
    n = alu(B, n, emit, PC_EVAC + 36, R_DST, R_DST, R_CNT)
    hdr = S[S_HDR]
    nf = np.int64(H.o_nref[oid])
    src = (t + hdr) >> 2
    dst = (new + hdr) >> 2
    for k in range(nf):
        H.mem[dst + k] = H.mem[src + k]
    H.gmap[new >> 3] = oid
    H.o_addr[oid] = new
    H.o_copied[oid] = S[S_EPOCH]
    S[S_DEST] = new + size
    S[S_LIVE_OBJ] += 1
    S[S_LIVE_BYTES] += size
    S[S_COPIED_OBJ] += 1
    S[S_COPIED_BYTES] += size
    H.hist_live[_hbin(np.int64(H.o_payload[oid]))] += 1
    return n, new


@njit(cache=True)
def cp_step(H, B, emit, cap, stop_phase):
    """Run copying-collection phases until ``stop_phase`` (P_DONE) or the buffer fills."""
    S = H.S
    hdr = S[S_HDR]
    n = 0
    while True:
        ph = S[S_PHASE]
        if ph == stop_phase:
            return n, ST_FINISHED
        if ph == P_CROOTS:
            slot = S[S_POS]
            nroots = S[S_NROOTS]
            while slot < nroots:
                r = H.r_addr[slot]
                need = 6 + (_evac_cost(H, r - 1) if r != 0 else 0)
                if emit and n + need > cap:
                    S[S_POS] = slot
                    if n == 0:
                        S[S_NEED] = need
                        return n, ST_NEED_BUF
                    return n, ST_MORE
                n = load(B, n, emit, PC_CROOTS, R_OBJ, R_ROOT, ROOT_BASE + 4 * slot, 4)
                n = branch(B, n, emit, PC_CROOTS + 4, R_OBJ, r == 0, PC_CROOTS + 12)
                if r != 0:
                    n, new = _evacuate(H, B, n, emit, r - 1, R_OBJ)
                    H.r_addr[slot] = new + 1
                    n = store(B, n, emit, PC_CROOTS + 8, R_DST, R_ROOT, ROOT_BASE + 4 * slot, 4)
                n = branch(B, n, emit, PC_CROOTS + 12, R_ROOT, slot + 1 < nroots, PC_CROOTS)
                slot += 1
            S[S_ROOTS_SCANNED] += nroots
            S[S_PHASE] = P_SCAN
            S[S_COBJ] = -1
        elif ph == P_SCAN:
            scan = S[S_SCAN]
            while scan < S[S_DEST]:
                oid = np.int64(H.gmap[scan >> 3])
                if S[S_COBJ] < 0:
                    if emit and n + 6 > cap:
                        S[S_SCAN] = scan
                        return n, ST_MORE
                    n = load(B, n, emit, PC_SCAN, R_HDR, R_POS, HEAP_BASE + scan, 4)
                    cls = CLASS_BASE + ((np.int64(H.o_payload[oid]) >> 2) & 255) * 64
                    n = load(B, n, emit, PC_SCAN + 4, R_CLS, R_HDR, cls, 4)
                    n = alu(B, n, emit, PC_SCAN + 8, R_CNT, R_CLS, -1)
                    S[S_COBJ] = scan
                    S[S_CFIELD] = 0
                nf = np.int64(H.o_nref[oid])
                k = S[S_CFIELD]
                base = (scan + hdr) >> 2
                while k < nf:
                    t = np.int64(H.mem[base + k])
                    need = 4 + (_evac_cost(H, t - 1) if t != 0 else 0)
                    if emit and n + need > cap:
                        S[S_SCAN] = scan
                        S[S_CFIELD] = k
                        if n == 0:
                            S[S_NEED] = need
                            return n, ST_NEED_BUF
                        return n, ST_MORE
                    fa = HEAP_BASE + scan + hdr + 4 * k
                    n = load(B, n, emit, PC_SCAN + 12, R_FLD, R_POS, fa, 4)
                    n = branch(B, n, emit, PC_SCAN + 16, R_FLD, t == 0, PC_SCAN + 24)
                    if t != 0:
                        n, new = _evacuate(H, B, n, emit, t - 1, R_FLD)
                        H.mem[base + k] = np.int32(new + 1)
                        n = store(B, n, emit, PC_SCAN + 20, R_DST, R_POS, fa, 4)
                    n = branch(B, n, emit, PC_SCAN + 24, R_CNT, k + 1 < nf, PC_SCAN + 12)
                    k += 1
                S[S_REFS_SCANNED] += nf
                S[S_COBJ] = -1
                size = np.int64(H.o_size[oid])
                if emit and n + 2 > cap:
                    # the object is done; only its loop instructions remain
                    S[S_SCAN] = scan + size
                    return n, ST_MORE
                n = alu(B, n, emit, PC_SCAN + 28, R_POS, R_POS, R_HDR)
                n = branch(B, n, emit, PC_SCAN + 32, R_POS, scan + size < S[S_DEST], PC_SCAN)
                scan += size
            S[S_SCAN] = scan
            S[S_PHASE] = P_CDEAD
        elif ph == P_CDEAD:
            # account for the objects left behind in from-space (no instructions: they are never touched)
            pos = S[S_FROM] >> 3
            end = (S[S_FROM] + S[S_SEMISIZE]) >> 3
            epoch = S[S_EPOCH]
            last = -FAR
            while pos < end:
                v = np.int64(H.gmap[pos])
                if v >= 0:
                    g = np.int64(H.o_size[v]) >> 3
                    if H.o_copied[v] == epoch:
                        H.hist_gap[_hbin(max(0, (pos << 3) - last - hdr))] += 1
                        last = pos << 3
                    else:
                        S[S_DEAD_OBJ] += 1
                        S[S_DEAD_BYTES] += g << 3
                        H.hist_dead[_hbin(np.int64(H.o_payload[v]))] += 1
                        H.id_free[S[S_NIDFREE]] = v
                        S[S_NIDFREE] += 1
                else:
                    g = -v
                pos += g
            S[S_OBJS] = S[S_LIVE_OBJ]
            S[S_OBJBYTES] = S[S_LIVE_BYTES]
            S[S_PHASE] = P_DONE
        else:
            return n, ST_FINISHED
