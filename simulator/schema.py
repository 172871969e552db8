"""Shared plumbing for versioned TOML data files: loading, dotted overrides, one-line validation errors.

Platform, workload and scenario files all go through these helpers, so every file
error reads the same way: ``<file>: <field path>: <what is wrong> (got <value>)``.
"""

from __future__ import annotations

import difflib
import math
import re
import tomllib
from pathlib import Path
from typing import Any, Iterable

from pydantic import BaseModel, ValidationError

from whatif.files import file_problem
from whatif.simulator.errors import SimulatorInputError


def load_toml(path: str | Path) -> dict[str, Any]:
    """Parse a TOML file; a missing file or a syntax error becomes one clear line."""
    path = Path(path)
    if (problem := file_problem(path)) is not None:
        raise SimulatorInputError(f"{path}: {problem}")
    try:
        with path.open("rb") as fh:
            doc = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise SimulatorInputError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise SimulatorInputError(f"{path}: not a UTF-8 text file") from None
    bad = first_non_finite(doc)
    if bad is not None:
        raise SimulatorInputError(f"{path}: {bad[0]}: must be a finite number, got {bad[1]}")
    return doc


def first_non_finite(value: Any, where: str = "") -> tuple[str, float] | None:
    """The first ``nan`` or ``inf`` (TOML allows both) in a parsed document, as (dotted path, value):
    no quantity of a platform, workload or scenario is infinite or undefined."""
    if isinstance(value, float) and not math.isfinite(value):
        return where or "value", value
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        path = f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}" if where else str(key)
        found = first_non_finite(item, path)
        if found is not None:
            return found
    return None


def format_validation_error(exc: ValidationError, source: str, prefix: str = "") -> str:
    """The first pydantic error as one line naming the file and dotted field path (under ``prefix``)."""
    err = exc.errors()[0]
    loc = ".".join(([prefix] if prefix else []) + [str(p) for p in err.get("loc", ()) if p != "__root__"])
    msg = err.get("msg", "invalid value")
    msg = msg.removeprefix("Value error, ")
    where = f"{source}: {loc}" if loc else source
    if err.get("type") in ("missing",):
        return f"{where}: required field is missing"
    if err.get("type") == "extra_forbidden":
        return f"{where}: unknown field"
    value = err.get("input")
    if isinstance(value, (dict, list)) or err.get("type", "").startswith("value_error") or value is None:
        return f"{where}: {msg}"
    return f"{where}: {msg} (got {value!r})"


def check_schema_version(data: Any, current: int, changelog: dict[int, str]) -> Any:
    """For a pydantic ``mode="before"`` validator: refuse a file written for another format version,
    naming the versions this whatif knows."""
    if isinstance(data, dict):
        v = data.get("schema_version")
        if v is not None and v != current:
            hist = "; ".join(f"v{k}: {t}" for k, t in sorted(changelog.items()))
            raise ValueError(f"schema_version {v} is not supported (this whatif reads version "
                             f"{current}; format history: {hist})")
    return data


def load_versioned(path: str | Path, model: type[BaseModel], current: int, changelog: dict[int, str]) -> BaseModel:
    """A versioned TOML data file validated by ``model``: one line naming the file for every problem."""
    raw = load_toml(path)
    try:
        check_schema_version(raw, current, changelog)
    except ValueError as exc:
        raise SimulatorInputError(f"{path}: {exc}") from None
    return validate_model(model, raw, str(path))


_TABLE = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(?:#.*)?$")
_KEY = re.compile(r'^\s*("[^"]*"|[A-Za-z0-9_-]+)\s*=\s*(.*)$')


def value_comments(path: str | Path) -> dict[str, str]:
    """The comment on each ``key = value`` line of a TOML data file, by dotted key (``caches.L1I.size_kb``):
    where whatif's data files give a value's source (``[ORM] 32 KB``) or mark it ``estimate``.  A value
    written over several lines takes the comment of its first; keys inside inline tables get none."""
    out: dict[str, str] = {}
    table = ""
    for line in Path(path).read_text().splitlines():
        m = _TABLE.match(line)
        if m:
            table = ".".join(part.strip().strip('"') for part in m.group(1).split("."))
            continue
        m = _KEY.match(line)
        if m is None or line.lstrip().startswith("#"):
            continue
        key, rest = m.group(1).strip('"'), m.group(2)
        hash_at = _comment_start(rest)
        if hash_at is not None:
            out[f"{table}.{key}" if table else key] = rest[hash_at + 1:].strip()
    return out


def _comment_start(text: str) -> int | None:
    """Where a ``#`` comment starts in a TOML value's line (outside strings), or None."""
    quote = None
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            return i
    return None


def validate_model(model: type[BaseModel], data: dict[str, Any], source: str) -> BaseModel:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise SimulatorInputError(format_validation_error(exc, source)) from None


def parse_value(text: str) -> Any:
    """A ``--set`` value: TOML syntax when it parses (numbers, booleans, arrays, quoted strings),
    otherwise the raw text as a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def split_assignment(item: str) -> tuple[str, Any]:
    if "=" not in item:
        raise SimulatorInputError(f"override {item!r}: expected KEY=VALUE")
    key, _, value = item.partition("=")
    key = key.strip()
    if not key:
        raise SimulatorInputError(f"override {item!r}: empty key")
    parsed = parse_value(value.strip())
    if first_non_finite(parsed) is not None:
        raise SimulatorInputError(f"override {item!r}: the value must be a finite number")
    return key, parsed


def flatten(doc: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted-path view of a nested document (lists are leaves)."""
    out: dict[str, Any] = {}
    if isinstance(doc, dict):
        for key, value in doc.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            if isinstance(value, dict) and value:
                out.update(flatten(value, path))
            else:
                out[path] = value
    return out


def resolve_path(doc: dict[str, Any], key: str, shorthands: Iterable[str] = (), what: str = "override") -> list[str]:
    """Resolve a dotted key against ``doc`` case-insensitively.

    ``shorthands`` names top-level tables whose children may be addressed directly
    (``l2.size_kb`` for ``caches.L2.size_kb``).  Returns the exact path components."""
    parts = key.split(".")
    candidates = [parts] + [[table] + parts for table in shorthands]
    for cand in candidates:
        node: Any = doc
        exact: list[str] = []
        for part in cand:
            if not isinstance(node, dict):
                break
            match = next((k for k in node if str(k).lower() == part.lower()), None)
            if match is None:
                break
            exact.append(match)
            node = node[match]
        else:
            if isinstance(node, dict) and node:
                inside = list(flatten(node, ".".join(map(str, exact))))
                raise SimulatorInputError(f"{what} key {key!r} names a table, not a value; set one of its keys, "
                                          f"e.g. {', '.join(inside[:3])}")
            return exact
    known = list(flatten(doc))
    close = difflib.get_close_matches(key, known, n=3, cutoff=0.5)
    if not close:               # the last component alone: 'assoc' -> caches.L2.associativity, ...
        leaf = parts[-1].lower()
        close = [k for k in known if k.rsplit(".", 1)[-1].lower().startswith(leaf)
                 or difflib.get_close_matches(leaf, [k.rsplit(".", 1)[-1].lower()], cutoff=0.75)][:3]
    if close:
        hint = f"; did you mean {', '.join(close)}?"
    else:
        tops = ", ".join(str(k) for k in doc)
        short = [f"{t}.{name} as {name}" for t in shorthands if isinstance(doc.get(t), dict) for name in list(doc[t])[:2]]
        hint = f"; keys are dotted paths under {tops}" + (f" ({', '.join(short)}, ...)" if short else "")
    raise SimulatorInputError(f"unknown {what} key {key!r}{hint}")


def apply_overrides(doc: dict[str, Any], overrides: Iterable[tuple[str, Any]],
                    shorthands: Iterable[str] = (), what: str = "override") -> dict[str, Any]:
    """A deep copy of ``doc`` with each (dotted key, value) set.  Keys must already exist in ``doc``
    (pass the resolved document, defaults included, so every settable key exists)."""
    import copy

    out = copy.deepcopy(doc)
    for key, value in overrides:
        path = resolve_path(out, key, shorthands, what)
        node = out
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value
    return out
