"""What ships with whatif: platforms, workloads and scenarios, for ``whatif list`` and ``whatif show``."""

from __future__ import annotations

import json
from pathlib import Path

from whatif.scenarios.errors import ScenarioError
from whatif.simulator.platform import PLATFORM_DIR, SHORTHAND_TABLES, load_platform, platform_names, platform_path
from whatif.simulator.schema import flatten, load_toml, value_comments

SCENARIO_DIR = Path(__file__).resolve().parent.parent          # the shipped scenarios/*.toml
WORKLOAD_DIR = PLATFORM_DIR.parent / "workloads"
LISTABLE = ("platforms", "scenarios", "workloads")


def scenario_files() -> list[Path]:
    return sorted(SCENARIO_DIR.glob("*.toml"))


def listing(what: str) -> list[tuple[str, str]]:
    """(name, one-line description) pairs for ``whatif list WHAT``."""
    if what == "platforms":
        out = []
        for name in platform_names():
            p = load_platform(name)
            out.append((name, p.description))
        return out
    if what == "scenarios":
        return [(f"scenarios/{path.name}", str(load_toml(path).get("description", "")))
                for path in scenario_files()]
    if what == "workloads":
        out = []
        for path in sorted(WORKLOAD_DIR.glob("*.toml")):
            doc = load_toml(path)
            for name, spec in doc.get("workloads", {}).items():
                out.append((f"{path.stem}/{name}", str(spec.get("description", ""))))
        return out
    raise ScenarioError(f"cannot list {what!r}; choose one of: {', '.join(LISTABLE)}")


def value_sources(name: str, overrides: list[str]) -> dict[str, str]:
    """Where each resolved value of a platform comes from, by dotted key: the file's comment on it (its
    source, e.g. ``[ORM] 32 KB``, or an ``estimate`` mark), ``--set`` for an override, ``default`` for a
    value the file does not give, ``not stated`` for a value the file gives without a comment."""
    path = platform_path(name)
    comments = value_comments(path)
    given = set(flatten(load_toml(path)))
    resolved = flatten(load_platform(name, overrides).model_dump())
    shipped = flatten(load_platform(name).model_dump()) if overrides else resolved
    out = {}
    for key, value in resolved.items():
        if shipped.get(key) != value:
            out[key] = "--set"
        elif key in comments:
            out[key] = comments[key]
        else:
            out[key] = "not stated" if key in given else "default"
    return out


def show(what: str, name: str, overrides: list[str], sources: bool = False) -> tuple[dict, str]:
    """The resolved description (dict for --json; with ``sources`` also ``{"sources": {key: source}}``)
    and a readable text rendering (with ``sources``, each value's source after it)."""
    if what != "platform":
        raise ScenarioError(f"cannot show {what!r}; choose: platform")
    platform = load_platform(name, overrides)
    doc = platform.model_dump()
    lines = [f"{platform.name}: {platform.description}",
             f"  (dotted keys below are what --set accepts; a cache or TLB may be named without its "
             f"{' / '.join(SHORTHAND_TABLES)} prefix)"]
    flat = flatten(doc)
    origin = value_sources(name, overrides) if sources else {}
    width = max(len(k) for k in flat)
    vwidth = min(24, max(len(json.dumps(v)) for v in flat.values())) if sources else 0
    for key, value in flat.items():
        text = json.dumps(value)
        lines.append(f"  {key:<{width}} = {text:<{vwidth}}  # {origin[key]}" if sources else
                     f"  {key:<{width}} = {text}")
    if sources:
        marked = sum("estimate" in v for v in origin.values())
        lines.append(f"  ({marked} of {len(flat)} values marked estimate; 'default': not in the file, the "
                     f"schema's default)")
        doc = {**doc, "sources": origin}
    return doc, "\n".join(lines)
