"""SMARTS sampled simulation (issue 17, item 2): speed and accuracy on the CINT2006 workloads on Nehalem.

    python tests/benchmarks/bench_smarts.py [--compare 20e6] [--units N] [--instructions 1e9] [--workloads 429.mcf,...]
                                            [--segments 1,2] [--workers 2] [--warming all,30000]

Per workload, on one program (seed 1) with OS noise, as ``whatif simulate`` runs it:

* a full detailed run of ``--compare`` instructions: its CPI (the truth) and its rate (the detailed core,
  synthesis included);
* a SMARTS sampled run of the same instructions (``--units``, default SMARTS's n for the length): its CPI
  +- the 99.7 % confidence interval, the error against the truth, whether the truth lies in the interval,
  V and the n that +-3 % needs; the effective rate (instructions covered / host seconds) and the rate of its
  functional warming alone;
* with ``--instructions``: a sampled run of that many instructions (1e9 for the issue's acceptance), its
  CPI +- CI and effective rate (no full detailed run at that length); with ``--segments 1,2``, once in one
  segment and once in two run side by side in threads (``--workers``), for the speed-up of the
  segments and the difference they make to the estimate;
* with ``--warming all,B,...``: each sampled run once per warming, ``all`` SMARTS's full functional warming,
  ``B`` bounded warming (B functionally warmed instructions before each unit, the rest of each gap
  cache-warmed), in rows side by side; ``bias`` is an estimate's change against the first warming's on the same
  units (the approximation's own error, free of sampling error).

Rates are wall-clock, on a machine that may be shared (the load average is printed); compilation and the
static program's construction are excluded (a short run of each workload precedes the timing).
Acceptance (issue 17): 1e9 instructions of each CINT2006 workload at >= 200 M instructions/s effective,
CPI within +-3 % of a full detailed run at 99.7 % confidence.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from whatif.simulator.collect import CollectSpec, simulate_one  # noqa: E402
from whatif.simulator.platform import load_platform  # noqa: E402
from whatif.simulator.smarts import SmartsSpec  # noqa: E402
from whatif.simulator.workload import workload_names  # noqa: E402

SEED = 1


def cint2006() -> list[str]:
    return [n for n in workload_names() if n.startswith("cint2006/")]


def sampled(platform, workload: str, n: int, units: int | None, segments: int = 1,
            workers: int = 1, warming: int | None = None) -> tuple[dict, float]:
    t0 = time.perf_counter()
    spec = CollectSpec(instructions=n, sample=SmartsSpec(units=units, segments=segments, warming=warming))
    res = simulate_one(platform, workload, spec, program_seed=SEED, replicate_seed=SEED, workers=workers)
    return res["sampled"], time.perf_counter() - t0


def estimate_cells(est: dict, first: float, warming: int | None) -> tuple[str, str, str]:
    """The warming's label, ``CPI ± half-width`` and the change against the first warming's CPI (the bias)."""
    return ("all" if warming is None else str(warming)), f"{est['mean']:8.4f} ± {est['half_width']:6.4f}", \
        f"{est['mean'] / first - 1:+7.2%}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platform", default="nehalem")
    ap.add_argument("--compare", type=float, default=20e6, help="instructions of the full-vs-sampled comparison "
                                                                  "(0: skip it)")
    ap.add_argument("--units", type=int, default=None, help="units of the comparison's sampled run")
    ap.add_argument("--instructions", type=float, default=0, help="a long sampled run of this many (e.g. 1e9)")
    ap.add_argument("--long-units", type=int, default=None, help="units of the long run (default: SMARTS's)")
    ap.add_argument("--workloads", default=None, help="comma-separated names (default: every CINT2006 workload)")
    ap.add_argument("--segments", default="1", help="the long run's segments, comma-separated: a row each "
                                                   "(e.g. 1,2: one segment, then two side by side)")
    ap.add_argument("--workers", type=int, default=None, help="threads for the segments (default: the most "
                                                              "segments asked for)")
    ap.add_argument("--warming", default="all", help="comma-separated: all (SMARTS's full functional warming) or B "
                                                     "(bounded warming): a row each")
    args = ap.parse_args()
    segments = [int(k) for k in args.segments.split(",")]
    warmings = [None if b.strip() == "all" else int(float(b)) for b in args.warming.split(",")]
    platform = load_platform(args.platform)
    names = [w if "/" in w else f"cint2006/{w}" for w in args.workloads.split(",")] if args.workloads else cint2006()
    n_cmp, n_long = int(args.compare), int(args.instructions)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; {platform.name}; comparison "
          f"{n_cmp:,} instructions; long run {n_long:,}")
    for w in names:                                                          # compile, build the programs
        simulate_one(platform, w, CollectSpec(instructions=200_000, sample=SmartsSpec(units=20)), SEED, SEED)
    if n_cmp:
        print(f"\n{'workload':16s} {'full CPI':>9s} {'detailed':>9s} | {'warming':>7s} {'sampled CPI':>17s} "
              f"{'error':>7s} {'bias':>7s} {'in CI':>5s} {'V':>5s} {'n':>5s} {'n(3%)':>6s} | {'effective':>9s} "
              f"{'warming':>8s} {'speed-up':>8s}")
        for w in names:
            t0 = time.perf_counter()
            full = simulate_one(platform, w, CollectSpec(instructions=n_cmp), SEED, SEED)
            t_full = time.perf_counter() - t0
            first = None
            for b in warmings:
                smp, _ = sampled(platform, w, n_cmp, args.units, warming=b)
                est, truth = smp["cpi"], full["cpi"]
                first = first or est["mean"]
                lo, hi = est["ci"]
                eff = smp["effective_instructions_per_s"]
                warmed = smp["warmed_instructions"] + smp["cache_warmed_instructions"]
                warm = warmed / smp["warming_seconds"] if smp["warming_seconds"] else 0.0
                inside = "yes" if lo <= truth <= hi else "NO"
                how, cpi, bias = estimate_cells(est, first, b)
                print(f"{w.split('/')[-1]:16s} {truth:9.4f} {n_cmp / t_full / 1e6:7.2f}M/s | {how:>7} {cpi} "
                      f"{est['mean'] / truth - 1:+7.2%} {bias} {inside:>5s} {est['cv']:5.2f} {smp['units']:5d} "
                      f"{smp['recommended_units']:6d} | {eff / 1e6:7.2f}M/s {warm / 1e6:6.1f}M/s "
                      f"{eff / (n_cmp / t_full):7.2f}x", flush=True)
    if n_long:
        workers = args.workers or max(segments)
        print(f"\n{'workload':16s} {'S':>2s} {'warming':>7s} {'sampled CPI':>17s} {'bias':>7s} {'rel. CI':>8s} "
              f"{'n':>6s} {'n(3%)':>6s} {'effective':>10s} {'host s':>7s} {'worker s':>8s} {'goal 200M/s':>11s}   "
              f"({workers} workers)")
        for w in names:
            first = None
            for k in segments:
                for b in warmings:
                    smp, _ = sampled(platform, w, n_long, args.long_units, k, workers, b)
                    est = smp["cpi"]
                    first = first or est["mean"]
                    eff = smp["effective_instructions_per_s"]
                    how, cpi, bias = estimate_cells(est, first, b)
                    print(f"{w.split('/')[-1]:16s} {k:2d} {how:>7} {cpi} {bias} {est['relative_error']:8.2%} {smp['units']:6d} {smp['recommended_units']:6d} "
                          f"{eff / 1e6:8.2f}M/s {smp['host_seconds']:7.1f} {smp['worker_seconds']:8.1f} "
                          f"{'met' if eff >= 200e6 else 'NOT met':>11s}", flush=True)


if __name__ == "__main__":
    main()
