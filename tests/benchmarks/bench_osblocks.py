"""Speed of building the OS primitives' instruction blocks (``OsCode.block``), against its anchor, the
part-by-part reference builder of ``tests/osref.py`` (the first version, every part from scratch), in the
same run on the same calls.

    python tests/benchmarks/bench_osblocks.py [--isa x86_64] [--calls 2000] [--max-bytes 65536] [--seed 1]

The calls: primitives drawn uniformly from the ones a web server and a JVM call most (the static request's
truss, a pipe, fork+exec), sizes uniform in [0, max-bytes], source and destination buffers random -- every
call a new block, as when a kernel's block cache misses.  Per primitive: microseconds per block for both
builders, the speed-up, and the instructions per block.  Both builders see the calls in the same order; the
blocks are checked equal as they are built.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from osref import ReferenceOsCode  # noqa: E402
from whatif.simulator.isa import FIELDS, isa_for  # noqa: E402
from whatif.simulator.os.primitives import OsCode  # noqa: E402

PRIMITIVES = ("stat", "open_close", "mmap", "mmap_read", "file_read", "pipe_read", "socket_rw", "tcp_transfer",
              "tcp_connect", "proc_simple")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--isa", default="x86_64")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--max-bytes", type=int, default=65536)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    calls = [(str(rng.choice(PRIMITIVES)), int(rng.integers(0, args.max_bytes + 1)), int(rng.integers(0, 1 << 32)),
              int(rng.integers(0, 1 << 32))) for _ in range(args.calls)]
    builders = {"reference": ReferenceOsCode(isa_for(args.isa)), "OsCode": OsCode(isa_for(args.isa))}
    seconds = {b: defaultdict(float) for b in builders}
    count, length = defaultdict(int), defaultdict(int)
    for call in calls:
        blocks = {}
        for label, code in builders.items():
            t0 = time.perf_counter()
            blocks[label] = code.block(*call)
            seconds[label][call[0]] += time.perf_counter() - t0
        for name, _ in FIELDS:
            if not np.array_equal(getattr(blocks["reference"], name), getattr(blocks["OsCode"], name)):
                raise SystemExit(f"{call}: the blocks differ in {name}")
        count[call[0]] += 1
        length[call[0]] += len(blocks["OsCode"])
    print(f"{args.calls:,} calls on {args.isa}, sizes 0-{args.max_bytes:,} bytes; microseconds per block")
    print(f"  {'primitive':14s} {'calls':>6s} {'instructions':>12s} {'reference':>10s} {'OsCode':>8s} {'speed-up':>8s}")
    for p in sorted(count, key=lambda p: -seconds["reference"][p]):
        ref, new = (1e6 * seconds[b][p] / count[p] for b in builders)
        print(f"  {p:14s} {count[p]:6d} {length[p] // count[p]:12,d} {ref:10.0f} {new:8.0f} {ref / new:7.1f}x")
    ref, new = (sum(seconds[b].values()) for b in builders)
    print(f"  {'all':14s} {args.calls:6d} {'':12s} {1e6 * ref / args.calls:10.0f} {1e6 * new / args.calls:8.0f} "
          f"{ref / new:7.1f}x")


if __name__ == "__main__":
    main()
