"""Live-points (issue 17, item 2): a sampled run replayed from its stored warm state, against the 200 M/s goal.

    python tests/benchmarks/bench_livepoints.py [--instructions 1e9] [--workloads 403.gcc=2700,429.mcf,...]
                                                [--workers 1,2] [--what-if core.rob_entries=64] [--store DIR]

Per workload (Nehalem, seed 1, OS noise, as ``whatif simulate --sample smarts:1000,2000,N --live-points DIR``
runs it; ``workload=N`` gives its units, default SMARTS's n for the length):

* the capture: a SMARTS run that stores every unit's warm state; its CPI +- the 99.7 % interval, its effective
  rate, the library's size on disk;
* the replay from the store (memory-mapped from disk, as a later ``whatif simulate`` reads it), once per
  ``--workers``: its effective rate (instructions covered / host seconds of the sampled run, the library's
  load included) against the goal of 200 M/s, and whether its CPI is the capture's (it must be, but for the
  first unit of each later worker's share, whose pipeline starts empty);
* with ``--what-if KEY=VALUE``: that core replayed from the same library against its own SMARTS run (its own
  warming, same units): the difference the capture's warming makes.

Rates are wall-clock on a machine that may be shared (the load average is printed); compilation and the
static program's construction are excluded (a short run of each workload precedes the timing).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from whatif.scenarios.results.livepoint_store import LivePointStore  # noqa: E402
from whatif.simulator.collect import CollectSpec, simulate_one  # noqa: E402
from whatif.simulator.platform import load_platform  # noqa: E402
from whatif.simulator.smarts import SmartsSpec  # noqa: E402

SEED = 1
GOAL = 200e6


def run(platform, workload: str, n: int, units: int | None, store=None, workers: int = 1) -> tuple[dict, float]:
    t0 = time.perf_counter()
    spec = CollectSpec(instructions=n, sample=SmartsSpec(units=units))
    res = simulate_one(platform, workload, spec, program_seed=SEED, replicate_seed=SEED, workers=workers,
                       live_points=store)
    return res["sampled"], time.perf_counter() - t0


def size_on_disk(path: Path) -> int:
    return sum(p.stat().st_size for p in path.iterdir())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--instructions", type=float, default=1e9)
    ap.add_argument("--workloads", default="464.h264ref,403.gcc,429.mcf")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--what-if", default=None, help="a core override KEY=VALUE replayed beside its own run")
    ap.add_argument("--store", default=None, help="keep the libraries here (default: each removed once measured)")
    args = ap.parse_args()
    n = int(args.instructions)
    platform = load_platform("nehalem")
    other = load_platform("nehalem", [args.what_if]) if args.what_if else None
    root = Path(args.store) if args.store else Path(tempfile.mkdtemp(prefix="bench-livepoints-"))
    store = LivePointStore(root)
    print(f"live-points, Nehalem, {n:,} instructions, load average {os.getloadavg()[0]:.2f}; goal "
          f"{GOAL / 1e6:.0f} M/s effective")
    try:
        for item in args.workloads.split(","):
            name, _, units = item.partition("=")
            workload = f"cint2006/{name}"
            run(platform, workload, 200_000, 20)                      # compile, build the static program
            cap, seconds = run(platform, workload, n, int(units) if units else None, store)
            lp = cap["live_points"]
            cpi = cap["cpi"]
            # (a --store that already holds the library: this run replayed it, and its time is a replay's)
            first = "capture" if lp["action"] == "captured" else "already stored, replayed in"
            print(f"{name}: n = {cap['units']:,}, CPI {cpi['mean']:.4f} ± {cpi['relative_error']:.2%} "
                  f"(V {cpi['cv']:.3f}, ±3 % needs {cap['recommended_units']:,}); {first} {seconds:.1f} s, "
                  f"{cap['effective_instructions_per_s'] / 1e6:.1f} M/s effective; library "
                  f"{size_on_disk(Path(lp['library'])) / 1e6:,.0f} MB on disk, {lp['bytes'] / lp['units'] / 1e3:.0f} "
                  f"KB a unit")
            # the library's pages written back before a replay is timed (else the disk's write-back of gigabytes
            # runs beside the replay: mcf's took 9.29 s against 7.15-7.51 s in a later process)
            os.sync()
            for workers in (int(w) for w in args.workers.split(",")):
                rep, seconds = run(platform, workload, n, int(units) if units else None, store, workers)
                assert rep["live_points"]["action"] == "replayed", rep["live_points"]
                rate = rep["effective_instructions_per_s"]
                print(f"  replay, {workers} worker(s): {rep['host_seconds']:.2f} s ({seconds:.2f} s with the "
                      f"library's lookup), {rate / 1e6:.0f} M/s effective ({rate / GOAL:.2f}x the goal); CPI "
                      f"{rep['cpi']['mean']:.4f} ({'=' if rep['cpi'] == cap['cpi'] else '≠'} the capture's, "
                      f"{(rep['cpi']['mean'] / cpi['mean'] - 1):+.4%})")
            if other is not None:
                what, _ = run(other, workload, n, int(units) if units else None, store)
                own, seconds = run(other, workload, n, int(units) if units else None)
                print(f"  {args.what_if}: replayed {what['cpi']['mean']:.4f} in {what['host_seconds']:.2f} s; its own "
                      f"SMARTS run {own['cpi']['mean']:.4f} ± {own['cpi']['relative_error']:.2%} in {seconds:.1f} s: "
                      f"{what['cpi']['mean'] / own['cpi']['mean'] - 1:+.2%}")
            if not args.store:                        # (a library of 1e9 instructions takes gigabytes)
                shutil.rmtree(lp["library"], ignore_errors=True)
    finally:
        if not args.store:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
