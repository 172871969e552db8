"""Numba kernels of the mutator side of the heap: allocation from the free list, object-graph
construction (clusters of objects that share a lifetime, reference fields, cross references into
long-lived data), and the bookkeeping a collection starts and ends with.

Allocation is next-fit over the address-ordered free list the last sweep built: objects are bumped
out of the current free chunk; a request that does not fit moves on to the next chunk (the skipped
remainder stays a free chunk until the next sweep); reaching the end of the list is an allocation
failure, which triggers a collection.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from whatif.simulator.gc.state import (IMMORTAL, A_DONE, A_FAIL, A_GROW_ROOTS, OPEN_CAP, S_BEND, S_BP, S_CDEATH, S_CIMM,
                                S_CLOCK, S_FI, S_HDR, S_NALLOC, S_NEED, S_NF, S_NIDFREE, S_NIDS, S_NIMM,
                                S_NOPEN, S_NQ, S_NRFREE, S_NROOTS, S_OBJBYTES, S_OBJS)


@njit(cache=True, inline="always")
def object_bytes(hdr, payload):
    """Heap bytes of an object: header plus payload, rounded up to the 8-byte granule."""
    return (hdr + payload + 7) & ~np.int64(7)


@njit(cache=True, inline="always")
def seal(H):
    """Record the unused rest of the current chunk as a free chunk, so the heap can be walked."""
    S = H.S
    bp = S[S_BP]
    be = S[S_BEND]
    if be > bp:
        H.gmap[bp >> 3] = -np.int32((be - bp) >> 3)


@njit(cache=True, inline="always")
def _q_push(H, death, slot):
    S = H.S
    i = S[S_NQ]
    S[S_NQ] = i + 1
    qd = H.q_death
    qs = H.q_slot
    while i > 0:
        parent = (i - 1) >> 1
        if qd[parent] <= death:
            break
        qd[i] = qd[parent]
        qs[i] = qs[parent]
        i = parent
    qd[i] = death
    qs[i] = slot


@njit(cache=True, inline="always")
def _q_pop(H):
    S = H.S
    qd = H.q_death
    qs = H.q_slot
    slot = qs[0]
    n = S[S_NQ] - 1
    S[S_NQ] = n
    d = qd[n]
    s = qs[n]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and qd[c + 1] < qd[c]:
            c += 1
        if qd[c] >= d:
            break
        qd[i] = qd[c]
        qs[i] = qs[c]
        i = c
    qd[i] = d
    qs[i] = s
    return slot


@njit(cache=True, inline="always")
def expire_roots(H, now):
    """The mutator drops every root whose cluster's death time has passed (the slot is free for reuse);
    a cluster under construction that has died takes no further children.  Returns the roots dropped."""
    S = H.S
    dropped = 0
    while S[S_NQ] > 0 and H.q_death[0] <= now:
        slot = _q_pop(H)
        H.r_addr[slot] = 0
        H.r_free[S[S_NRFREE]] = slot
        S[S_NRFREE] += 1
        dropped += 1
    if S[S_CDEATH] <= now:
        S[S_NOPEN] = 0
    return dropped


@njit(cache=True, inline="always")
def _reuse_or_new(S, free, n_free, n_used):
    """The last number on the ``free`` stack (``S[n_free]`` long), else the next unused one (``S[n_used]``)."""
    if S[n_free] > 0:
        S[n_free] -= 1
        return free[S[n_free]]
    k = S[n_used]
    S[n_used] += 1
    return k


@njit(cache=True, inline="always")
def _root_slot(H, addr, death):
    S = H.S
    slot = _reuse_or_new(S, H.r_free, S_NRFREE, S_NROOTS)
    H.r_addr[slot] = addr + 1
    H.r_death[slot] = death
    if death != IMMORTAL:
        _q_push(H, death, slot)
    return slot


@njit(cache=True, inline="always")
def _bump_room(H, need):
    """Move the bump pointer on through the free chunks until one holds ``need`` bytes; False (cursor
    past the last chunk, ``S[S_NEED] = need``) when none does."""
    S = H.S
    while S[S_BP] + need > S[S_BEND]:
        seal(H)
        fi = S[S_FI] + 1
        if fi >= S[S_NF]:
            S[S_FI] = S[S_NF]
            S[S_BP] = 0
            S[S_BEND] = 0
            S[S_NEED] = need
            return False
        S[S_FI] = fi
        S[S_BP] = H.f_start[fi]
        S[S_BEND] = H.f_start[fi] + H.f_size[fi]
    return True


@njit(cache=True, inline="always")
def _place(H, need, payload, nref):
    """Take ``need`` bytes at the bump pointer for a new object (the caller made room): a free object id,
    its record (address, size, payload, reference fields), reference fields nulled.  Returns
    ``(addr, oid, reference fields)``."""
    S = H.S
    addr = S[S_BP]
    S[S_BP] = addr + need
    oid = _reuse_or_new(S, H.id_free, S_NIDFREE, S_NIDS)
    nf = min(nref, payload // 4)
    H.gmap[addr >> 3] = oid
    H.o_addr[oid] = addr
    H.o_size[oid] = need
    H.o_payload[oid] = payload
    H.o_nref[oid] = nf
    base = (addr + S[S_HDR]) >> 2
    for k in range(nf):
        H.mem[base + k] = 0
    return addr, oid, nf


@njit(cache=True)
def alloc_batch(H, payload, nref, cstart, death, immortal, u_attach, u_cross, cross_p, out_addr, start, stop):
    """Allocate objects ``start .. stop-1`` of an allocation stream (their heap offsets go to
    ``out_addr``).  Returns ``(i, status)``: the first object not allocated and A_DONE, A_FAIL (object
    ``i`` does not fit: collect, then call again from ``i``; ``S[S_NEED]`` holds its bytes) or
    A_GROW_ROOTS (the root table is full)."""
    S = H.S
    hdr = S[S_HDR]
    mem = H.mem
    for i in range(start, stop):
        p = np.int64(payload[i])
        need = object_bytes(hdr, p)
        if not _bump_room(H, need):
            return i, A_FAIL
        if S[S_NQ] > 0 and H.q_death[0] <= S[S_CLOCK]:
            expire_roots(H, S[S_CLOCK])
        starts = cstart[i] != 0
        if (starts or S[S_NOPEN] == 0) and S[S_NRFREE] == 0 and S[S_NROOTS] >= len(H.r_addr):
            return i, A_GROW_ROOTS
        addr, oid, nf = _place(H, need, p, np.int64(nref[i]))
        out_addr[i] = addr
        base = (addr + hdr) >> 2
        # place the object in its cluster's graph
        if starts:
            S[S_CDEATH] = death[i]
            S[S_CIMM] = immortal[i]
            S[S_NOPEN] = 0
            _root_slot(H, addr, death[i])
        elif S[S_NOPEN] > 0:
            no = S[S_NOPEN]
            j = min(np.int64(u_attach[i] * no), no - 1)
            pid = H.open_id[j]
            mem[((H.o_addr[pid] + hdr) >> 2) + H.open_f[j]] = np.int32(addr + 1)
            H.open_id[j] = H.open_id[no - 1]
            H.open_f[j] = H.open_f[no - 1]
            S[S_NOPEN] = no - 1
        else:
            _root_slot(H, addr, S[S_CDEATH])
        first = 0
        if nf > 0 and u_cross[i] < cross_p and S[S_NIMM] > 0:
            t = H.imm[min(np.int64(u_cross[i] / cross_p * S[S_NIMM]), S[S_NIMM] - 1)]
            mem[base] = np.int32(H.o_addr[t] + 1)
            first = 1
        for k in range(first, nf):
            no = S[S_NOPEN]
            if no >= OPEN_CAP:
                break
            H.open_id[no] = oid
            H.open_f[no] = k
            S[S_NOPEN] = no + 1
        if S[S_CIMM] != 0:
            H.imm[S[S_NIMM]] = oid
            S[S_NIMM] += 1
        S[S_CLOCK] += need
        S[S_NALLOC] += 1
        S[S_OBJS] += 1
        S[S_OBJBYTES] += need
    return stop, A_DONE


@njit(cache=True)
def reset_cursor(H):
    """Point the allocator at the first free chunk after a collection."""
    S = H.S
    S[S_FI] = 0
    if S[S_NF] > 0:
        S[S_BP] = H.f_start[0]
        S[S_BEND] = H.f_start[0] + H.f_size[0]
    else:
        S[S_BP] = 0
        S[S_BEND] = 0


@njit(cache=True)
def free_stats(H):
    """(free bytes, largest free chunk) of the free list."""
    S = H.S
    total = 0
    largest = 0
    for k in range(S[S_NF]):
        sz = H.f_size[k]
        total += sz
        if sz > largest:
            largest = sz
    return total, largest


@njit(cache=True)
def fits(H, need):
    """True when some free chunk can hold ``need`` bytes."""
    S = H.S
    for k in range(S[S_NF]):
        if H.f_size[k] >= need:
            return True
    return False


@njit(cache=True)
def alloc_raw(H, payload, nref):
    """Allocate one object outside any cluster (microbenchmarks build their own graphs); its reference
    fields are null.  Returns its heap offset, or -1 when no free chunk holds it."""
    S = H.S
    hdr = S[S_HDR]
    need = object_bytes(hdr, np.int64(payload))
    if not _bump_room(H, need):
        return -1
    addr, _, _ = _place(H, need, np.int64(payload), np.int64(nref))
    S[S_CLOCK] += need
    S[S_NALLOC] += 1
    S[S_OBJS] += 1
    S[S_OBJBYTES] += need
    return addr


@njit(cache=True)
def add_root(H, addr, death):
    """Register a root slot holding ``addr`` (-1 for a null slot) until ``death``; returns the slot."""
    return _root_slot(H, addr, death)


@njit(cache=True, inline="always")
def set_field(H, addr, k, target):
    """Store ``target`` (a heap offset, or -1 for null) into reference field ``k`` of the object at ``addr``.
    Inlined into the kernels that call it: a call compiled a copy per constant field index (``0``, ``1``)."""
    H.mem[((addr + H.S[S_HDR]) >> 2) + k] = np.int32(target + 1)


@njit(cache=True)
def build_lists(H, n_lists, length, payload, immortal_death, fields=1, twin=False, rooted=False):
    """The microbenchmark heap of seed 003 §5.3.2: an array object whose ``n_lists`` fields head singly
    linked lists of ``length`` objects of ``payload`` bytes each, built list by list with head insertion.
    Each object has ``fields`` reference fields: field 0 is ``next``; with ``twin`` field 1 also points to
    the next object (every object then has two incoming references), otherwise the others are null.
    With ``rooted`` there is no array: each list is held by a root slot of its own (the root table must
    have room for ``n_lists`` more).  Returns the array's offset (0 when ``rooted``), or -1 when the heap
    is too small."""
    arr = 0
    if not rooted:
        arr = alloc_raw(H, 4 * n_lists, n_lists)
        if arr < 0:
            return -1
        add_root(H, arr, immortal_death)
    for i in range(n_lists):
        head = -1
        for j in range(length):
            a = alloc_raw(H, payload, fields)
            if a < 0:
                return -1
            set_field(H, a, 0, head)
            if twin and fields > 1:
                set_field(H, a, 1, head)
            head = a
        if rooted:
            add_root(H, head, immortal_death)
        else:
            set_field(H, arr, i, head)
    return arr
