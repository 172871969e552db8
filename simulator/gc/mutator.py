"""The mutator's memory traffic that the heap simulator knows about: initialising new objects.

A JVM writes every object it allocates (header, zeroed fields) before the program uses it, so between
two collections the caches fill with the most recently allocated objects and lose the collector's data
(the mark bitmap, the previous sweep's tail).  ``allocation_stores`` is that traffic: one 8-byte store at
the header and one per further 32 bytes of each object, in allocation order.  Studies that simulate no
mutator instruction stream still run these stores through the memory hierarchy (untimed), so a
collection starts with the cache contents a real one would find.
"""

from __future__ import annotations

import numpy as np

from whatif.simulator.gc.layout import HEAP_BASE
from whatif.simulator.memory.state import K_LOAD, K_STORE

STORE_STRIDE = 32
STORE_BYTES = 8


def allocation_stores(addr: np.ndarray, nbytes: np.ndarray, stride: int = STORE_STRIDE) -> tuple[np.ndarray, ...]:
    """Trace arrays (addresses, sizes, kinds) of the stores initialising objects at heap offsets ``addr``."""
    addr = np.asarray(addr, np.int64)
    nbytes = np.asarray(nbytes, np.int64)
    counts = (nbytes + stride - 1) // stride
    total = int(counts.sum())
    first = np.repeat(np.cumsum(counts) - counts, counts)
    offsets = (np.arange(total, dtype=np.int64) - first) * stride
    addrs = (np.repeat(addr, counts) + offsets + HEAP_BASE).astype(np.uint64)
    return addrs, np.full(total, STORE_BYTES, np.uint16), np.full(total, K_STORE, np.uint8)


def touch(memory, addr: np.ndarray, nbytes: np.ndarray, kind: int = K_STORE) -> int:
    """Run the initialising stores of the given objects through ``memory`` (a MemoryHierarchy); with
    ``kind=K_LOAD`` the same accesses as loads."""
    if len(addr) == 0:
        return 0
    a, s, k = allocation_stores(addr, nbytes)
    k[:] = kind
    memory.run(a, s, k)
    return len(a)


SCRATCH_BASE = 0x3000_0000        # the mutator's own data, outside the heap and the collector's tables


def flush(memory, platform, dirty: bool = True) -> int:
    """Stream stores over twice the largest cache's capacity of the mutator's own data (outside the
    heap), evicting the collector's lines: the cache state a collection finds after the mutator ran.
    ``dirty=False`` streams loads instead: the same lines, clean, so a collection that evicts them writes
    nothing back (the two differ by the writebacks alone)."""
    largest = max(int(c.size_kb * 1024) for c in platform.caches.values())
    return touch(memory, np.array([SCRATCH_BASE - HEAP_BASE], np.int64), np.array([2 * largest], np.int64),
                 K_STORE if dirty else K_LOAD)
