"""Every case of the bad-input corpus: exit code 2, exactly one line on stderr starting with
``whatif: error: `` that holds the case's fragments, no traceback, and the working directory exactly as it
was (nothing created, changed or removed).  Each case runs in-process (typer's CliRunner) in an empty
directory holding only the files it names; every error comes before any simulation, so the corpus is
fast."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from whatif.cli import app
from whatif.scenarios.runner import load_study

from . import fixtures as fx
from .cases import CASES, Case, Symlink

runner = CliRunner()

# Cases named in issue 16 ("Why"), which the corpus must keep.
FROM_THE_ISSUE = [
    "usage-run-seed-negative", "usage-simulate-seed-negative", "usage-gc-seed-negative",
    "usage-trace-synth-seed-negative", "run-option-out-below-a-file", "run-option-out-proc",
    "trace-trace-convert-to-directory", "run-option-cluster-not-an-address", "simulate-sampling-nan",
    "simulate-sampling-inf", "run-simulate-sampling-nan", "run-regression-heap-factors-inf",
    "mine-json-vertex-id-1e23", "mine-json-weight-1e23", "mine-json-frequency-1e23", "similarity-t-start-text",
    "similarity-extra-field-first-row", "similarity-signatures-duplicate-label", "run-cachesim-replicates-trillion",
    "similarity-stall-text-cell", "regress-duplicate-header-a-a-cycles", "gc-growth-expand-without-max",
    "usage-simulate-instructions-1e6", "usage-run-missing-argument", "usage-unknown-command",
    "run-cachesim-platforms-unknown", "run-directory", "mine-sqlite-not-sqlite", "run-cachesim-variant-bad-value",
    "show-set-nosuch-key-1",
]


def _write(root: Path, files) -> None:
    for name, content in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Symlink):
            path.symlink_to(content.target)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under ``root``: kind, size, modification time and permissions (directories by name:
    their mtime moves when whatif probes whether it may create an entry, which changes nothing)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            st = path.lstat()
            rel = str(path.relative_to(root))
            out[rel] = ("dir",) if path.is_dir() and not path.is_symlink() else (st.st_size, st.st_mtime_ns, st.st_mode)
    return out


def assert_one_line_error(result, *fragments: str) -> None:
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("whatif: error: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_line_and_changes_nothing(case: Case, tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    _write(work, case.files)
    before = snapshot(work)
    result = runner.invoke(app, list(case.argv))
    assert_one_line_error(result, *case.expect)
    assert snapshot(work) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]         # nothing beside it either


def test_the_corpus_is_large_and_its_ids_unique():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
    assert len({(c.argv, c.files) for c in CASES}) == len(CASES)          # no two cases are the same input
    assert len(CASES) >= 300


def test_every_case_from_the_issue_is_in_the_corpus():
    ids = {c.id for c in CASES}
    assert [i for i in FROM_THE_ISSUE if i not in ids] == []


# ------------------------------------------------------------------------------------- the fixtures
@pytest.mark.parametrize("text", [fx.CACHESIM, fx.SIMULATE, fx.REGRESSION, fx.SIMILARITY, fx.HBENCH_GC,
                                  fx.HBENCH_OS, fx.CAPACITY, fx.FLOWGSP],
                         ids=["cachesim", "simulate", "regression", "similarity", "hbench-gc", "hbench-os",
                              "capacity", "flowgsp"])
def test_fixture_scenario_loads_and_plans(text, tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(text)
    study, runs = load_study(path)
    assert runs


@pytest.mark.parametrize("argv, files", [
    ("regress t.csv -r cycles --order 1 --json", {"t.csv": fx.TOTALS}),
    ("similarity t.csv --kmeans '' --json", {"t.csv": fx.TIME_SERIES}),
    ("similarity s.csv --signatures --kmeans '' --json", {"s.csv": fx.SIGNATURES}),
    ("similarity t.csv --kmeans '' --run-times rt.csv --json", {"t.csv": fx.TIME_SERIES, "rt.csv": fx.RUN_TIMES}),
    ("mine g.json --json", {"g.json": fx.efg_text()}),
    ("hbench predict --system sys.csv --app app.csv --json", {"sys.csv": fx.SYSTEM_CSV, "app.csv": fx.APP_CSV}),
    ("hbench predict --system v.toml --app v.toml --json", {"v.toml": fx.VECTORS_TOML}),
    ("show platform p.toml --json", {"p.toml": fx.PLATFORM}),
], ids=["totals", "time-series", "signatures", "run-times", "efg", "vector-csv", "vector-toml", "platform"])
def test_fixture_file_is_accepted(argv, files, tmp_path, monkeypatch):
    import shlex

    monkeypatch.chdir(tmp_path)
    _write(tmp_path, files.items())
    result = runner.invoke(app, shlex.split(argv))
    assert result.exit_code == 0, (result.output, sys.exc_info())
