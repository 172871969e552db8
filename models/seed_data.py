"""The seeds' published tables, shipped as versioned TOML data files beside the engine that compares with them
(``models/regression/data/seed000.toml``, ``models/similarity/data/seed002.toml``): one reader for them all."""

from __future__ import annotations

import tomllib
from pathlib import Path


def load_seed_data(path: Path, schema_version: int) -> dict:
    """The document of a shipped seed-data file; a format this whatif does not read is an error naming it."""
    with path.open("rb") as f:
        doc = tomllib.load(f)
    if doc.get("schema_version") != schema_version:
        raise ValueError(f"{path.name}: schema_version {doc.get('schema_version')!r} is not supported "
                         f"(this whatif reads version {schema_version})")
    return doc
