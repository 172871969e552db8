"""The JVM's data files: Java API methods (``methods.toml``), JVM configurations (``jvms.toml``) and
applications (``applications.toml``), each a versioned TOML file validated by pydantic models.

A *method* is what one invocation of a Java method executes: ``bytecodes`` of its own body per call
and ``bytecodes_per_unit`` per unit of its argument (a char, a byte), ``size`` bytecodes of static code
(what a JIT compiles, the S of J(N, S)), a monitor when ``synchronized``, and its ``steps`` in order:
other Java methods, native methods (operating-system primitives), allocations and class loading.
A step with ``every = k`` happens once per k units the method has processed, over its whole life, when a
call finds the k-unit buffer empty (a buffered reader fills its 8 K buffer at its first read and again
once per 8192 characters, however they are asked for).

An *API primitive* (``[primitives]``) is an entry of HBench:Java's system vector: a method, per call or
per unit (char, byte), and how its microbenchmark calls it.

A *JVM* is an execution engine: its interpreter (dispatch, per-bytecode handler work, invocation), its JIT
(policy ``none``, ``first-call`` or ``threshold``; code quality; compile cost per bytecode; methods it
never compiles), its monitors, allocation path, class loader costs and collector.

An *application* is its use of the API primitives (counts, units per call) and its own classes (user
bytecodes, methods, invocations), with cited sources or ``estimate``.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, \
    model_validator

from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.gc.config import COLLECTORS
from whatif.simulator.os.primitives import load_primitives
from whatif.simulator.schema import load_versioned

HERE = Path(__file__).parent
METHODS_FILE = HERE / "methods.toml"
JVMS_FILE = HERE / "jvms.toml"
APPLICATIONS_FILE = HERE / "applications.toml"
SCHEMA_VERSION = 1
CHANGELOG = {1: "initial HBench:Java format (methods and primitives, JVMs, applications)"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Step(_Strict):
    """One thing a method does: call a Java ``method``, a native ``os`` primitive (moving ``bytes`` per
    call, or ``bytes_per_unit`` times the units), allocate an object of ``alloc`` payload bytes, or run a
    ``runtime`` routine (``load_class``: define the class being loaded; ``new_class``: pick the next class
    to load); ``times`` per call, or once per ``every`` units."""
    method: str | None = None
    os: str | None = None
    alloc: PositiveInt | None = None
    runtime: Literal["load_class", "new_class"] | None = None
    times: PositiveInt = 1
    every: PositiveInt | None = None
    units: Literal["none", "same", "every", "fixed"] = "none"   # units passed on to a method: none, ours,
    unit_count: NonNegativeInt = 0                              # ``every``, or ``unit_count``
    bytes: NonNegativeInt = 0
    bytes_per_unit: NonNegativeFloat = 0.0

    @model_validator(mode="after")
    def _one(self) -> "Step":
        given = [k for k in ("method", "os", "alloc", "runtime") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"a step names exactly one of method, os, alloc, runtime; got {given or 'none'}")
        return self


class MethodSpec(_Strict):
    size: PositiveInt                               # static bytecodes (compiled by a JIT)
    bytecodes: NonNegativeInt = 0                   # executed per call
    bytecodes_per_unit: NonNegativeFloat = 0.0      # executed per unit of the argument
    native: bool = False                            # a native method: its body is C, entered through JNI
    synchronized: bool = False
    steps: list[Step] = []


class PrimitiveSpec(_Strict):
    method: str
    unit: Literal["call", "char", "byte", "bytecode"] = "call"
    label: str                                      # the name in the system vector
    class_loading: bool = False                     # each call loads a class: its cost grows with the class's size


class MethodCatalog(_Strict):
    schema_version: int
    methods: dict[str, MethodSpec]
    primitives: dict[str, PrimitiveSpec]

    @model_validator(mode="after")
    def _refs(self) -> "MethodCatalog":
        os_names = set(load_primitives())
        for name, m in self.methods.items():
            for k, s in enumerate(m.steps):
                if s.method is not None and s.method not in self.methods:
                    raise ValueError(f"methods.{name}.steps[{k}]: unknown method {s.method!r}")
                if s.os is not None and s.os not in os_names:
                    raise ValueError(f"methods.{name}.steps[{k}]: unknown OS primitive {s.os!r}; known: "
                                     f"{', '.join(sorted(os_names))}")
        for name, p in self.primitives.items():
            if p.method not in self.methods:
                raise ValueError(f"primitives.{name}: unknown method {p.method!r}")
        return self


class Interpreter(_Strict):
    dispatch: Literal["switch", "threaded"]          # one shared indirect jump, or one per handler
    handler_scale: PositiveFloat = 1.0               # handler instructions relative to the reference handlers
    invoke_instructions: PositiveInt                 # frame set-up and tear-down of an interpreted call
    jni_instructions: PositiveInt                    # entering and leaving a native method


class Jit(_Strict):
    policy: Literal["none", "first-call", "threshold"]
    threshold: PositiveInt = 1                       # invocations before a method is compiled ("threshold")
    code_expansion: PositiveFloat = 2.0              # native instructions per bytecode of compiled code
    compile_instructions_per_bytecode: PositiveInt = 1000
    call_instructions: PositiveInt = 12              # a compiled call: prologue, epilogue, argument moves
    never_compile: list[str] = []                    # methods this JIT leaves interpreted


class Monitors(_Strict):
    kind: Literal["heavy", "thin"]                   # monitor cache + mutex, or a lock word with one atomic
    instructions: PositiveInt                        # enter + exit
    data_kb: PositiveFloat = 1.0


class Allocation(_Strict):
    instructions: PositiveInt                        # the allocation path (header set-up, size class)
    locked: bool                                     # a global heap lock around it (a monitor enter/exit)


class ClassLoading(_Strict):
    parse_instructions_per_byte: PositiveFloat       # reading the class file into the runtime's structures
    verify_instructions_per_bytecode: PositiveFloat
    link_instructions: PositiveInt                   # linking and initialisation
    resolve_probes_per_kb: PositiveInt = 80          # constant-pool entries resolved (class-table lookups)
    class_table_kb: PositiveInt = 256


class Collector(_Strict):
    name: str
    heap_kb: PositiveInt

    @model_validator(mode="after")
    def _known(self) -> "Collector":
        if self.name not in COLLECTORS:
            raise ValueError(f"unknown collector {self.name!r}; known: {', '.join(COLLECTORS)}")
        return self


class JvmSpec(_Strict):
    description: str
    after: str                                       # the JVM of Table 4-1 it is modelled after
    interpreter: Interpreter
    jit: Jit
    monitors: Monitors
    allocation: Allocation
    class_loading: ClassLoading
    collector: Collector


class JvmCatalog(_Strict):
    schema_version: int
    jvms: dict[str, JvmSpec]


class Use(_Strict):
    """An application's use of a primitive: ``count`` calls of ``units`` units each (1 for per-call ones)."""
    count: PositiveInt
    units: PositiveInt = 1


class UserCode(_Strict):
    methods: PositiveInt                             # user methods (the JIT compiles the invoked ones)
    bytecodes: NonNegativeInt                        # user bytecodes executed
    invocations: NonNegativeInt                      # user method invocations
    mean_size: PositiveInt = 80                      # mean static size of a user method (bytecodes)
    data_kb: PositiveFloat = 256.0                   # the user code's working set


class ApplicationSpec(_Strict):
    description: str
    source: str
    suite: Literal["application", "specjvm98"] = "application"
    uses: dict[str, Use]
    user: UserCode
    class_bytes: PositiveInt = 2048                  # size of the classes it loads


class ApplicationCatalog(_Strict):
    schema_version: int
    applications: dict[str, ApplicationSpec]


@lru_cache(maxsize=4)
def load_methods(path: str | Path = METHODS_FILE) -> MethodCatalog:
    return load_versioned(path, MethodCatalog, SCHEMA_VERSION, CHANGELOG)


@lru_cache(maxsize=4)
def load_jvms(path: str | Path = JVMS_FILE) -> dict[str, JvmSpec]:
    cat = load_versioned(path, JvmCatalog, SCHEMA_VERSION, CHANGELOG)
    methods = load_methods()
    for name, j in cat.jvms.items():
        for m in j.jit.never_compile:
            if m not in methods.methods:
                raise SimulatorInputError(f"{path}: jvms.{name}.jit.never_compile: unknown method {m!r}")
    return dict(cat.jvms)


@lru_cache(maxsize=4)
def load_applications(path: str | Path = APPLICATIONS_FILE) -> dict[str, ApplicationSpec]:
    cat = load_versioned(path, ApplicationCatalog, SCHEMA_VERSION, CHANGELOG)
    prims = [p.label for p in load_methods().primitives.values()]
    for name, a in cat.applications.items():
        for p in a.uses:
            if p not in prims:
                raise SimulatorInputError(f"{path}: applications.{name}.uses: unknown primitive {p!r}; known: "
                                          f"{', '.join(prims)}")
    return dict(cat.applications)


def jvm(name: str) -> JvmSpec:
    jvms = load_jvms()
    if name not in jvms:
        raise SimulatorInputError(f"unknown JVM {name!r}; known: {', '.join(jvms)}")
    return jvms[name]


def application(name: str) -> ApplicationSpec:
    apps = load_applications()
    if name not in apps:
        raise SimulatorInputError(f"unknown application {name!r}; known: {', '.join(apps)}")
    return apps[name]
