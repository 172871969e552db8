"""A Java run: the mutator's instruction stream interleaved with the collector's, at the points the
heap simulator decides (the coupling of the heap with the processor models).

``JavaRun(heap, stream, mutator, instructions_per_unit)`` takes any iterator of mutator
:class:`~simulator.isa.InstrBlock` (the workload synthesiser's), counts its instructions as
bytecode-equivalent units of work, allocates the workload's objects at the behaviour's rate per unit,
and whenever an allocation fails, or the program calls ``System.gc()``, cuts the current mutator block
at the instruction where that happens and inserts the collection's own blocks.  Because the number of
collections depends on the heap size, so do the counters of the whole run.

Consumers iterate :meth:`JavaRun.segments`::

    core = Core(platform, memory, seed)
    run = JavaRun(heap, stream, mutator_blocks, instructions_per_unit=20)
    for seg in run.segments():
        if seg.kind == "gc_end":                       # a collection finished: record its cycles
            run.record_cycles(seg.collection, core.counters()["cycles"] - seg.start_cycles)
        elif seg.kind == "gc_start":
            seg.start_cycles = core.counters()["cycles"]
        else:                                          # "mutator", "alloc" or "gc": instructions
            core.run(seg.block)

or call :meth:`JavaRun.drive` with a core (anything with ``run(block)`` and ``counters()["cycles"]``).
Blocks of kind ``gc`` are views of the collector's buffer, valid until the iteration resumes.  Kind
``alloc`` blocks (``allocation_stores=True``) are the stores that initialise the objects the mutator
just allocated (header, then one per 32 bytes), at their heap addresses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator

import numpy as np

from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.gc.behaviour import AllocationStream
from whatif.simulator.gc.heap import Collection, Heap
from whatif.simulator.gc.layout import PC_ALLOC, R_OBJ, R_TMP
from whatif.simulator.gc.mutator import allocation_stores
from whatif.simulator.gc.state import A_FAIL
from whatif.simulator.isa import OP_STORE, InstrBlock


@dataclass
class Segment:
    kind: str                               # "mutator" | "alloc" | "gc_start" | "gc" | "gc_end"
    block: InstrBlock | None = None
    collection: Collection | None = None
    reason: str = ""
    start_cycles: int = 0
    phase: str = ""


@dataclass
class JavaRunStats:
    mutator_instructions: int = 0
    gc_instructions: int = 0
    alloc_instructions: int = 0
    collections: list = field(default_factory=list)
    out_of_memory: bool = False


def store_block(addrs: np.ndarray) -> InstrBlock:
    """Stores (8 bytes, base register R_OBJ) at the given virtual addresses."""
    n = len(addrs)
    b = InstrBlock.empty(n)
    b.pc[:] = np.uint64(PC_ALLOC) + (np.arange(n, dtype=np.uint64) % np.uint64(4)) * np.uint64(4)
    b.op[:] = OP_STORE
    b.size[:] = 4
    b.src1[:] = R_TMP
    b.src2[:] = R_OBJ
    b.areg[:] = R_OBJ
    b.mem_addr[:] = addrs
    b.mem_size[:] = 8
    return b


class JavaRun:
    def __init__(self, heap: Heap, stream: AllocationStream, mutator: Iterable[InstrBlock],
                 instructions_per_unit: float, allocation_stores: bool = False):
        if not instructions_per_unit > 0:
            raise SimulatorInputError(f"instructions_per_unit must be > 0, got {instructions_per_unit}")
        self.heap = heap
        self.stream = stream
        self.mutator = mutator
        self.ipu = float(instructions_per_unit)
        self.alloc_stores = allocation_stores
        self.stats = JavaRunStats()
        self._batch = None
        self._i = 0
        self._explicit = list(stream.explicit_bytes)
        self._instr = 0                         # mutator instructions so far
        self._offset = 0                        # heap clock when the timed part began (fast_forward)

    # bytes the mutator has allocated after ``instructions`` instructions
    def _target(self, instructions: float) -> int:
        return self._offset + int(instructions / self.ipu * self.stream.b.bytes_per_unit)

    def fast_forward(self, nbytes: int | None = None) -> int:
        """Allocate the first ``nbytes`` of the stream (default: the start-up's long-lived data,
        ``stream.initial_bytes``) functionally -- no instructions, collections untimed -- so that the
        timed run starts in the program's steady state.  Call before :meth:`segments`; returns the
        collections it took."""
        target = self.stream.initial_bytes if nbytes is None else int(nbytes)
        n = 0
        while self.heap.clock < target:
            what, _ = self._advance(target)
            self._pending_alloc = None
            if what == "done":
                break
            request = self.heap.request_bytes if what == "allocation" else 0
            coll = self.heap.collect(what, request)
            n += 1
            if coll.out_of_memory:
                self.stats.out_of_memory = True
                break
        self._offset = self.heap.clock
        return n

    def _advance(self, target: int) -> tuple[str, int]:
        """Allocate until the heap's clock reaches ``target`` bytes.  Returns ("done", clock) or
        ("allocation" | "explicit", clock at which a collection is due)."""
        heap = self.heap
        while heap.clock < target:
            if self._batch is None or self._i >= len(self._batch):
                self._batch = self.stream.next_batch()
                self._i = 0
            b = self._batch
            clock0 = heap.clock
            cum = clock0 + np.cumsum(b.nbytes[self._i:])
            stop = self._i + int(np.searchsorted(cum, target, side="left")) + 1
            stop = min(stop, len(b))
            explicit = False
            if self._explicit and self._explicit[0] <= min(target, cum[stop - self._i - 1]):
                stop = self._i + int(np.searchsorted(cum, self._explicit[0], side="left")) + 1
                explicit = True
            i0 = self._i
            j, status = heap.allocate(b, self._i, stop)
            self._i = j
            if self.alloc_stores and j > i0:
                self._pending_alloc = (b.addr[i0:j].copy(), b.nbytes[i0:j].copy())
            if status == A_FAIL:
                return "allocation", heap.clock
            if explicit and j >= stop:
                self._explicit.pop(0)
                return "explicit", heap.clock
        return "done", heap.clock

    def _alloc_segment(self) -> Iterator[Segment]:
        pending = getattr(self, "_pending_alloc", None)
        if pending is not None:
            self._pending_alloc = None
            addrs, _, _ = allocation_stores(*pending)
            if len(addrs):
                self.stats.alloc_instructions += len(addrs)
                yield Segment("alloc", store_block(addrs))

    def _collection(self, reason: str) -> Iterator[Segment]:
        heap = self.heap
        request = heap.request_bytes if reason == "allocation" else 0
        start = Segment("gc_start", reason=reason)
        yield start
        gen = heap.collect_blocks(reason, request)
        while True:
            try:
                item = next(gen)
            except StopIteration as stop:
                coll = stop.value
                break
            if isinstance(item, str):
                continue
            self.stats.gc_instructions += len(item)
            yield Segment("gc", item, reason=reason)
        self.stats.collections.append(coll)
        if coll.out_of_memory:
            self.stats.out_of_memory = True
        yield Segment("gc_end", collection=coll, reason=reason, start_cycles=start.start_cycles)

    def segments(self) -> Iterator[Segment]:
        """Mutator, allocation and collector segments in execution order (stops at out of memory)."""
        for block in self.mutator:
            n = len(block)
            done = 0
            while done < n:
                base = self._instr
                target = self._target(base + (n - done))
                clock0 = self.heap.clock
                what, clock = self._advance(target)
                if what == "done":
                    k = n - done
                else:
                    # the instruction at which the allocation clock reached ``clock``
                    span = max(target - clock0, 1)
                    k = int(round((n - done) * min(1.0, max(0.0, (clock - clock0) / span))))
                if k > 0:
                    self.stats.mutator_instructions += k
                    self._instr += k
                    yield Segment("mutator", block.slice(done, done + k))
                    done += k
                yield from self._alloc_segment()
                if what != "done":
                    yield from self._collection(what)
                    if self.stats.out_of_memory:
                        return
                    if what == "allocation" and k == 0 and self.heap.clock == clock0:
                        # nothing could be allocated before the collection: go on with the same target
                        continue

    def record_cycles(self, collection: Collection, cycles: int) -> None:
        collection.cycles = int(cycles)

    def drive(self, core) -> JavaRunStats:
        """Run every segment on ``core`` (``run(block)``, ``counters()["cycles"]``), recording each
        collection's cycles."""
        for seg in self.segments():
            if seg.kind == "gc_start":
                seg.start_cycles = int(core.counters()["cycles"])
            elif seg.kind == "gc_end":
                self.record_cycles(seg.collection, int(core.counters()["cycles"]) - seg.start_cycles)
            else:
                core.run(seg.block)
        return self.stats
