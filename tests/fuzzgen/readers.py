"""The readers of user input, each with a generator of inputs for it (valid seeds, mutated), how whatif
parses an input, and the one user error of its layer."""

from __future__ import annotations

import gzip
import io
import itertools
import json
import math
import shutil
import sqlite3
import warnings
import zlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from random import Random
from typing import Any, Callable

import numpy as np
import pandas as pd

import hbench_helpers
from badinput import fixtures
from fuzzgen.mutations import (SPECIAL_NUMBERS, frame_csv, how_many, is_number, mutated, text_mutations,
                               tweak_number)
from test_flowgsp_profile_db import hand_tables
from whatif.models.errors import ModelInputError
from whatif.models.flowgsp.formats import read_profile
from whatif.models.flowgsp.profile_db import SCHEMA as PROFILE_SCHEMA
from whatif.models.hbench.profile import AppProfile
from whatif.models.hbench.vector_files import DATA_DIR as VECTOR_DIR
from whatif.models.hbench.vector_files import read_vectors
from whatif.models.hbench.vectors import VectorModel
from whatif.models.regression import RegressionStudy, read_counter_totals
from whatif.models.similarity import SimilarityEngine, read_table, run_times_from_table
from whatif.scenarios.errors import ScenarioError
from whatif.scenarios.runner import load_study
from whatif.simulator import trace_wtr
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.gc import behaviour
from whatif.simulator.platform import PLATFORM_DIR, load_platform, platform_names
from whatif.simulator.schema import flatten
from whatif.simulator.trace_lackey import LackeyReader
from whatif.simulator.traces import Trace, TraceFile, lackey_bytes, mixed_streams, read_trace, synthetic_trace
from whatif.simulator.workload import WORKLOAD_DIR, load_catalog, phase_lengths

Case = dict[str, bytes]
SCENARIO_DIR = fixtures.SCENARIO_DIR
TESTS_DIR = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Reader:
    """A reader of user input: how to make inputs for it, how whatif parses one, and its user error."""
    name: str
    error: type[Exception]
    generate: Callable[[Random], Case]
    parse: Callable[[dict[str, Path]], Any]      # the case's files, written -> whatever the reader returns
    seeds: Callable[[], list[Case]]              # the valid inputs the generator starts from


_cases = itertools.count()


def write_case(workdir: Path, case: Case) -> dict[str, Path]:
    """The case's files in a new directory under ``workdir`` (one per case: the workload catalog cache is
    keyed by path and modification time, which two quick writes of one path can share)."""
    where = workdir / f"case{next(_cases)}"
    where.mkdir(parents=True)
    paths = {}
    for name, data in case.items():
        paths[name] = where / name
        paths[name].write_bytes(data)
    return paths


def outcome(reader: Reader, case: Case, workdir: Path) -> str:
    """``"parsed"`` or ``"user error"``; any other exception propagates (a crash)."""
    paths = write_case(workdir, case)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reader.parse(paths)
    except reader.error:
        return "user error"
    finally:
        shutil.rmtree(next(iter(paths.values())).parent, ignore_errors=True)
    return "parsed"


def describe(case: Case, limit: int = 300) -> str:
    """The case in a few lines, for a failure message."""
    out = []
    for name, data in case.items():
        shown = data[:limit]
        more = f" ... ({len(data):,} bytes)" if len(data) > limit else ""
        out.append(f"{name}: {shown!r}{more}")
    return "\n".join(out)


# ============================================================================================ traces
def _records(rng: Random, n_max: int = 120) -> Trace:
    """A short trace: instruction fetches walking forward, loads and stores near each other or far."""
    g = np.random.default_rng(rng.getrandbits(32))
    n = int(g.integers(1, n_max))
    kinds = g.integers(0, 4, n).astype(np.uint8)
    near = np.uint64(0x7FF000000) + g.integers(0, 4096, n).astype(np.uint64)
    far = g.integers(0, 2 ** 63, n, dtype=np.int64).astype(np.uint64) * np.uint64(2)
    addrs = np.where(g.random(n) < 0.8, near, far)
    addrs[kinds == 0] = np.uint64(0x400000) + 4 * np.arange(int((kinds == 0).sum()), dtype=np.uint64)
    sizes = g.choice(np.array([1, 2, 4, 8, 16, 64, 3, 100, 65535], np.uint16), n)
    return Trace(addrs, sizes, kinds)


@cache
def _lackey_seeds() -> list[bytes]:
    whatif = lackey_bytes(synthetic_trace(mixed_streams(), 60, seed=1, instructions_per_access=0.5))
    valgrind = (b"==4242== Lackey, an example Valgrind tool\r\n==4242== Command: true\r\n\r\n"
                + whatif.split(b"\n", 1)[1].replace(b"\n", b"\r\n") + b"==4242== \r\n")
    odd = b"I 0,1\n\tL\t\tABCdef,16 \t\n M 0000000000000001,0000000000000000000004\nI  ffffffffffffffff,65535\n\n" * 3
    return [whatif, valgrind, odd]


def gen_lackey(rng: Random) -> Case:
    if rng.random() < 0.3:                         # a trace of its own
        data = lackey_bytes(_records(rng))
    else:
        data = rng.choice(_lackey_seeds())
    return {"t.lackey": mutated(rng, data, "lackey")}


def _wtr_blocks(rng: Random, blocks: list[bytes]) -> list[bytes]:
    """One change to the blocks of a v2 file, each still with a right CRC (so the decoder reads it)."""
    i = rng.randrange(len(blocks))
    count, length, _ = trace_wtr.BLOCK.unpack_from(blocks[i])
    payload = blocks[i][trace_wtr.BLOCK.size:]
    op = rng.randrange(6)
    if op == 0:                                    # the payload changed, the CRC right
        payload = text_mutations(rng, payload, "binary", 1)
        length = len(payload)
    elif op == 1:
        count = rng.choice([0, 1, count - 1, count + 1, 2 ** 31, 2 ** 32 - 1])
    elif op == 2:
        length = rng.choice([0, length - 1, length + 1, 2 ** 32 - 1])
    elif op == 3:
        del blocks[i]
        return blocks or [b""]
    elif op == 4:
        blocks.insert(rng.randrange(len(blocks) + 1), blocks[i])
        return blocks
    else:                                          # a tag byte with every bit pattern
        if payload:
            b = bytearray(payload)
            b[rng.randrange(len(b))] = rng.randrange(256)
            payload = bytes(b)
    blocks[i] = trace_wtr.BLOCK.pack(count % 2 ** 32, length % 2 ** 32, zlib.crc32(payload)) + payload
    return blocks


def gen_wtr(rng: Random) -> Case:
    tr = _records(rng, 200)
    if rng.random() < 0.2:                         # version 1
        data = trace_wtr.wtr_v1_bytes(tr.addrs, tr.sizes, tr.kinds)
    else:
        per_block = rng.choice([1, 2, 8, 64, 1 << 16])
        blocks = trace_wtr.encode(tr.addrs, tr.sizes, tr.kinds, per_block)
        records = len(tr)
        if rng.random() < 0.5:
            blocks = _wtr_blocks(rng, blocks)
        head = list(trace_wtr.HEADER.unpack(trace_wtr.header(records, per_block)))
        if rng.random() < 0.3:                     # a header field: version, per block, records, reserved
            field = rng.randrange(1, 5)
            head[field] = rng.choice([0, 1, 2, 3, head[field] + 1, head[field] - 1, 2 ** 22, 2 ** 23,
                                      2 ** 32 - 1]) % 2 ** 32
        data = trace_wtr.HEADER.pack(*head) + b"".join(blocks)
    if rng.random() < 0.5:
        data = data[:12] + text_mutations(rng, data[12:], "binary", how_many(rng))
    return {"t.wtr": data}


def parse_trace(paths: dict[str, Path]) -> Trace:
    """A whole trace, then again chunk by chunk through the reader thread with small chunks."""
    (path,) = paths.values()
    trace = read_trace(path)
    with TraceFile(path) as tf:
        if tf.format == "lackey":
            size = 1 + len(trace) % 7
        else:
            with trace_wtr.WtrReader(path) as r:
                size = r.block_records or 5
        for _ in tf.chunks(size=size):
            pass
    if path.suffix == ".lackey":                   # and the scanner with arrays of one record
        with LackeyReader(path) as reader:
            arrays = (np.empty(1, np.uint64), np.empty(1, np.uint16), np.empty(1, np.uint8))
            while reader.fill(*arrays):
                pass
    return trace


# ============================================================================================ TOML files
@cache
def _files(*paths: Path) -> list[bytes]:
    return [p.read_bytes() for p in paths]


def _platform_files() -> list[bytes]:
    return _files(*sorted(PLATFORM_DIR.glob("*.toml")))


def gen_platform(rng: Random) -> Case:
    return {"p.toml": mutated(rng, rng.choice(_platform_files()), "toml")}


def parse_platform(paths: dict[str, Path]) -> Any:
    platform = load_platform(paths["p.toml"])
    for side in ("instruction", "data"):           # what the simulator derives from it first
        platform.cache_chain(side)
        platform.tlb_chain(side)
        platform.walk_levels(side)
    return platform


def _workload_files() -> list[tuple[str, bytes]]:
    catalogs = [("w.toml", data) for data in _files(*sorted(WORKLOAD_DIR.glob("*.toml")))]
    return catalogs + [("alloc.toml", data) for data in _files(*sorted((WORKLOAD_DIR / "alloc").glob("*.toml")))]


def gen_workload(rng: Random) -> Case:
    name, data = rng.choice(_workload_files())
    return {name: mutated(rng, data, "toml")}


def parse_workload(paths: dict[str, Path]) -> Any:
    if "alloc.toml" in paths:                      # the allocation behaviours of the heap simulator
        return behaviour.load_catalog("", paths["alloc.toml"])
    catalog = load_catalog(paths["w.toml"])
    for workload in catalog.workloads.values():
        phase_lengths(workload)
    return catalog


def _scenario_files() -> list[bytes]:
    shipped = _files(*sorted(SCENARIO_DIR.glob("*.toml")))
    return shipped + [fixtures.CACHESIM.encode(), fixtures.SIMULATE.encode()]


def gen_scenario(rng: Random) -> Case:
    return {"s.toml": mutated(rng, rng.choice(_scenario_files()), "toml")}


def parse_scenario(paths: dict[str, Path]) -> Any:
    return load_study(paths["s.toml"])


# --set KEY=VALUE on a shipped platform
@cache
def _platform_values(name: str) -> list[tuple[str, Any]]:
    return list(flatten(load_platform(name).model_dump()).items())


SET_VALUES = [s.decode() for s in SPECIAL_NUMBERS] + [
    "[]", "[4, 8]", "[1e23]", "[4, 4]", "[[1]]", "{a = 1}", "true", "false", "'x'", '"lru"', '"plru"', '"x"',
    '"unterminated', "1979-05-27", "lru", "random", "gshare", "radix", "hashed", "memory", "L2", "walk", "in_order",
    "[nan]", "[-1]", "[0]", '["none"]', '["stride"]']


def _set_key(rng: Random, key: str) -> str:
    parts = key.split(".")
    return rng.choice([key, key, ".".join(parts[1:]) if len(parts) > 2 else key, f"platform.{key}", key.upper(),
                       key[:-1], ".".join(parts[:-1]) or key, "nosuch.key", "", f" {key} ", key + "."])


def _set_value(rng: Random, value: Any) -> str:
    if rng.random() < 0.15:                        # the value as it is (the key may be what is wrong)
        return json.dumps(value)
    if is_number(value) and rng.random() < 0.5:
        return repr(rng.choice([value * 2, value // 2, tweak_number(rng, value)]))
    if isinstance(value, list) and value and rng.random() < 0.3:
        return json.dumps(value[:1] * rng.randint(0, 3))
    return rng.choice(SET_VALUES)


def gen_set(rng: Random) -> Case:
    name = rng.choice(platform_names())
    items = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        key, value = rng.choice(_platform_values(name))
        key, text = _set_key(rng, key), _set_value(rng, value)
        items.append(rng.choice([f"{key}={text}", f"{key}={text}", f"{key} = {text}", key, f"={text}",
                                 f"{key}=={text}", f"{key}={text}={text}"]))
    return {"set.txt": "\n".join([name, *items]).encode()}


def parse_set(paths: dict[str, Path]) -> Any:
    name, *items = paths["set.txt"].read_text(encoding="utf-8").split("\n")
    return load_platform(name, items)


# ============================================================================================ graphs
def _random_efg(rng: Random) -> dict:
    g = Random(rng.getrandbits(32))
    methods = []
    for m in range(g.randint(1, 4)):
        ids = g.sample(range(0, 200, 2), g.randint(1, 6))
        verts = [{"id": i, "weight": g.choice([0, 1, 5, 12.5]),
                  "attributes": g.sample(["Opcode=L", "Opcode=ST", "Icachemiss", "DTLBmiss", "Prologue"],
                                         g.randint(0, 3))} for i in ids]
        edges = [[g.choice(ids), g.choice(ids), g.choice([0, 1.0, 250.0])] for _ in range(g.randint(0, 8))]
        methods.append({"name": f"C{m}.m()V", "vertices": verts, "edges": edges})
    return {"methods": methods}


def gen_efg(rng: Random) -> Case:
    doc = fixtures.EFG if rng.random() < 0.5 else _random_efg(rng)
    return {"e.json": mutated(rng, json.dumps(doc).encode(), "json", structural=0.7)}


def parse_profile(paths: dict[str, Path]) -> Any:
    (path,) = paths.values()
    return read_profile(path)


SQL_SPECIALS = [None, "", "x", "1e23", 1e23, -1, 0, 2 ** 63 - 1, -(2 ** 63), 2 ** 64, 10 ** 30, 1.5, math.inf,
                -math.inf, "inf", "nan", b"\x00\xff", -0.0, "TICKS", "out", "in", "exception-out", "OUT", 1e308, "1"]


def _sql(value: Any) -> Any:
    if isinstance(value, (np.generic,)):
        value = value.item()
    if isinstance(value, int) and not -(2 ** 63) <= value < 2 ** 63:
        return str(value)                          # SQLite integers are 64-bit: a bigger one is text
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def mutate_tables(rng: Random, tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """One change to a profile's tables (object columns: any value fits)."""
    name = rng.choice(list(tables))
    df = tables[name]
    op = rng.randrange(9)
    if op <= 1 and len(df) and len(df.columns):    # a cell
        r, c = rng.randrange(len(df)), rng.randrange(len(df.columns))
        old = df.iat[r, c]
        df.iat[r, c] = (rng.choice(SQL_SPECIALS) if op == 0 or not is_number(old)
                        else tweak_number(rng, old.item() if hasattr(old, "item") else old))
    elif op == 2 and len(df):
        tables[name] = df.drop(index=df.index[rng.randrange(len(df))]).reset_index(drop=True)
    elif op == 3 and len(df):
        tables[name] = pd.concat([df, df.iloc[[rng.randrange(len(df))]]], ignore_index=True)
    elif op == 4 and len(df.columns):
        tables[name] = df.drop(columns=df.columns[rng.randrange(len(df.columns))])
    elif op == 5 and len(df.columns):
        c = df.columns[rng.randrange(len(df.columns))]
        tables[name] = df.rename(columns={c: rng.choice([c.upper(), c + "x", "x", rng.choice(list(df.columns))])})
    elif op == 6:
        del tables[name]
    elif op == 7:
        tables[name] = df.iloc[0:0]
    elif len(df.columns):                          # a whole column one value
        df[df.columns[rng.randrange(len(df.columns))]] = pd.Series([rng.choice(SQL_SPECIALS)] * len(df), dtype=object)
    if name in tables:
        tables[name] = tables[name].astype(object)
    return tables


def sqlite_bytes(tables: dict[str, pd.DataFrame], types: dict[str, str]) -> bytes:
    con = sqlite3.connect(":memory:")
    try:
        for name, df in tables.items():
            cols = [str(c) for c in df.columns]
            if len(set(cols)) != len(cols) or not cols:
                continue                           # (a renamed column that repeats another: the table is left out)
            decl = ", ".join(f'"{c}" {types.get(c, "INTEGER")}' for c in cols)
            con.execute(f'CREATE TABLE "{name}" ({decl})')
            rows = [tuple(_sql(v) for v in row) for row in df.astype(object).itertuples(index=False, name=None)]
            con.executemany(f'INSERT INTO "{name}" VALUES ({", ".join("?" * len(cols))})', rows)
        con.commit()
        return con.serialize()
    finally:
        con.close()


SQL_TYPES = {"name": "TEXT", "opcode": "TEXT", "operands": "TEXT", "event": "TEXT", "kind": "TEXT", "frequency": "REAL"}


def gen_sqlite(rng: Random) -> Case:
    tables = {name: df.astype(object) for name, df in hand_tables().items()}
    for _ in range(how_many(rng) if rng.random() > 0.03 else 0):
        tables = mutate_tables(rng, tables)
    types = dict(SQL_TYPES)
    if rng.random() < 0.1:                          # a column declared with another type
        types[rng.choice(sorted({c for cols in PROFILE_SCHEMA.values() for c in cols}))] = rng.choice(
            ["TEXT", "REAL", "BLOB", ""])
    data = sqlite_bytes(tables, types)
    if rng.random() < 0.25:                         # the file itself damaged (the header's magic kept)
        data = data[:16] + text_mutations(rng, data[16:], "binary", how_many(rng))
    return {"p.sqlite": data}


# ============================================================================================ tables
def _totals_table(rng: Random) -> bytes:
    g = np.random.default_rng(rng.getrandbits(32))
    n, k = int(g.integers(4, 16)), int(g.integers(1, 5))
    df = pd.DataFrame({"workload": [f"w{i % 3}" for i in range(n)], "replicate": np.arange(n) % 2})
    events = {f"e{j}": g.integers(0, 1000, n) for j in range(k)}
    df["cycles"] = sum((j + 2) * v for j, v in enumerate(events.values())) + g.integers(0, 50, n)
    for name, v in events.items():
        df[name] = v
    return frame_csv(df)


def _table_file(rng: Random, name: str, data: bytes) -> Case:
    """A CSV table, mostly as CSV text; sometimes gzip-compressed or as Parquet."""
    data = mutated(rng, data, "csv")
    choice = rng.random()
    if choice < 0.05:
        return {f"{name}.csv.gz": gzip.compress(data, mtime=0)}
    if choice < 0.10:
        try:
            df = pd.read_csv(io.BytesIO(data))
            out = io.BytesIO()
            df.to_parquet(out)
            return {f"{name}.parquet": out.getvalue()}
        except Exception:                            # (a table pandas or pyarrow will not write: CSV it is)
            pass
    return {f"{name}.csv": data}


def gen_totals(rng: Random) -> Case:
    data = fixtures.TOTALS.encode() if rng.random() < 0.5 else _totals_table(rng)
    return _table_file(rng, "totals", data)


def parse_totals(paths: dict[str, Path]) -> Any:
    (path,) = paths.values()
    return RegressionStudy(folds=3).fit(read_counter_totals(path), response="cycles")


def _series_table(rng: Random) -> bytes:
    g = np.random.default_rng(rng.getrandbits(32))
    apps, plats, n = int(g.integers(2, 6)), int(g.integers(1, 3)), int(g.integers(3, 9))
    stalls = [f"S{j}_stall" for j in range(int(g.integers(2, 5)))]
    rows = []
    for p in range(plats):
        for a in range(apps):
            for i in range(n):
                cycles = int(g.integers(1000, 5000))
                rows.append({"application": f"app{a}", "platform": f"p{p}", "t_start": i, "t_end": i + 1,
                             "cycles": cycles, "instructions": int(g.integers(500, 4000)),
                             **{s: int(g.integers(0, cycles // 4)) for s in stalls}})
    return frame_csv(pd.DataFrame(rows))


def gen_series(rng: Random) -> Case:
    data = fixtures.TIME_SERIES.encode() if rng.random() < 0.5 else _series_table(rng)
    return _table_file(rng, "series", data)


def _similarity(**params) -> SimilarityEngine:
    return SimilarityEngine(kmeans=(2,), kmeans_n_init=2, **params)


def parse_series(paths: dict[str, Path]) -> Any:
    (path,) = paths.values()
    df, lines = read_table(path)
    return _similarity().fit(df, source=str(path), csv_lines=lines)


def _signature_files() -> list[bytes]:
    return [fixtures.SIGNATURES.encode(), *_files(TESTS_DIR / "data" / "seed002_table1.csv")]


def gen_signatures(rng: Random) -> Case:
    return _table_file(rng, "signatures", rng.choice(_signature_files()))


def parse_signatures(paths: dict[str, Path]) -> Any:
    (path,) = paths.values()
    df, lines = read_table(path)
    return _similarity().fit_signatures(df, source=str(path), csv_lines=lines)


def gen_run_times(rng: Random) -> Case:
    return _table_file(rng, "run_times", fixtures.RUN_TIMES.encode())


def parse_run_times(paths: dict[str, Path]) -> Any:
    (path,) = paths.values()
    df, lines = read_table(path)
    run_times = run_times_from_table(df, source=str(path), csv_lines=lines)
    signatures = pd.read_csv(io.StringIO(fixtures.SIGNATURES))
    return _similarity(reference="a").fit_signatures(signatures, run_times, source="signatures.csv")


@cache
def _gc_tables() -> list[dict[str, bytes]]:
    log, hist = hbench_helpers.profile_tables(n_gc=3, explicit=(1,), copied=(2,))
    spacing = pd.DataFrame({"gc": [0, 0, 1, 2], "spacing": [0, 16, 8, 64], "count": [100, 20, 7, 1]})
    pooled = hist.drop(columns=["live", "dead"]).assign(count=hist["live"] + hist["dead"])
    ms = log.assign(duration_ms=log["duration_s"] * 1e3, heap_mb=log["heap_bytes"] / 2 ** 20).drop(
        columns=["duration_s", "heap_bytes", "compacted"])
    return [{"log.csv": frame_csv(log), "hist.csv": frame_csv(hist)},
            {"log.csv": frame_csv(log), "hist.csv": frame_csv(hist), "spacing.csv": frame_csv(spacing)},
            {"log.csv": frame_csv(ms), "hist.csv": frame_csv(pooled)}]


def gen_gc_log(rng: Random) -> Case:
    case = dict(rng.choice(_gc_tables()))
    for name in rng.sample(sorted(case), rng.choice([1, 1, 2])):
        case[name] = mutated(rng, case[name], "csv")
    return case


def parse_gc_log(paths: dict[str, Path]) -> Any:
    return AppProfile.read(paths["log.csv"], paths["hist.csv"], name="app", spacing_path=paths.get("spacing.csv"))


def _vector_files() -> list[dict[str, bytes]]:
    os_toml, java_toml = _files(VECTOR_DIR / "seed003_os.toml", VECTOR_DIR / "seed003_java.toml")
    toml = fixtures.VECTORS_TOML.encode()
    return [{"sys.csv": fixtures.SYSTEM_CSV.encode(), "app.csv": fixtures.APP_CSV.encode()},
            {"sys.toml": toml, "app.toml": toml}, {"sys.toml": toml, "app.csv": fixtures.APP_CSV.encode()},
            {"sys.toml": os_toml, "app.toml": os_toml}, {"sys.toml": java_toml, "app.toml": java_toml}]


def gen_vectors(rng: Random) -> Case:
    case = dict(rng.choice(_vector_files()))
    for name in rng.sample(sorted(case), rng.choice([1, 1, 2])):
        case[name] = mutated(rng, case[name], "csv" if name.endswith(".csv") else "toml")
    return case


def parse_vectors(paths: dict[str, Path]) -> Any:
    system = next(p for n, p in paths.items() if n.startswith("sys"))
    app = next(p for n, p in paths.items() if n.startswith("app"))
    t = read_vectors(system, app)
    return VectorModel().fit(t.systems, t.applications, t.functions, t.distributions, source=f"{system} + {app}")


# ============================================================================================ the readers
READERS: dict[str, Reader] = {r.name: r for r in [
    Reader("lackey", SimulatorInputError, gen_lackey, parse_trace,
           lambda: [{"t.lackey": d} for d in _lackey_seeds()]),
    Reader("wtr", SimulatorInputError, gen_wtr, parse_trace,
           lambda: [{"t.wtr": trace_wtr.wtr_bytes(t.addrs, t.sizes, t.kinds, 8)}
                    for t in [synthetic_trace(mixed_streams(), 100, seed=1, instructions_per_access=0.5)]]),
    Reader("platform", SimulatorInputError, gen_platform, parse_platform,
           lambda: [{"p.toml": d} for d in _platform_files()]),
    Reader("workload", SimulatorInputError, gen_workload, parse_workload,
           lambda: [{name: d} for name, d in _workload_files()]),
    Reader("--set", SimulatorInputError, gen_set, parse_set,
           lambda: [{"set.txt": b"mpc7447a\nl2.size_kb=1024\ncore.rob_entries = 32"}]),
    Reader("scenario", ScenarioError, gen_scenario, parse_scenario,
           lambda: [{"s.toml": d} for d in _scenario_files()]),
    Reader("efg-json", ModelInputError, gen_efg, parse_profile, lambda: [{"e.json": fixtures.efg_text().encode()}]),
    Reader("sqlite-profile", ModelInputError, gen_sqlite, parse_profile,
           lambda: [{"p.sqlite": sqlite_bytes({k: v.astype(object) for k, v in hand_tables().items()}, SQL_TYPES)}]),
    Reader("counter-totals", ModelInputError, gen_totals, parse_totals,
           lambda: [{"totals.csv": fixtures.TOTALS.encode()}]),
    Reader("time-series", ModelInputError, gen_series, parse_series,
           lambda: [{"series.csv": fixtures.TIME_SERIES.encode()}]),
    Reader("signatures", ModelInputError, gen_signatures, parse_signatures,
           lambda: [{"signatures.csv": d} for d in _signature_files()]),
    Reader("run-times", ModelInputError, gen_run_times, parse_run_times,
           lambda: [{"run_times.csv": fixtures.RUN_TIMES.encode()}]),
    Reader("gc-log", ModelInputError, gen_gc_log, parse_gc_log, _gc_tables),
    Reader("vectors", ModelInputError, gen_vectors, parse_vectors, _vector_files),
]}
