"""An application run on a JVM configuration: its program in order, the simulated running time, and
the profile (seed 003 §4.2.1, §4.3).

The program (:func:`program`) is the application's description made concrete with the scenario's seed:
its user methods (sizes drawn around ``mean_size``; invocations over them Zipf-like, the hot methods
few; bytecodes per invocation in proportion to size) and every primitive call, in one random order.
:func:`run_application` executes it on a fresh :class:`~simulator.jvm.vm.JavaVM` with a
:class:`~simulator.jvm.profiler.JvmpiProfiler` attached: a primitive call invokes its method from user
code, a user invocation runs the user method -- interpreted or compiled as the JVM decides, its
compilation on the core.  The simulated running time is the core's cycles for the whole program; the
cycles spent inside primitive calls are system-class time and the rest user-class time (Tables 4-5/4-6;
JIT and GC time where they were triggered).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.jvm.microbench import primitive_table
from whatif.simulator.jvm.profiler import JIT_COMPILE, USER_PREFIX, JvmpiProfiler, jit_bytecodes
from whatif.simulator.jvm.spec import ApplicationSpec, MethodSpec, application as app_spec, jvm as jvm_spec
from whatif.simulator.jvm.vm import JavaVM
from whatif.simulator.platform import Platform

ZIPF = 1.1                      # invocation skew over user methods (estimate)
SIZE_SIGMA = 0.6                # log-normal spread of user method sizes (estimate)
MAX_EVENTS = 5_000_000
USER_CODE = "user code"      # the application's own methods, in the in-application costs


@dataclass(frozen=True)
class Program:
    methods: dict[str, MethodSpec]        # user methods
    events: list[tuple[str, str, int]]    # ("api", method, units) or ("user", method, 0), in program order
    calls: dict[str, int]                 # primitive label -> calls
    units: dict[str, int]                 # primitive label -> units (per-unit primitives)
    user_bytecodes: int
    user_invocations: int


def _scaled(n: int, scale: float) -> int:
    return max(1, int(round(n * scale))) if n else 0


def program(app: ApplicationSpec, scale: float = 1.0, seed: int = 0) -> Program:
    """The application's program at ``scale`` (every count scaled, at least one), drawn with ``seed``."""
    if not 0 < scale <= 1:
        raise SimulatorInputError(f"The 'scale' parameter of program must be in (0, 1]. Got {scale!r} instead.")
    rng = np.random.default_rng(seed)
    table = primitive_table()
    u = app.user
    m = _scaled(u.methods, scale) if scale < 1 else u.methods    # a shorter run of a smaller program: its code
    m = max(m, 2)                                                # scales with it, so JIT time keeps its share
    sizes = np.maximum(4, np.round(rng.lognormal(np.log(u.mean_size), SIZE_SIGMA, m))).astype(int)
    weights = 1.0 / np.arange(1, m + 1) ** ZIPF
    weights = rng.permutation(weights / weights.sum())
    inv = rng.multinomial(_scaled(u.invocations, scale), weights)
    total_bc = _scaled(u.bytecodes, scale)
    per = total_bc * sizes / max(1, float((inv * sizes).sum()))
    methods, events = {}, []
    user_bc = 0
    for i in range(m):
        if not inv[i]:
            continue
        name = f"{USER_PREFIX}{i}"
        b = max(1, int(round(per[i])))
        methods[name] = MethodSpec(size=int(sizes[i]), bytecodes=b)
        events += [("user", name, 0)] * int(inv[i])
        user_bc += b * int(inv[i])
    calls, units = {}, {}
    for label, use in app.uses.items():
        method, unit = table[label]
        n = _scaled(use.count, scale)
        k = use.units if unit in ("char", "byte") else 0
        events += [("api", method, k)] * n
        calls[label] = n
        if k:
            units[label] = n * k
    if len(events) > MAX_EVENTS:
        raise SimulatorInputError(f"application program of {len(events):,} events; at most {MAX_EVENTS:,} "
                                  f"(lower the scale)")
    order = rng.permutation(len(events))
    return Program(methods, [events[i] for i in order], calls, units, user_bc, int(inv.sum()))


def run_application(platform: Platform, jvm: str, name: str, scale: float = 1.0, seed: int = 0,
                    run_seed: int | None = None, functional: bool = False) -> dict:
    """Run application ``name`` on ``jvm`` x ``platform``; the simulated time and split, and the profile.
    ``functional``: a cache simulation of the run instead (no timing: times are 0), for its misses."""
    app = app_spec(name)
    prog = program(app, scale, seed)
    prof = JvmpiProfiler()
    vm = JavaVM(platform, jvm, seed=seed if run_seed is None else run_seed, class_bytes=app.class_bytes,
                profiler=prof, extra_methods=prog.methods, functional=functional)
    memory = vm.core.memory
    system = user = 0
    # cycles each primitive (and the user code) took inside the run, JIT compilations apart: the system
    # vector in context, against the microbenchmarks' warm loops
    in_app: dict[str, list[int]] = {}
    label_of = {m: label for label, (m, _) in primitive_table().items()}
    for kind, method, units in prog.events:
        before, jit_before = vm.cycles, vm.jit_cycles
        reads, jit_reads = memory.memory_demand_reads(), vm.jit_misses
        vm.invoke(method, units)
        spent = vm.cycles - before
        if kind == "api":
            system += spent
        else:
            prof.user_code(prog.methods[method].bytecodes)
            user += spent
        acc = in_app.setdefault(label_of[method] if kind == "api" else USER_CODE, [0, 0, 0, 0])
        acc[0] += 1
        acc[1] += units
        acc[2] += spent - (vm.jit_cycles - jit_before)
        acc[3] += memory.memory_demand_reads() - reads - (vm.jit_misses - jit_reads)
    spec = jvm_spec(jvm)
    methods = prof.method_table({k: v.size for k, v in vm.methods.items()},
                                {k for k, v in vm.methods.items() if v.native})
    cycles = vm.cycles
    return {"application": name, "suite": app.suite, "seconds": vm.seconds(cycles), "cycles": int(cycles),
            "system_seconds": vm.seconds(system), "user_seconds": vm.seconds(user),
            "jit_seconds": vm.seconds(vm.jit_cycles), "gc_seconds": vm.seconds(vm.gc_cycles),
            "collections": vm.collections, "compiled_bytecodes": vm.compiled_bytecodes,
            "j_of_n_s": jit_bytecodes(methods, spec.jit.policy, spec.jit.threshold, tuple(spec.jit.never_compile)),
            "instructions": int(vm.core.instructions), "classes_loaded": vm.classes_loaded,
            "calls": prog.calls, "units": prog.units, "user_bytecodes": prog.user_bytecodes,
            "user_invocations": prog.user_invocations,
            "application_vector": prof.application_vector(name, primitive_table()), "methods": methods,
            "in_application": pd.DataFrame(
                [{"primitive": k, "calls": c, "units": u, "seconds": vm.seconds(cy), "misses": mi}
                 for k, (c, u, cy, mi) in in_app.items()]
                + [{"primitive": JIT_COMPILE, "calls": len(vm.compiled), "units": vm.compiled_bytecodes,
                    "seconds": vm.seconds(vm.jit_cycles), "misses": vm.jit_misses}],
                columns=["primitive", "calls", "units", "seconds", "misses"]),
            "profiler": prof}
