"""End-to-end speed of ``whatif simulate`` (issue 3, "Performance"): synthesis + branch prediction + memory
hierarchy + core timing + OS noise, in simulated program instructions per second on one core.

    python tests/benchmarks/bench_simulate.py [--platform nehalem] [--instructions 5000000] [--repeats 3]
                                              [--variant NAME="KEY=VALUE;KEY=VALUE" ...]

Per workload: the best and median rate of ``Machine(...).run()`` over the repeats, as wall-clock and as
CPU-time rate (the process's own CPU seconds: excludes time the scheduler gave to other processes on a
shared machine), and the share of the time spent in synthesis (measured separately on the same stream).
Compilation and the static program's construction are excluded (a warm-up run precedes the timing).
The repeats run in rounds, one run of every workload a round, the order reversed every other round: a
stretch of tens of seconds in which the host runs slow (memory-bound runs drift by 15 % and more on a
shared host) then costs every workload one run, which its median discards, instead of all the repeats of
the workload that happened to be running.
Goal (issue 3): >= 10 M instructions/s on the Nehalem model.

``--variant`` measures what a platform setting costs: the platform as loaded and each variant (the platform
with those ``--set``-style overrides) run alternately in one process, one run each per round, the order
reversed every other round, so that the host's drift -- 15-35 % between runs minutes apart on a shared host,
more than most changes move the rate -- falls on all of them alike.  Per workload: every variant's median
CPU-time rate and its ratio to the base's; then the geometric means.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from whatif.simulator.errors import SimulatorInputError  # noqa: E402
from whatif.simulator.isa import InstrBlock, isa_for  # noqa: E402
from whatif.simulator.machine import Machine  # noqa: E402
from whatif.simulator.platform import load_platform  # noqa: E402
from whatif.simulator.synth import Synthesizer  # noqa: E402
from whatif.simulator.workload import load_workload  # noqa: E402

WORKLOADS = ["464.h264ref", "445.gobmk", "462.libquantum", "429.mcf", "yahoo_y/Y"]


def timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def synthesis_only(workload, platform, n: int) -> tuple[float, float]:
    synth = Synthesizer(workload, isa_for(platform.isa), seed=1, instructions=n)
    block = InstrBlock.empty(1 << 16)

    def go():
        done = 0
        while done < n:
            synth.fill(block)
            done += len(block)
    return timed(go)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platform", default="nehalem")
    ap.add_argument("--instructions", type=int, default=5_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--variant", action="append", default=[], metavar='NAME="KEY=VALUE;..."',
                    help="a platform variant run alternately with the platform as loaded (repeatable)")
    args = ap.parse_args()
    if args.variant:
        alternated(args)
        return
    platform = load_platform(args.platform)
    n = args.instructions
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; {args.platform}, {n:,} instructions")
    Machine(platform, load_workload(WORKLOADS[0]), 100_000, seed=1).run()          # compile / cache load
    workloads = {name: load_workload(name) for name in WORKLOADS}
    for wl in workloads.values():
        Machine(platform, wl, 10_000, seed=1).run()                              # static program built
    wall = {name: [] for name in WORKLOADS}
    cpu = {name: [] for name in WORKLOADS}
    cpi = {}
    for r in range(args.repeats):                                                # rounds (module docstring)
        for name in (WORKLOADS if r % 2 == 0 else WORKLOADS[::-1]):
            m = Machine(platform, workloads[name], n, seed=1, run_seed=r)
            w, c = timed(m.run)
            wall[name].append(w)
            cpu[name].append(c)
            cpi[name] = m.counters()["cycles"] / max(1, m.counters()["instructions"])
    all_cpu = []
    for name, wl in workloads.items():
        sw, sc = synthesis_only(wl, platform, n)
        rw, rc = n / np.array(wall[name]) / 1e6, n / np.array(cpu[name]) / 1e6
        all_cpu.append(np.median(rc))
        print(f"{name:16s} CPI {cpi[name]:5.2f}: {rw.max():5.2f} M/s best, {np.median(rw):5.2f} median (wall); "
              f"{rc.max():5.2f} best, {np.median(rc):5.2f} median (CPU); synthesis alone "
              f"{n / sc / 1e6:5.1f} M/s CPU ({sc / np.median(cpu[name]):.0%} of the run)")
    print(f"geometric mean of the median CPU-time rates: {np.exp(np.mean(np.log(all_cpu))):.2f} M instr/s "
          f"[goal >= 10 M/s]")


def alternated(args) -> None:
    """The base platform and every ``--variant`` alternately, run by run (module docstring)."""
    base = load_platform(args.platform)
    variants = {"base": base}
    for spec in args.variant:
        name, _, overrides = spec.partition("=")
        keys = [o for o in overrides.split(";") if o]
        if not name or name in variants or not keys:
            raise SystemExit(f"--variant {spec!r}: expected NAME=\"KEY=VALUE;...\" with a new name (not 'base') "
                             f"and at least one override")
        try:
            variants[name] = load_platform(args.platform, keys, label="--variant")
        except SimulatorInputError as e:
            raise SystemExit(str(e)) from None
    n = args.instructions
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; {args.platform}, {n:,} instructions, "
          f"{args.repeats} alternated rounds; median CPU-time rates (M instructions/s) and their ratio to base")
    names = list(variants)
    print(f"{'':16s} " + " ".join(f"{v:>18s}" for v in names))
    logs = {v: [] for v in names}
    for wl_name in WORKLOADS:
        wl = load_workload(wl_name)
        for p in variants.values():
            Machine(p, wl, 20_000, seed=1).run()                               # compiled, program built
        cpu = {v: [] for v in names}
        for r in range(args.repeats):
            for v in (names if r % 2 == 0 else names[::-1]):
                m = Machine(variants[v], wl, n, seed=1, run_seed=r)
                cpu[v].append(timed(m.run)[1])
        rate = {v: n / np.median(cpu[v]) / 1e6 for v in names}
        for v in names:
            logs[v].append(np.log(rate[v]))
        print(f"{wl_name:16s} " + " ".join(f"{rate[v]:9.2f} ({rate[v] / rate['base']:5.3f})" for v in names))
    gm = {v: np.exp(np.mean(logs[v])) for v in names}
    print(f"{'geometric mean':16s} " + " ".join(f"{gm[v]:9.2f} ({gm[v] / gm['base']:5.3f})" for v in names)
          + "   [goal >= 10 M/s]")


if __name__ == "__main__":
    main()
