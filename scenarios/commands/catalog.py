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


SHOWABLE = ("platform", "workload")
REALISED_FACTOR = 2.0       # a described share realised beyond this factor either way is flagged


def show(what: str, name: str, overrides: list[str], sources: bool = False,
         isa: str = "x86_64") -> tuple[dict, str]:
    """The resolved description (dict for --json; with ``sources`` also ``{"sources": {key: source}}``)
    and a readable text rendering (with ``sources``, each value's source after it).  A workload is shown
    with what its program realises (:func:`show_workload`)."""
    if what == "workload":
        if overrides or sources:
            raise ScenarioError("--set and --sources apply to platforms; a workload's values and their "
                                "sources are in its file (whatif list workloads)")
        return show_workload(name, isa)
    if what != "platform":
        raise ScenarioError(f"cannot show {what!r}; choose one of: {', '.join(SHOWABLE)}")
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


def show_workload(name: str, isa_name: str = "x86_64") -> tuple[dict, str]:
    """A workload description and, per phase, what the program synthesised from it realises: instruction
    mix, taken rate and each access kind's stream shares, described beside realised (expected dynamic
    shares over the program's instruction weights: the program's own figures, not a run's), with the
    heaviest single load or store's share of its phase, which bounds how finely the shares can be met.  A
    share realised beyond ``REALISED_FACTOR`` either way is flagged.  The program is the description's
    source (``source_seed``); a binary seed lays it out and does not change these shares."""
    from whatif.simulator.isa import isa_for
    from whatif.simulator.synth.compare import stream_shares
    from whatif.simulator.synth.program import build_program
    from whatif.simulator.workload import load_workload, phase_lengths

    ref = load_workload(name)
    try:
        isa = isa_for(isa_name)
    except ValueError as exc:
        raise ScenarioError(f"--isa: {exc}") from None
    prog = build_program(ref.spec, isa, 0)
    lengths = phase_lengths(ref.spec)
    rows = stream_shares(prog)
    phases = []
    for p, params in enumerate(prog.phases):
        exp = prog.expected(p)
        streams = [{"kind": r.kind, "stream": r.stream, "described": r.described, "realised": r.realised,
                    "flagged": not r.described / REALISED_FACTOR <= r.realised <= r.described * REALISED_FACTOR,
                    "heaviest_instruction": r.heaviest} for r in rows if r.phase == p]
        taken = params.branches.taken_rate
        phases.append({
            "phase": p, "name": params.name, "instructions": int(lengths[p]),
            "mix": {k: {"described": float(getattr(params.mix, k)), "realised": exp[k]}
                    for k in ("load", "store", "branch", "fp", "other")},
            "taken_rate": {"described": taken, "realised": exp["taken_rate"]},
            "streams": streams})
    doc = {"workload": ref.qualified, "source": ref.source, "isa": isa.name,
           "source_seed": ref.spec.source_seed, "description": ref.spec.model_dump(), "phases": phases}
    return doc, _workload_text(doc)


def _workload_text(doc: dict) -> str:
    lines = [f"{doc['workload']} ({doc['source']}): {doc['description'].get('description') or ''}".rstrip(": "),
             f"  its program on {doc['isa']} (source seed {doc['source_seed']}): described against realised, "
             f"the program's expected dynamic shares (not a run); heaviest: the share of the phase's loads "
             f"(stores) that its heaviest load (store) carries; ! a share realised beyond {REALISED_FACTOR:g}x "
             f"either way"]
    for ph in doc["phases"]:
        lines.append(f"  phase {ph['phase']} {ph['name']!r}, {ph['instructions']:,} instructions a pass")
        lines.append(f"    {'mix':<24}{'described':>10}{'realised':>10}")
        for key, v in ph["mix"].items():
            lines.append(f"    {key:<24}{v['described']:>10.3f}{v['realised']:>10.3f}")
        t = ph["taken_rate"]
        lines.append(f"    {'taken rate':<24}{'-' if t['described'] is None else format(t['described'], '.3f'):>10}"
                     f"{t['realised']:>10.3f}")
        lines.append(f"    {'streams':<24}{'described':>10}{'realised':>10}{'heaviest':>10}")
        for s in ph["streams"]:
            mark = " !" if s["flagged"] else ""
            lines.append(f"    {s['kind'] + ' ' + s['stream']:<24}{s['described']:>10.1%}{s['realised']:>10.1%}"
                         f"{s['heaviest_instruction']:>10.1%}{mark}")
    return "\n".join(lines)
