"""A change to the simulator's code timed against the code before it, with the harness's own spread beside it.

    python tests/benchmarks/bench_ab.py [--base HEAD] [--platform nehalem] [--instructions 2000000]
                                        [--rounds 6] [--workloads 464.h264ref,445.gobmk,...]

``bench_simulate.py --variant`` compares platform settings within one build; this compares builds.  Three
copies of the package are made in a temporary folder, each under its own name so that one process imports
all three (``whatif.`` renamed in their imports): ``base`` and ``base-again``, two copies of ``--base``, and
``tree``, the working tree's tracked files as they are (uncommitted changes included).  Each compiles its own
kernels on first use (a few minutes in all; the copies and their caches are removed at exit).  Then rounds:
every workload of ``bench_simulate.py`` (or ``--workloads``) once per build in each round, ``Machine(...).run()``
of ``--instructions``, the order of the builds and of the workloads reversed every other round, so that the
host's drift (15-35 % between runs minutes apart on a shared host) falls on all of them alike.

Printed per workload: each build's median CPU-time rate and its ratio to ``base``, and whether every run of a
workload counted the same cycles in every build; then the geometric means.  ``base-again`` runs the same code
as ``base``: its ratio is what this harness reads for no change at all on this host at this hour, so a
``tree`` ratio inside it is no measured change.  On a 2-core AMD EPYC virtual machine (2026-12-02, idle, six
rounds of 2 M instructions), with all three builds the same code (d80a584, no change in the tree):
``base-again`` 0.988 and ``tree`` 1.091 in the geometric mean, 0.873-1.200 per workload.  Not told apart
here: the host's drift within a round, and each copy's compiled code lying at other host addresses (a
layout alone moves a program's speed: Mytkowicz et al., "Producing wrong data without doing anything
obviously wrong!", ASPLOS 2009).  Read a ratio against ``base-again``'s, and count host instructions
(``bench_core_ir.py``) for what a change does.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

# (this script's folder is on the path; importing bench_simulate sets one thread per library, before numpy)
from bench_simulate import WORKLOADS, timed

import numpy as np

REPO = Path(__file__).resolve().parents[2]
BUILDS = ("base", "base-again", "tree")
IMPORT = re.compile(r"\bwhatif(?=\.)|(?<=from )whatif(?= import)|(?<=import )whatif\b")


def git(*args: str) -> bytes:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, check=True).stdout


def copy_package(rev: str | None, name: str, into: Path) -> None:
    """The package at ``rev`` (None: the working tree's tracked files) as package ``name`` in ``into``."""
    dest = into / name
    if rev is None:
        for f in git("ls-files", "-z").decode().split("\0"):
            if f and (REPO / f).is_file():
                (dest / f).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(REPO / f, dest / f)
    else:
        with tarfile.open(fileobj=BytesIO(git("archive", rev))) as tar:
            tar.extractall(dest, filter="data")
    for tree in ("tests", ".ci"):
        shutil.rmtree(dest / tree, ignore_errors=True)
    for py in dest.rglob("*.py"):
        text = py.read_text()
        renamed = IMPORT.sub(name, text)
        if renamed != text:
            py.write_text(renamed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="HEAD", help="the revision the working tree is timed against")
    ap.add_argument("--platform", default="nehalem")
    ap.add_argument("--instructions", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    args = ap.parse_args()
    if args.instructions < 1 or args.rounds < 1:
        ap.error(f"--instructions {args.instructions}, --rounds {args.rounds}: each at least 1")
    try:
        git("rev-parse", "--verify", f"{args.base}^{{commit}}")
    except subprocess.CalledProcessError:
        ap.error(f"--base: {args.base!r} names no commit of {REPO}")
    workloads = args.workloads.split(",")
    sys.path.insert(0, str(REPO))
    from whatif.simulator.errors import SimulatorInputError
    from whatif.simulator.platform import load_platform
    from whatif.simulator.workload import load_workload
    try:                                              # (checked before minutes of copying and compiling)
        load_platform(args.platform)
        for w in workloads:
            load_workload(w)
    except SimulatorInputError as e:
        ap.error(str(e))
    n = args.instructions
    with tempfile.TemporaryDirectory(prefix="whatif-bench-ab-") as tmp:
        names = {build: f"whatif_ab{k}" for k, build in enumerate(BUILDS)}
        for build, name in names.items():
            copy_package(None if build == "tree" else args.base, name, Path(tmp))
        sys.path.insert(0, tmp)
        short = git("rev-parse", "--short", args.base).decode().strip()
        print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; {args.platform}, {n:,} instructions, "
              f"{args.rounds} alternated rounds; base = {args.base} ({short})", flush=True)
        runs = {}
        for build, name in names.items():
            t0 = time.perf_counter()
            machine = importlib.import_module(f"{name}.simulator.machine").Machine
            platform = importlib.import_module(f"{name}.simulator.platform").load_platform(args.platform)
            load = importlib.import_module(f"{name}.simulator.workload").load_workload
            loaded = {w: load(w) for w in workloads}
            for w in workloads:
                machine(platform, loaded[w], 10_000, seed=1).run()          # compiled, the program built
            runs[build] = (machine, platform, loaded)
            print(f"  {build}: compiled and loaded in {time.perf_counter() - t0:.0f} s", flush=True)
        rate = {(b, w): [] for b in BUILDS for w in workloads}
        cycles = {(b, w): [] for b in BUILDS for w in workloads}
        for r in range(args.rounds):
            for w in (workloads if r % 2 == 0 else workloads[::-1]):
                for b in (BUILDS if r % 2 == 0 else BUILDS[::-1]):
                    machine, platform, loaded = runs[b]
                    m = machine(platform, loaded[w], n, seed=1, run_seed=r)
                    rate[(b, w)].append(n / timed(m.run)[1] / 1e6)
                    cycles[(b, w)].append(m.counters()["cycles"])
        med = {k: float(np.median(v)) for k, v in rate.items()}
        print(f"{'median CPU-time rate, M/s (ratio to base)':44s}" + "".join(f"{b:>18s}" for b in BUILDS))
        for w in workloads:
            same = all(cycles[(b, w)] == cycles[("base", w)] for b in BUILDS)
            print(f"{w:44s}" + "".join(f"{med[(b, w)]:9.2f} ({med[(b, w)] / med[('base', w)]:.3f})" for b in BUILDS)
                  + ("" if same else "   cycles differ"))
        geo = {b: float(np.exp(np.mean([np.log(med[(b, w)]) for w in workloads]))) for b in BUILDS}
        print(f"{'geometric mean':44s}" + "".join(f"{geo[b]:9.2f} ({geo[b] / geo['base']:.3f})" for b in BUILDS))


if __name__ == "__main__":
    main()
