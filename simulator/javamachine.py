"""A Java program on a platform: :class:`~simulator.machine.Machine` whose instruction stream is a
:class:`~simulator.gc.javarun.JavaRun` — the workload's mutator blocks interleaved with the stores that
initialise new objects and with the collector's own instructions, at the points the heap simulator
decides — under the same OS timer noise and run-to-run variation as any other run.

    m = JavaMachine(platform, "specjvm98/jess", load_behaviour("specjvm98/jess"), heap_bytes=136 << 10,
                    instructions=400_000, instructions_per_unit=0.5, seed=1, run_seed=7)
    m.run(); m.counters()["cycles"]; m.java.stats.collections

Seeds: ``seed`` fixes the binary (the synthesised program) and, unless ``alloc_seed`` says otherwise,
the program's allocation sequence (a Java program allocates the same objects on every run);
``run_seed`` fixes what varies between runs (page placement, timer phase, and the data-dependent
choices unless ``input_seed`` fixes those: see :class:`~simulator.machine.Machine`).
``instructions`` counts the mutator's instructions; the run also executes the allocation stores, the
collections and the OS's timer handler, so its ``instructions`` counter ends higher, the more so the
smaller the heap.  With ``fast_forward`` (default) the start-up's long-lived data is allocated
functionally before the timed run begins, which therefore starts in the program's steady state.  A run that runs out of memory stops at that collection (``java.stats.out_of_memory``).
"""

from __future__ import annotations

from typing import Any, Iterator

from whatif.simulator.gc.behaviour import AllocationStream, AllocBehaviour
from whatif.simulator.gc.config import heap_config
from whatif.simulator.gc.heap import Heap
from whatif.simulator.gc.javarun import JavaRun
from whatif.simulator.isa import InstrBlock
from whatif.simulator.machine import BLOCK, Machine
from whatif.simulator.osnoise import TimerNoise
from whatif.simulator.platform import Platform


class JavaMachine(Machine):
    def __init__(self, platform: Platform, workload: Any, behaviour: AllocBehaviour, heap_bytes: int,
                 instructions: int, instructions_per_unit: float, seed: int = 0, run_seed: int | None = None,
                 noise: TimerNoise | None = TimerNoise(), collector: str = "mark-sweep", alloc_scale: float = 1.0,
                 alloc_seed: int | None = None, allocation_stores: bool = True, fast_forward: bool = True, predictor: str | None = None,
                 block_size: int = BLOCK, input_seed: int | None = None):
        super().__init__(platform, workload, instructions, seed=seed, run_seed=run_seed, noise=noise,
                         predictor=predictor, block_size=block_size, input_seed=input_seed)
        cfg = heap_config(f"java run of {behaviour.name or workload}", collector=collector,
                          heap_bytes=int(heap_bytes))
        self.heap = Heap(cfg)
        stream = AllocationStream(behaviour, cfg.header_bytes, scale=alloc_scale,
                                  seed=seed if alloc_seed is None else alloc_seed)
        self.java = JavaRun(self.heap, stream, self._mutator_blocks(block_size), instructions_per_unit,
                            allocation_stores=allocation_stores)
        if fast_forward:
            self.java.fast_forward()
        self._segments = self.java.segments()
        self._done = False
        self.block = InstrBlock.empty(0)
        self.pos = 0

    def _mutator_blocks(self, size: int) -> Iterator[InstrBlock]:
        made = 0
        while made < self.instructions_target:
            n = min(size, self.instructions_target - made)
            made += n
            yield self.synth.next_block(n)

    @property
    def finished(self) -> bool:
        return self._done

    def _refill(self) -> None:
        """The next block of the Java run; the collector's cycles are recorded as its segments pass."""
        for seg in self._segments:
            if seg.kind == "gc_start":
                seg.start_cycles = int(self.core.cycles)
            elif seg.kind == "gc_end":
                self.java.record_cycles(seg.collection, int(self.core.cycles) - seg.start_cycles)
            elif len(seg.block):
                self.block = seg.block
                self.pos = 0
                return
        self._done = True
        self.block = InstrBlock.empty(0)
        self.pos = 0

    def gc_summary(self) -> dict[str, float]:
        """Collections, their cycles and instructions, and the heap's allocation so far."""
        st = self.java.stats
        return {"collections": len(st.collections), "gc_cycles": sum(c.cycles for c in st.collections),
                "gc_instructions": st.gc_instructions, "alloc_instructions": st.alloc_instructions,
                "mutator_instructions": st.mutator_instructions, "allocated_bytes": self.heap.clock,
                "out_of_memory": bool(st.out_of_memory)}
