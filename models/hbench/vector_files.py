"""Reading HBench vectors from files: CSV (one table per file) or TOML (systems, applications, cost
functions and size distributions together).

CSV: a ``primitive`` column, an optional ``unit`` column, then one column per system (costs) or per
application (counts); an empty cell means "not measured there".  TOML::

    schema_version = 1
    source = "seed 003, Table 6-2"
    [units]                      # optional: primitive -> unit of its cost
    tcp_transfer = "us/byte"
    [systems."Sun-400"]          # primitive -> cost
    tcp_transfer = 1.66e-2
    [applications.static]        # primitive -> count (calls, bytes)
    tcp_transfer = 14712
    [functions."Sun-400".file_read]       # optional: a size-dependent cost C(s)
    sizes = [1024, 8192, 65536]
    costs = [12.0, 60.0, 420.0]
    [distributions.static.file_read]      # optional: the application's size distribution N(s)
    sizes = [1024, 8192]
    counts = [3, 1]

Every problem is one :class:`ModelInputError` naming the file and the entry.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from whatif.files import file_problem
from whatif.models.errors import ModelInputError
from whatif.models.tables import read_csv

VECTOR_FILE_VERSION = 1
DATA_DIR = Path(__file__).parent / "data"


@dataclass(frozen=True)
class VectorTables:
    """The long tables a file holds (each may be empty)."""
    systems: pd.DataFrame            # system, primitive, cost
    applications: pd.DataFrame       # application, primitive, count
    functions: pd.DataFrame          # system, primitive, size, cost
    distributions: pd.DataFrame      # application, primitive, size, count
    units: dict[str, str]
    source: str


# cells that leave a system's cost (an application's count) unmeasured: pandas' own "missing" spellings
_MISSING = {"", "NA", "N/A", "n/a", "NaN", "nan", "-NaN", "-nan", "null", "NULL", "None", "#N/A"}


def _wide_csv(path: Path, key: str, value: str) -> tuple[pd.DataFrame, dict[str, str]]:
    try:
        # every cell as its text: a primitive named "null" (lmbench's null call) stays a name
        df = read_csv(path, dtype=str, keep_default_na=False)
    except ModelInputError:
        raise
    except (OSError, ValueError) as exc:
        raise ModelInputError(f"{path}: cannot read CSV: {exc}") from None
    if "primitive" not in df.columns:
        raise ModelInputError(f"{path}: needs a 'primitive' column (then one column per {key})")
    empty = df.primitive.str.strip() == ""
    if empty.any():
        raise ModelInputError(f"{path}: line {int(empty.to_numpy().nonzero()[0][0]) + 2}: the primitive has no name")
    units = dict(zip(df.primitive.astype(str), df["unit"].astype(str))) if "unit" in df.columns else {}
    names = [c for c in df.columns if c not in ("primitive", "unit")]
    if not names:
        raise ModelInputError(f"{path}: no {key} columns besides 'primitive'")
    for c in names:
        df[c] = df[c].mask(df[c].str.strip().isin(_MISSING))
    long = df.melt(id_vars=["primitive"], value_vars=names, var_name=key, value_name=value).dropna(subset=[value])
    return long[[key, "primitive", value]].reset_index(drop=True), units


def _brief(v: object) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _sized(doc: dict, table: str, owner: str, value: str, path: Path) -> pd.DataFrame:
    rows = []
    for name, prims in (doc.get(table) or {}).items():
        if not isinstance(prims, dict):
            raise ModelInputError(f"{path}: {table}.{name}: expected a table of primitives, got {_brief(prims)}")
        for prim, spec in prims.items():
            if not isinstance(spec, dict):
                raise ModelInputError(f"{path}: {table}.{name}.{prim}: expected a table with 'sizes' and "
                                      f"'{value}s' lists, got {_brief(spec)}")
            sizes, values = spec.get("sizes"), spec.get(f"{value}s")
            if not isinstance(sizes, list) or not isinstance(values, list) or len(sizes) != len(values) or not sizes:
                raise ModelInputError(f"{path}: {table}.{name}.{prim}: needs 'sizes' and '{value}s' lists of one "
                                      f"length")
            rows += [{owner: name, "primitive": prim, "size": s, value: v} for s, v in zip(sizes, values)]
    return pd.DataFrame(rows, columns=[owner, "primitive", "size", value])


def read_vector_file(path: str | Path) -> VectorTables:
    """The vectors of a CSV or TOML file.  A CSV is read as a system vector when its name does not say
    otherwise; ``read_app_csv`` reads an application CSV."""
    path = Path(path)
    if (problem := file_problem(path)) is not None:
        raise ModelInputError(f"{path}: {problem}")
    if path.suffix.lower() == ".csv":
        systems, units = _wide_csv(path, "system", "cost")
        return VectorTables(systems, pd.DataFrame(columns=["application", "primitive", "count"]),
                            pd.DataFrame(columns=["system", "primitive", "size", "cost"]),
                            pd.DataFrame(columns=["application", "primitive", "size", "count"]), units, str(path))
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ModelInputError(f"{path}: invalid TOML: {exc}") from None
    version = doc.get("schema_version")
    if version != VECTOR_FILE_VERSION:
        raise ModelInputError(f"{path}: schema_version {version!r} is not supported (this whatif reads "
                              f"version {VECTOR_FILE_VERSION})")
    unknown = sorted(set(doc) - {"schema_version", "source", "units", "systems", "applications", "functions",
                                 "distributions"})
    if unknown:
        raise ModelInputError(f"{path}: {unknown[0]}: unknown table (known: systems, applications, functions, "
                              f"distributions, units, source)")
    for table in ("units", "systems", "applications", "functions", "distributions"):
        if not isinstance(doc.get(table, {}), dict):
            raise ModelInputError(f"{path}: {table}: expected a table ([{table}] or [{table}.NAME]), got "
                                  f"{_brief(doc[table])}")

    def flat(table: str, owner: str, value: str) -> pd.DataFrame:
        rows = []
        for name, prims in (doc.get(table) or {}).items():
            if not isinstance(prims, dict):
                raise ModelInputError(f"{path}: {table}.{name}: expected a table of primitive = {value}")
            rows += [{owner: name, "primitive": p, value: v} for p, v in prims.items()]
        return pd.DataFrame(rows, columns=[owner, "primitive", value])

    return VectorTables(flat("systems", "system", "cost"), flat("applications", "application", "count"),
                        _sized(doc, "functions", "system", "cost", path),
                        _sized(doc, "distributions", "application", "count", path),
                        {str(k): str(v) for k, v in (doc.get("units") or {}).items()},
                        str(doc.get("source", path)))


def read_app_csv(path: str | Path) -> pd.DataFrame:
    """An application-vector CSV: ``primitive`` then one column of counts per application."""
    path = Path(path)
    if (problem := file_problem(path)) is not None:
        raise ModelInputError(f"{path}: {problem}")
    return _wide_csv(path, "application", "count")[0]


def read_vectors(system_path: str | Path, app_path: str | Path) -> VectorTables:
    """System vectors from one file and application vectors from another (or the same TOML)."""
    sys_t = read_vector_file(system_path)
    if Path(app_path).suffix.lower() == ".csv":
        apps = read_app_csv(app_path)
        dist = pd.DataFrame(columns=["application", "primitive", "size", "count"])
    else:
        app_t = read_vector_file(app_path)
        apps, dist = app_t.applications, app_t.distributions
    if not len(apps) and not len(dist):
        raise ModelInputError(f"{app_path}: holds no application vector")
    if not len(sys_t.systems) and not len(sys_t.functions):
        raise ModelInputError(f"{system_path}: holds no system vector")
    return VectorTables(sys_t.systems, apps, sys_t.functions, dist, sys_t.units, sys_t.source)


def seed_vectors(name: str) -> Path:
    """A shipped data file of seed 003's vectors (``os`` for Tables 6-2..6-5, ``java`` for Tables 4-3/4-4)."""
    return DATA_DIR / f"seed003_{name}.toml"
