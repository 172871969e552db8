"""Where the compiled kernels spend their time, sampled by perf: runs workloads on the core model and writes a
perf map (``/tmp/perf-<pid>.map``) of the core kernel's compiled functions, so that ``perf report`` names them.

    perf record -e cpu-clock -F 1999 -o flip.data \\
        python tests/benchmarks/perf_jit.py [--platform nehalem] [--instructions 2000000] [--rounds 6]
                                            [--set KEY=VALUE ...] [WORKLOAD ...]
    perf report -i flip.data -n --sort sym --stdio | grep -E '\\] (simulate|[a-z_]+\\.[a-z_]+)'

``cpu-clock`` is a software event: it needs no hardware performance counters, which a virtual machine may
not have. numba's machine code lives in no file perf can read, so its samples would show as addresses: the
kernels are compiled afresh (into a temporary ``NUMBA_CACHE_DIR``, removed at exit; a minute or two), the
object code numba compiled for ``timing.simulate`` is listed with its symbols and sizes (binutils'
``objdump -t``), and each function's load address goes into the map, named ``module.function`` (``timing.simulate``,
``caches._fill``, ...; the CPython wrapper of a kernel is listed under the same name). The compilation is
sampled too, in Python and LLVM's own symbols: read the JIT's rows against each other. A load address in the
map also places a sample within a function (``perf script -F ip,sym``; ``objdump -d`` of the object
kept with ``--keep-object``).
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRATCH = []                                       # temporary directories this run made, removed at exit
atexit.register(lambda: [shutil.rmtree(d, ignore_errors=True) for d in SCRATCH])
if "NUMBA_CACHE_DIR" not in os.environ:             # a fresh cache: the object code is compiled in this process
    SCRATCH.append(tempfile.mkdtemp(prefix="whatif-perf-jit-"))
    os.environ["NUMBA_CACHE_DIR"] = SCRATCH[-1]
for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core_ir import demangled, installed  # noqa: E402
from whatif.simulator.core import timing as TM  # noqa: E402
from whatif.simulator.errors import SimulatorInputError  # noqa: E402
from whatif.simulator.machine import Machine  # noqa: E402
from whatif.simulator.platform import load_platform  # noqa: E402
from whatif.simulator.workload import load_workload  # noqa: E402

WORKLOADS = ["429.mcf", "yahoo_y/Y", "462.libquantum"]


def write_map(keep: Path | None) -> int:
    """The perf map of every compiled build of the core kernel (and the functions linked into it); with
    ``keep``, their object code stays there (``simulate-<k>.o``; an existing file is refused, not replaced)."""
    if keep is None:
        SCRATCH.append(tempfile.mkdtemp(prefix="whatif-perf-jit-objects-"))
        folder = Path(SCRATCH[-1])
    else:
        folder = keep
        folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for k, sig in enumerate(TM.simulate.signatures):
        library = TM.simulate.overloads[sig].library
        path = folder / f"simulate-{k}.o"
        with open(path, "xb") as fh:                           # (exclusive: never over a file already there)
            fh.write(library._get_compiled_object())
        table = subprocess.run(["objdump", "-t", str(path)], capture_output=True, text=True, check=True).stdout
        for line in table.splitlines():
            fields = line.split()
            if (" F .ltext" in line or " F .text" in line) and int(fields[-2], 16) > 0:
                address = library.get_pointer_to_function(fields[-1])
                if address:
                    name = ".".join(demangled(fields[-1]).split(".")[-2:])      # module.function
                    rows.append(f"{address:x} {int(fields[-2], 16):x} {name}\n")
    Path(f"/tmp/perf-{os.getpid()}.map").write_text("".join(rows))
    return len(rows)


def refuse(message: str) -> None:
    """Bad input: one line on stderr, exit code 2."""
    print(message, file=sys.stderr)
    sys.exit(2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workloads", nargs="*", default=WORKLOADS)
    ap.add_argument("--platform", default="nehalem")
    ap.add_argument("--instructions", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a platform override")
    ap.add_argument("--keep-object", type=Path, help="a directory to keep the kernel's object code in")
    args = ap.parse_args()
    if args.keep_object is not None and args.keep_object.exists() and not args.keep_object.is_dir():
        refuse(f"--keep-object {args.keep_object}: not a directory")
    if args.keep_object is not None and any(args.keep_object.glob("simulate-*.o")):
        refuse(f"--keep-object {args.keep_object}: it already holds simulate-*.o files; choose an empty or new "
               f"directory")
    installed("objdump", "binutils")
    try:
        platform = load_platform(args.platform, args.set, label="--set")
    except SimulatorInputError as e:
        refuse(str(e))
    for name in args.workloads:
        Machine(platform, load_workload(name), 20_000, seed=1).run()      # compiled, programs built
    print(f"perf map: {write_map(args.keep_object)} functions", flush=True)
    cpu = time.process_time()
    for r in range(args.rounds):
        for name in args.workloads:
            Machine(platform, load_workload(name), args.instructions, seed=1, run_seed=r).run()
    cpu = time.process_time() - cpu
    n = args.rounds * len(args.workloads) * args.instructions
    print(f"{n:,} instructions in {cpu:.2f} s of CPU ({n / cpu / 1e6:.2f} M/s)")


if __name__ == "__main__":
    main()
