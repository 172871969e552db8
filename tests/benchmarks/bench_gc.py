"""Benchmark of the heap simulator and the hbench-jgc scenario (run: python tests/benchmarks/bench_gc.py).

Prints: allocated objects per second of the heap simulator (allocation and functional collections;
and with every collection's instruction stream timed on the MPC7447A), collector instructions timed per
second, and the wall time of the whole shipped hbench-jgc scenario (skip with --no-scenario).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from whatif.simulator.gc.behaviour import load_behaviour  # noqa: E402
from whatif.simulator.gc.config import heap_config  # noqa: E402
from whatif.simulator.gc.run import simulate_gc  # noqa: E402
from whatif.simulator.platform import load_platform  # noqa: E402

MB = 1024 * 1024


def heap_rate(name: str, scale: float, timed: bool) -> tuple[float, int, int, float, int]:
    platform = load_platform("mpc7447a")
    b = load_behaviour(f"specjvm98/{name}")
    cfg = heap_config(heap_bytes=int(b.heap_mb * MB * scale))
    simulate_gc(b, cfg, platform, scale=scale / 16, seed=1, timed=timed)        # load the kernels
    t0 = time.perf_counter()
    r = simulate_gc(b, cfg, platform, scale=scale, seed=1, timed=timed)
    dt = time.perf_counter() - t0
    instr = sum(c.instructions for c in r.collections)
    return r.allocated_objects / dt, r.allocated_objects, len(r.collections), dt, instr


def main() -> None:
    print("heap simulator (mark-sweep, MPC7447A)")
    for name, scale in (("jess", 0.125), ("mtrt", 0.125)):
        rate, n, gcs, dt, _ = heap_rate(name, scale, timed=False)
        print(f"  {name:6s} x{scale:g}, functional collections: {n:,} objects, {gcs} collections in {dt:.2f} s "
              f"= {rate / 1e6:.2f} M allocated objects/s")
        rate, n, gcs, dt, instr = heap_rate(name, scale, timed=True)
        print(f"  {name:6s} x{scale:g}, timed collections:      {n:,} objects, {gcs} collections in {dt:.2f} s "
              f"= {rate / 1e6:.2f} M allocated objects/s, {instr / 1e6:.1f} M collector instructions "
              f"({instr / dt / 1e6:.2f} M/s with allocation)")
    if "--no-scenario" in sys.argv:
        return
    from whatif.scenarios.runner import run_scenario_file

    root = Path(__file__).resolve().parents[2]
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        out = run_scenario_file(root / "scenarios" / "hbench-jgc.toml", out=Path(d) / "hbench", progress=False)
        dt = time.perf_counter() - t0
        import json

        doc = json.loads((out / "results.json").read_text())
    print(f"hbench-jgc scenario: {dt:.1f} s wall")
    for name, a in doc["apps"].items():
        print(f"  {name:9s} {a['collections']:3d} collections  mean |error| {a['mean_abs_error_pct']:5.2f}%  "
              f"max {a['max_abs_error_pct']:5.2f}%  total {a['time_difference_pct']:+6.2f}%  "
              f"(thesis form {a['thesis_form']['mean_abs_error_pct']:5.2f}%)")
    g = doc["goal"]
    print(f"  goal {g['pct']:g}%: {g['apps_within']} of {g['applications']} applications within")


if __name__ == "__main__":
    main()
