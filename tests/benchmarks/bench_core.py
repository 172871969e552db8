"""Speed of the core timing model: simulated instructions per second, core + predictors + memory hierarchy.

Streams: ``random_program`` (a random walk over a static program: 26% loads, 12% stores, basic blocks of
about 7 instructions, biased branches, calls/returns, stack/streaming/random data over 2 MB) and the
microbenchmarks.  For the random program the memory hierarchy alone is timed on the same accesses (one
fetch record per new fetch line or taken transfer, one record per load/store), so the core's own share
is visible.  Target (issue 3): >= 15 M instructions/s for core + predictors + memory on Nehalem.

    python tests/benchmarks/bench_core.py [--instructions N]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from simulator.core import Core
from simulator.core import microbench as MB
from simulator.isa import OP_ALU, OP_LOAD, OP_STORE
from simulator.memory.hierarchy import MemoryHierarchy
from simulator.platform import load_platform, platform_names


def memory_trace(block, line_bytes: int):
    """The accesses the core issues for ``block``: fetches (new line or after a taken transfer), data."""
    n = len(block)
    line = block.pc >> np.uint64(int(np.log2(line_bytes)))
    new = np.ones(n, bool)
    new[1:] = (line[1:] != line[:-1]) | (block.taken[:-1] != 0)
    mem = (block.op == OP_LOAD) | (block.op == OP_STORE)
    kinds_i = np.zeros(n, np.uint8)
    kinds_d = np.where(block.op == OP_LOAD, 1, 2).astype(np.uint8)
    addrs = np.stack([block.pc, block.mem_addr], 1).ravel()
    sizes = np.stack([block.size.astype(np.uint16), block.mem_size.astype(np.uint16)], 1).ravel()
    kinds = np.stack([kinds_i, kinds_d], 1).ravel()
    keep = np.stack([new, mem], 1).ravel()
    return addrs[keep], sizes[keep], kinds[keep]


def time_core(platform, block, repeat: int = 1) -> tuple[float, Core]:
    best = float("inf")
    core = None
    for _ in range(repeat):
        core = Core(platform, MemoryHierarchy(platform, seed=1))
        t0 = time.perf_counter()
        core.run(block)
        best = min(best, time.perf_counter() - t0)
    return best, core


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--instructions", type=int, default=4_000_000)
    args = ap.parse_args()
    n = args.instructions
    # compile / load the kernels outside the timed region
    warm = MB.random_program(2000, 0)
    for name in platform_names():
        Core(load_platform(name)).run(warm)

    print(f"core + predictors + memory, random program of {n:,} instructions (best of 2)")
    print(f"{'platform':12s} {'M instr/s':>10s} {'CPI':>6s} {'memory-only M acc/s':>20s} {'accesses/instr':>15s} "
          f"{'memory share':>13s}")
    for name in platform_names():
        p = load_platform(name)
        t0 = time.perf_counter()
        block = MB.random_program(n, 7, p.isa)
        gen = time.perf_counter() - t0
        dt, core = time_core(p, block, repeat=2)
        addrs, sizes, kinds = memory_trace(block, p.caches[p.top_cache("instruction")].line_bytes)
        mh = MemoryHierarchy(p, seed=1)
        mh.run(addrs[:10], sizes[:10], kinds[:10])
        mh = MemoryHierarchy(p, seed=1)
        t1 = time.perf_counter()
        mh.run(addrs, sizes, kinds)
        mt = time.perf_counter() - t1
        k = core.counters(memory=False)
        print(f"{name:12s} {n / dt / 1e6:10.2f} {k['cycles'] / k['instructions']:6.2f} "
              f"{len(addrs) / mt / 1e6:20.2f} {len(addrs) / n:15.2f} {mt / dt:12.0%}   (stream generated in "
              f"{gen:.1f} s)")

    print("\nmicrobenchmarks on nehalem (M instr/s)")
    p = load_platform("nehalem")
    m = min(n, 2_000_000)
    streams = {
        "dependent chain": MB.dependent_chain(m, p.isa),
        "independent alu+load": MB.independent_ops(m, p.isa, {OP_ALU: 3, OP_LOAD: 1}),
        "random 50% branch": MB.random_branch(m // 9, 0.5, 1, isa=p.isa),
        "pointer chase 32 MB": MB.pointer_chase(m // 20, 32 << 20, 128, 4096, 1, p.isa),
    }
    for label, block in streams.items():
        dt, core = time_core(p, block)
        print(f"  {label:24s} {len(block) / dt / 1e6:8.2f}   CPI {core.cycles / core.instructions:8.2f}")


if __name__ == "__main__":
    main()
