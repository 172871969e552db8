"""The core's port to the memory hierarchy: the one module that knows the memory kernel's calling
convention.

The core kernel receives ``MemoryHierarchy.state`` as one tuple, takes the raw address of its one state array
once per call (:func:`views`; no reference counting per access), and per instruction calls :func:`fetch` and
:func:`data` with the current cycle ``now`` (the cycle the access starts: fetch start, issue; the memory
kernel's prefetch engines are busy until a cycle, so the kernel must know the time), which return the
supplying level (levels from the core outwards, memory = number of
levels), then reads the translation outcome of that access with :func:`tlb_outcome` (0 first-level TLB
hit, 1 second-level hit, 2 page walk) and :func:`walk_cycles`.

``fetch`` and ``data`` are deliberately not inlined: the memory kernel's inline fast paths would make
the core's loop several times larger than the host's instruction cache, which cost more than the call.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from whatif.simulator.memory import kernel as MK


@njit(cache=True, inline="always")
def views(mem):
    """The raw address of the memory state array (``MemoryHierarchy.state`` keeps it alive)."""
    return mem[0].ctypes.data


@njit(cache=True)
def fetch(mv, vaddr, size, now):
    MK._st(mv, MK.SCR_NOW, now)
    return MK._fetch(mv, vaddr, size)


@njit(cache=True)
def data(mv, vaddr, size, kind, pc, now):
    MK._st(mv, MK.SCR_NOW, now)
    return MK._data(mv, vaddr, size, kind, pc)


@njit(cache=True, inline="always")
def prefetch_count(mv):
    """Prefetches the last data access sent into the L1D, for the core to give each an MSHR (0 unless
    ``memory.prefetch_arrival = "latency"``)."""
    return MK._ld(mv, MK.SCR_PF_N)


@njit(cache=True)
def prefetch_record(mv, j, vaddr):
    """The ``j``-th of them: (virtual line, supplying level (memory = number of levels), cycles its transfer
    waited for the memory channel).  A prefetch never leaves the page of the access that triggered it
    (``vaddr``), so its line's number within the physical frame is its number within that page."""
    rec = MK._ld(mv, MK.SCR_PF_REC0 + j)
    pb = MK._cfg(mv, MK.G_PAGE_BITS)
    within = pb - MK._cfg(mv, MK.C0 + MK._cfg(mv, MK.G_L1D) * MK.NCOL + MK.C_LINE_BITS)
    vline = ((np.int64(vaddr) >> pb) << within) | (rec >> MK.PF_WITHIN_SHIFT)
    return vline, rec & 15, (rec >> 4) & MK.PF_WAIT_MAX


@njit(cache=True, inline="always")
def channel_wait(mv):
    """Cycles the last access's own memory transfers waited for the memory channel (``memory.queueing``)."""
    return MK._ld(mv, MK.G_CH_DELAY)


@njit(cache=True, inline="always")
def tlb_outcome(mv):
    return MK._ld(mv, MK.SCR_TLB)


@njit(cache=True, inline="always")
def walk_cycles(mv):
    return MK._ld(mv, MK.SCR_WALK_CYCLES)


def fetch_outcome(mem, vaddr, size, now):
    """From Python (tests): an instruction fetch at cycle ``now``; returns (level, TLB outcome, walk cycles).
    The arguments are given the core's types, so that a caller's plain ``int`` compiles no second copy of
    the memory kernel (as :func:`data_outcome`)."""
    return _fetch_outcome(mem, np.uint64(vaddr), np.int64(size), np.int64(now))


@njit(cache=True)
def _fetch_outcome(mem, vaddr, size, now):
    mv = views(mem)
    lvl = fetch(mv, vaddr, size, now)
    return lvl, tlb_outcome(mv), walk_cycles(mv)


def data_outcome(mem, vaddr, size, kind, pc, now):
    """From Python (tests): a load (kind 1) or store (2) at cycle ``now``; returns (level, TLB outcome, walk
    cycles).  The arguments are given the core's types: a plain ``int`` PC compiled a second copy of the data
    path (8.5 s cold)."""
    return _data_outcome(mem, np.uint64(vaddr), np.int64(size), np.int64(kind), np.uint64(pc), np.int64(now))


@njit(cache=True)
def _data_outcome(mem, vaddr, size, kind, pc, now):
    mv = views(mem)
    lvl = data(mv, vaddr, size, kind, pc, now)
    return lvl, tlb_outcome(mv), walk_cycles(mv)


@njit(cache=True)
def prefetch_records(mem, vaddr):
    """From Python (the reference core): (virtual line, level, channel wait) of each L1D prefetch of the last
    data access, to ``vaddr``."""
    mv = views(mem)
    out = np.empty((prefetch_count(mv), 3), np.int64)
    for j in range(len(out)):
        out[j, 0], out[j, 1], out[j, 2] = prefetch_record(mv, j, vaddr)
    return out


@njit(cache=True)
def channel_wait_of(mem):
    """From Python (the reference core): the channel wait of the last access."""
    return channel_wait(views(mem))
