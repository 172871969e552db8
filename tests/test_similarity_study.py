"""The ``similarity`` study kind: the shipped cint2006-similarity scenario loads and holds what it claims, a
tiny version runs end to end through ``whatif run``, and bad scenario input is one line with nothing written."""

import json
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import pearsonr
from typer.testing import CliRunner

from whatif.cli import app
from whatif.scenarios.scenario import load_scenario
from whatif.scenarios.studies.similarity import SimilaritySpec
from whatif.scenarios.studies.simulate import SimulateSpec
from whatif.simulator.platform import load_platform

SHIPPED = Path(__file__).parent.parent / "scenarios" / "cint2006-similarity.toml"
PAIRS = {f"{a}->{b}" for a in ("harpertown", "nehalem", "westmere") for b in ("harpertown", "nehalem", "westmere")
         if a != b}
TINY_WORKLOADS = ["462.libquantum", "456.hmmer", "401.bzip2", "yahoo_y/Y"]
runner = CliRunner()


def tiny_doc(**similarity) -> dict:
    doc = tomllib.loads(SHIPPED.read_text())
    doc["workloads"] = TINY_WORKLOADS
    doc["simulate"].update(instructions=400_000, warmup=100_000, time_scale=2e-6)
    doc["similarity"].update(similarity)
    return doc


def _toml_value(v) -> str:
    return json.dumps(v) if not isinstance(v, bool) else str(v).lower()


def write(tmp_path: Path, doc: dict, name="tiny.toml") -> Path:
    """The scenario as TOML (scalars and lists first, then one table per section, variants nested)."""
    lines = [f"{k} = {_toml_value(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    for section, table in doc.items():
        if isinstance(table, dict):
            if section == "variants":
                lines += [f'[variants."{name}"]' + "".join(f"\n{k!r} = {_toml_value(v)}" for k, v in t.items())
                          for name, t in table.items()]
                continue
            lines.append(f"[{section}]")
            lines += [f"{k} = {_toml_value(v)}" for k, v in table.items() if v is not None]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_shipped_scenario_loads_with_the_seed_sampling_and_enough_intervals():
    scenario, _ = load_scenario(SHIPPED)
    assert scenario.study == "similarity"
    assert scenario.platforms == ["harpertown", "nehalem", "westmere"]
    assert len(scenario.workloads) == 13 and "yahoo_y/Y" in scenario.workloads
    assert sum(w.split(".")[0].isdigit() for w in scenario.workloads) == 12
    spec = SimulateSpec.model_validate(scenario.section("simulate"))
    sim = SimilaritySpec.model_validate(scenario.section("similarity"))
    assert spec.sampling == [10, 5, 3] and sim.reference == "yahoo_y/Y" and sim.min_intervals >= 20
    scaled = spec.sampling_scaled()
    assert scaled.interval_s / scaled.period_s == pytest.approx(0.6)
    # even a run at CPI 0.4 on the fastest clock holds the intervals the file promises
    fastest = max(load_platform(p).clock_ghz for p in scenario.platforms) * 1e9
    assert scaled.intervals_within(spec.instructions * 0.4 / fastest) >= sim.min_intervals


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("simstudy")
    out = tmp / "out"
    result = runner.invoke(app, ["run", str(write(tmp, tiny_doc())), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out, json.loads((out / "results.json").read_text())


def test_tiny_run_writes_the_tables_figures_and_report(tiny_run):
    out, _ = tiny_run
    for table in ("timeseries", "signatures", "similarity", "mst", "clusters", "run_times", "system_evaluation",
                  "speedups", "kmeans_comparison"):
        assert (out / f"{table}.parquet").is_file(), table
    for fig in ("mst_harpertown", "cut_steps_harpertown", "dendrogram_westmere", "time_series_yahoo_y_Y",
                "cpi_stacks"):
        assert (out / f"{fig}.png").stat().st_size > 1000, fig
    html = (out / "report.html").read_text()
    for text in ("Table 9 analogue", "Seed 002, Table 9", "Table 1 analogue on nehalem", "Table 8 analogue",
                 "Seed 002, Table 6", "33.33", "Figure 5 analogue", "Figure 6 analogue", "Figure 7 analogue",
                 "Fidelity: the simulation next to seed 002", "§4.1", "seed (published)"):
        assert text in html, text
    for table in ("fidelity_table1", "sensitivity", "sensitivity_summary"):
        assert (out / f"{table}.parquet").is_file(), table


def test_tiny_run_fidelity_tables(tiny_run):
    """Table 1's rho per program and platform, the §4.1 sensitivity and Table 9, next to the seed's values."""
    out, doc = tiny_run
    fid = doc["fidelity"]
    long = pd.read_parquet(out / "fidelity_table1.parquet")
    for p in ("harpertown", "nehalem", "westmere"):
        # the reference Y is not in Table 1: the three CINT2006 programs are compared
        assert set(fid["table1_rho"][p]) <= {"462.libquantum", "456.hmmer", "401.bzip2"}
        assert len(fid["table1_rho"][p]) >= 2
        rows = long[(long["platform"] == p) & (long["application"] == "462.libquantum")]
        seed = [0.99, 0.08, 0.38, -0.93, -0.75] if p == "harpertown" else None
        if seed is not None:
            assert rows["seed"].tolist() == seed
        sim = doc["platforms"][p]["signatures"]["462.libquantum"]
        assert sorted(rows["sim"].tolist()) == pytest.approx(sorted(sim.values()))
        if "462.libquantum" in fid["table1_rho"][p]:
            ranks = lambda v: pd.Series(v).rank().to_numpy()
            want = np.corrcoef(ranks(rows["sim"].tolist()), ranks(rows["seed"].tolist()))[0, 1]
            assert fid["table1_rho"][p]["462.libquantum"] == pytest.approx(want)
        assert fid["table1_mean_rho"][p] == pytest.approx(np.mean(list(fid["table1_rho"][p].values())))
    # §4.1: the same runs read under three schedules; the mean |change| of the mean CPI, and the seed's 6 and 9
    per = pd.read_parquet(out / "sensitivity.parquet")
    # the seed's third schedule, 30/60 s, is printed as "20%" but is 50 %: the seconds are what is simulated
    assert list(dict.fromkeys(per["setting"])) == ["60% (3/5 s)", "50% (5/10 s)", "50% (30/60 s)"]
    first = per[per["setting"] == "60% (3/5 s)"]
    counts = {(r["platform"], r["application"]): r["intervals"] for r in first.to_dict("records")}
    assert all(counts[(p, a)] == n for p, apps in doc["intervals"].items() for a, n in apps.items())
    pairs = fid["sensitivity"]["pairs"]
    assert [(x["from"], x["to"], x["seed mean change (%)"]) for x in pairs] == [
        ("60% (3/5 s)", "50% (5/10 s)", 6.0), ("50% (5/10 s)", "50% (30/60 s)", 9.0)]
    wide = per.pivot_table(index=["platform", "application"], columns="setting", values="mean_cpi")
    change = (100 * (wide["50% (5/10 s)"] - wide["60% (3/5 s)"]).abs() / wide["60% (3/5 s)"]).dropna()
    assert pairs[0]["sim mean |change| (%)"] == pytest.approx(change.mean()) and pairs[0]["applications"] == len(change)
    assert fid["table9_correct_pct"]["nehalem->harpertown"]["seed"] == 50.0


def test_tiny_run_results_shape_and_system_evaluation_against_the_run_times(tiny_run):
    out, doc = tiny_run
    assert set(doc["platforms"]) == {"harpertown", "nehalem", "westmere"}
    assert set(doc["system_evaluation"]) == PAIRS
    rt = doc["run_times"]
    for key, pair in doc["system_evaluation"].items():
        assert pair["correct_pct"] + pair["incorrect_pct"] + pair["unpredictable_pct"] == pytest.approx(100.0)
        assert pair["n_cases"] == 3                                  # every benchmark but the reference
        assert isinstance(pair["reference_direction_correct"], bool)
        cur, cand = key.split("->")
        truth = rt[cur]["yahoo_y/Y"] / rt[cand]["yahoo_y/Y"]
        assert pair["reference_speedup"] == pytest.approx(truth, rel=1e-12)
        similar = [rt[cur][a] / rt[cand][a] for a in pair["reference_similar"]]
        ups = {s > 1 for s in similar}
        predicted = None if len(ups) != 1 else ups.pop()
        assert pair["reference_direction_correct"] == (predicted is not None and predicted == (truth > 1))
    for p, res in doc["platforms"].items():
        assert set(res["signatures"]) == set(TINY_WORKLOADS)
        assert all(len(sig) == 5 for sig in res["signatures"].values())
        members = sorted(a for c in res["clusters"] for a in c)
        assert members == sorted(TINY_WORKLOADS)                     # Algorithm 1 partitions the suite
        assert "yahoo_y/Y" in res["reference_cluster"]
    assert doc["seed002_table9"]["nehalem->harpertown"]["correct_pct"] == 50.0
    assert min(n for apps in doc["intervals"].values() for n in apps.values()) >= 3


def test_tiny_run_signature_is_pearson_of_the_written_time_series(tiny_run):
    out, doc = tiny_run
    ts = pd.read_parquet(out / "timeseries.parquet")
    block = ts[(ts["workload"] == "401.bzip2") & (ts["platform"] == "nehalem")]
    cpi = block["CPU_CLK_UNHALTED.REF"] / block["INST_RETIRED.ANY"]
    ratio = block["RESOURCE_STALLS.RS_FULL"] / block["CPU_CLK_UNHALTED.REF"]
    want = pearsonr(cpi, ratio)[0]
    assert doc["platforms"]["nehalem"]["signatures"]["401.bzip2"]["RESOURCE_STALLS.RS_FULL"] == \
        pytest.approx(want, abs=1e-12)
    speed = pd.read_parquet(out / "speedups.parquet")
    row = speed[(speed["current"] == "harpertown") & (speed["candidate"] == "westmere")
                & (speed["application"] == "456.hmmer")]
    assert float(row["speedup"].iloc[0]) == pytest.approx(doc["run_times"]["harpertown"]["456.hmmer"]
                                                          / doc["run_times"]["westmere"]["456.hmmer"])
    assert np.isfinite(speed["speedup"]).all()


@pytest.mark.parametrize("change, fragment", [
    (lambda d: d["similarity"].update(reference="403.gcc"), "similarity.reference: '403.gcc' is not among"),
    (lambda d: d["similarity"].update(threshold=3.0), "'threshold' parameter"),
    (lambda d: d["similarity"].update(colour="red"), "colour"),
    (lambda d: d["simulate"].pop("sampling"), "needs the sampling engine"),
    (lambda d: d.update(workloads=["462.libquantum", "no.such"]), "unknown workload 'no.such'"),
])
def test_bad_scenario_is_one_line_and_writes_nothing(tmp_path, change, fragment):
    doc = tiny_doc()
    change(doc)
    out = tmp_path / "out"
    result = runner.invoke(app, ["run", str(write(tmp_path, doc)), "--out", str(out)])
    assert result.exit_code == 2, result.output
    lines = [l for l in result.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("whatif: error: ") and fragment in lines[0], result.stderr
    assert not out.exists()
