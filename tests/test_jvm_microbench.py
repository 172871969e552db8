"""The JVM model's instruction streams and HBench:Java microbenchmarks: every primitive's executed
instructions against a first-principles count from the method, JVM and OS descriptions, and its measured
cost against the cycles of one warm call on the core."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.isa import OP_JUMP, isa_for
from whatif.simulator.jvm.code import DISPATCH, HANDLERS, JvmCode
from whatif.simulator.jvm.microbench import class_loading_primitives, cost_functions, primitive_table, system_vector
from whatif.simulator.jvm.profiler import COMPILED, USER_BYTECODE
from whatif.simulator.jvm.spec import jvm as jvm_spec, load_methods
from whatif.simulator.jvm.vm import JavaVM
from whatif.simulator.os.microbench import MicrobenchSettings
from whatif.simulator.os.primitives import OsCode
from whatif.simulator.platform import load_platform
from jvmref import ReferenceJvmCode
from test_os_primitives import assert_same_block

PLATFORM = "mpc7447a"          # fixed-length instructions, the simplest core of the set
UNITS = 256
QUICK = MicrobenchSettings(timer_resolution_s=1e-7, min_ticks=10, repetitions=3, transfer_bytes=UNITS)


def interpreted_count(code: JvmCode, name: str, m, units: int, dispatch: str) -> int:
    """Per executed bytecode: the dispatch, the handler, and (switch) the jump back."""
    prog = code.program(name, m.size)
    n = 0
    body = [k % m.size for k in range(m.bytecodes)]
    total = int(round(units * m.bytecodes_per_unit))
    span = max(1, min(m.size, int(round(m.bytecodes_per_unit)) if m.bytecodes_per_unit >= 1 else 1))
    loop = [m.size - span + (k % span) for k in range(total)]
    for p in body + loop:
        n += len(DISPATCH) + len(HANDLERS[int(prog.cls[p])]) + (1 if dispatch == "switch" else 0)
    return n


def expected_instructions(vm: JavaVM, name: str, units: int, acc: dict) -> int:
    """One warm call of ``name`` on an interpreting JVM, counted from the descriptions."""
    j = vm.spec
    m = vm.method(name)
    osc = OsCode(isa_for(vm.platform.isa))
    n = j.interpreter.jni_instructions if m.native else j.interpreter.invoke_instructions
    if m.synchronized:
        n += j.monitors.instructions
    if m.native:
        n += 3 * m.bytecodes + int(round(4 * m.bytecodes_per_unit * units))
    else:
        n += interpreted_count(vm.code, name, m, units, j.interpreter.dispatch)
    for k, st in enumerate(m.steps):
        reps = st.times
        if st.every is not None:
            a = acc.get((name, k), 0) + units
            reps, acc[(name, k)] = (a // st.every) * st.times, a % st.every
        for _ in range(reps):
            if st.method is not None:
                u = {"none": 0, "same": units, "every": st.every or 0, "fixed": st.unit_count}[st.units]
                n += expected_instructions(vm, st.method, u, acc)
            elif st.os is not None:
                size = st.bytes + int(round(st.bytes_per_unit * (st.every if st.every else units)))
                n += len(osc.block(st.os, size, 0x60000000, 0x70000000))
            elif st.alloc is not None:
                n += (j.monitors.instructions if j.allocation.locked else 0) + j.allocation.instructions
                n += math.ceil(vm.heap.object_size(st.alloc) / 8)
            elif st.runtime == "load_class":
                b, cl = vm.class_bytes, j.class_loading
                n += len(osc.block("file_read", b, 0x60000000, 0x70000000))
                n += max(1, int(round(b * cl.parse_instructions_per_byte)))
                n += int(b / 3 * cl.verify_instructions_per_bytecode)
                n += 6 * max(1, int(cl.resolve_probes_per_kb * b / 1024)) + cl.link_instructions
    return n


@pytest.mark.parametrize("label", list(primitive_table()))
def test_a_primitive_executes_what_its_description_counts(label):
    method, unit = primitive_table()[label]
    units = UNITS if unit in ("char", "byte") else 0
    vm = JavaVM(load_platform(PLATFORM), "jdk122-interp", class_bytes=512)
    for _ in range(2):
        vm.invoke(method, units)                         # warm: buffers filled to the same phase
    acc = dict(vm._acc)
    want = expected_instructions(vm, method, units, acc)
    i0, c0 = vm.core.instructions, vm.cycles
    vm.invoke(method, units)
    assert vm.core.instructions - i0 == want
    assert vm.collections == 0
    width = vm.platform.core.dispatch_width if hasattr(vm.platform.core, "dispatch_width") else 4
    assert vm.cycles - c0 >= want / width                 # no core retires more than its width


def test_measured_costs_are_the_cycles_of_warm_calls():
    """The microbenchmark's figure (µs per call or per unit) is one warm call's cycles over the clock,
    to the clock's resolution and the trimmed mean's spread."""
    platform = load_platform(PLATFORM)
    labels = ["String.charAt()", "Hashtable.get()", "BufferedReader.read()", "synchronized {}", "new Object()"]
    vec = system_vector(platform, "jdk122-interp", QUICK, primitives=labels).set_index("primitive")
    table = primitive_table()
    for label in labels:
        method, unit = table[label]
        units = UNITS if unit in ("char", "byte") else 0
        vm = JavaVM(platform, "jdk122-interp")
        for _ in range(40):
            vm.invoke(method, units)
        c0 = vm.cycles
        for _ in range(20):
            vm.invoke(method, units)
        per_call_us = (vm.cycles - c0) / 20 / (platform.clock_ghz * 1e3)
        assert vec.loc[label, "per_call_us"] == pytest.approx(per_call_us, rel=0.15), label
        assert vec.loc[label, "cost"] == pytest.approx(vec.loc[label, "per_call_us"] / (units or 1))


def test_the_seeds_jit_leaves_convert_interpreted_and_buffered_reads_pay_for_it():
    """§4.3.2: JDK 1.2.2's JIT did not compile ByteToCharSingleByte.convert; BufferedReader.read() per char
    costs many times what it costs where the JIT compiles it (Table 4-3: 6.9 against 0.32 µs)."""
    platform = load_platform("harpertown")
    cost = {j: system_vector(platform, j, QUICK, primitives=["BufferedReader.read()"])["cost"].iloc[0]
            for j in ("jdk122-classic", "msjvm-sdk32")}
    assert cost["jdk122-classic"] > 5 * cost["msjvm-sdk32"]
    vm = JavaVM(platform, "jdk122-classic")
    vm.invoke("java.io.BufferedReader.read", 8192)
    assert "java.io.BufferedReader.read" in vm.compiled
    assert "sun.io.ByteToCharSingleByte.convert" not in vm.compiled
    assert vm.invocations["sun.io.ByteToCharSingleByte.convert"] == 1


def test_switch_and_threaded_dispatch():
    m = load_methods().methods["java.util.Hashtable.get"]
    for dispatch, one_site in (("switch", True), ("threaded", False)):
        b = JvmCode(isa_for("x86_64"), dispatch).interpreted("java.util.Hashtable.get", m.size, m.bytecodes)
        jumps = b.pc[(b.op == OP_JUMP) & (b.target != np.uint64(0x5000_0000))]
        assert (len(np.unique(jumps)) == 1) == one_site
        b.validate()


@settings(max_examples=60, deadline=None)
@given(isa=st.sampled_from(["x86_64", "powerpc32", "z/Architecture"]), dispatch=st.sampled_from(["switch", "threaded"]),
       expansion=st.sampled_from([0.5, 1.0, 1.5, 2.0, 2.5, 3.7]),
       calls=st.lists(st.tuples(st.sampled_from(["a.m", "b.n", "java.util.Hashtable.get"]), st.integers(1, 300),
                                st.integers(0, 700), st.integers(0, 2000), st.floats(0.0, 8.0), st.integers(0, 9),
                                st.integers(0, 1 << 31), st.booleans()), min_size=1, max_size=4))
def test_method_blocks_equal_the_instruction_by_instruction_reference(isa, dispatch, expansion, calls):
    """The column-built interpreted and compiled invocations are the reference's, instruction for
    instruction, for any method, size, bytecode count, units (the inner loop over the buffer), depth, object
    and JIT expansion, in any order of calls on one JvmCode (a method gets its bytecode index when it first
    executes or walks its buffer, and its code-cache address when first compiled)."""
    fast = JvmCode(isa_for(isa), dispatch, code_expansion=expansion)
    ref = ReferenceJvmCode(isa_for(isa), dispatch, code_expansion=expansion)
    for name, size, bytecodes, units, per_unit, depth, obj, compiled in calls:
        kind = "compiled" if compiled else "interpreted"
        assert_same_block(getattr(fast, kind)(name, size, bytecodes, units, per_unit, depth, obj),
                          getattr(ref, kind)(name, size, bytecodes, units, per_unit, depth, obj))
    assert fast._index == ref._index and fast._code_at == ref._code_at


def test_compiled_code_has_the_jits_expansion():
    code = JvmCode(isa_for("x86_64"), "switch", code_expansion=2.5)
    b = code.compiled("user.x", 100, 1000)
    assert len(b) == pytest.approx(2.5 * 1000, rel=0.05)
    b.validate()


def test_unknown_jvm_and_bad_class_size_are_refused():
    with pytest.raises(SimulatorInputError, match="unknown JVM 'kaffe'; known: jdk122-classic"):
        jvm_spec("kaffe")
    with pytest.raises(SimulatorInputError, match="class_bytes must be >= 64"):
        JavaVM(load_platform(PLATFORM), "jdk122-interp", class_bytes=3)


def test_a_full_heap_runs_the_collectors_stream_on_the_core():
    spec = jvm_spec("jdk122-classic")
    small = spec.model_copy(update={"collector": spec.collector.model_copy(update={"heap_kb": 64})})
    vm = JavaVM(load_platform(PLATFORM), small)
    for _ in range(64 * 1024 // 16 + 10):
        vm.invoke("new Object")
    assert vm.collections >= 1 and vm.gc_cycles > 0
    assert vm.heap.collections[0].dead_objects > 0


def test_an_adaptive_jit_is_measured_interpreted_and_compiled():
    """Under a threshold JIT each primitive (and the user-code primitives) has two costs: a fresh VM's
    loop, below the threshold (interpreted), and the same loop warmed past it (compiled), which is the
    cycles of a call once every method on its path has been compiled."""
    platform = load_platform(PLATFORM)
    labels = ["String.charAt()", "Hashtable.get()", USER_BYTECODE]
    vec = system_vector(platform, "jdk121-prod", QUICK, primitives=labels).set_index("primitive")
    assert set(vec.index) == set(labels) | {label + COMPILED for label in labels}
    for label in labels:
        assert vec.loc[label + COMPILED, "cost"] < 0.8 * vec.loc[label, "cost"], label
    threshold = jvm_spec("jdk121-prod").jit.threshold
    vm = JavaVM(platform, "jdk121-prod")
    for _ in range(threshold + 40):
        vm.invoke("java.lang.String.charAt")
    c0 = vm.cycles
    for _ in range(20):
        vm.invoke("java.lang.String.charAt")
    per_call_us = (vm.cycles - c0) / 20 / (platform.clock_ghz * 1e3)
    assert vec.loc["String.charAt()" + COMPILED, "per_call_us"] == pytest.approx(per_call_us, rel=0.15)
    classic = system_vector(platform, "jdk122-classic", QUICK, primitives=labels)
    assert not classic.primitive.str.endswith(COMPILED).any()      # a first-call JIT: one cost


def test_cost_functions_are_per_call_costs_at_each_size():
    """C(s): µs per call with s units -- the cycles of warm calls at that size; a call's fixed part shows
    as C(s)/s falling with s, and under an adaptive JIT each size is measured compiled too."""
    platform = load_platform(PLATFORM)
    sizes = (8, 512, 4096)
    # (measurements move 8 K units: BufferedReader refills its 8 K-char buffer once per 8 K chars)
    # jdk121-prod compiles at its 20th call, not its 200th: each compiled measurement warms up past the
    # threshold, and 200 loads of an 8 KB class were most of this test's time
    prod = jvm_spec("jdk121-prod")
    prod = prod.model_copy(update={"jit": prod.jit.model_copy(update={"threshold": 20})})
    f = cost_functions(platform, prod, replace(QUICK, transfer_bytes=8192), sizes=sizes,
                       class_sizes=(1024, 8192), footprints=(80, 5120))
    per_unit = {label for label, (_, unit) in primitive_table().items() if unit in ("char", "byte")}
    loading = set(class_loading_primitives())
    assert loading == {"Class.forName()", "ClassLoader.loadClass()"}
    sized = per_unit | loading | {USER_BYTECODE}
    assert set(f.primitive) == sized | {p + COMPILED for p in sized}
    assert len(f) == 2 * (len(per_unit) * len(sizes) + len(loading) * 2 + 2)
    for prim, g in f.groupby("primitive"):
        c = g.set_index("size")["cost"]
        if prim.split(" [")[0] in loading:              # parsing, verifying, resolving more bytes
            assert c[8192] > 2 * c[1024], prim
            continue
        if prim.startswith(USER_BYTECODE):              # 64 methods' code no longer fits the 32 KB L1I
            assert c[5120] > (1.1 if prim.endswith(COMPILED) else 0.8) * c[80], prim
            continue
        assert c.is_monotonic_increasing or prim.startswith("Socket"), prim
        assert c[8] / 8 > c[4096] / 4096, prim                  # the fixed part, amortised
    f = cost_functions(platform, "jdk122-classic", replace(QUICK, transfer_bytes=8192), sizes=(64,),
                       class_sizes=(1024,), footprints=(80,))
    vm = JavaVM(platform, "jdk122-classic")
    method = primitive_table()["StringBuffer.append()"][0]
    for _ in range(QUICK.warmup_calls):
        vm.invoke(method, 64)
    c0 = vm.cycles
    for _ in range(10):
        vm.invoke(method, 64)
    want = (vm.cycles - c0) / 10 / (platform.clock_ghz * 1e3)
    got = f[(f.primitive == "StringBuffer.append()") & (f["size"] == 64)]["cost"].iloc[0]
    assert got == pytest.approx(want, rel=0.15)


@pytest.mark.parametrize("platform_name", ["mpc7447a", "harpertown"])
def test_cold_calls_price_a_miss_at_most_at_the_memory_latency(platform_name):
    """The hybrid's cache-specific costs: a call after every cache and TLB has been flushed costs more than
    a warm one, and each extra memory read costs more than nothing and no more than a full memory latency
    (overlapped misses cost less; a blocking one the latency) -- µs per miss; a hash probe's warm loop
    reads nothing from memory, a class load's reads its new class.  No queue for the memory channel: behind
    one, or waiting for a prefetch in flight, a miss can cost more than the latency."""
    platform = load_platform(platform_name, ["memory.queueing=none", "memory.prefetch_arrival=instant"])
    labels = ["Hashtable.get()", "Class.forName()", "bytecode (user classes)", "SocketInputStream.read()"]
    vec = system_vector(platform, "jdk122-classic", QUICK, primitives=labels).set_index("primitive")
    latency_us = platform.memory.latency_cycles / (platform.clock_ghz * 1e3)
    for label in labels:
        assert 0 < vec.loc[label, "miss_penalty"] <= 1.2 * latency_us, label
    assert vec.loc["Hashtable.get()", "misses"] == 0 and vec.loc["Class.forName()", "misses"] > 100
