"""Configuration of a simulated Java heap: collector, size and growth policy, object layout, compaction.

``HeapConfig`` fields are the keyword arguments of :class:`simulator.gc.heap.Heap`.  Collectors are
chosen by name from ``COLLECTORS``; an unknown name lists the names that exist.

Heap growth (``growth``):

* ``fixed``  -- the heap keeps ``heap_bytes`` for the whole run; a request that does not fit after a
  full collection (and a compaction) is an out-of-memory condition.
* ``expand`` -- (mark-sweep only) after a collection, when less than ``min_free_ratio`` of the heap is
  free, or when the request still does not fit, the heap grows to the smallest multiple of 64 KB
  that leaves ``min_free_ratio`` free and holds the request, capped at ``max_heap_bytes``.

Out of memory: a request that does not fit after a full collection (and a compaction), or -- so that a
heap barely larger than the live data does not collect forever -- ``overhead_collections`` allocation
failures in a row that each leave less than ``overhead_free_ratio`` of the heap free (the "GC overhead
limit" of later JVMs).

Compaction (mark-sweep; the JDK 1.2.2 classic collector "occasionally moves live objects"): after the
sweep of an allocation-failure collection, when the failed request fits in no free chunk; after the
sweep of an explicit ``System.gc()``, when the free space is fragmented: ``1 - largest free chunk /
free bytes > explicit_compaction_threshold`` (1.0 never compacts).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.schema import format_validation_error

#: collector name -> description
COLLECTORS = {
    "mark-sweep": "sequential stop-the-world mark-sweep with free lists and occasional sliding compaction "
                  "(JDK 1.2.2 classic)",
    "copying": "semispace copying (Cheney): the heap is two halves, live objects are evacuated",
}

GROWTH_STEP = 64 * 1024
MAX_HEAP_BYTES = 1 << 30          # the address map of simulator.gc.layout holds heaps up to 1 GB


def check_collector(name: str) -> str:
    if name not in COLLECTORS:
        raise SimulatorInputError(f"unknown collector {name!r}; known: {', '.join(COLLECTORS)}")
    return name


class HeapConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    collector: str = "mark-sweep"
    heap_bytes: int = Field(gt=0, description="initial heap size (both semispaces for copying)")
    growth: Literal["fixed", "expand"] = "fixed"
    max_heap_bytes: int | None = Field(default=None, gt=0)
    min_free_ratio: float = Field(default=0.3, ge=0.0, lt=1.0)
    header_bytes: int = Field(default=4, ge=4, le=64, description="object header (4 in the JDK 1.2.2 "
                                                                  "classic JVM, seed 003 footnote 3)")
    explicit_compaction_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    compaction: bool = True
    overhead_free_ratio: float = Field(default=0.02, ge=0.0, lt=1.0)
    overhead_collections: int = Field(default=5, ge=1)

    @model_validator(mode="after")
    def _check(self) -> "HeapConfig":
        check_collector(self.collector)
        if self.header_bytes % 4:
            raise ValueError(f"header_bytes must be a multiple of 4, got {self.header_bytes}")
        smallest = 2 * 8 if self.collector == "copying" else 8
        if self.heap_bytes < smallest:
            raise ValueError(f"the heap ({self.heap_bytes} bytes) is smaller than one object ({smallest} bytes"
                             f"{' per semispace' if self.collector == 'copying' else ''})")
        if self.growth == "expand" and self.collector != "mark-sweep":
            raise ValueError("growth 'expand' is supported by the mark-sweep collector only")
        if self.capacity_bytes > MAX_HEAP_BYTES:
            raise ValueError(f"heaps above {MAX_HEAP_BYTES >> 20} MB are not supported (the simulated address "
                             f"map), got {self.capacity_bytes >> 20} MB")
        if self.max_heap_bytes is not None and self.max_heap_bytes < self.heap_bytes:
            raise ValueError(f"max_heap_bytes ({self.max_heap_bytes}) is below heap_bytes ({self.heap_bytes})")
        return self

    @property
    def capacity_bytes(self) -> int:
        """The largest the heap can become (arrays are sized for it)."""
        if self.growth == "expand":
            return max(self.max_heap_bytes or 4 * self.heap_bytes, self.heap_bytes)
        return self.heap_bytes


def heap_config(source: str = "heap", **kwargs) -> HeapConfig:
    """Build a HeapConfig; a bad value becomes one SimulatorInputError line naming ``source``."""
    if "collector" in kwargs:
        check_collector(kwargs["collector"])
    try:
        return HeapConfig(**kwargs)
    except ValidationError as exc:
        raise SimulatorInputError(format_validation_error(exc, source)) from None
