"""Traces at simulation speed (issue 17, item 3): every figure of the acceptance side by side, in one run.

    python tests/benchmarks/bench_traces.py                # the real-program trace (about 10 minutes)
    python tests/benchmarks/bench_traces.py --quick        # a smaller program run, no pycachesim
    python tests/benchmarks/bench_traces.py --trace x.lackey   # any lackey trace

The trace: valgrind lackey (``--trace-mem=yes``) of ``gzip -9`` compressing the first 40,000 bytes of
libc, 79 M records (recorded once, about a minute, and kept in ``--workdir``); without valgrind, the
synthetic mixed trace written as lackey text (said so in the output).  Printed, each with its anchor:

1. reading: the lackey scanner and the ``.wtr`` v2 decoder alone (records/s, best of 3, wall and the
   thread's CPU time), against the kernel's own rate on the same trace (``simulation_seconds`` of the
   cachesim run; goal: reading >= simulating);
2. size: lackey text : ``.wtr`` v2 (goal >= 4x; the wave-1 ``.wtr`` was 11 bytes a record, 1.29x);
3. ``whatif cachesim TRACE -p nehalem --json`` end to end, process start to JSON, on the lackey text and
   on ``.wtr`` v2 (goals >= 20 M and >= 50 M records/s), and the start-up alone (a 1,000-record trace);
   with Python's bytecode cached (as on any run after the first; kept in the temporary work directory via
   ``PYTHONPYCACHEPREFIX``), and, for ``.wtr`` v2 and the start-up, also with ``PYTHONDONTWRITEBYTECODE=1``
   (which some hosts set, this project's development machine among them: whatif's own modules, installed
   editable, are then compiled at every start);
4. pycachesim on the same trace and an identical hierarchy (every record a load: L1 32 KB 8-way 64 B LRU
   -> L2 512 KB 8-way 64 B LRU, no prefetch, no page walks), parsing the lackey text line by line in
   Python as its users do, then simulating; against ``whatif cachesim`` of the same loads-only trace
   and hierarchy, text and v2 (goal: both >= 10x); the L2 counts must be identical (asserted).

The machine may be shared: the load average is printed, and wall-clock figures are the best of
``--repeats`` runs.
"""

from __future__ import annotations

import argparse
import array
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_cachesim import LRU_OVERRIDES  # noqa: E402
from whatif.simulator.trace_lackey import LackeyReader  # noqa: E402
from whatif.simulator.trace_wtr import WtrReader  # noqa: E402
from whatif.simulator.traces import (Trace, lackey_bytes, mixed_streams, read_trace, synthetic_trace,  # noqa: E402
                                     wtr_bytes)

WHATIF = [sys.executable, "-m", "whatif.cli"]
PROGRAM = ["gzip", "-9", "-c"]
LIBC = Path("/usr/lib/x86_64-linux-gnu/libc.so.6")


def record_lackey(workdir: Path, input_bytes: int) -> tuple[Path, str]:
    """The lackey trace of gzip -9 on ``input_bytes`` of libc (recorded once), or a synthetic stand-in."""
    path = workdir / f"whatif_bench_gzip9_{input_bytes}.lackey"
    what = f"valgrind lackey of `{' '.join(PROGRAM)}` on {input_bytes:,} bytes of libc"
    if path.exists() and path.stat().st_size > 0:
        return path, what
    if shutil.which("valgrind") is None or shutil.which(PROGRAM[0]) is None or not LIBC.exists():
        path = workdir / "whatif_bench_synthetic.lackey"
        if not path.exists():
            trace = synthetic_trace(mixed_streams(), 30_000_000, seed=1, instructions_per_access=1.0)
            path.write_bytes(lackey_bytes(trace))
        return path, "SYNTHETIC mixed trace (valgrind, gzip or libc missing): not a real program"
    data = workdir / f"whatif_bench_gzip9_{input_bytes}.input"
    data.write_bytes(LIBC.read_bytes()[:input_bytes])
    tmp = path.with_suffix(".partial")
    print(f"recording {what} (about a minute) ...", flush=True)
    with open(data, "rb") as stdin:
        subprocess.run(["valgrind", "--tool=lackey", "--trace-mem=yes", f"--log-file={tmp}", *PROGRAM],
                       stdin=stdin, stdout=subprocess.DEVNULL, check=True)
    tmp.rename(path)
    return path, what


def best_read(reader_cls, path: Path, repeats: int) -> tuple[int, float, float]:
    """(records, best wall seconds, best CPU seconds) of reading the whole file into reused arrays."""
    cap = 1 << 22
    a, s, k = np.empty(cap, np.uint64), np.empty(cap, np.uint16), np.empty(cap, np.uint8)
    walls, cpus = [], []
    for _ in range(repeats):
        t0, c0, n = time.perf_counter(), time.thread_time(), 0
        with reader_cls(path) as reader:
            while got := reader.fill(a, s, k):
                n += got
        walls.append(time.perf_counter() - t0)
        cpus.append(time.thread_time() - c0)
    return n, min(walls), min(cpus)


def python_env(pycache: Path | None) -> dict[str, str]:
    """The environment of the timed ``whatif`` processes.  With ``pycache``: Python writes and reads its
    bytecode cache there (``PYTHONPYCACHEPREFIX``, so the source tree is not touched), as on any run after the
    first.  ``None``: ``PYTHONDONTWRITEBYTECODE=1`` (which some hosts set, this project's development machine
    among them): the installed packages' caches are read, but whatif's own modules, installed editable, are
    compiled at each start unless an earlier run left their cache."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    if pycache is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def whatif_cachesim(path: Path, platform: str, overrides: list[str], repeats: int,
                    env: dict[str, str] | None = None) -> tuple[float, dict]:
    """(best wall seconds from process start to the JSON document, the document)."""
    cmd = [*WHATIF, "cachesim", str(path), "-p", platform, "--json"]
    for o in overrides:
        cmd += ["--set", o]
    walls, doc = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
        walls.append(time.perf_counter() - t0)
        doc = json.loads(out)
    return min(walls), doc


def pycachesim_run(path: Path) -> tuple[int, float, float, dict]:
    """Parse the lackey text line by line in Python, then run every record as a load through pycachesim.
    Returns (records, parse seconds, simulate seconds, L2 statistics)."""
    import cachesim

    t0 = time.perf_counter()
    addrs, sizes = array.array("Q"), array.array("H")
    with open(path, "rb") as fh:
        for line in fh:
            if line[:1] not in (b"I", b" ") or line.lstrip()[:2] == b"==":
                continue
            addr, size = line[3:].split(b",")
            addrs.append(int(addr, 16))
            sizes.append(int(size))
    parse = time.perf_counter() - t0
    mem = cachesim.MainMemory()
    l2 = cachesim.Cache("L2", sets=1024, ways=8, cl_size=64, replacement_policy="LRU", write_back=True,
                        write_allocate=True)
    mem.load_to(l2)
    mem.store_from(l2)
    l1 = cachesim.Cache("L1", sets=64, ways=8, cl_size=64, replacement_policy="LRU", write_back=True,
                        write_allocate=True, load_from=l2, store_to=l2)
    cs = cachesim.CacheSimulator(l1, mem)
    load = cs.load
    t0 = time.perf_counter()
    for a, s in zip(addrs, sizes):
        load(a, length=s)
    simulate = time.perf_counter() - t0
    return len(addrs), parse, simulate, {st["name"]: st for st in cs.stats()}["L2"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, help="a lackey trace to use instead of recording one")
    ap.add_argument("--input-bytes", type=int, default=40_000, help="bytes of libc gzip -9 compresses")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="8,000 input bytes (about 10 M records), no pycachesim")
    ap.add_argument("--no-pycachesim", action="store_true")
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()))
    args = ap.parse_args()
    if args.quick:
        args.input_bytes, args.no_pycachesim = 8_000, True
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    if args.workdir.exists() and not args.workdir.is_dir():
        print(f"--workdir {args.workdir}: not a directory", file=sys.stderr)
        sys.exit(2)
    args.workdir.mkdir(parents=True, exist_ok=True)
    lackey, what = (args.trace, f"{args.trace}") if args.trace else record_lackey(args.workdir, args.input_bytes)
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        tmp = Path(tmp)
        v2 = tmp / "trace.wtr"
        subprocess.run([*WHATIF, "trace", "convert", str(lackey), str(v2), "--json"], check=True, capture_output=True)
        tiny = tmp / "tiny.wtr"
        subprocess.run([*WHATIF, "trace", "synth", str(tiny), "--accesses", "1000", "--json"], check=True,
                       capture_output=True)
        text_bytes, v2_bytes = lackey.stat().st_size, v2.stat().st_size

        # 1. reading alone (after a read of the small trace: the numba functions loaded), and the kernel's
        # rate on the same trace
        best_read(WtrReader, tiny, 1)
        with LackeyReader(lackey) as reader:
            reader.fill(np.empty(10, np.uint64), np.empty(10, np.uint16), np.empty(10, np.uint8))
        n, wall_l, cpu_l = best_read(LackeyReader, lackey, args.repeats)
        _, wall_v, cpu_v = best_read(WtrReader, v2, args.repeats)
        cached, compiled = python_env(tmp / "pycache"), python_env(None)
        whatif_cachesim(tiny, "nehalem", [], 1, cached)          # writes the bytecode cache
        e2e_l, doc_l = whatif_cachesim(lackey, "nehalem", [], args.repeats, cached)
        e2e_v, doc_v = whatif_cachesim(v2, "nehalem", [], args.repeats, cached)
        e2e_v_compiled, _ = whatif_cachesim(v2, "nehalem", [], args.repeats, compiled)
        assert doc_l["levels"] == doc_v["levels"] and doc_l["trace_accesses"] == doc_v["trace_accesses"] == n
        kernel = n / min(doc_l["simulation_seconds"], doc_v["simulation_seconds"]) / 1e6
        startup, _ = whatif_cachesim(tiny, "nehalem", [], max(5, args.repeats), cached)
        startup_compiled, _ = whatif_cachesim(tiny, "nehalem", [], max(5, args.repeats), compiled)
        print(f"trace: {what}: {n:,} records")
        print(f"\n[1] reading alone (best of {args.repeats})               wall          CPU     anchor")
        print(f"    lackey text scanner        {n / wall_l / 1e6:8.1f} M/s {n / cpu_l / 1e6:8.1f} M/s   "
              f"kernel simulates {kernel:.1f} M/s (nehalem) [goal: reading >= simulating]")
        print(f"    .wtr v2 decoder            {n / wall_v / 1e6:8.1f} M/s {n / cpu_v / 1e6:8.1f} M/s")
        print(f"\n[2] size: lackey {text_bytes / 1e6:,.1f} MB, .wtr v2 {v2_bytes / 1e6:,.1f} MB "
              f"({8 * v2_bytes / n:.2f} bits a record): {text_bytes / v2_bytes:.2f}x smaller  "
              f"[goal >= 4x; wave-1 .wtr {text_bytes / (32 + 11 * n):.2f}x]")
        print(f"\n[3] whatif cachesim -p nehalem --json, process start to JSON (best of {args.repeats}; Python's "
              f"bytecode cached, as on any run after the first)")
        print(f"    lackey text   {e2e_l:6.2f} s  {n / e2e_l / 1e6:6.1f} M records/s  [goal >= 20]")
        print(f"    .wtr v2       {e2e_v:6.2f} s  {n / e2e_v / 1e6:6.1f} M records/s  [goal >= 50]")
        print(f"    .wtr v2 with PYTHONDONTWRITEBYTECODE=1 (whatif's modules compiled at start): {e2e_v_compiled:.2f} s  "
              f"{n / e2e_v_compiled / 1e6:.1f} M records/s")
        print(f"    start-up alone (1,000-access .wtr): {startup:.2f} s; with PYTHONDONTWRITEBYTECODE=1 "
              f"{startup_compiled:.2f} s  [goal < 0.5 s]")
        print(f"    L2 misses {doc_l['levels']['L2']['misses']:,}, identical on text and v2")

        # 4. pycachesim on the loads-only trace and the identical LRU hierarchy
        if args.no_pycachesim:
            print("\n[4] pycachesim: skipped")
        else:
            try:
                import cachesim  # noqa: F401
            except ImportError:
                print("\n[4] pycachesim: not installed (pip install pycachesim); skipped")
                return
            full = read_trace(lackey)
            loads = tmp / "loads.lackey"
            loads.write_bytes(lackey_bytes(Trace(full.addrs, full.sizes, np.ones(len(full), np.uint8))))
            loads_v2 = tmp / "loads.wtr"
            loads_v2.write_bytes(wtr_bytes(Trace(full.addrs, full.sizes, np.ones(len(full), np.uint8))))
            del full
            ours_l, doc = whatif_cachesim(loads, "mpc7447a", LRU_OVERRIDES, args.repeats, cached)
            ours_v, doc_v = whatif_cachesim(loads_v2, "mpc7447a", LRU_OVERRIDES, args.repeats, cached)
            records, parse, simulate, l2 = pycachesim_run(loads)
            theirs = parse + simulate
            ours = doc["levels"]["L2"]
            assert records == n and doc_v["levels"] == doc["levels"]
            assert (ours["accesses"], ours["hits"], ours["misses"]) == \
                (l2["LOAD_count"], l2["HIT_count"], l2["MISS_count"]), (ours, l2)
            print(f"\n[4] every record a load, L1 32 KB 8-way LRU -> L2 512 KB 8-way LRU, {n:,} records")
            print(f"    pycachesim {theirs:7.1f} s  {n / theirs / 1e6:6.2f} M/s  (Python parse {parse:.1f} s, "
                  f"simulate {simulate:.1f} s)")
            print(f"    whatif lackey text {ours_l:6.2f} s  {n / ours_l / 1e6:6.1f} M/s  {theirs / ours_l:5.1f}x  "
                  f"[goal >= 10x]")
            print(f"    whatif .wtr v2     {ours_v:6.2f} s  {n / ours_v / 1e6:6.1f} M/s  {theirs / ours_v:5.1f}x  "
                  f"[goal >= 10x]")
            print(f"    identical L2 counts: {ours['accesses']:,} accesses, {ours['hits']:,} hits, "
                  f"{ours['misses']:,} misses")
    print(f"\nload average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
