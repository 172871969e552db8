"""SQLite profile databases with the tables of seed 001 §4.2, and the EFG construction of §4.3.

Schema (column names are case-sensitive; extra tables and columns are ignored)::

    Symbol (symbol_id INTEGER, name TEXT, jit_entry_offset INTEGER)        one row per method
    Disassm(symbol_id INTEGER, offset INTEGER, opcode TEXT, operands TEXT)  one row per instruction
    IA     (symbol_id INTEGER, offset INTEGER, event TEXT, count INTEGER)   samples per instruction and event;
                                                                            event 'TICKS' = sampling ticks
    Listing(symbol_id INTEGER, offset INTEGER, bytecode INTEGER, block INTEGER, inline_level INTEGER)
    CFGNode(symbol_id INTEGER, block INTEGER, frequency REAL)               basic blocks
    CFGEdge(symbol_id INTEGER, kind TEXT, src_block INTEGER, dst_block INTEGER, frequency REAL)
                                                                            kind: in, out, exception-in, exception-out

Construction (§4.3): a vertex per instruction (Disassm row mapped to a block by Listing; instructions
without a Listing row are dropped); instructions of a block are chained in offset order by
edges at the block's frequency; the last instruction of a block is joined to the first instruction of
each CFG successor at the CFG edge's frequency (``out``/``exception-out`` rows; a method with only
``in``/``exception-in`` rows uses those; edges touching a block without instructions, e.g. the empty
entry and exit blocks of a JIT's CFG, are skipped).  Weight = TICKS.  Attributes:

* every other IA event thresholded at zero (present when its count is > 0), or, for events given in
  ``bins``, one attribute per range of thresholds (``EVENT[t0,t1)``, ..., ``EVENT>=tn``);
* derived: ``Prologue`` (offset < ``prologue_bytes``), ``JITtarget`` (offset = the method's
  ``jit_entry_offset``), ``Opcode=<opcode>`` (one-hot enumeration), ``InlineLvl=<n>`` for n > 0.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from whatif.models.errors import ModelInputError, shown
from whatif.models.flowgsp.graph import EFG

SCHEMA: dict[str, tuple[str, ...]] = {
    "Symbol": ("symbol_id", "name", "jit_entry_offset"),
    "Disassm": ("symbol_id", "offset", "opcode", "operands"),
    "IA": ("symbol_id", "offset", "event", "count"),
    "Listing": ("symbol_id", "offset", "bytecode", "block", "inline_level"),
    "CFGNode": ("symbol_id", "block", "frequency"),
    "CFGEdge": ("symbol_id", "kind", "src_block", "dst_block", "frequency"),
}
_SQL_TYPES = {"name": "TEXT", "opcode": "TEXT", "operands": "TEXT", "event": "TEXT", "kind": "TEXT",
              "frequency": "REAL"}
TICKS = "TICKS"
EDGE_KINDS = ("in", "out", "exception-in", "exception-out")
SQLITE_MAGIC = b"SQLite format 3\x00"


def is_sqlite_file(path: str | Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def read_tables(path: str | Path) -> dict[str, pd.DataFrame]:
    """The six profile tables of a SQLite database (only the schema's columns)."""
    path = Path(path)
    if not is_sqlite_file(path):
        raise ModelInputError(f"{path}: not a SQLite database")
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise ModelInputError(f"{path}: cannot open SQLite database: {exc}") from None
    try:
        present = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        missing = [t for t in SCHEMA if t not in present]
        if missing:
            raise ModelInputError(f"{path}: SQLite profile lacks table(s) {', '.join(missing)} "
                                  f"(expected {', '.join(SCHEMA)})")
        tables = {}
        for table, columns in SCHEMA.items():
            have = [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]
            lacking = [c for c in columns if c not in have]
            if lacking:
                raise ModelInputError(f"{path}: table {table} lacks column(s) {', '.join(lacking)} "
                                      f"(expected {', '.join(columns)})")
            cols = ", ".join(f'"{c}"' for c in columns)
            tables[table] = pd.read_sql_query(f'SELECT {cols} FROM "{table}"', con)
    except (sqlite3.Error, pd.errors.DatabaseError) as exc:      # pandas wraps its query's sqlite3 error
        cause = exc.__cause__ if isinstance(exc.__cause__, sqlite3.Error) else exc
        raise ModelInputError(f"{path}: cannot read SQLite profile: {cause}") from None
    except UnicodeDecodeError as exc:                            # a damaged schema: a name that is not UTF-8
        raise ModelInputError(f"{path}: cannot read SQLite profile: its schema holds text that is not UTF-8 "
                              f"({exc.reason})") from None
    finally:
        con.close()
    return tables


def write_tables(tables: Mapping[str, pd.DataFrame], path: str | Path) -> None:
    """Write the six profile tables to a new SQLite database (for tests and synthetic profiles)."""
    path = Path(path)
    if path.exists():
        path.unlink()
    con = sqlite3.connect(path)
    try:
        for table, columns in SCHEMA.items():
            decl = ", ".join(f"{c} {_SQL_TYPES.get(c, 'INTEGER')}" for c in columns)
            con.execute(f"CREATE TABLE {table} ({decl})")
            df = tables[table][list(columns)]
            rows = [tuple(None if pd.isna(x) else (x.item() if hasattr(x, "item") else x) for x in row)
                    for row in df.itertuples(index=False, name=None)]
            con.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(columns))})", rows)
        con.commit()
    finally:
        con.close()


def read_sqlite(path: str | Path, prologue_bytes: int = 16,
                bins: Mapping[str, Sequence[float]] | None = None) -> EFG:
    """Read a SQLite profile database and build its EFG."""
    return efg_from_tables(read_tables(path), source=str(path), prologue_bytes=prologue_bytes, bins=bins)


def _numeric(df: pd.DataFrame, table: str, column: str, source: str, integer: bool = True) -> np.ndarray:
    values = pd.to_numeric(df[column], errors="coerce")
    bad = values.isna() | ~np.isfinite(values.to_numpy(dtype=float, na_value=np.nan))
    if integer:
        bad |= values.fillna(0) != np.floor(values.fillna(0))
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        kind = "an integer" if integer else "a number"
        raise ModelInputError(f"{source}: table {table} row {row + 1} column {column}: "
                              f"must be {kind}, got {shown(df[column].iloc[row])}")
    return values.to_numpy(dtype=np.int64 if integer else float)


def _text(df: pd.DataFrame, table: str, column: str, source: str) -> np.ndarray:
    """A text column as strings: a NULL or a BLOB (bytes, which need not be UTF-8) is an error naming its row;
    numbers are taken as their text."""
    values = df[column].to_numpy(dtype=object)
    if pd.api.types.infer_dtype(values, skipna=False) == "string":     # (every cell a str: one C loop)
        return values
    bad = np.fromiter((v is None or isinstance(v, (bytes, bytearray, memoryview)) or (isinstance(v, float) and v != v)
                       for v in values), dtype=bool, count=len(values))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        what = "NULL" if not isinstance(values[row], (bytes, bytearray, memoryview)) else "a BLOB"
        raise ModelInputError(f"{source}: table {table} row {row + 1} column {column}: must be text, got {what}")
    return np.array([str(v) for v in values], dtype=object)


def efg_from_tables(tables: Mapping[str, pd.DataFrame], source: str = "<tables>", prologue_bytes: int = 16,
                    bins: Mapping[str, Sequence[float]] | None = None) -> EFG:
    """The EFG of §4.3 from the six profile tables (see the module docstring)."""
    bins = {k: sorted(float(t) for t in v) for k, v in (bins or {}).items()}
    sym = tables["Symbol"]
    dis = tables["Disassm"]
    ia = tables["IA"]
    lst = tables["Listing"]
    node = tables["CFGNode"]
    edge = tables["CFGEdge"]
    sym_id = _numeric(sym, "Symbol", "symbol_id", source)
    if len(np.unique(sym_id)) != len(sym_id):
        raise ModelInputError(f"{source}: table Symbol has duplicate symbol_id values")
    jit = pd.to_numeric(sym["jit_entry_offset"], errors="coerce").to_numpy(dtype=float)
    names = dict(zip(sym_id.tolist(), _text(sym, "Symbol", "name", source).tolist()))
    jit_of = dict(zip(sym_id.tolist(), jit.tolist()))

    # instructions with their blocks
    ins = pd.DataFrame({"symbol_id": _numeric(dis, "Disassm", "symbol_id", source),
                        "offset": _numeric(dis, "Disassm", "offset", source),
                        "opcode": _text(dis, "Disassm", "opcode", source)})
    if ins.duplicated(["symbol_id", "offset"]).any():
        row = int(np.flatnonzero(ins.duplicated(["symbol_id", "offset"]).to_numpy())[0])
        raise ModelInputError(f"{source}: table Disassm row {row + 1}: duplicate instruction "
                              f"(symbol {ins.symbol_id.iloc[row]}, offset {ins.offset.iloc[row]})")
    unknown = ~ins.symbol_id.isin(names)
    if unknown.any():
        row = int(np.flatnonzero(unknown.to_numpy())[0])
        raise ModelInputError(f"{source}: table Disassm row {row + 1}: unknown symbol_id {ins.symbol_id.iloc[row]}")
    lmap = pd.DataFrame({"symbol_id": _numeric(lst, "Listing", "symbol_id", source),
                         "offset": _numeric(lst, "Listing", "offset", source),
                         "block": _numeric(lst, "Listing", "block", source),
                         "inline_level": pd.to_numeric(lst["inline_level"], errors="coerce").fillna(0)
                         .to_numpy(dtype=np.int64)}).drop_duplicates(["symbol_id", "offset"])
    ins = ins.merge(lmap, on=["symbol_id", "offset"], how="inner")
    ins = ins.sort_values(["symbol_id", "block", "offset"], kind="stable").reset_index(drop=True)
    n = len(ins)
    ins["v"] = np.arange(n, dtype=np.int64)

    # samples
    iav = pd.DataFrame({"symbol_id": _numeric(ia, "IA", "symbol_id", source),
                        "offset": _numeric(ia, "IA", "offset", source),
                        "event": _text(ia, "IA", "event", source),
                        "count": _numeric(ia, "IA", "count", source, integer=False)})
    if (iav["count"] < 0).any():
        row = int(np.flatnonzero((iav["count"] < 0).to_numpy())[0])
        raise ModelInputError(f"{source}: table IA row {row + 1} column count: must be non-negative, "
                              f"got {shown(iav['count'].iloc[row])}")
    iav = iav.merge(ins[["symbol_id", "offset", "v"]], on=["symbol_id", "offset"], how="inner")
    iav = iav.groupby(["v", "event"], as_index=False, sort=True)["count"].sum()
    ticks = iav[iav.event == TICKS]
    weight = np.zeros(n)
    weight[ticks.v.to_numpy()] = ticks["count"].to_numpy()

    # attributes (vertex, name) pairs
    pairs: list[pd.DataFrame] = []
    counters = iav[(iav.event != TICKS) & (iav["count"] > 0)]
    plain = counters[~counters.event.isin(bins)]
    pairs.append(pd.DataFrame({"v": plain.v.to_numpy(), "a": plain.event.to_numpy()}))
    for event, thresholds in bins.items():
        rows = iav[iav.event == event]
        if not len(rows) or not thresholds:
            continue
        pos = np.searchsorted(thresholds, rows["count"].to_numpy(), side="right") - 1
        labels = [f"{event}[{_fmt(a)},{_fmt(b)})" for a, b in zip(thresholds[:-1], thresholds[1:])]
        labels.append(f"{event}>={_fmt(thresholds[-1])}")
        keep = pos >= 0
        pairs.append(pd.DataFrame({"v": rows.v.to_numpy()[keep],
                                   "a": np.asarray(labels, dtype=object)[pos[keep]]}))
    pro = ins.offset.to_numpy() < prologue_bytes
    pairs.append(pd.DataFrame({"v": ins.v.to_numpy()[pro], "a": "Prologue"}))
    jt = ins.offset.to_numpy() == ins.symbol_id.map(jit_of).to_numpy(dtype=float)
    pairs.append(pd.DataFrame({"v": ins.v.to_numpy()[jt], "a": "JITtarget"}))
    pairs.append(pd.DataFrame({"v": ins.v.to_numpy(), "a": "Opcode=" + ins.opcode.astype(str)}))
    inl = ins.inline_level.to_numpy() > 0
    pairs.append(pd.DataFrame({"v": ins.v.to_numpy()[inl],
                               "a": "InlineLvl=" + ins.inline_level[inl].astype(str).to_numpy().astype(object)}))
    av = pd.concat(pairs, ignore_index=True).drop_duplicates()
    attribute_names = sorted(av.a.unique().tolist())
    code = {a: i for i, a in enumerate(attribute_names)}
    av = av.assign(c=av.a.map(code).astype(np.int64)).sort_values(["v", "c"], kind="stable")
    attr_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(av.v.to_numpy(dtype=np.int64), minlength=n), out=attr_ptr[1:])

    # edges: intra-block chains at block frequency
    nodes = pd.DataFrame({"symbol_id": _numeric(node, "CFGNode", "symbol_id", source),
                          "block": _numeric(node, "CFGNode", "block", source),
                          "frequency": _numeric(node, "CFGNode", "frequency", source, integer=False)})
    nodes = nodes.drop_duplicates(["symbol_id", "block"])
    same = (ins.symbol_id.to_numpy()[1:] == ins.symbol_id.to_numpy()[:-1]) & \
           (ins.block.to_numpy()[1:] == ins.block.to_numpy()[:-1])
    intra = pd.DataFrame({"src": ins.v.to_numpy()[:-1][same], "dst": ins.v.to_numpy()[1:][same],
                          "symbol_id": ins.symbol_id.to_numpy()[:-1][same], "block": ins.block.to_numpy()[:-1][same]})
    intra = intra.merge(nodes, on=["symbol_id", "block"], how="left")
    if intra.frequency.isna().any():
        r = intra[intra.frequency.isna()].iloc[0]
        raise ModelInputError(f"{source}: table CFGNode has no row for block {int(r.block)} of symbol "
                              f"{int(r.symbol_id)}")
    # inter-block edges from the CFG
    cfg = pd.DataFrame({"symbol_id": _numeric(edge, "CFGEdge", "symbol_id", source),
                        "kind": pd.Series(_text(edge, "CFGEdge", "kind", source), dtype=object).str.lower().to_numpy(),
                        "src_block": _numeric(edge, "CFGEdge", "src_block", source),
                        "dst_block": _numeric(edge, "CFGEdge", "dst_block", source),
                        "frequency": _numeric(edge, "CFGEdge", "frequency", source, integer=False)})
    bad_kind = ~cfg.kind.isin(EDGE_KINDS)
    if bad_kind.any():
        row = int(np.flatnonzero(bad_kind.to_numpy())[0])
        raise ModelInputError(f"{source}: table CFGEdge row {row + 1} column kind: must be one of "
                              f"{', '.join(EDGE_KINDS)}, got {shown(edge['kind'].iloc[row])}")
    is_out = cfg.kind.str.endswith("out")
    has_out = cfg[is_out].symbol_id.unique()
    cfg = cfg[is_out | ~cfg.symbol_id.isin(has_out)]
    cfg = cfg.drop_duplicates(["symbol_id", "src_block", "dst_block", "kind"])
    firsts = ins.groupby(["symbol_id", "block"], as_index=False).v.first().rename(columns={"v": "dst"})
    lasts = ins.groupby(["symbol_id", "block"], as_index=False).v.last().rename(columns={"v": "src"})
    inter = cfg.merge(lasts, left_on=["symbol_id", "src_block"], right_on=["symbol_id", "block"], how="inner")
    inter = inter.drop(columns="block").merge(firsts, left_on=["symbol_id", "dst_block"],
                                              right_on=["symbol_id", "block"], how="inner")
    src = np.concatenate([intra.src.to_numpy(), inter.src.to_numpy()]).astype(np.int64)
    dst = np.concatenate([intra.dst.to_numpy(), inter.dst.to_numpy()]).astype(np.int64)
    freq = np.concatenate([intra.frequency.to_numpy(), inter.frequency.to_numpy()]).astype(float)
    if np.any(freq < 0):
        raise ModelInputError(f"{source}: a CFGNode or CFGEdge frequency is negative")

    sym_of_v = ins.symbol_id.to_numpy()
    starts = np.flatnonzero(np.r_[True, sym_of_v[1:] != sym_of_v[:-1]]) if n else np.zeros(0, dtype=np.int64)
    method_ptr = np.r_[starts, n].astype(np.int64)
    method_names = [names[int(sym_of_v[s])] for s in starts]
    return EFG.from_arrays(attribute_names=attribute_names, method_names=method_names, method_ptr=method_ptr,
                           vertex_ids=ins.offset.to_numpy(), weight=weight, attr_ptr=attr_ptr,
                           attr_ids=av.c.to_numpy(dtype=np.int32), edge_src=src, edge_dst=dst, edge_freq=freq,
                           source=source)


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))
