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
from whatif.simulator.jvm.spec import MethodSpec, jvm as jvm_spec, load_methods
from whatif.simulator.jvm.vm import JavaVM
from whatif.simulator.os.microbench import MicrobenchSettings, _clock
from whatif.simulator.platform import Platform

LOOP_SIZE, LOOP_BYTECODES = 80, 400
EMPTY_SIZE = 4
COMPILE_SIZE = 200
JAVA_SETTINGS = MicrobenchSettings(transfer_bytes=8192)


def _measure(vm: JavaVM, op, settings: MicrobenchSettings, per: float) -> dict:
    def run(n: int) -> float:
        start = vm.seconds(vm.cycles)
        for _ in range(n):
            op()
        return _clock(vm.seconds(vm.cycles), settings.timer_resolution_s) - _clock(start, settings.timer_resolution_s)

    for _ in range(settings.warmup_calls):
        op()
    n = 1
    while run(n) < settings.min_ticks * settings.timer_resolution_s and n < settings.max_iterations:
        n *= 2
    per_call = np.array([run(n) / n for _ in range(settings.repetitions)])
    cost = float(stats.trim_mean(per_call, settings.trim / 2)) * 1e6
    return {"cost": cost / per, "iterations": n, "per_call_us": cost, "spread_us": float(np.ptp(per_call) * 1e6)}


def primitive_table() -> dict[str, tuple[str, str]]:
    """label -> (method, unit) of every API primitive."""
    return {p.label: (p.method, p.unit) for p in load_methods().primitives.values()}


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
            row = _measure(vm, lambda n=name: vm.invoke(n), settings, bytecodes)
            if spec.jit.policy == "threshold":      # and compiled, warmed past the threshold
                rows.append({"system": "", "primitive": label, "unit": unit, **row})
                vm.define(name + "Warm", MethodSpec(size=size, bytecodes=size if label == USER_INVOKE else bytecodes))
                row = _measure(vm, lambda n=name + "Warm": vm.invoke(n),
                               replace(settings, warmup_calls=spec.jit.threshold + settings.warmup_calls), bytecodes)
                label = label + COMPILED
        elif label == JIT_COMPILE:
            if spec.jit.policy == "none":
                row, unit = {"cost": 0.0, "iterations": 0, "per_call_us": 0.0, "spread_us": 0.0}, "us/bytecode"
            else:
                fresh = iter(range(1 << 30))

                def compile_one(vm=vm, fresh=fresh):
                    name = f"user.bench.Compile{next(fresh)}"
                    vm.define(name, MethodSpec(size=COMPILE_SIZE, bytecodes=1))
                    vm.compile(name)
                row, unit = _measure(vm, compile_one, settings, COMPILE_SIZE), "us/bytecode"
        else:
            method, per = table[label]
            units = settings.transfer_bytes if per in ("char", "byte") else 0
            row = _measure(vm, lambda m=method, u=units: vm.invoke(m, u), settings, units or 1)
            unit = f"us/{per}" if units else "us"
            if spec.jit.policy == "threshold":
                rows.append({"system": "", "primitive": label, "unit": unit, **row})
                # an adaptive JIT: the same primitive once the JIT has compiled its methods (warmed past
                # the threshold; a JVMPI compile event would say when, §4.2.3)
                warm_vm = JavaVM(platform, spec, seed=seed, class_bytes=class_bytes)
                warm = _measure(warm_vm, lambda m=method, u=units: warm_vm.invoke(m, u),
                                replace(settings, warmup_calls=spec.jit.threshold + settings.warmup_calls),
                                units or 1)
                row, label = warm, label + COMPILED
        rows.append({"system": "", "primitive": label, "unit": unit, **row})
        if progress is not None:
            progress(1)
    return pd.DataFrame(rows)
