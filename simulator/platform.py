"""Processor description files (``simulator/platforms/*.toml``): schema, loading and overrides.

A platform file is versioned data whose tables map one-to-one onto the
constructors of the simulated structures (pycachesim/Kerncraft style): every
cache level and TLB is a named table, levels refer to each other by name
(``next_level = "L2"``), and policies are chosen by name from registries.

Overrides (``--set KEY=VALUE``, scenario variants) use the dotted paths of the
resolved description that ``whatif show platform NAME --json`` prints, matched
case-insensitively; a cache or TLB may be addressed without its table prefix
(``l2.size_kb`` means ``caches.L2.size_kb``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable, Literal

from pydantic import (BaseModel, ConfigDict, Field, NonNegativeInt, PositiveFloat, PositiveInt, field_validator,
                      model_validator)

from whatif.files import file_problem
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.isa import ISAS
from whatif.simulator.memory.policies import PAGE_MAPPINGS, PREFETCHERS, REPLACEMENT, WALKS
from whatif.simulator.schema import apply_overrides, check_schema_version, load_toml, split_assignment, validate_model

SCHEMA_VERSION = 1
# Format changes, so that an old or new file gets a helpful message rather than a field error.
CHANGELOG = {1: "initial platform format (core, caches, tlbs, page_walk, memory, branch_predictor, pmu)"}

PLATFORM_DIR = Path(__file__).parent / "platforms"
SHORTHAND_TABLES = ("caches", "tlbs")


def _pow2(n: int | float) -> bool:
    return n > 0 and float(n).is_integer() and (int(n) & (int(n) - 1)) == 0


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FunctionalUnit(_Strict):
    count: PositiveInt
    latency: PositiveInt
    pipelined: bool = True


class Core(_Strict):
    kind: Literal["in_order", "out_of_order"]
    fetch_width: PositiveInt
    decode_width: PositiveInt
    dispatch_width: PositiveInt
    issue_width: PositiveInt
    retire_width: PositiveInt
    fetch_queue: PositiveInt
    rob_entries: PositiveInt = Field(description="reorder buffer / completion queue entries")
    rs_entries: PositiveInt = Field(description="reservation stations / issue queue entries")
    load_queue: PositiveInt
    store_queue: PositiveInt
    rename_registers: PositiveInt
    register_read_ports: NonNegativeInt = Field(
        0, description="reads of retired register values per cycle at rename (P6-family ROB read ports; "
                       "0: unlimited, else at least 3)")
    pipeline_depth: PositiveInt
    mispredict_penalty: PositiveInt
    agi_penalty: NonNegativeInt = 0
    agi_distance: NonNegativeInt = 0
    group_size: PositiveInt = 1
    units: dict[str, FunctionalUnit]

    @model_validator(mode="after")
    def _read_ports(self) -> "Core":
        if self.register_read_ports and self.kind == "in_order":
            raise ValueError(f"register_read_ports applies to out-of-order cores (the P6 family's ROB read ports); "
                             f"this core is in order: set 0, got {self.register_read_ports}")
        if self.register_read_ports and self.register_read_ports < 3:
            raise ValueError(f"register_read_ports must be 0 (unlimited) or at least 3 (an instruction reads up to "
                             f"three registers, and the model renames it in one cycle), got {self.register_read_ports}")
        return self


class CacheLevel(_Strict):
    size_kb: PositiveFloat
    associativity: PositiveInt
    line_bytes: PositiveInt
    sector_bytes: PositiveInt | None = None
    replacement: str = "lru"
    write_policy: Literal["write_back", "write_through"] = "write_back"
    write_allocate: bool = True
    inclusion: Literal["inclusive", "non_inclusive"] = "non_inclusive"
    latency_cycles: PositiveInt
    serves: Literal["instruction", "data", "unified"]
    next_level: str = "memory"
    slices: PositiveInt = 1
    prefetchers: list[str] = []
    prefetch_degree: PositiveInt = 1
    prefetch_engines: NonNegativeInt = 0       # prefetches in flight at once; a prefetch with none free is dropped
                                               # (0: unlimited)
    streamer_streams: PositiveInt = 32         # the streamer's table: 4 KB regions followed at once
    streamer_distance: PositiveInt = 20        # lines the streamer runs ahead of the request at most
    mshrs: PositiveInt = 8
    shared_by_cores: PositiveInt = 1

    @model_validator(mode="after")
    def _geometry(self) -> "CacheLevel":
        size = self.size_kb * 1024
        if not _pow2(self.line_bytes):
            raise ValueError(f"line_bytes must be a power of two, got {self.line_bytes}")
        if not float(size).is_integer() or int(size) % self.line_bytes:
            raise ValueError(f"line_bytes {self.line_bytes} does not divide the cache size {self.size_kb} KB")
        lines = int(size) // self.line_bytes
        if lines % (self.associativity * self.slices):
            raise ValueError(f"{lines} lines cannot be split into {self.slices} slice(s) of "
                             f"{self.associativity}-way sets")
        sets = lines // (self.associativity * self.slices)
        if not _pow2(sets):
            raise ValueError(f"number of sets per slice must be a power of two, got {sets} "
                             f"({self.size_kb} KB / {self.associativity} ways / {self.line_bytes} B lines"
                             + (f" / {self.slices} slices)" if self.slices > 1 else ")"))
        sector = self.sector_bytes or self.line_bytes
        if not _pow2(sector) or sector > self.line_bytes or self.line_bytes // sector > 32:
            raise ValueError(f"sector_bytes must be a power of two dividing line_bytes into at most 32 "
                             f"sectors, got {sector}")
        if self.replacement not in REPLACEMENT:
            raise ValueError(f"unknown replacement {self.replacement!r}; known: {', '.join(sorted(REPLACEMENT))}")
        if self.replacement == "plru" and not _pow2(self.associativity):
            raise ValueError(f"tree PLRU needs a power-of-two associativity, got {self.associativity}")
        if self.associativity > 64:
            raise ValueError(f"associativity above 64 is not supported, got {self.associativity}")
        for name in self.prefetchers:
            if name not in PREFETCHERS:
                raise ValueError(f"unknown prefetcher {name!r}; known: {', '.join(sorted(PREFETCHERS))}")
        return self

    @property
    def sets(self) -> int:
        """Sets per slice."""
        return int(self.size_kb * 1024) // (self.line_bytes * self.associativity * self.slices)

    @property
    def sectors(self) -> int:
        return self.line_bytes // (self.sector_bytes or self.line_bytes)


class TLB(_Strict):
    entries: PositiveInt
    associativity: PositiveInt
    page_kb: list[PositiveInt]
    replacement: str = "lru"
    serves: Literal["instruction", "data", "unified"]
    next_level: str = "walk"
    latency_cycles: NonNegativeInt = 0

    @model_validator(mode="after")
    def _geometry(self) -> "TLB":
        if self.entries % self.associativity:
            raise ValueError(f"entries {self.entries} is not a multiple of associativity {self.associativity}")
        sets = self.entries // self.associativity
        if not _pow2(sets):
            raise ValueError(f"number of sets must be a power of two, got {sets}")
        if self.replacement not in REPLACEMENT:
            raise ValueError(f"unknown replacement {self.replacement!r}; known: {', '.join(sorted(REPLACEMENT))}")
        if self.replacement == "plru" and not _pow2(self.associativity):
            raise ValueError(f"tree PLRU needs a power-of-two associativity, got {self.associativity}")
        for p in self.page_kb:
            if not _pow2(p):
                raise ValueError(f"page sizes must be powers of two, got {p} KB")
        return self


class PageWalk(_Strict):
    kind: str
    handler: Literal["hardware", "software"] = "hardware"
    levels: PositiveInt = 4
    bits_per_level: PositiveInt = 9
    pte_bytes: PositiveInt = 8
    cached_levels: NonNegativeInt = 0
    cache_level: str
    pollute: bool = True
    htab_kb: PositiveInt = 2048
    overhead_cycles: NonNegativeInt = 0

    @model_validator(mode="after")
    def _check(self) -> "PageWalk":
        if self.kind not in WALKS:
            raise ValueError(f"unknown page-walk kind {self.kind!r}; known: {', '.join(sorted(WALKS))}")
        if self.cached_levels >= self.levels:
            raise ValueError(f"cached_levels ({self.cached_levels}) must be below levels ({self.levels})")
        if self.kind == "hashed" and not _pow2(self.htab_kb * 1024 // 64):
            raise ValueError(f"htab_kb must give a power-of-two number of 64-byte PTE groups, got {self.htab_kb}")
        return self


class Memory(_Strict):
    latency_cycles: PositiveInt
    size_mb: PositiveInt
    bandwidth_gb_s: PositiveFloat
    # instant: a prefetched line is usable at once.  latency: a prefetch into the L1D holds an MSHR and its line
    # arrives the supplying level's latency after the access that triggered it; a load or store that comes
    # sooner waits for the rest (a late prefetch); a line prefetched into a lower level is likewise ready there
    # only when it has arrived.
    prefetch_arrival: Literal["instant", "latency"] = "instant"
    # none: memory serves every transfer after latency_cycles.  bandwidth: demand fills, prefetches, page-walk
    # loads and writebacks share one channel of bandwidth_gb_s and queue behind each other first.
    queueing: Literal["none", "bandwidth"] = "none"
    page_kb: PositiveInt = 4
    code_page_kb: PositiveInt = 4
    large_page_kb: list[PositiveInt] = []
    page_mapping: str = "identity"

    @model_validator(mode="after")
    def _check(self) -> "Memory":
        for key in ("page_kb", "code_page_kb"):
            value = getattr(self, key)
            if not _pow2(value):
                raise ValueError(f"{key} must be a power of two, got {value}")
            if value != 4 and value not in self.large_page_kb:
                raise ValueError(f"{key} {value} is neither the 4 KB base page nor one of large_page_kb "
                                 f"{self.large_page_kb}")
        if self.page_mapping not in PAGE_MAPPINGS:
            raise ValueError(f"unknown page_mapping {self.page_mapping!r}; known: "
                             f"{', '.join(sorted(PAGE_MAPPINGS))}")
        return self


# the most tagged tables a TAGE predictor has (its words in the kernel's predictor state; the same number as
# simulator.core.predictors.TAGE_MAX_TABLES, which this module cannot import)
TAGE_MAX_TABLES = 8


class BranchPredictor(_Strict):
    kind: Literal["bimodal", "gshare", "tage"]
    bht_entries: PositiveInt
    counter_bits: PositiveInt = 2
    history_bits: NonNegativeInt = 0
    btb_entries: PositiveInt
    btb_associativity: PositiveInt
    ras_entries: PositiveInt
    # tage (simulator.core.predictors): the bimodal base is bht_entries x counter_bits; beside it one tagged
    # table of tage_entries per history length (geometric, as Seznec & Michaud's TAGE; at most 62 outcomes:
    # the history register is one word); useful counters halve every tage_reset_period conditional branches
    tage_entries: PositiveInt = 1024
    tage_tag_bits: int = Field(9, ge=2, le=15)
    tage_history: list[PositiveInt] = [5, 11, 25, 57]
    tage_reset_period: PositiveInt = 1 << 18

    @model_validator(mode="after")
    def _check(self) -> "BranchPredictor":
        if not _pow2(self.bht_entries):
            raise ValueError(f"bht_entries must be a power of two, got {self.bht_entries}")
        if not _pow2(self.tage_entries) or self.tage_entries < 2:
            # (one entry has no index bits: the index fold would be 0 bits wide)
            raise ValueError(f"tage_entries must be a power of two, at least 2, got {self.tage_entries}")
        h = self.tage_history
        if not 1 <= len(h) <= TAGE_MAX_TABLES or any(b <= a for a, b in zip(h, h[1:])) or h[-1] > 62:
            raise ValueError(f"tage_history must be 1 to {TAGE_MAX_TABLES} strictly increasing history lengths "
                             f"of at most 62 outcomes, got {h}")
        if self.btb_entries % self.btb_associativity or not _pow2(self.btb_entries // self.btb_associativity):
            raise ValueError(f"btb_entries / btb_associativity must be a power-of-two number of sets, got "
                             f"{self.btb_entries} / {self.btb_associativity}")
        return self


class PMU(_Strict):
    physical_counters: PositiveInt
    fixed_counters: NonNegativeInt = 0
    fixed_events: list[str] = []
    events: list[str]
    sources: dict[str, str] = {}

    @model_validator(mode="after")
    def _check(self) -> "PMU":
        import re

        for event, formula in self.sources.items():
            if event not in self.events:
                raise ValueError(f"sources: {event!r} is not in the event list")
            if not re.fullmatch(r"\s*[A-Za-z_][\w.]*(\s*[-+]\s*[A-Za-z_][\w.]*)*\s*", formula):
                raise ValueError(f"sources.{event}: {formula!r} is not a sum or difference of counter names")
        if len(set(self.events)) != len(self.events):
            dup = next(e for e in self.events if self.events.count(e) > 1)
            raise ValueError(f"event {dup!r} listed twice")
        missing = [e for e in self.fixed_events if e not in self.events]
        if missing:
            raise ValueError(f"fixed event {missing[0]!r} is not in the event list")
        if len(self.fixed_events) > self.fixed_counters:
            raise ValueError(f"{len(self.fixed_events)} fixed events but only {self.fixed_counters} fixed counters")
        return self


class Platform(_Strict):
    schema_version: int
    name: str
    description: str
    vendor: str
    model: str
    isa: str
    clock_ghz: PositiveFloat
    core: Core
    caches: dict[str, CacheLevel]
    tlbs: dict[str, TLB]
    page_walk: PageWalk
    memory: Memory
    branch_predictor: BranchPredictor
    pmu: PMU

    @model_validator(mode="before")
    @classmethod
    def _version(cls, data: Any) -> Any:
        return check_schema_version(data, SCHEMA_VERSION, CHANGELOG)

    @field_validator("isa")
    @classmethod
    def _known_isa(cls, isa: str) -> str:
        # the core model synthesises instructions of the named ISA: an unknown one cannot run
        if isa not in ISAS:
            raise ValueError(f"unknown ISA {isa!r}; known: {', '.join(sorted(ISAS))}")
        return isa

    @model_validator(mode="after")
    def _links(self) -> "Platform":
        caches = self.caches
        if not caches:
            raise ValueError("at least one cache level is required")
        for name, c in caches.items():
            if c.next_level != "memory" and c.next_level not in caches:
                raise ValueError(f"caches.{name}.next_level {c.next_level!r} names no cache level "
                                 f"(known: {', '.join(caches)}, memory)")
        # the chain below each level ends in memory without a cycle
        for name in caches:
            seen = [name]
            cur = caches[name].next_level
            while cur != "memory":
                if cur in seen:
                    raise ValueError(f"caches: next_level links form a cycle through {cur!r}")
                lower, upper = caches[cur], caches[seen[-1]]
                if lower.line_bytes < upper.line_bytes:
                    raise ValueError(f"caches.{cur}.line_bytes ({lower.line_bytes}) is smaller than that of "
                                     f"{seen[-1]} ({upper.line_bytes}) feeding it; not supported")
                seen.append(cur)
                cur = caches[cur].next_level
        tops = {c for c in caches} - {c.next_level for c in caches.values()}
        if not any(caches[t].serves in ("instruction", "unified") for t in tops):
            raise ValueError("caches: no top level serves instruction fetches")
        if not any(caches[t].serves in ("data", "unified") for t in tops):
            raise ValueError("caches: no top level serves data accesses")
        for t in sorted(tops):
            if "streamer" in caches[t].prefetchers:
                raise ValueError(f"caches.{t}.prefetchers: a streamer follows the requests that reach its level from "
                                 f"the level above, and {t} has none")
        for name, c in caches.items():
            if "streamer" in c.prefetchers and c.line_bytes >= 4096:
                raise ValueError(f"caches.{name}.prefetchers: a streamer follows lines within 4 KB regions, and "
                                 f"{name}'s lines are {c.line_bytes} bytes")
        for name, t in self.tlbs.items():
            if t.next_level != "walk" and t.next_level not in self.tlbs:
                raise ValueError(f"tlbs.{name}.next_level {t.next_level!r} names no TLB (or 'walk')")
        if self.page_walk.cache_level not in caches:
            raise ValueError(f"page_walk.cache_level {self.page_walk.cache_level!r} names no cache level")
        for side, key in (("instruction", "code_page_kb"), ("data", "page_kb")):
            chain = self.tlb_chain(side)
            if self.tlbs and not chain:
                raise ValueError(f"no {side} TLB supports the {getattr(self.memory, key)} KB page size in use "
                                 f"(memory.{key})")
        return self

    # ---- derived structure ------------------------------------------------------------------
    def top_cache(self, side: str) -> str:
        """Name of the first cache level seen by instruction fetches or data accesses."""
        lowers = {c.next_level for c in self.caches.values()}
        for name, c in self.caches.items():
            if name not in lowers and c.serves in (side, "unified"):
                return name
        raise SimulatorInputError(f"platform {self.name}: no top cache level serves {side} accesses")

    def cache_chain(self, side: str) -> list[str]:
        out = [self.top_cache(side)]
        while self.caches[out[-1]].next_level != "memory":
            out.append(self.caches[out[-1]].next_level)
        return out

    def page_kb(self, side: str) -> int:
        """Page size in use for instruction fetches (memory.code_page_kb) or data (memory.page_kb)."""
        return self.memory.code_page_kb if side == "instruction" else self.memory.page_kb

    def tlb_chain(self, side: str) -> list[str]:
        """The TLBs an access of ``side`` goes through for the page size in use (at most two levels)."""
        page = self.page_kb(side)
        targets = {t.next_level for t in self.tlbs.values()}
        firsts = [n for n, t in self.tlbs.items() if t.serves in (side, "unified") and page in t.page_kb
                  and n not in targets]
        if not firsts:
            # a first-level TLB that does not hold this page size passes the lookup to its next level
            firsts = [t.next_level for n, t in self.tlbs.items() if t.serves in (side, "unified")
                      and n not in targets and t.next_level != "walk" and page in self.tlbs[t.next_level].page_kb]
        if not firsts:
            return []
        chain = [firsts[0]]
        nxt = self.tlbs[chain[0]].next_level
        while nxt != "walk" and len(chain) < 2:
            if page in self.tlbs[nxt].page_kb:
                chain.append(nxt)
            nxt = self.tlbs[nxt].next_level
        return chain

    def walk_levels(self, side: str = "data") -> int:
        """Radix walk depth for the page size in use: a large page ends the walk one level (of
        bits_per_level index bits) earlier for each bits_per_level bits it adds to the page offset."""
        w = self.page_walk
        if w.kind != "radix":
            return w.levels
        shrink = int(math.log2(self.page_kb(side) * 1024)) - 12
        return max(1, w.levels - shrink // w.bits_per_level)

    def cycles_to_seconds(self, cycles: float) -> float:
        return cycles / (self.clock_ghz * 1e9)


# ---------------------------------------------------------------------------------------------
def platform_names() -> list[str]:
    return sorted(p.stem for p in PLATFORM_DIR.glob("*.toml"))


def platform_path(name_or_path: str | Path) -> Path:
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.exists():
        if (problem := file_problem(p)) is not None:
            raise SimulatorInputError(f"{p}: {problem}")
        return p
    candidate = PLATFORM_DIR / f"{name_or_path}.toml"
    if not candidate.is_file():
        raise SimulatorInputError(f"unknown platform {str(name_or_path)!r}; known: {', '.join(platform_names())}")
    return candidate


def parse_overrides(items: Iterable[str | tuple[str, Any]]) -> list[tuple[str, Any]]:
    return [split_assignment(i) if isinstance(i, str) else (i[0], i[1]) for i in items]


def load_platform(name_or_path: str | Path, overrides: Iterable[str | tuple[str, Any]] = (),
                  label: str = "--set") -> Platform:
    """Load a shipped platform by name (or a TOML file by path) and apply dotted overrides; ``label`` says
    where the overrides came from in messages (``--set``, or a scenario's ``variants.big``)."""
    path = platform_path(name_or_path)
    raw = load_toml(path)
    source = str(path) if path.parent != PLATFORM_DIR else f"platforms/{path.name}"
    platform = validate_model(Platform, raw, source)
    ov = parse_overrides(overrides)
    if ov:
        platform = with_overrides(platform, ov, source=source, label=label)
    return platform


def with_overrides(platform: Platform, overrides: Iterable[tuple[str, Any]], source: str = "override",
                   label: str = "--set") -> Platform:
    doc = apply_overrides(platform.model_dump(), overrides, SHORTHAND_TABLES, what="platform")
    keys = ", ".join(f"{k}={v}" for k, v in overrides)
    return validate_model(Platform, doc, f"{source} with {label} {keys}")
