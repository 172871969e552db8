"""Word-at-a-time byte operations for the numba trace readers (:mod:`simulator.trace_lackey`,
:mod:`simulator.trace_wtr`): an unaligned 8-byte load and a trailing-zero count, each one machine
instruction.  (Inlined into the readers' kernels: each reader's ``drop_stale_caches`` group holds this
module, so a change here recompiles them.)  Also the readers' common ending: :class:`MappedReader`."""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic


@intrinsic
def load8(typingctx, buf, i):
    """The 8 bytes at ``buf[i]`` as a little-endian uint64 (the first byte lowest): one unaligned load,
    no bounds check (the caller keeps ``i + 8 <= len(buf)``)."""
    if not (isinstance(buf, types.Array) and buf.dtype == types.uint8 and isinstance(i, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        ptr = builder.bitcast(builder.gep(data, [args[1]]), ir.IntType(64).as_pointer())
        return builder.load(ptr, align=1)
    return types.uint64(buf, i), codegen


@intrinsic
def ctz(typingctx, x):
    """Trailing zero bits of a uint64 (64 for 0): one instruction (tzcnt)."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        return builder.zext(builder.cttz(args[0], ir.Constant(ir.IntType(1), 0)), ir.IntType(64))
    return types.int64(types.uint64), codegen


class MappedReader:
    """What the memory-mapped trace readers share: ``close()`` (the array view goes before the map it
    points into) and use as a context manager.  Subclasses set ``_buf`` and ``_map``."""

    _buf: np.ndarray
    _map = None

    def close(self) -> None:
        self._buf = np.zeros(0, np.uint8)
        if self._map is not None:
            self._map.close()
            self._map = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
