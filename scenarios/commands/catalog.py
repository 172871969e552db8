"""What ships with whatif: platforms, workloads and scenarios, for ``whatif list`` and ``whatif show``."""

from __future__ import annotations

import json
from pathlib import Path

from whatif.scenarios.errors import ScenarioError
from whatif.simulator.platform import PLATFORM_DIR, SHORTHAND_TABLES, load_platform, platform_names
from whatif.simulator.schema import flatten, load_toml

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


def show(what: str, name: str, overrides: list[str]) -> tuple[dict, str]:
    """The resolved description (dict for --json) and a readable text rendering."""
    if what != "platform":
        raise ScenarioError(f"cannot show {what!r}; choose: platform")
    platform = load_platform(name, overrides)
    doc = platform.model_dump()
    lines = [f"{platform.name}: {platform.description}",
             f"  (dotted keys below are what --set accepts; a cache or TLB may be named without its "
             f"{' / '.join(SHORTHAND_TABLES)} prefix)"]
    width = max(len(k) for k in flatten(doc))
    for key, value in flatten(doc).items():
        lines.append(f"  {key:<{width}} = {json.dumps(value)}")
    return doc, "\n".join(lines)
