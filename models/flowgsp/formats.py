"""EFG files: the JSON interchange format, and reading a profile file of either kind.

JSON interchange format (contract 3)::

    {"methods": [{"name": "pkg/Cls.m(I)V",
                  "vertices": [{"id": 0, "weight": 12, "attributes": ["Opcode=L", "Icachemiss"]}, ...],
                  "edges": [[0, 1, 250.0], ...]},      # [src_id, dst_id, frequency], within the method
                 ...]}

Vertex ids are unique within their method; weights and frequencies are non-negative numbers (raw
counts; FlowGSP normalises them over the whole graph).
"""

from __future__ import annotations

import json
from pathlib import Path

from whatif.files import file_problem
from whatif.models.errors import ModelInputError
from whatif.models.flowgsp.graph import EFG
from whatif.models.flowgsp.profile_db import is_sqlite_file, read_sqlite


SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")      # a file so named is never read as JSON


def parse_json(text: str, source: str = "<string>") -> EFG:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelInputError(f"{source}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(doc, dict) or "methods" not in doc:
        raise ModelInputError(f"{source}: expected a JSON object with a 'methods' list")
    return EFG.from_methods(doc["methods"], source=source)


def read_json(path: str | Path) -> EFG:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ModelInputError(f"{path}: not UTF-8 text (byte {exc.start}); expected JSON or a SQLite database") from None
    return parse_json(text, source=str(path))


def to_json_text(efg: EFG) -> str:
    return json.dumps({"methods": efg.to_methods()}, separators=(",", ":"))


def write_json(efg: EFG, path: str | Path) -> None:
    Path(path).write_text(to_json_text(efg), encoding="utf-8")


def read_profile(path: str | Path, prologue_bytes: int = 16) -> EFG:
    """An EFG from ``path``: a SQLite profile database (detected by its header) or a JSON file."""
    path = Path(path)
    if (problem := file_problem(path)) is not None:
        raise ModelInputError(f"{path}: {problem}")
    if is_sqlite_file(path):
        return read_sqlite(path, prologue_bytes=prologue_bytes)
    if path.suffix.lower() in SQLITE_SUFFIXES:
        raise ModelInputError(f"{path}: not a SQLite database (its first bytes are not the SQLite header); "
                              f"expected a SQLite profile, or an EFG as .json")
    return read_json(path)
