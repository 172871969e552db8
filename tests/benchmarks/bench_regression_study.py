"""Benchmark of the shipped regression study (issue 5 performance item): the whole
``scenarios/java-7447a-regression.toml`` (3 variants x 9 workloads x 11 heap sizes x 5 replicates, four
PMU runs each) must finish in under 15 minutes on two cores.  Prints the wall time, the simulation's
wall and core seconds, the simulated rate and Table IV of every variant next to the seed's.

    python tests/benchmarks/bench_regression_study.py [--out DIR] [--set KEY=VALUE ...]

(``--set pmu.sources.prefetch_full=L2.prefetches_issued`` while the memory kernel has no
``L2.prefetches_dropped`` counter.)  On a shared host the workers' rate falls with the load; the simulated instruction count
at an idle core's rate says what an idle two-core machine would take.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from whatif.scenarios.runner import run_scenario_file  # noqa: E402

BUDGET_S = 15 * 60
IDLE_RATE = 3.5e6           # 7447A instructions per second of one idle core (bench_simulate, Java runs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--set", action="append", default=[])
    args = ap.parse_args()
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp()) / "java-7447a-regression"
    t0 = time.perf_counter()
    run_scenario_file(ROOT / "scenarios" / "java-7447a-regression.toml", out=out, overrides=args.set, progress=True)
    wall = time.perf_counter() - t0
    doc = json.loads((out / "results.json").read_text())
    d = doc["design"]
    print(f"scenario: {d['configurations']} configurations, {d['simulated_runs']} simulated runs, "
          f"{d['workers']} workers")
    print(f"wall {wall:.0f} s (budget {BUDGET_S} s: {'met' if wall < BUDGET_S else 'NOT met'}); simulation "
          f"wall {d['simulation_wall_seconds']:.0f} s, in the workers {d['simulation_worker_seconds']:.0f} s for "
          f"{d['simulated_instructions'] / 1e9:.2f} G instructions ({d['sim_instructions_per_s'] / 1e6:.2f} M/s per "
          f"worker; at an idle core's {IDLE_RATE / 1e6:g} M/s the simulation would take "
          f"{d['simulated_instructions'] / IDLE_RATE / d['workers']:.0f} s on {d['workers']} cores)")
    seed = doc["seed_table_iv"]
    print(f"{'':22s}{'R2 I':>8s}{'R2 II':>8s}{'R2 IIp':>8s}{'err I':>8s}{'err II':>8s}{'err IIp':>8s}"
          f"{'terms IIp':>10s}{'F p':>10s}")
    print(f"{'seed 000':22s}{seed['I']['r2']:8.3f}{seed['II']['r2']:8.3f}{seed['II_pruned']['r2']:8.3f}"
          f"{seed['I']['cv_error_pct']:8.2f}{seed['II']['cv_error_pct']:8.2f}{seed['II_pruned']['cv_error_pct']:8.2f}")
    for name, v in doc["variants"].items():
        print(f"{name:22s}{v['I']['r2']:8.3f}{v['II']['r2']:8.3f}{v['II_pruned']['r2']:8.3f}"
              f"{v['I']['cv_error_pct']:8.2f}{v['II']['cv_error_pct']:8.2f}{v['II_pruned']['cv_error_pct']:8.2f}"
              f"{v['II_pruned']['n_terms']:10d}{v['f_test_p']:10.2g}")
    print(doc["tlb_cache_verdict"])
    print(f"results: {out}")


if __name__ == "__main__":
    main()
