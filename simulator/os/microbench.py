"""HBench:OS microbenchmarks (seed 003 §6.1, after lmbench): a platform's system vector, measured.

Each primitive runs in a loop on a fresh kernel of the platform, as lmbench runs it: the same buffers
every iteration (a file read again and again is in the page cache), so the loop finds the caches warm.
Time is read from a clock of finite resolution (``timer_resolution_s``, gettimeofday's microsecond by
default): the iteration count doubles until one measurement spans at least ``min_ticks`` ticks of it,
then ``repetitions`` measurements of that many iterations are taken and their ``trim``-trimmed mean is
the cost.  Per-call primitives are reported in µs per call; per-byte primitives (``unit = "byte"``) run
calls of ``transfer_bytes`` each and are reported in µs per byte.

The result is a system-vector table (``system, primitive, unit, cost``), what
``whatif.models.hbench.vectors.VectorModel`` reads, and the measurement's figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from whatif.simulator.errors import constraint_error
from whatif.simulator.os.kernel import Kernel
from whatif.simulator.platform import Platform

USER_BUFFER = 0x0000_7000_0000          # the benchmark's user buffer
FILE_PAGES = 0x0000_6000_0000           # the file it reads (page-cache pages, or its mapping)


@dataclass(frozen=True)
class MicrobenchSettings:
    timer_resolution_s: float = 1e-6    # gettimeofday: microseconds [LMB96]
    min_ticks: int = 100                # a measurement spans at least this many clock ticks (1 % resolution)
    repetitions: int = 5                # measurements per primitive
    trim: float = 0.2                   # trimmed fraction (each end: trim / 2)
    transfer_bytes: int = 65536         # bytes per call of a per-byte primitive [HBOS97] bandwidth tests
    warmup_calls: int = 2               # calls before the first measurement
    max_iterations: int = 1 << 16

    def check(self) -> None:
        for name, ok, must in (("timer_resolution_s", self.timer_resolution_s > 0, "a number > 0"),
                               ("min_ticks", self.min_ticks >= 1, "an integer >= 1"),
                               ("repetitions", self.repetitions >= 1, "an integer >= 1"),
                               ("trim", 0 <= self.trim < 1, "a number in [0, 1)"),
                               ("transfer_bytes", self.transfer_bytes >= 1, "an integer >= 1"),
                               ("warmup_calls", self.warmup_calls >= 0, "an integer >= 0")):
            if not ok:
                raise constraint_error(name, "MicrobenchSettings", must, getattr(self, name))


def _clock(seconds: float, resolution: float) -> float:
    return math.floor(seconds / resolution) * resolution


COLD_CALLS = 3             # calls after a flush of every cache and TLB: the cold cost of the hybrid methodology


def cold_miss_penalty(memory, op, cycles, seconds, warm_us: float, warm_misses: float,
                      calls: int = COLD_CALLS) -> float:
    """µs per memory read beyond a warm call's (the hybrid methodology's cache-specific cost, seed 003
    §3.1.3): ``calls`` single calls of ``op`` after every cache and TLB was flushed, their extra time over
    their extra reads; ``warm_us`` and ``warm_misses`` are a warm call's.  ``cycles()`` reads the core's
    clock, ``seconds(cycles)`` converts."""
    spent = reads = 0
    for _ in range(calls):
        memory.flush_caches()
        c0, m0 = cycles(), memory.memory_demand_reads()
        op()
        spent += cycles() - c0
        reads += memory.memory_demand_reads() - m0
    extra = reads / calls - warm_misses
    return max(0.0, seconds(spent / calls) * 1e6 - warm_us) / extra if extra > 0 else 0.0


def lines_in_prices(memory, op, cycles, seconds, warm_us: float, warm_lines: np.ndarray,
                    calls: int = COLD_CALLS) -> np.ndarray:
    """µs per line brought into each cache depth and per page walk (the elements of
    :meth:`MemoryHierarchy.lines_in`) beyond a warm call's: the hybrid methodology's cache-specific costs
    (seed 003 §3.1.3) level by level, as lmbench's lat_mem_rd prices each level.

    ``calls`` single calls of ``op`` after the caches of depth 0 (the L1s) were flushed, then after
    depths 0-1, ..., then every cache (the TLBs warm throughout), and last after only the TLBs were
    flushed.  Flushed to depth d, a call's extra lines come in at depths 0..d, so its extra time, less
    what the shallower depths' prices account for, over its extra lines at depth d is depth d's price
    (a triangular solve); the walks' price comes from the TLB flush the same way.  A price is never
    below 0; a depth at which the call brings in no more lines than warm (nothing of it there to lose)
    costs 0.  ``warm_us`` and ``warm_lines`` are a warm call's; ``cycles()`` reads the core's clock,
    ``seconds(cycles)`` converts."""
    depths = len(warm_lines) - 1
    prices = np.zeros(len(warm_lines))

    def cold(flush) -> tuple[float, np.ndarray]:
        spent, lines = 0, np.zeros(len(warm_lines))
        for _ in range(calls):
            flush()
            c0, l0 = cycles(), memory.lines_in()
            op()
            spent += cycles() - c0
            lines += memory.lines_in() - l0
        return seconds(spent / calls) * 1e6 - warm_us, lines / calls - warm_lines

    for e in range(depths + 1):
        extra_us, extra = cold((lambda d=e: memory.flush_caches(d, tlbs=False)) if e < depths
                               else memory.flush_tlbs)
        if extra[e] > 0:                  # prices[e] and the deeper ones are still 0 here
            prices[e] = max(0.0, (extra_us - float(extra @ prices)) / extra[e])
    return prices


def measure(kernel: Kernel, name: str, settings: MicrobenchSettings = MicrobenchSettings()) -> dict:
    """One primitive's cost on ``kernel``'s platform: µs per call (or per byte) and the measurement; the
    lines its warm calls brought into each cache depth and their page walks, per call (or byte)
    (``lines_<levels>``, :meth:`MemoryHierarchy.lines_in`), and the µs per line beyond those of each
    (``price_<levels>``, :func:`lines_in_prices`)."""
    spec = kernel.code.spec(name)
    size = settings.transfer_bytes if spec.unit == "byte" else 0
    src = FILE_PAGES
    dst = USER_BUFFER

    def run(n: int) -> float:
        start = kernel.seconds(kernel.core.cycles)
        for _ in range(n):
            kernel.call(name, size, src, dst)
        return _clock(kernel.seconds(kernel.core.cycles), settings.timer_resolution_s) - \
            _clock(start, settings.timer_resolution_s)

    for _ in range(settings.warmup_calls):
        kernel.call(name, size, src, dst)
    n = 1
    while run(n) < settings.min_ticks * settings.timer_resolution_s and n < settings.max_iterations:
        n *= 2
    memory = kernel.core.memory
    before = memory.lines_in()
    per_call = np.array([run(n) / n for _ in range(settings.repetitions)])
    warm_lines = (memory.lines_in() - before) / (settings.repetitions * n)
    cost = float(stats.trim_mean(per_call, settings.trim / 2)) * 1e6
    unit_cost = cost / size if size else cost
    prices = lines_in_prices(memory, lambda: kernel.call(name, size, src, dst), lambda: kernel.core.cycles,
                             kernel.seconds, cost, warm_lines)
    names = memory.lines_in_names()
    levels = {f"lines_{k}": float(m) / (size or 1) for k, m in zip(names, warm_lines)}
    levels |= {f"price_{k}": float(p) for k, p in zip(names, prices)}
    return {"primitive": name, "unit": "us/byte" if size else "us", "cost": unit_cost, "iterations": n,
            "repetitions": settings.repetitions, "per_call_us": cost, "spread_us": float(np.ptp(per_call) * 1e6),
            **levels}


def system_vector(platform: Platform, primitives: list[str] | None = None,
                  settings: MicrobenchSettings = MicrobenchSettings(), seed: int = 0,
                  progress=None) -> pd.DataFrame:
    """Every primitive measured on ``platform`` (each on a fresh kernel): the system-vector table."""
    settings.check()
    rows = []
    names = primitives if primitives is not None else list(Kernel(platform, seed=seed).code.specs)
    for name in names:
        row = measure(Kernel(platform, seed=seed), name, settings)
        rows.append({"system": platform.name, **row})
        if progress is not None:
            progress(1)
    return pd.DataFrame(rows)
