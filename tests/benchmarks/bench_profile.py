"""Speed of instruction profiling and of mining the profile (issue 13, "Performance").

    python tests/benchmarks/bench_profile.py [--workload websphere/was] [--instructions 20000000]
                                             [--warmup 5000000] [--sample-every 1024] [--repeats 2]

The defaults are the shipped scenario's (scenarios/websphere-z10.toml: program seed 0, a sample every
1,024 cycles, the Prologue attribute below 48 bytes).

1. The same run of the workload on the z10 with and without the profiler: simulated program instructions
   per second (wall clock; best of the repeats; the warm-up is run and timed too, unprofiled), and the
   ratio.  Goals: >= 5 M instructions/s with sampling on; profiling within 1.5x of an unprofiled run.
2. Mining the full-scale profile with g = 0, w = 1, 10 generations, thresholds 0.01 (the thesis's
   settings, §4.4): seconds from the EFG to the results (goal <= 60 s), and the EFG's size.
Compilation is excluded (a short run of each kind precedes the timing).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from whatif.models.flowgsp import FlowGSP  # noqa: E402
from whatif.models.flowgsp.profile_db import efg_from_tables  # noqa: E402
from whatif.simulator.machine import Machine  # noqa: E402
from whatif.simulator.platform import load_platform  # noqa: E402
from whatif.simulator.profiledb import profile_tables  # noqa: E402

GOAL_RATE = 5e6
GOAL_RATIO = 1.5
GOAL_MINING_S = 60.0


def run(platform, workload, instructions, warmup, every, seed=0):
    m = Machine(platform, workload, warmup + instructions, seed=seed, profile_every=every)
    if warmup:
        m.warm_up(warmup)
    m.run()
    return m


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", default="websphere/was")
    ap.add_argument("--platform", default="z10")
    ap.add_argument("--instructions", type=int, default=20_000_000)
    ap.add_argument("--warmup", type=int, default=5_000_000)
    ap.add_argument("--sample-every", type=int, default=1024)
    ap.add_argument("--prologue-bytes", type=int, default=48)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--generations", type=int, default=10)
    args = ap.parse_args()
    platform = load_platform(args.platform)
    run(platform, args.workload, 50_000, 0, args.sample_every)          # compile, build the program
    rates = {}
    machine = None
    for label, every in (("unprofiled", None), ("profiled", args.sample_every)):
        best = None
        for _ in range(args.repeats):
            m = run(platform, args.workload, args.instructions, args.warmup, every)
            rate = m.core.instructions / m.host_seconds
            best = rate if best is None or rate > best else best
            machine = m if every else machine
        rates[label] = best
    ratio = rates["unprofiled"] / rates["profiled"]
    print(f"{args.workload} on {args.platform}, {args.instructions:,} instructions after {args.warmup:,} of warm-up")
    print(f"  unprofiled  {rates['unprofiled'] / 1e6:6.2f} M instructions/s")
    print(f"  profiled    {rates['profiled'] / 1e6:6.2f} M instructions/s   (goal >= {GOAL_RATE / 1e6:.0f} M/s)")
    print(f"  slowdown    {ratio:6.2f} x                   (goal <= {GOAL_RATIO} x)")
    prof = machine.profile()
    tables = profile_tables(machine.synth.program, prof, args.workload)
    efg = efg_from_tables(tables, source=args.workload, prologue_bytes=args.prologue_bytes)
    t0 = time.perf_counter()
    res = FlowGSP(gap=0, window=1, n_generations=args.generations, min_support=0.01, min_diff_support=0.01).fit(efg)
    mining = time.perf_counter() - t0
    g = efg.describe()
    print(f"  mining      {mining:6.1f} s                    (goal <= {GOAL_MINING_S:.0f} s): {g['vertices']:,} vertices, "
          f"{g['edges']:,} edges, {g['attributes']} attributes; {len(res.sequences):,} sequences kept of "
          f"{res.n_candidates:,} candidates in {len(res.generations)} generations")


if __name__ == "__main__":
    main()
