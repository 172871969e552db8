"""``whatif gc``: a normal run, the output directory, and one test per bad input (exit 2, one line,
nothing written)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from whatif.cli import app

ARGS = ["gc", "--workload", "specjvm98/jack", "--heap-mb", "32", "--scale", "0.01"]


@pytest.fixture(scope="module")
def runner():
    return CliRunner()


def test_json_run(runner):
    res = runner.invoke(app, ARGS + ["--json", "--seed", "1"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    s = doc["summary"]
    assert s["collections"] == len(doc["gc_log"]) > 3
    assert s["workload"] == "jack" and doc["collector"] == "mark-sweep" and doc["platform"] == "mpc7447a"
    assert 0 < s["gc_throughput_pct"] < 100 and s["max_pause_s"] >= s["mean_pause_s"] > 0
    assert {"gc", "duration_s", "live_objects", "dead_objects", "bytes_copied", "explicit"} <= set(doc["gc_log"][0])
    # what the run was given is an input, labelled with its source, not a summary figure
    assert "allocated_bytes" not in s
    assert doc["inputs"]["allocated_bytes"]["source"] == "input (seed 003 Table 5-3)"
    assert doc["inputs"]["allocated_bytes"]["value"] == pytest.approx(481 * 2**20 * 0.01, rel=1e-3)
    assert doc["inputs"]["heap_mb"] == {"value": 32.0, "what": "heap (MB, full size)", "source": "input (--heap-mb)"}


def test_the_seed_heap_is_labelled_as_an_input(runner):
    res = runner.invoke(app, ["gc", "--workload", "specjvm98/jack", "--scale", "0.005"])
    assert res.exit_code == 0, res.output
    assert "heap 32 MB (x0.005), input (seed 003 Figure 5-9(f))" in " ".join(res.stdout.split())
    assert "(input (seed 003 Table 5-3))" in res.stdout


def test_text_run_and_output_directory(runner, tmp_path):
    out = tmp_path / "gc"
    res = runner.invoke(app, ARGS + ["--collector", "copying", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "collections" in res.stdout and "GC log" in res.stdout
    for name in ("gc_log.parquet", "gc_size_histogram.parquet", "results.json", "manifest.json", "report.html",
                 "pauses.png"):
        assert (out / name).is_file(), name
    doc = json.loads((out / "results.json").read_text())
    assert doc["collector"] == "copying" and doc["summary"]["bytes_copied"] > 0
    html = (out / "report.html").read_text()
    assert "Inputs" in html and "input (seed 003 Table 5-3)" in html and "input (--heap-mb)" in html


def catalog(tmp_path, sizes):
    p = tmp_path / "bad.toml"
    p.write_text("schema_version = 1\n[alloc.app]\ntotal_alloc_mb = 10\nbytecodes_millions = 10\n"
                 "lifetime = { immortal = 0.0, phase = 0.0, short = 1.0, short_mean_kb = 64 }\n"
                 f"sizes = {sizes}\n")
    return f"{p}:app"


def bad(runner, tmp_path, args, message):
    out = tmp_path / "never"
    res = runner.invoke(app, args + ["--out", str(out)])
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and message in lines[0], res.stderr
    assert not out.exists() and res.stdout == ""
    assert not list(tmp_path.glob(".never*"))


def test_heap_smaller_than_one_object(runner, tmp_path):
    bad(runner, tmp_path, ["gc", "--workload", "specjvm98/jack", "--heap-mb", "0.000001"],
        "is smaller than one object of specjvm98/jack (16 bytes)")


def test_zero_heap(runner, tmp_path):
    bad(runner, tmp_path, ["gc", "--workload", "specjvm98/jack", "--heap-mb", "0"], "--heap-mb must be > 0, got 0")


def test_negative_object_size(runner, tmp_path):
    bad(runner, tmp_path, ["gc", "--workload", catalog(tmp_path, "[[-8, 12, 1.0, 1]]"), "--heap-mb", "1"],
        "alloc.app: sizes: sizes[0]: object sizes must be positive, got [-8, 12]")


def test_zero_object_size(runner, tmp_path):
    bad(runner, tmp_path, ["gc", "--workload", catalog(tmp_path, "[[0, 0, 1.0, 1]]"), "--heap-mb", "1"],
        "sizes[0]: object sizes must be positive, got [0, 0]")


def test_distribution_that_does_not_normalise(runner, tmp_path):
    bad(runner, tmp_path, ["gc", "--workload", catalog(tmp_path, "[[12, 12, 0.6, 1], [20, 20, 0.6, 1]]"),
                           "--heap-mb", "1"], "the size weights sum to 1.2, not 1 (the distribution does not normalise)")


def test_unknown_collector(runner, tmp_path):
    bad(runner, tmp_path, ARGS + ["--collector", "generational"],
        "unknown collector 'generational'; known: mark-sweep, copying")


def test_unknown_workload(runner, tmp_path):
    bad(runner, tmp_path, ["gc", "--workload", "specjvm98/kaffe"], "unknown workload 'specjvm98/kaffe'")


def test_out_of_memory_is_reported_not_an_error(runner):
    res = runner.invoke(app, ["gc", "--workload", "specjvm98/db", "--heap-mb", "4", "--scale", "0.02", "--json"])
    assert res.exit_code == 0, res.output
    s = json.loads(res.stdout)["summary"]
    assert s["out_of_memory"] and s["oom_live_bytes"] > 0


def test_set_overrides_the_platform(runner):
    """--set changes the platform the collections are timed on: a 10x slower clock, 10x longer pauses
    (the same collections, counted in the same cycles)."""
    def run(*extra):
        res = runner.invoke(app, ARGS + ["--json", "--seed", "1", *extra])
        assert res.exit_code == 0, res.output
        return json.loads(res.stdout)["summary"]
    # (no queue for the memory channel: its time per byte in cycles follows the clock)
    base = run("--set", "memory.queueing=none")
    slow = run("--set", "memory.queueing=none", "--set", "clock_ghz=0.15")     # the 7447A runs at 1.5 GHz
    assert slow["collections"] == base["collections"]
    assert slow["max_pause_s"] == pytest.approx(10 * base["max_pause_s"], rel=1e-6)
