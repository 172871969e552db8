"""Raw-pointer views of numpy arrays inside numba code (no memory-info block, so no reference counting).

Every array that numba code passes to another function, inlined or not, is reference counted with
atomic instructions around the call; in a per-instruction loop that calls a dozen helpers this
dominates the run time.  A view built from the data pointer (numba's documented ``carray`` recipe)
carries no memory info, and the reference counting becomes a null test.  The caller keeps the owning
arrays alive for the duration of the call.
"""

from __future__ import annotations

import numpy as np
from numba import carray, njit

from whatif.simulator.memory.state import _voidptr      # the one integer-address-to-pointer intrinsic


@njit(cache=True, inline="always")
def i64(a):
    return carray(_voidptr(a.ctypes.data), a.shape, np.int64)


@njit(cache=True, inline="always")
def i16(a):
    return carray(_voidptr(a.ctypes.data), a.shape, np.int16)


@njit(cache=True, inline="always")
def i8(a):
    return carray(_voidptr(a.ctypes.data), a.shape, np.int8)


@njit(cache=True, inline="always")
def u8(a):
    return carray(_voidptr(a.ctypes.data), a.shape, np.uint8)


@njit(cache=True, inline="always")
def u64(a):
    return carray(_voidptr(a.ctypes.data), a.shape, np.uint64)


@njit(cache=True, inline="always")
def i16_flat(a):
    """A C-contiguous array of any shape as one dimension: indexing a row of a two-dimensional view takes its
    length, a runtime word, where the caller's flat index can use a constant."""
    return carray(_voidptr(a.ctypes.data), a.size, np.int16)


@njit(cache=True, inline="always")
def i64_flat(a):
    """As :func:`i16_flat`, for int64."""
    return carray(_voidptr(a.ctypes.data), a.size, np.int64)
