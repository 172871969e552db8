"""Instruction-stream synthesis speed (target: >= 30 million instructions per second on one core),
static-program build time, and the characteristics of every shipped workload.

    python tests/benchmarks/bench_synth.py            # speed of a few workloads + characteristics table
    python tests/benchmarks/bench_synth.py --speed    # speed only

Speed is measured over 64 Ki-instruction blocks (the size a timing model consumes), after a warm-up
that compiles the kernel, filling one reused block (``Synthesizer.fill``, what a timing model does);
``next_block`` (a fresh block each time) is shown for comparison.  Rates are per CPU second of this
process (``time.process_time``) so that other load on a shared machine does not count; the wall-clock
rate is shown too.  Each workload reports the median and best of its 20-block rounds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from whatif.simulator.synth import Synthesizer, stats          # noqa: E402
from whatif.simulator.workload import load_workload, workload_names   # noqa: E402

BLOCK = 1 << 16
SPEED_WORKLOADS = [("cint2006/429.mcf", "x86_64"), ("cint2006/403.gcc", "x86_64"),
                   ("cint2006/471.omnetpp", "x86_64"), ("cint2006/462.libquantum", "x86_64"),
                   ("yahoo_y/Y", "x86_64"), ("specjvm98/db", "powerpc32")]


def isa_of(name: str) -> str:
    return "powerpc32" if name.startswith("specjvm98") else "x86_64"


def speed(name: str, isa: str, total: int) -> dict:
    t0 = time.perf_counter()
    s = Synthesizer(name, isa, seed=0, instructions=total)
    build = time.perf_counter() - t0
    block = s.next_block(BLOCK)                          # warm-up (kernel compiled / loaded)
    rounds = []
    done = 0
    wall0, cpu0 = time.perf_counter(), time.process_time()
    while done < total:
        t = time.process_time()
        for _ in range(20):
            s.fill(block)
        rounds.append(20 * BLOCK / (time.process_time() - t))
        done += 20 * BLOCK
    cpu_rate = done / (time.process_time() - cpu0)
    wall_rate = done / (time.perf_counter() - wall0)
    t = time.process_time()
    for _ in range(20):
        s.next_block(BLOCK)
    fresh = 20 * BLOCK / (time.process_time() - t)
    return {"workload": name, "isa": isa, "build_s": build, "static_instructions": len(s.program),
            "median": float(np.median(rounds)) / 1e6, "best": max(rounds) / 1e6, "cpu": cpu_rate / 1e6,
            "wall": wall_rate / 1e6, "fresh": fresh / 1e6}


def characteristics(name: str, n: int) -> dict:
    """What calibration gives each phase (weighted by the phases' nominal lengths), and the distinct
    data lines touched by the first ``n`` instructions of a run of ``n`` instructions."""
    ref = load_workload(name)
    s = Synthesizer(ref, isa_of(name), seed=0, instructions=n)
    block = s.next_block(n)
    prog = s.program
    lengths = s.schedule / s.schedule.sum()
    exp = [prog.expected(p) for p in range(len(prog.phases))]

    def avg(key):
        return sum(l * e[key] for l, e in zip(lengths, exp))

    kinds = {k: sum(l * e["cond_branch_kinds"][k] for l, e in zip(lengths, exp)) for k in exp[0]["cond_branch_kinds"]}
    data_kb = sum(st.footprint_kb for st in ref.spec.streams.values())
    return {"workload": name, **{k: avg(k) for k in ("load", "store", "branch", "fp")},
            "taken": avg("taken_rate"), "loop": kinds["loop"], "periodic": kinds["periodic"],
            "bern": kinds["biased_or_random"], "calls_pki": avg("calls_per_kinstr"),
            "data_MB": data_kb / 1024, "code_KB": prog.code_bytes() / 1024, "hot90_KB": avg("code_hot90_kb"),
            "lines_KB": stats.distinct_lines(block) * 64 / 1024, "phases": len(prog.phases)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--speed", action="store_true", help="speed only")
    ap.add_argument("--instructions", type=int, default=20_000_000, help="per workload for the speed test")
    args = ap.parse_args()
    print(f"synthesis speed, blocks of {BLOCK} instructions, {args.instructions:,} instructions per workload")
    print(f"{'workload':26s} {'isa':10s} {'build s':>8s} {'static':>8s} {'median':>7s} {'best':>7s} {'cpu':>7s} "
          f"{'wall':>7s} {'fresh':>7s}  (M instructions/s)")
    overall = []
    for name, isa in SPEED_WORKLOADS:
        r = speed(name, isa, args.instructions)
        overall.append(r["cpu"])
        print(f"{r['workload']:26s} {r['isa']:10s} {r['build_s']:8.2f} {r['static_instructions']:8d} "
              f"{r['median']:7.1f} {r['best']:7.1f} {r['cpu']:7.1f} {r['wall']:7.1f} {r['fresh']:7.1f}")
    print(f"mean rate per CPU second (reused block): {np.mean(overall):.1f} M instructions/s (target >= 30); "
          f"fresh = next_block allocating each block")
    if args.speed:
        return
    n = 2_000_000
    print(f"\ncharacteristics of every shipped workload, seed 0: expected (calibrated) shares of each phase "
          f"weighted by phase length; branch kinds are dynamic shares of conditional branches; hot90 = code "
          f"running 90% of instructions; lines_KB = distinct data lines touched by a {n:,}-instruction run")
    cols = ["load", "store", "branch", "fp", "taken", "loop", "periodic", "bern", "calls_pki", "data_MB", "code_KB",
            "hot90_KB", "lines_KB", "phases"]
    print(f"{'workload':26s} " + " ".join(f"{c:>9s}" for c in cols))
    for name in workload_names():
        r = characteristics(name, n)
        print(f"{name:26s} " + " ".join(f"{r[c]:9.3f}" if isinstance(r[c], float) and r[c] < 10 else f"{r[c]:9.0f}"
                                       for c in cols))


if __name__ == "__main__":
    main()
