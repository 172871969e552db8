"""Allocation behaviour of Java workloads, and the allocation streams it generates.

A behaviour (one ``[alloc.NAME]`` table of ``simulator/workloads/alloc/SUITE.toml``) says how much a
program allocates per bytecode-equivalent unit of work (seed 003 §5.2.2: objects per bytecode, so the
characterisation does not depend on the collector), the sizes of its objects (payload bytes, header
excluded, in bins with a weight and the number of reference fields), how objects cluster into linked
structures that die together, how long those live, how many references point into long-lived data
(fan-in), and where the program calls ``System.gc()``.

The stream is drawn from a seeded ``numpy.random.Generator`` in batches; per object: payload, number of
reference fields, whether it starts a cluster, the cluster's death time (in allocated bytes) and
whether it is immortal, and two uniforms the heap uses to attach it to its cluster's graph and to
draw its cross reference.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.gc.state import IMMORTAL
from whatif.simulator.schema import load_toml, validate_model

WORKLOAD_DIR = Path(__file__).resolve().parent.parent / "workloads" / "alloc"
ALLOC_SCHEMA_VERSION = 1
NORMALISE_TOL = 1e-6
MB = 1024 * 1024


class Lifetime(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    immortal: float = Field(ge=0, le=1, description="clusters that live to the end of the run")
    phase: float = Field(ge=0, le=1, description="clusters that die at the end of their program phase")
    short: float = Field(ge=0, le=1, description="clusters with an exponential lifetime")
    short_mean_kb: float = Field(gt=0, description="mean lifetime of short clusters, in KB allocated")

    @model_validator(mode="after")
    def _normalised(self) -> "Lifetime":
        total = self.immortal + self.phase + self.short
        if abs(total - 1.0) > NORMALISE_TOL:
            raise ValueError(f"immortal + phase + short must be 1, got {total:.6g} (the distribution does "
                             "not normalise)")
        return self


class AllocBehaviour(BaseModel):
    """One workload's allocation behaviour (the keyword arguments of the ``[alloc.NAME]`` table)."""
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = ""
    description: str = ""
    total_alloc_mb: float = Field(gt=0, description="bytes allocated by a full run (seed 003 Table 5-3)")
    bytecodes_millions: float = Field(gt=0, description="bytecode-equivalent units of a full run")
    initial_live_mb: float = Field(default=0.0, ge=0, description="long-lived data built at start-up")
    initial_cluster_objects: float = Field(default=64.0, ge=1)
    cluster_objects: float = Field(default=4.0, ge=1, description="mean objects per cluster (geometric)")
    cross_ref: float = Field(default=0.0, ge=0, le=1, description="probability that an object's first "
                                                                  "reference field points into immortal data")
    phases: int = Field(default=1, ge=1)
    explicit_gc: list[float] = Field(default=[], description="System.gc() calls, as fractions of the run")
    heap_mb: float = Field(default=32.0, gt=0, description="heap of the seed's measurement (Figure 5-9)")
    cycles_per_unit: float = Field(default=30.0, gt=0, description="mutator cycles per unit (estimate) "
                                                                   "when no core model runs the mutator")
    lifetime: Lifetime
    sizes: list[tuple[int, int, float, int]] = Field(min_length=1, description="[payload lo, payload hi, "
                                                                               "weight, reference fields]")

    @field_validator("explicit_gc")
    @classmethod
    def _fractions(cls, v: list[float]) -> list[float]:
        for x in v:
            if not 0.0 < x < 1.0:
                raise ValueError(f"explicit_gc entries are fractions of the run in (0, 1), got {x}")
        return sorted(v)

    @field_validator("sizes")
    @classmethod
    def _sizes(cls, v: list[tuple[int, int, float, int]]) -> list[tuple[int, int, float, int]]:
        total = 0.0
        for i, (lo, hi, w, refs) in enumerate(v):
            if lo <= 0 or hi <= 0:
                raise ValueError(f"sizes[{i}]: object sizes must be positive, got [{lo}, {hi}]")
            if hi < lo:
                raise ValueError(f"sizes[{i}]: hi {hi} is below lo {lo}")
            if w < 0:
                raise ValueError(f"sizes[{i}]: weight must be >= 0, got {w}")
            if refs < 0:
                raise ValueError(f"sizes[{i}]: reference fields must be >= 0, got {refs}")
            total += w
        if abs(total - 1.0) > NORMALISE_TOL:
            raise ValueError(f"the size weights sum to {total:.6g}, not 1 (the distribution does not normalise)")
        return v

    # ---- derived ---------------------------------------------------------------------------------
    @property
    def bytes_per_unit(self) -> float:
        return self.total_alloc_mb * MB / (self.bytecodes_millions * 1e6)

    def mean_payload(self) -> float:
        return float(sum(w * (lo + hi) / 2 for lo, hi, w, _ in self.sizes))

    def min_payload(self) -> int:
        return int(min(lo for lo, _, w, _ in self.sizes if w > 0))

    def max_payload(self) -> int:
        return int(max(hi for _, hi, w, _ in self.sizes if w > 0))


def catalog_path(suite: str) -> Path:
    return WORKLOAD_DIR / f"{suite}.toml"


def alloc_suites() -> list[str]:
    return sorted(p.stem for p in WORKLOAD_DIR.glob("*.toml"))


def load_catalog(suite: str, path: Path | None = None) -> dict[str, AllocBehaviour]:
    path = path or catalog_path(suite)
    raw = load_toml(path)
    source = f"workloads/alloc/{path.name}" if path.parent == WORKLOAD_DIR else str(path)
    version = raw.get("schema_version")
    if version != ALLOC_SCHEMA_VERSION:
        raise SimulatorInputError(f"{source}: schema_version {version!r} is not supported "
                                  f"(this whatif reads version {ALLOC_SCHEMA_VERSION})")
    out = {}
    if not isinstance(raw.get("alloc", {}), dict):
        raise SimulatorInputError(f"{source}: alloc: expected a table of [alloc.NAME] tables, got "
                                  f"{type(raw['alloc']).__name__} {str(raw['alloc'])[:40]}")
    for name, spec in (raw.get("alloc") or {}).items():
        if not isinstance(spec, dict):
            raise SimulatorInputError(f"{source}: alloc.{name}: expected a table")
        out[name] = validate_model(AllocBehaviour, {"name": name, **spec}, f"{source}: alloc.{name}")
    return out


def load_behaviour(workload: str) -> AllocBehaviour:
    """``suite/name`` (e.g. ``specjvm98/javac``), a bare name of a shipped catalog, or
    ``path.toml:name`` for a catalog file of one's own."""
    if ".toml:" in workload:
        file, _, name = workload.rpartition(":")
        cat = load_catalog("", Path(file))
        where = file
    else:
        suite, _, name = workload.rpartition("/")
        suites = [suite] if suite else alloc_suites()
        cat = {}
        for s in suites:
            if not catalog_path(s).is_file():
                raise SimulatorInputError(f"unknown workload suite {s!r}; suites with allocation behaviour: "
                                          f"{', '.join(alloc_suites())}")
            c = load_catalog(s)
            if name in c:
                cat = c
                break
        where = suite or "the shipped catalogs"
    if name not in cat:
        known = sorted(cat) if cat else [n for s in alloc_suites() for n in load_catalog(s)]
        raise SimulatorInputError(f"unknown workload {workload!r} in {where}; known: {', '.join(known)}")
    return cat[name]


# ============================================================================ streams
@dataclass
class StreamBatch:
    payload: np.ndarray          # int32
    nref: np.ndarray             # int32
    cstart: np.ndarray           # uint8: 1 where a cluster starts
    death: np.ndarray            # int64: death time (allocated bytes) of the cluster an object starts
    immortal: np.ndarray         # uint8
    u_attach: np.ndarray         # float64
    u_cross: np.ndarray          # float64
    nbytes: np.ndarray           # int64: heap bytes of each object (header included, aligned)
    cross_p: float
    addr: np.ndarray = None      # int64: heap offset of each object, filled in by the allocator

    def __post_init__(self) -> None:
        if self.addr is None:
            self.addr = np.full(len(self.payload), -1, np.int64)

    def __len__(self) -> int:
        return len(self.payload)


class AllocationStream:
    """Batches of allocations following ``behaviour``, ``scale`` times the run's volume."""

    def __init__(self, behaviour: AllocBehaviour, header_bytes: int, scale: float = 1.0, seed: int = 0,
                 batch: int = 1 << 16):
        if not scale > 0:
            raise SimulatorInputError(f"scale must be > 0, got {scale}")
        self.b = behaviour
        self.hdr = int(header_bytes)
        self.scale = float(scale)
        self.rng = np.random.default_rng(seed)
        self.batch = int(batch)
        self.total_bytes = int(behaviour.total_alloc_mb * MB * scale)
        self.initial_bytes = int(behaviour.initial_live_mb * MB * scale)
        self.phase_bytes = self.total_bytes / behaviour.phases
        self.explicit_bytes = [int(f * self.total_bytes) for f in behaviour.explicit_gc]
        sizes = np.array([(lo, hi, w, r) for lo, hi, w, r in behaviour.sizes], dtype=np.float64)
        self._lo = sizes[:, 0].astype(np.int64)
        self._hi = sizes[:, 1].astype(np.int64)
        self._cdf = np.cumsum(sizes[:, 2] / sizes[:, 2].sum())
        self._refs = sizes[:, 3].astype(np.int64)
        lt = behaviour.lifetime
        self._lt_cdf = np.cumsum([lt.immortal, lt.phase, lt.short])
        self._short_mean = lt.short_mean_kb * 1024 * scale
        self.clock = 0
        self._left = 0             # objects left in the current cluster
        self.units_per_byte = 1.0 / behaviour.bytes_per_unit

    @property
    def done(self) -> bool:
        return self.clock >= self.total_bytes

    def _sizes(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        b = np.minimum(np.searchsorted(self._cdf, self.rng.random(n), side="right"), len(self._cdf) - 1)
        lo, hi = self._lo[b], self._hi[b]
        payload = lo + np.floor(self.rng.random(n) * (hi - lo + 1)).astype(np.int64)
        payload = (payload + 3) // 4 * 4
        return payload, np.minimum(self._refs[b], payload // 4)

    def next_batch(self) -> StreamBatch:
        n = self.batch
        payload, nref = self._sizes(n)
        nbytes = (self.hdr + payload + 7) // 8 * 8
        starts_at = self.clock + np.concatenate([[0], np.cumsum(nbytes)[:-1]])
        prologue = self.clock < self.initial_bytes
        if prologue:
            # the prologue builds the long-lived data, in larger clusters; the batch ends with it
            n = max(1, int(np.searchsorted(starts_at, self.initial_bytes)))
            payload, nref, nbytes, starts_at = payload[:n], nref[:n], nbytes[:n], starts_at[:n]
        mean = self.b.initial_cluster_objects if prologue else self.b.cluster_objects
        cstart = np.zeros(n, np.uint8)
        death = np.zeros(n, np.int64)
        immortal = np.zeros(n, np.uint8)
        p0 = min(self._left, n)            # the cluster of the previous batch continues
        self._left -= p0
        if p0 < n:
            need = n - p0
            lengths = self.rng.geometric(1.0 / mean, size=int(need / mean * 1.25) + 16)
            while lengths.sum() < need:
                lengths = np.concatenate([lengths, self.rng.geometric(1.0 / mean, size=int(need / mean) + 16)])
            ends = p0 + np.cumsum(lengths)
            k = int(np.searchsorted(ends, n, side="left")) + 1       # clusters starting inside the batch
            starts = np.concatenate([[p0], ends[:k - 1]])
            self._left = int(ends[k - 1] - n)
            cstart[starts] = 1
            if prologue:
                death[starts] = IMMORTAL
                immortal[starts] = 1
            else:
                cls = np.searchsorted(self._lt_cdf, self.rng.random(k), side="right")
                t0 = starts_at[starts]
                phase_end = ((t0 // self.phase_bytes).astype(np.int64) + 1) * self.phase_bytes
                short = t0 + 1 + self.rng.exponential(self._short_mean, size=k)
                d = np.where(cls == 1, phase_end, short).astype(np.int64)
                d[cls == 0] = IMMORTAL
                death[starts] = d
                immortal[starts] = (cls == 0).astype(np.uint8)
        self.clock = int(starts_at[-1] + nbytes[-1])
        if prologue and self.clock >= self.initial_bytes:
            self._left = 0                  # the long-lived data ends with the prologue
        return StreamBatch(payload=payload.astype(np.int32), nref=nref.astype(np.int32), cstart=cstart,
                           death=death, immortal=immortal, u_attach=self.rng.random(n), u_cross=self.rng.random(n),
                           nbytes=nbytes, cross_p=float(self.b.cross_ref))


def describe(b: AllocBehaviour) -> dict[str, Any]:
    """The behaviour as a plain document (for reports and --json)."""
    return b.model_dump()
