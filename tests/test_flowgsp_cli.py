"""``whatif mine``: outputs, and one test per bad-input case (one line, exit code 2, nothing written)."""

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from whatif.cli import app
from whatif.models.flowgsp import write_tables
from whatif.models.flowgsp.synthetic import synthetic_efg, synthetic_profile
from whatif.models.flowgsp.formats import write_json


def graph_doc():
    return {"methods": [
        {"name": "m1", "vertices": [{"id": 0, "weight": 3, "attributes": ["A"]},
                                    {"id": 1, "weight": 1, "attributes": ["B"]},
                                    {"id": 2, "weight": 2, "attributes": ["A", "C"]}],
         "edges": [[0, 1, 5], [1, 2, 5], [2, 0, 2], [0, 2, 1]]},
        {"name": "m2", "vertices": [{"id": 7, "weight": 1, "attributes": ["B"]},
                                    {"id": 8, "weight": 0, "attributes": ["C"]}],
         "edges": [[7, 8, 3]]}]}


@pytest.fixture
def graph_file(tmp_path):
    f = tmp_path / "g.json"
    f.write_text(json.dumps(graph_doc()))
    return f


def run(*args):
    return CliRunner().invoke(app, ["mine", *map(str, args)])


def test_json_document(graph_file):
    r = run(graph_file, "--json", "--generations", "3", "--min-support", "0.05", "--workers", "2")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert set(doc) == {"sequences", "generations"}
    sms = [s["sm"] for s in doc["sequences"]]
    assert sms == sorted(sms, reverse=True) and len(sms) > 5
    first = doc["sequences"][0]
    assert set(first) == {"sequence", "sf", "sw", "sm", "sd"}
    assert isinstance(first["sequence"][0], list)
    assert [g["n"] for g in doc["generations"]] == [1, 2, 3]
    assert r.stderr == ""  # no progress bar under --json
    top = json.loads(run(graph_file, "--json", "--generations", "3", "--min-support", "0.05", "--top", "2").stdout)
    assert top["sequences"] == doc["sequences"][:2]


def test_human_table_progress_and_results_directory(graph_file, tmp_path):
    out = tmp_path / "res"
    r = run(graph_file, "--gap", "1", "--window", "1", "--generations", "3", "--out", out)
    assert r.exit_code == 0, r.output
    assert "g_max=1 w_max=1" in r.stdout and "<(A)>" in r.stdout
    assert "generation  1" in r.stderr and "generation  3" in r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["generations.parquet", "generations.png", "manifest.json",
                                                     "report.html", "results.json", "sequences.parquet",
                                                     "supports.png"]
    seq = pd.read_parquet(out / "sequences.parquet")
    res = json.loads((out / "results.json").read_text())
    assert len(seq) == res["sequences_kept"] and seq.sm.iloc[0] == pytest.approx(res["sequences"][0]["sm"])
    assert len(res["sequences"]) == min(len(seq), 200) and res["all_sequences"] == "sequences.parquet"
    assert list(pd.read_parquet(out / "generations.parquet").columns) == ["n", "candidates", "kept"]   # no timing
    assert res["parameters"]["gap"] == 1
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["study"] == "flowgsp" and manifest["input"] == str(graph_file)
    assert "data:image/png;base64," in (out / "report.html").read_text()


def test_sqlite_profile_and_dask_cluster_give_the_json_of_local_workers(tmp_path):
    from distributed import LocalCluster

    db = tmp_path / "p.sqlite"
    write_tables(synthetic_profile(n_methods=12, seed=5), db)
    js = tmp_path / "p.json"
    write_json(synthetic_efg(n_methods=12, seed=5), js)
    args = ["--json", "--gap", "1", "--generations", "3", "--min-support", "0.02"]
    local = json.loads(run(db, *args, "--workers", "1").stdout)
    from_json = json.loads(run(js, *args, "--workers", "2").stdout)
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp", host="127.0.0.1",
                      dashboard_address=None) as cluster:
        r = run(db, *args, "--cluster", cluster.scheduler_address)
    assert r.exit_code == 0, r.output
    clustered = json.loads(r.stdout)
    assert local["sequences"] and local["sequences"] == clustered["sequences"] == from_json["sequences"]


BAD_JSON = {
    "malformed": ('{"methods": [\n{"name": "m", "vertices": [,]}]}', "malformed JSON at line 2 column 28: Expecting value"),
    "unknown_vertex": (lambda d: d["methods"][0]["edges"].append([0, 42, 1]),
                       "methods[0].edges[4]: edge to unknown vertex 42 (target) in method 'm1'"),
    "negative_weight": (lambda d: d["methods"][1]["vertices"][0].update(weight=-2),
                        "methods[1].vertices[0].weight: must be a non-negative number, got -2"),
    "negative_frequency": (lambda d: d["methods"][0]["edges"][1].__setitem__(2, -5),
                           "methods[0].edges[1]: frequency must be a non-negative number, got -5"),
    "no_edges": (lambda d: [m.update(edges=[]) for m in d["methods"]],
                 "the graph has no edges; FlowGSP needs edge frequencies"),
    "zero_weights": (lambda d: [v.update(weight=0) for m in d["methods"] for v in m["vertices"]],
                     "all vertex weights are zero; they cannot be normalised"),
}


def _assert_rejected(r, out, message):
    assert r.exit_code == 2, r.output
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("whatif: error: ")
    assert message in lines[0]
    assert not out.exists() and not any(p.name.startswith(".res") for p in out.parent.iterdir())


@pytest.mark.parametrize("case", sorted(BAD_JSON))
def test_bad_graph_files(case, tmp_path):
    spec, message = BAD_JSON[case]
    f = tmp_path / "bad.json"
    if isinstance(spec, str):
        f.write_text(spec)
    else:
        doc = graph_doc()
        spec(doc)
        f.write_text(json.dumps(doc))
    out = tmp_path / "res"
    _assert_rejected(run(f, "--out", out), out, f"{f}: {message}")


@pytest.mark.parametrize("option, value, message", [
    ("--min-support", "1.5", "--min-support must be a number in [0, 1], got 1.5"),
    ("--min-support", "-0.01", "--min-support must be a number in [0, 1], got -0.01"),
    ("--min-diff-support", "2", "--min-diff-support must be a number in [0, 1], got 2.0"),
])
def test_thresholds_outside_unit_interval(graph_file, tmp_path, option, value, message):
    out = tmp_path / "res"
    _assert_rejected(run(graph_file, option, value, "--out", out), out, message)


def test_sqlite_without_expected_tables(tmp_path):
    import sqlite3

    db = tmp_path / "p.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE Symbol (symbol_id INTEGER, name TEXT)")
    con.commit()
    con.close()
    out = tmp_path / "res"
    _assert_rejected(run(db, "--out", out), out,
                     "SQLite profile lacks table(s) Disassm, IA, Listing, CFGNode, CFGEdge")


def test_missing_file_and_bad_options(tmp_path):
    out = tmp_path / "res"
    _assert_rejected(run(tmp_path / "nope.json", "--out", out), out, "nope.json: no such file")
    f = tmp_path / "g.json"
    f.write_text(json.dumps(graph_doc()))
    _assert_rejected(run(f, "--gap", "-1", "--out", out), out, "--gap must be an integer in [0, 16], got -1")
    _assert_rejected(run(f, "--cluster", "localhost:8786", "--out", out), out, "--cluster must be None or a Dask")
    _assert_rejected(run(f, "--top", "0", "--out", out), out, "--top must be an integer >= 1, got 0")
