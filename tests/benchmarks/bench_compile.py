"""What a first run pays to compile the numba kernels, and what a later run pays to load them.

    python tests/benchmarks/bench_compile.py [--only simulate,cachesim,gc]

Each group runs in a fresh process with an empty ``NUMBA_CACHE_DIR`` (cold: everything it calls is
compiled, as on a fresh install or a fresh clone's test run), then in a second fresh process on the cache
the first one wrote (warm).  Seconds are the wall time of the group's first call in that process
(imports excluded).  The anchors are the same groups at 24412be, before the memory kernels stopped
compiling one specialisation per constant argument and before the collectors' instruction writer was
left to LLVM to inline; measured on the 2-CPU host of 2026-11-27 with this script (``--tree`` runs it on
another checkout).

* ``simulate``: ``Machine(nehalem, 464.h264ref).run()`` -- synthesiser, core timing, memory hierarchy;
* ``cachesim``: the trace-driven memory kernel (``run_trace``) on a fresh hierarchy;
* ``gc``: a functional mark-sweep and a copying heap (allocation, both collectors' step kernels).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

GROUPS = {
    "simulate": """
from whatif.simulator.machine import Machine
from whatif.simulator.platform import load_platform
from whatif.simulator.workload import load_workload
p, w = load_platform("nehalem"), load_workload("464.h264ref")
t = time.perf_counter(); Machine(p, w, 1000, seed=1).run()
""",
    "cachesim": """
import numpy as np
from whatif.simulator.memory.hierarchy import MemoryHierarchy
from whatif.simulator.memory import kernel as MK
from whatif.simulator.platform import load_platform
h = MemoryHierarchy(load_platform("nehalem"), 1)
a = np.arange(10, dtype=np.uint64) * np.uint64(64); s = np.full(10, 8, np.uint8); k = np.ones(10, np.uint8)
t = time.perf_counter(); MK.run_trace(h.state[0], a, s, k, 0, 10, 0, 1, 0)
""",
    "gc": """
from whatif.simulator.gc.behaviour import load_behaviour
from whatif.simulator.gc.config import heap_config
from whatif.simulator.gc.run import simulate_gc
from whatif.simulator.platform import load_platform
b, p = load_behaviour("specjvm98/jess"), load_platform("mpc7447a")
t = time.perf_counter()
for collector in ("mark-sweep", "copying"):
    simulate_gc(b, heap_config(heap_bytes=1 << 20, collector=collector), p, scale=0.01, seed=1, timed=False)
""",
}

#: seconds (cold, warm) at 24412be on the 2-CPU host of 2026-11-27
ANCHORS = {"simulate": (150.6, 2.6), "cachesim": (80.2, 0.6), "gc": (72.0, 0.7)}


def run(group: str, cache: str, tree: Path) -> float:
    code = ("import sys, time\nsys.path.insert(0, %r)\n" % str(tree.parent) + GROUPS[group]
            + "print(time.perf_counter() - t)\n")
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, NUMBA_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(GROUPS), help="comma-separated groups")
    ap.add_argument("--tree", type=Path, default=ROOT, help="another checkout to time (for the anchors)")
    args = ap.parse_args()
    print(f"{'group':10s} {'cold s':>8s} {'warm s':>8s}   anchor cold / warm (24412be)")
    with tempfile.TemporaryDirectory() as links:
        # the package is imported as ``whatif``: a temporary directory's whatif points at the tree
        tree = Path(links) / "whatif"
        tree.symlink_to(args.tree.resolve())
        for group in args.only.split(","):
            with tempfile.TemporaryDirectory() as cache:
                cold = run(group, cache, tree)
                warm = run(group, cache, tree)
            a_cold, a_warm = ANCHORS[group]
            print(f"{group:10s} {cold:8.1f} {warm:8.1f}   {a_cold:8.1f} / {a_warm:.1f}", flush=True)

if __name__ == "__main__":
    main()
