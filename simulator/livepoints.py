"""Live-points: the warmed state each unit of a SMARTS sample starts from, captured once and replayed.

    result, library = capture_sampled(machine, spec, seed=1, fresh=new_machine)   # a SMARTS run that records
    again = replay_sampled(library, new_machine)       # the same units, timed with no warming at all

A SMARTS run spends nearly all its time warming the caches, TLBs and predictors between its units
(:mod:`simulator.smarts`); yet that state depends on the workload and the memory system, not on the core
that times the units.  Live-points (Wenisch, Wunderlich, Falsafi and Hoe, ISPASS 2006; TurboSMARTS,
SIGMETRICS 2005) store it once per unit, so that every later run of the sample -- a what-if of the core:
widths, queues, units, latencies, penalties -- costs its ``n (W + U)`` detailed instructions and no warming.

What a library holds, per unit.  The words of the state that differ from the library's running *image* of
it (the image starts as a fresh machine's state and takes each unit's words in turn, so a unit's record
holds what changed since those words were last recorded):

* the memory hierarchy's state (:mod:`simulator.memory.state`): every word outside the rows that accesses
  look up together (TLBs, prefetcher tables and engines, counters) and, of those rows -- every cache set,
  every bucket of the memory channel's calendar (:meth:`MemoryHierarchy.lookup_rows`) -- only the rows the
  unit's detailed run looked up: a lookup nearly always writes a word of its row (a hit its way's stamp or
  the set's PLRU bits, a miss its victim's tag, a booking its bucket), so the rows the run changed a word of
  are taken for those it read, and the record is verified (:class:`Capture`); a line's ready time (timed
  prefetch arrival) that lies long before the unit in both the state and the image reads the same either way
  (the line is ready), so it is left out (:data:`READY_PAST`; 22 % of mcf's words on the Nehalem);
* the branch predictors' tables, and the synthesiser's state (the walk's registers and stack, its random
  state, its streams and its per-instruction counters);
* and, as the image has them, the words the previous unit's run wrote (the capture's, and its verifying
  rerun's, which is a replay's): a replay applies the record to the machine's state as the previous unit left
  it, which undoes that run, rather than copying the whole image back before every unit;

and whole: the program position and the clock at the unit's lead-in (its detailed warm-up's first
instruction), the core's fetch-line scalars that warming keeps, and the timer's state
(:meth:`TimerInterrupts.snapshot`).  Checked (format 3): each record and keyframe has a checksum
(:func:`digest`), checked before a replay writes it, and the manifest the checksums of the small arrays and
the size of each state part, checked when the library is opened and when a replay starts; a library found
damaged raises :class:`DamagedLibrary`, one of another state's sizes :class:`ForeignLibrary`.

Exact, with the machine it was captured on.  A replayed unit starts from the image, exactly (every record
also undoes the run before it): outside the rows it equals the captured state word for word, and the rows
the unit reads are among those recorded, ready times long past aside (which the verification, a run from
the image, shows to read the same); the pipeline is the replaying machine's own, as its previous unit left
it, moved on to the captured clock (:meth:`Core.shift_time`), which by induction is the capture's.  So the
replay times every unit exactly as the capture did (``tests/test_livepoints.py``: every unit's cycles and
counters equal).  With another core (the library's key leaves the core out) the state is what warming behind
the capture's core left: the warming clock ran at the capture core's CPI (prefetch engines, the channel's
pacing, the timer), and a row the other core reads that the capture's did not holds what the image last
recorded of it.  That approximation is what ``whatif validate`` measures.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import multiprocessing
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from tokenize import TokenError
from typing import Callable

import numpy as np
from numba import literal_unroll, njit

from whatif.jitcache import drop_stale_caches, sources_digest
from whatif.simulator.core import timing as TM
from whatif.simulator.machine import EVER, Machine
from whatif.simulator.smarts import (DEFAULT_OVERLAP, SegmentSample, SmartsResult, SmartsSpec, _placement, _Tally,
                                     combine, report_share, run_segment, segment_boundary, segment_units)

FORMAT_VERSION = 3       # 2: a record also undoes the previous unit's run (the words that run wrote); 3: checksums
READABLE_FORMATS = (2, 3)  # (format 2's libraries replay without checksums, their records' positions checked)
MANIFEST = "livepoints.json"
CHAIN_ARRAYS = ("offsets", "index", "values", "scalars", "timer", "keyframe_units", "keyframes", "sums",
                "keyframe_sums")
# the arrays a chain may lack -> the manifest's entries for the chain that say it has them
OPTIONAL_ARRAYS = {"timer": ("timer",), "keyframe_units": ("keyframes",), "keyframes": ("keyframes",),
                   "sums": ("sums",), "keyframe_sums": ("keyframes", "sums")}
# each array's type and dimensions, as a capture writes it
ARRAY_TYPES = {"offsets": (np.int64, 1), "index": (np.int32, 1), "values": (np.int64, 1), "scalars": (np.int64, 2),
               "timer": (np.int64, 2), "keyframe_units": (np.int64, 1), "keyframes": (np.int64, 2),
               "sums": (np.uint64, 1), "keyframe_sums": (np.uint64, 1)}
# the arrays the manifest holds a checksum of (the records and keyframes have their own, in sums and keyframe_sums,
# checked as a replay reads them)
SMALL_ARRAYS = ("offsets", "scalars", "timer", "keyframe_units", "sums", "keyframe_sums")
# per unit: lead-in position, clock, the core's fetch-line scalars (what warming keeps of the core)
SCALARS = ("lead", "clock", "last_line", "need_access")
CORE_SCALARS = (TM.S_LAST_LINE, TM.S_NEED_ACCESS)
# a line's ready time this many cycles before a unit's lead-in is past for the whole unit: a unit's accesses begin
# a pipeline's span (fetch to retirement of its oldest instruction) before the lead-in clock, hundreds of cycles
# (a record that leaves out a ready time the unit does read differs in the verification, which then adds it)
READY_PAST = 1 << 14
# a keyframe (the whole image, as a replay has it at a unit's start) is kept once the records since the last one
# hold this many times its size: a replay's later worker rolls forward from the keyframe before its first unit
# through at most that many bytes of records, and keyframes add at most 1/KEYFRAME_RATIO to the library
KEYFRAME_RATIO = 50
VERIFY_UNITS = 256       # records LivePoints.verify checks between reports of its progress
VERIFY_ROUNDS = 4        # reruns that may add the sets a rerun wrote, before a record takes every differing word
# the sources whose code makes the state a library holds, and applies it: every module of the simulator a capture
# loads (tests/test_livepoints.py checks), packages whole so that a module added to one is covered
STATE_SOURCES = ("simulator/core", "simulator/memory", "simulator/synth", "simulator/__init__.py",
                 "simulator/errors.py", "simulator/isa.py", "simulator/livepoints.py", "simulator/lru.py",
                 "simulator/machine.py", "simulator/osnoise.py", "simulator/platform.py", "simulator/pmu.py",
                 "simulator/schema.py", "simulator/smarts.py", "simulator/workload.py")
PACKAGE_ROOT = Path(__file__).resolve().parents[1]


def state_parts(machine: Machine) -> list[np.ndarray]:
    """Flat views of the state a live-point records, memory first: the memory hierarchy's words, the
    predictors' tables, the synthesiser's state.  Restoring writes into these arrays in place (the kernels
    hold them)."""
    synth = machine.synth
    arrays = [machine.memory.state.S, *machine.core.predictor_state,
              synth._state, synth._W, synth._stack, synth._rng, synth._ST]
    views = [a.reshape(-1) for a in arrays]
    for a, v in zip(arrays, views):
        if not np.shares_memory(a, v):
            raise ValueError("a state array is not contiguous: live-points need views of it")
    return views


@functools.cache
def state_code(root: Path = PACKAGE_ROOT) -> str:
    """The digest of the sources :data:`STATE_SOURCES` names under ``root``.  A library captured by code that
    differs in any of them may hold a state this code would not make (a kernel's rule changed, a word's meaning
    moved, with every size the same), and ``whatif_version`` does not change with each such edit: so the code is
    part of the state key, and such a library is another one (captured anew; listed as stale)."""
    files = []
    for rel in STATE_SOURCES:
        path = root / rel
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return sources_digest(files)[:16]


def state_key(machine: Machine) -> str:
    """What a library's state depends on, as a digest: the platform but its core (pipeline, units, latencies,
    penalties: what a replay may change), the predictor, the workload and the seeds, the timer, and the code that
    makes the state (:func:`state_code`)."""
    platform = machine.platform.model_dump(mode="json")
    for k in ("core", "name", "description", "vendor", "model", "pmu"):
        platform.pop(k, None)
    synth = machine.synth
    timer = machine.timer
    what = {"platform": platform, "predictor": machine.core.predictor_config.kind,
            "predictor_tables": [a.shape for a in machine.core.predictor_state],
            "workload": synth.spec.model_dump(mode="json"), "name": synth.name, "seed": synth.seed,
            "run_seed": synth.run_seed, "memory_seed": machine.memory.seed, "instructions": machine.instructions_target,
            "timer": None if timer is None else [timer.period, repr(timer.noise)], "code": state_code()}
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()


@dataclass(frozen=True)
class Chain:
    """One segment's live-points: unit ``j``'s words are ``index[offsets[j]:offsets[j + 1]]`` (positions in the
    concatenated state parts) with their ``values``; ``scalars[j]`` (:data:`SCALARS`), ``timer[j]``
    (:meth:`TimerInterrupts.snapshot`, None without a timer); ``keyframes[i]``: the whole image, as words, after
    the records up to unit ``keyframe_units[i]`` (None: none kept); ``sums[j]`` and ``keyframe_sums[i]``: the
    checksums (:func:`record_digest`, :func:`digest`) of unit ``j``'s record and of keyframe ``i`` (None: a library
    of format 2, which has none)."""
    offsets: np.ndarray
    index: np.ndarray
    values: np.ndarray
    scalars: np.ndarray
    timer: np.ndarray | None
    extended: int = 0         # units whose record its verification extended (Capture)
    widened: int = 0          # units whose record took every differing word of the looked-up rows (Capture)
    keyframe_units: np.ndarray | None = None
    keyframes: np.ndarray | None = None
    sums: np.ndarray | None = None
    keyframe_sums: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.scalars)

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, name).nbytes for name in CHAIN_ARRAYS if getattr(self, name) is not None)

    @property
    def record_sums(self) -> np.ndarray:
        """The records' checksums as :func:`_apply_records` takes them (none: format 2)."""
        return np.zeros(0, np.uint64) if self.sums is None else self.sums


def design(spec: SmartsSpec, seed: int, start: int, total: int) -> dict:
    """What places a sample's units: U, W, n, the segments and their overlap, bounded warming's B, the seed
    that draws the first unit, and where the measured run starts and how long it is."""
    n = spec.layout(total)[1]
    return {"unit": spec.unit, "warmup": spec.warmup, "units": n, "segments": spec.segments,
            "overlap": spec.overlap if spec.segments > 1 else 0, "warming": spec.warming, "seed": int(seed),
            "start": int(start), "instructions": int(total)}


def library_id(key: str, placed: dict) -> str:
    """A library's name for its state key and design (:func:`design`)."""
    return hashlib.sha256((key + json.dumps(placed, sort_keys=True)).encode()).hexdigest()[:24]


@dataclass(frozen=True)
class LivePoints:
    """A sample's live-points: its design (spec, seed, the run's start and length), the state key of the
    machine it was captured on, and a chain per segment; ``where``: the directory it was loaded from;
    ``state_words``: the words of each state part (:func:`state_parts`) of the machine it was captured on (None: a
    library of format 2, which does not say), which a replaying machine's must equal; ``code``: the
    :func:`state_code` of the whatif that captured it (None: one that did not say)."""
    spec: SmartsSpec
    seed: int
    start: int
    total: int
    key: str
    chains: tuple[Chain, ...]
    about: dict = field(default_factory=dict, compare=False)     # what captured it (the manifest's, as saved)
    where: Path | None = field(default=None, compare=False)
    state_words: tuple[int, ...] | None = field(default=None, compare=False)
    code: str | None = field(default=None, compare=False)

    @property
    def units(self) -> int:
        return sum(len(c) for c in self.chains)

    @property
    def design(self) -> dict:
        return design(self.spec, self.seed, self.start, self.total)

    @property
    def id(self) -> str:
        return library_id(self.key, self.design)

    def save(self, directory: Path, about: dict | None = None) -> None:
        """Write the library into ``directory``: ``livepoints.json`` (format, key, design, sizes, and ``about``:
        what captured it) and the chains' ``.npy`` arrays, which :meth:`load` maps.  The directory is empty, or
        the one :func:`capture_sampled` streamed the large arrays into (``into``): those files are kept."""
        directory = Path(directory)
        if any(c.sums is None for c in self.chains):
            raise ValueError("a library without checksums (format 2) is not saved again")
        for k, chain in enumerate(self.chains):
            for name in CHAIN_ARRAYS:
                array = getattr(chain, name)
                if array is not None and not (directory / f"chain{k}.{name}.npy").exists():
                    np.save(directory / f"chain{k}.{name}.npy", array, allow_pickle=False)
        doc = {"whatif_live_points": FORMAT_VERSION, "key": self.key, "design": self.design, "id": self.id,
               "chains": [{"units": len(c), "words": int(len(c.index)), "extended": c.extended, "widened": c.widened,
                           "timer": c.timer is not None,
                           "keyframes": 0 if c.keyframe_units is None else len(c.keyframe_units), "sums": True,
                           "digests": _small_digests(c)} for c in self.chains],
               "bytes": self.nbytes, "about": about or {},
               **({} if self.state_words is None else {"state_words": list(self.state_words)}),
               **({} if self.code is None else {"state_code": self.code})}
        (directory / MANIFEST).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, directory: Path) -> "LivePoints":
        """The library :meth:`save` wrote into ``directory``, its arrays memory-mapped; raises ValueError naming
        what is wrong when the directory does not hold one of this format."""
        directory = Path(directory)
        try:
            doc = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"{directory}: no readable {MANIFEST} ({exc})") from None
        if not isinstance(doc, dict) or doc.get("whatif_live_points") not in READABLE_FORMATS:
            raise ValueError(f"{directory}/{MANIFEST}: not a live-point library of format "
                             f"{' or '.join(map(str, READABLE_FORMATS))}")
        checked = doc["whatif_live_points"] >= 3            # (format 2 has no checksums)
        try:
            placed = doc["design"]
            spec = SmartsSpec(unit=placed["unit"], warmup=placed["warmup"], units=placed["units"],
                              segments=placed["segments"], overlap=placed["overlap"] or DEFAULT_OVERLAP,
                              warming=placed["warming"])
            chains = []
            for k, about in enumerate(doc["chains"]):
                if checked and not about.get("sums"):
                    raise DamagedLibrary(str(directory), f"chain {k} has no checksums")
                # (plain views of the maps: a memmap's slices are memmaps, each costing Python to make)
                arrays = {name: np.asarray(np.load(directory / f"chain{k}.{name}.npy", mmap_mode="r",
                                                   allow_pickle=False))
                          for name in CHAIN_ARRAYS if all(about.get(e) for e in OPTIONAL_ARRAYS.get(name, ()))}
                for name, a in arrays.items():
                    dtype, ndim = ARRAY_TYPES[name]
                    if a.dtype != dtype or a.ndim != ndim:
                        raise DamagedLibrary(str(directory), f"chain{k}.{name}.npy holds {a.ndim}-D {a.dtype}, not "
                                                             f"{ndim}-D {np.dtype(dtype)}")
                chain = Chain(**{name: arrays.get(name) for name in CHAIN_ARRAYS}, extended=about["extended"],
                              widened=about["widened"])
                if checked and _small_digests(chain) != about["digests"]:
                    wrong = sorted(n for n, d in _small_digests(chain).items() if about["digests"].get(n) != d)
                    raise DamagedLibrary(str(directory), f"chain{k}.{wrong[0] + '.npy' if wrong else '*'} does not "
                                                         f"match its checksum")
                chains.append(chain)
            words = doc.get("state_words")
            if words is not None and (not isinstance(words, list) or not all(type(w) is int for w in words)):
                raise TypeError(f"state_words: {words!r:.60}, not a list of numbers of words")
            code = doc.get("state_code")
            if code is not None and not isinstance(code, str):
                raise TypeError(f"state_code: {code!r:.60}, not a digest")
            library = cls(spec, placed["seed"], placed["start"], placed["instructions"], doc["key"], tuple(chains),
                          dict(doc.get("about") or {}), directory, None if words is None else tuple(words), code)
        except DamagedLibrary:
            raise
        # (numpy's reader of a damaged .npy header can raise tokenize's TokenError: found by the fuzz test)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError, SyntaxError, TokenError) as exc:
            raise DamagedLibrary(str(directory), f"{type(exc).__name__}: {exc}") from None
        if library.id != doc.get("id") or [len(c) for c in chains] != [a["units"] for a in doc["chains"]] or \
                any(len(c.offsets) != len(c) + 1 or not c.offsets[-1] == len(c.index) == len(c.values) or
                    c.offsets[0] != 0 or np.any(np.diff(c.offsets) < 0) or c.scalars.shape[1] != len(SCALARS) or
                    (c.timer is not None and len(c.timer) != len(c)) or
                    (c.sums is not None and len(c.sums) != len(c)) or
                    (c.keyframes is not None and (len(c.keyframes) != len(c.keyframe_units) or
                                                  np.any(np.diff(c.keyframe_units) <= 0) or
                                                  np.any((c.keyframe_units < 0) | (c.keyframe_units >= len(c))) or
                                                  (c.keyframe_sums is not None and
                                                   len(c.keyframe_sums) != len(c.keyframes))))
                    for c in chains):
            raise DamagedLibrary(str(directory), "its arrays do not match its manifest")
        return library

    @property
    def nbytes(self) -> int:
        return sum(c.nbytes for c in self.chains)

    @property
    def label(self) -> str:
        """How errors name the library: where it was loaded from."""
        return "a live-point library" if self.where is None else str(self.where)

    def verify(self, advance: Callable[[int], None] | None = None) -> None:
        """Read every record and keyframe and check it against its checksum, as a replay does (a library of format 2
        has none: its records' spans only; a replay checks every position as it writes it); raises
        :class:`DamagedLibrary` naming the first that fails.
        ``advance(n)``: ``n`` more bytes of records and keyframes checked."""
        for k, c in enumerate(self.chains):
            for first in range(0, len(c), VERIFY_UNITS):
                last = min(first + VERIFY_UNITS, len(c))
                bad, fault = _first_fault(c.offsets[first:last + 1], c.index, c.values, c.record_sums[first:last])
                if bad >= 0:
                    raise DamagedLibrary(self.label, f"chain{k}: unit {first + bad}'s record {RECORD_FAULTS[fault]}")
                if advance is not None:
                    advance(int(c.offsets[last] - c.offsets[first]) * 12)
            for i in range(0 if c.keyframe_sums is None else len(c.keyframe_sums)):
                if digest(c.keyframes[i]) != c.keyframe_sums[i]:
                    raise DamagedLibrary(self.label, f"chain{k}: keyframe {i} does not match its checksum")
                if advance is not None:
                    advance(c.keyframes[i].nbytes)


class _ArrayFile:
    """An ``.npy`` file written a block of rows at a time, its shape set when it is closed: a capture's records
    go to disk as they are made, so that a library of gigabytes is never held in memory and a disk that fills
    stops the capture when it does (an ``OSError``), not after it."""

    HEADER = 128            # numpy's header of any shape a library holds (padded to 64-byte alignment)

    def __init__(self, path: Path, dtype, width: int | None = None):
        self.path, self.dtype, self.width, self.rows = Path(path), np.dtype(dtype), width, 0
        self._fh = open(self.path, "xb")
        self._fh.write(bytes(self.HEADER))

    def append(self, rows: np.ndarray) -> None:
        """Rows of a 1-D file, or one row of a file of ``width`` columns."""
        rows = np.ascontiguousarray(rows, self.dtype)
        self._fh.write(memoryview(rows).cast("B"))
        self.rows += len(rows) if self.width is None else 1

    def close(self) -> np.ndarray:
        """The file completed, mapped (a plain view, as :meth:`LivePoints.load` has it)."""
        shape = (self.rows,) if self.width is None else (self.rows, self.width)
        self._fh.seek(0)
        np.lib.format.write_array_header_1_0(self._fh, {"descr": np.lib.format.dtype_to_descr(self.dtype),
                                                        "fortran_order": False, "shape": shape})
        if self._fh.tell() != self.HEADER:
            raise ValueError(f"{self.path}: numpy's header of shape {shape} is not {self.HEADER} bytes")
        self._fh.close()
        return np.asarray(np.load(self.path, mmap_mode="r", allow_pickle=False))

    def discard(self) -> None:
        self._fh.close()


class _ArrayRows:
    """:class:`_ArrayFile`'s interface held in memory (a capture without a directory to stream into)."""

    def __init__(self, dtype, width: int | None = None):
        self.dtype, self.width, self._parts = np.dtype(dtype), width, []

    def append(self, rows: np.ndarray) -> None:
        """Rows of a 1-D array, or one row of an array of ``width`` columns (copied, as a file would have them)."""
        self._parts.append(np.array(rows, self.dtype))

    def close(self) -> np.ndarray:
        """The rows as one array, taken from the parts as they are copied (never held twice)."""
        one_each = self.width is not None
        out = np.empty((len(self._parts), self.width) if one_each else sum(len(a) for a in self._parts), self.dtype)
        at = 0
        for j, a in enumerate(self._parts):
            n = 1 if one_each else len(a)
            out[at:at + n] = a
            at += n
            self._parts[j] = None
        self._parts = []
        return out

    def discard(self) -> None:
        self._parts = []


class _Image:
    """The library's running image of a machine's state parts, and their place in one index space."""

    def __init__(self, machine: Machine):
        self.parts = state_parts(machine)
        self.image = [p.copy() for p in self.parts]
        self.offsets = np.cumsum([0] + [len(p) for p in self.parts])
        if self.offsets[-1] >= 2**31:
            raise ValueError(f"the state has {self.offsets[-1]:,} words: more than live-points index")


class _Snapshot:
    """Everything of ``machine`` a unit's detailed run reads or writes, copied (:meth:`put` puts it back): the
    state parts, the pipeline, the counters, the timer, the program position."""

    def __init__(self, machine: Machine, parts: list[np.ndarray]):
        core = machine.core
        self.arrays = [p.copy() for p in parts] + [a.copy() for a in (*core.state, core.CT, core.CS)]
        self.timer = None if machine.timer is None else machine.timer.snapshot()
        self.scalars = (machine.program_retired, machine.pos, machine.os_cycles)

    def put(self, machine: Machine, parts: list[np.ndarray]) -> None:
        core = machine.core
        for live, saved in zip([*parts, *core.state, core.CT, core.CS], self.arrays):
            live[...] = saved
        if self.timer is not None:
            machine.timer.restore(self.timer)
        machine.program_retired, machine.pos, machine.os_cycles = self.scalars


class Capture(_Image):
    """Records the live-point of every unit :func:`~simulator.smarts.run_segment` times on ``machine``, which
    must be fresh (the image starts from a fresh machine's state, as a replay's does).

    Each record is verified: the unit is timed a second time from the lead-in with the memory, predictor and
    synthesiser state replaced by the image as the record leaves it, which is what a replay starts from.  Where
    the two runs end differently (a lookup that wrote nothing: a set a prefetcher only probed, a PLRU hit that
    left the bits as they were), the rows the second run wrote are added to the record and it is verified
    again; after :data:`VERIFY_ROUNDS` the record takes every differing word of the rows, which makes the
    image the captured state word for word.  ``extended`` and ``widened`` count those units.

    ``into``: a directory to stream the records and keyframes into as ``name.index.npy``, ``name.values.npy``
    and ``name.keyframes.npy`` (:class:`_ArrayFile`), which the chain then maps; without it they are held in
    memory (:class:`_ArrayRows`)."""

    def __init__(self, machine: Machine, into: Path | None = None, name: str = "chain0"):
        super().__init__(machine)

        def sink(array: str, dtype, width: int | None = None) -> _ArrayFile | _ArrayRows:
            return _ArrayRows(dtype, width) if into is None else _ArrayFile(Path(into) / f"{name}.{array}.npy",
                                                                              dtype, width)
        self._sink = sink
        self._files: dict[str, _ArrayFile | _ArrayRows] = {"index": sink("index", np.int32),
                                                           "values": sink("values", np.int64)}
        self._lengths: list[int] = []                     # of each unit's record
        self.rows = machine.memory.lookup_rows()
        in_rows = np.zeros(len(self.parts[0]), bool)
        self.row_of = []                                  # per table of rows: the row of each memory word (-1: none)
        for rows in self.rows:
            in_rows[rows] = True
            at = np.full(len(in_rows), -1, np.int64)
            at[rows] = np.arange(len(rows))[:, None]
            self.row_of.append(at)
        self.outside = ~in_rows
        self.is_ready = np.zeros(len(in_rows), bool)     # the lines' ready times (timed prefetch arrival)
        self.is_ready[machine.memory.ready_words()] = True
        self._clock = 0                                   # the unit's lead-in cycle
        self.scalars: list[list[int]] = []
        self.timer: list[np.ndarray] = []
        self._lead: _Snapshot | None = None
        self.extended = self.widened = 0
        self._written = [np.zeros(0, np.int64) for _ in self.parts]     # by the last unit's run, per part
        self.keyframe_units: list[int] = []
        self.sums: list[int] = []                         # of each unit's record, and of each keyframe
        self.keyframe_sums: list[int] = []
        self._since_keyframe = 0                          # bytes of records since the last keyframe

    def at_lead(self, machine: Machine) -> None:
        """The unit's lead-in: the machine warmed and its blocks spent (fenced) here."""
        if machine.pos < len(machine.block) or machine.synth.position != machine.program_retired:
            raise ValueError("live-points need the machine's blocks to end at the lead-in (Machine.fence)")
        self._lead = _Snapshot(machine, self.parts)
        self._clock = machine.core.cycles
        self.scalars.append([machine.program_retired, machine.core.cycles,
                             *(int(machine.core.state.S[k]) for k in CORE_SCALARS)])
        if machine.timer is not None:
            self.timer.append(machine.timer.snapshot())

    def after_unit(self, machine: Machine, end: int) -> None:
        """The unit, which ended at program position ``end``, timed: record the words its lead-in state differs
        in from the image -- of the rows, those of the rows the unit's run changed a word of -- take them
        into the image, and verify the record (class docstring)."""
        lead, image = self._lead, self.image
        memory, seen = lead.arrays[0], image[0]
        words = np.concatenate([np.flatnonzero((memory != seen) & self.outside),
                                self._row_words(np.flatnonzero(memory != self.parts[0]))])
        index = [self._differing(words, memory, seen)]
        index += [np.flatnonzero(x != a) for x, a in zip(lead.arrays[1:len(image)], image[1:])]
        for idx, x, a in zip(index, lead.arrays, image):
            a[idx] = x[idx]
        extended = False
        after = (_Snapshot(machine, self.parts), _outcome(machine))     # the unit's run, as it ended
        for _ in range(VERIFY_ROUNDS):
            same, wrote = self._rerun(machine, end, *after)
            if same:
                break
            more = self._differing(self._row_words(wrote), memory, seen)     # the rows the second run wrote
            if not len(more):
                break
            seen[more] = memory[more]
            index[0] = _union(index[0], more, len(seen))
            extended = True
        else:
            same, wrote = self._rerun(machine, end, *after)
        if not same:                                    # still not the unit's run: every differing word of the rows
            rest = np.flatnonzero((memory != seen) & ~self.outside)
            seen[rest] = memory[rest]
            index[0] = _union(index[0], rest, len(seen))
            wrote = np.zeros(0, np.int64)              # (the image is now the lead-in's: a rerun is the unit's run)
            self.widened += 1
        self.extended += extended
        # and the words the previous unit's run wrote, as the image has them: a replay undoes that run's writes
        # with this record rather than by copying the whole image back before every unit
        index = [_union(idx, w, len(a)) for idx, w, a in zip(index, self._written, image)]
        words = np.concatenate([idx + at for idx, at in zip(index, self.offsets)]).astype(np.int32)
        values = np.concatenate([_as_words(a[idx]) for idx, a in zip(index, image)])
        self._files["index"].append(words)
        self._files["values"].append(values)
        self._lengths.append(len(words))
        self.sums.append(record_digest(words, values))
        self._since_keyframe += words.nbytes + values.nbytes
        if self._since_keyframe >= KEYFRAME_RATIO * 8 * self.offsets[-1]:
            self.keyframe_units.append(len(self._lengths) - 1)
            if "keyframes" not in self._files:
                self._files["keyframes"] = self._sink("keyframes", np.int64, int(self.offsets[-1]))
            keyframe = np.concatenate([_as_words(a) for a in image])
            self._files["keyframes"].append(keyframe)
            self.keyframe_sums.append(digest(keyframe))
            self._since_keyframe = 0
        self._written = [np.flatnonzero(x != p) for x, p in zip(lead.arrays, self.parts)]
        self._written[0] = _union(self._written[0], wrote, len(memory))     # and what a replay's run writes
        self._lead = None

    def _differing(self, words: np.ndarray, memory: np.ndarray, seen: np.ndarray) -> np.ndarray:
        """Of the memory state's ``words``, those whose lead-in value (``memory``) the image (``seen``) does not
        hold, or hold in effect: a line's ready time long past in both reads as ready in every unit from this
        one on (:meth:`MemoryHierarchy.ready_words`; the unit's run is verified against the image)."""
        differ = words[memory[words] != seen[words]]
        past = self._clock - READY_PAST
        stale = self.is_ready[differ] & (memory[differ] <= past) & (seen[differ] <= past)
        return differ[~stale]

    def _row_words(self, changed: np.ndarray) -> np.ndarray:
        """Every word of the rows that hold one of the memory state's words ``changed``."""
        return np.concatenate([np.zeros(0, np.int64)] + [rows[np.unique(at[changed][at[changed] >= 0])].ravel()
                                                          for rows, at in zip(self.rows, self.row_of)])

    def _rerun(self, machine: Machine, end: int, after: "_Snapshot", outcome: list[np.ndarray]
               ) -> tuple[bool, np.ndarray]:
        """Time the unit again from its lead-in with the state parts taken from the image, as a replay times it:
        whether it ends as the unit's run did (``outcome``: pipeline, counters, timer, position), and the memory
        words it wrote.  The machine is put back as that run left it (``after``)."""
        told, machine.on_retired = machine.on_retired, None
        try:
            self._lead.put(machine, self.parts)
            for live, a in zip(self.parts, self.image):
                live[:] = a
            machine.advance_to(EVER - machine.origin, program_limit=end)
            same = all(np.array_equal(x, y) for x, y in zip(outcome, _outcome(machine)))
            return same, np.flatnonzero(self.parts[0] != self.image[0])
        finally:
            after.put(machine, self.parts)
            machine.on_retired = told

    def discard(self) -> None:
        """Close the files a failed capture was streaming into (the caller removes them)."""
        for f in self._files.values():
            f.discard()
        self._files = {}

    def chain(self) -> Chain:
        """The records as one chain: the streamed files mapped, or the records held in memory (taken from the
        capture as they are copied: a library of gigabytes is never held twice)."""
        offsets = np.cumsum([0] + self._lengths).astype(np.int64)
        try:
            arrays = {name: f.close() for name, f in self._files.items()}
        finally:
            self.discard()                                # (any left open by a close that failed)
        index, values, keyframes = arrays["index"], arrays["values"], arrays.get("keyframes")
        return Chain(offsets, index, values, np.array(self.scalars, np.int64).reshape(-1, len(SCALARS)),
                     np.array(self.timer, np.int64) if self.timer else None, self.extended, self.widened,
                     keyframe_units=np.array(self.keyframe_units, np.int64) if keyframes is not None else None,
                     keyframes=keyframes, sums=np.array(self.sums, np.uint64),
                     keyframe_sums=np.array(self.keyframe_sums, np.uint64) if keyframes is not None else None)


def _union(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """The sorted union of two sets of positions in ``range(n)`` (a mask: hashing them costs more)."""
    if not len(b):
        return a
    if not len(a):
        return b
    mask = np.zeros(n, bool)
    mask[a] = True
    mask[b] = True
    return np.flatnonzero(mask)


def _outcome(machine: Machine) -> list[np.ndarray]:
    """What a later unit of a replay sees of a unit's run, beside the state parts it restores: the pipeline,
    the counters (the memory's among them), the timer, the program position."""
    core = machine.core
    return [*core.state, core.CT, core.CS, machine.counter_words(),
            np.array([machine.program_retired, machine.pos, machine.os_cycles]),
            np.zeros(0) if machine.timer is None else machine.timer.snapshot()]


class ForeignLibrary(ValueError):
    """A library this whatif cannot replay: captured by another version of it, whose state differs in size."""


class DamagedLibrary(ValueError):
    """A library found damaged: ``label`` names it, ``what`` says what is wrong (a file, a record, a keyframe)."""

    def __init__(self, label: str, what: str):
        super().__init__(label, what)              # (as args: it pickles, from a replay's worker process)
        self.label, self.what = label, what

    def __str__(self) -> str:
        return f"{self.label}: a damaged live-point library ({self.what})"


@njit(nogil=True, cache=True)
def digest(words):
    """A checksum of a 1-D array's words (of any integer type): the sum of (word XOR a mix of its position) times an
    odd constant, so that any one word changed changes it (words swapped: almost surely).  A loop LLVM vectorises:
    4.2 us for a 422 KB record of mcf, where the CRC-32 of :mod:`simulator.trace_wtr` took 252 us, half of the
    unit's replay."""
    h = np.uint64(0)
    for q in range(len(words)):
        h += (np.uint64(words[q]) ^ (np.uint64(q) * np.uint64(0x9E3779B97F4A7C15))) * np.uint64(0xBF58476D1CE4E5B9)
    return h


@njit(nogil=True, cache=True)
def record_digest(index, values):
    """The checksum of a record: its positions' and its values' (:func:`digest`)."""
    return digest(index) * np.uint64(3) + digest(values)


def _small_digests(chain: Chain) -> dict[str, int]:
    """The checksums of a chain's small arrays (:data:`SMALL_ARRAYS`), which its manifest holds."""
    return {name: int(digest(np.ascontiguousarray(a).reshape(-1))) for name in SMALL_ARRAYS
            if (a := getattr(chain, name)) is not None}


# what a record that is not applied failed (_apply_records)
RECORD_FAULTS = ("spans words outside the library's", "does not match its checksum",
                 "places words outside the state")


@njit(nogil=True, cache=True)
def _apply_records(parts, bounds, offsets, index, values, sums, first, last):
    """Write records ``first .. last - 1`` into ``parts`` in turn: record ``u``'s words are
    ``index[offsets[u]:offsets[u + 1]]``, positions in the parts' one index space, part after part (part ``k``
    holds ``bounds[k] .. bounds[k + 1] - 1``), each int64 word cast to its part's type bit for bit (unsigned 64-bit
    words and narrower types as :func:`_as_words` stored them).  One call for any number of records, without
    the GIL, so that replays run side by side and a roll forward costs no Python per record.  Each record's
    span and checksum (``sums[u]``; an empty ``sums``: none, format 2) are checked before it is written, and its
    positions as it is: each must lie in the part being written (a damaged one would write outside it).  Returns
    -1, or the first record that failed and which check (:data:`RECORD_FAULTS`; of a record whose checksum failed
    nothing is written)."""
    for u in range(first, last):
        fault = _record_fault(offsets, index, values, sums, u)
        if fault >= 0:
            return u, fault
        if not _write_record(parts, bounds, index, values, offsets[u], offsets[u + 1]):
            return u, 2
    return -1, 0


@njit(nogil=True, cache=True)
def _record_fault(offsets, index, values, sums, u):
    """Which check of :data:`RECORD_FAULTS` before writing record ``u`` fails, or -1 (:func:`_apply_records`)."""
    p = offsets[u]
    hi = offsets[u + 1]
    if p < 0 or hi < p or hi > len(index):
        return 0
    if len(sums) and record_digest(index[p:hi], values[p:hi]) != sums[u]:
        return 1
    return -1


@njit(nogil=True, cache=True)
def _first_fault(offsets, index, values, sums):
    """The first record of a chain that fails a check of :data:`RECORD_FAULTS` made before writing, and which, or
    (-1, 0) (:meth:`LivePoints.verify`; a position is checked against the state as it is written)."""
    for u in range(len(offsets) - 1):
        fault = _record_fault(offsets, index, values, sums, u)
        if fault >= 0:
            return u, fault
    return -1, 0


@njit(nogil=True, cache=True)
def _write_record(parts, bounds, index, values, p, hi):
    """Write the words ``p .. hi - 1`` of the records into ``parts`` (:func:`_apply_records`), the positions of a
    part's words in any order, the parts' in turn; False when a position lies outside the part it comes in
    (the words before it written).  A function of its own: numba could not type literal_unroll's loop beside the
    checks' early return."""
    ok = True
    k = 0
    for a in literal_unroll(parts):
        base = bounds[k]
        end = bounds[k + 1]
        while ok and p < hi and index[p] < end:
            if index[p] < base:
                ok = False
            else:
                a[index[p] - base] = values[p]
                p += 1
        k += 1
    return ok and p == hi


def _as_words(x: np.ndarray) -> np.ndarray:
    """Values of any state array as int64 words, bit for bit where they are 64-bit."""
    return x.view(np.int64) if x.dtype.itemsize == 8 else x.astype(np.int64)


def _from_words(words: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """:func:`_as_words` undone."""
    return words.view(dtype) if np.dtype(dtype).itemsize == 8 else words.astype(dtype)


class Replay(_Image):
    """Puts a fresh ``machine`` into each unit's live-point of ``chain`` in turn (:meth:`restore`); a record or
    keyframe found damaged raises :class:`DamagedLibrary`, its message beginning with ``label`` and naming the chain
    (``name``) and the unit."""

    def __init__(self, machine: Machine, chain: Chain, label: str = "a live-point library", name: str = "chain0"):
        super().__init__(machine)
        self.chain = chain
        self.label = label
        self.name = name
        self.at = 0                                   # the next unit whose record the image takes
        self.restored = 0

    def restore(self, machine: Machine, j: int) -> None:
        """Put ``machine`` into unit ``j``'s live-point (units in order from any first one: the image is rolled
        forward to it and copied in; a later unit's record then undoes the run before it and brings the rest)."""
        if self.restored == 0:
            self.roll(j)
            for live, a in zip(self.parts, self.image):
                live[:] = a
            self.image = None                           # (the machine's state is the image from here on)
        else:
            if j != self.at:
                raise ValueError(f"live-points are replayed in order: unit {self.at} next, not {j}")
            self._apply(self.parts, j)
            self.at = j + 1
        c = self.chain
        lead, clock, *core = (int(v) for v in c.scalars[j])
        for k, v in zip(CORE_SCALARS, core):
            machine.core.state.S[k] = v
        if machine.timer is not None:
            machine.timer.restore(c.timer[j])
        skipped = lead - machine.program_retired
        machine.program_retired = lead
        machine.pos = len(machine.block)              # spent: the next block begins at the lead-in
        if machine.on_retired is not None and skipped > 0 and (self.restored or j == 0):
            machine.on_retired(skipped)               # (a later part's lead-up is the parts' before it)
        self.restored += 1
        machine.core.shift_time(clock - machine.core.cycles)

    def roll(self, j: int) -> None:
        """Take the records up to unit ``j``'s into the image (without touching the machine)."""
        if j < self.at:
            raise ValueError(f"live-points are replayed in order: unit {self.at} next, not {j}")
        c = self.chain
        if c.keyframe_units is not None:
            k = int(np.searchsorted(c.keyframe_units, j, side="right")) - 1     # the last keyframe at or before j
            if k >= 0 and c.keyframe_units[k] >= self.at:
                words = c.keyframes[k]
                if len(words) != self.offsets[-1]:
                    raise ValueError(f"a keyframe of {len(words):,} words, the state {self.offsets[-1]:,}")
                if c.keyframe_sums is not None and digest(words) != c.keyframe_sums[k]:
                    raise DamagedLibrary(self.label, f"{self.name}: keyframe {k} does not match its checksum")
                for a, lo, hi in zip(self.image, self.offsets[:-1], self.offsets[1:]):
                    a[:] = _from_words(words[lo:hi], a.dtype)
                self.at = int(c.keyframe_units[k]) + 1
        self._apply(self.image, self.at, j + 1)
        self.at = j + 1

    def _apply(self, parts: list[np.ndarray], first: int, last: int | None = None) -> None:
        """Write the records of units ``first .. last - 1`` (``first`` alone by default) into ``parts`` (the
        image's or the machine's), in order."""
        c = self.chain
        bad, fault = _apply_records(tuple(parts), self.offsets, c.offsets, c.index, c.values, c.record_sums, first,
                                    first + 1 if last is None else last)
        if bad >= 0:
            raise DamagedLibrary(self.label, f"{self.name}: unit {bad}'s record {RECORD_FAULTS[fault]}")


def capture_sampled(machine: Machine, spec: SmartsSpec, seed: int = 0, events: dict[str, str] | None = None,
                    fresh: Callable[[], Machine] | None = None, start: int = 0, workers: int = 1,
                    progress: Callable[[int], None] | None = None, into: Path | None = None
                    ) -> tuple[SmartsResult, LivePoints]:
    """:func:`~simulator.smarts.run_sampled` of a fresh ``machine`` that also captures the sample's live-points
    (one chain per segment; a later segment on ``fresh()``), the measured run starting after ``start``
    instructions functionally warmed.  The estimates are the sampled run's (the machine's blocks are cut at
    every unit's lead-in and end, which leaves the instructions and their timing as they are: a test compares
    them with a run that does not capture).  ``workers``: threads that capture the segments side by side (the
    kernels release the GIL; the library is the same either way); ``progress(n)``: program instructions covered,
    ``start`` included (a later segment's share from where the segment before it ends); ``into``: an empty
    directory to stream the records into as they are made (:class:`Capture`), which :meth:`LivePoints.save`
    then completes, rather than holding them in memory."""
    if spec.segments > 1 and fresh is None:
        raise ValueError(f"a sample of {spec.segments} segments needs `fresh`, a new machine for each later one")
    if spec.second_run:
        raise ValueError("live-points record one sample: N = auto would record two")
    if machine.program_retired:
        raise ValueError("live-points are captured from a fresh machine (the image starts from its state)")
    key = state_key(machine)
    words = tuple(len(p) for p in state_parts(machine))
    total = machine.instructions_target - start
    t0 = time.perf_counter()

    def segment(k: int) -> tuple[SegmentSample, Chain]:
        m = machine if k == 0 else fresh()
        if progress is not None:
            if k == 0:
                m.on_retired = progress
            else:
                report_share(m, start + segment_boundary(spec, total, seed, k), progress)
        capture = Capture(m, into, f"chain{k}")
        try:
            if k == 0 and start:
                m.fence = start
                m.warm_functionally(start)
            part = run_segment(m, spec, seed, k, events, start=start, capture=capture)
        except BaseException:
            capture.discard()
            raise
        return part, capture.chain()

    if workers <= 1 or spec.segments == 1:
        done = [segment(k) for k in range(spec.segments)]
    else:
        with ThreadPoolExecutor(max_workers=min(workers, spec.segments), thread_name_prefix="capture") as pool:
            done = list(pool.map(segment, range(spec.segments)))
    result = combine(spec, total, seed, [part for part, _ in done], time.perf_counter() - t0)
    return result, LivePoints(spec, seed, start, total, key, tuple(chain for _, chain in done), state_words=words,
                              code=state_code())


def replay_segment(machine: Machine, library: LivePoints, segment: int = 0, events: dict[str, str] | None = None,
                   part: tuple[int, int] = (0, 1)) -> SegmentSample:
    """Time ``segment``'s units on a fresh ``machine`` from the library's live-points: no warming, no
    fast-forward; each unit's detailed warm-up and unit run as in :func:`~simulator.smarts.run_segment`.
    ``part = (k, K)``: only the k-th of K runs of consecutive units of the segment (the image rolled forward
    to its first unit; its pipeline starts empty rather than as the unit before left it, which the unit's
    detailed warm-up refills)."""
    spec = library.spec
    population, n, period, first = _placement(spec, library.total, library.seed)
    units = segment_units(spec, n, segment)
    chain = library.chains[segment]
    if len(chain) != len(units):
        raise ValueError(f"segment {segment} of the library holds {len(chain)} units, the sample {len(units)}")
    k, parts = part
    mine = range(k * len(units) // parts, (k + 1) * len(units) // parts)
    t0 = time.perf_counter()
    replay = Replay(machine, chain, library.label, f"chain{segment}")
    words = tuple(int(n) for n in np.diff(replay.offsets))
    if library.state_words is not None and words != library.state_words:
        raise ForeignLibrary(f"{library.label}: captured by another version of whatif (whatif "
                             f"{library.about.get('whatif_version', '?')}: its state's parts hold "
                             f"{', '.join(f'{n:,}' for n in library.state_words)} words, this one's "
                             f"{', '.join(f'{n:,}' for n in words)})")
    tally = _Tally(machine, len(mine), events)
    detailed = 0
    U, start = spec.unit, library.start
    for j, u in enumerate(mine):
        begin = math.floor(first + units[u] * period) * U
        replay.restore(machine, u)
        machine.fence = start + begin + U
        detailed += start + begin + U - machine.program_retired
        tally.time(j, machine, start + begin, U)
    machine.fence = None
    return tally.sample(machine, detailed, 0, 0, time.perf_counter() - t0, 0.0)


def core_digest(machine: Machine) -> str:
    """The core a library was captured on, as a digest (a replay on it is exact)."""
    return hashlib.sha256(json.dumps(machine.platform.core.model_dump(mode="json"), sort_keys=True).encode()
                          ).hexdigest()[:16]


# what forked replay workers run (set by :func:`replay_sampled` just before it forks them)
_FORKED: tuple | None = None


def _replay_part(library: LivePoints, fresh: Callable[[], Machine], events: dict[str, str] | None, check_key: bool,
                 job: tuple[int, tuple[int, int]], progress: Callable[[int], None] | None = None) -> SegmentSample:
    m = fresh()
    if check_key and state_key(m) != library.key:
        raise ValueError("this machine's memory system, predictor, workload, seeds or timer differ from the "
                         "live-points' (only the core may)")
    m.on_retired = progress
    return replay_segment(m, library, job[0], events, part=job[1])


def _forked_part(job: tuple[int, tuple[int, int]]) -> SegmentSample:
    return _replay_part(*_FORKED, job)


def replay_sampled(library: LivePoints, fresh: Callable[[], Machine], events: dict[str, str] | None = None,
                   workers: int = 1, check_key: bool = True,
                   progress: Callable[[int], None] | None = None) -> SmartsResult:
    """The library's sample timed on machines ``fresh()`` returns, from its live-points, in ``workers`` processes
    forked from this one (each segment's units cut into ``workers`` runs side by side, :func:`replay_segment`;
    forked, they share the library's pages and the loaded kernels, and run free of each other's Python, which
    threads do not: two threads replayed 1.2x as fast as one; two processes side by side each ran as fast as one
    alone).  The machines must share the library's state key (:func:`state_key`: everything but the core); the
    result is a :class:`SmartsResult` as the capture's, with no instruction warmed.  ``progress(n)``: program
    instructions covered (as a run's share ends, with workers)."""
    global _FORKED
    t0 = time.perf_counter()
    jobs = [(segment, (k, workers)) for segment in range(len(library.chains)) for k in range(workers)]
    if workers <= 1:
        parts = [_replay_part(library, fresh, events, check_key, job, progress) for job in jobs]
    else:
        _FORKED = (library, fresh, events, check_key)
        try:
            with multiprocessing.get_context("fork").Pool(workers) as pool:
                parts = []
                for part in pool.imap(_forked_part, jobs):
                    parts.append(part)
                    if progress is not None:
                        progress(library.total * len(part.unit_cpi) // library.units)
        finally:
            _FORKED = None
    result = combine(library.spec, library.total, library.seed, parts, time.perf_counter() - t0)
    return replace(result, worker_seconds=sum(p.host_seconds for p in parts))


drop_stale_caches("livepoints", (sys.modules[__name__],))
