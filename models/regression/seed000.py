"""Seed 000's published measurements (Rao & Murakami): the measurement error of §III-A, Table III's minimum heaps
and Table IV's model diagnostics, read from the shipped data file ``data/seed000.toml`` (values exactly as
printed, with their source).  The regression study shows whatif's figures beside them; it uses none of them.
"""

from __future__ import annotations

from pathlib import Path

from whatif.models.seed_data import load_seed_data

DATA_FILE = Path(__file__).parent / "data" / "seed000.toml"
SCHEMA_VERSION = 1

_DOC = load_seed_data(DATA_FILE, SCHEMA_VERSION)
SOURCE: str = _DOC["source"]
MEASUREMENT_CI95_PCT: float = float(_DOC["measurement_ci95_pct"])
TABLE_III_KB: dict[str, int] = {k: int(v) for k, v in _DOC["table_iii"]["h_min_kb"].items()}
JVM_FLOOR_KB: int = int(_DOC["table_iii"]["jvm_floor_kb"])
# model -> {"r2", "f_test", "cv_error_pct", "cv_error_spread"}
TABLE_IV: dict[str, dict] = {m: dict(v) for m, v in _DOC["table_iv"].items()}
