"""Every reader of user input, fuzzed (issue 16, item 2): whatever the input, it parses or the reader raises the
one user error of its layer -- ``SimulatorInputError`` (traces, platform and workload files, ``--set``),
``ScenarioError`` (scenario files), ``ModelInputError`` (EFGs, SQLite profiles, tables, GC logs, vectors);
the three share no base class but ``ValueError``, so a bare ``ValueError`` counts as a crash too.

The inputs are valid shipped files and fixtures mutated by ``tests/fuzzgen`` (the generators that
``tests/benchmarks/fuzz_readers.py`` runs 10^5 times a reader); hypothesis drives their random choices, a
hundred inputs a reader here.  The trace readers' differential tests against the reference twins
(``test_traces.py``) stay where they are: here the property is only "parses or one user error", over
files damaged in more ways.  Below: each crash the fuzzer found, as the input that showed it.
"""

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fuzzgen
from badinput import fixtures
from fuzzgen.readers import SQL_TYPES, frame_csv, hand_tables, sqlite_bytes
from whatif.models.similarity import SimilarityEngine, read_table

READERS = list(fuzzgen.READERS)


@pytest.mark.parametrize("name", READERS)
def test_every_seed_input_parses(name, tmp_path):
    """The fuzzer's starting points are valid: an input fails because of its mutations, nothing else."""
    reader = fuzzgen.READERS[name]
    for case in reader.seeds():
        assert fuzzgen.outcome(reader, case, tmp_path) == "parsed", fuzzgen.describe(case)


@pytest.mark.parametrize("name", READERS)
@settings(max_examples=100, deadline=None, derandomize=False,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False))
def test_any_input_parses_or_is_the_readers_user_error(name, rng, tmp_path):
    reader = fuzzgen.READERS[name]
    case = reader.generate(rng)
    try:
        fuzzgen.outcome(reader, case, tmp_path)
    except Exception as exc:
        raise AssertionError(f"{name} crashed with {type(exc).__name__} (not {reader.error.__name__}) on\n"
                             f"{fuzzgen.describe(case, limit=2000)}") from exc


# ------------------------------------------------------------------------------------ crashes found
def refused(name: str, case: fuzzgen.Case, tmp_path, match: str) -> None:
    """The reader refuses ``case`` with its user error, the message matching ``match``."""
    reader = fuzzgen.READERS[name]
    paths = fuzzgen.write_case(tmp_path, case)
    with pytest.raises(reader.error, match=match):
        reader.parse(paths)


def profile_db(change=None, page: int | None = None) -> bytes:
    """The hand-made profile of ``test_flowgsp_profile_db`` as SQLite bytes, after ``change(tables)``;
    ``page``: that page of the file overwritten with 0xFF bytes."""
    tables = {name: df.astype(object) for name, df in hand_tables().items()}
    if change is not None:
        change(tables)
    data = bytearray(sqlite_bytes(tables, SQL_TYPES))
    if page is not None:
        size = int.from_bytes(data[16:18], "big")
        data[(page - 1) * size:page * size] = b"\xff" * size
    return bytes(data)


def test_a_damaged_table_page_of_a_sqlite_profile_is_one_user_error(tmp_path):
    # pandas wrapped sqlite3's error in its own DatabaseError, which the reader did not catch
    refused("sqlite-profile", {"p.sqlite": profile_db(page=2)}, tmp_path,
            r"p.sqlite: cannot read SQLite profile: database disk image is malformed$")


@pytest.mark.parametrize("table, column, row, value, what", [
    ("Disassm", "opcode", 1, None, "NULL"),                 # was TypeError: sorted() of a float NaN among names
    ("IA", "event", 2, b"\x00\xff", "a BLOB"),              # was UnicodeDecodeError in astype(str)
    ("Symbol", "name", 0, b"\xff", "a BLOB"),
    ("CFGEdge", "kind", 3, None, "NULL"),
])
def test_a_null_or_blob_in_a_text_column_of_a_sqlite_profile_is_named(tmp_path, table, column, row, value, what):
    def change(tables):
        tables[table].iat[row, list(tables[table].columns).index(column)] = value
    refused("sqlite-profile", {"p.sqlite": profile_db(change)}, tmp_path,
            rf"table {table} row {row + 1} column {column}: must be text, got {what}$")


def gc_case(log: pd.DataFrame | None = None, hist: pd.DataFrame | None = None) -> fuzzgen.Case:
    case = dict(fuzzgen.READERS["gc-log"].seeds()[0])
    if log is not None:
        case["log.csv"] = frame_csv(log)
    if hist is not None:
        case["hist.csv"] = frame_csv(hist)
    return case


def gc_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    case = fuzzgen.READERS["gc-log"].seeds()[0]
    return tuple(pd.read_csv(pd.io.common.BytesIO(case[n])) for n in ("log.csv", "hist.csv"))


@pytest.mark.parametrize("table, column, value, must", [
    ("hist", "gc", math.inf, "a finite number"),            # was IntCastingNaNError (astype(int64) of inf)
    ("hist", "gc", 1.5, "a whole number"),                  # was cut to collection 1 without a word
    ("log", "gc", 1e23, "a whole number"),                  # was wrapped to a negative collection number
    ("log", "live_objects", math.inf, "a finite number"),   # was OverflowError in int(live + dead)
])
def test_a_gc_log_number_must_be_finite_and_a_collection_whole(tmp_path, table, column, value, must):
    log, hist = gc_tables()
    frame = {"log": log, "hist": hist}[table]
    frame[column] = frame[column].astype(float)
    frame.loc[1, column] = value
    refused("gc-log", gc_case(**{table: frame}), tmp_path, rf"row 2, column '{column}': must be {must}, got ")


def vectors_toml(top: str = "", tail: str = "") -> bytes:
    """The corpus's vector file with ``top`` before its first table and ``tail`` after its last."""
    head = 'source = "corpus"\n'
    return (fixtures.VECTORS_TOML.replace(head, head + top) + tail).encode()


@pytest.mark.parametrize("text, where", [                      # each was AttributeError: no .items() / .get()
    (b"schema_version = 1\nsystems = 2.5\n[applications.static]\nfile_read = 10\n",
     r"systems: expected a table \(\[systems\] or \[systems.NAME\]\), got 2.5$"),
    (vectors_toml(top="units = 3\n"), r"units: expected a table"),
    (vectors_toml(top="functions = {A = [1]}\n"), r"functions.A: expected a table of primitives, got \[1\]$"),
    (vectors_toml(tail="[functions.A]\nfile_read = 3\n"),
     r"functions.A.file_read: expected a table with 'sizes' and 'costs' lists, got 3$"),
])
def test_a_vector_file_table_that_is_not_a_table_is_named(tmp_path, text, where):
    refused("vectors", {"sys.toml": text, "app.csv": fixtures.APP_CSV.encode()}, tmp_path, where)


def test_an_alloc_catalog_whose_alloc_is_not_a_table_is_named(tmp_path):
    # was AttributeError: 'list' object has no attribute 'items'
    refused("workload", {"alloc.toml": b'schema_version = 1\nsuite = "x"\nalloc = [1, 2]\n'}, tmp_path,
            r"alloc: expected a table of \[alloc.NAME\] tables, got list")


def series(cycles: float, row: int | None = None) -> bytes:
    df = pd.read_csv(pd.io.common.StringIO(fixtures.TIME_SERIES))
    df["cycles"] = df["cycles"].astype(float)
    if row is None:
        df["cycles"] = cycles
        df["cycles"] += np.arange(len(df))            # (so that the CPI series are not constant)
    else:
        df.loc[row, "cycles"] = cycles
    return frame_csv(df)


def test_a_stall_ratio_past_the_largest_float_is_named(tmp_path):
    # cycles = 1e-320 (positive): A_stall / cycles = inf, a NaN signature, then kmeans's bare ValueError
    refused("time-series", {"series.csv": series(1e-320, row=0)}, tmp_path,
            r"line 2: cycles 1e-320 and instructions .* a CPI or stall ratio too large for a number$")


def test_signatures_of_cpis_near_the_largest_float_are_pearsons_r(tmp_path):
    # cycles = 1e308: the sums of squares overflowed, r was NaN, kmeans raised a bare ValueError
    (tmp_path / "s.csv").write_bytes(series(1e308))
    df, lines = read_table(tmp_path / "s.csv")
    big = SimilarityEngine(kmeans=(2,)).fit(df, source="s.csv", csv_lines=lines)
    df["cycles"] = df["cycles"] / 1e300                # the same CPI series, scaled: the same r
    small = SimilarityEngine(kmeans=(2,)).fit(df, source="s.csv", csv_lines=lines)
    a, b = big.platforms["p1"].signatures, small.platforms["p1"].signatures
    assert np.all(np.isfinite(a)) and np.allclose(a, b, atol=1e-12)


@pytest.mark.parametrize("sampling, match", [
    # was OverflowError: int(inf) of the interval count (s_p = 1e-300 s: "more than any run can sample")
    ("[0, 1e-300, 1e-300]", r"takes up to 4,611,686,018,427,387,904 intervals in 100,000 instructions; "
                            r"the limit is 1,000,000"),
    # was OverflowError: math.ceil(inf) in the message saying how many instructions would be needed
    ("[1e300, 1e300, 1e300]", r"100,000 instructions are too few for the sampling .*: no run is long enough"),
])
def test_a_sampling_beyond_any_run_is_one_user_error(tmp_path, sampling, match):
    text = fixtures.SIMULATE.replace("sampling = [10, 5, 3]", f"sampling = {sampling}")
    refused("scenario", {"s.toml": text.encode()}, tmp_path, match)


@pytest.mark.parametrize("sampling", ["[]", "[10, 5]", "[10, 5, 3, 1]"])
def test_a_sampling_without_three_numbers_is_one_user_error(tmp_path, sampling):
    # was IndexError: the similarity study's sensitivity schedules read s_d of an empty list
    text = (fixtures.SCENARIO_DIR / "cint2006-similarity.toml").read_text()
    text, n = re.subn(r"(?m)^sampling = \[[^\]]*\]", f"sampling = {sampling}", text, count=1)
    assert n == 1
    refused("scenario", {"s.toml": text.encode()}, tmp_path,
            r"simulate: sampling: .*expected \[s_d, s_p, s_i\], three numbers, got \[")


@pytest.mark.parametrize("factor", ["1e300", "2000.0", "0.0"])
def test_a_primitive_scale_beyond_the_limit_is_one_user_error(tmp_path, factor):
    # was OverflowError: int(round(path_instructions * 1e300)) is int(inf)
    text = (fixtures.SCENARIO_DIR / "webserver-capacity.toml").read_text().replace(
        "primitive_scale = { proc_simple = 0.5 }", f"primitive_scale = {{ proc_simple = {factor} }}")
    refused("scenario", {"s.toml": text.encode()}, tmp_path,
            r"the factor of primitive 'proc_simple' must be in \(0, 1000\]")


def test_a_counter_total_past_the_largest_square_is_named(tmp_path):
    # was scipy's bare ValueError (infs in the design matrix); first a z-score column of zeros, dropped as
    # "aliased" without a word
    rows = "".join(f"w{i % 3},{i % 2},{2000 + 97 * i},{500 + 31 * i},{100 + 53 * (i % 5)}\n" for i in range(12))
    text = "workload,replicate,cycles,e0,e1\n" + rows.replace(",531,", ",1e308,", 1)
    refused("counter-totals", {"totals.csv": text.encode()}, tmp_path,
            r"predictor 'e0': values too large to standardise .* the largest is 1e\+308\)$")


def test_a_vector_row_without_a_primitive_name_is_named(tmp_path):
    # was TypeError: sorted() of a float NaN among the primitive names
    refused("vectors", {"sys.csv": b"primitive,unit,A,B\nfile_read,us,1.0,2.0\n,us,3.0,1.5\n",
                        "app.csv": b"primitive,static\nfile_read,10\ntcp_connect,2\n"}, tmp_path,
            r"sys.csv: line 3: the primitive has no name$")


def test_a_sqlite_schema_name_that_is_not_utf8_is_one_user_error(tmp_path):
    # was UnicodeDecodeError from sqlite_master (the fuzzer's input 11886, kept as it was found)
    data = (Path(__file__).parent / "data" / "fuzz" / "sqlite-profile-11886.sqlite").read_bytes()
    refused("sqlite-profile", {"p.sqlite": data}, tmp_path, r"schema holds text that is not UTF-8")
