"""The ``regression`` study kind and the shipped ``scenarios/java-7447a-regression.toml`` (every shipped
file is a test): the scenario as shipped validates and expands, and a reduced copy (three workloads,
four heap sizes, two replicates, two variants, short runs, four predictors) runs end to end with the results.json
contract of issue 5."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from whatif.scenarios.errors import ScenarioError
from whatif.scenarios.render.regression import SEED_EXCLUDE, is_tlb_cache
from whatif.scenarios.studies.regression import RegressionSpec
from whatif.scenarios.runner import run_scenario_file
from whatif.scenarios.scenario import expand_runs, load_scenario
from whatif.simulator.osnoise import TimerNoise
from whatif.simulator.platform import load_platform

SHIPPED = Path(__file__).resolve().parents[1] / "scenarios" / "java-7447a-regression.toml"
PREDICTORS = ["dl1_miss", "l2_dmiss", "dtlb_miss", "itlb_miss"]


def test_shipped_scenario_is_the_seed_000_design():
    scenario, path = load_scenario(SHIPPED)
    runs = expand_runs(scenario, str(path), [])
    spec = RegressionSpec.model_validate(scenario.section("regression"))
    assert scenario.study == "regression" and scenario.replicates == 5
    assert [w.split("/")[1] for w in scenario.workloads] == ["compress", "jess", "raytrace", "db", "javac",
                                                             "mpegaudio", "mtrt", "jack", "ecm"]
    assert set(scenario.variants) == {"as-shipped", "no-walk-pollution", "l2-1mb"}
    assert scenario.variants["no-walk-pollution"] == {"page_walk.pollute": False}
    assert scenario.variants["l2-1mb"] == {"l2.size_kb": 1024}
    assert spec.heap_factors == [1.0 + 0.5 * i for i in range(11)]          # H_min .. 6 H_min step 0.5 H_min
    assert spec.pmu == "physical" and spec.response == "cycles" and spec.exclude == SEED_EXCLUDE
    # replicates are runs of one input; redundant predictors are dropped as in seed 000 §IV-A
    assert spec.same_input and spec.redundancy_cut == 0.8
    assert len(runs) == 3 * 9 * 5


def reduced_text(workers: int = 1) -> str:
    text = SHIPPED.read_text()
    subs = [(r"workloads = \[.*?\]\n", 'workloads = ["specjvm98/jess", "specjvm98/jack", "specjvm98/ecm"]\n'),
            (r"replicates = 5", "replicates = 2"),
            (r"\[variants\.l2-1mb\]\n[^\n]*\n", ""),
            (r"heap_factors = \[[^\]]*\]", "heap_factors = [1.0, 2.0, 4.0, 6.0]"),
            (r"instructions = 300_000", "instructions = 20_000"),
            (r"instructions_per_unit = 0.2", "instructions_per_unit = 0.05"),     # collections in 20k
            (r"heap_scale = 0.03125", "heap_scale = 0.0078125"),
            (r"min_heap_rel_tol = 0.01", "min_heap_rel_tol = 0.05"),                      # a quick H_min
            (r"folds = 10", f"folds = 4\nworkers = {workers}\npredictors = {json.dumps(PREDICTORS)}")]
    for pattern, new in subs:
        text, n = re.subn(pattern, new, text, count=1, flags=re.S)
        assert n == 1, pattern                          # the shipped file still has the key the test reduces
    return text


@pytest.fixture(scope="module")
def reduced(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("regstudy")
    scenario = tmp / "java.toml"
    scenario.write_text(reduced_text())
    out = tmp / "out"
    run_scenario_file(scenario, out=out, progress=False)
    return out


def test_results_json_shape(reduced):
    doc = json.loads((reduced / "results.json").read_text())
    assert set(doc["variants"]) == {"as-shipped", "no-walk-pollution"}
    for name, v in doc["variants"].items():
        for model in ("I", "II", "II_pruned"):
            assert {"r2", "cv_error_pct", "cv_error_ci95", "n_terms"} <= set(v[model])
            assert 0 < v[model]["r2"] <= 1 and v[model]["cv_error_pct"] > 0
        assert v["I"]["n_terms"] == 4 and v["II"]["n_terms"] == 4 + 6
        assert v["II_pruned"]["n_terms"] <= v["II"]["n_terms"]
        # nested models: the II-order fit can only be better on the fitted rows
        assert v["II"]["r2"] >= v["I"]["r2"]
        assert 0 <= v["f_test_p"] <= 1
        assert all("*" in t for t in v["pruned_interactions"])
        assert v["tlb_cache_interactions"] == [t for t in v["pruned_interactions"] if is_tlb_cache(t)]
        assert v["observations"] == 3 * 4 * 2
    assert doc["seed_table_iv"]["I"]["r2"] == 0.907 and doc["seed_table_iv"]["II"]["cv_error_pct"] == 2.89
    assert "TLB×cache" in doc["tlb_cache_verdict"]
    # fidelity: every variant's Table IV figures next to the seed's real 7447A
    fid = doc["fidelity"]
    assert fid["table_iv"]["I"]["seed"]["cv_error_pct"] == 12.02 and fid["measurement_ci95_pct"]["seed"] == 1.53
    for name, v in doc["variants"].items():
        assert fid["table_iv"]["II"]["whatif"][name]["r2"] == v["II"]["r2"]
        assert fid["measurement_ci95_pct"]["whatif"][name] == v["measurement_ci95_pct"]


def test_h_min_is_found_not_copied(reduced):
    """The heap axis is H_min found by bisection on the simulated heap; Table III sits beside it."""
    doc = json.loads((reduced / "results.json").read_text())
    assert set(doc["h_min"]) == {"jess", "jack", "ecm"}
    table = pd.read_parquet(reduced / "h_min.parquet").set_index("workload")
    for name, h in doc["h_min"].items():
        assert h["seed_table_iii_kb"] == {"jess": 2177, "jack": 2177, "ecm": 2177}[name]
        assert h["below_bytes"] < h["heap_bytes"] <= h["below_bytes"] * 1.06 + 8
        assert h["found_kb"] == pytest.approx(h["heap_bytes"] / 0.0078125 / 1024)
        assert h["found_kb"] != h["seed_table_iii_kb"]
        assert table.loc[name, "h_min_found_kb"] == pytest.approx(h["found_kb"])
    totals = pd.read_parquet(reduced / "totals.parquet")
    jess = sorted(totals.loc[totals["workload"] == "jess", "heap_kb"].unique())
    assert jess == pytest.approx([doc["h_min"]["jess"]["found_kb"] * f for f in (1.0, 2.0, 4.0, 6.0)])
    # the found heap holds every window of the stream it was found on
    runs = pd.read_parquet(reduced / "java_runs.parquet")
    assert not runs["out_of_memory"].any()


def test_totals_are_contract_1_rows_with_every_event(reduced):
    totals = pd.read_parquet(reduced / "totals.parquet")
    assert len(totals) == 2 * 3 * 4 * 2
    assert {"variant", "platform", "workload", "heap_kb", "replicate", "cycles", "inst", "dl1_miss",
            "prefetch_full"} <= set(totals.columns)
    # other = inst - ld - st - br - fpu holds within a PMU run; merged over runs it need not be exact
    runs = pd.read_parquet(reduced / "java_runs.parquet")
    assert set(runs["pmu_run"]) == {0, 1, 2, 3}                 # 19 events, 6 counters, cycles in each run


def test_replicates_and_pmu_runs_vary_like_real_runs(reduced):
    runs = pd.read_parquet(reduced / "java_runs.parquet")
    one = runs[(runs["variant"] == "as-shipped") & (runs["workload"] == "jess") & (runs["heap_factor"] == 1.0)]
    # the allocation sequence is the program's: every run of a configuration collects as often
    assert one["collections"].nunique() == 1
    # but the cycles differ from run to run (page placement, timer phase): the measurement noise
    assert one["cycles"].nunique() > 1
    assert one["cycles"].std() / one["cycles"].mean() < 0.1


def test_cycles_increase_with_gc_work(reduced):
    runs = pd.read_parquet(reduced / "java_runs.parquet")
    jess = runs[(runs["variant"] == "as-shipped") & (runs["workload"] == "jess")]
    by_heap = jess.groupby("heap_factor")[["collections", "gc_instructions", "instructions", "cycles"]].mean()
    assert by_heap["collections"].is_monotonic_decreasing and by_heap["collections"].iloc[0] >= 2
    assert by_heap["collections"].iloc[-1] < by_heap["collections"].iloc[0]
    # the collections' instructions are in the run's counts, and their cycles in its cycles
    assert by_heap["instructions"].iloc[0] > by_heap["instructions"].iloc[-1] + by_heap["gc_instructions"].iloc[0] / 2
    assert by_heap["cycles"].iloc[0] > by_heap["cycles"].iloc[-1]
    # ecm allocates too little to collect at all
    assert runs.loc[runs["workload"] == "ecm", "collections"].max() == 0


def test_cache_inhibited_page_tables_change_the_counters(reduced):
    totals = pd.read_parquet(reduced / "totals.parquet")
    key = ["workload", "heap_kb", "replicate"]
    a = totals[totals["variant"] == "as-shipped"].set_index(key).sort_index()
    b = totals[totals["variant"] == "no-walk-pollution"].set_index(key).sort_index()
    # common random numbers: the same program per configuration in both variants; the counts differ by the
    # timer's work, which is spread over the run time (HZ handlers of ~1,740 instructions a second) and so
    # grows with the slower variant's cycles ...
    noise = TimerNoise()
    handler = noise.base_instructions + noise.mean_expiring * noise.per_timer_instructions
    extra = noise.hz * (b["cycles"] - a["cycles"]) / (load_platform("mpc7447a").clock_ghz * 1e9) * handler
    assert ((b["inst"] - a["inst"]) >= 0).all() and ((b["inst"] - a["inst"]) <= extra + handler).all()
    assert np.allclose(a["dtlb_miss"], b["dtlb_miss"], rtol=0.15)
    # ...but the table search's loads no longer miss in the caches, and every one now goes to memory
    assert (b["dl1_miss"] <= a["dl1_miss"]).mean() > 0.9
    assert (b["cycles"] > a["cycles"]).all()


def test_outputs_and_report(reduced):
    for name in ("table_iv", "interactions", "as-shipped_coefficients", "no-walk-pollution_table_iv"):
        assert (reduced / f"{name}.parquet").is_file(), name
    for v in ("as-shipped", "no-walk-pollution"):
        for fig in ("fig1_varclus", "fig2_spearman2", "fig3_coefficients", "fig4_residuals"):
            assert (reduced / f"{v}_{fig}.png").stat().st_size > 1000
    t4 = pd.read_parquet(reduced / "table_iv.parquet")
    assert list(t4["source"][:3]) == ["seed 000 (7447A, measured)"] * 3
    html = (reduced / "report.html").read_text()
    assert "Table IV: whatif next to seed 000" in html and "Variant no-walk-pollution" in html
    assert "Minimum heap H_min: found by the simulator, next to seed 000 Table III" in html
    assert "seed (published)" in html and "12.02" in html         # the fidelity headline


def test_bad_regression_table_is_one_line(tmp_path):
    text = reduced_text().replace("prune = \"bic\"", "prune = \"bic\"\nbogus = 1")
    (tmp_path / "bad.toml").write_text(text)
    with pytest.raises(ScenarioError, match=r"bad.toml: regression.*bogus"):
        run_scenario_file(tmp_path / "bad.toml", out=tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()


def test_unknown_predictor_names_the_events(tmp_path):
    text = reduced_text().replace('"itlb_miss"]', '"l3_miss"]')
    (tmp_path / "bad.toml").write_text(text)
    with pytest.raises(ScenarioError, match=r"regression.predictors: 'l3_miss' is not an event of mpc7447a"):
        run_scenario_file(tmp_path / "bad.toml", out=tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("same_input", [True, False])
def test_replicates_read_one_input_unless_told_otherwise(same_input):
    from whatif.scenarios.studies.regression import run_configuration

    shared = {"instructions": 20_000, "instructions_per_unit": 0.05, "heap_scale": 1 / 32,
              "collector": "mark-sweep", "pmu": "ideal", "os_noise": False, "same_input": same_input}
    item = {"platform": "mpc7447a", "overrides": [], "workload": "specjvm98/db", "heap_index": 0, "program_seed": 2009,
            "heap_bytes": 256 << 10}           # H_min of db at 1/32
    a, b = (run_configuration({**item, "replicate_seed": s}, shared)["totals"] for s in (11, 12))
    # the program executes as many instructions either way ...
    assert a["inst"] == b["inst"]
    # ... but only one input gives the same branches and loads in every replicate (runs then differ in
    # page placement alone); another input per run takes other paths
    same = all(a[k] == b[k] for k in ("br", "ld", "st"))
    assert same is same_input


def test_measurement_interval_is_the_t_interval_of_replicates():
    from scipy import stats

    from whatif.scenarios.render.regression import measurement_ci95_pct

    rows = [("v", "w", 1.0, c) for c in (100.0, 102.0, 98.0)] + [("v", "w", 2.0, c) for c in (200.0, 200.0, 200.0)]
    rows += [("u", "w", 1.0, 50.0)]
    totals = pd.DataFrame(rows, columns=["variant", "workload", "heap_factor", "cycles"])
    got = measurement_ci95_pct(totals, "cycles")
    expect_v = (stats.t.ppf(0.975, 2) * 2.0 / np.sqrt(3) / 100.0 * 100.0 + 0.0) / 2
    assert got["v"] == pytest.approx(expect_v, rel=1e-12)
    assert np.isnan(got["u"])                                   # one replicate: no interval


def test_tlb_cache_verdict_reads_the_three_signals():
    from whatif.scenarios.render.regression import verdict_text

    def docs(kept_on, kept_off, p_on, p_off, r2_on, r2_off):
        def doc(kept, p, r2):
            return {"tlb_cache_interactions": [f"dtlb_miss*t{i}" for i in range(kept)],
                    "tlb_cache_block": {"p": p, "r2_drop": r2}}
        return {"as-shipped": doc(kept_on, p_on, r2_on), "no-walk-pollution": doc(kept_off, p_off, r2_off)}

    # fewer terms kept, no longer significant, a much smaller share: they weaken
    text = verdict_text(docs(7, 3, 1.6e-4, 0.066, 1.4e-4, 1.9e-6))
    assert text.endswith("they weaken without the pollution.")
    assert "7 as shipped, 3 without" in text and "R² 0.00014 as shipped" in text and "1.9e-06 without" in text
    # fewer terms and a smaller share, still significant: they weaken
    assert verdict_text(docs(6, 4, 3.5e-8, 4e-14, 2.3e-4, 1.2e-5)).endswith("they weaken without the pollution.")
    # more terms kept and a larger share without pollution: they do not
    assert verdict_text(docs(4, 8, 0.004, 0.04, 4e-4, 1e-3)).endswith("they do not weaken without the pollution.")
    # one signal for, none against: only marginally
    assert verdict_text(docs(4, 3, 0.004, 0.004, 4e-4, 3e-4)).endswith("weaken only marginally without the pollution.")
    assert verdict_text({"as-shipped": {}}) == ""
