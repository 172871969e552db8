"""Timing the collector's instruction streams on a platform.

:class:`GcTimer` holds a platform's :class:`~simulator.memory.hierarchy.MemoryHierarchy` and its core
timing model (:class:`simulator.core.Core`), and runs the :class:`InstrBlock` chunks a heap simulator
hands it: a chain of dependent loads (the sweep's header walk, pointer chasing while marking) pays every
miss in full, and independent misses overlap up to the MSHR limit, so the cache effects of seed 003
Figures 5-3 and 5-6 come from the core's and the caches' mechanics.
"""

from __future__ import annotations

import numpy as np

from whatif.simulator.core import Core
from whatif.simulator.isa import FIELDS
from whatif.simulator.memory.hierarchy import MemoryHierarchy
from whatif.simulator.platform import Platform


class GcTimer:
    """A platform's memory hierarchy and core, timing the blocks a heap simulator hands it."""

    def __init__(self, platform: Platform, seed: int = 0, memory: MemoryHierarchy | None = None, core=None):
        self.platform = platform
        self.memory = memory if memory is not None else MemoryHierarchy(platform, seed=seed)
        self.core = core if core is not None else Core(platform, self.memory, seed)

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
