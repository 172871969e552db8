"""Slow, obviously-correct reference readers and writers of the trace formats, from their documented grammar.

They share nothing with ``whatif.simulator.trace_lackey`` and ``trace_wtr`` but the specification in
those modules' docstrings: lackey lines are matched by one regular expression, ``.wtr`` v2 records are
coded and decoded with Python integers.  The tests demand identical records, bytes and errors.
"""

from __future__ import annotations

import re
import struct
import zlib

MASK64 = (1 << 64) - 1
RECORD = re.compile(rb"(I|[ \t]+[LSM])[ \t]+([0-9a-fA-F]{1,16}),([0-9]+)[ \t]*")
KINDS = {b"I": 0, b"L": 1, b"S": 2, b"M": 3}


def lackey(data: bytes) -> tuple[list[tuple[int, int, int]], int]:
    """(records as (address, size, kind), 1-based number of the first malformed line or 0)."""
    records = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        if line.endswith(b"\r"):
            line = line[:-1]
        if line.strip(b" \t") == b"" or line.lstrip(b" \t").startswith(b"=="):
            continue
        m = RECORD.fullmatch(line)
        if m is None or not 1 <= int(m.group(3)) <= 65535:
            return records, number
        records.append((int(m.group(2), 16), int(m.group(3)), KINDS[m.group(1).strip(b" \t")]))
    return records, 0


def lackey_lines(records: list[tuple[int, int, int]]) -> bytes:
    """Lackey text as valgrind prints it: ``I  %08lx,%lu`` and `` L %08lx,%lu``."""
    return b"".join(b"%s%08x,%d\n" % (b"I  " if k == 0 else b" " + b"ILSM"[k:k + 1] + b" ", a, s)
                    for a, s, k in records)


# ---------------------------------------------------------------------------------------- .wtr v2
def varint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def zigzag(d: int) -> int:
    d = (d + (1 << 63)) % (1 << 64) - (1 << 63)      # the difference as a signed 64-bit number
    return (2 * d if d >= 0 else -2 * d - 1)


def unzigzag(z: int) -> int:
    return z // 2 if z % 2 == 0 else -(z + 1) // 2


DATA_SIZES = {1: 1, 2: 2, 4: 3, 8: 4, 16: 5, 32: 6, 64: 7}


def wtr_block(records: list[tuple[int, int, int]]) -> bytes:
    """The payload of one v2 block."""
    out = bytearray()
    next_i = last_d = 0
    for a, s, k in records:
        if k == 0:
            code = s if s < 16 else 0
            jump = a != next_i
            out.append(code << 2 | (64 if jump else 0))
            if jump:
                out += varint(zigzag(a - next_i))
            next_i = (a + s) & MASK64
        else:
            code = DATA_SIZES.get(s, 0)
            out.append(k | code << 2)
            out += varint(zigzag(a - last_d))
            last_d = a
        if code == 0:
            out += varint(s)
    return bytes(out)


def wtr(records: list[tuple[int, int, int]], block_records: int = 1 << 16) -> bytes:
    """A whole v2 file."""
    parts = [struct.pack("<8sIIQQ", b"WHATIFTR", 2, block_records, len(records), 0)]
    for start in range(0, len(records), block_records):
        payload = wtr_block(records[start:start + block_records])
        parts.append(struct.pack("<III", len(records[start:start + block_records]), len(payload),
                                 zlib.crc32(payload)) + payload)
    return b"".join(parts)


def read_varint(data: bytes, i: int) -> tuple[int, int]:
    v = shift = 0
    while True:
        b = data[i]
        i += 1
        v |= (b & 0x7F) << shift
        if b < 0x80:
            return v, i
        shift += 7


def read_wtr_block(payload: bytes, count: int) -> list[tuple[int, int, int]]:
    out, i, next_i, last_d = [], 0, 0, 0
    sizes = {v: k for k, v in DATA_SIZES.items()}
    for _ in range(count):
        t = payload[i]
        i += 1
        k = t & 3
        if k == 0:
            s = (t >> 2) & 15
            a = next_i
            if t & 64:
                z, i = read_varint(payload, i)
                a = (next_i + unzigzag(z)) & MASK64
        else:
            s = sizes.get((t >> 2) & 7, 0)
            z, i = read_varint(payload, i)
            a = last_d = (last_d + unzigzag(z)) & MASK64
        if s == 0:
            s, i = read_varint(payload, i)
        if k == 0:
            next_i = (a + s) & MASK64
        out.append((a, s, k))
    assert i == len(payload)
    return out
