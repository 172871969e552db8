"""The timer interrupt in compressed windows (issue 15, item 4): a whole handler a tick (a burst, real time
scale) against the handler spread over its period (compressed time scale), side by side in one run.

    python tests/benchmarks/bench_timer.py [--instructions 2000000] [--window-us 300]

Per (platform, workload) and mode: the sampled windows' timer share (cycles the clock moved while the
handler's instructions ran, over the window's cycles: max, 99th percentile and mean), the coefficient of
variation of the per-window timer cycles, the run's timer share and its cost in cycles against the same run
without a timer, the timer's pieces (each a call into the core) and the CPU seconds of the run -- on a
shared machine only the pieces are a steady measure of the cost.  The regression study's windows are
0.3-2 ms (--window-us 300); the similarity study's 7.5 us (--window-us 7.5).
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
from whatif.simulator.machine import Machine  # noqa: E402
from whatif.simulator.osnoise import TimerNoise  # noqa: E402
from whatif.simulator.platform import load_platform  # noqa: E402
from whatif.simulator.sampling import Sampling, sample  # noqa: E402
from whatif.simulator.workload import load_workload  # noqa: E402

CASES = [("mpc7447a", "specjvm98/db"), ("mpc7447a", "specjvm98/jess"), ("harpertown", "429.mcf"),
         ("nehalem", "471.omnetpp")]
MODES = {"none": None, "burst": TimerNoise(), "spread": TimerNoise(time_scale=1e-4),
         "spread, no bound": TimerNoise(time_scale=1e-4, min_piece_cycles=0)}


def measure(platform: str, workload: str, noise, instructions: int, window_s: float) -> dict:
    m = Machine(load_platform(platform), load_workload(workload), instructions, seed=1, run_seed=5, input_seed=1,
                noise=noise)
    c0 = time.process_time()
    rows = sample(m, Sampling(0.0, window_s, window_s))
    m.run()
    host = time.process_time() - c0
    cyc = np.array([r["cycles"] for r in rows], float)
    osc = np.array([r["os_cycles"] for r in rows], float)
    share = osc / cyc * 100
    c = m.counters()
    return {"windows": len(rows), "max_share": share.max(), "p99_share": np.percentile(share, 99),
            "mean_share": share.mean(), "cv": osc.std() / osc.mean() if osc.mean() > 0 else 0.0,
            "run_share": c["os_cycles"] / c["cycles"] * 100, "cycles": c["cycles"], "host": host,
            "pieces": 0 if m.timer is None else m.timer.started}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instructions", type=float, default=3e6)
    ap.add_argument("--window-us", type=float, default=300.0)
    args = ap.parse_args()
    print(f"windows of {args.window_us:g} us, {args.instructions:,.0f} instructions, HZ = {TimerNoise().hz}; "
          f"load average {os.getloadavg()[0]:.1f}")
    head = (f"{'platform':10s} {'workload':14s} {'mode':16s} {'windows':>7s} {'max %':>7s} {'p99 %':>7s} {'mean %':>7s} "
            f"{'CV':>6s} {'run %':>6s} {'cost %':>7s} {'pieces':>7s} {'cpu s':>6s}")
    print(head)
    measure("mpc7447a", "specjvm98/db", None, 200_000, 20e-6)          # compile, load
    for platform, workload in CASES:
        base = None
        for mode, noise in MODES.items():
            r = measure(platform, workload, noise, int(args.instructions), args.window_us * 1e-6)
            base = r["cycles"] if base is None else base
            print(f"{platform:10s} {workload:14s} {mode:16s} {r['windows']:7d} {r['max_share']:7.2f} "
                  f"{r['p99_share']:7.2f} {r['mean_share']:7.3f} {r['cv']:6.2f} {r['run_share']:6.3f} "
                  f"{100 * (r['cycles'] / base - 1):7.3f} {r['pieces']:7d} {r['host']:6.2f}")


if __name__ == "__main__":
    main()
