"""Where the compiled kernels spend their time, sampled by perf: runs workloads on the core model and writes a
perf map (``/tmp/perf-<pid>.map``) of the core kernel's compiled functions, so that ``perf report`` names them.

    perf record -e cpu-clock -F 1999 -o flip.data \\
        python tests/benchmarks/perf_jit.py [--platform nehalem] [--instructions 2000000] [--rounds 6]
                                            [--set KEY=VALUE ...] [WORKLOAD ...]
    perf report -i flip.data -n --sort sym --stdio | grep -E '\\] (simulate|[a-z_]+\\.[a-z_]+)'

``cpu-clock`` is a software event: it needs no hardware performance counters, which a virtual machine may
not have.  numba's machine code lives in no file perf can read, so its samples would show as addresses: the
kernels are compiled afresh (into a temporary ``NUMBA_CACHE_DIR``, a minute or two), the object code numba
compiled for ``timing.simulate`` is listed with its symbols and sizes (binutils' ``objdump -t``), and each
function's load address goes into the map, named ``module.function`` (``timing.simulate``,
``caches._fill``, ...; the CPython wrapper of a kernel is listed under the same name).  The compilation is
sampled too, in Python and LLVM's own symbols: read the JIT's rows against each other.  A load address
in the map also places a sample within a function (``perf script -F ip,sym``; ``objdump -d`` of the object
kept with ``--keep-object``).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if "NUMBA_CACHE_DIR" not in os.environ:             # a fresh cache: the object code is compiled in this process
    os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="whatif-perf-jit-")
for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from whatif.simulator.core import timing as TM  # noqa: E402
from whatif.simulator.errors import SimulatorInputError  # noqa: E402
from whatif.simulator.machine import Machine  # noqa: E402
from whatif.simulator.platform import load_platform  # noqa: E402
from whatif.simulator.workload import load_workload  # noqa: E402

WORKLOADS = ["429.mcf", "yahoo_y/Y", "462.libquantum"]


def short_name(symbol: str) -> str:
    """``module.function`` of a numba symbol (``_ZN6whatif9simulator4core6timing8simulateB...``)."""
    rest, names = symbol[3:] if symbol.startswith("_ZN") else symbol, []
    while rest[:1].isdigit():
        digits = re.match(r"\d+", rest).group(0)
        length, rest = int(digits), rest[len(digits):]
        names.append(rest[:length])
        rest = rest[length:]
    return ".".join(names[-2:]) if names else symbol


def write_map(keep: Path | None) -> int:
    """The perf map of every compiled build of the core kernel (and the functions linked into it)."""
    rows = []
    folder = keep or Path(tempfile.mkdtemp(prefix="whatif-perf-jit-objects-"))
    folder.mkdir(parents=True, exist_ok=True)
    for k, sig in enumerate(TM.simulate.signatures):
        library = TM.simulate.overloads[sig].library
        path = folder / f"simulate-{k}.o"
        path.write_bytes(library._get_compiled_object())
        table = subprocess.run(["objdump", "-t", str(path)], capture_output=True, text=True, check=True).stdout
        for line in table.splitlines():
            fields = line.split()
            if (" F .ltext" in line or " F .text" in line) and int(fields[-2], 16) > 0:
                address = library.get_pointer_to_function(fields[-1])
                if address:
                    rows.append(f"{address:x} {int(fields[-2], 16):x} {short_name(fields[-1])}\n")
    Path(f"/tmp/perf-{os.getpid()}.map").write_text("".join(rows))
    return len(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workloads", nargs="*", default=WORKLOADS)
    ap.add_argument("--platform", default="nehalem")
    ap.add_argument("--instructions", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a platform override")
    ap.add_argument("--keep-object", type=Path, help="a directory to keep the kernel's object code in")
    args = ap.parse_args()
    try:
        platform = load_platform(args.platform, args.set, label="--set")
    except SimulatorInputError as e:
        raise SystemExit(str(e)) from None
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
