"""``whatif similarity``: outputs, JSON document, and one test per bad-input case of issue 7."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from whatif.cli import app

TABLE1 = Path(__file__).parent / "data" / "seed002_table1.csv"
STALLS = ["RESOURCE_STALLS.LOAD", "RESOURCE_STALLS.STORE", "RAT_STALLS.ANY", "RESOURCE_STALLS.ROB_FULL",
          "RESOURCE_STALLS.RS_FULL"]


def run(*args):
    return CliRunner().invoke(app, ["similarity", *map(str, args)])


def error_lines(result):
    return [ln for ln in result.stderr.splitlines() if ln.startswith("whatif: error:")]


def write_series(path, n_apps=5, n=10, seed=0, edit=None):
    rng = np.random.default_rng(seed)
    rows = []
    for p in ("nehalem", "westmere"):
        for a in range(n_apps):
            t = np.arange(n) * 5.0 + 10
            ins = rng.integers(10**8, 10**9, size=n).astype(float)
            cyc = np.round(ins * rng.uniform(0.5, 3.0, size=n))
            block = pd.DataFrame({"workload": f"w{a}", "platform": p, "t_start": t, "t_end": t + 3,
                                  "CPU_CLK_UNHALTED.REF": cyc, "INST_RETIRED.ANY": ins})
            for s in STALLS:
                block[s] = np.round(cyc * rng.uniform(0.01, 0.3, size=n))
            rows.append(block)
    df = pd.concat(rows, ignore_index=True)
    if edit is not None:
        df = edit(df)
    df.to_csv(path, index=False)
    return path


def assert_bad_input(result, out_dir, *fragments):
    assert result.exit_code == 2, result.output
    lines = error_lines(result)
    assert len(lines) == 1, result.stderr
    for f in fragments:
        assert f in lines[0], lines[0]
    assert result.stdout == ""
    assert not out_dir.exists()
    assert [p.name for p in out_dir.parent.iterdir() if p.name.startswith(".")] == []   # no staging leftovers


def test_table1_json_document():
    r = run(TABLE1, "--signatures", "--reference", "473.astar", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert set(doc["platforms"]) == {"harpertown", "nehalem", "westmere"}
    h = doc["platforms"]["harpertown"]
    for key in ("signatures", "similarity", "mst", "clusters", "reference_cluster", "rank_vectors", "kmeans"):
        assert key in h
    assert h["reference_cluster"] == ["429.mcf", "473.astar"]
    assert set(h["kmeans"]) == {"3", "5"}
    assert r.stderr == ""                       # no progress or warnings under --json for a clean table


def test_out_directory(tmp_path):
    out = tmp_path / "res"
    r = run(TABLE1, "--signatures", "--platform", "harpertown", "--reference", "473.astar", "--out", out)
    assert r.exit_code == 0, r.output
    names = {p.name for p in out.iterdir()}
    assert {"results.json", "report.html", "manifest.json", "signatures.parquet", "mst.parquet",
            "clusters.parquet", "cut_steps.parquet", "similarity_harpertown.parquet", "kmeans_comparison.parquet",
            "mst_harpertown.png", "dendrogram_harpertown.png", "cut_steps_harpertown.png"} <= names
    html = (out / "report.html").read_text()
    assert "Table 1 analogue" in html and "Figure 6 analogue" in html and "Table 8 analogue" in html
    mst = pd.read_parquet(out / "mst.parquet")
    assert len(mst) == 11 and set(mst.columns) >= {"platform", "a", "b", "distance", "cut_at_step"}
    doc = json.loads((out / "results.json").read_text())
    assert list(doc["platforms"]) == ["harpertown"]
    assert "Algorithm 1" in r.stdout and f"results written to {out}" in r.stdout


def test_time_series_with_run_times(tmp_path):
    table = write_series(tmp_path / "ts.csv")
    times = pd.DataFrame({"application": [f"w{a}" for a in range(5)] * 2,
                          "platform": ["nehalem"] * 5 + ["westmere"] * 5,
                          "run_time": [10, 11, 12, 13, 14, 8, 9, 10, 15, 12]})
    times.to_csv(tmp_path / "rt.csv", index=False)
    r = run(table, "--run-times", tmp_path / "rt.csv", "--reference", "w0", "--kmeans", "2", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    ev = doc["system_evaluation"]
    assert set(ev) == {"nehalem->westmere", "westmere->nehalem"}
    for v in ev.values():
        assert v["correct_pct"] + v["incorrect_pct"] + v["unpredictable_pct"] == pytest.approx(100.0)
        assert v["n_cases"] == 4                                # the benchmarks: every application but w0
    assert doc["platforms"]["nehalem"]["intervals"]["w3"] == 10


def test_constant_series_is_a_warning(tmp_path):
    def constant(df):
        sel = (df.workload == "w2") & (df.platform == "nehalem")
        df.loc[sel, "RAT_STALLS.ANY"] = df.loc[sel, "CPU_CLK_UNHALTED.REF"] * 0.1
        return df

    table = write_series(tmp_path / "ts.csv", edit=constant)
    out = tmp_path / "res"
    r = run(table, "--out", out, "--kmeans", "")
    assert r.exit_code == 0, r.output
    warns = [ln for ln in r.stderr.splitlines() if ln.startswith("whatif: warning:")]
    assert len(warns) == 1
    assert "'w2'" in warns[0] and "'nehalem'" in warns[0] and "RAT_STALLS.ANY" in warns[0] and "set to 0" in warns[0]
    assert (out / "results.json").exists()
    assert "RAT_STALLS.ANY" in json.loads((out / "results.json").read_text())["warnings"][0]
    assert r.output.count("set to 0") == 1                   # printed once, not again in the summary
    html = (out / "report.html").read_text()
    assert html.count("set to 0") == 1 and "Warnings (1)" in html
    r = run(table, "--on-constant", "error", "--out", tmp_path / "res2")
    assert_bad_input(r, tmp_path / "res2", "'w2'", "RAT_STALLS.ANY", "constant")


def test_fewer_than_three_intervals(tmp_path):
    table = write_series(tmp_path / "ts.csv", edit=lambda df: df[~((df.workload == "w1") & (df.t_start > 15))])
    r = run(table, "--out", tmp_path / "res")
    assert_bad_input(r, tmp_path / "res", "application 'w1'", "2 sampling interval", "at least 3")


def test_mismatched_stall_sets(tmp_path):
    def drop(df):
        df.loc[(df.workload == "w4") & (df.platform == "westmere"), "RESOURCE_STALLS.STORE"] = np.nan
        return df

    table = write_series(tmp_path / "ts.csv", edit=drop)
    r = run(table, "--out", tmp_path / "res")
    assert_bad_input(r, tmp_path / "res", "mismatched stall sets on platform 'westmere'", "'w4'",
                     "RESOURCE_STALLS.STORE")


def test_reference_missing(tmp_path):
    r = run(TABLE1, "--signatures", "--reference", "yahoo_y", "--out", tmp_path / "res")
    assert_bad_input(r, tmp_path / "res", "reference application 'yahoo_y' is not in the table")


@pytest.mark.parametrize("g", ["0", "2", "-0.1", "2.5"])
def test_threshold_outside_open_interval(tmp_path, g):
    r = run(TABLE1, "--signatures", "--threshold", g, "--out", tmp_path / "res")
    assert_bad_input(r, tmp_path / "res", "The 'threshold' parameter of SimilarityEngine must be a number in the "
                                          "open interval (0, 2)")


def test_unreadable_inputs(tmp_path):
    r = run(tmp_path / "nope.csv", "--out", tmp_path / "res")
    assert_bad_input(r, tmp_path / "res", "no such file")
    r = run(TABLE1, "--signatures", "--kmeans", "three", "--out", tmp_path / "res")
    assert_bad_input(r, tmp_path / "res", "--kmeans must be a comma-separated list")
    r = run(TABLE1, "--out", tmp_path / "res")                    # a signatures table read as time series
    assert_bad_input(r, tmp_path / "res", "no cycles column")
    r = run(TABLE1, "--signatures", "--platform", "sandybridge", "--out", tmp_path / "res")
    assert_bad_input(r, tmp_path / "res", "platform 'sandybridge' not in the table")
