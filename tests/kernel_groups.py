"""The numba kernels a first run compiles, in groups: each group is a small call that compiles them.

``tests/benchmarks/bench_compile.py`` times each group cold and warm.  The test suite compiles every
group once, at the start of a run on a fresh clone: ``tests/conftest.py`` hands the groups to the
pytest-xdist workers, each its share, so no two workers compile the same kernels (before, both workers
met the core's and the trace simulator's kernels in their first tests and compiled them side by side).
A group's ``prepare`` imports what it needs and returns the call that compiles; a warm cache makes the
call cost about a second.
"""

from __future__ import annotations

import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator


def simulate() -> Callable[[], object]:
    """Synthesiser, core timing and memory hierarchy: one short Nehalem run."""
    from whatif.simulator.machine import Machine
    from whatif.simulator.platform import load_platform
    from whatif.simulator.workload import load_workload

    platform, workload = load_platform("nehalem"), load_workload("464.h264ref")
    return lambda: Machine(platform, workload, 1000, seed=1).run()


def cachesim() -> Callable[[], object]:
    """The trace-driven memory kernel (``run_trace``) on a fresh hierarchy."""
    import numpy as np

    from whatif.simulator.memory import kernel as MK
    from whatif.simulator.memory.hierarchy import MemoryHierarchy
    from whatif.simulator.platform import load_platform

    hierarchy = MemoryHierarchy(load_platform("nehalem"), 1)
    addrs = np.arange(10, dtype=np.uint64) * np.uint64(64)
    sizes, kinds = np.full(10, 8, np.uint16), np.ones(10, np.uint8)      # (the dtypes MemoryHierarchy.run passes)
    return lambda: MK.run_trace(hierarchy.state[0], addrs, sizes, kinds, 0, 10, 0, 1, 0)


def gc() -> Callable[[], object]:
    """A functional mark-sweep and a copying heap: allocation and both collectors' step kernels."""
    from whatif.simulator.gc.behaviour import load_behaviour
    from whatif.simulator.gc.config import heap_config
    from whatif.simulator.gc.run import simulate_gc
    from whatif.simulator.platform import load_platform

    behaviour, platform = load_behaviour("specjvm98/jess"), load_platform("mpc7447a")

    def call() -> None:
        for collector in ("mark-sweep", "copying"):
            simulate_gc(behaviour, heap_config(heap_bytes=1 << 20, collector=collector), platform, scale=0.01,
                        seed=1, timed=False)
    return call


def traces() -> Callable[[], object]:
    """The lackey text scanner and writer, and the ``.wtr`` v2 coder, on a small trace file each."""
    from whatif.simulator.traces import lackey_bytes, mixed_streams, read_trace, synthetic_trace, wtr_bytes

    trace = synthetic_trace(mixed_streams(), 1000, seed=1, instructions_per_access=0.5)

    def call() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            for name, data in (("t.lackey", lackey_bytes(trace)), ("t.wtr", wtr_bytes(trace))):
                path = Path(tmp) / name
                path.write_bytes(data)
                read_trace(path)
    return call


#: group -> (prepare, seconds to compile it cold on the 2-CPU host of 2026-11-27, from bench_compile)
GROUPS: dict[str, tuple[Callable[[], Callable[[], object]], float]] = {
    "simulate": (simulate, 80.9), "cachesim": (cachesim, 40.2), "gc": (gc, 63.5), "traces": (traces, 8.0)}


def shares(workers: int) -> list[list[str]]:
    """The groups split between ``workers`` workers: longest first, each to the least loaded worker."""
    load = [0.0] * workers
    out: list[list[str]] = [[] for _ in range(workers)]
    for name, (_, seconds) in sorted(GROUPS.items(), key=lambda item: -item[1][1]):
        w = load.index(min(load))
        out[w].append(name)
        load[w] += seconds
    return out


@contextmanager
def recorded_steps(names: list[str]) -> Iterator[list[str]]:
    """Within the block, the names of the kernel-loading steps that run (``scenarios/kernels.py``) are
    appended to ``names``, in order (a study fixture records its run's, for a test of them)."""
    import pytest

    from whatif.scenarios import kernels

    real = kernels.run_steps

    def record(steps, *args, **kwargs):
        names.extend(name for name, _, _ in steps)
        return real(steps, *args, **kwargs)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kernels, "run_steps", record)
        yield names
