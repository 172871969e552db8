"""Ground-truth checks of the operating-system primitives (HBench:OS, seed 003 ch. 6) for ``whatif validate``.

The primitives' costs are measured the lmbench way (:func:`simulator.os.microbench.system_vector` and
:func:`~simulator.os.microbench.measure`: a clock of microsecond resolution, iteration doubling, a
trimmed mean of repetitions) and compared with what the platform's core parameters and the
primitive's description imply, on configurations where that figure follows from first principles:
everything the primitive touches fits in the L1 caches (paths, kernel data, buffers), so after the
warm-up calls the cost is the core's execution of the instruction stream (issue: "on a platform with a
known copy bandwidth and syscall path, the measured per-byte and per-call costs equal the
first-principles figure within 5 %").

The instruction streams (:class:`simulator.os.primitives.OsCode`):

* a *path* of n instructions repeats a 16-instruction pattern -- a load at positions 1 mod 4, a store at
  3 mod 8, a not-taken check at 7 mod 16, ALU ops elsewhere -- and each instruction reads the result of
  the one two before it; loads and stores address through a base register set at entry and read no
  result, stores and checks write none.  The even positions are therefore one unbroken chain of ALU ops
  (8 per period), the odd ones short chains that each load starts afresh.  The steady-state cycles per
  period are the largest of the resource bounds (16 / the narrowest of fetch, dispatch, issue and
  retire width; per unit class, its ops / its units) and that recurrence (8 x the ALU latency);
* a call's first and last path instructions are the traps into and out of the kernel, serialising
  (:mod:`simulator.core.timing`: one dispatches after every older instruction has retired, younger ones
  after it retires): each executes alone, 1 cycle to issue plus its latency, and the path after the
  entry starts from an empty pipeline (1 cycle to issue), so a call of n instructions takes
  ``sum over traps (1 + latency) + 1 + (n - traps) x CPI_path`` cycles;
* a copy (read) pass moves ``bytes_per_iteration`` per iteration of ``instructions_per_iteration``
  instructions: load, (store,) ALU ops, the loop branch taken back.  No result is carried from one
  iteration to the next, so an iteration takes the largest of its resource bounds, the fetch bound being
  one fetch group per iteration (a taken branch ends a group).  The loop exit mispredicts once per pass
  (every iteration before it was taken); its cost is at most the fetch-to-dispatch refill,
  ``mispredict_penalty``;
* per-page work (``per_unit``) is a path without traps: ``instructions x CPI_path``.

The checks run on the out-of-order platforms (the in-order z10 pairs instructions into issue groups
and would need its own analysis) and, in full mode, on derived configurations whose binding bound
differs (a one-wide core, a two-cycle ALU), so that agreement is not a coincidence of one bound.

Where the figure holds is decided from the call's own instruction stream (:func:`set_conflicts`): a
primitive is checked only where no L1I or L1D set receives more of the call's lines than it has ways
(per-byte primitives at the largest such transfer size up to :data:`MAX_TRANSFER`).  The TLBs are held
to the same rule; where the call's pages alias in a TLB set (``OsCode`` puts a primitive's path, loop
and per-page text, its data and the benchmark's buffers at power-of-two-aligned addresses, so on
2- and 4-way TLBs up to five of them share set 0 and miss on every call) the row is measured with
those TLBs fully associative and says so in its name and detail: the figure is the core's execution of
the stream, not the layout's TLB refills.  The memory-bound regime (buffers beyond the caches) is not
checked: the memory model has no bandwidth limit (``memory.bandwidth_gb_s`` is not read by the
simulator), so a copy beyond the caches has no first-principles figure yet.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from whatif.scenarios.checks.registry import CheckResult, register_check
from whatif.simulator.core.model import UNIT_PREFERENCE
from whatif.simulator.isa import OP_ALU, OP_BRANCH, OP_LOAD, OP_NAMES, OP_STORE, isa_for
from whatif.simulator.os.kernel import Kernel
from whatif.simulator.os.microbench import FILE_PAGES, USER_BUFFER, MicrobenchSettings, measure, system_vector
from whatif.simulator.os.primitives import OsCode, PerByte, PrimitiveSpec, load_primitives
from whatif.simulator.platform import Platform, load_platform, platform_names, with_overrides

TOLERANCE = 0.05
PERIOD = 16                         # the path's op pattern repeats every 16 instructions
QUICK_PLATFORMS = ("mpc7447a", "nehalem")
QUICK_CALLS = ("other", "stat")
QUICK_BYTES = ("copy", "file_read")
# derived configurations (full mode): a different bound binds than on the shipped platform
VARIANTS = {"mpc7447a, one-wide": ("mpc7447a", (("core.fetch_width", 1), ("core.dispatch_width", 1),
                                                ("core.issue_width", 1), ("core.retire_width", 1))),
            "nehalem, two-cycle ALU": ("nehalem", (("core.units.ialu.latency", 2),))}
MAX_TRANSFER = 8192                 # bytes per call of the per-byte measurements, at most ...
MIN_TRANSFER = 512                  # ... and at least (else the primitive is not checked)
# bare loops: the per-byte cost of a copy (and of a read pass) alone, no system-call path
LOOPS = {"copy": PrimitiveSpec(unit="byte", path_instructions=0, data_kb=0,
                               per_byte=PerByte(copies=1, bytes_per_iteration=8, instructions_per_iteration=4)),
         "read": PrimitiveSpec(unit="byte", path_instructions=0, data_kb=0,
                               per_byte=PerByte(copies=0, reads=1, bytes_per_iteration=8,
                                                instructions_per_iteration=4))}


# ---------------------------------------------------------------------------------- first principles
def path_op(k: int) -> int:
    """The op class at position ``k`` of a path."""
    if k % 4 == 1:
        return OP_LOAD
    if k % 8 == 3:
        return OP_STORE
    if k % 16 == 7:
        return OP_BRANCH
    return OP_ALU


def _unit(platform: Platform, op: int) -> str:
    units = platform.core.units
    return next(u for u in UNIT_PREFERENCE[OP_NAMES[op]] if u in units)


def op_latency(platform: Platform, op: int) -> int:
    """Cycles from issue to result: a load's is the L1D's load-to-use latency, a store's 1."""
    if op == OP_LOAD:
        return platform.caches[platform.top_cache("data")].latency_cycles
    if op == OP_STORE:
        return 1
    return platform.core.units[_unit(platform, op)].latency


def _resource_bounds(platform: Platform, ops: list[int], width: float) -> dict[str, float]:
    """Cycles a sequence of ``ops`` needs at least: by width and per unit class."""
    bounds = {"width": len(ops) / width}
    for name in {_unit(platform, op) for op in ops}:
        u = platform.core.units[name]
        k = sum(_unit(platform, op) == name for op in ops)
        bounds[name] = k * (1 if u.pipelined else u.latency) / u.count
    return bounds


def path_cpi(platform: Platform) -> tuple[float, str]:
    """Steady-state cycles per path instruction on an out-of-order core, and the binding bound."""
    core = platform.core
    ops = [path_op(k) for k in range(PERIOD)]
    bounds = _resource_bounds(platform, ops, min(core.fetch_width, core.dispatch_width, core.issue_width,
                                                 core.retire_width))
    for parity in (0, 1):
        chain = ops[parity::2]
        if all(op == OP_ALU for op in chain):          # loads, stores and checks break a chain
            bounds[f"{'even' if parity == 0 else 'odd'} ALU chain"] = len(chain) * op_latency(platform, OP_ALU)
    name = max(bounds, key=bounds.get)
    return bounds[name] / PERIOD, name


def loop_cycles(platform: Platform, per_byte: PerByte, copy: bool) -> tuple[float, str]:
    """Cycles per iteration of a copy (``copy``) or read pass, and the binding bound."""
    core = platform.core
    ipi = per_byte.instructions_per_iteration
    ops = [OP_LOAD] + ([OP_STORE] if copy else []) + [OP_ALU] * (ipi - 2 - copy) + [OP_BRANCH]
    bounds = _resource_bounds(platform, ops, min(core.dispatch_width, core.issue_width, core.retire_width))
    bounds["fetch"] = float(math.ceil(ipi / core.fetch_width))     # the taken loop branch ends a fetch group
    name = max(bounds, key=bounds.get)
    return bounds[name], name


def path_cycles(platform: Platform, n: int, traps: int) -> float:
    """Cycles of a path of ``n`` instructions whose first and (with two) last instructions trap."""
    if n == 0:
        return 0.0
    cpi, _ = path_cpi(platform)
    at = [0, n - 1][:min(traps, 2, n)]
    if not at:
        return n * cpi
    return sum(1 + op_latency(platform, path_op(k)) for k in at) + 1 + (n - len(at)) * cpi


def expected_call_cycles(platform: Platform, spec: PrimitiveSpec, size: int = 0) -> float:
    """First-principles cycles of one warm call of ``spec`` moving ``size`` bytes (everything in L1)."""
    if spec.page_table_entries or spec.tlb_flush:
        raise ValueError("page-table copies and TLB flushes have no L1-resident first-principles figure")
    cycles = path_cycles(platform, spec.path_instructions, spec.traps)
    pb, pu = spec.per_byte, spec.per_unit
    if pb is not None and size > 0:
        iters = math.ceil(size / pb.bytes_per_iteration)
        for copy, passes in ((True, pb.copies), (False, pb.reads)):
            per_iter, _ = loop_cycles(platform, pb, copy)
            cycles += passes * (iters * per_iter + platform.core.mispredict_penalty)
    if pu is not None:
        units = pu.pages if pu.pages is not None else (math.ceil(size / pu.bytes) if size > 0 else 0)
        cycles += units * path_cycles(platform, pu.instructions, 0)
    return cycles


def _conflicts(addrs: np.ndarray, granule_bits: int, sets: int, ways: int, what: str) -> str:
    """Where more distinct granules (lines, pages) of ``addrs`` map to one of ``sets`` sets than it has
    ``ways``: how many, else ''."""
    tags = np.unique(addrs >> np.uint64(granule_bits))
    per_set = np.bincount((tags % np.uint64(sets)).astype(np.int64), minlength=sets)
    worst = int(np.argmax(per_set))
    if per_set[worst] <= ways:
        return ""
    return f"{per_set[worst]} of its {len(tags)} {what} share set {worst} of the {ways}-way"


def set_conflicts(platform: Platform, code: OsCode, name: str, size: int = 0) -> dict[str, dict[str, str]]:
    """The L1 caches and the TLBs with a set that more of one call's lines (pages) map to than the set
    has ways -- lines or pages the call evicts from each other on every call: ``{"caches": {name: how},
    "tlbs": {name: how}}``.  Addresses are virtual: the L1 caches are indexed within the page offset."""
    blk = code.block(name, size, FILE_PAGES, USER_BUFFER)
    streams = {"instruction": blk.pc, "data": blk.mem_addr[blk.mem_size > 0]}
    out: dict[str, dict[str, str]] = {"caches": {}, "tlbs": {}}
    for side, addrs in streams.items():
        top = platform.top_cache(side)
        c = platform.caches[top]
        sets = int(c.size_kb * 1024) // (c.line_bytes * c.associativity)
        how = _conflicts(addrs, int(math.log2(c.line_bytes)), sets, c.associativity, "lines")
        if how:
            out["caches"][top] = f"{how} {top}"
        page_bits = int(math.log2(platform.page_kb(side) * 1024))
        for t in platform.tlb_chain(side):
            spec = platform.tlbs[t]
            how = _conflicts(addrs, page_bits, spec.entries // spec.associativity, spec.associativity,
                             f"{side} pages")
            if how:
                out["tlbs"][t] = f"{how} {t}"
    return out


def transfer_bytes(platform: Platform, code: OsCode, name: str) -> int:
    """The largest power of two from :data:`MAX_TRANSFER` down to :data:`MIN_TRANSFER` whose call is
    L1-resident (no L1 set holds more of its lines than the set has ways); 0 if none is."""
    size = MAX_TRANSFER
    while size >= MIN_TRANSFER and set_conflicts(platform, code, name, size)["caches"]:
        size //= 2
    return size if size >= MIN_TRANSFER else 0


def without_tlb_conflicts(platform: Platform, conflicts: dict[str, str]) -> Platform:
    """``platform`` with the TLBs of ``conflicts`` fully associative (same entries)."""
    return with_overrides(platform, [(f"tlbs.{t}.associativity", platform.tlbs[t].entries) for t in conflicts],
                          source=platform.name)


# ---------------------------------------------------------------------------------- the checks
@lru_cache(maxsize=None)
def _platform(name: str, overrides: tuple = ()) -> Platform:
    return load_platform(name, list(overrides))


def configurations(quick: bool) -> dict[str, Platform]:
    """Label -> platform: the out-of-order platforms (two in quick mode), and in full mode the
    :data:`VARIANTS`."""
    names = QUICK_PLATFORMS if quick else tuple(n for n in platform_names()
                                                if _platform(n).core.kind == "out_of_order")
    out = {n: _platform(n) for n in names}
    if not quick:
        out.update({label: _platform(base, ov) for label, (base, ov) in VARIANTS.items()})
    return out


def _setting(platform: Platform, label: str, code: OsCode, name: str, size: int = 0) -> tuple[Platform, str, str]:
    """The platform to measure ``name`` on, its label and a note: where the call's pages alias in a TLB
    set, its TLBs fully associative (the first-principles figure assumes a warm call misses no TLB), said
    in the label and the note."""
    conflicts = set_conflicts(platform, code, name, size)["tlbs"]
    if not conflicts:
        return platform, label, ""
    return (without_tlb_conflicts(platform, conflicts), f"{label} with a fully associative {'/'.join(conflicts)}",
            "; on the shipped TLBs " + ", ".join(conflicts.values()))


def _row(kind: str, label: str, what: str, expected_ns: float, measured_ns: float, detail: str) -> CheckResult:
    ok = abs(measured_ns / expected_ns - 1) <= TOLERANCE
    return CheckResult(f"os: {what} on {label}, {kind}", round(expected_ns, 4), round(measured_ns, 4), ok,
                       f"{detail}; off by {100 * (measured_ns / expected_ns - 1):+.1f} % (tolerance "
                       f"{100 * TOLERANCE:.0f} %)")


@register_check("os: a system call's path costs its instructions at the core's rate plus its traps")
def per_call(quick: bool) -> list[CheckResult]:
    out = []
    specs = load_primitives()
    for label, platform in configurations(quick).items():
        code = OsCode(isa_for(platform.isa))
        names = [n for n, s in specs.items() if s.unit == "call" and not (s.page_table_entries or s.tlb_flush)
                 and not set_conflicts(platform, code, n)["caches"]]
        if quick:
            names = [n for n in names if n in QUICK_CALLS]
        for name in names:
            p, where, note = _setting(platform, label, code, name)
            row = system_vector(p, [name]).iloc[0]
            spec = specs[name]
            cpi, bound = path_cpi(p)
            cycles = expected_call_cycles(p, spec)
            out.append(_row("ns per call", where, name, cycles / p.clock_ghz, row["cost"] * 1e3,
                            f"{spec.path_instructions} path instructions at CPI {cpi:.3f} ({bound} bound), "
                            f"{spec.traps} serialising traps: {cycles:.1f} cycles at {p.clock_ghz} GHz{note}"))
    return out


def _per_byte_detail(spec: PrimitiveSpec, p: Platform, cycles: float) -> str:
    pb = spec.per_byte
    parts = []
    for copy, passes in ((True, pb.copies), (False, pb.reads)):
        if passes:
            per_iter, bound = loop_cycles(p, pb, copy)
            parts.append(f"{passes} {'copy' if copy else 'read'} pass{'es' if passes > 1 else ''} of {per_iter:g} "
                         f"cycles per {pb.bytes_per_iteration} bytes ({bound} bound)")
    if spec.path_instructions:
        parts.append(f"a {spec.path_instructions}-instruction path with {spec.traps} traps")
    if spec.per_unit is not None:
        parts.append(f"{spec.per_unit.instructions} instructions per {spec.per_unit.bytes} bytes")
    return ", ".join(parts) + f", an exit mispredict per pass: {cycles:.0f} cycles per call at {p.clock_ghz} GHz"


@register_check("os: a copy loop's per-byte cost is its iteration at the core's rate over its bytes")
def per_byte(quick: bool) -> list[CheckResult]:
    out = []
    specs = load_primitives()
    for label, platform in configurations(quick).items():
        isa = isa_for(platform.isa)
        codes = {"loops": OsCode(isa, LOOPS), "shipped": OsCode(isa)}
        candidates = {**{n: ("loops", s) for n, s in LOOPS.items()},
                      **{n: ("shipped", s) for n, s in specs.items() if s.unit == "byte"}}
        if quick:
            candidates = {n: c for n, c in candidates.items() if n in QUICK_BYTES}
        for name, (which, spec) in candidates.items():
            size = transfer_bytes(platform, codes[which], name)
            if not size:
                continue
            settings = MicrobenchSettings(transfer_bytes=size)
            p, where, note = _setting(platform, label, codes[which], name, size)
            if which == "loops":
                row = measure(Kernel(p, code=codes[which]), name, settings)
            else:
                row = system_vector(p, [name], settings).iloc[0].to_dict()
            cycles = expected_call_cycles(p, spec, size)
            out.append(_row("ns per byte", where, f"{name} of {size} bytes", cycles / size / p.clock_ghz,
                            row["cost"] * 1e3, _per_byte_detail(spec, p, cycles) + note))
    return out
