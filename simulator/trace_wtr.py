"""whatif's binary trace format, ``.wtr``: version 2 (delta and variable-length coded blocks) and version 1.

Every version starts with the same 32-byte little-endian header::

    magic "WHATIFTR" (8 bytes) | version u32 | v1: 0, v2: records per block u32 | records u64 | 0 u64

**Version 2** (written since wave 2).  The records follow in blocks of ``records per block`` records (a
power of two up to 2**22; the last block may be shorter), each::

    records u32 | payload bytes u32 | CRC-32 of the payload u32 | payload

The payload codes each record in 1 byte plus varints (LEB128: 7 bits a byte, low first).  Two predictors
start at 0 in every block, so a block decodes on its own: ``next_i``, the address just past the last
instruction fetch, and ``last_d``, the address of the last data access.  The tag byte of a record:

* bits 0-1: the kind (0 I, 1 L, 2 S, 3 M);
* an instruction fetch: bits 2-5 the size (1-15; 0: the size follows as a varint), bit 6 set when the
  address is not ``next_i`` (then ``zigzag(address - next_i)`` follows as a varint), bit 7 zero;
* a data access: bits 2-4 the size, one of 1, 2, 4, 8, 16, 32, 64 as codes 1-7 (0: the size follows as
  a varint), bits 5-7 zero; ``zigzag(address - last_d)`` always follows as a varint;

then the size varint if escaped.  Differences are taken modulo 2**64 and zigzag maps a signed 64-bit
difference d to 2d or -2d-1, so small steps either way take one byte.  On real programs most
instruction fetches take one byte (the next instruction), data accesses two to four: 7-9x smaller than
lackey text (``tests/benchmarks/bench_traces.py`` prints the measured ratio).  A record of size 0, an
unknown tag bit, a varint longer than 10 bytes, a payload that ends early or late, or a CRC mismatch is
an error naming the block.

**Version 1** (wave 1, still read): the count's three arrays one after the other, addresses u64, sizes
u16, kinds u8, 11 bytes a record.  Written no more; ``whatif trace convert old.wtr new.wtr`` upgrades.
"""

from __future__ import annotations

import mmap
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
from numba import njit

from whatif.jitcache import drop_stale_caches
from whatif.simulator import wordops
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.wordops import ctz as _ctz
from whatif.simulator.wordops import MappedReader
from whatif.simulator.wordops import load8 as _load8

MAGIC = b"WHATIFTR"
VERSION = 2
READABLE = (1, 2)
HEADER = struct.Struct("<8sIIQQ")           # magic, version, v2 records per block, records, reserved
BLOCK = struct.Struct("<III")               # records, payload bytes, CRC-32 of the payload
BLOCK_RECORDS = 1 << 16                     # records per block that whatif writes
MAX_BLOCK_RECORDS = 1 << 22                 # (the simulation's chunk: a chunk is whole blocks)
MAX_RECORD_BYTES = 1 + 10 + 3               # tag, address varint, size varint

_U = np.uint64
_SIZE_CODE = np.zeros(65536, np.uint8)      # data access size -> code 1-7, 0 for an escaped size
for _code, _size in enumerate((1, 2, 4, 8, 16, 32, 64), start=1):
    _SIZE_CODE[_size] = _code
_CODE_SIZE = np.array([0, 1, 2, 4, 8, 16, 32, 64], np.uint16)

# decoder errors
OK, BAD_TAG, BAD_VARINT, BAD_SIZE, OVERRUN, UNDERRUN, BAD_CRC, BAD_COUNT, CUT_HEADER, CUT_PAYLOAD = range(10)
_ERRORS = {BAD_TAG: "corrupt: a tag byte with reserved bits set", BAD_VARINT: "corrupt: a varint over 64 bits",
           BAD_SIZE: "corrupt: a record of size 0 or over 65535", OVERRUN: "corrupt: records past the end of the "
           "payload", UNDERRUN: "corrupt: payload bytes after the last record", BAD_CRC: "corrupt: CRC mismatch",
           BAD_COUNT: "corrupt: a block of {} records", CUT_HEADER: "truncated: the file ends within a block header",
           CUT_PAYLOAD: "truncated: a payload of {} bytes runs past the end of the file"}


def _crc_tables() -> np.ndarray:
    """CRC-32 (zlib's: reflected polynomial 0xEDB88320) tables for slicing by 8."""
    t = np.zeros((8, 256), np.uint64)
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        t[0, n] = c
    for k in range(1, 8):
        t[k] = (t[k - 1] >> np.uint64(8)) ^ t[0][t[k - 1] & np.uint64(0xFF)]
    return t


_CRC = _crc_tables()


# ---------------------------------------------------------------------------------------- coding
@njit(cache=True, inline="always")
def _put_varint(out, o, v):
    while v >= _U(0x80):
        out[o] = np.uint8((v & _U(0x7F)) | _U(0x80))
        v >>= _U(7)
        o += 1
    out[o] = np.uint8(v)
    return o + 1


@njit(cache=True, nogil=True)
def encode_block(addrs, sizes, kinds, start, stop, out, size_code):
    """Code records [start, stop) into ``out`` (at least 14 bytes a record); returns the payload length."""
    o = 0
    next_i = _U(0)
    last_d = _U(0)
    for r in range(start, stop):
        a = addrs[r]
        s = sizes[r]
        k = kinds[r]
        if k == 0:
            code = s if s < 16 else 0
            d = a - next_i
            jump = d != _U(0)
            out[o] = np.uint8(code << 2) | (np.uint8(64) if jump else np.uint8(0))
            o += 1
            if jump:
                o = _put_varint(out, o, (d << _U(1)) ^ (_U(0) - (d >> _U(63))))
            next_i = a + _U(s)
        else:
            code = size_code[s]
            out[o] = np.uint8(k) | np.uint8(code << 2)
            o += 1
            d = a - last_d
            o = _put_varint(out, o, (d << _U(1)) ^ (_U(0) - (d >> _U(63))))
            last_d = a
        if code == 0:
            o = _put_varint(out, o, _U(s))
    return o


@njit(cache=True, inline="always")
def _varint8(buf, i):
    """(value, length) of the varint at ``buf[i]`` from one word: the first byte without the continuation
    bit ends it, three mask-and-shift steps pack the 7-bit groups.  Length 9: longer than 8 bytes (the
    value is then garbage).  The caller keeps 8 bytes readable past ``i``."""
    w = _load8(buf, i)
    length = (_ctz(~w & _U(0x8080808080808080)) >> 3) + 1
    x = w & (_U(0xFFFFFFFFFFFFFFFF) >> _U((64 - 8 * length) & 63))
    x = (x & _U(0x007F007F007F007F)) | ((x & _U(0x7F007F007F007F00)) >> _U(1))
    x = (x & _U(0x00003FFF00003FFF)) | ((x & _U(0x3FFF00003FFF0000)) >> _U(2))
    x = (x & _U(0x000000000FFFFFFF)) | ((x & _U(0x0FFFFFFF00000000)) >> _U(4))
    return x, length


@njit(cache=True, inline="always")
def _get_varint(buf, i, end):
    """(value, next index, error), byte by byte."""
    v = _U(0)
    shift = _U(0)
    for _ in range(10):
        if i >= end:
            return v, i, OVERRUN
        b = buf[i]
        i += 1
        v |= _U(b & 0x7F) << shift
        if b < 0x80:
            if shift == _U(63) and b > 1:
                return v, i, BAD_VARINT
            return v, i, OK
        shift += _U(7)
    return v, i, BAD_VARINT


@njit(cache=True)
def _record(buf, i, end, next_i, last_d, code_size):
    """One record at ``buf[i]``, byte by byte with every check: (error, next index, address, size, kind)."""
    if i >= end:
        return OVERRUN, i, _U(0), 0, 0
    t = buf[i]
    i += 1
    k = t & 3
    a = next_i
    if k == 0:
        if t & 128:
            return BAD_TAG, i, a, 0, k
        s = np.int64((t >> 2) & 15)
        if t & 64:
            z, i, err = _get_varint(buf, i, end)
            if err != OK:
                return err, i, a, 0, k
            a = next_i + ((z >> _U(1)) ^ (_U(0) - (z & _U(1))))
    else:
        if t & 224:
            return BAD_TAG, i, a, 0, k
        s = np.int64(code_size[(t >> 2) & 7])
        z, i, err = _get_varint(buf, i, end)
        if err != OK:
            return err, i, a, 0, k
        a = last_d + ((z >> _U(1)) ^ (_U(0) - (z & _U(1))))
    if s == 0:
        v, i, err = _get_varint(buf, i, end)
        if err != OK:
            return err, i, a, 0, k
        if v == _U(0) or v > _U(65535):
            return BAD_SIZE, i, a, 0, k
        s = np.int64(v)
    return OK, i, a, s, k


@njit(cache=True, nogil=True)
def decode_block(buf, start, end, count, addrs, sizes, kinds, at, code_size):
    """Decode ``count`` records from ``buf[start:end]`` into the arrays from index ``at``; returns an
    error code (0: the payload held exactly ``count`` records).  Each record is read a word at a time
    when 32 bytes of ``buf`` follow it and it is well formed (varints of 8 bytes at most); any other
    record goes through :func:`_record`, which also names what is wrong."""
    nbytes = buf.shape[0]
    i = start
    next_i = _U(0)
    last_d = _U(0)
    for r in range(at, at + count):
        ok = False
        if i + 32 <= nbytes:
            t = buf[i]
            j = i + 1
            k = t & 3
            if k == 0:
                good = (t & 128) == 0
                s = np.int64((t >> 2) & 15)
                a = next_i
                if t & 64:
                    z, length = _varint8(buf, j)
                    j += length
                    good = good and length <= 8
                    a = next_i + ((z >> _U(1)) ^ (_U(0) - (z & _U(1))))
            else:
                good = (t & 224) == 0
                s = np.int64(code_size[(t >> 2) & 7])
                z, length = _varint8(buf, j)
                j += length
                good = good and length <= 8
                a = last_d + ((z >> _U(1)) ^ (_U(0) - (z & _U(1))))
            if s == 0:
                v, length = _varint8(buf, j)
                j += length
                s = np.int64(v)
                good = good and length <= 8 and 0 < s <= 65535
            if good and j <= end:
                ok = True
                i = j
        if not ok:
            err, i, a, s, k = _record(buf, i, end, next_i, last_d, code_size)
            if err != OK:
                return err
        if k == 0:
            next_i = a + _U(s)
        else:
            last_d = a
        addrs[r] = a
        sizes[r] = s
        kinds[r] = k
    return OK if i == end else UNDERRUN


@njit(cache=True, nogil=True)
def crc32(buf, start, end, t):
    """zlib.crc32 of ``buf[start:end]``, eight bytes a step."""
    m = _U(0xFFFFFFFF)
    crc = m
    i = start
    while i + 8 <= end:
        one = crc ^ (_U(buf[i]) | (_U(buf[i + 1]) << _U(8)) | (_U(buf[i + 2]) << _U(16)) | (_U(buf[i + 3]) << _U(24)))
        crc = (t[7, one & _U(0xFF)] ^ t[6, (one >> _U(8)) & _U(0xFF)] ^ t[5, (one >> _U(16)) & _U(0xFF)]
               ^ t[4, one >> _U(24)] ^ t[3, _U(buf[i + 4])] ^ t[2, _U(buf[i + 5])] ^ t[1, _U(buf[i + 6])]
               ^ t[0, _U(buf[i + 7])])
        i += 8
    while i < end:
        crc = (crc >> _U(8)) ^ t[0, (crc ^ _U(buf[i])) & _U(0xFF)]
        i += 1
    return crc ^ m


@njit(cache=True, inline="always")
def _u32(buf, i):
    return np.int64(buf[i]) | (np.int64(buf[i + 1]) << 8) | (np.int64(buf[i + 2]) << 16) | (np.int64(buf[i + 3]) << 24)


@njit(cache=True, nogil=True)
def decode_blocks(buf, pos, left, block_records, addrs, sizes, kinds, code_size, crc_table):
    """Check and decode whole blocks from byte ``pos`` into the arrays while they fit, ``left`` records at
    most: one call a chunk, without the GIL.  Returns (position after the last block decoded, records,
    blocks, error code, the error's number or 0); on an error the position is the failing block's."""
    nbytes = buf.shape[0]
    cap = addrs.shape[0]
    n = 0
    blocks = 0
    while n < left:
        if pos + 12 > nbytes:
            return pos, n, blocks, CUT_HEADER, 0
        count = _u32(buf, pos)
        length = _u32(buf, pos + 4)
        if count == 0 or count > block_records or count > left - n:
            return pos, n, blocks, BAD_COUNT, count
        if count > cap - n:
            break
        start = pos + 12
        if start + length > nbytes:
            return pos, n, blocks, CUT_PAYLOAD, length
        if crc32(buf, start, start + length, crc_table) != _U(_u32(buf, pos + 8)):
            return pos, n, blocks, BAD_CRC, 0
        err = decode_block(buf, start, start + length, count, addrs, sizes, kinds, n, code_size)
        if err != OK:
            return pos, n, blocks, err, 0
        n += count
        pos = start + length
        blocks += 1
    return pos, n, blocks, OK, 0


def encode(addrs: np.ndarray, sizes: np.ndarray, kinds: np.ndarray,
           block_records: int = BLOCK_RECORDS) -> list[bytes]:
    """The v2 blocks (header and payload) of the records; sizes must be 1-65535 and kinds 0-3."""
    check_records(sizes, kinds, "records to write")
    addrs = np.ascontiguousarray(addrs, np.uint64)
    sizes = np.ascontiguousarray(sizes, np.uint16)
    kinds = np.ascontiguousarray(kinds, np.uint8)
    out = np.empty(MAX_RECORD_BYTES * min(block_records, len(addrs)), np.uint8)
    blocks = []
    for start in range(0, len(addrs), block_records):
        stop = min(len(addrs), start + block_records)
        n = encode_block(addrs, sizes, kinds, start, stop, out, _SIZE_CODE)
        payload = out[:n].tobytes()
        blocks.append(BLOCK.pack(stop - start, n, zlib.crc32(payload)) + payload)
    return blocks


def header(records: int, block_records: int = BLOCK_RECORDS) -> bytes:
    return HEADER.pack(MAGIC, VERSION, block_records, records, 0)


def wtr_bytes(addrs: np.ndarray, sizes: np.ndarray, kinds: np.ndarray, block_records: int = BLOCK_RECORDS) -> bytes:
    """A whole v2 file."""
    return b"".join([header(len(addrs), block_records), *encode(addrs, sizes, kinds, block_records)])


def wtr_v1_bytes(addrs: np.ndarray, sizes: np.ndarray, kinds: np.ndarray) -> bytes:
    """A whole v1 file (for tests of the v1 reader: whatif writes v2)."""
    return b"".join([HEADER.pack(MAGIC, 1, 0, len(addrs), 0), np.ascontiguousarray(addrs, "<u8").tobytes(),
                     np.ascontiguousarray(sizes, "<u2").tobytes(), np.ascontiguousarray(kinds, "u1").tobytes()])


def check_records(sizes: np.ndarray, kinds: np.ndarray, where: str, first: int = 0) -> None:
    """Sizes 1-65535 (uint16 holds at most that) and kinds 0-3, else an error naming the first bad record."""
    bad = (sizes == 0) | (kinds > 3)
    if bad.any():
        i = int(np.argmax(bad))
        what = f"size {int(sizes[i])}" if sizes[i] == 0 else f"an invalid kind code {int(kinds[i])}"
        raise SimulatorInputError(f"{where}: record {first + i} has {what}")


# ---------------------------------------------------------------------------------------- reading
class WtrReader(MappedReader):
    """A ``.wtr`` file (v1 or v2) read chunk by chunk over a memory map (a context manager)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.is_file():
            raise SimulatorInputError(f"{self.path}: no such file")
        self.nbytes = self.path.stat().st_size
        with self.path.open("rb") as fh:
            head = fh.read(HEADER.size)
        if len(head) < HEADER.size:
            raise SimulatorInputError(f"{self.path}: too short for a whatif trace header "
                                      f"({len(head)} of {HEADER.size} bytes)")
        magic, self.version, block_records, self.records, reserved = HEADER.unpack(head)
        if magic != MAGIC:
            raise SimulatorInputError(f"{self.path}: not a whatif binary trace (bad magic); "
                                      f"use --format lackey for text")
        if self.version not in READABLE:
            raise SimulatorInputError(f"{self.path}: whatif trace format version {self.version} is not "
                                      f"supported (this whatif reads versions 1 and 2)")
        self.block_records = block_records if self.version == 2 else 0
        if self.version == 1 and self.nbytes != HEADER.size + 11 * self.records:
            raise SimulatorInputError(f"{self.path}: truncated or corrupt: header says {self.records} records "
                                      f"({HEADER.size + 11 * self.records} bytes), file has {self.nbytes} bytes")
        if self.version == 2 and not (0 < block_records <= MAX_BLOCK_RECORDS
                                      and block_records & (block_records - 1) == 0):
            raise SimulatorInputError(f"{self.path}: corrupt header: {block_records} records per block "
                                      f"(a power of two up to {MAX_BLOCK_RECORDS} expected)")
        if self.version == 2 and reserved != 0:
            raise SimulatorInputError(f"{self.path}: corrupt header: reserved word {reserved:#x} is not 0")
        if self.version == 2 and self.records > self.nbytes - HEADER.size:     # a record takes a byte at least
            raise SimulatorInputError(f"{self.path}: truncated or corrupt: header says {self.records} records, "
                                      f"the file has {self.nbytes} bytes")
        self.done = 0                              # records delivered
        self.pos = HEADER.size                     # v2: the next block's offset
        self._block = 0
        self._released = 0                         # bytes of the map given back (madvise)
        self._map = None
        self._buf = np.zeros(0, np.uint8)
        if self.version == 2 and self.nbytes > HEADER.size:
            with self.path.open("rb") as fh:
                self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            self._buf = np.frombuffer(self._map, dtype=np.uint8)

    def fill(self, addrs: np.ndarray, sizes: np.ndarray, kinds: np.ndarray) -> int:
        """Decode the next records into the arrays; returns how many (0 at the end).  v2 delivers whole
        blocks: the arrays must hold at least one block (a multiple of the block size fills them)."""
        if self.version == 1:
            n = self._fill_v1(addrs, sizes, kinds)
        else:
            n = self._fill_v2(addrs, sizes, kinds)
        self.done += n
        return n

    def _fill_v1(self, addrs, sizes, kinds) -> int:
        n = min(len(addrs), self.records - self.done)
        count, first = self.records, self.done
        with self.path.open("rb") as fh:                # read(), not the map: a copy either way, and faster
            for column, offset, width in ((addrs, 0, 8), (sizes, 8 * count, 2), (kinds, 10 * count, 1)):
                fh.seek(HEADER.size + offset + width * first)
                if fh.readinto(memoryview(column[:n]).cast("B")) != width * n:
                    raise SimulatorInputError(f"{self.path}: truncated while reading")
        check_records(sizes[:n], kinds[:n], str(self.path), first)
        return n

    def _fill_v2(self, addrs, sizes, kinds) -> int:
        left = self.records - self.done
        pos, n, blocks, err, number = decode_blocks(self._buf, self.pos, left, self.block_records, addrs, sizes,
                                                    kinds, _CODE_SIZE, _CRC)
        if err != OK:
            raise SimulatorInputError(f"{self.path}: block {self._block + blocks} (byte {pos}): "
                                      + _ERRORS[err].format(number))
        if n == 0 and left > 0:
            raise ValueError(f"arrays of {len(addrs)} records cannot hold a block of {self.block_records}")
        self.pos, self._block = pos, self._block + blocks
        if n == left and self.pos != self.nbytes:
            raise SimulatorInputError(f"{self.path}: {self.nbytes - self.pos} bytes after the last block "
                                      f"(the header says {self.records} records)")
        self._release()
        return n

    def _release(self) -> None:
        """Drop the mapped pages of the decoded blocks from this process (they stay in the page cache)."""
        stop = self.pos - self.pos % mmap.PAGESIZE
        if self._map is not None and stop > self._released and hasattr(self._map, "madvise"):
            self._map.madvise(mmap.MADV_DONTNEED, self._released, stop - self._released)
            self._released = stop


drop_stale_caches("trace_wtr", (wordops, sys.modules[__name__]))   # the word operations are inlined
