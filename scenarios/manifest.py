"""manifest.json: what was run, with which parameters and seed, by which versions, how fast."""

from __future__ import annotations

import platform as _host_platform
from datetime import datetime, timezone
from importlib import metadata
from typing import Any

PACKAGES = ("whatif", "numpy", "numba", "scipy", "pandas", "pyarrow", "simpy", "statsmodels",
            "matplotlib", "typer", "rich", "pydantic", "dask", "distributed")


def package_versions() -> dict[str, str]:
    versions = {"python": _host_platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def build_manifest(*, scenario: Any, study: str, seed: int | None, parameters: Any,
                   host_seconds: float, rates: dict[str, float] | None = None,
                   extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The manifest document.  ``rates`` holds throughput figures such as
    ``simulated_accesses_per_s`` or ``sim_instructions_per_s``."""
    versions = package_versions()
    doc = {
        "scenario": scenario,
        "study": study,
        "seed": seed,
        "parameters": parameters,
        "versions": versions,
        "whatif_version": versions.get("whatif", "unknown"),
        "host": {"machine": _host_platform.machine(), "system": _host_platform.system(),
                 "processor": _host_platform.processor()},
        "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "host_seconds": round(float(host_seconds), 3),
        "rates": rates or {},
    }
    if extra:
        doc.update(extra)
    return doc
