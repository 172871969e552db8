"""The hbench-gc study kind: a miniature scenario end to end, the shipped scenario's schema, bad input."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from whatif.scenarios.errors import ScenarioError
from whatif.scenarios.studies.hbench_gc import HbenchSpec
from whatif.scenarios.runner import run_scenario_file
from whatif.scenarios.scenario import load_scenario
from whatif.models.hbench import MicrobenchPlan
from whatif.simulator.gc.behaviour import load_behaviour
from kernel_groups import recorded_steps

LOADED: list[str] = []                   # the kernel steps the mini fixture's run loaded

MINI = """schema_version = 1
name = "mini"
study = "hbench-gc"
seed = 1
platforms = ["mpc7447a"]
[hbench]
applications = ["specjvm98/jack", "specjvm98/javac"]
scale = 0.02
[hbench.microbench]
object_sizes = [12, 28, 60, 124]
fixed_heaps_mb = [48.0, 64.0, 96.0]
[hbench.heap_sweep]
application = "specjvm98/jack"
factors = [0.5, 1.0, 2.0]
"""


@pytest.fixture(scope="module")
def mini(tmp_path_factory):
    d = tmp_path_factory.mktemp("hbench")
    (d / "mini.toml").write_text(MINI)
    with recorded_steps(LOADED):
        out = run_scenario_file(d / "mini.toml", out=d / "out", progress=False).out_dir
    return out


def test_the_core_collector_and_microbenchmarks_load_before_the_runs(mini):
    assert LOADED == ["core timing", "garbage collector (mark-sweep)", "address-trace kernel", "GC microbenchmarks"]


def test_results_document(mini):
    doc = json.loads((mini / "results.json").read_text())
    assert set(doc["apps"]) == {"jack", "javac"}
    for name, a in doc["apps"].items():
        assert a["collections"] > 0
        assert 0 <= a["mean_abs_error_pct"] <= a["max_abs_error_pct"]
        assert "thesis_form" in a and "without_explicit" in a
    # inputs from the seed are labelled as inputs, not results
    javac = doc["apps"]["javac"]
    assert "explicit_collections" not in javac and "full_run_alloc_mb" not in javac
    assert javac["inputs"]["explicit_gc"] == {"value": [0.3, 0.55, 0.8], "what": "System.gc() calls (fractions of "
                                              "the run)", "source": "input (seed 003 Figure 5-9(d))"}
    assert javac["inputs"]["total_alloc_mb"]["source"] == "input (seed 003 Table 5-3)"
    assert javac["inputs"]["heap_mb"] == {"value": 64.0, "what": "heap (MB, full size)",
                                          "source": "input (seed 003 Figure 5-9(d))"}
    assert doc["heap_sweep"]["heap_mb_source"] == "factor x input (seed 003 Figure 5-9(f))"
    cf = doc["cost_functions"]
    assert set(cf["c_live_s"]) == {"12", "28", "60", "124"} and cf["c_fixed"]["per_mb_s"] > 0
    assert cf["c_ref_s"] is not None and cf["copy_bandwidth_bytes_per_s"] > 0
    assert 10e-9 < cf["c_root_s"] < 30e-9 and doc["form"]["roots"] is True     # ~23 cycles a root at 1.5 GHz
    assert doc["goal"]["applications"] == 2
    counts = [p["collections"] for p in sorted(doc["heap_sweep"]["points"], key=lambda p: p["heap_mb"])]
    assert counts[0] > counts[1] > counts[2]


def test_tables_figures_and_report(mini):
    for name in ("microbench", "cost_functions", "gc_log", "gc_size_histogram", "gc_live_spacing", "predictions",
                 "error_summary"):
        assert (mini / f"{name}.parquet").is_file(), name
    preds = pd.read_parquet(mini / "predictions.parquet")
    log = pd.read_parquet(mini / "gc_log.parquet")
    assert len(preds) == len(log) and set(preds["application"]) == {"jack", "javac"}
    assert (preds["actual_s"] == preds.merge(log, on=["application", "gc"])["duration_s"]).all()
    for fig in ("heap_size", "object_size", "memory_reads", "size_distributions", "predicted_jack", "heap_sweep"):
        assert (mini / f"{fig}.png").is_file(), fig
    html = (mini / "report.html").read_text()
    assert "Table 5-4" in html and "Outliers" in html and "explicit System.gc()" in html
    assert "input (seed 003 Table 5-3)" in html and "explicit (input: System.gc() calls)" in html
    assert "were explicit System.gc() calls (input (seed 003 Figure 5-9(d));" in html
    log_explicit = log[log["application"] == "javac"]["explicit"].sum()
    summary = pd.read_parquet(mini / "error_summary.parquet").set_index("application")
    assert summary.loc["javac", "explicit (input: System.gc() calls)"] == log_explicit == 3
    manifest = json.loads((mini / "manifest.json").read_text())
    assert manifest["rates"]["allocated_objects_per_s"] > 0


def test_shipped_scenario_is_valid():
    scenario, _ = load_scenario("scenarios/hbench-jgc.toml")
    spec = HbenchSpec.model_validate(scenario.section("hbench"))
    names = [w.rpartition("/")[2] for w in spec.applications]
    assert names == ["compress", "jess", "db", "javac", "mtrt", "jack", "r2mark"]
    for w in spec.applications:
        load_behaviour(w)
    plan = MicrobenchPlan(**spec.microbench).scaled(spec.scale)
    assert len(plan.configurations()) > 60 and spec.goal_pct == 5.0


def test_bad_hbench_section(tmp_path):
    (tmp_path / "bad.toml").write_text(MINI.replace('scale = 0.02', 'scale = 2.0'))
    with pytest.raises(ScenarioError, match="bad.toml: hbench: scale: Input should be less than or equal to 1"):
        run_scenario_file(tmp_path / "bad.toml", out=tmp_path / "o", progress=False)
    (tmp_path / "bad2.toml").write_text(MINI.replace('specjvm98/javac"]', 'specjvm98/kaffe"]'))
    with pytest.raises(ScenarioError, match="unknown workload 'specjvm98/kaffe'"):
        run_scenario_file(tmp_path / "bad2.toml", out=tmp_path / "o", progress=False)
    (tmp_path / "bad3.toml").write_text(MINI.replace('scale = 0.02', 'scale = 0.02\ncollector = "copying"\n'
                                                                      'spacing = false'))
    with pytest.raises(ScenarioError, match="bad3.toml: hbench.roots: the roots term prices the roots phase"):
        run_scenario_file(tmp_path / "bad3.toml", out=tmp_path / "o", progress=False)
    assert not (tmp_path / "o").exists()
