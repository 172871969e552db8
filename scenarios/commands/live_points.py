"""Glue of ``whatif live-points``: a store's libraries listed, and removed or pruned on request."""

from __future__ import annotations

import shutil
from pathlib import Path

from whatif.scenarios.results.livepoint_store import LivePointStore
from whatif.scenarios.results.progress import progress_bar


def live_points_command(store: Path, remove: list[str], prune: bool, verify: bool = False,
                        progress: bool = False, remove_stale: bool = False) -> dict:
    """The store's libraries and unfinished captures and its file system's free space, after removing the
    libraries ``remove`` names (and, with ``remove_stale``, every stale one) and, with ``prune``, what killed
    captures left (``removed``, ``pruned``); with ``verify``, every library read and checked as a replay would
    (each row ``verified``, or ``damaged``)."""
    lp_store = LivePointStore(store, "live-points")
    asked = bool(remove) or remove_stale
    if remove_stale:
        remove = [*remove, *(row["name"] for row in lp_store.libraries() if row.get("stale"))]
    removed = lp_store.remove(remove) if remove else []
    pruned = lp_store.prune() if prune else []
    libraries = lp_store.libraries()
    if verify:
        readable = [row for row in libraries if "damaged" not in row]
        with progress_bar(sum(row["bytes"] for row in readable), "verifying live-points", progress) as advance:
            for row in readable:
                lp_store.verify(row, advance)
    return {"store": str(store), "libraries": libraries, "unfinished": lp_store.unfinished(),
            "free_bytes": shutil.disk_usage(store).free, **({"removed": removed} if asked else {}),
            **({"pruned": pruned} if prune else {}), **({"verified": True} if verify else {})}


def damage(doc: dict) -> str | None:
    """The line that says which libraries a ``--verify`` found damaged (None: all sound, or not verified)."""
    damaged = [r for r in doc["libraries"] if "damaged" in r]
    if not doc.get("verified") or not damaged:
        return None
    first = damaged[0]
    return (f"live-points {doc['store']}: {_count(len(damaged), 'library', 'libraries')} damaged: {first['name']} "
            f"({first['damaged']}){f' and {len(damaged) - 1} more' if len(damaged) > 1 else ''}; move "
            f"{'it' if len(damaged) == 1 else 'them'} away (or --remove) to capture again")


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def print_listing(doc: dict) -> None:
    import typer
    from rich.table import Table

    from whatif.scenarios.render import stdout_console

    if doc.get("removed"):
        removed = doc["removed"]
        typer.echo(f"removed {_count(len(removed), 'library', 'libraries')}, "
                   f"{sum(r['bytes'] for r in removed) / 1e6:,.1f} MB: {', '.join(r['name'] for r in removed)}")
    if doc.get("pruned"):
        typer.echo(f"removed what {_count(len(doc['pruned']), 'killed capture', 'killed captures')} left, "
                   f"{sum(r['bytes'] for r in doc['pruned']) / 1e6:,.1f} MB")
    libraries, unfinished = doc["libraries"], doc["unfinished"]
    title = (f"{_count(len(libraries), 'live-point library', 'live-point libraries')} in {doc['store']}, "
             f"{sum(r['bytes'] for r in libraries) / 1e6:,.1f} MB; {doc['free_bytes'] / 1e6:,.0f} MB free on its "
             f"file system")
    if doc.get("verified"):
        damaged = sum("damaged" in r for r in libraries)
        title += f"; verified: {f'{damaged} damaged' if damaged else 'all sound'}"
    stale = sum(bool(r.get("stale")) for r in libraries)
    if stale:
        title += (f"; {stale} stale (captured by other code than this whatif's: no run finds "
                  f"{'it' if stale == 1 else 'them'}; --remove-stale removes {'it' if stale == 1 else 'them'})")
    if unfinished:
        killed = sum(not r["running"] for r in unfinished)
        title += (f"; {_count(len(unfinished), 'unfinished capture', 'unfinished captures')}, "
                  f"{sum(r['bytes'] for r in unfinished) / 1e6:,.1f} MB ({len(unfinished) - killed} running, "
                  f"{killed} killed: --prune removes those)")
    t = Table(title=title)
    for col in ("library", "workload", "platform", "U, W, n (S)", "units", "MB", "captured", "core"):
        t.add_column(col, justify="right" if col in ("units", "MB") else "left")
    for r in libraries:
        if "damaged" in r:
            t.add_row(r["name"], f"damaged: {r['damaged']}", "", "", "", f"{r['bytes'] / 1e6:,.1f}", "", "")
            continue
        d = r["design"]
        sample = f"{d['unit']:,}, {d['warmup']:,}, {d['units']:,}"
        if d["segments"] > 1:
            sample += f" ({d['segments']})"
        t.add_row(r["name"], r["workload"] or "", r["platform"] or "", sample, f"{r['units']:,}",
                  f"{r['bytes'] / 1e6:,.1f}", r["captured"] + (" (stale)" if r["stale"] else ""),
                  r["captured_on"].get("core", ""))
    stdout_console().print(t)
