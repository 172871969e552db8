"""Loading the simulator's numba kernels before a command runs, exactly those it will call.

The first run after an install or an upgrade compiles them: over a minute for ``whatif simulate`` on the
2-core CI host (the core's timing kernel alone 57-76 s, 2026-12-01 and 02), under a bar with the time left
(:func:`~whatif.scenarios.results.progress.run_steps`).  Its estimates are the seconds each step took when
it last compiled on this machine (recorded in :data:`ESTIMATES_FILE` beside numba's cache), else the
figures in :data:`DEFAULT_SECONDS`.  Later runs load the kernels from numba's cache in well under a second,
and no bar shows.  Compiling up front also keeps compilation out of the run itself: out of its progress
bar's time left and out of the simulation rate it reports.

numba compiles under one lock per process, so the steps would compile one after another however many cores idle
meanwhile. So, as soon as a step begins to compile (numba's ``numba:compile`` event, which a kernel loaded from
the cache never fires), a helper process is started that builds the same steps (the same step factory on the same
arguments) and takes them from the last one backwards, while this process goes on from the first. A step is taken
once, by whichever process first creates its claim file (``O_EXCL``), so the two meet in between and no step is
compiled by both. This process still runs every step itself, a step the helper compiled once the helper's done
file for it appears (it then loads from numba's cache), so whatever a step leaves in this process (the
synthesiser's static program) is there as before. A helper that fails or dies leaves the steps it had not finished
to this process, which compiles them. Steps that share a callee (the core's flavours and the warming kernels share
the memory hierarchy's) compile it where they run, unless the other process has cached it by then (numba looks in
its cache before it compiles any function); numba writes its cache files whole (a temporary file renamed), and
both processes compile the callee for the same signature.

Nothing starts when no step compiles (a warm cache), when there is one step, on a single CPU, or with
``WHATIF_COMPILE_HELPER=0``.

Modules of the core and the synthesiser are imported only when a step needs them (``whatif cachesim``
loads the address-trace kernel alone, and its start-up counts).
"""

from __future__ import annotations

import importlib
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
from numba.core import event

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
STEP_FACTORY = f"{__name__}:kernel_steps"     # (the helper process makes the same steps)
HELPER_ENV = "WHATIF_COMPILE_HELPER"
# for the bar's time left: seconds from the helper's start to its first step (a Python process importing the
# simulator and making the steps: 0.36-0.38 s for Nehalem's sampled steps on the 2-core Xeon host, 2026-12-02),
# and a core's or a warming kernel's load from numba's cache once the helper has compiled it (0.010-0.013 s there)
HELPER_START_SECONDS = 0.5
LOAD_SECONDS = 0.05
POLL_SECONDS = 0.05


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
    recorded as this machine's estimates (a step the helper process compiled: its seconds there).  Once a step
    compiles, a helper process compiles the last steps meanwhile (module docstring)."""
    steps = make_steps(STEP_FACTORY, args, kwargs)
    if not steps:
        return
    path = estimates_path()
    known = read_estimates(path)
    names = [name for name, _ in steps]
    estimates = [known.get(name, DEFAULT_SECONDS.get(name, FALLBACK_SECONDS)) for name in names]
    sharing = StepSharing(STEP_FACTORY, args, kwargs, names, estimates) if helper_allowed(len(steps)) else None
    with sharing or nullcontext():
        seconds = run_steps([(name, est, sharing.step(i, fn) if sharing else fn)
                             for i, ((name, fn), est) in enumerate(zip(steps, estimates))], DESCRIPTION,
                            enabled=progress, estimates=estimates)
    # a step the helper compiled: the seconds it took there
    by_name = {**dict(zip(names, seconds)), **(sharing.helper_seconds if sharing else {})}
    compiled = {name: round(s, 1) for name, s in by_name.items() if s >= COMPILED_SECONDS}
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


# ============================================================================ the helper process
def make_steps(factory: str, args: tuple, kwargs: dict[str, Any]) -> list[tuple[str, Callable[[], object]]]:
    """The steps ``factory`` (``"module:function"``) makes of ``args`` and ``kwargs``: (name, callable) pairs."""
    module, _, function = factory.partition(":")
    return list(getattr(importlib.import_module(module), function)(*args, **kwargs))


def helper_allowed(n_steps: int) -> bool:
    """Whether a helper may start for ``n_steps`` steps: two or more, two or more CPUs this process may run
    on, and not turned off by ``WHATIF_COMPILE_HELPER=0``."""
    if n_steps < 2 or os.environ.get(HELPER_ENV, "1").strip() == "0":
        return False
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:                      # (not on Linux)
        cpus = os.cpu_count() or 1
    return cpus >= 2


def split(estimates: list[float], first: int, parent_left: float, helper_start: float) -> int:
    """Where the two processes are expected to meet: the index of the first step the helper takes, when this
    process has ``parent_left`` seconds of step ``first`` to go and takes the steps after it in order, and
    the helper, ready in ``helper_start`` seconds, takes them from the last one backwards; each next step goes
    to whichever is free first (this process on a tie)."""
    parent, helper = parent_left, helper_start
    lo, hi = first + 1, len(estimates) - 1
    while lo <= hi:
        if parent <= helper:
            parent += estimates[lo]
            lo += 1
        else:
            helper += estimates[hi]
            hi -= 1
    return lo


class StepSharing:
    """Shares steps with a helper process while in use (a context manager).  ``factory``: the steps'
    factory as ``"module:function"``, which ``factory(*args, **kwargs)`` makes, in this process and in the
    helper, into (name, callable) pairs, named ``names`` in this order; ``estimates``: their estimated
    seconds, a list that :meth:`step` revises when the helper starts (the steps it is expected to take become
    this process's wait for them; :func:`~whatif.scenarios.results.progress.run_steps` reads it)."""

    def __init__(self, factory: str, args: tuple, kwargs: dict[str, Any], names: list[str],
                 estimates: list[float]):
        self.factory, self.args, self.kwargs, self.names, self.estimates = factory, args, kwargs, names, estimates
        self.dir: Path | None = None
        self.proc: subprocess.Popen | None = None
        self.started = False
        self.running, self.began = -1, 0.0       # the step this process runs, and when it began
        self.helper_seconds: dict[str, float] = {}   # seconds the helper took for the steps it ran

    def __enter__(self) -> "StepSharing":
        try:
            job = pickle.dumps((self.factory, self.args, self.kwargs, self.names))
            self.dir = Path(tempfile.mkdtemp(prefix="whatif-compile-"))
            (self.dir / "job.pkl").write_bytes(job)
        except (OSError, pickle.PicklingError, TypeError, AttributeError):
            # (arguments a process cannot be given, no temporary directory: every step here, as without a helper)
            if self.dir is not None:
                shutil.rmtree(self.dir, ignore_errors=True)
                self.dir = None
            return self
        self._listener = _OnCompile(self._compiling)
        event.register("numba:compile", self._listener)
        return self

    def __exit__(self, *exc) -> None:
        if self.dir is None:
            return
        event.unregister("numba:compile", self._listener)
        if self.proc is not None:
            # every step the helper claimed is done (this process waited for each), or this process is leaving
            # on an error: the helper has nothing left to do here
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def step(self, i: int, fn: Callable[[], object]) -> Callable[[], object]:
        """Step ``i`` as this process runs it: claimed and run, or, if the helper has it, run once the helper
        is done with it (or has died)."""
        def run():
            self.running, self.began = i, time.perf_counter()
            try:
                mine = self.dir is None or _claim(self.dir, i)
            except OSError:
                mine = True                      # (the claims' folder gone: this process runs the step itself)
            if not mine:
                self._wait_for(i)
            return fn()
        return run

    def _compiling(self) -> None:
        if not self.started and 0 <= self.running < len(self.names) - 1:
            self.started = True
            try:
                self._start_helper()
            except OSError:
                self.proc = None               # (no process to be had: this one compiles every step, as before)

    def _start_helper(self) -> None:
        code = ("import json, sys\nsys.path[:0] = json.loads(sys.argv[2])\n"
                "from whatif.scenarios.kernels import helper_main\nhelper_main(sys.argv[1])\n")
        path = json.dumps([str(p) for p in sys.path])          # (the same whatif, wherever it was imported from)
        with open(self.dir / "helper.err", "wb") as err:
            self.proc = subprocess.Popen([sys.executable, "-c", code, str(self.dir), path], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=err)
        i = self.running
        left = max(self.estimates[i] - (time.perf_counter() - self.began), 0.0)
        meet = split(self.estimates, i, left, HELPER_START_SECONDS)
        if meet < len(self.names):
            # this process reaches step ``meet`` when its own steps are done and waits there for the helper,
            # which finishes its last step (this one) then; the later ones are done by then: loads
            mine = left + sum(self.estimates[i + 1:meet])
            theirs = HELPER_START_SECONDS + sum(self.estimates[meet:])
            for j in range(meet, len(self.names)):
                self.estimates[j] = LOAD_SECONDS
            self.estimates[meet] += max(theirs - mine, 0.0)

    def _wait_for(self, i: int) -> None:
        done = self.dir / f"done-{i}"
        while not done.exists():
            if self.proc is None or self.proc.poll() is not None:
                # (a last look: the helper may have finished the step just before it exited)
                if not done.exists():
                    return
                break
            time.sleep(POLL_SECONDS)
        self.helper_seconds[self.names[i]] = float(done.read_text())


class _OnCompile(event.Listener):
    """Calls ``fn`` when a compilation begins (numba calls listeners on the compiling thread)."""

    def __init__(self, fn: Callable[[], None]):
        self.fn = fn

    def on_start(self, ev) -> None:
        self.fn()

    def on_end(self, ev) -> None:
        pass


def _claim(folder: Path, i: int) -> bool:
    """Claim step ``i`` for the calling process: True if no process had."""
    try:
        os.close(os.open(folder / f"claim-{i}", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False


def helper_main(folder: str) -> None:
    """The helper process: make the job's steps and run them from the last one backwards, each it can claim,
    until one is already claimed; after each, its done file holds the seconds it took."""
    where = Path(folder)
    with open(where / "job.pkl", "rb") as f:
        factory, args, kwargs, names = pickle.load(f)
    steps = dict(make_steps(factory, args, kwargs))
    for i in range(len(names) - 1, -1, -1):
        if not _claim(where, i):
            return
        t0 = time.perf_counter()
        steps[names[i]]()
        tmp = where / f"done-{i}.tmp"
        tmp.write_text(repr(time.perf_counter() - t0))
        os.replace(tmp, where / f"done-{i}")
