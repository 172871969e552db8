"""HBench:Java microbenchmarks (seed 003 §4.2.2-4.2.3): a JVM configuration's system vector, measured.

Each primitive runs in a loop on a fresh :class:`~simulator.jvm.vm.JavaVM` of the configuration, with the
measurement discipline of :mod:`simulator.os.microbench`: a clock of finite resolution, the iteration
count doubled until a measurement spans ``min_ticks`` ticks, ``repetitions`` measurements, their trimmed
mean.  ``warmup_calls`` calls come first (a first-call JIT compiles then).  Under an adaptive (threshold)
JIT every primitive is measured twice: on a fresh VM, whose short loops stay below the threshold (the
interpreted cost), and on a VM warmed past the threshold (``label [compiled]``: the cost once the JIT has
compiled the primitive's methods) -- what the seed's proposed JVMPI compile events (§4.2.3) would let a
benchmark tell apart; the profiler splits an application's calls the same way.
Per-unit primitives (chars, bytes) are called with ``transfer_bytes`` units per call and reported per
unit.  ``Class.forName()`` and ``ClassLoader.loadClass()`` load a new class every iteration (§4.2.3: the
first-time cost is the true cost), of ``class_bytes`` bytes.

Where a cost depends on an argument, :func:`cost_functions` measures C(s) at several sizes (§4.2.2: "measure
several data points ... and extrapolate ... based on the actual parameters"): per-unit primitives per
call at 8..4096 units, class loading per class size, user bytecode per code working set; the profiler's
N(s) says at which sizes an application called them.

Besides the API methods, the execution engine's and the JIT's primitives (§4.1.3): a user-class method
of :data:`LOOP_SIZE` bytecodes executing :data:`LOOP_BYTECODES` per call (µs per bytecode), the call of
an almost empty method (µs per invocation), and compiling fresh methods of :data:`COMPILE_SIZE`
bytecodes through a java.lang.Compiler-style entry (µs per bytecode compiled; 0 without a JIT).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
from scipy import stats

from whatif.simulator.jvm.profiler import COMPILED, JIT_COMPILE, USER_BYTECODE, USER_INVOKE
from whatif.simulator.jvm.spec import JvmSpec, MethodSpec, jvm as jvm_spec, load_methods
from whatif.simulator.jvm.vm import JavaVM
from whatif.simulator.os.microbench import COLD_CALLS, MicrobenchSettings, _clock, cold_miss_penalty
from whatif.simulator.platform import Platform

LOOP_SIZE, LOOP_BYTECODES = 80, 400
EMPTY_SIZE = 4
COMPILE_SIZE = 200
JAVA_SETTINGS = MicrobenchSettings(transfer_bytes=8192)
COST_SIZES = (8, 64, 512, 4096)          # units per call at which C(s) of a per-unit primitive is measured
CLASS_SIZES = (512, 1024, 2048, 4096, 8192, 16384)   # class-file bytes at which class loading's C(s) is measured
FOOTPRINTS = (80, 640, 5120, 20480)          # user-code working sets (bytecodes) at which bytecode's C(s) is measured


def _measure(vm: JavaVM, op, settings: MicrobenchSettings, per: float, min_calls: int = 1, cold: int = 0) -> dict:
    """The loop's cost per count (µs), its iterations, per-call cost and spread, and its memory demand
    reads per count (``misses``: what a warm call still misses in the last level).  With ``cold`` > 0, as
    many single calls after every cache and TLB has been flushed give ``miss_penalty``: µs per miss beyond
    the warm call's, (cold - warm) / (cold misses - warm misses) -- the cache-specific cost of the hybrid
    methodology (§3.1.3)."""
    memory = vm.core.memory

    def run(n: int) -> float:
        start = vm.seconds(vm.cycles)
        for _ in range(n):
            op()
        return _clock(vm.seconds(vm.cycles), settings.timer_resolution_s) - _clock(start, settings.timer_resolution_s)

    for _ in range(settings.warmup_calls):
        op()
    n = max(1, int(min_calls))
    while run(n) < settings.min_ticks * settings.timer_resolution_s and n < settings.max_iterations:
        n *= 2
    reads = memory.memory_demand_reads()
    per_call = np.array([run(n) / n for _ in range(settings.repetitions)])
    warm_misses = (memory.memory_demand_reads() - reads) / (settings.repetitions * n)
    cost = float(stats.trim_mean(per_call, settings.trim / 2)) * 1e6
    out = {"cost": cost / per, "iterations": n, "per_call_us": cost, "spread_us": float(np.ptp(per_call) * 1e6),
           "misses": warm_misses / per}
    if cold:
        out["miss_penalty"] = cold_miss_penalty(memory, op, lambda: vm.cycles, vm.seconds, cost, warm_misses, cold)
    return out


def primitive_table() -> dict[str, tuple[str, str]]:
    """label -> (method, unit) of every API primitive."""
    return {p.label: (p.method, p.unit) for p in load_methods().primitives.values()}


def class_loading_primitives() -> tuple[str, ...]:
    """Labels of the primitives each call of which loads a class (their C(s) is over the class's size)."""
    return tuple(p.label for p in load_methods().primitives.values() if p.class_loading)


def _round_robin(vm: JavaVM, count: int, compile_all: bool):
    """``count`` user-class methods of :data:`LOOP_SIZE` bytecodes, each run once through per call, called
    in turn (compiled first if ``compile_all``): one call of the next method."""
    names = [f"user.bench.Code{i}" for i in range(count)]
    for name in names:
        vm.define(name, MethodSpec(size=LOOP_SIZE, bytecodes=LOOP_SIZE))
        if compile_all:
            vm.compile(name)
    turn = iter(range(1 << 62))
    return lambda: vm.invoke(names[next(turn) % count])


def cost_functions(platform: Platform, jvm: str | JvmSpec, settings: MicrobenchSettings = JAVA_SETTINGS,
                   seed: int = 0, class_bytes: int = 2048, sizes: tuple[int, ...] = COST_SIZES,
                   class_sizes: tuple[int, ...] = CLASS_SIZES,
                   footprints: tuple[int, ...] = FOOTPRINTS) -> pd.DataFrame:
    """C(s) of every system-vector element whose cost depends on a size (seed 003 §4.2.2: "measure several
    data points ... and extrapolate ... based on the actual parameters"):

    * a per-unit primitive (chars, bytes) called with ``s`` units, at each of ``sizes``: µs per *call*, so a
      call's fixed part is not spread over a bandwidth loop's transfer size;
    * a class-loading primitive loading classes of ``s`` bytes, at each of ``class_sizes``: µs per call;
    * user-class bytecode in a code working set of ``s`` bytecodes, at each of ``footprints``: µs per
      bytecode of :data:`LOOP_SIZE`-bytecode methods run straight through, called in turn -- the warm
      loop's cost once the code no longer stays in the instruction cache.

    Under an adaptive JIT each also once compiled (``label [compiled]``).  ``jvm`` is a JVM's name or its
    description (a what-if JVM).  Rows (system, primitive, size, cost, iterations): ``cost`` per count of
    the application's size distribution (a call, a bytecode)."""
    settings.check()
    spec = jvm if isinstance(jvm, JvmSpec) else jvm_spec(jvm)
    loading = class_loading_primitives()
    plans = []             # (label, size, class bytes, per, calls per measurement at least, op of a VM)
    for label, (method, per) in primitive_table().items():
        if per in ("char", "byte"):
            # a measurement moves at least transfer_bytes units, so a buffered reader's refills (one per
            # buffer) are amortised over the calls at small sizes as over an application's
            plans += [(label, s, class_bytes, 1, -(-settings.transfer_bytes // s),
                       lambda vm, compiled, m=method, u=s: (lambda: vm.invoke(m, u))) for s in sizes]
        elif label in loading:
            plans += [(label, s, s, 1, 1, lambda vm, compiled, m=method: (lambda: vm.invoke(m)))
                      for s in class_sizes]
    for f in footprints:
        k = max(1, f // LOOP_SIZE)
        plans.append((USER_BYTECODE, k * LOOP_SIZE, class_bytes, LOOP_SIZE, 2 * k,
                      lambda vm, compiled, k=k: _round_robin(vm, k, compiled and spec.jit.policy != "none")))
    rows = []
    for label, size, cls, per, min_calls, make in plans:
        variants = [(label, settings, spec, spec.jit.policy == "first-call")]
        if spec.jit.policy == "threshold":
            # interpreted: a loop long enough to amortise refills would cross the threshold, so the JIT
            # is held off (the seed's compile events would tell the two apart, §4.2.3)
            held = spec.model_copy(update={"jit": spec.jit.model_copy(update={"policy": "none"})})
            variants = [(label, settings, held, False),
                        (label + COMPILED, replace(settings, warmup_calls=spec.jit.threshold
                                                   + settings.warmup_calls), spec, True)]
        for name, how, vm_spec, compiled in variants:
            vm = JavaVM(platform, vm_spec, seed=seed, class_bytes=cls)
            op = make(vm, compiled)
            if label == USER_BYTECODE:        # every method once round before the loop (their first calls)
                how = replace(how, warmup_calls=max(how.warmup_calls, min_calls // 2))
            row = _measure(vm, op, how, per, min_calls=min_calls)
            rows.append({"system": "", "primitive": name, "size": float(size), "cost": row["cost"],
                         "iterations": row["iterations"], "misses": row["misses"]})
    return pd.DataFrame(rows, columns=["system", "primitive", "size", "cost", "iterations", "misses"])


def system_vector(platform: Platform, jvm: str, settings: MicrobenchSettings = JAVA_SETTINGS, seed: int = 0,
                  class_bytes: int = 2048, primitives: list[str] | None = None, progress=None) -> pd.DataFrame:
    """Every primitive measured on ``jvm`` x ``platform`` (each on a fresh VM): rows (system, primitive,
    unit, cost, iterations, per_call_us, spread_us)."""
    settings.check()
    spec = jvm_spec(jvm)
    rows = []
    table = primitive_table()
    names = list(table) + [USER_BYTECODE, USER_INVOKE, JIT_COMPILE] if primitives is None else primitives
    for label in names:
        vm = JavaVM(platform, spec, seed=seed, class_bytes=class_bytes)
        if label in (USER_BYTECODE, USER_INVOKE):
            name, size, bytecodes, unit = (("user.bench.Loop", LOOP_SIZE, LOOP_BYTECODES, "us/bytecode")
                                           if label == USER_BYTECODE else ("user.bench.Empty", EMPTY_SIZE, 1, "us"))
            vm.define(name, MethodSpec(size=size, bytecodes=size if label == USER_INVOKE else bytecodes))
            row = _measure(vm, lambda n=name: vm.invoke(n), settings, bytecodes, cold=COLD_CALLS)
            if spec.jit.policy == "threshold":      # and compiled, warmed past the threshold
                rows.append({"system": "", "primitive": label, "unit": unit, **row})
                vm.define(name + "Warm", MethodSpec(size=size, bytecodes=size if label == USER_INVOKE else bytecodes))
                row = _measure(vm, lambda n=name + "Warm": vm.invoke(n),
                               replace(settings, warmup_calls=spec.jit.threshold + settings.warmup_calls), bytecodes,
                               cold=COLD_CALLS)
                label = label + COMPILED
        elif label == JIT_COMPILE:
            if spec.jit.policy == "none":
                row, unit = ({"cost": 0.0, "iterations": 0, "per_call_us": 0.0, "spread_us": 0.0, "misses": 0.0,
                              "miss_penalty": 0.0}, "us/bytecode")
            else:
                fresh = iter(range(1 << 30))

                def compile_one(vm=vm, fresh=fresh):
                    name = f"user.bench.Compile{next(fresh)}"
                    vm.define(name, MethodSpec(size=COMPILE_SIZE, bytecodes=1))
                    vm.compile(name)
                row, unit = _measure(vm, compile_one, settings, COMPILE_SIZE, cold=COLD_CALLS), "us/bytecode"
        else:
            method, per = table[label]
            units = settings.transfer_bytes if per in ("char", "byte") else 0
            row = _measure(vm, lambda m=method, u=units: vm.invoke(m, u), settings, units or 1, cold=COLD_CALLS)
            unit = f"us/{per}" if units else "us"
            if spec.jit.policy == "threshold":
                rows.append({"system": "", "primitive": label, "unit": unit, **row})
                # an adaptive JIT: the same primitive once the JIT has compiled its methods (warmed past
                # the threshold; a JVMPI compile event would say when, §4.2.3)
                warm_vm = JavaVM(platform, spec, seed=seed, class_bytes=class_bytes)
                warm = _measure(warm_vm, lambda m=method, u=units: warm_vm.invoke(m, u),
                                replace(settings, warmup_calls=spec.jit.threshold + settings.warmup_calls),
                                units or 1, cold=COLD_CALLS)
                row, label = warm, label + COMPILED
        rows.append({"system": "", "primitive": label, "unit": unit, **row})
        if progress is not None:
            progress(1)
    return pd.DataFrame(rows)
