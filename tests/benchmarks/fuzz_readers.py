"""Every reader of user input fuzzed at nightly size (issue 16, item 2): per reader, how many inputs parsed,
how many were refused with the reader's one user error, and how many crashed (any other exception).

    python tests/benchmarks/fuzz_readers.py                        # 100,000 inputs a reader, every reader
    python tests/benchmarks/fuzz_readers.py --inputs 2000 --readers scenario,wtr
    python tests/benchmarks/fuzz_readers.py --replay scenario:1234  # one input again: its files, its traceback
    python tests/benchmarks/fuzz_readers.py --save crashes/        # every crashing input's files, to keep

Goal (issue 16's acceptance): 0 crashes in >= 10^5 inputs per reader.  The inputs are those of
``tests/test_fuzz_readers.py`` -- the generators of ``tests/fuzzgen.py``, valid shipped files and
fixtures mutated -- drawn here from ``random.Random("SEED:READER:INDEX")``, so input INDEX of a reader is
the same on every machine and ``--replay READER:INDEX`` rebuilds it.  Inputs run in worker processes
(``--workers``, default one per CPU), each with an address-space limit (``--memory-gb``) so that an input
that makes a reader allocate without bound is reported as a MemoryError crash rather than exhausting the
machine.  Crashes are grouped by exception type and the innermost whatif frame; the first few groups of
each reader are printed with the index of an input that shows them and the end of its traceback.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from random import Random

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fuzzgen  # noqa: E402

CHUNK = 250                                 # inputs per task of a worker
REPO = Path(__file__).resolve().parents[2]

_workdir: Path | None = None


def _start_worker(memory_gb: float) -> None:
    global _workdir
    _workdir = Path(tempfile.mkdtemp(prefix="whatif-fuzz-"))
    if memory_gb > 0:
        limit = int(memory_gb * 2 ** 30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def case_of(reader: str, index: int, seed: int) -> fuzzgen.Case:
    return fuzzgen.READERS[reader].generate(Random(f"{seed}:{reader}:{index}"))


def signature(exc: BaseException) -> str:
    """``Type at file:line``: the innermost frame in whatif's own code (else the innermost of all)."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if f.filename.startswith(str(REPO)) and "/tests/" not in f.filename
            and "/.venv/" not in f.filename]
    frame = (ours or frames or [None])[-1]
    where = f"{Path(frame.filename).relative_to(REPO) if frame.filename.startswith(str(REPO)) else frame.filename}" \
            f":{frame.lineno}" if frame is not None else "?"
    return f"{type(exc).__name__} at {where}"


def run_chunk(task: tuple[str, int, int, int]) -> dict:
    """Inputs [start, stop) of a reader: counts, and per crash signature its count and first example."""
    reader_name, start, stop, seed = task
    reader = fuzzgen.READERS[reader_name]
    counts: Counter = Counter()
    crashes: dict[str, dict] = {}
    for index in range(start, stop):
        case: fuzzgen.Case = {}
        try:
            case = case_of(reader_name, index, seed)
            counts[fuzzgen.outcome(reader, case, _workdir)] += 1
            continue
        except Exception as exc:               # a crash: anything but the reader's user error
            counts["crash"] += 1
            # (an exception while making the input is a bug of the generator, not of whatif: said so)
            key = signature(exc) if case else f"generator {signature(exc)}"
            if key not in crashes:
                tb = traceback.format_exception(exc)
                crashes[key] = {"count": 0, "index": index, "message": f"{type(exc).__name__}: {exc}"[:300],
                                "traceback": "".join(tb[-3:]), "case": case}
            crashes[key]["count"] += 1
    return {"reader": reader_name, "counts": counts, "crashes": crashes}


def replay(spec: str, seed: int) -> None:
    reader_name, _, index = spec.rpartition(":")
    reader = fuzzgen.READERS[reader_name]
    case = case_of(reader_name, int(index), seed)
    print(fuzzgen.describe(case, limit=4000))
    with tempfile.TemporaryDirectory() as tmp:
        print(f"\n{reader_name}:{index}: {fuzzgen.outcome(reader, case, Path(tmp))}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", type=int, default=100_000, help="inputs per reader (default 100,000)")
    ap.add_argument("--readers", default=None, help=f"comma-separated, of: {', '.join(fuzzgen.READERS)}")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=0, help="input INDEX of READER is Random('SEED:READER:INDEX')")
    ap.add_argument("--memory-gb", type=float, default=6.0, help="address-space limit per worker (0: none)")
    ap.add_argument("--tracebacks", type=int, default=3, help="crash groups shown per reader")
    ap.add_argument("--save", type=Path, default=None, help="write each crash group's input files here")
    ap.add_argument("--replay", default=None, metavar="READER:INDEX", help="rebuild and run one input")
    args = ap.parse_args()
    if args.replay:
        replay(args.replay, args.seed)
        return
    names = args.readers.split(",") if args.readers else list(fuzzgen.READERS)
    unknown = [n for n in names if n not in fuzzgen.READERS]
    if unknown:
        ap.error(f"unknown reader {unknown[0]!r}; known: {', '.join(fuzzgen.READERS)}")

    print(f"fuzz_readers: {args.inputs:,} inputs a reader, {args.workers} workers, seed {args.seed}, "
          f"load average {os.getloadavg()[0]:.2f}")
    header = f"{'reader':<16} {'inputs':>9} {'parsed':>9} {'user errors':>12} {'crashes':>8} {'seconds':>8}"
    print(header)
    print("-" * len(header))
    found: dict[str, dict[str, dict]] = {}
    total_crashes = 0
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(args.workers, initializer=_start_worker, initargs=(args.memory_gb,)) as pool:
        for name in names:
            started = time.perf_counter()
            tasks = [(name, a, min(a + CHUNK, args.inputs), args.seed) for a in range(0, args.inputs, CHUNK)]
            counts: Counter = Counter()
            crashes: dict[str, dict] = {}
            for part in pool.imap_unordered(run_chunk, tasks):
                counts.update(part["counts"])
                for key, c in part["crashes"].items():
                    if key not in crashes or c["index"] < crashes[key]["index"]:
                        crashes[key] = {**c, "count": c["count"] + crashes.get(key, {}).get("count", 0)}
                    else:
                        crashes[key]["count"] += c["count"]
            n = sum(counts.values())
            print(f"{name:<16} {n:>9,} {counts['parsed']:>9,} {counts['user error']:>12,} {counts['crash']:>8,} "
                  f"{time.perf_counter() - started:>8.1f}", flush=True)
            found[name] = crashes
            total_crashes += counts["crash"]
    for name, crashes in found.items():
        if not crashes:
            continue
        print(f"\n{name}: {len(crashes)} distinct crash(es)")
        for key, c in sorted(crashes.items(), key=lambda kv: -kv[1]["count"])[:args.tracebacks]:
            print(f"  {c['count']:,} x {key}  (first: --replay {name}:{c['index']})")
            print(f"    {c['message']}")
            print("    " + c["traceback"].strip().replace("\n", "\n    "))
            print("    input: " + fuzzgen.describe(c["case"], limit=160).replace("\n", "\n           "))
        if args.save is not None:
            for key, c in crashes.items():
                where = args.save / f"{name}-{c['index']}"
                where.mkdir(parents=True, exist_ok=True)
                for file, data in c["case"].items():
                    (where / file).write_bytes(data)
                (where / "crash.txt").write_text(f"{key}\n{c['message']}\n\n{c['traceback']}")
    print(f"\n{'0 crashes' if total_crashes == 0 else f'{total_crashes:,} crashes'} in "
          f"{args.inputs:,} inputs per reader ({len(names)} readers)")
    sys.exit(1 if total_crashes else 0)


if __name__ == "__main__":
    main()
