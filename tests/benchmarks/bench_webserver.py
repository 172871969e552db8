"""Speed of the simulated web server (simulator/os/webserver.py; issue: "a simulated server run of
10,000 requests in <= 3 minutes on one core").

    python tests/benchmarks/bench_webserver.py [--platform nehalem --platform mpc7447a]
                                               [--requests 10000] [--warmup 400] [--clients 200]
                                               [--cgi-share 0.15] [--seed 1]

The load is the shipped scenario's (scenarios/hbench-os-webserver.toml): 200 clients on 80-100 Mb/s lines
(enough to saturate every platform's CPU), one worker per client; the warm-up is its default, 2 x clients
requests served before the measured window opens.  For each platform, a static mix and a mix with 15 %
standard CGI (the rest static) are run once each, in one process on one core:

* wall seconds of the whole ``run_server`` call (warm-up + measured requests + the measured requests'
  transfers), against the goal of 180 s for the 10,000 measured requests;
* requests served per host second (warm-up included);
* simulated instructions and simulated instructions per host second (the kernel's core counters), and
  the share of the wall time spent inside the core model (``Core.simulation_seconds``: numba), the rest
  being Python -- SimPy, building instruction blocks, bookkeeping;
* the run's simulated throughput and CPU utilisation (whether the clients saturated the server);
* the process's peak resident memory so far (the kernel's instruction-block cache holds up to 256 blocks,
  the largest -- a 900 KB file's tcp_transfer -- some 50 MB each).

Compilation is excluded: a short run of each mix on each platform precedes the timing.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from whatif.simulator.os.kernel import Kernel  # noqa: E402
from whatif.simulator.os.webserver import load_webserver, run_server, with_line_speed  # noqa: E402
from whatif.simulator.platform import load_platform  # noqa: E402

GOAL_S = 180.0
LINE_KBIT_S = (80000, 100000)


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024        # Linux: kilobytes


def timed_run(platform, mix, clients, requests, warmup, seed, spec) -> dict:
    kernel = Kernel(platform, seed=seed)
    t0 = time.perf_counter()
    run = run_server(platform, mix, clients, requests, warmup_requests=warmup, workers=clients, seed=seed, spec=spec,
                     kernel=kernel)
    wall = time.perf_counter() - t0
    core = kernel.core
    return {"wall": wall, "served": warmup + requests, "instructions": core.instructions,
            "core_seconds": core.simulation_seconds, "summary": run.summary}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platform", action="append", default=None, help="repeatable (default: nehalem, mpc7447a)")
    ap.add_argument("--requests", type=int, default=10_000)
    ap.add_argument("--warmup", type=int, default=None, help="default: 2 x clients")
    ap.add_argument("--clients", type=int, default=200)
    ap.add_argument("--cgi-share", type=float, default=0.15)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    platforms = args.platform or ["nehalem", "mpc7447a"]
    warmup = 2 * args.clients if args.warmup is None else args.warmup
    spec = with_line_speed(load_webserver(), LINE_KBIT_S)
    mixes = {"static": {"static": 1.0},
             f"static + {round(100 * args.cgi_share)} % cgi": {"static": 1.0 - args.cgi_share, "cgi": args.cgi_share}}
    print(f"{args.requests:,} measured requests after {warmup:,} of warm-up, {args.clients} clients on "
          f"{LINE_KBIT_S[0] // 1000}-{LINE_KBIT_S[1] // 1000} Mb/s lines, seed {args.seed}; goal <= {GOAL_S:.0f} s "
          f"per run")
    print(f"  {'platform':10s} {'mix':18s} {'wall s':>7s} {'goal':>5s} {'req/s host':>10s} {'M instr':>8s} "
          f"{'M instr/s':>9s} {'in core':>7s} {'sim req/s':>9s} {'cpu util':>8s} {'peak MB':>7s}")
    for name in platforms:
        platform = load_platform(name)
        for label, mix in mixes.items():
            run_server(platform, mix, 20, 20, warmup_requests=5, workers=20, seed=args.seed, spec=spec)   # compile
            r = timed_run(platform, mix, args.clients, args.requests, warmup, args.seed, spec)
            s = r["summary"]
            print(f"  {name:10s} {label:18s} {r['wall']:7.1f} {'ok' if r['wall'] <= GOAL_S else 'OVER':>5s} "
                  f"{r['served'] / r['wall']:10.1f} {r['instructions'] / 1e6:8.1f} "
                  f"{r['instructions'] / r['wall'] / 1e6:9.2f} {100 * r['core_seconds'] / r['wall']:6.0f}% "
                  f"{s['throughput']:9.0f} {s['cpu_utilisation']:8.2f} {peak_mb():7.0f}")


if __name__ == "__main__":
    main()
