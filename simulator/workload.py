"""Workload descriptions (``simulator/workloads/*.toml``): schema, phase resolution and catalog loading.

A workload is a statistical description of a program from which
:mod:`simulator.synth` synthesises instruction streams.  A catalog file holds
``schema_version``, a ``description`` and one ``[workloads.NAME]`` table per
workload.  The tables of a workload map one-to-one onto the models below:

* ``mix`` — dynamic instruction mix (load, store, branch, fp, other; sums to 1);
  ``branch`` counts every control transfer (conditional branches, jumps, calls, returns);
* ``code`` — code footprint and call structure (functions, sizes, hot-function skew, call depth,
  indirect calls);
* ``branches`` — conditional-branch behaviour (taken rate, loops and trip counts, biased,
  periodic and data-dependent random forward branches);
* ``dependences`` — register dependence distances, address-generating dependences, partial writes;
* ``streams.NAME`` — data streams (sequential, strided, pointer chasing, random with popularity skew);
* ``phases`` — an optional list of program phases; each phase overrides any of the tables above
  (merged key by key) and re-weights the streams, so behaviour changes over time.

Errors are one line naming the file, the dotted field path and what is wrong.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (BaseModel, ConfigDict, Field, NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt,
                      ValidationError, model_validator)

from whatif.files import file_problem
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.schema import check_schema_version, format_validation_error, load_toml

SCHEMA_VERSION = 1
CHANGELOG = {1: "initial workload format (mix, code, branches, dependences, streams, phases, min_heap_kb)"}
WORKLOAD_DIR = Path(__file__).parent / "workloads"
MIX_TOLERANCE = 0.005          # |sum of the mix - 1| allowed (rounded published figures)
FRACTION_TOLERANCE = 0.005     # the same for phase fractions and forward-branch kind shares
MAX_CHASE_STREAMS = 3          # each pointer-chasing stream keeps a pointer register for itself

Prob = Annotated[float, Field(ge=0.0, le=1.0)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Mix(_Strict):
    """Dynamic instruction mix.  ``branch`` counts all control transfers; ``other`` is integer
    computation, of which ``mul_share`` are multiplies and ``div_share`` divides."""
    load: Prob
    store: Prob
    branch: Prob
    fp: Prob
    other: Prob
    mul_share: Prob = 0.02
    div_share: Prob = 0.002

    @model_validator(mode="after")
    def _sums(self) -> "Mix":
        total = self.load + self.store + self.branch + self.fp + self.other
        if abs(total - 1.0) > MIX_TOLERANCE:
            raise ValueError(f"load + store + branch + fp + other must sum to 1 (got {total:.4g})")
        if self.branch < 0.01:
            raise ValueError(f"branch must be at least 0.01: every function returns (got {self.branch})")
        if self.mul_share + self.div_share > 1:
            raise ValueError("mul_share + div_share must not exceed 1")
        return self


class Code(_Strict):
    """Code footprint and call structure (drives the I-cache, ITLB, BTB and return stack)."""
    functions: PositiveInt = 200                  # functions per phase
    function_instructions: PositiveFloat = 60.0   # mean static size of a function, instructions
    size_sigma: Annotated[float, Field(ge=0.0, le=2.0)] = 0.5   # log-normal spread of function sizes
    hot_skew: NonNegativeFloat = 1.0              # Zipf exponent of callee popularity (0: uniform)
    call_depth: NonNegativeInt = 3                # levels of callees below the top-level functions
    calls_per_function: NonNegativeFloat = 2.0    # mean call sites in a non-leaf function
    calls_in_loops: Prob = 0.2                    # relative chance of a call site inside a loop (vs. outside)
    indirect_calls: Prob = 0.0                    # share of call sites that are indirect (virtual)
    indirect_targets: PositiveInt = 4             # candidate targets of an indirect call site
    indirect_skew: NonNegativeFloat = 1.0         # Zipf exponent of the target choice
    max_call_instructions: Annotated[float, Field(ge=100.0)] = 100_000.0   # loops shrink so that one call
    # (callees included) runs at most this many instructions on average: phases switch between top-level calls

    @model_validator(mode="after")
    def _check(self) -> "Code":
        if self.function_instructions < 2:
            raise ValueError(f"function_instructions must be at least 2 (got {self.function_instructions})")
        if self.call_depth > 12:
            raise ValueError(f"call_depth must be at most 12 (got {self.call_depth})")
        return self


class Branches(_Strict):
    """Conditional branches.  ``loops`` of the static conditional branches close loops (taken while
    the loop continues); a loop's mean trip count is drawn around ``loop_trips``; ``fixed_trip_loops``
    of the loops run the same count on every entry, the others draw it uniformly within
    +-``loop_trip_spread`` of their mean on each entry.  The others are forward branches, split into ``biased`` (majority direction
    with probability ``bias``), ``periodic`` (a repeating pattern of period 2..``max_period``, which
    a global-history predictor learns) and ``random`` (data dependent, taken with probability
    ``random_taken``).  ``taken_rate`` is the dynamic taken rate of all conditional branches that
    synthesis aims at by choosing the directions of biased and periodic branches (loop branches
    are taken while their loop runs, so loop-dominated code cannot go below what its loops give);
    without it, directions are balanced."""
    taken_rate: Prob | None = None
    loops: Prob = 0.25
    loop_trips: Annotated[float, Field(ge=1.0)] = 8.0
    fixed_trip_loops: Prob = 0.7
    loop_trip_spread: Prob = 0.3
    biased: Prob = 0.75
    periodic: Prob = 0.15
    random: Prob = 0.1
    bias: Annotated[float, Field(ge=0.5, le=1.0)] = 0.99
    random_taken: Prob = 0.5
    max_period: Annotated[int, Field(ge=2, le=64)] = 8
    if_else: Prob = 0.3

    @model_validator(mode="after")
    def _shares(self) -> "Branches":
        total = self.biased + self.periodic + self.random
        if abs(total - 1.0) > FRACTION_TOLERANCE:
            raise ValueError(f"biased + periodic + random must sum to 1 (got {total:.4g})")
        return self


class Dependences(_Strict):
    """Register dependences.  ``distance_weights[i]`` is the relative frequency of a source whose
    producer is ``i + 1`` instructions earlier; ``far`` of the sources read long-lived values.
    ``agi`` of the loads and stores take their base register from an ALU op ``agi_distance_weights``
    instructions earlier (the z10 address-generation interlock).  ``partial_writes`` of the integer
    writes are partial-register writes followed by a full read (x86 only; ignored on other ISAs),
    ``partial_flag_writes`` of the ALU ops before a conditional branch write only some flags."""
    distance_weights: list[NonNegativeFloat] = [0.28, 0.18, 0.13, 0.1, 0.08, 0.06, 0.05, 0.04, 0.03, 0.03, 0.02]
    far: Prob = 0.2
    two_sources: Prob = 0.5
    agi: Prob = 0.3
    agi_distance_weights: list[NonNegativeFloat] = [0.5, 0.3, 0.2]
    partial_writes: Prob = 0.0
    partial_flag_writes: Prob = 0.0

    @model_validator(mode="after")
    def _check(self) -> "Dependences":
        for key in ("distance_weights", "agi_distance_weights"):
            w = getattr(self, key)
            if not 1 <= len(w) <= 32:
                raise ValueError(f"{key} must list 1 to 32 weights (got {len(w)})")
            if sum(w) <= 0:
                raise ValueError(f"{key} must not be all zero")
        return self


class Stream(_Strict):
    """A data stream.  ``weight`` / ``store_weight`` are its relative shares of the loads / stores
    (``store_weight`` defaults to ``weight``).  Sizes are in bytes except ``footprint_kb``."""
    kind: Literal["sequential", "strided", "chase", "random"]
    footprint_kb: PositiveFloat
    weight: NonNegativeFloat = 1.0
    store_weight: NonNegativeFloat | None = None
    element_bytes: PositiveInt = 8      # sequential / strided: element accessed
    stride_bytes: PositiveInt = 256     # strided: distance between consecutive accesses
    node_bytes: PositiveInt = 64        # chase: node size (next pointer at offset 0)
    fields: NonNegativeFloat = 1.0      # chase: accesses to the current node per hop besides the pointer load
    block_bytes: PositiveInt = 64       # random: popularity unit (an object)
    skew: NonNegativeFloat = 0.0        # random: Zipf exponent over blocks (0: uniform)
    accesses_per_block: Annotated[float, Field(ge=1.0)] = 1.0   # random: mean accesses to a block once chosen

    @model_validator(mode="after")
    def _check(self) -> "Stream":
        size = self.footprint_kb * 1024
        unit = {"sequential": self.element_bytes, "strided": self.stride_bytes, "chase": self.node_bytes,
                "random": self.block_bytes}[self.kind]
        if unit > size:
            raise ValueError(f"footprint_kb ({self.footprint_kb}) is smaller than one {self.kind} unit "
                             f"({unit} bytes)")
        if size > 2 ** 40:
            raise ValueError(f"footprint_kb must be at most 1 TB (got {self.footprint_kb})")
        if self.kind == "strided" and self.stride_bytes % self.element_bytes:
            raise ValueError(f"stride_bytes ({self.stride_bytes}) must be a multiple of element_bytes "
                             f"({self.element_bytes})")
        return self

    @property
    def stores(self) -> float:
        return self.weight if self.store_weight is None else self.store_weight


class Phase(_Strict):
    """A program phase: a length (``fraction`` of the run or absolute ``instructions``) and partial
    overrides of the workload's tables, merged key by key."""
    name: str
    fraction: Prob | None = None
    instructions: PositiveInt | None = None
    mix: dict[str, Any] = {}
    code: dict[str, Any] = {}
    branches: dict[str, Any] = {}
    dependences: dict[str, Any] = {}
    stream_weights: dict[str, NonNegativeFloat] | None = None        # loads; streams not named get 0
    store_stream_weights: dict[str, NonNegativeFloat] | None = None  # stores; default stream_weights

    @model_validator(mode="after")
    def _length(self) -> "Phase":
        if (self.fraction is None) == (self.instructions is None):
            raise ValueError(f"phase {self.name!r}: give exactly one of fraction and instructions")
        if self.fraction is not None and self.fraction <= 0:
            raise ValueError(f"phase {self.name!r}: fraction must be positive (got {self.fraction})")
        return self


class PhaseParams(_Strict):
    """The resolved parameters of one phase (the workload's tables with the phase's overrides)."""
    name: str
    mix: Mix
    code: Code
    branches: Branches
    dependences: Dependences
    load_weights: dict[str, float]
    store_weights: dict[str, float]


class Jit(_Strict):
    """Code compiled by a Java JIT (IBM Testarossa's layout, seed 001 §2.5, §4.3.1), laid over the
    synthesized functions ("methods"; the request drivers excepted):

    * ``interpreter_entry_instructions`` -- each method starts with the entry the interpreter calls: a
      stub that loads the arguments from the Java stack into registers and falls through into the
      JIT entry point.  Calls between compiled methods enter at the JIT entry, so in steady state the
      stub occupies code bytes before it but is not executed.
    * ``prologue_instructions`` -- at the JIT entry, the stack-frame set-up run on every call: a store
      multiple of the callee-saved registers into the frame (stream ``stack_stream``), the stack pointer
      lowered, a stack-overflow compare and a branch to the overflow handler that is never taken;
      further prologue instructions store arguments into the frame.  At least 4 when not 0.
    * ``inlined`` -- shares of the static code compiled from methods inlined at levels 1, 2, 3 (a
      level-2 region lies in a level-1 region): an annotation of the compiler's listing, it changes
      nothing the hardware does.
    * ``method_spacing_bytes`` -- the code cache places methods apart (recompiled-away bodies,
      trampolines, metadata between them): a gap drawn uniformly from [0, 2 x this] after each method.
    * ``agi_methods`` -- a code-generator pathology (a planted ground truth for the miner): in this many
      of the hottest methods every load and store that follows an ALU op of its block takes its base
      register from that op, so the address is generated right before its use.
    """
    interpreter_entry_instructions: NonNegativeInt = 0
    prologue_instructions: NonNegativeInt = 0
    stack_stream: str | None = None
    inlined: list[Prob] = [0.0, 0.0, 0.0]
    method_spacing_bytes: NonNegativeInt = 0
    agi_methods: NonNegativeInt = 0

    @model_validator(mode="after")
    def _check(self) -> "Jit":
        if self.prologue_instructions and self.prologue_instructions < 4:
            raise ValueError(f"prologue_instructions must be 0 or at least 4 (store multiple, stack pointer, "
                             f"compare, branch), got {self.prologue_instructions}")
        if self.prologue_instructions and self.stack_stream is None:
            raise ValueError("stack_stream: the prologue stores into a stream; name one of the workload's streams")
        if len(self.inlined) != 3:
            raise ValueError(f"inlined must give the shares of levels 1, 2 and 3, got {self.inlined}")
        if not self.inlined[0] >= self.inlined[1] >= self.inlined[2]:
            raise ValueError(f"inlined: deeper levels lie inside shallower ones, so the shares must not increase "
                             f"(got {self.inlined})")
        return self


class Workload(_Strict):
    description: str
    instructions: PositiveInt = 100_000_000   # nominal run length that phase fractions refer to
    phase_repeat: PositiveInt = 1              # the phase sequence runs this many times per run
    min_heap_kb: PositiveInt | None = None    # JVM workloads: minimum heap (seed 000 Table III)
    # the program's source: its control structure, instructions and dataflow are drawn from this seed, so
    # every binary of the description (program seeds: layout, data placement, input) is the same program
    source_seed: NonNegativeInt = 0
    mix: Mix
    code: Code = Code()
    branches: Branches = Branches()
    dependences: Dependences = Dependences()
    streams: dict[str, Stream] = {}
    phases: list[Phase] = []
    jit: Jit | None = None

    @model_validator(mode="after")
    def _check(self) -> "Workload":
        if self.jit is not None and self.jit.stack_stream is not None and self.jit.stack_stream not in self.streams:
            raise ValueError(f"jit.stack_stream: unknown stream {self.jit.stack_stream!r}; known: "
                             f"{', '.join(self.streams) or '(none)'}")
        chase = [n for n, st in self.streams.items() if st.kind == "chase"]
        if len(chase) > MAX_CHASE_STREAMS:
            raise ValueError(f"streams: at most {MAX_CHASE_STREAMS} chase streams are supported (each keeps a "
                             f"pointer register), got {len(chase)}")
        if self.phases:
            kinds = {p.fraction is None for p in self.phases}
            if len(kinds) > 1:
                raise ValueError("phases: either every phase gives a fraction or every phase gives instructions")
            if self.phases[0].fraction is not None:
                total = sum(p.fraction for p in self.phases)
                if abs(total - 1.0) > FRACTION_TOLERANCE:
                    raise ValueError(f"phases: fractions must sum to 1 (got {total:.4g})")
            names = [p.name for p in self.phases]
            dup = next((n for n in names if names.count(n) > 1), None)
            if dup is not None:
                raise ValueError(f"phases: phase name {dup!r} is used twice")
        return self


class Catalog(_Strict):
    schema_version: int
    description: str = ""
    workloads: dict[str, Workload]

    @model_validator(mode="before")
    @classmethod
    def _version(cls, data: Any) -> Any:
        return check_schema_version(data, SCHEMA_VERSION, CHANGELOG)


# ----------------------------------------------------------------------------------------- errors
def _validate(model: type[BaseModel], data: Any, where: str, prefix: str = "") -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise SimulatorInputError(format_validation_error(exc, where, prefix)) from None


# ----------------------------------------------------------------------------------------- phases
def resolve_phases(workload: Workload, name: str = "workload", where: str = "workload") -> list[PhaseParams]:
    """Every phase's parameters: the workload's tables merged with the phase's overrides.

    A workload without phases has one phase named ``main``.  Raises SimulatorInputError naming
    ``where`` (the file) and the dotted path of the offending field."""
    base = workload.model_dump()
    streams = workload.streams
    phases = workload.phases or [Phase(name="main", fraction=1.0)]
    out = []
    for k, ph in enumerate(phases):
        prefix = f"workloads.{name}.phases.{k}" if workload.phases else f"workloads.{name}"
        doc: dict[str, Any] = {"name": ph.name}
        for table in ("mix", "code", "branches", "dependences"):
            merged = copy.deepcopy(base[table])
            merged.update(getattr(ph, table))
            doc[table] = merged
        for key, given in (("stream_weights", ph.stream_weights), ("store_stream_weights", ph.store_stream_weights)):
            unknown = sorted(set(given or {}) - set(streams))
            if unknown:
                raise SimulatorInputError(f"{where}: {prefix}.{key}: unknown stream {unknown[0]!r}; known: "
                                          f"{', '.join(streams) or '(none)'}")
        if ph.stream_weights is None:
            loads = {s: st.weight for s, st in streams.items()}
            stores = {s: st.stores for s, st in streams.items()}
        else:
            loads = {s: float(ph.stream_weights.get(s, 0.0)) for s in streams}
            stores = dict(loads)
        if ph.store_stream_weights is not None:
            stores = {s: float(ph.store_stream_weights.get(s, 0.0)) for s in streams}
        doc["load_weights"], doc["store_weights"] = loads, stores
        params = _validate(PhaseParams, doc, where, prefix)
        for kind, weights, share in (("load", loads, params.mix.load), ("store", stores, params.mix.store)):
            if share > 0 and sum(weights.values()) <= 0:
                what = "streams" if not streams else "stream weights"
                raise SimulatorInputError(f"{where}: {prefix}: mix.{kind} is {share} but the {kind}s have no "
                                          f"data {what} (all weights are zero)")
        out.append(params)
    return out


def phase_lengths(workload: Workload, instructions: int | None = None) -> list[int]:
    """Nominal length (instructions) of each phase in one pass of the phase sequence.

    Fraction phases refer to ``instructions`` (default: the workload's) divided by ``phase_repeat``."""
    total = int(instructions if instructions is not None else workload.instructions)
    if total <= 0:
        raise SimulatorInputError(f"instructions must be positive (got {total})")
    if not workload.phases:
        return [max(1, total // workload.phase_repeat)]
    if workload.phases[0].instructions is not None:
        return [int(p.instructions) for p in workload.phases]
    fr = [p.fraction for p in workload.phases]
    scale = total / workload.phase_repeat / sum(fr)
    bounds = [round(scale * x) for x in _cumsum(fr)]
    lengths = [b - a for a, b in zip([0] + bounds[:-1], bounds)]
    return [max(1, n) for n in lengths]


def _cumsum(xs: list[float]) -> list[float]:
    out, acc = [], 0.0
    for x in xs:
        acc += x
        out.append(acc)
    return out


# ----------------------------------------------------------------------------------------- catalogs
def catalog_paths() -> list[Path]:
    return sorted(WORKLOAD_DIR.glob("*.toml"))


def _source(path: Path) -> str:
    return f"workloads/{path.name}" if path.parent == WORKLOAD_DIR else str(path)


@lru_cache(maxsize=64)
def _load_catalog_cached(path: str, mtime: float) -> Catalog:
    p = Path(path)
    raw = load_toml(p)
    cat = _validate(Catalog, raw, _source(p))
    for name, wl in cat.workloads.items():
        resolve_phases(wl, name, _source(p))
    return cat


def load_catalog(path: str | Path) -> Catalog:
    """Load and validate a catalog file (every workload and every phase)."""
    p = Path(path)
    if (problem := file_problem(p)) is not None:
        raise SimulatorInputError(f"{p}: {problem}")
    return _load_catalog_cached(str(p.resolve()), p.stat().st_mtime)


def workload_names() -> list[str]:
    """Qualified names ``catalog/name`` of every shipped workload."""
    out = []
    for path in catalog_paths():
        for name in load_catalog(path).workloads:
            out.append(f"{path.stem}/{name}")
    return out


class WorkloadRef(BaseModel):
    """A loaded workload with where it came from."""
    model_config = ConfigDict(frozen=True)
    name: str            # name within its catalog (e.g. ``429.mcf``)
    catalog: str         # catalog stem or file path
    source: str          # for messages
    spec: Workload

    @property
    def qualified(self) -> str:
        return f"{self.catalog}/{self.name}"

    def phases(self) -> list[PhaseParams]:
        return resolve_phases(self.spec, self.name, self.source)


def load_workload(name: str) -> WorkloadRef:
    """Find a workload by name.

    Accepted forms: ``catalog/name`` (``cint2006/429.mcf``), a name unique across the shipped
    catalogs (``429.mcf``, ``compress``), the part after the SPEC number (``mcf``) when unique, or
    ``path/to/file.toml:name`` (``path.toml`` alone when the file holds one workload)."""
    text = str(name).strip()
    if ".toml" in text:
        file, _, wl = text.partition(".toml")
        path = Path(file + ".toml")
        wl = wl.removeprefix(":")
        cat = load_catalog(path)
        if not wl:
            if len(cat.workloads) != 1:
                raise SimulatorInputError(f"{path}: holds {len(cat.workloads)} workloads; name one as "
                                          f"{path}:NAME ({', '.join(cat.workloads)})")
            wl = next(iter(cat.workloads))
        if wl not in cat.workloads:
            raise SimulatorInputError(f"{path}: no workload {wl!r}; known: {', '.join(cat.workloads)}")
        return WorkloadRef(name=wl, catalog=str(path), source=str(path), spec=cat.workloads[wl])
    entries = []
    for path in catalog_paths():
        cat = load_catalog(path)
        for wl, spec in cat.workloads.items():
            entries.append((path, wl, spec))
    matches = [e for e in entries if f"{e[0].stem}/{e[1]}" == text]
    if not matches:
        matches = [e for e in entries if e[1] == text]
    if not matches:
        matches = [e for e in entries if e[1].split(".", 1)[-1] == text and e[1][:1].isdigit()]
    if len(matches) != 1:
        known = ", ".join(f"{p.stem}/{w}" for p, w, _ in entries)
        if matches:
            raise SimulatorInputError(f"workload {text!r} is ambiguous; qualify it as catalog/name: "
                                      f"{', '.join(f'{p.stem}/{w}' for p, w, _ in matches)}")
        raise SimulatorInputError(f"unknown workload {text!r}; known: {known}")
    path, wl, spec = matches[0]
    return WorkloadRef(name=wl, catalog=path.stem, source=_source(path), spec=spec)


def workload_from_dict(doc: dict[str, Any], name: str = "workload", source: str = "workload") -> WorkloadRef:
    """Validate a workload table given as a dict (tests, scenario inline workloads)."""
    spec = _validate(Workload, doc, source, f"workloads.{name}")
    resolve_phases(spec, name, source)
    return WorkloadRef(name=name, catalog="inline", source=source, spec=spec)
