"""valgrind lackey text (``valgrind --tool=lackey --trace-mem=yes``): a streaming byte scanner and a writer.

Format: one access per line, ``I  04016b0,3`` (an instruction fetch, in column 0) or `` L 1ffefffd78,8``
(`` S``, `` M``: a load, store or modify, indented): a kind letter, blanks, 1 to 16 hex digits of address,
a comma, the decimal size in bytes (1 to 65535), optional trailing blanks.  Lines whose first non-blank
characters are ``==`` (valgrind's own) and blank lines are skipped; CRLF line ends are accepted; any
other line is malformed and is reported by its 1-based line number.  ``tests/traceref.py`` holds the
same grammar as one regular expression; the tests demand identical records and identical errors.

Reading is chunked: :class:`LackeyReader` memory-maps the file and :meth:`LackeyReader.fill` parses
the next lines into caller-owned arrays until they are full, so memory stays bounded whatever the size
of the trace.  The scanner reads the two line shapes valgrind prints a word (8 bytes) at a time, with
bit tricks in place of per-byte branches (finding the newline and the comma, checking and converting
the digits), and falls back to the general grammar, byte by byte, for any other line; little-endian
hosts (x86-64, arm64).  It releases the GIL, so a reader thread parses the next chunk while the
simulation runs the current one.  ``tests/benchmarks/bench_traces.py`` prints its rate.
"""

from __future__ import annotations

import mmap
import sys
from pathlib import Path

import numpy as np
from numba import njit

from whatif.jitcache import drop_stale_caches
from whatif.simulator import wordops
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.wordops import ctz as _ctz
from whatif.simulator.wordops import MappedReader
from whatif.simulator.wordops import load8 as _load8

KIND_LETTERS = np.frombuffer(b"ILSM", np.uint8).copy()    # kind code -> letter (0 I, 1 L, 2 S, 3 M)
MAX_SIZE = 65535                              # sizes are stored as uint16
HEADER = "==whatif== lackey trace written by whatif"   # first line of the lackey text whatif writes
BAD_LINE = "not a lackey trace line (expected 'I  ADDR,SIZE' or ' L|S|M ADDR,SIZE')"

_NL, _CR, _SP, _TAB, _EQ, _COMMA = 10, 13, 32, 9, 61, 44
_HEX = np.full(256, 255, np.uint8)            # byte -> hex digit value, 255 for anything else
for _i, _c in enumerate(b"0123456789abcdef"):
    _HEX[_c] = _i
for _i, _c in enumerate(b"ABCDEF"):
    _HEX[_c] = 10 + _i
_KIND = np.full(256, 255, np.uint8)           # byte -> kind code of a data-access letter
_KIND[ord("L")], _KIND[ord("S")], _KIND[ord("M")] = 1, 2, 3

# the word-at-a-time path
_U = np.uint64
_REP01 = _U(0x0101010101010101)
_REP80 = _U(0x8080808080808080)
_COMMAS = _U(0x2C2C2C2C2C2C2C2C)
_NEWLINES = _U(0x0A0A0A0A0A0A0A0A)
_ZEROS = _U(0x3030303030303030)                      # eight '0' characters
_PREFIX = np.array([sum(0x80 << (8 * j) for j in range(i)) for i in range(9)], np.uint64)   # 0x80 in bytes 0..i-1
_KIND2 = np.full(1 << 16, 255, np.uint8)               # first two bytes of a line (little-endian) -> kind code
for _k, _lead in enumerate((b"I ", b" L", b" S", b" M")):
    _KIND2[_lead[0] | (_lead[1] << 8)] = _k


@njit(cache=True, inline="always")
def _zero_bytes(x):
    """0x80 in the lowest zero byte of x (bytes above it may be marked falsely; only the lowest is used)."""
    return (x - _REP01) & ~x & _REP80


@njit(cache=True, inline="always")
def _in_range(x, lo, hi):
    """0x80 in each byte of x (all bytes < 0x80) that lies in [lo, hi)."""
    return ((x + _REP01 * _U(0x80 - lo)) & ~(x + _REP01 * _U(0x80 - hi))) & _REP80


@njit(cache=True, inline="always")
def _hex_bytes(x):
    """0x80 in each byte of x that is a hex digit."""
    seven = x & ~_REP80
    lower = seven | (_REP01 * _U(0x20))
    return (_in_range(seven, 0x30, 0x3A) | _in_range(lower, 0x61, 0x67)) & ~x


@njit(cache=True, inline="always")
def _digit_bytes(x):
    """0x80 in each byte of x that is a decimal digit."""
    return _in_range(x & ~_REP80, 0x30, 0x3A) & ~x


@njit(cache=True, inline="always")
def _hex8(x):
    """Eight hex digit characters (the first most significant) -> their 32-bit value; bytes that are
    not hex digits give garbage in their own nibble only."""
    v = (x & (_REP01 * _U(0x0F))) + _U(9) * ((x >> _U(6)) & _REP01)
    v = ((v & _U(0x000F000F000F000F)) << _U(4)) | ((v & _U(0x0F000F000F000F00)) >> _U(8))
    v = ((v & _U(0x000000FF000000FF)) << _U(8)) | ((v & _U(0x00FF000000FF0000)) >> _U(16))
    return ((v & _U(0xFFFF)) << _U(16)) | ((v >> _U(32)) & _U(0xFFFF))


@njit(cache=True, inline="always")
def _dec8(x):
    """Eight decimal digit characters (the first most significant) -> their value."""
    v = x - _ZEROS
    v = ((v & (_REP01 * _U(0x0F))) * _U(2561)) >> _U(8)
    v = ((v & _U(0x00FF00FF00FF00FF)) * _U(6553601)) >> _U(16)
    return np.int64(((v & _U(0x0000FFFF0000FFFF)) * _U(42949672960001)) >> _U(32))


@njit(cache=True, nogil=True)
def _general_line(buf, i, hexval, kindval):
    """Parse the line starting at ``buf[i]`` by the full grammar.  Returns (status, position after the
    line's newline, address, size, kind); status 0 a record, 1 a line to skip, 2 a malformed line."""
    n = buf.shape[0]
    j = i
    while j < n and buf[j] != _NL:
        j += 1
    nxt = j + 1
    end = j
    if end > i and buf[end - 1] == _CR:                 # CRLF
        end -= 1
    k = i
    while k < end and (buf[k] == _SP or buf[k] == _TAB):
        k += 1
    if k == end:                                         # blank line
        return 1, nxt, np.uint64(0), 0, 0
    c = buf[k]
    if c == _EQ:                                         # valgrind's ==PID== lines
        if k + 1 < end and buf[k + 1] == _EQ:
            return 1, nxt, np.uint64(0), 0, 0
        return 2, nxt, np.uint64(0), 0, 0
    if c == 73:                                          # 'I', in column 0
        kind = 0
        if k != i:
            return 2, nxt, np.uint64(0), 0, 0
    else:                                                # 'L', 'S', 'M', indented
        kind = kindval[c]
        if kind == 255 or k == i:
            return 2, nxt, np.uint64(0), 0, 0
    k += 1
    if k >= end or (buf[k] != _SP and buf[k] != _TAB):
        return 2, nxt, np.uint64(0), 0, 0
    while k < end and (buf[k] == _SP or buf[k] == _TAB):
        k += 1
    addr = np.uint64(0)
    digits = 0
    while k < end and hexval[buf[k]] < 16:
        addr = (addr << np.uint64(4)) | np.uint64(hexval[buf[k]])
        digits += 1
        k += 1
    if digits == 0 or digits > 16 or k >= end or buf[k] != _COMMA:
        return 2, nxt, np.uint64(0), 0, 0
    k += 1
    size = 0
    sdigits = 0
    while k < end and 48 <= buf[k] <= 57:
        if size <= MAX_SIZE:                             # saturate: a long digit string never wraps
            size = size * 10 + (buf[k] - 48)
        sdigits += 1
        k += 1
    while k < end and (buf[k] == _SP or buf[k] == _TAB):
        k += 1
    if sdigits == 0 or k != end or size == 0 or size > MAX_SIZE:
        return 2, nxt, np.uint64(0), 0, 0
    return 0, nxt, addr, size, kind


@njit(cache=True, nogil=True)
def scan(buf, pos, addrs, sizes, kinds, line_no, hexval, kindval, kind2):
    """Parse lines of ``buf`` from byte ``pos`` into the arrays until they are full or ``buf`` ends
    (the end of ``buf`` ends a last line without a newline).

    Returns (position after the last line consumed, records stored, number of the last line consumed,
    bad): ``line_no`` counts lines from the caller's earlier calls; ``bad`` is 0, or the 1-based number
    of a malformed line (then the other values are those before that line)."""
    n = buf.shape[0]
    cap = addrs.shape[0]
    rec = 0
    while pos < n and rec < cap:
        line_no += 1
        # fast path, a word at a time, for 'I  hex,dec\n' and ' K hex,dec\n' (K one of L, S, M) at least
        # 48 bytes before the end of buf (every word read lies within them).  The newline is found from
        # the line start alone, so that the next line can start before this one is decoded; a line
        # shorter than 9 bytes (no lackey line is: valgrind prints 8 hex digits) fails the digit checks
        ok = False
        if pos + 48 < n:
            u = _U(pos)
            t = _ctz(_zero_bytes(_load8(buf, u + _U(8)) ^ _NEWLINES))
            if t == 64:
                t = 64 + _ctz(_zero_bytes(_load8(buf, u + _U(16)) ^ _NEWLINES))
            nl = pos + 8 + (t >> 3)                        # the newline (if t < 128)
            a0 = _load8(buf, u + _U(3))
            a1 = _load8(buf, u + _U(11))
            c = _ctz(_zero_bytes(a0 ^ _COMMAS))
            if c == 64:
                c = 64 + _ctz(_zero_bytes(a1 ^ _COMMAS))
            length = c >> 3                                 # hex digits before the comma (16: no comma
            #                                                 in the 16 bytes: checked below)
            nd = nl - (pos + 4 + length)                    # decimal digits after it
            ndc = min(max(nd, 1), 5)                        # (clamped: tables and shifts stay defined)
            lead = _load8(buf, u)
            kind = kind2[lead & _U(0xFFFF)]
            w = _load8(buf, u + _U(4 + length))
            lo = _PREFIX[_U(min(length, 8))]
            hi = _PREFIX[_U(max(length - 8, 0))]
            size = _dec8((w << _U(64 - 8 * ndc)) | (_ZEROS >> _U(8 * ndc)))
            # one branch on all the checks together (bitwise &, not short-circuit `and`)
            if (kind != 255) & (((lead >> _U(16)) & _U(0xFF)) == _U(_SP)) & (length >= 1) & (nd == ndc) \
                    & (t < 128) & (buf[u + _U(3 + length)] == _COMMA) & ((_hex_bytes(a0) & lo) == lo) \
                    & ((_hex_bytes(a1) & hi) == hi) & ((_digit_bytes(w) & _PREFIX[_U(ndc)]) == _PREFIX[_U(ndc)]) \
                    & (size > 0) & (size <= MAX_SIZE):
                r = _U(rec)                                 # (unsigned: no wraparound code)
                addrs[r] = ((_hex8(a0) << _U(32)) | _hex8(a1)) >> _U(64 - 4 * length)
                sizes[r] = size
                kinds[r] = kind
                rec += 1
                pos = nl + 1
                ok = True
        if not ok:
            status, nxt, addr, size, kind = _general_line(buf, pos, hexval, kindval)
            if status == 2:
                return pos, rec, line_no - 1, line_no
            if status == 0:
                addrs[rec] = addr
                sizes[rec] = size
                kinds[rec] = kind
                rec += 1
            pos = nxt
    return pos, rec, line_no, 0


class LackeyReader(MappedReader):
    """A lackey text file read chunk by chunk (a context manager; ``close()`` releases the map)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.is_file():
            raise SimulatorInputError(f"{self.path}: no such file")
        self.nbytes = self.path.stat().st_size
        self.pos = 0                                  # bytes consumed
        self.line_no = 0                              # lines consumed
        self._map = None
        self._buf = np.zeros(0, np.uint8)
        if self.nbytes:
            with open(self.path, "rb") as fh:
                self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            if hasattr(self._map, "madvise"):
                self._map.madvise(mmap.MADV_SEQUENTIAL)
            self._buf = np.frombuffer(self._map, dtype=np.uint8)

    def fill(self, addrs: np.ndarray, sizes: np.ndarray, kinds: np.ndarray) -> int:
        """Parse the next records into the arrays (as many as they hold); returns how many (0 at the end)."""
        pos, rec, line_no, bad = scan(self._buf, self.pos, addrs, sizes, kinds, self.line_no, _HEX, _KIND, _KIND2)
        if bad:
            raise SimulatorInputError(f"{self.path}:{bad}: {BAD_LINE}")
        self._release(self.pos, pos)
        self.pos, self.line_no = pos, line_no
        return rec

    def _release(self, start: int, stop: int) -> None:
        """Drop the mapped pages of bytes [start, stop) from this process (they stay in the page cache), so
        that its resident memory stays bounded too."""
        start -= start % mmap.PAGESIZE
        stop -= stop % mmap.PAGESIZE
        if self._map is not None and stop > start and hasattr(self._map, "madvise"):
            self._map.madvise(mmap.MADV_DONTNEED, start, stop - start)


# ---------------------------------------------------------------------------------------- writing
@njit(cache=True, nogil=True)
def _format(addrs, sizes, kinds, out):
    """Lackey lines of the records into ``out`` (long enough: 34 bytes per record); returns the length.
    Addresses get at least 8 hex digits, as valgrind prints them."""
    o = 0
    digits = np.empty(20, np.uint8)
    for i in range(addrs.shape[0]):
        k = kinds[i]
        if k == 0:
            out[o] = 73
            out[o + 1] = _SP
            out[o + 2] = _SP
        else:
            out[o] = _SP
            out[o + 1] = KIND_LETTERS[k]
            out[o + 2] = _SP
        o += 3
        a = addrs[i]
        nd = 0
        while a != np.uint64(0) or nd < 8:
            d = np.uint8(a & np.uint64(15))
            digits[nd] = d + 48 if d < 10 else d + 87
            a >>= np.uint64(4)
            nd += 1
        for j in range(nd - 1, -1, -1):
            out[o] = digits[j]
            o += 1
        out[o] = _COMMA
        o += 1
        s = np.int64(sizes[i])
        nd = 0
        while s != 0 or nd == 0:
            digits[nd] = 48 + s % 10
            s //= 10
            nd += 1
        for j in range(nd - 1, -1, -1):
            out[o] = digits[j]
            o += 1
        out[o] = _NL
        o += 1
    return o


def lackey_lines(addrs: np.ndarray, sizes: np.ndarray, kinds: np.ndarray) -> bytes:
    """The records as lackey lines (no header)."""
    out = np.empty(34 * len(addrs), np.uint8)
    n = _format(np.ascontiguousarray(addrs, np.uint64), np.ascontiguousarray(sizes, np.uint16),
                np.ascontiguousarray(kinds, np.uint8), out)
    return out[:n].tobytes()


def header_line() -> bytes:
    """:data:`HEADER`, a valgrind-style comment that readers skip and by which whatif knows its own files."""
    return (HEADER + "\n").encode()


def is_whatif_lackey(head: bytes) -> bool:
    return head.startswith(HEADER.encode())


drop_stale_caches("trace_lackey", (wordops, sys.modules[__name__]))   # the word operations are inlined
