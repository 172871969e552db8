"""Trace reading speed: lackey text (issue 2 target: >= 5 million lines/s) and the binary format.

Run: python tests/benchmarks/bench_traces.py [lines]
Writes a lackey file with valgrind's own header lines, instruction and data records, then times
whatif's reader (best of 3, after one warm-up that compiles the numba scanner).
"""

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from whatif.simulator.traces import lackey_text, mixed_streams, read_lackey, read_wtr, synthetic_trace, wtr_bytes  # noqa: E402


def main(lines: int = 10_000_000) -> None:
    trace = synthetic_trace(mixed_streams(), lines // 2, seed=1, instructions_per_access=1.0)
    with tempfile.TemporaryDirectory() as d:
        lackey = Path(d) / "t.lackey"
        lackey.write_text("==4242== Lackey, an example Valgrind tool\n==4242== Command: ./prog\n\n"
                          + lackey_text(trace))
        binary = Path(d) / "t.wtr"
        binary.write_bytes(wtr_bytes(trace))
        read_lackey(lackey)
        for label, path, reader in (("lackey text", lackey, read_lackey), ("whatif binary", binary, read_wtr)):
            best = float("inf")
            for _ in range(3):
                t0 = time.perf_counter()
                back = reader(path)
                best = min(best, time.perf_counter() - t0)
            assert len(back) == len(trace)
            size_mb = os.path.getsize(path) / 1e6
            print(f"{label:14s} {len(trace):>12,} records  {size_mb:8.1f} MB  {best:6.3f} s  "
                  f"{len(trace) / best / 1e6:8.1f} M records/s  {size_mb / best:8.1f} MB/s")
    print(f"host load: {os.getloadavg()}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000)
