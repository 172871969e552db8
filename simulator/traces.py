"""Address traces: valgrind lackey text, whatif's binary format, and a small synthetic generator.

A trace is three parallel arrays: ``addrs`` (uint64), ``sizes`` (uint16) and
``kinds`` (uint8: 0 instruction fetch, 1 load, 2 store, 3 modify), in program order.

* **lackey** (``valgrind --tool=lackey --trace-mem=yes``): lines ``I  04016b0,3``,
  `` L 1ffefffd78,8``, `` S ...``, `` M ...``.  valgrind's own ``==PID==`` lines and
  blank lines are skipped; any other line that does not parse is an error naming
  its line number.  Parsed by a numba byte-level scanner.
* **whatif binary** (``.wtr``): a 32-byte header (magic ``WHATIFTR``, format version,
  record count) followed by the three arrays stored column by column, little-endian,
  so a trace can be memory-mapped.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import njit

from whatif.simulator.errors import SimulatorInputError

KIND_CODES = {"I": 0, "L": 1, "S": 2, "M": 3}
KIND_NAMES = ("I", "L", "S", "M")
WTR_MAGIC = b"WHATIFTR"
WTR_VERSION = 1
_HEADER = struct.Struct("<8sIIQQ")   # magic, version, reserved, count, reserved


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


# ---------------------------------------------------------------------------------------- lackey
@njit(cache=True)
def _parse_lackey(buf, addrs, sizes, kinds, start_line):
    """Scan lackey text.  Returns (records, 0) or (records so far, 1-based number of the bad line)."""
    n = buf.shape[0]
    i = 0
    rec = 0
    line_no = start_line
    while i < n:
        line_no += 1
        # find the end of this line
        j = i
        while j < n and buf[j] != 10:
            j += 1
        end = j
        if end > i and buf[end - 1] == 13:          # tolerate CRLF
            end -= 1
        k = i
        while k < end and (buf[k] == 32 or buf[k] == 9):
            k += 1
        if k == end:                                # blank line
            i = j + 1
            continue
        c = buf[k]
        if c == 61:                                 # '=': valgrind's ==PID== lines
            if k + 1 < end and buf[k + 1] == 61:
                i = j + 1
                continue
            return rec, line_no
        if c == 73:
            kind = 0
        elif c == 76:
            kind = 1
        elif c == 83:
            kind = 2
        elif c == 77:
            kind = 3
        else:
            return rec, line_no
        # 'I' starts in column 0; data accesses are indented by one space
        if (kind == 0 and k != i) or (kind != 0 and k == i):
            return rec, line_no
        k += 1
        if k >= end or (buf[k] != 32 and buf[k] != 9):
            return rec, line_no
        while k < end and (buf[k] == 32 or buf[k] == 9):
            k += 1
        addr = np.uint64(0)
        digits = 0
        while k < end:
            d = buf[k]
            if 48 <= d <= 57:
                v = d - 48
            elif 97 <= d <= 102:
                v = d - 87
            elif 65 <= d <= 70:
                v = d - 55
            else:
                break
            addr = (addr << np.uint64(4)) | np.uint64(v)
            digits += 1
            k += 1
        if digits == 0 or digits > 16 or k >= end or buf[k] != 44:
            return rec, line_no
        k += 1
        size = 0
        sdigits = 0
        while k < end and 48 <= buf[k] <= 57:
            size = size * 10 + (buf[k] - 48)
            sdigits += 1
            k += 1
        while k < end and (buf[k] == 32 or buf[k] == 9):
            k += 1
        if sdigits == 0 or k != end or size > 65535 or size == 0:
            return rec, line_no
        addrs[rec] = addr
        sizes[rec] = size
        kinds[rec] = kind
        rec += 1
        i = j + 1
    return rec, 0


def read_lackey(path: str | Path) -> Trace:
    """Parse a lackey ``--trace-mem=yes`` file (memory-mapped; records are at most one per line)."""
    path = Path(path)
    if not path.is_file():
        raise SimulatorInputError(f"{path}: no such file")
    if path.stat().st_size == 0:
        return Trace(np.zeros(0, np.uint64), np.zeros(0, np.uint16), np.zeros(0, np.uint8), str(path))
    buf = np.memmap(path, dtype=np.uint8, mode="r")
    nlines = int(np.count_nonzero(buf == 10)) + 1
    addrs = np.empty(nlines, dtype=np.uint64)
    sizes = np.empty(nlines, dtype=np.uint16)
    kinds = np.empty(nlines, dtype=np.uint8)
    count, bad = _parse_lackey(buf, addrs, sizes, kinds, 0)
    if bad:
        raise SimulatorInputError(f"{path}:{bad}: not a lackey trace line "
                                  f"(expected 'I  ADDR,SIZE' or ' L|S|M ADDR,SIZE')")
    return Trace(addrs[:count].copy(), sizes[:count].copy(), kinds[:count].copy(), str(path))


LACKEY_HEADER = "==whatif== lackey trace written by whatif"


def lackey_text(trace: Trace) -> str:
    """The trace in lackey text form (for tests and for exchange with other tools).  The first line,
    :data:`LACKEY_HEADER`, is a valgrind-style comment that readers skip and by which whatif knows the
    file for its own (:func:`written_by_whatif`)."""
    lines = [LACKEY_HEADER]
    for a, s, k in zip(trace.addrs.tolist(), trace.sizes.tolist(), trace.kinds.tolist()):
        if k == 0:
            lines.append(f"I  {a:08x},{s}")
        else:
            lines.append(f" {KIND_NAMES[k]} {a:08x},{s}")
    return "\n".join(lines) + "\n"


def written_by_whatif(path: str | Path) -> bool:
    """Whether ``path`` is a trace whatif wrote: the binary magic, or the lackey header line."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(LACKEY_HEADER))
    except OSError:
        return False
    return head.startswith(WTR_MAGIC) or head == LACKEY_HEADER.encode()


# ---------------------------------------------------------------------------------------- binary
def wtr_bytes(trace: Trace) -> bytes:
    header = _HEADER.pack(WTR_MAGIC, WTR_VERSION, 0, len(trace), 0)
    return b"".join([header,
                     np.ascontiguousarray(trace.addrs, dtype="<u8").tobytes(),
                     np.ascontiguousarray(trace.sizes, dtype="<u2").tobytes(),
                     np.ascontiguousarray(trace.kinds, dtype="u1").tobytes()])


def read_wtr(path: str | Path) -> Trace:
    path = Path(path)
    if not path.is_file():
        raise SimulatorInputError(f"{path}: no such file")
    size = path.stat().st_size
    with path.open("rb") as fh:
        head = fh.read(_HEADER.size)
    if len(head) < _HEADER.size:
        raise SimulatorInputError(f"{path}: too short for a whatif trace header")
    magic, version, _, count, _ = _HEADER.unpack(head)
    if magic != WTR_MAGIC:
        raise SimulatorInputError(f"{path}: not a whatif binary trace (bad magic); use --format lackey for text")
    if version != WTR_VERSION:
        raise SimulatorInputError(f"{path}: whatif trace format version {version} is not supported "
                                  f"(this whatif reads version {WTR_VERSION})")
    expected = _HEADER.size + count * (8 + 2 + 1)
    if size != expected:
        raise SimulatorInputError(f"{path}: truncated or corrupt: header says {count} records "
                                  f"({expected} bytes), file has {size} bytes")
    off = _HEADER.size
    addrs = np.fromfile(path, dtype="<u8", count=count, offset=off).astype(np.uint64, copy=False)
    sizes = np.fromfile(path, dtype="<u2", count=count, offset=off + 8 * count).astype(np.uint16, copy=False)
    kinds = np.fromfile(path, dtype="u1", count=count, offset=off + 10 * count)
    if count and kinds.max() > 3:
        bad = int(np.argmax(kinds > 3))
        raise SimulatorInputError(f"{path}: record {bad} has an invalid kind code {int(kinds[bad])}")
    return Trace(addrs, sizes, kinds, str(path))


def read_trace(path: str | Path, fmt: str = "auto") -> Trace:
    """Read a trace file; ``fmt`` is ``lackey``, ``whatif`` or ``auto`` (by extension, else by content)."""
    path = Path(path)
    if fmt not in ("auto", "lackey", "whatif"):
        raise SimulatorInputError(f"unknown trace format {fmt!r}; known: auto, lackey, whatif")
    if not path.is_file():
        raise SimulatorInputError(f"{path}: no such file")
    if fmt == "auto":
        if path.suffix == ".wtr":
            fmt = "whatif"
        else:
            with path.open("rb") as fh:
                fmt = "whatif" if fh.read(8) == WTR_MAGIC else "lackey"
    return read_wtr(path) if fmt == "whatif" else read_lackey(path)


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
                    code_kb: float = 16.0, base: int = 0x10000000) -> Trace:
    """A trace mixing data streams (and, optionally, instruction fetches walking a code loop).

    Vectorised: every stream's address sequence is generated with numpy from a seeded Generator,
    then interleaved according to the stream weights."""
    if accesses <= 0:
        raise SimulatorInputError(f"synthetic trace: accesses must be positive, got {accesses}")
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
    if instructions_per_access > 0:
        # interleave instruction fetches walking a loop over the code footprint (4-byte instructions)
        n_instr = int(round(accesses * instructions_per_access))
        code = np.uint64(0x00400000) + ((np.arange(n_instr, dtype=np.int64) * 4) % int(code_kb * 1024)).astype(np.uint64)
        pos = np.sort(rng.integers(0, accesses + 1, n_instr))
        order = np.argsort(np.concatenate([np.arange(accesses) + 0.5, pos.astype(float)]), kind="stable")
        all_addrs = np.concatenate([addrs, code])[order]
        all_sizes = np.concatenate([sizes, np.full(n_instr, 4, np.uint16)])[order]
        all_kinds = np.concatenate([kinds, np.zeros(n_instr, np.uint8)])[order]
        return Trace(all_addrs, all_sizes, all_kinds)
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
