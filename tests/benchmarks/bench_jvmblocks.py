"""Speed of building the JVM's method blocks (``JvmCode.interpreted`` and ``JvmCode.compiled``), against
their anchor, the instruction-by-instruction reference of ``tests/jvmref.py`` (the first version), in the
same run on the same calls.

    python tests/benchmarks/bench_jvmblocks.py [--isa powerpc32] [--calls 300] [--max-units 8192] [--seed 1]

The calls: methods drawn uniformly from the JVM model's method table (their bytecode programs, bytecodes
per call and per unit), units uniform in [0, max-units] (a buffer's chars or bytes), call depth 0-7, every
call a new block, as when the VM's block cache misses.  Per kind: microseconds per block for both
builders, the speed-up, and the instructions per block.  Both builders see the calls in the same order;
the blocks are checked equal as they are built.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from jvmref import ReferenceJvmCode  # noqa: E402
from whatif.simulator.isa import FIELDS, isa_for  # noqa: E402
from whatif.simulator.jvm.code import JvmCode  # noqa: E402
from whatif.simulator.jvm.spec import load_methods  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--isa", default="powerpc32")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--max-units", type=int, default=8192)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    methods = load_methods().methods
    names = sorted(methods)
    calls = []
    for _ in range(args.calls):
        name = names[int(rng.integers(len(names)))]
        m = methods[name]
        calls.append((str(rng.choice(["interpreted", "compiled"])), name, m.size, m.bytecodes,
                      int(rng.integers(0, args.max_units + 1)), m.bytecodes_per_unit, int(rng.integers(0, 8))))
    builders = {"reference": ReferenceJvmCode(isa_for(args.isa)), "JvmCode": JvmCode(isa_for(args.isa))}
    seconds = {b: defaultdict(float) for b in builders}
    count, length = defaultdict(int), defaultdict(int)
    for kind, *call in calls:
        blocks = {}
        for label, code in builders.items():
            t0 = time.perf_counter()
            blocks[label] = getattr(code, kind)(*call)
            seconds[label][kind] += time.perf_counter() - t0
        for field, _ in FIELDS:
            if not np.array_equal(getattr(blocks["reference"], field), getattr(blocks["JvmCode"], field)):
                raise SystemExit(f"{kind} {call}: the blocks differ in {field}")
        count[kind] += 1
        length[kind] += len(blocks["JvmCode"])
    print(f"{args.calls:,} calls on {args.isa}, {len(names)} methods, units 0-{args.max_units:,}; "
          "microseconds per block")
    print(f"  {'kind':12s} {'calls':>6s} {'instructions':>12s} {'reference':>10s} {'JvmCode':>8s} {'speed-up':>8s}")
    for kind in sorted(count):
        ref, new = (1e6 * seconds[b][kind] / count[kind] for b in builders)
        print(f"  {kind:12s} {count[kind]:6d} {length[kind] // count[kind]:12,d} {ref:10.0f} {new:8.0f} "
              f"{ref / new:7.1f}x")
    ref, new = (sum(seconds[b].values()) for b in builders)
    print(f"  {'all':12s} {args.calls:6d} {'':12s} {1e6 * ref / args.calls:10.0f} {1e6 * new / args.calls:8.0f} "
          f"{ref / new:7.1f}x")


if __name__ == "__main__":
    main()
