"""``JavaVM``: a JVM configuration running Java methods on a platform's core, one invocation at a time.

The core keeps its state between invocations (caches, TLBs, predictors), and so does the VM: which
methods are compiled, how many times each was invoked, the heap and its collections, the classes loaded,
the buffered readers' positions.  :meth:`JavaVM.invoke` runs one invocation of a method:

1. the JIT's decision (:meth:`JavaVM._mode`): ``first-call`` compiles a method at its first invocation,
   ``threshold`` when its invocation count reaches the threshold, ``none`` never; methods in the JIT's
   ``never_compile`` stay interpreted.  Compiling runs the compiler on the core: ``compile_instructions_
   per_bytecode`` per bytecode of the method's static size, then the stores of its code into the code cache;
2. the call: an interpreted frame set-up, a compiled call, or a JNI transition for a native method;
3. the monitor of a ``synchronized`` method (:meth:`JavaVM.monitor`);
4. the method's bytecodes (:mod:`simulator.jvm.code`: interpreted with dispatch, or compiled);
5. its steps in order: Java methods (recursively), operating-system primitives through
   :class:`simulator.os.kernel.Kernel` on the same core, allocations, class loading.

Allocation (:meth:`JavaVM.allocate`) takes the runtime's allocation path (under a heap lock if the JVM
has one), places the object in the simulated heap of :mod:`simulator.gc` and writes it; when the heap is
full the collector's own instruction stream runs on the core.  Class loading (:meth:`JavaVM.define_class`)
reads the class file through the OS primitives, parses it, verifies its bytecodes, resolves its constant
pool against the class table (hash probes) and links it -- a different class, at different addresses,
every time.  A profiler attached (``profiler``) sees every method entry, allocation and compilation
(JVMPI's events).
"""

from __future__ import annotations

from collections import defaultdict

from whatif.simulator.core import Core
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.gc import kernel_alloc as KA
from whatif.simulator.gc.config import heap_config
from whatif.simulator.gc.heap import Heap
from whatif.simulator.gc.layout import HEAP_BASE
from whatif.simulator.isa import InstrBlock, isa_for
from whatif.simulator.jvm.code import CLASS_FILES, CLASS_META, CLASS_STRIDE, COMPILER_TEXT, RUNTIME_DATA, \
    USER_DATA, JvmCode
from whatif.simulator.jvm.spec import JvmSpec, MethodSpec, jvm as jvm_spec, load_methods
from whatif.simulator.lru import LruCache
from whatif.simulator.memory.hierarchy import MemoryHierarchy
from whatif.simulator.os.kernel import Kernel
from whatif.simulator.platform import Platform

BLOCK_CACHE = 512
# runtime routine slots (text and data of each)
R_INVOKE, R_CALL, R_JNI, R_MONITOR, R_ALLOC, R_PARSE, R_VERIFY, R_RESOLVE, R_LINK, R_NATIVE = range(10)
COMPILER_DATA_KB = 256            # the compiler's IR, tables and code buffer (estimate)
VERIFIER_DATA_KB = 16
DATA_FILE = 0x6000_0000           # the documents and pages the application reads (page cache), 16 MB
DATA_FILE_BYTES = 16 << 20
CLASS_SLOTS = 1024                # class structures and files wrap after this many classes (32 MB)


class JavaVM:
    def __init__(self, platform: Platform, jvm: str | JvmSpec, seed: int = 0, class_bytes: int = 2048,
                 profiler=None, extra_methods: dict[str, MethodSpec] | None = None, functional: bool = False):
        self.platform = platform
        self.spec = jvm_spec(jvm) if isinstance(jvm, str) else jvm
        if class_bytes < 64:
            raise SimulatorInputError(f"JavaVM: class_bytes must be >= 64, got {class_bytes}")
        self.core = Core(platform, MemoryHierarchy(platform, seed=seed))
        if functional:              # a cache simulation of the run (no timing)
            self.core.make_functional()
        self.kernel = Kernel(platform, seed=seed, core=self.core)
        self.code = JvmCode(isa_for(platform.isa), self.spec.interpreter.dispatch, self.spec.jit.code_expansion)
        self.methods: dict[str, MethodSpec] = dict(load_methods().methods)
        self.methods.update(extra_methods or {})
        cfg = heap_config(f"JVM {self.spec.after}", collector=self.spec.collector.name,
                          heap_bytes=self.spec.collector.heap_kb * 1024)
        self.heap = Heap(cfg)
        self.profiler = profiler
        self.class_bytes = int(class_bytes)
        self.invocations: dict[str, int] = defaultdict(int)
        self.compiled: set[str] = set()
        self.never = set(self.spec.jit.never_compile)
        self.classes_loaded = 0
        self.current_class = 0
        self.depth = 0
        self.jit_cycles = 0
        self.jit_misses = 0               # memory demand reads while compiling
        self.gc_cycles = 0
        self.collections = 0
        self.compiled_bytecodes = 0
        self._acc: dict[tuple[str, int], int] = defaultdict(int)
        self._file_at = 0
        self._blocks: LruCache[InstrBlock] = LruCache(BLOCK_CACHE)

    # ---- plumbing -----------------------------------------------------------------------------------
    @property
    def cycles(self) -> int:
        return self.core.cycles

    def seconds(self, cycles: int) -> float:
        return self.platform.cycles_to_seconds(cycles)

    def define(self, name: str, spec: MethodSpec) -> None:
        self.methods[name] = spec

    def method(self, name: str) -> MethodSpec:
        try:
            return self.methods[name]
        except KeyError:
            raise SimulatorInputError(f"unknown Java method {name!r}") from None

    def _cached(self, key: tuple, build) -> InstrBlock:
        return self._blocks.get(key, build)

    def _routine(self, slot: int, instructions: int, data_kb: float, serialising: tuple[int, ...] = ()) -> None:
        blk = self._cached(("routine", slot, instructions, data_kb, serialising),
                           lambda: self.code.native(slot, instructions, self.code.routine_data(slot), data_kb,
                                                    serialising=serialising))
        self.core.run(blk)

    # ---- the JIT ------------------------------------------------------------------------------------
    def _mode(self, name: str, m: MethodSpec, n: int) -> str:
        if m.native:
            return "native"
        if name in self.compiled:
            return "compiled"
        jit = self.spec.jit
        if jit.policy == "none" or name in self.never:
            return "interpreted"
        if (jit.policy == "first-call" and n >= 1) or (jit.policy == "threshold" and n >= jit.threshold):
            self.compile(name)
            return "compiled"
        return "interpreted"

    def compile(self, name: str) -> int:
        """Compile ``name`` now (its static size in bytecodes); returns the compiler's cycles."""
        m = self.method(name)
        before, reads = self.core.cycles, self.core.memory.memory_demand_reads()
        per = self.spec.jit.compile_instructions_per_bytecode
        self.core.run(self.code.native(R_NATIVE + 1, m.size * per, COMPILER_TEXT + (4 << 20), COMPILER_DATA_KB,
                                       salt=self.code.index(name)))
        code = self.code.code_at(name, m.size)
        self.core.run(self.code.stores(R_NATIVE + 1, code, int(m.size * self.spec.jit.code_expansion
                                                               * self.code.isize)))
        self.compiled.add(name)
        self.compiled_bytecodes += m.size
        cycles = self.core.cycles - before
        self.jit_cycles += cycles
        self.jit_misses += self.core.memory.memory_demand_reads() - reads
        if self.profiler is not None:
            self.profiler.compiled(name, m.size)
        return cycles

    # ---- runtime services ---------------------------------------------------------------------------
    def monitor(self) -> None:
        """One monitor enter and exit: a heavyweight monitor's hash lookup and mutex (two atomic
        operations), or a thin lock's compare-and-swap."""
        mon = self.spec.monitors
        atomics = (0, mon.instructions // 2) if mon.kind == "heavy" else (0,)
        self._routine(R_MONITOR, mon.instructions, mon.data_kb if mon.kind == "heavy" else 0.125, atomics)

    def allocate(self, payload: int) -> int:
        """A new object of ``payload`` bytes: the allocation path, its place in the heap (collecting when
        full) and its initialising stores; returns its heap offset."""
        a = self.spec.allocation
        if a.locked:
            self.monitor()
        self._routine(R_ALLOC, a.instructions, 1.0)
        addr = KA.alloc_raw(self.heap.H, int(payload), 0)
        if addr < 0:
            before = self.core.cycles
            self.heap.collect("allocation", self.heap.object_size(payload), sink=self.core.run)
            self.gc_cycles += self.core.cycles - before
            self.collections += 1
            addr = KA.alloc_raw(self.heap.H, int(payload), 0)
            if addr < 0:
                raise SimulatorInputError(f"JavaVM: an object of {payload} bytes does not fit in the "
                                          f"{self.spec.collector.heap_kb} KB heap after a collection")
        self.core.run(self.code.stores(R_ALLOC, HEAP_BASE + int(addr), self.heap.object_size(payload)))
        if self.profiler is not None:
            self.profiler.allocated(payload, self.depth)
        return int(addr)

    def define_class(self, cid: int, nbytes: int) -> None:
        """Read class ``cid``'s file (``nbytes``) and define it: parse, verify, resolve, link."""
        cl = self.spec.class_loading
        slot = cid % CLASS_SLOTS
        meta = CLASS_META + slot * CLASS_STRIDE
        buf = self.code.buffer("<class file>")
        self.kernel.call("file_read", nbytes, CLASS_FILES + slot * CLASS_STRIDE, buf)
        self.core.run(self.code.reads(R_PARSE, buf, nbytes, cl.parse_instructions_per_byte, meta,
                                      max(1.0, 2 * nbytes / 1024)))
        self.core.run(self.code.native(R_VERIFY, int(nbytes / 3 * cl.verify_instructions_per_bytecode),
                                       self.code.routine_data(R_VERIFY), VERIFIER_DATA_KB, salt=cid))
        probes = max(1, int(cl.resolve_probes_per_kb * nbytes / 1024))
        self.core.run(self.code.probes(R_RESOLVE, probes, RUNTIME_DATA + (8 << 20), cl.class_table_kb, cid))
        self.core.run(self.code.native(R_LINK, cl.link_instructions, meta, 8.0, salt=cid))
        self.classes_loaded += 1
        if self.profiler is not None:
            self.profiler.class_loaded(nbytes)

    def _data(self, nbytes: int) -> int:
        """The next ``nbytes`` of the file or stream the application reads (the page cache, wrapping)."""
        at = self._file_at
        self._file_at = (self._file_at + nbytes) % DATA_FILE_BYTES
        return DATA_FILE + (at if at + nbytes <= DATA_FILE_BYTES else 0)

    # ---- Java methods -------------------------------------------------------------------------------
    def invoke(self, name: str, units: int = 0) -> None:
        """One invocation of ``name`` with ``units`` units of argument (chars, bytes)."""
        m = self.method(name)
        self.invocations[name] += 1
        n = self.invocations[name]
        if self.profiler is not None:
            self.profiler.entry(name, units, self.depth)
        mode = self._mode(name, m, n)
        it = self.spec.interpreter
        depth = self.depth % 16
        obj = USER_DATA + (self.code.index(name) % 4096) * 64
        if mode == "native":
            self._routine(R_JNI, it.jni_instructions, 2.0)
        elif mode == "interpreted":
            self._routine(R_INVOKE, it.invoke_instructions, 4.0)
        else:
            self._routine(R_CALL, self.spec.jit.call_instructions, 0.5)
        if m.synchronized:
            self.monitor()
        if mode == "native":
            instr = 3 * m.bytecodes + int(round(4 * m.bytecodes_per_unit * units))
            if instr:
                self.core.run(self._cached(("native", name, units), lambda: self.code.native(
                    R_NATIVE, instr, self.code.buffer(name), max(1.0, 2 * units / 1024), salt=self.code.index(name))))
        elif m.bytecodes or (m.bytecodes_per_unit and units):
            build = self.code.interpreted if mode == "interpreted" else self.code.compiled
            self.core.run(self._cached((mode, name, units, depth), lambda: build(
                name, m.size, m.bytecodes, units, m.bytecodes_per_unit, depth, obj)))
        for k, st in enumerate(m.steps):
            reps = st.times
            if st.every is not None:
                # a buffer of ``every`` units, refilled when a read finds it empty: the steps run once for
                # every buffer boundary in [position, position + units), the first read's included
                at = self._acc[(name, k)]
                reps = (-(-(at + units) // st.every) - -(-at // st.every)) * st.times
                self._acc[(name, k)] = (at + units) % st.every
            for _ in range(reps):
                if st.method is not None:
                    u = {"none": 0, "same": units, "every": st.every or 0, "fixed": st.unit_count}[st.units]
                    self.depth += 1
                    try:
                        self.invoke(st.method, u)
                    finally:
                        self.depth -= 1
                elif st.os is not None:
                    size = st.bytes + int(round(st.bytes_per_unit * (st.every if st.every else units)))
                    self.kernel.call(st.os, size, self._data(size), self.code.buffer(name))
                elif st.alloc is not None:
                    self.allocate(st.alloc)
                elif st.runtime == "new_class":
                    self.current_class = self.classes_loaded
                else:
                    self.define_class(self.current_class, self.class_bytes)
