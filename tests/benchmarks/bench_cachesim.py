"""Benchmark of the memory-hierarchy kernel (issue 2, "Performance").

    python tests/benchmarks/bench_cachesim.py                 # full run (a few minutes)
    python tests/benchmarks/bench_cachesim.py --quick         # smaller traces, fewer repeats

Prints, for one core:

1. accesses/s through L1D+L2+DTLB of the MPC7447A model (``load_platform("mpc7447a")``) on the data-only
   mixed synthetic trace ``synthetic_trace(mixed_streams(), N, seed)`` (goal >= 30 M/s), with miss ratios;
2. the same on a real program trace recorded with valgrind lackey (``gzip`` compressing 64 KB; the trace is
   kept under the temporary directory and reused): its data accesses through L1D+L2+DTLB, and the full
   trace with instruction fetches (ITLB, L1I as well);
3. pycachesim's bulk interface (``CacheSimulator.load`` on the whole address list) side by side with ours on
   the same LRU trace and geometry (L1 32 KB 8-way 64 B LRU -> L2 512 KB 8-way 64 B LRU -> memory, loads
   only, no prefetch, no page walks), asserting identical hit/miss counts per level: the kernels alone,
   C loop against numba (a pycachesim user also pays a Python parse: that comparison, end to end on a
   real program's trace, is ``bench_traces.py``'s);
4. the kernels' compile (or cache load) time.

Only the simulation is timed (trace generation, reading and conversion are not).  The machine may be shared:
every figure is measured ``--repeats`` times and reported as best and median, both as wall-clock rate and as
CPU-time rate (the process's own CPU seconds, which excludes time the scheduler gave to other processes),
together with the load average.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from whatif.simulator.memory.hierarchy import MemoryHierarchy  # noqa: E402
from whatif.simulator.platform import load_platform  # noqa: E402
from whatif.simulator.traces import Trace, mixed_streams, read_lackey, synthetic_trace  # noqa: E402

# pycachesim comparison: the same geometry on both sides; no prefetchers, no page-walk loads (page_walk.kind
# = none), so the TLB cannot touch the caches; L2 unsectored.
LRU_OVERRIDES = ["l1d.size_kb=32", "l1d.associativity=8", "l1d.line_bytes=64", "l1d.replacement=lru",
                 "l1d.prefetchers=[]", "l2.size_kb=512", "l2.associativity=8", "l2.line_bytes=64",
                 "l2.sector_bytes=64", "l2.replacement=lru", "l2.prefetchers=[]", "page_walk.kind=none",
                 "memory.page_mapping=identity"]   # pycachesim sees virtual addresses
LACKEY_PROGRAM = ["gzip", "-6", "-c"]        # compresses 64 KB of libc (or of random bytes)
LACKEY_INPUT_BYTES = 64 << 10


def rates(n: int, wall: list[float], cpu: list[float]) -> str:
    w = n / np.array(wall) / 1e6
    c = n / np.array(cpu) / 1e6
    return (f"{w.max():6.1f} M/s best, {np.median(w):6.1f} median (wall); "
            f"{c.max():6.1f} best, {np.median(c):6.1f} median (CPU time)")


def run_ours(platform, trace: Trace, repeats: int):
    """Fresh hierarchy per repeat; returns (wall seconds, CPU seconds, counters of the last run)."""
    wall, cpu, counters = [], [], None
    for _ in range(repeats):
        h = MemoryHierarchy(platform, seed=1)
        c0 = time.process_time()
        h.run(trace.addrs, trace.sizes, trace.kinds)
        cpu.append(time.process_time() - c0)
        wall.append(h.simulation_seconds)
        counters = h.counters()
    return wall, cpu, counters


def miss_line(c: dict, levels: list[str], tlbs: list[str]) -> str:
    parts = [f"{lv} {c['levels'][lv]['misses']:,}/{c['levels'][lv]['accesses']:,} = "
             f"{c['levels'][lv]['miss_ratio']:.4f}" for lv in levels]
    for t in tlbs:
        acc, miss = c["tlbs"][t]["accesses"], c["tlbs"][t]["misses"]
        parts.append(f"{t} {miss:,}/{acc:,} = {miss / acc if acc else 0:.4f}")
    return "miss ratios: " + "; ".join(parts)


def lackey_trace(workdir: Path) -> Path | None:
    """Record (once) a valgrind lackey trace of gzip compressing 64 KB; None if valgrind is missing."""
    path = workdir / "whatif_bench_gzip.lackey"
    if path.exists() and path.stat().st_size > 0:
        return path
    if shutil.which("valgrind") is None or shutil.which(LACKEY_PROGRAM[0]) is None:
        return None
    data = workdir / "whatif_bench_gzip.input"
    libc = Path("/usr/lib/x86_64-linux-gnu/libc.so.6")
    payload = libc.read_bytes()[:LACKEY_INPUT_BYTES] if libc.exists() else \
        np.random.default_rng(0).integers(0, 64, LACKEY_INPUT_BYTES, dtype=np.uint8).tobytes()
    data.write_bytes(payload)
    tmp = path.with_suffix(".partial")
    print(f"recording a lackey trace of {' '.join(LACKEY_PROGRAM)} < {data} (about a minute) ...", flush=True)
    with open(data, "rb") as stdin:
        subprocess.run(["valgrind", "--tool=lackey", "--trace-mem=yes", f"--log-file={tmp}", *LACKEY_PROGRAM],
                       stdin=stdin, stdout=subprocess.DEVNULL, check=True)
    tmp.rename(path)
    return path


def bench_pycachesim(trace: Trace, repeats: int) -> None:
    try:
        import cachesim
    except ImportError:
        print("pycachesim: not installed (pip install pycachesim); comparison skipped")
        return
    platform = load_platform("mpc7447a", LRU_OVERRIDES)
    loads = Trace(trace.addrs, trace.sizes, np.ones(len(trace), np.uint8), "loads")
    lines = (trace.addrs >> np.uint64(6)) != ((trace.addrs + trace.sizes.astype(np.uint64) - np.uint64(1)) >> np.uint64(6))
    assert not lines.any(), "the comparison trace must not straddle lines (pycachesim counts per line)"
    addr_list = trace.addrs.tolist()              # pycachesim iterates Python ints (conversion not timed)

    def build():
        mem = cachesim.MainMemory()
        l2 = cachesim.Cache("L2", sets=1024, ways=8, cl_size=64, replacement_policy="LRU",
                            write_back=True, write_allocate=True)
        mem.load_to(l2)
        mem.store_from(l2)
        l1 = cachesim.Cache("L1", sets=64, ways=8, cl_size=64, replacement_policy="LRU",
                            write_back=True, write_allocate=True, load_from=l2, store_to=l2)
        return cachesim.CacheSimulator(l1, mem), l1, l2

    pwall, pcpu = [], []
    for _ in range(repeats):
        cs, l1, l2 = build()
        t0, c0 = time.perf_counter(), time.process_time()
        cs.load(addr_list, length=1)
        pcpu.append(time.process_time() - c0)
        pwall.append(time.perf_counter() - t0)
    pstats = {s["name"]: s for s in cs.stats()}
    wall, cpu, ours = run_ours(platform, loads, repeats)
    n = len(trace)
    for ours_name, theirs in (("L1D", "L1"), ("L2", "L2")):
        o, t = ours["levels"][ours_name], pstats[theirs]
        assert o["accesses"] == t["LOAD_count"], (ours_name, o["accesses"], t["LOAD_count"])
        assert o["hits"] == t["HIT_count"], (ours_name, o["hits"], t["HIT_count"])
        assert o["misses"] == t["MISS_count"], (ours_name, o["misses"], t["MISS_count"])
    print(f"pycachesim ({cachesim.__name__} bulk load of {n:,} addresses): {rates(n, pwall, pcpu)}")
    print(f"whatif on the same LRU hierarchy:                        {rates(n, wall, cpu)}")
    print(f"identical counts: L1 {ours['levels']['L1D']['hits']:,} hits / {ours['levels']['L1D']['misses']:,} "
          f"misses, L2 {ours['levels']['L2']['hits']:,} hits / {ours['levels']['L2']['misses']:,} misses")
    print(f"ratio whatif / pycachesim: {min(pwall) / min(wall):.1f}x (best wall), "
          f"{np.median(pwall) / np.median(wall):.1f}x (median wall), {min(pcpu) / min(cpu):.1f}x (best CPU)  "
          f"[kernels alone; parse included: bench_traces.py]")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--accesses", type=int, default=20_000_000, help="synthetic trace length")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="2M accesses, 3 repeats")
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()), help="where the lackey trace is kept")
    args = ap.parse_args()
    if args.quick:
        args.accesses, args.repeats = 2_000_000, 3
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")

    platform = load_platform("mpc7447a")
    warm = synthetic_trace(mixed_streams(), 2000, seed=0, instructions_per_access=0.5)
    t0, c0 = time.perf_counter(), time.process_time()
    MemoryHierarchy(platform).run(warm.addrs, warm.sizes, warm.kinds)
    print(f"kernel compile / cache load: {time.perf_counter() - t0:.1f} s wall, {time.process_time() - c0:.1f} s CPU")

    # 1. synthetic mixed trace, data only
    tr = synthetic_trace(mixed_streams(), args.accesses, seed=args.seed)
    wall, cpu, c = run_ours(platform, tr, args.repeats)
    print(f"\n[1] mpc7447a L1D+L2+DTLB, synthetic mixed trace, {len(tr):,} data accesses: {rates(len(tr), wall, cpu)}"
          "  [goal >= 30 M/s]")
    print("    " + miss_line(c, ["L1D", "L2"], ["DTLB"]))

    # 2. a real program trace
    path = lackey_trace(args.workdir)
    if path is None:
        print("\n[2] valgrind (or gzip) is not installed: no real program trace; synthetic trace only")
    else:
        t0 = time.perf_counter()
        full = read_lackey(path)
        secs = time.perf_counter() - t0
        data = full.kinds != 0
        dtr = Trace(full.addrs[data], full.sizes[data], full.kinds[data], "lackey data")
        counts = full.counts()
        print(f"\n[2] lackey trace of {' '.join(LACKEY_PROGRAM)}: {len(full):,} records ({counts}), read in {secs:.1f} s "
              f"({len(full) / secs / 1e6:.1f} M lines/s)")
        wall, cpu, c = run_ours(platform, dtr, args.repeats)
        print(f"    data accesses only, L1D+L2+DTLB: {rates(len(dtr), wall, cpu)}  [goal >= 30 M/s]")
        print("    " + miss_line(c, ["L1D", "L2"], ["DTLB"]))
        wall, cpu, c = run_ours(platform, full, args.repeats)
        print(f"    full trace with instruction fetches: {rates(len(full), wall, cpu)}")
        print("    " + miss_line(c, ["L1I", "L1D", "L2"], ["ITLB", "DTLB"]))

    # 3. pycachesim side by side on the same LRU trace: loads of the mixed trace (no line straddles)
    n = min(args.accesses, 5_000_000)
    print(f"\n[3] LRU hierarchy (L1 32 KB 8-way 64 B -> L2 512 KB 8-way 64 B -> memory), {n:,} loads of the mixed "
          "trace")
    bench_pycachesim(synthetic_trace(mixed_streams(), n, seed=args.seed), args.repeats)


if __name__ == "__main__":
    main()
