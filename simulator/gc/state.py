"""The heap's state as flat numpy arrays (one named tuple the numba kernels take), and its scalars.

Objects live in an object table indexed by id (ids of dead objects are reused); the heap itself is
described by ``gmap`` over 8-byte granules: at an object's first granule the object's id (>= 0), at a
free chunk's first granule minus its length in granules.  Every byte of the heap is covered by
objects and free chunks, so a collector can walk it from the start by sizes alone, as a real one does
by reading headers.  Root slots whose death time is known sit in a binary min-heap (``q_death``,
``q_slot``) so that the mutator drops them as soon as allocation passes that time.  Reference fields
hold the target's heap offset plus one (0 is null) in ``mem``, one int32 per 4-byte word of the heap,
so references move with their objects.

Besides the live and dead payload histograms, a collection records the *spacing* of its live objects:
the distance from the start of the previous live object in address order, less the header (the object
size that would give that stride; the first live object counts as far away).  In the microbenchmark's
lists it is the object size; in an application whose survivors are scattered among garbage it is
larger, and so is the cost of fetching each live object while marking.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

# ---- scalar slots of S -------------------------------------------------------------------------
# configuration
S_HDR, S_HEAP, S_MAXHEAP, S_SEMI, S_SEMISIZE, S_COLLECTOR = range(6)
# allocation
(S_CLOCK, S_NALLOC, S_NIDS, S_NIDFREE, S_NROOTS, S_NRFREE, S_NF, S_FI, S_BP, S_BEND, S_NIMM, S_NOPEN,
 S_CDEATH, S_OBJS, S_OBJBYTES, S_NEED, S_CIMM, S_NQ) = range(8, 26)
# accounting of the collection in progress
(S_EPOCH, S_LIVE_OBJ, S_LIVE_BYTES, S_DEAD_OBJ, S_DEAD_BYTES, S_COPIED_OBJ, S_COPIED_BYTES, S_FREE_BYTES,
 S_LARGEST, S_ROOTS_SCANNED, S_MARK_VISITS, S_REFS_SCANNED, S_MAX_STACK) = range(30, 43)
# cursor of the collection in progress
S_PHASE, S_POS, S_RUN, S_DEST, S_COBJ, S_CFIELD, S_TOP, S_SCAN, S_END, S_CNREF, S_FROM, S_LASTLIVE = range(50, 62)
NS = 64

COLLECTOR_IDS = {"mark-sweep": 0, "copying": 1}

# ---- phases --------------------------------------------------------------------------------------
(P_IDLE, P_CLEAR, P_ROOTS, P_MARK, P_SWEEP, P_SWEPT, P_FWD, P_FIXROOTS, P_FIXUP, P_MOVE, P_CROOTS, P_SCAN,
 P_CDEAD, P_DONE) = range(14)
PHASE_NAMES = ("idle", "clear", "roots", "mark", "sweep", "swept", "forward", "fix-roots", "fix-refs", "move",
               "copy-roots", "scan", "dead", "done")

# ---- step status ---------------------------------------------------------------------------------
ST_MORE, ST_FINISHED, ST_GROW_STACK, ST_NEED_BUF = range(4)
# ---- allocation status ---------------------------------------------------------------------------
A_DONE, A_FAIL, A_GROW_ROOTS = range(3)

OPEN_CAP = 4096           # open reference fields of the cluster under construction
HIST_BINS = 16385         # payload histogram: 4-byte bins up to 64 KB, the last bin holds larger objects
IMMORTAL = np.iinfo(np.int64).max
FAR = 1 << 40                 # the "previous live object" of the first one

HeapArrays = namedtuple("HeapArrays", [
    "S", "gmap", "mark", "mem",
    "o_addr", "o_size", "o_payload", "o_nref", "o_copied", "o_fwd", "id_free",
    "r_addr", "r_death", "r_free", "q_death", "q_slot",
    "f_start", "f_size", "imm", "open_id", "open_f", "stack", "hist_live", "hist_dead", "hist_gap"])


def new_arrays(max_heap_bytes: int, root_cap: int = 1024, stack_cap: int = 4096) -> HeapArrays:
    granules = max_heap_bytes // 8
    cap = granules + 1
    return HeapArrays(
        S=np.zeros(NS, np.int64),
        gmap=np.zeros(granules + 1, np.int32),
        mark=np.zeros(granules + 1, np.uint8),
        mem=np.zeros(max_heap_bytes // 4 + 2, np.int32),
        o_addr=np.zeros(cap, np.int64),
        o_size=np.zeros(cap, np.int32),
        o_payload=np.zeros(cap, np.int32),
        o_nref=np.zeros(cap, np.int32),
        o_copied=np.zeros(cap, np.int32),
        o_fwd=np.zeros(cap, np.int64),
        id_free=np.zeros(cap, np.int32),
        r_addr=np.zeros(root_cap, np.int64),
        r_death=np.zeros(root_cap, np.int64),
        r_free=np.zeros(root_cap, np.int32),
        q_death=np.zeros(root_cap, np.int64),
        q_slot=np.zeros(root_cap, np.int32),
        f_start=np.zeros(granules // 2 + 2, np.int64),
        f_size=np.zeros(granules // 2 + 2, np.int64),
        imm=np.zeros(cap, np.int32),
        open_id=np.zeros(OPEN_CAP, np.int32),
        open_f=np.zeros(OPEN_CAP, np.int32),
        stack=np.zeros(stack_cap, np.int64),
        hist_live=np.zeros(HIST_BINS, np.int64),
        hist_dead=np.zeros(HIST_BINS, np.int64),
        hist_gap=np.zeros(HIST_BINS, np.int64),
    )


def grown(arrays: HeapArrays, field: str, factor: int = 2) -> HeapArrays:
    """A copy of the named tuple whose array ``field`` (and its companions) has ``factor`` times the room."""
    groups = {"roots": ("r_addr", "r_death", "r_free", "q_death", "q_slot"), "stack": ("stack",)}
    out = arrays._asdict()
    for name in groups[field]:
        old = out[name]
        new = np.zeros(len(old) * factor, old.dtype)
        new[:len(old)] = old
        out[name] = new
    return HeapArrays(**out)


def hist_bin_payload(bins: np.ndarray) -> np.ndarray:
    """Payload bytes that histogram bins stand for (the last bin: 64 KB and more)."""
    return np.asarray(bins, np.int64) * 4
