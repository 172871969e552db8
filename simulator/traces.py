"""Address traces: the records, reading a trace file chunk by chunk, writing one, a synthetic generator.

A trace is three parallel arrays: ``addrs`` (uint64), ``sizes`` (uint16, 1-65535) and ``kinds`` (uint8:
0 instruction fetch, 1 load, 2 store, 3 modify), in program order.  Two file formats:

* **lackey** text (``valgrind --tool=lackey --trace-mem=yes``), :mod:`whatif.simulator.trace_lackey`;
* **whatif binary** (``.wtr``), :mod:`whatif.simulator.trace_wtr`: version 2 (delta and varint coded,
  in blocks) is written; version 1 files (wave 1, 11 bytes a record) are still read.

:class:`TraceFile` reads either in chunks of :data:`CHUNK_RECORDS` records into reused arrays, parsing
or decoding the next chunk on a reader thread while the caller simulates the current one, so a trace
of any length runs in bounded memory at the speed of the slower of the two.  :func:`read_trace` reads a
whole trace into memory (the ``cachesim`` study shares one trace between its runs).  A trace with no
records is an error.
"""

from __future__ import annotations

import math
import queue
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from whatif.simulator import trace_lackey, trace_wtr
from whatif.simulator.errors import SimulatorInputError

KIND_CODES = {"I": 0, "L": 1, "S": 2, "M": 3}
KIND_NAMES = ("I", "L", "S", "M")
FORMATS = ("auto", "lackey", "whatif")
WTR_MAGIC = trace_wtr.MAGIC
LACKEY_HEADER = trace_lackey.HEADER
# Records per chunk of a streamed trace (more when a .wtr file's blocks are larger).  The simulation
# carries its state and the last instruction's PC across chunks, so a trace run chunk by chunk gives the
# same counters as the whole trace in one call.  1 M, not 4 M as until 2026-11-29: the three chunks' 33 MB
# of arrays stay closer to the host's caches than 132 MB, and the first one is ready sooner (alternated on
# the 79 M-record .wtr of tests/benchmarks/bench_traces.py: 1.52-1.74 s end to end against 1.70-2.04 s).
CHUNK_RECORDS = 1 << 20
MAX_SYNTHETIC_RECORDS = 200_000_000        # a synthetic trace's records: 2.2 GB of arrays (11 bytes each)
# what making one costs in memory at its peak, a record: its arrays and the draws and interleaving they are made
# from (`whatif trace synth` peaked at 303 / 849 / 1,590 MB resident for 5 / 20 / 40 M records: 36.8 bytes a
# record above the process's own)
SYNTHETIC_BYTES_PER_RECORD = 37


def available_memory() -> int | None:
    """Bytes of memory this host can give without swapping (Linux's MemAvailable), or None where unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


@dataclass(frozen=True)
class Trace:
    addrs: np.ndarray
    sizes: np.ndarray
    kinds: np.ndarray
    source: str = "synthetic"

    def __post_init__(self) -> None:
        if not (len(self.addrs) == len(self.sizes) == len(self.kinds)):
            raise SimulatorInputError(f"{self.source}: trace arrays differ in length")

    def __len__(self) -> int:
        return len(self.addrs)

    def counts(self) -> dict[str, int]:
        c = np.bincount(self.kinds, minlength=4)
        return {name: int(c[i]) for i, name in enumerate(KIND_NAMES)}


# ---------------------------------------------------------------------------------------- reading
def no_records(path: Path) -> SimulatorInputError:
    return SimulatorInputError(f"{path}: the trace holds no records (an empty file, or only valgrind's own lines)")


def trace_format(path: str | Path, fmt: str = "auto") -> str:
    """``lackey`` or ``whatif``: ``fmt`` itself, or for ``auto`` by the extension ``.wtr``, else by the magic."""
    path = Path(path)
    if fmt not in FORMATS:
        raise SimulatorInputError(f"unknown trace format {fmt!r}; known: {', '.join(FORMATS)}")
    if path.is_dir():
        raise SimulatorInputError(f"{path}: is a directory, not a trace file")
    if not path.is_file():
        raise SimulatorInputError(f"{path}: no such file")
    if fmt != "auto":
        return fmt
    if path.suffix == ".wtr":
        return "whatif"
    with path.open("rb") as fh:
        return "whatif" if fh.read(len(WTR_MAGIC)) == WTR_MAGIC else "lackey"


class TraceFile:
    """A trace file opened for reading in chunks (a context manager).

    ``records`` is the record count when the file states it (``.wtr``), else None; ``nbytes`` the file
    size.  :meth:`chunks` yields ``(trace, done)`` pairs: ``done`` is the work the chunk stands for, in
    records when ``records`` is known, else in bytes of the file (for progress bars)."""

    def __init__(self, path: str | Path, fmt: str = "auto"):
        self.path = Path(path)
        self.format = trace_format(self.path, fmt)
        self._reader = trace_lackey.LackeyReader(self.path) if self.format == "lackey" \
            else trace_wtr.WtrReader(self.path)
        self.nbytes = self._reader.nbytes
        self.records = self._reader.records if self.format == "whatif" else None
        self._read_aheads: list[_ReadAhead] = []
        if self.records == 0:
            self.close()
            raise no_records(self.path)

    @property
    def total(self) -> int:
        """The work of the whole file, in the units of :meth:`chunks`."""
        return self.nbytes if self.records is None else self.records

    def _done(self) -> int:
        return min(self._reader.pos, self.nbytes) if self.records is None else self._reader.done

    def chunks(self, size: int = CHUNK_RECORDS, read_ahead: bool = True) -> Iterator[tuple[Trace, int]]:
        """The records in chunks of ``size``, or of a ``.wtr`` file's block size when that is larger (the
        last chunk shorter).  A chunk's arrays are reused: it is valid until the next one is asked for.
        With ``read_ahead`` a thread starts filling chunks at once (while the caller, say, loads its
        kernels) and fills the next while the caller works on this one."""
        if self.format == "whatif":
            size = max(size, self._reader.block_records)         # (v2 decodes whole blocks)
        sets = [(np.empty(size, np.uint64), np.empty(size, np.uint16), np.empty(size, np.uint8))
                for _ in range(3 if read_ahead else 1)]
        if read_ahead:
            source = _ReadAhead(self._reader.fill, self._done, sets)
            self._read_aheads.append(source)
        else:
            source = self._filled_here(sets[0])
        return self._traces(source)

    def read(self) -> Trace:
        """All the (remaining) records in memory, read in one pass."""
        # lackey text states no count: room for the most records the file can hold ('I 0,1' and a newline
        # is the shortest record line), of which only the pages written are ever touched
        cap = self.records - self._reader.done if self.records is not None else self.nbytes // 6 + 1
        arrays = (np.empty(cap, np.uint64), np.empty(cap, np.uint16), np.empty(cap, np.uint8))
        n = 0
        while (got := self._reader.fill(*(a[n:] for a in arrays))) > 0:
            n += got
        if n == 0:
            raise no_records(self.path)
        return Trace(*(a[:n] for a in arrays), str(self.path))

    def _traces(self, source) -> Iterator[tuple[Trace, int]]:
        delivered = 0
        for arrays, n, done in source:
            delivered += n
            yield Trace(arrays[0][:n], arrays[1][:n], arrays[2][:n], str(self.path)), done
        if delivered == 0:
            raise no_records(self.path)

    def _filled_here(self, arrays):
        while True:
            before = self._done()
            n = self._reader.fill(*arrays)
            if n == 0:
                return
            yield arrays, n, self._done() - before

    def close(self) -> None:
        for source in self._read_aheads:           # the reader thread stops before the file's map closes
            source.close()
        self._reader.close()

    def __enter__(self) -> "TraceFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _ReadAhead:
    """Iterator of ``(arrays, n, done)``: ``fill(*arrays)`` run on a reader thread through a ring of array
    sets (two being filled or waiting while the caller holds the third).  The scanner and the decoder
    release the GIL, so reading runs in parallel with the caller's simulation."""

    def __init__(self, fill, done, sets):
        self._free: queue.Queue = queue.Queue()
        self._full: queue.Queue = queue.Queue()
        for arrays in sets:
            self._free.put(arrays)
        self._held = None
        self._thread = threading.Thread(target=self._produce, args=(fill, done), name="whatif-trace-reader",
                                        daemon=True)
        self._thread.start()

    def _produce(self, fill, done) -> None:
        try:
            while (arrays := self._free.get()) is not None:
                before = done()
                n = fill(*arrays)
                self._full.put((arrays, n, done() - before))
                if n == 0:
                    return
        except BaseException as exc:                  # handed to the caller, raised there
            self._full.put(exc)

    def __iter__(self) -> "_ReadAhead":
        return self

    def __next__(self):
        if self._held is not None:
            self._free.put(self._held)
            self._held = None
        if not self._thread.is_alive() and self._full.empty():
            raise StopIteration                         # (finished, failed or closed before)
        item = self._full.get()
        if isinstance(item, BaseException):
            self.close()
            raise item
        arrays, n, done = item
        if n == 0:
            self.close()
            raise StopIteration
        self._held = arrays
        return arrays, n, done

    def close(self) -> None:
        self._free.put(None)
        self._thread.join()


def read_trace(path: str | Path, fmt: str = "auto") -> Trace:
    """A whole trace file in memory; ``fmt`` is ``lackey``, ``whatif`` or ``auto`` (by extension, else
    by content)."""
    with TraceFile(path, fmt) as tf:
        return tf.read()


def read_lackey(path: str | Path) -> Trace:
    return read_trace(path, "lackey")


def read_wtr(path: str | Path) -> Trace:
    return read_trace(path, "whatif")


# ---------------------------------------------------------------------------------------- writing
def lackey_text(trace: Trace) -> str:
    """The trace in lackey text form.  The first line, :data:`LACKEY_HEADER`, is a valgrind-style
    comment that readers skip and by which whatif knows the file for its own (:func:`written_by_whatif`)."""
    return lackey_bytes(trace).decode("ascii")


def lackey_bytes(trace: Trace) -> bytes:
    trace_wtr.check_records(trace.sizes, trace.kinds, trace.source)
    return trace_lackey.header_line() + trace_lackey.lackey_lines(trace.addrs, trace.sizes, trace.kinds)


def wtr_bytes(trace: Trace) -> bytes:
    """The trace as a ``.wtr`` file (version 2)."""
    return trace_wtr.wtr_bytes(trace.addrs, trace.sizes, trace.kinds)


def written_by_whatif(path: str | Path) -> bool:
    """Whether ``path`` is a trace whatif wrote: the binary magic, or the lackey header line."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(LACKEY_HEADER))
    except OSError:
        return False
    return head.startswith(WTR_MAGIC) or trace_lackey.is_whatif_lackey(head)


# ---------------------------------------------------------------------------------------- synthetic
@dataclass(frozen=True)
class Stream:
    """One synthetic data stream.

    kind: ``sequential`` (walks forward by ``access_bytes``), ``strided`` (by ``stride`` bytes),
    ``random`` (uniform within the footprint) or ``hot`` (random within a small hot set of
    ``hot_kb`` inside the footprint).  ``weight`` is the stream's share of the data accesses."""
    kind: str
    weight: float
    footprint_kb: float
    stride: int = 64
    access_bytes: int = 8
    hot_kb: float = 4.0
    store_fraction: float = 0.3


STREAM_KINDS = ("sequential", "strided", "random", "hot")


def synthetic_trace(streams: list[Stream], accesses: int, seed: int, instructions_per_access: float = 0.0,
                    code_kb: float = 16.0, base: int = 0x10000000,
                    progress: Callable[[int], None] | None = None) -> Trace:
    """A trace mixing data streams (and, optionally, instruction fetches walking a code loop).

    Vectorised: every stream's address sequence is generated with numpy from a seeded Generator,
    then interleaved according to the stream weights.  ``progress(n)`` is called with the records
    made after each stream and after the instruction fetches."""
    if accesses <= 0:
        raise SimulatorInputError(f"synthetic trace: accesses must be positive, got {accesses}")
    if not (math.isfinite(instructions_per_access) and instructions_per_access >= 0):
        raise SimulatorInputError(f"synthetic trace: instructions_per_access must be a finite number >= 0, "
                                  f"got {instructions_per_access}")
    if not (math.isfinite(code_kb) and code_kb * 1024 >= 4):
        raise SimulatorInputError(f"synthetic trace: code_kb must be finite and hold an instruction "
                                  f"(>= 4 bytes), got {code_kb}")
    records = accesses + round(accesses * instructions_per_access)
    if records > MAX_SYNTHETIC_RECORDS:                  # counted, never allocated
        raise SimulatorInputError(f"synthetic trace: {records:,} records (accesses x (1 + "
                                  f"instructions_per_access)); the limit is {MAX_SYNTHETIC_RECORDS:,}")
    need, free = records * SYNTHETIC_BYTES_PER_RECORD, available_memory()
    if free is not None and need > free:
        raise SimulatorInputError(f"synthetic trace: {records:,} records need about {need / 1e9:,.1f} GB of memory "
                                  f"while they are made, and this host has {free / 1e9:,.1f} GB available; ask "
                                  f"for fewer accesses")
    if not streams:
        raise SimulatorInputError("synthetic trace: at least one stream is required")
    rng = np.random.default_rng(seed)
    weights = np.array([s.weight for s in streams], dtype=float)
    if (weights < 0).any() or weights.sum() <= 0:
        raise SimulatorInputError("synthetic trace: stream weights must be non-negative and not all zero")
    choice = rng.choice(len(streams), size=accesses, p=weights / weights.sum())
    addrs = np.empty(accesses, dtype=np.uint64)
    sizes = np.empty(accesses, dtype=np.uint16)
    kinds = np.empty(accesses, dtype=np.uint8)
    region = base
    for idx, st in enumerate(streams):
        if st.kind not in STREAM_KINDS:
            raise SimulatorInputError(f"synthetic trace: unknown stream kind {st.kind!r}; "
                                      f"known: {', '.join(STREAM_KINDS)}")
        if st.footprint_kb <= 0 or st.access_bytes <= 0 or not (0 <= st.store_fraction <= 1):
            raise SimulatorInputError(f"synthetic trace: stream {idx} ({st.kind}) has a non-positive size or a "
                                      f"store_fraction outside [0, 1]")
        where = np.flatnonzero(choice == idx)
        n = len(where)
        foot = int(st.footprint_kb * 1024)
        if st.kind == "sequential":
            off = (np.arange(n, dtype=np.int64) * st.access_bytes) % foot
        elif st.kind == "strided":
            off = (np.arange(n, dtype=np.int64) * st.stride) % foot
        elif st.kind == "random":
            off = rng.integers(0, max(1, foot // st.access_bytes), n) * st.access_bytes
        else:
            hot = max(st.access_bytes, int(st.hot_kb * 1024))
            hot_base = int(rng.integers(0, max(1, (foot - hot) // 4096) + 1)) * 4096 % max(foot, 1)
            off = hot_base + rng.integers(0, max(1, hot // st.access_bytes), n) * st.access_bytes
        addrs[where] = np.uint64(region) + off.astype(np.uint64)
        sizes[where] = st.access_bytes
        kinds[where] = np.where(rng.random(n) < st.store_fraction, 2, 1).astype(np.uint8)
        region += ((foot + (1 << 20) - 1) >> 20 << 20) + (1 << 20)     # next MB-aligned region, 1 MB gap
        if progress is not None:
            progress(n)
    if instructions_per_access > 0:
        # interleave instruction fetches walking a loop over the code footprint (4-byte instructions)
        n_instr = int(round(accesses * instructions_per_access))
        code = np.uint64(0x00400000) + ((np.arange(n_instr, dtype=np.int64) * 4)
                                        % int(code_kb * 1024)).astype(np.uint64)
        pos = np.sort(rng.integers(0, accesses + 1, n_instr))
        merged = interleave_fetches(Trace(addrs, sizes, kinds), code, pos)
        if progress is not None:
            progress(n_instr)
        return merged
    return Trace(addrs, sizes, kinds)


def interleave_fetches(data: Trace, code: np.ndarray, pos: np.ndarray) -> Trace:
    """The data accesses with 4-byte instruction fetches of ``code`` inserted: fetch j just before data
    access ``pos[j]`` (``pos`` sorted; ``len(data)``: at the end), fetches of equal ``pos`` in order."""
    n, n_instr = len(data), len(code)
    # fetch j lands after the pos[j] data accesses and the j fetches before it; data access i after the
    # i accesses and the fetches with pos <= i
    at_instr = np.arange(n_instr, dtype=np.int64) + pos
    at_data = np.arange(n, dtype=np.int64) + np.searchsorted(pos, np.arange(n), side="right")
    addrs = np.empty(n + n_instr, np.uint64)
    sizes = np.empty(n + n_instr, np.uint16)
    kinds = np.empty(n + n_instr, np.uint8)
    addrs[at_data], addrs[at_instr] = data.addrs, code
    sizes[at_data], sizes[at_instr] = data.sizes, 4
    kinds[at_data], kinds[at_instr] = data.kinds, 0
    return Trace(addrs, sizes, kinds)


def mixed_streams() -> list[Stream]:
    """The standard mixed workload of the quickstart and the benchmarks: a stack-like hot set, an array
    walk, a strided column walk and pointer-chasing-like random accesses over 4 MB (which miss the L2 and
    the TLBs of every target platform)."""
    return [
        Stream("hot", weight=0.60, footprint_kb=64, hot_kb=8, access_bytes=4, store_fraction=0.4),
        Stream("sequential", weight=0.28, footprint_kb=2048, access_bytes=4, store_fraction=0.25),
        Stream("strided", weight=0.07, footprint_kb=256, stride=128, access_bytes=8, store_fraction=0.1),
        Stream("random", weight=0.05, footprint_kb=4096, access_bytes=8, store_fraction=0.2),
    ]
