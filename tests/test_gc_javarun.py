"""Java runs: the mutator's stream interleaved with the collector's where the heap decides."""

from __future__ import annotations

import numpy as np
import pytest

from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.gc.behaviour import AllocationStream
from whatif.simulator.gc.config import heap_config
from whatif.simulator.gc.heap import Heap
from whatif.simulator.gc.javarun import JavaRun
from whatif.simulator.gc.timing import GcTimer
from whatif.simulator.isa import OP_ALU, OP_LOAD, InstrBlock
from whatif.simulator.platform import load_platform
from tests.gc_helpers import KB, MB, behaviour


def mutator(blocks: int, n: int = 5000):
    for k in range(blocks):
        b = InstrBlock.empty(n)
        b.pc[:] = 0x20000000 + (np.arange(n) % 64) * 4
        b.size[:] = 4
        b.op[:] = OP_ALU
        b.dst[:] = np.arange(n) % 8
        loads = np.arange(n) % 5 == 0
        b.op[loads] = OP_LOAD
        b.mem_addr[loads] = 0x30000000 + (np.arange(n)[loads] * 8) % (64 * KB)
        b.mem_size[loads] = 4
        yield b


def make_run(heap_kb: int, blocks: int = 40, explicit=(), alloc_stores=False):
    b = behaviour(total_mb=2.0, explicit=explicit, immortal=0.01, phase=0.05, short=0.94)
    heap = Heap(heap_config(heap_bytes=heap_kb * KB))
    stream = AllocationStream(b, heap.header_bytes, seed=3)
    # 2 MB over 40 blocks of 5000 instructions: bytes_per_unit = 0.5 -> 20 instructions per unit
    ipu = blocks * 5000 / (2.0 * MB / b.bytes_per_unit)
    return JavaRun(heap, stream, mutator(blocks), instructions_per_unit=ipu, allocation_stores=alloc_stores)


def test_segments_interleave_mutator_and_collections():
    run = make_run(256)
    kinds = [s.kind for s in run.segments()]
    assert kinds[0] == "mutator"
    starts = kinds.count("gc_start")
    assert starts == kinds.count("gc_end") == len(run.stats.collections) >= 4
    assert run.stats.mutator_instructions == 40 * 5000                 # every mutator instruction, once
    assert run.stats.gc_instructions > 0
    # each collection is gc_start, its gc blocks, gc_end
    i = kinds.index("gc_start")
    j = kinds.index("gc_end")
    assert set(kinds[i + 1:j]) == {"gc"}
    assert run.heap.clock == pytest.approx(2.0 * MB, rel=0.02)


def test_heap_size_changes_the_collections_and_the_counters():
    platform = load_platform("mpc7447a")
    out = {}
    for heap_kb in (256, 1024):
        run = make_run(heap_kb)
        timer = GcTimer(platform)
        stats = run.drive(timer.core)
        out[heap_kb] = (len(stats.collections), timer.core.counters()["instructions"], timer.cycles,
                        sum(c.cycles for c in stats.collections))
        assert all(c.cycles > 0 for c in stats.collections)
        assert timer.core.counters()["instructions"] == stats.mutator_instructions + stats.gc_instructions
    small, big = out[256], out[1024]
    assert small[0] > big[0]                       # more collections in the smaller heap
    assert small[1] > big[1]                       # so more instructions in the run
    # and other cycles: here fewer, because a 256 KB heap stays in the 512 KB L2 and a 1 MB one does not
    assert small[2] != big[2] and small[3] != big[3]


def test_explicit_gc_and_allocation_stores():
    run = make_run(2048, explicit=(0.5,), alloc_stores=True)
    segs = list(run.segments())
    reasons = [s.reason for s in segs if s.kind == "gc_start"]
    assert reasons == ["explicit"]
    stores = sum(len(s.block) for s in segs if s.kind == "alloc")
    assert stores == run.stats.alloc_instructions > run.heap.allocated_objects


def test_instructions_per_unit_must_be_positive():
    b = behaviour()
    heap = Heap(heap_config(heap_bytes=256 * KB))
    with pytest.raises(SimulatorInputError, match="instructions_per_unit must be > 0"):
        JavaRun(heap, AllocationStream(b, 4), mutator(1), instructions_per_unit=0)


def test_java_run_with_the_workload_synthesizer():
    from whatif.simulator.synth import Synthesizer

    platform = load_platform("mpc7447a")
    synth = Synthesizer("specjvm98/javac", platform.isa, seed=1, instructions=300_000)
    b = behaviour(total_mb=1.0, immortal=0.01, phase=0.05, short=0.94)
    heap = Heap(heap_config(heap_bytes=256 * KB))
    stream = AllocationStream(b, heap.header_bytes, seed=1)
    blocks = (synth.next_block(30_000) for _ in range(10))
    run = JavaRun(heap, stream, blocks, instructions_per_unit=300_000 / (1.0 * MB / b.bytes_per_unit))
    timer = GcTimer(platform)
    stats = run.drive(timer.core)
    assert stats.mutator_instructions == 300_000 and len(stats.collections) >= 2
    assert timer.core.counters()["instructions"] == 300_000 + stats.gc_instructions
