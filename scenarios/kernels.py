"""Loading the simulator's numba kernels before a command runs, exactly those it will call.

The first run after an install or an upgrade compiles them: over a minute for ``whatif simulate`` on the
2-core CI host (the core's timing kernel alone 57-76 s, 2026-12-01 and 02), under a bar with the time left
(:func:`~whatif.scenarios.results.progress.run_steps`).  Its estimates are the seconds each step took when
it last compiled on this machine (recorded in :data:`ESTIMATES_FILE` beside numba's cache), else the
figures in :data:`DEFAULT_SECONDS`.  Later runs load the kernels from numba's cache in well under a second,
and no bar shows.  Compiling up front also keeps compilation out of the run itself: out of its progress
bar's time left and out of the simulation rate it reports.

Modules of the core and the synthesiser are imported only when a step needs them (``whatif cachesim``
loads the address-trace kernel alone, and its start-up counts).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from whatif.scenarios.errors import ScenarioError
from whatif.scenarios.results.progress import run_steps
from whatif.simulator.memory import kernel as MK
from whatif.simulator.memory.hierarchy import MemoryHierarchy
from whatif.simulator.platform import Platform

DESCRIPTION = "whatif: compiling kernels (first run only)"
ESTIMATES_FILE = "whatif_compile_seconds.json"
COMPILED_SECONDS = 1.0        # a step this long compiled (loading a kernel from the cache takes milliseconds)
# seconds each step took with an empty numba cache as the first of its kind (the first core flavour compiles
# the memory hierarchy's functions, which a second one reuses) on the 2-core AMD EPYC CI host, 2026-12-02 (cache
# warming, the collectors and the GC microbenchmarks after constants stopped compiling copies of the cache access
# and of the collectors' instruction writer); tests/benchmarks/bench_compile.py --steps measures them again beside
# these
DEFAULT_SECONDS = {
    "synthesiser": 8.6,
    "core timing (TAGE predictor)": 57.0,
    "core timing": 59.2,
    "functional warming (TAGE predictor)": 9.8,
    "functional warming": 10.9,
    "cache warming": 17.3,
    "profiler": 2.0,
    "garbage collector (mark-sweep)": 23.5,
    "garbage collector (copying)": 13.3,
    "address-trace kernel": 28.3,
    "GC microbenchmarks": 4.6,
    "FlowGSP miner": 6.5,
}
FALLBACK_SECONDS = 30.0       # a step with no figure at all


def kernel_steps(platforms: Iterable[Platform] = (), predictor: str | None = None, sampled: bool = False,
                 workload: str | None = None, seed: int = 0, trace: Platform | None = None,
                 collectors: Iterable[str] = (), warming: bool = False, profiler: bool = False,
                 gc_microbenchmarks: bool = False, miner: bool = False) -> list[tuple[str, Callable[[], object]]]:
    """The steps that load the kernels a command calls, (name, callable), each name once: the synthesiser's
    (with a ``workload``, on the first platform's ISA, with the run's program ``seed``), the core's timing
    kernel for each predictor flavour among ``platforms`` (``predictor``: the runs' override), with
    ``warming`` its functional-warming kernel (a cache simulation: ``Core.make_functional``), with ``sampled``
    that and the cache-warming kernels (SMARTS), with ``profiler`` the instruction profiler's (on the
    workload's program), the heap's kernels for each of ``collectors``, with a ``trace`` platform the
    address-trace kernel (``whatif cachesim``; a timed heap's mutator stores), with ``gc_microbenchmarks``
    the collector microbenchmarks' list builder and copy loop (on the first platform, the first collector),
    and with ``miner`` the FlowGSP miner's support counter (``whatif mine``).  Each step calls its kernels on
    nothing, which changes no state but a throwaway core's clock, except a collector's, the microbenchmarks'
    and the miner's: a throwaway heap of 64 KB collects a few times (about 20 ms once compiled), a graph of
    two vertices is mined."""
    platforms = list(platforms)
    collectors = list(dict.fromkeys(collectors))
    steps: dict[str, Callable[[], object]] = {}
    if workload is not None and platforms:
        steps["synthesiser"] = lambda: _synthesise(workload, platforms[0].isa, seed)
    if platforms:
        from whatif.simulator.core.model import Core
        from whatif.simulator.core.predictors import P_TAGE
        from whatif.simulator.isa import InstrBlock

        for platform in platforms:
            core = Core(platform, MemoryHierarchy(platform), predictor=predictor)
            # (the kernels are compiled apart for TAGE: predictors.predict_control)
            flavour = " (TAGE predictor)" if core.predictor_config.kind == P_TAGE else ""
            steps.setdefault(f"core timing{flavour}", lambda core=core: core.run(InstrBlock.empty(0)))
            if sampled or warming:
                steps.setdefault(f"functional warming{flavour}", lambda core=core: core.warm(InstrBlock.empty(0)))
        if sampled:
            # one flavour: neither kernel predicts; the throwaway core's clock moved a cycle (none moves nothing)
            steps["cache warming"] = lambda core=core: (core.warm_caches(InstrBlock.empty(0)), core.shift_time(1))
        if profiler and workload is not None:
            steps["profiler"] = lambda: _profile(workload, platforms[0].isa, seed)
    for collector in collectors:
        steps.setdefault(f"garbage collector ({collector})", lambda collector=collector: _collect(collector))
    if trace is not None:
        empty = np.zeros(0, np.uint64)
        steps["address-trace kernel"] = lambda: MemoryHierarchy(trace).run(empty, empty.astype(np.uint16),
                                                                           empty.astype(np.uint8))
    if gc_microbenchmarks and platforms:
        steps["GC microbenchmarks"] = lambda: _gc_microbenchmarks(platforms[0], collectors[0] if collectors
                                                                  else "mark-sweep")
    if miner:
        steps["FlowGSP miner"] = _mine
    return list(steps.items())


def load_kernels(progress: bool, *args, **kwargs) -> None:
    """Load (on the first run: compile) the kernels of :func:`kernel_steps` (``args``, ``kwargs``: its
    arguments) under a bar with the time left when ``progress``; the seconds of the steps that compiled are
    recorded as this machine's estimates."""
    steps = kernel_steps(*args, **kwargs)
    if not steps:
        return
    path = estimates_path()
    known = read_estimates(path)
    seconds = run_steps([(name, known.get(name, DEFAULT_SECONDS.get(name, FALLBACK_SECONDS)), fn)
                         for name, fn in steps], DESCRIPTION, enabled=progress)
    compiled = {name: round(s, 1) for (name, _), s in zip(steps, seconds) if s >= COMPILED_SECONDS}
    if compiled:
        write_estimates(path, {**known, **compiled})


def estimates_path() -> Path:
    """This machine's record, in numba's cache directory of the memory kernels (every command loads them)."""
    return Path(MK.run_trace.stats.cache_path) / ESTIMATES_FILE


def read_estimates(path: Path) -> dict[str, float]:
    """The recorded seconds by step; nothing when the file is missing or is not one whatif wrote."""
    try:
        doc = json.loads(path.read_text())
        return {str(k): float(v) for k, v in doc["whatif_compile_seconds"].items() if float(v) > 0}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def write_estimates(path: Path, seconds: dict[str, float]) -> None:
    """Record the seconds by step (atomically; a foreign file at ``path`` is left alone).  Best effort: a
    cache directory that cannot be written only loses the estimates."""
    from whatif.scenarios.results.writer import atomic_write_text

    try:
        atomic_write_text(path, json.dumps({"whatif_compile_seconds": seconds}, indent=1, sort_keys=True) + "\n",
                          is_ours=lambda p: bool(read_estimates(p)))
    except (OSError, ScenarioError):
        pass


def _collect(collector: str) -> None:
    """The heap's kernels (allocation, the collector's steps, the object layout) on a throwaway heap of 64 KB
    that collects a few times (the 7447A's caches bound the recent allocations it keeps), and a single
    object's allocation (a JVM's: ``simulator/jvm/vm.py``) on another."""
    from whatif.simulator.gc import kernel_alloc as KA
    from whatif.simulator.gc.behaviour import load_behaviour
    from whatif.simulator.gc.config import heap_config
    from whatif.simulator.gc.heap import Heap
    from whatif.simulator.gc.run import simulate_gc
    from whatif.simulator.platform import load_platform

    config = heap_config(heap_bytes=1 << 16, collector=collector)
    simulate_gc(load_behaviour("specjvm98/jess"), config, load_platform("mpc7447a"), scale=0.0003, seed=1,
                timed=False)
    KA.alloc_raw(Heap(config).H, 16, 0)


def _synthesise(workload: str, isa: str, seed: int):
    """The synthesiser's kernels (the program's construction and both walkers) on a throwaway synthesiser;
    the static program it builds (for the run's seed) is the one the run reuses."""
    from whatif.simulator.isa import InstrBlock
    from whatif.simulator.synth import Synthesizer
    from whatif.simulator.workload import load_workload

    synth = Synthesizer(load_workload(workload), isa, seed=seed, instructions=2)
    synth.fill(InstrBlock.empty(1))
    synth.skip(1)
    return synth


def _profile(workload: str, isa: str, seed: int) -> None:
    """The instruction profiler's kernels on a throwaway profile of the workload's program: one record of an
    instruction outside it (which no profile counts), then the samples still pending resolved."""
    from whatif.simulator.core import timing as TM
    from whatif.simulator.core.profiler import InstructionProfiler
    from whatif.simulator.isa import InstrBlock

    profiler = InstructionProfiler(_synthesise(workload, isa, seed).program, period=64, front_end_depth=1)
    profiler.consume(np.zeros((1, TM.NREC), np.int64), InstrBlock.empty(1).pc, 1)
    profiler.finish()


def _gc_microbenchmarks(platform: Platform, collector: str) -> None:
    """The collector microbenchmarks' kernels (the list builder, a field's store, the copy loop) on a
    throwaway heap of 64 KB holding one list of one object, and a copy of 64 bytes."""
    from whatif.simulator.gc.microbench import copy_bandwidth, run_microbenchmark

    run_microbenchmark(platform, 1 << 16, n_lists=1, list_length=1, object_size=16, collector=collector)
    copy_bandwidth(platform, nbytes=64)


def _mine() -> None:
    """The FlowGSP miner's support counter on a graph of two vertices (one generation)."""
    from whatif.models.flowgsp import EFG, FlowGSP

    vertices = [{"id": v, "weight": 1, "attributes": ["A"]} for v in (0, 1)]
    FlowGSP(n_generations=1).fit(EFG.from_methods([{"name": "m", "vertices": vertices, "edges": [[0, 1, 1]]}]))
