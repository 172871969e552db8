"""``whatif profile``: the SQLite profile database that ``whatif mine`` reads, results.json and report.html;
bad input is one line, exit 2, nothing written."""

from __future__ import annotations

import json

import pytest

from whatif.models.flowgsp.profile_db import read_tables

from test_cli import assert_one_line_error, invoke

ARGS = ("profile", "-p", "z10", "-w", "specjvm98/db", "-n", "30000", "--warmup", "10000", "--sample-every", "37")


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    out = tmp_path_factory.mktemp("profile") / "out"
    result = invoke(*ARGS, "--out", out, "--json")
    assert result.exit_code == 0, result.output
    return out, json.loads(result.stdout)


def test_profile_writes_a_database_whatif_mine_reads(profiled):
    out, doc = profiled
    assert {"profile.sqlite", "results.json", "report.html", "manifest.json", "methods.parquet"} <= \
        {p.name for p in out.iterdir()}
    tables = read_tables(out / "profile.sqlite")
    assert len(tables["Disassm"]) == doc["shape"]["instructions"]
    ticks = tables["IA"][tables["IA"].event == "TICKS"]["count"].sum()
    assert ticks == doc["samples"] - doc["samples_outside_program"] > 0
    assert doc["instructions"] == 30000 and doc["sample_every"] == 37
    assert doc["samples"] == doc["cycles"] // 37
    mined = invoke("mine", out / "profile.sqlite", "--gap", "0", "--window", "1", "--generations", "2", "--json")
    assert mined.exit_code == 0, mined.output
    sequences = {tuple(map(tuple, s["sequence"])) for s in json.loads(mined.stdout)["sequences"]}
    assert (("Dcachemiss",),) in sequences


def test_profile_prints_its_summary(tmp_path):
    result = invoke(*ARGS, "--out", tmp_path / "o")
    assert result.exit_code == 0, result.output
    assert "sampled counters" in result.stdout and "Icachemiss" in result.stdout
    assert f"profile written to {tmp_path / 'o' / 'profile.sqlite'}" in result.stdout


@pytest.mark.parametrize("change, fragment", [
    (("-w", "specjvm98/dbx"), "unknown workload 'specjvm98/dbx'"),
    (("-p", "z11"), "unknown platform"),
    (("--sample-every", "0"), "--sample-every must be a number of cycles >= 1"),
    (("--sample-every", "100000000"), "longer than a run of 30,000 instructions can last"),
    (("-n", "0"), "--instructions must be >= 1"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, change, fragment):
    args = list(ARGS)
    i = args.index(change[0])
    args[i + 1] = change[1]
    out = tmp_path / "out"
    assert_one_line_error(invoke(*args, "--out", out), fragment)
    assert not out.exists()


def test_out_problems_are_refused(tmp_path):
    (tmp_path / "file").write_text("keep")
    assert_one_line_error(invoke(*ARGS, "--out", tmp_path / "file"), "existing file")
    assert (tmp_path / "file").read_text() == "keep"
