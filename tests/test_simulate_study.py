"""The ``simulate`` study kind and the shipped ``scenarios/xeon-cpi-stacks.toml`` (every shipped file is a
test): the scenario as shipped validates, and a reduced copy (two workloads, fewer instructions) runs end
to end with the results.json contract of issue 3, per-run rates in the manifest, and time series."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from whatif.scenarios.runner import run_scenario_file
from whatif.scenarios.scenario import expand_runs, load_scenario

SHIPPED = Path(__file__).resolve().parents[1] / "scenarios" / "xeon-cpi-stacks.toml"


def test_shipped_scenario_expands_to_every_workload_on_every_xeon():
    scenario, path = load_scenario(SHIPPED)
    runs = expand_runs(scenario, str(path), [])
    assert scenario.study == "simulate"
    assert {r.platform for r in runs} == {"harpertown", "nehalem", "westmere"}
    assert len({r.workload for r in runs}) == 13 and len(runs) == 39


@pytest.fixture(scope="module")
def reduced(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("xeon")
    text = SHIPPED.read_text()
    text = re.sub(r"workloads = \[.*?\]\n", 'workloads = ["429.mcf", "445.gobmk"]\n', text, flags=re.S)
    text = re.sub(r"instructions = [0-9_]+", "instructions = 400_000", text)
    text = re.sub(r"warmup = [0-9_]+", "warmup = 200_000", text)
    scenario = tmp / "xeon.toml"
    scenario.write_text(text)
    out = tmp / "out"
    run_scenario_file(scenario, out=out, progress=False)
    return out


def test_results_contract_and_stacks(reduced):
    doc = json.loads((reduced / "results.json").read_text())
    runs = doc["runs"]
    assert len(runs) == 6
    for r in runs:
        assert {"platform", "workload", "cpi", "cpi_stack", "totals", "sim_instructions_per_s"} <= set(r)
        assert sum(r["cpi_stack"].values()) == pytest.approx(r["cpi"], rel=1e-9)
    by = {(r["platform"], r["workload"]): r for r in runs}
    for p in ("harpertown", "nehalem", "westmere"):
        # the pointer chaser spends more of its time on memory than the branchy game player
        mcf, gobmk = by[(p, "429.mcf")]["cpi_stack"], by[(p, "445.gobmk")]["cpi_stack"]
        assert mcf["data_memory"] > gobmk["data_memory"]
        assert gobmk["branch_mispredict"] > mcf["branch_mispredict"]
    # an L3 and more memory-level parallelism: Nehalem stalls less on memory than Harpertown
    assert by[("nehalem", "429.mcf")]["cpi_stack"]["data_memory"] < by[("harpertown", "429.mcf")]["cpi_stack"]["data_memory"]


def test_manifest_records_every_runs_rate(reduced):
    rates = json.loads((reduced / "manifest.json").read_text())["rates"]
    per_run = {k: v for k, v in rates.items() if k.startswith("sim_instructions_per_s[")}
    assert len(per_run) == 6 and all(v > 0 for v in per_run.values())


def test_time_series_and_report(reduced):
    ts = pd.read_parquet(reduced / "timeseries.parquet")
    assert {"platform", "workload", "t_start", "t_end", "INST_RETIRED.ANY", "CPU_CLK_UNHALTED.REF"} <= set(ts.columns)
    assert (ts["t_end"] > ts["t_start"]).all()
    totals = pd.read_parquet(reduced / "totals.parquet")
    for (p, w), g in ts.groupby(["platform", "workload"]):
        # intervals are samples of the run: their instructions add up to less than the run's
        row = totals[(totals["platform"] == p) & (totals["workload"] == w)].iloc[0]
        assert 0 < g["INST_RETIRED.ANY"].sum() < row["INST_RETIRED.ANY"]
    html = (reduced / "report.html").read_text()
    assert "429.mcf" in html and "data:image/png;base64," in html
