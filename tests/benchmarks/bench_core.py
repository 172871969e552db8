"""Speed of the core timing model: simulated instructions per second, core + predictors + memory hierarchy.

Streams: ``random_program`` (a random walk over a static program: ~26% loads, ~11% stores, ~15% control
transfers with biased branches, calls/returns; stack, streaming and random data over 256 KB or 2 MB)
and the microbenchmarks.  The memory hierarchy alone is timed on the same accesses (one fetch record per
new fetch line or taken transfer, one record per load/store), so the core's own share is visible.
Target (issue 3): >= 15 M instructions/s for core + predictors + memory on Nehalem.

    python tests/benchmarks/bench_core.py [--instructions N]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from whatif.simulator.core import Core
from whatif.simulator.core import microbench as MB
from whatif.simulator.isa import OP_ALU, OP_LOAD, OP_STORE
from whatif.simulator.memory.hierarchy import MemoryHierarchy
from whatif.simulator.platform import load_platform, platform_names


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


def time_core(platform, block, repeat: int = 2) -> tuple[float, float, Core]:
    """Best CPU time and best wall time of simulating ``block`` on a fresh core + hierarchy."""
    cpu = wall = float("inf")
    core = None
    for _ in range(repeat):
        core = Core(platform, MemoryHierarchy(platform, seed=1))
        c0, w0 = time.process_time(), time.perf_counter()
        core.run(block)
        cpu, wall = min(cpu, time.process_time() - c0), min(wall, time.perf_counter() - w0)
    return cpu, wall, core


def time_memory(platform, block) -> tuple[float, int]:
    """Best CPU time of the memory hierarchy alone on the block's accesses."""
    addrs, sizes, kinds = memory_trace(block, platform.caches[platform.top_cache("instruction")].line_bytes)
    MemoryHierarchy(platform, seed=1).run(addrs[:10], sizes[:10], kinds[:10])
    best = float("inf")
    for _ in range(2):
        mh = MemoryHierarchy(platform, seed=1)
        c0 = time.process_time()
        mh.run(addrs, sizes, kinds)
        best = min(best, time.process_time() - c0)
    return best, len(addrs)


def report(label: str, platform, block) -> None:
    n = len(block)
    cpu, wall, core = time_core(platform, block)
    mem, accesses = time_memory(platform, block)
    print(f"{label:28s} {n / cpu / 1e6:8.2f} {n / wall / 1e6:8.2f} {core.cycles / n:6.2f} {accesses / n:9.2f} "
          f"{mem / cpu:8.0%} {(cpu - mem) / n * 1e9:10.1f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--instructions", type=int, default=4_000_000)
    args = ap.parse_args()
    n = args.instructions
    # compile / load the kernels outside the timed region
    warm = MB.random_program(2000, 0)
    for name in platform_names():
        Core(load_platform(name)).run(warm)

    print(f"core + predictors + memory hierarchy, {n:,} instructions per stream; best of 2 runs.")
    print("M/s cpu = simulated instructions per CPU second (the machine is shared: wall time is inflated by other")
    print("processes); mem = share of the memory hierarchy alone on the same accesses; core ns = the rest per instr.")
    print(f"{'stream':28s} {'M/s cpu':>8s} {'M/s wall':>8s} {'CPI':>6s} {'acc/instr':>9s} {'mem':>8s} {'core ns':>10s}")
    for name in platform_names():
        p = load_platform(name)
        report(f"{name}: program, 256 KB data", p, MB.random_program(n, 7, p.isa, data_kb=256))
    p = load_platform("nehalem")
    report("nehalem: program, 2 MB data", p, MB.random_program(n, 7, p.isa, data_kb=2048))
    m = min(n, 2_000_000)
    report("nehalem: dependent chain", p, MB.dependent_chain(m, p.isa))
    report("nehalem: independent alu+load", p, MB.independent_ops(m, p.isa, {OP_ALU: 3, OP_LOAD: 1}))
    report("nehalem: random 50% branch", p, MB.random_branch(m // 9, 0.5, 1, isa=p.isa))
    report("nehalem: pointer chase 32 MB", p, MB.pointer_chase(m // 20, 32 << 20, 128, 4096, 1, p.isa))


if __name__ == "__main__":
    main()
