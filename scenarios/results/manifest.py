"""manifest.json: what was run (command line, scenario, resolved parameters and platforms, seed), by which
code (whatif's version and git commit, package versions), on which host, how long it took and how fast
it simulated -- and which files the run wrote, by which a later run recognises the directory as whatif's
(:func:`~whatif.scenarios.results.writer.read_manifest`)."""

from __future__ import annotations

import platform as _host_platform
import subprocess
import sys
from datetime import datetime, timezone
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from whatif.scenarios.results.writer import RESULTS_FORMAT

PACKAGES = ("whatif", "numpy", "numba", "scipy", "pandas", "pyarrow", "simpy", "statsmodels",
            "matplotlib", "typer", "rich", "pydantic", "dask", "distributed")
SOURCE_ROOT = Path(__file__).resolve().parents[2]          # the whatif package: the repository's top level


def package_versions() -> dict[str, str]:
    versions = {"python": _host_platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


@lru_cache(maxsize=1)
def git_commit(root: Path = SOURCE_ROOT) -> str | None:
    """The commit of the whatif source tree when it is a git checkout (``+dirty`` when tracked files
    changed); None for an installed copy or without git."""
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "") if head else None


def build_manifest(*, study: str, seed: int | None, parameters: Any, host_seconds: float,
                   scenario: Any = None, platforms: dict[str, Any] | None = None,
                   rates: dict[str, float] | None = None, extra: dict[str, Any] | None = None,
                   command_line: list[str] | None = None) -> dict[str, Any]:
    """The manifest document, without its file list (the writer adds ``files`` once they are written).
    ``rates`` holds throughput figures such as ``sim_instructions_per_s``; ``platforms`` every resolved
    platform description by name."""
    versions = package_versions()
    doc = {
        "whatif_results": RESULTS_FORMAT,
        "study": study,
        "scenario": scenario,
        "seed": seed,
        "command_line": list(sys.argv if command_line is None else command_line),
        "parameters": parameters,
        "platforms": platforms or {},
        "whatif_version": versions.get("whatif", "unknown"),
        "git_commit": git_commit(),
        "versions": versions,
        "host": {"machine": _host_platform.machine(), "system": _host_platform.system(),
                 "processor": _host_platform.processor(), "node": _host_platform.node()},
        "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "host_seconds": round(float(host_seconds), 3),
        "rates": rates or {},
    }
    if extra:
        doc.update(extra)
    return doc
