"""What a first run pays to compile the numba kernels, and what a later run pays to load them.

    python tests/benchmarks/bench_compile.py [--only simulate,cachesim,gc,traces] [--steps] [--helper [--repeats N]]

Each group runs in a fresh process with an empty ``NUMBA_CACHE_DIR`` (cold: everything it calls is
compiled, as on a fresh install or a fresh clone's test run), then in a second fresh process on the cache
the first one wrote (warm).  Seconds are the wall time of the group's first call in that process
(imports excluded).  The anchors are the same groups at 24412be, before the memory kernels stopped
compiling one specialisation per constant argument and before the collectors' instruction writer was
left to LLVM to inline; measured on the 2-CPU host of 2026-11-27 with this script (``--tree`` runs it on
another checkout).

* ``simulate``: ``Machine(nehalem, 464.h264ref).run()`` -- synthesiser, core timing, memory hierarchy;
* ``cachesim``: the trace-driven memory kernel (``run_trace``) on a fresh hierarchy;
* ``gc``: a functional mark-sweep and a copying heap (allocation, both collectors' step kernels);
* ``traces``: the lackey text scanner and writer and the ``.wtr`` v2 coder on a small file each.

The groups are ``tests/kernel_groups.py``'s, the calls the test suite compiles once per run; ``--tree``
runs this checkout's calls against another checkout's package.

``--steps`` times instead, cold, the steps a command loads its kernels in before it runs
(``scenarios/kernels.py``), as ``whatif simulate --sample`` on Nehalem and on the MPC7447A, ``whatif
cachesim``, ``whatif gc`` with each collector, ``whatif profile`` on the z10, ``whatif mine`` and ``whatif run``
of the HBench:JGC study run them (a fresh process and an empty cache each), beside the estimates the bar shows
when this machine has no record of its own (``kernels.DEFAULT_SECONDS``).

``--helper`` times ``kernels.load_kernels`` whole, cold, as ``whatif simulate --sample`` on Nehalem, a study
whose runs use both core flavours (Nehalem with TAGE and with gshare) and ``whatif profile`` on the z10 run it,
with the compile helper (``scenarios/kernels.py``) and, its anchor, without (``WHATIF_COMPILE_HELPER=0``:
every step in one process, as before it): a fresh process and an empty cache each, the two alternated
``--repeats`` times (the order reversed every other round).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from kernel_groups import GROUPS  # noqa: E402  (this checkout's groups, also against --tree)

#: seconds (cold, warm) at 24412be on the 2-CPU host of 2026-11-27
ANCHORS = {"simulate": (150.6, 2.6), "cachesim": (80.2, 0.6), "gc": (72.0, 0.7)}


def python_output(code: str, cache: str, **env: str) -> str:
    """What ``code`` prints in a fresh Python process with numba's cache in ``cache``, one numba thread and
    ``env`` beside the environment."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, NUMBA_NUM_THREADS="1", **env)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout


def run(group: str, cache: str, tree: Path) -> float:
    # the group's imports and inputs come before the clock starts: only its first call is timed
    code = ("import sys, time\nsys.path[:0] = [%r, %r]\nfrom kernel_groups import GROUPS\n"
            "call = GROUPS[%r][0]()\nt = time.perf_counter(); call()\nprint(time.perf_counter() - t)\n"
            % (str(tree.parent), str(ROOT / "tests"), group))
    return float(python_output(code, cache).split()[-1])


#: the commands whose kernel steps ``--steps`` times: kernels.kernel_steps arguments
STEP_RUNS = {"simulate --sample, nehalem":
             "kernel_steps([load_platform('nehalem')], sampled=True, workload='464.h264ref')",
             "simulate --sample, mpc7447a": "kernel_steps([load_platform('mpc7447a')], sampled=True)",
             "cachesim": "kernel_steps(trace=load_platform('mpc7447a'))",
             "profile, z10": "kernel_steps([load_platform('z10')], workload='websphere/was', profiler=True)",
             "run hbench-jgc": "kernel_steps([load_platform('mpc7447a')], trace=load_platform('mpc7447a'), "
                               "collectors=('mark-sweep',), gc_microbenchmarks=True)",
             "mine": "kernel_steps(miner=True)",
             "gc, mark-sweep": "kernel_steps(collectors=('mark-sweep',))",
             "gc, copying": "kernel_steps(collectors=('copying',))"}


def run_steps(call: str, cache: str, tree: Path) -> list[tuple[str, float]]:
    code = ("import sys, time\nsys.path[:0] = [%r]\nfrom whatif.scenarios.kernels import kernel_steps\n"
            "from whatif.simulator.platform import load_platform\n"
            "for name, fn in %s:\n    t = time.perf_counter(); fn(); print(name, '=', time.perf_counter() - t)\n"
            % (str(tree.parent), call))
    lines = python_output(code, cache).splitlines()
    return [(name, float(s)) for name, _, s in (line.rpartition(" = ") for line in lines)]


def main_steps(tree: Path) -> None:
    from whatif.scenarios.kernels import DEFAULT_SECONDS

    print(f"{'command':28s} {'step':38s} {'cold s':>8s}   estimate without a record (kernels.DEFAULT_SECONDS)")
    for command, call in STEP_RUNS.items():
        with tempfile.TemporaryDirectory() as cache:
            for name, seconds in run_steps(call, cache, tree):
                print(f"{command:28s} {name:38s} {seconds:8.1f}   {DEFAULT_SECONDS.get(name, float('nan')):8.1f}",
                      flush=True)


#: the commands whose whole kernel loading ``--helper`` times: kernels.load_kernels arguments
HELPER_RUNS = {"simulate --sample, nehalem": "[load_platform('nehalem')], sampled=True, workload='464.h264ref'",
               "two core flavours, nehalem": "[load_platform('nehalem'), load_platform('nehalem', "
                                             "['branch_predictor.kind=gshare'])], workload='464.h264ref'",
               "profile, z10": "[load_platform('z10')], workload='websphere/was', profiler=True"}


def run_load(call: str, helper: bool, tree: Path) -> float:
    code = ("import sys, time\nsys.path[:0] = [%r]\nfrom whatif.scenarios.kernels import load_kernels\n"
            "from whatif.simulator.platform import load_platform\n"
            "t = time.perf_counter(); load_kernels(False, %s); print(time.perf_counter() - t)\n"
            % (str(tree.parent), call))
    with tempfile.TemporaryDirectory() as cache:
        return float(python_output(code, cache, WHATIF_COMPILE_HELPER="1" if helper else "0").split()[-1])


def main_helper(tree: Path, repeats: int) -> None:
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; cold kernel loading, seconds")
    print(f"{'command':28s} {'with the helper':>24s} {'one process (anchor)':>24s}")
    for command, call in HELPER_RUNS.items():
        times: dict[bool, list[float]] = {True: [], False: []}
        for r in range(repeats):
            for helper in ((True, False) if r % 2 == 0 else (False, True)):
                times[helper].append(run_load(call, helper, tree))
        print(f"{command:28s} {' '.join(f'{t:6.1f}' for t in times[True]):>24s} "
              f"{' '.join(f'{t:6.1f}' for t in times[False]):>24s}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(GROUPS), help="comma-separated groups")
    ap.add_argument("--tree", type=Path, default=ROOT, help="another checkout to time (for the anchors)")
    ap.add_argument("--steps", action="store_true", help="time the kernel steps of whatif simulate, cachesim and gc")
    ap.add_argument("--helper", action="store_true", help="time whole kernel loadings with and without the helper")
    ap.add_argument("--repeats", type=int, default=2, help="--helper: runs of each")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as links:
        # the package is imported as ``whatif``: a temporary directory's whatif points at the tree
        tree = Path(links) / "whatif"
        tree.symlink_to(args.tree.resolve())
        if args.steps:
            sys.path.insert(0, links)
            main_steps(tree)
            return
        if args.helper:
            main_helper(tree, args.repeats)
            return
        print(f"{'group':10s} {'cold s':>8s} {'warm s':>8s}   anchor cold / warm (24412be)")
        for group in args.only.split(","):
            with tempfile.TemporaryDirectory() as cache:
                cold = run(group, cache, tree)
                warm = run(group, cache, tree)
            anchor = "%8.1f / %.1f" % ANCHORS[group] if group in ANCHORS else "       – (a later group)"
            print(f"{group:10s} {cold:8.1f} {warm:8.1f}   {anchor}", flush=True)

if __name__ == "__main__":
    main()
