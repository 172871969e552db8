"""Mutations of valid inputs, textual (on the bytes of any file) and structural (on a parsed TOML or JSON
document, a CSV grid), each drawing a few numbers from a ``random.Random`` (or hypothesis's stand-in).

* textual: a byte flipped, the file cut short, a line deleted, repeated or swapped, a number replaced by
  ``1e23``, ``-0``, ``nan``, ``inf``, ``2**64``, nothing or text, a word renamed, a few bytes or a
  syntax character of the format inserted, a few bytes deleted;
* structural: a value replaced by a huge, negative, non-finite, empty or wrongly typed one, or tweaked
  (negated, times 10^k, an int made a float), a key renamed or deleted, a list emptied, halved or an
  item repeated, a subtree copied elsewhere, an unknown key added; a CSV cell, row or column changed,
  deleted or repeated, a header name repeated, emptied or padded, a row one field longer or shorter,
  the rows shuffled, a whole column one value.

:func:`mutated` applies one to a few of them (half the time one) and writes the document back
(:func:`toml_dumps`: no TOML writer ships with Python).
"""

from __future__ import annotations

import copy
import csv
import io
import json
import math
import re
import tomllib
from datetime import date, datetime, time
from functools import cache
from random import Random
from typing import Any

import pandas as pd

# textual, on bytes
NUMBER = re.compile(rb"(?<![A-Za-z_0-9.])[-+]?(?:\d[\d_]*(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+)")
WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
SPECIAL_NUMBERS = [b"0", b"-0", b"-1", b"1", b"2", b"3", b"0.5", b"1e23", b"-1e23", b"1e308", b"1e309", b"-1e309",
                   b"1e-320", b"nan", b"-nan", b"inf", b"-inf", b"NaN", b"Infinity", b"9223372036854775807",
                   b"9223372036854775808", b"-9223372036854775809", b"18446744073709551616", b"1" + b"0" * 40,
                   b"4294967296", b"65535", b"65536", b"", b"abc", b"x1", b"0x1f", b"1_000", b"true", b"1.5e",
                   b"--1", b"1,5", b" ", b"1.0", b"00"]
SYNTAX = {"toml": [b"=", b"[", b"]", b"{", b"}", b'"', b"'", b",", b".", b"#", b"\n", b"[[", b"]]", b'"""', b"\\"],
          "json": [b"{", b"}", b"[", b"]", b":", b",", b'"', b"\\", b"null", b"-", b"\n"],
          "csv": [b",", b'"', b"\n", b"\r\n", b";", b"\t", b" ", b"\r", b",,"],
          "lackey": [b" ", b"\t", b",", b"\n", b"\r", b"I", b"L", b"S", b"M", b"=", b"==", b"0", b"\x00"],
          "binary": [b"\x00", b"\xff", b"\x80", b"\x7f", b"\x01"]}


def _random_bytes(rng: Random, n: int) -> bytes:
    return Random(rng.getrandbits(32)).getrandbits(8 * n).to_bytes(n, "little") if n else b""


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def _pick_line(rng: Random, data: bytes) -> tuple[list[bytes], int]:
    lines = _lines(data)
    return lines, rng.randrange(len(lines))


def flip_byte(rng, data, fmt):
    if not data:
        return _random_bytes(rng, 1)
    b = bytearray(data)
    i = rng.randrange(len(b))
    b[i] ^= (1 << rng.randrange(8)) if rng.random() < 0.5 else rng.randrange(1, 256)
    return bytes(b)


def truncate(rng, data, fmt):
    return data[:rng.randrange(len(data) + 1)]


def delete_line(rng, data, fmt):
    lines, i = _pick_line(rng, data)
    del lines[i]
    return b"\n".join(lines)


def repeat_line(rng, data, fmt):
    lines, i = _pick_line(rng, data)
    lines.insert(rng.randrange(len(lines) + 1), lines[i])
    return b"\n".join(lines)


def swap_lines(rng, data, fmt):
    lines, i = _pick_line(rng, data)
    j = rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


def insert_bytes(rng, data, fmt):
    at = rng.randrange(len(data) + 1)
    new = rng.choice(SYNTAX[fmt]) if rng.random() < 0.6 else _random_bytes(rng, rng.randint(1, 8))
    return data[:at] + new + data[at:]


def delete_bytes(rng, data, fmt):
    if not data:
        return data
    at = rng.randrange(len(data))
    return data[:at] + data[at + rng.randint(1, 16):]


def replace_number(rng, data, fmt):
    found = list(NUMBER.finditer(data))
    if not found:
        return insert_bytes(rng, data, fmt)
    m = rng.choice(found)
    return data[:m.start()] + rng.choice(SPECIAL_NUMBERS) + data[m.end():]


def rename_word(rng, data, fmt):
    found = list(WORD.finditer(data))
    if not found:
        return insert_bytes(rng, data, fmt)
    m = rng.choice(found)
    word = m.group()
    new = rng.choice([rng.choice(found).group(), word + b"x", word[:-1], word.upper(), b"", b"x"])
    return data[:m.start()] + new + data[m.end():]


TEXT_OPS = [flip_byte, truncate, delete_line, repeat_line, swap_lines, insert_bytes, delete_bytes,
            replace_number, replace_number, rename_word]
BINARY_OPS = [flip_byte, flip_byte, truncate, insert_bytes, delete_bytes]


def text_mutations(rng: Random, data: bytes, fmt: str, n: int) -> bytes:
    ops = BINARY_OPS if fmt == "binary" else TEXT_OPS
    for _ in range(n):
        data = rng.choice(ops)(rng, data, fmt)
    return data


def how_many(rng: Random) -> int:
    """Mutations for one input: 1 (half the time), 2, 3, ... up to 6."""
    n = 1
    while n < 6 and rng.random() < 0.5:
        n += 1
    return n


# structural, on parsed TOML and JSON documents
BIG = [10 ** 23, 2 ** 63 - 1, 2 ** 63, 2 ** 64, -(2 ** 63) - 1, 10 ** 40]
SPECIAL_NUMBER_VALUES = [0, -1, 1, 2, 3, 0.5, 1e23, -1e23, -0.0, 1e308, 1e-320, math.nan, math.inf, -math.inf, *BIG]
SPECIAL_VALUES = [*SPECIAL_NUMBER_VALUES, "", "x", "1", "nan", "1e23", True, False, [], {}, [0], [1e23], {"x": 1}]


def _nodes(doc: Any, out: list) -> list:
    """Every (container, key) of a parsed document."""
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        out.append((doc, key))
        _nodes(value, out)
    return out


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def tweak_number(rng: Random, v: Any) -> Any:
    options = [-v, v + 1, v - 1, v * 10 ** rng.randint(1, 30), v * 1.5, v / 3, 2 ** rng.randint(8, 70)]
    if isinstance(v, int):
        options.append(float(v))
    elif math.isfinite(v):
        options.append(int(v))
    return rng.choice(options)


def mutate_tree(rng: Random, doc: Any, json_null: bool = False) -> Any:
    """One structural change to a parsed document (in place where it can be; returns the document)."""
    nodes = _nodes(doc, [])
    if not nodes:
        return {"x": rng.choice(SPECIAL_VALUES)} if rng.random() < 0.5 else doc
    parent, key = rng.choice(nodes)
    value = parent[key]
    op = rng.randrange(10)
    specials = SPECIAL_VALUES + ([None] if json_null else [])
    if op == 0:                                    # a special value of the same kind, or of any kind
        parent[key] = copy.deepcopy(rng.choice(SPECIAL_NUMBER_VALUES if is_number(value) and rng.random() < 0.7
                                               else specials))
    elif op == 1 and is_number(value) and math.isfinite(value):
        parent[key] = tweak_number(rng, value)
    elif op == 2:                                  # deleted
        del parent[key]
    elif op == 3 and isinstance(parent, dict):     # renamed
        keys = [k for p, k in nodes if isinstance(p, dict)]
        new = rng.choice([rng.choice(keys), key + "x", key[:-1], key.upper(), "", "unknown_field"])
        del parent[key]
        parent[new] = value
    elif op == 4 and isinstance(parent, list):     # repeated
        parent.insert(rng.randrange(len(parent) + 1), copy.deepcopy(value))
    elif op == 4:
        parent[key + "_copy"] = copy.deepcopy(value)
    elif op == 5:                                  # another node's value here
        other, k = rng.choice(nodes)
        parent[key] = copy.deepcopy(other[k])
    elif op == 6:                                  # wrapped in a list, or a list's first item alone
        parent[key] = value[0] if isinstance(value, list) and value and rng.random() < 0.5 else [value]
    elif op == 7:                                  # as text
        parent[key] = json.dumps(value, default=str) if not isinstance(value, str) else value + " "
    elif op == 8 and isinstance(value, list):      # emptied, or half of it
        parent[key] = [] if rng.random() < 0.5 else value[:len(value) // 2]
    elif op == 8 and isinstance(value, dict):
        parent[key] = {}
    elif op == 9:                                  # an unknown key beside it
        target = value if isinstance(value, dict) else parent if isinstance(parent, dict) else None
        if target is not None:
            target[rng.choice(["unknown", "extra_field", "x"])] = copy.deepcopy(rng.choice(specials))
    else:
        parent[key] = copy.deepcopy(rng.choice(specials))
    return doc


_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(key: Any) -> str:
    key = str(key)
    return key if _BARE.match(key) else _toml_string(key)


def _toml_string(s: str) -> str:
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return _toml_string(v)
    if isinstance(v, (datetime, date, time)):
        return v.isoformat()
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"no TOML form for {type(v).__name__}")


def toml_dumps(doc: dict, path: tuple[str, ...] = ()) -> str:
    """A TOML document of ``doc``: values first, then one ``[table]`` per non-empty sub-table."""
    lines = [f"[{'.'.join(_toml_key(p) for p in path)}]"] if path else []
    tables = []
    for key, value in doc.items():
        if isinstance(value, dict) and value:
            tables.append((key, value))
        else:
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
    text = "\n".join(lines) + "\n"
    return text + "".join(toml_dumps(value, path + (str(key),)) for key, value in tables)


@cache
def _parsed(data: bytes, fmt: str) -> Any:
    if fmt == "toml":
        return tomllib.loads(data.decode())
    if fmt == "json":
        return json.loads(data)
    return list(csv.reader(io.StringIO(data.decode())))


def mutated(rng: Random, data: bytes, fmt: str, structural: float = 0.6) -> bytes:
    """``data`` (of format toml, json, csv, lackey or binary) after a few mutations; 3 % unchanged."""
    if rng.random() < 0.03:
        return data
    n = how_many(rng)
    if fmt in ("toml", "json", "csv") and rng.random() < structural:
        doc = copy.deepcopy(_parsed(data, fmt))
        for _ in range(n):
            doc = mutate_grid(rng, doc) if fmt == "csv" else mutate_tree(rng, doc, json_null=fmt == "json")
        if fmt == "toml":
            data = toml_dumps(doc).encode() if isinstance(doc, dict) else _toml_value(doc).encode()
        elif fmt == "json":
            data = json.dumps(doc).encode()
        else:
            data = grid_text(doc).encode()
        n = 1 if rng.random() < 0.3 else 0
    return text_mutations(rng, data, fmt, n)


# structural, on CSV grids (a list of rows, the header first)
SPECIAL_CELLS = ["", "nan", "NaN", "inf", "-inf", "1e23", "-1e23", "1e308", "1e309", "-0", "0", "-1", "abc", "x",
                 "True", "false", "NA", "null", "9223372036854775808", "18446744073709551616", "1" + "0" * 40, " ",
                 "1,2", '"', "1e-320", "0x10", "1_000", "\n", "0.5", "2", "3"]


def _tweak_cell(rng: Random, cell: str) -> str:
    try:
        v = float(cell)
    except ValueError:
        return rng.choice([cell + "x", cell.upper(), " " + cell, cell + " ", ""])
    if not math.isfinite(v):
        return "0"
    return repr(tweak_number(rng, int(v) if v.is_integer() and abs(v) < 1e18 else v))


def mutate_grid(rng: Random, grid: list[list[str]]) -> list[list[str]]:
    """One structural change to a CSV grid."""
    if not grid:
        return [["x"]]
    r = rng.randrange(len(grid))
    row = grid[r]
    width = max(len(g) for g in grid)
    op = rng.randrange(13)
    if op <= 1 and row:                            # a cell special, or its number changed
        c = rng.randrange(len(row))
        row[c] = rng.choice(SPECIAL_CELLS) if op == 0 else _tweak_cell(rng, row[c])
    elif op == 2:
        del grid[r]
    elif op == 3:
        grid.insert(rng.randrange(len(grid) + 1), list(row))
    elif op == 4 and width:                        # a column deleted
        c = rng.randrange(width)
        for g in grid:
            if c < len(g):
                del g[c]
    elif op == 5 and width:                        # a column repeated (its header name too)
        c = rng.randrange(width)
        at = rng.randrange(width + 1)
        for g in grid:
            if c < len(g):
                g.insert(min(at, len(g)), g[c])
    elif op == 6 and grid[0]:                      # a header name changed
        c = rng.randrange(len(grid[0]))
        grid[0][c] = rng.choice([rng.choice(grid[0]), "", " " + grid[0][c], grid[0][c].upper(), "x",
                                 grid[0][c] + "x"])
    elif op == 7:
        row.append(rng.choice(SPECIAL_CELLS))
    elif op == 8 and row:
        row.pop()
    elif op == 9:
        grid.insert(rng.randrange(len(grid) + 1), [])
    elif op == 10 and len(grid[0]) > 1:            # two header names swapped
        i, j = rng.sample(range(len(grid[0])), 2)
        grid[0][i], grid[0][j] = grid[0][j], grid[0][i]
    elif op == 11 and len(grid) > 2:               # the data rows in another order
        body = grid[1:]
        Random(rng.getrandbits(32)).shuffle(body)
        grid[1:] = body
    elif op == 12 and width:                       # a whole column one value
        c = rng.randrange(width)
        value = rng.choice(SPECIAL_CELLS)
        for g in grid[1:]:
            if c < len(g):
                g[c] = value
    return grid


def grid_text(grid: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(grid)
    return out.getvalue()


def frame_csv(df: pd.DataFrame) -> bytes:
    return df.to_csv(index=False).encode()
