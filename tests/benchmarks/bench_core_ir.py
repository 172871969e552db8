"""Host instructions per simulated instruction of the core timing kernel, counted by callgrind.

    python tests/benchmarks/bench_core_ir.py [--instructions 200000] [--platform nehalem] [--streams mcf]
                                             [--lines 30 | --functions 30] [--mispredicted]

Wall-clock rates on a shared host drift by 10-15 % between runs of one build (``bench_simulate.py``,
``bench_core.py``), more than most changes to the kernel move them.  An instruction count does not drift:
valgrind's callgrind counts the host instructions executed, per address, while ``Core.run`` simulates
two of ``bench_core.py``'s streams (a dependent chain of ALU operations, and the random program with
256 KB of data), and while ``Machine.run`` simulates 429.mcf (``mcf``: memory-bound, CPI 9; synthesis,
the OS model and every level of the hierarchy with its prefetchers and page walks), also with its memory
traffic timed (``mcf-timed``: issue 15's timed prefetch arrival, the memory channel's queue and the L2
streamer with 16 prefetch engines, which the README measures together), and 445.gobmk, branchy (gshare
mispredicts 18 directions per 1,000 of its instructions over 2 M), with gshare (``gobmk``) and with TAGE
(``gobmk-tage``: issue 15's opt-in predictor, which runs its own build of the kernel).  Printed per
stream: the host instructions of ``timing.simulate`` itself per simulated instruction, and of all the
compiled code the run executes (memory hierarchy included), each counted in a process that runs the
stream less the same process without that run (Python's own count varies by millions between processes,
so only JIT code is counted), against its anchor: the build before unsigned indices (bb3b387) for the
core's streams, 6f5bf1a for mcf (the build before the RS cursor's skip over cycles without releases and
the victim search among the tags), eba9626 for mcf-timed, 3cef668 (TAGE's commit) for the gobmk
streams.  Each stream runs with the settings its anchor was counted with (on the Xeons, whose files have
run TAGE and issue 15's memory timing by default since 12bce02, those are pinned with ``--set``-style
overrides); ``mcf-shipped``, ``gobmk-shipped`` and ``Y-shipped`` run the platform file as it is, TAGE's build of the
kernel and the memory timing included (no anchor).  It is a count, not a time: a host instruction that
misses the host's caches costs more than one that does not.

``--lines N`` says where the count goes: the kernels are compiled afresh with numba's debug information
(into a temporary cache; a minute or two), the object code of the timing kernel's library (the kernel and
every memory-hierarchy function it calls) is disassembled with its source lines (binutils' ``objdump -d
-l``), and callgrind's per-address counts are summed per source line and per compiled function; the N
costliest of each are printed per stream.  Debug information changes the code a little (on the chain,
612 host instructions per simulated instruction with it at 6f5bf1a, 565 without it at c2ace46), so these
counts are read against each other, not against the anchors.  numba's line table names the file of the
function compiled, not of the one inlined into it: the memory kernel's fast path, inlined into
``memport.data``, shows as ``memport.py`` with ``memory/kernel.py``'s line numbers.

``--functions N`` sums the counts per compiled function of the build counted (compiled afresh without debug
information): debug information can stop LLVM from vectorising a loop (the streamer's minimum over its 32
stamps, vectorised in the build that runs, counted about 36 host instructions per simulated instruction of
mcf-timed with it, at 0d91728), so a change to such a loop is read here.

``--mispredicted`` counts, instead of the instructions, the host's conditional branches that callgrind's
branch model (``--branch-sim=yes``: 16,384 two-bit counters indexed by the branch's address and the last
outcomes, simpler than any host's predictor) mispredicts: on a virtual machine without performance
counters, the one count of where a branch on the simulated program's random outcomes flushes the host's
pipeline.  No anchor.

The kernels are compiled for a named CPU (haswell + AVX2) so that the numba cache written by an ordinary
run is valid under valgrind, whose emulated CPU would otherwise ask for a fresh compilation under
valgrind (one such compilation under callgrind had not finished after eight minutes).  valgrind (and,
for ``--lines`` and ``--functions``, binutils) is installed with apt-get when absent.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

CPU = {"NUMBA_CPU_NAME": "haswell", "NUMBA_CPU_FEATURES": "+avx2"}
STREAMS = ("chain", "program", "mcf", "mcf-timed", "gobmk", "gobmk-tage", "mcf-shipped", "gobmk-shipped", "Y-shipped")
# the streams Machine.run simulates, and their workload
WORKLOADS = {"mcf": "429.mcf", "mcf-timed": "429.mcf", "gobmk": "445.gobmk", "gobmk-tage": "445.gobmk",
             "mcf-shipped": "429.mcf", "gobmk-shipped": "445.gobmk", "Y-shipped": "yahoo_y/Y"}
# Nehalem, 200,000 instructions: simulate() itself, all the JIT code of the run; bb3b387 (2026-11-28) for
# the core's streams, 6f5bf1a (2026-11-29) for mcf, eba9626 (2026-11-29) for mcf-timed, 3cef668 (2026-11-29)
# for gobmk and gobmk-tage
ANCHOR = {"chain": (669.4, 670.9), "program": (781.5, 1048.1), "mcf": (836.5, 1485.2), "mcf-timed": (727.5, 1453.8),
          "gobmk": (617.1, 813.4), "gobmk-tage": (699.5, 904.5)}
# Each stream keeps the settings its anchor was counted with.  Since 12bce02 the Xeon files run TAGE, timed
# prefetch arrival, the memory channel's queue and the L2 streamer with 16 engines by default; on those platforms
# the streams pin the settings from before (gshare, instant arrival, no queueing, the L2's adjacent-line
# prefetcher alone), and each stream named for a mechanism turns that one on.  The ``-shipped`` streams run the
# platform file as it is (no anchor).
FLIPPED = ("harpertown", "nehalem", "westmere")
BEFORE_FLIP = ("memory.prefetch_arrival=instant", "memory.queueing=none", "caches.L2.prefetchers=['adjacent_line']",
               "caches.L2.prefetch_engines=0")
# mcf-timed: 429.mcf with memory traffic timed (issue 15), as the README's measurements of that cost have it:
# timed prefetch arrival, the memory channel's queue, and the L2 streamer with 16 prefetch engines
TIMED = ("memory.prefetch_arrival=latency", "memory.queueing=bandwidth",
         "caches.L2.prefetchers=['adjacent_line','streamer']", "caches.L2.prefetch_engines=16")
PREDICTOR = {"gobmk-tage": "tage"}            # every other stream but the -shipped ones: gshare


def overrides(stream: str, platform_name: str) -> tuple[str, ...]:
    """The ``--set`` overrides a stream runs with on ``platform_name`` (module docstring)."""
    if stream.endswith("-shipped"):
        return ()
    memory = (TIMED if stream == "mcf-timed" else BEFORE_FLIP) if platform_name in FLIPPED else ()
    return (f"branch_predictor.kind={PREDICTOR.get(stream, 'gshare')}",) + memory


SPAN = 0x8000          # bytes of machine code counted from simulate()'s entry (the function is ~20 KB)
KEEP_OBJECT = "WHATIF_BENCH_KEEP_OBJECT"      # tells the warm-up child to write the object code it compiled


def object_name(stream: str, platform_name: str) -> str:
    """The file of the object code a stream runs: TAGE's build of the kernel is its own (``tage`` is an
    argument the other predictors leave out, so numba compiles the kernel twice)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from whatif.simulator.platform import load_platform

    tage = load_platform(platform_name, overrides(stream, platform_name)).branch_predictor.kind == "tage"
    return "simulate-tage.o" if tage else "simulate.o"


def child(stream: str, n: int, platform_name: str, run: bool, addr_file: str) -> None:
    """Build the stream, load the kernel, write simulate()'s address, and simulate the stream if ``run``."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from whatif.simulator.core import Core, microbench as MB, timing as TM
    from whatif.simulator.memory.hierarchy import MemoryHierarchy
    from whatif.simulator.platform import load_platform

    p = load_platform(platform_name, overrides(stream, platform_name))
    if stream in WORKLOADS:
        from whatif.simulator.machine import Machine
        from whatif.simulator.workload import load_workload

        workload = load_workload(WORKLOADS[stream])
        Machine(p, workload, 20_000, seed=1).run()                 # compile or load; the program built
        machine = Machine(p, workload, n, seed=1)                  # built in both runs: only run() differs
    else:
        block = MB.dependent_chain(n, p.isa) if stream == "chain" else MB.random_program(n, 7, p.isa, data_kb=256)
        Core(p).run(MB.random_program(2000, 0))                   # compile or load, outside the count
    cres = TM.simulate.overloads[TM.simulate.signatures[0]]
    Path(addr_file).write_text(str(cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)))
    obj = Path(addr_file).with_name(object_name(stream, platform_name))
    if os.environ.get(KEEP_OBJECT) == "1" and not obj.exists():
        obj.write_bytes(cres.library._get_compiled_object())     # compiled in this process (a fresh cache)
    if stream in WORKLOADS:
        if run:
            machine.run()
        return
    core = Core(p, MemoryHierarchy(p, seed=1))                   # built in both runs: only run() differs
    if run:
        core.run(block)


def address_costs(path: str, event: str = "Ir") -> Counter:
    """The count of ``event`` (``Ir``: instructions executed; ``Bcm``: conditional branches mispredicted, with
    --branch-sim=yes) in JIT-compiled code, per address, in a callgrind output written with --dump-instr=yes.
    JIT code is callgrind's object ``???`` (no file); the cost lines of calls are inclusive and skipped."""
    jit_ids, ob, addr, after_call = set(), None, 0, False
    column = 2                                      # (address, line, then the events in the header's order)
    out: Counter = Counter()
    for line in open(path):
        if line.startswith("events:"):
            column = 2 + line.split()[1:].index(event)
            continue
        if line.startswith(("ob=", "cob=")):        # an object's id is named once, in either form
            m = re.match(r"c?ob=\((\d+)\)\s*(.*)", line)
            if m.group(2).strip() == "???":
                jit_ids.add(m.group(1))
            if line[0] == "o":
                ob = m.group(1)
            continue
        if line.startswith("calls="):
            after_call = True
            continue
        if not line or line[0] not in "0+-*":
            continue
        fields = line.split()
        a = fields[0]
        if a[0] == "+":
            addr += int(a[1:], 0) if a[1:].startswith("0x") else int(a[1:])
        elif a[0] == "-":
            addr -= int(a[1:], 0) if a[1:].startswith("0x") else int(a[1:])
        elif a != "*":
            addr = int(a, 16)
        if after_call:
            after_call = False
            continue
        if len(fields) > column and ob in jit_ids:
            out[addr] += int(fields[column])
    return out


def callgrind(stream: str, n: int, platform_name: str, run: bool, work: Path, env: dict,
              event: str = "Ir") -> tuple[Counter, int]:
    """(``event``'s count in JIT code per address, simulate()'s address) of one child process under
    callgrind (:func:`address_costs`)."""
    out, addr_file = work / f"cg.{stream}.{int(run)}", work / f"addr.{stream}.{int(run)}"
    log = subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=yes", f"--callgrind-out-file={out}",
                          f"--branch-sim={'no' if event == 'Ir' else 'yes'}",
                          sys.executable, __file__, "--child", stream, str(n), platform_name, str(int(run)),
                          str(addr_file)], env=env, capture_output=True, text=True)
    if log.returncode != 0:
        sys.exit(f"callgrind failed on {stream}: {log.stderr.strip().splitlines()[-1:]}")
    per = address_costs(str(out), event)
    out.unlink()
    return per, int(addr_file.read_text())


def demangled(symbol: str) -> str:
    """``whatif.simulator.core.timing.simulate`` from numba's mangled ``_ZN6whatif9simulator...B2v6...``."""
    if not symbol.startswith("_ZN"):
        return symbol
    parts, rest = [], symbol[3:]
    while rest[:1].isdigit():
        k = re.match(r"\d+", rest).group(0)
        parts.append(rest[len(k):len(k) + int(k)])
        rest = rest[len(k) + int(k):]
    return ".".join(parts) or symbol


def where(obj: Path, offsets: Counter, n: int) -> tuple[list, list]:
    """The ``n`` costliest source lines and compiled functions of the counts at ``offsets`` (from the
    timing kernel's entry; its section of the object code is loaded as one piece)."""
    table = subprocess.run(["objdump", "-t", str(obj)], capture_output=True, text=True, check=True).stdout
    value, section = next((int(f[0], 16), f[3]) for f in map(str.split, table.splitlines())
                          if len(f) >= 6 and f[2] == "F" and demangled(f[5]) == "whatif.simulator.core.timing.simulate"
                          and not f[5].startswith(("_ZN7cpython", "cfunc")))
    dis = subprocess.run(["objdump", "-d", "-l", "--no-show-raw-insn", "-j", section, str(obj)],
                         capture_output=True, text=True, check=True).stdout
    by_line, by_function = Counter(), Counter()
    source, function = "?", "?"
    for line in dis.splitlines():
        head = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if head:
            function = demangled(head.group(1))
            continue
        at = re.match(r"^(/\S+):(\d+)", line)
        if at:
            source = f"{Path(at.group(1)).name}:{at.group(2)}"
            continue
        insn = re.match(r"^\s+([0-9a-f]+):\s", line)
        if insn:
            cost = offsets.get(int(insn.group(1), 16) - value, 0)
            by_line[source] += cost
            by_function[function] += cost
    return by_line.most_common(n), by_function.most_common(n)


def installed(program: str, package: str) -> None:
    """``program`` on PATH, installed with apt-get (Debian's ``package``) when absent."""
    if shutil.which(program):
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        sys.exit(f"no {program} on PATH; install Debian's {package} package (apt-get install {package})")
    subprocess.run(["apt-get", "install", "-y", "-q", package], check=True, stdout=subprocess.DEVNULL)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        stream, n, platform_name, run, addr_file = sys.argv[2:7]
        child(stream, int(n), platform_name, run == "1", addr_file)
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instructions", type=int, default=200_000)
    ap.add_argument("--platform", default="nehalem")
    ap.add_argument("--streams", default=",".join(STREAMS), help="which streams, comma-separated")
    ap.add_argument("--lines", type=int, default=0, metavar="N",
                    help="also the N costliest source lines and functions (a build with debug information)")
    ap.add_argument("--functions", type=int, default=0, metavar="N",
                    help="also the N costliest compiled functions of the build counted (no debug information)")
    ap.add_argument("--mispredicted", action="store_true",
                    help="count the host's mispredicted conditional branches (callgrind's branch model), "
                         "not its instructions")
    args = ap.parse_args()
    streams = args.streams.split(",")
    if not set(streams) <= set(STREAMS):
        ap.error(f"--streams: {args.streams!r}: each of {', '.join(STREAMS)}")
    for option in ("lines", "functions"):
        if getattr(args, option) < 0:
            ap.error(f"--{option}: {getattr(args, option)}: a number, 0 or more")
    if args.lines and args.functions:
        ap.error("--lines and --functions: one at a time (--lines counts a build with debug information)")
    installed("valgrind", "valgrind")
    if args.lines or args.functions:
        installed("objdump", "binutils")
    n = args.instructions
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = dict(os.environ, **CPU, NUMBA_CACHE_DIR=str(Path(tempfile.gettempdir()) / "whatif-bench-core-ir"))
        if args.lines or args.functions:              # compiled afresh, so the warm-up can keep the object code
            env.update({KEEP_OBJECT: "1", "NUMBA_CACHE_DIR": str(work / "numba-cache")})
        if args.lines:
            env.update(NUMBA_DEBUGINFO="1")
        for stream in streams:                        # compile (or load) outside valgrind, for the named CPU
            subprocess.run([sys.executable, __file__, "--child", stream, "1000", args.platform, "0",
                            str(work / "warm")], env=env, check=True)
        event, counted, digits = ("Bcm", "mispredicted host branches", 3) if args.mispredicted else \
            ("Ir", "host instructions", 1)
        print(f"{args.platform}, {n:,} simulated instructions per stream; {counted} (callgrind) per "
              f"simulated instruction{' (debug-information build)' if args.lines else ''}")
        print(f"{'stream':10s} {'simulate()':>11s} {'anchor':>8s} {'all JIT':>8s} {'anchor':>8s}")
        for stream in streams:
            per0, entry0 = callgrind(stream, n, args.platform, False, work, env, event)   # the warm-up run alone
            per1, entry1 = callgrind(stream, n, args.platform, True, work, env, event)
            total = sum(per1.values()) - sum(per0.values())
            offsets = Counter({a - entry1: v for a, v in per1.items()})
            offsets.subtract({a - entry0: v for a, v in per0.items()})
            own = sum(v for off, v in offsets.items() if 0 <= off < SPAN)
            anchored = args.platform == "nehalem" and n == 200_000
            anchor = ANCHOR[stream] if anchored and stream in ANCHOR and event == "Ir" else (float("nan"),) * 2
            print(f"{stream:10s} {own / n:11.{digits}f} {anchor[0]:8.1f} {total / n:8.{digits}f} {anchor[1]:8.1f}")
            if args.lines or args.functions:
                obj = work / object_name(stream, args.platform)
                lines, functions = where(obj, offsets, args.lines or args.functions)
                tables = (("source line", lines), ("compiled function", functions)) if args.lines else \
                    (("compiled function", functions),)
                for what, rows in tables:
                    print(f"  {stream}: the costliest {what}s, {counted} per simulated instruction")
                    for name, cost in rows:
                        if cost / n >= 0.5 / 10 ** digits:
                            print(f"  {cost / n:9.{digits}f}  {name}")


if __name__ == "__main__":
    main()
