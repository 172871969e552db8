"""``whatif regress``: JSON, results directory and one test per bad-input case (exit 2, one line, nothing written)."""

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from whatif.cli import app
from whatif.scenarios.checks.regression import planted_counter_table

runner = CliRunner()


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    df, _ = planted_counter_table(120, 4, seed=8)
    df.to_csv(d / "totals.csv", index=False)
    df.to_parquet(d / "totals.parquet")
    return d, df


def _bad(tmp_path, args, message):
    out = tmp_path / "out"
    result = runner.invoke(app, ["regress", *args, "--out", str(out)])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("whatif: error: ")
    assert message in lines[0], lines[0]
    assert result.stdout == ""
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name != "in.csv"] == []
    return lines[0]


def test_json_document(table):
    d, _ = table
    result = runner.invoke(app, ["regress", str(d / "totals.parquet"), "--response", "cycles", "--json",
                                 "--folds", "5", "--seed", "2", "--exclude", "ev00*ev01"])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert set(doc["models"]) == {"I", "II", "II_pruned"}
    assert doc["f_test"]["reduced"] == "I"
    assert doc["settings"]["folds"] == 5 and doc["settings"]["seed"] == 2
    assert doc["settings"]["exclude"] == ["ev00*ev01"]
    assert "ev00*ev01" not in doc["models"]["II"]["terms"]
    m = doc["models"]["II_pruned"]
    assert {"r2", "sigma", "terms", "cv_error_pct", "cv_error_ci95"} <= set(m)


def test_redundancy_cut_with_kept_predictors(tmp_path, table):
    _, df = table
    df = df.assign(ev00_copy=df["ev00"] * 1.0001 + 1.0)
    df.to_csv(tmp_path / "in.csv", index=False)
    for keep, dropped in ((None, None), ("ev00_copy", "ev00"), ("ev00", "ev00_copy")):
        args = ["regress", str(tmp_path / "in.csv"), "-r", "cycles", "--folds", "4", "--redundancy", "0.99",
                "--json"] + (["--keep", keep] if keep else [])
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.stderr
        doc = json.loads(result.stdout)
        red = doc["dropped_predictors"]["redundant"]
        assert len(red) == 1
        if keep:
            assert red == {dropped: keep} and doc["settings"]["keep_predictors"] == [keep]
    _bad(tmp_path, [str(tmp_path / "in.csv"), "-r", "cycles", "--redundancy", "0.99", "--keep", "ev77"],
         "keep_predictors: 'ev77' is not a predictor")


def test_text_output_and_results_directory(table, tmp_path):
    d, _ = table
    out = tmp_path / "res"
    result = runner.invoke(app, ["regress", str(d / "totals.csv"), "-r", "cycles", "--folds", "4",
                                 "--predictors", "ev00,ev01,ev02", "--out", str(out)])
    assert result.exit_code == 0, result.stderr
    assert "Table IV" in result.stdout and f"results written to {out}" in result.stdout
    names = {p.name for p in out.iterdir()}
    for f in ("results.json", "manifest.json", "report.html", "table_iv.parquet", "coefficients.parquet",
              "spearman2.parquet", "varclus_rho2.parquet", "vif.parquet", "cv_folds.parquet", "f_tests.parquet",
              "predictions.parquet", "stepwise.parquet", "fig1_varclus.png", "fig2_spearman2.png",
              "fig3_coefficients.png", "fig4_residuals.png"):
        assert f in names, f
    doc = json.loads((out / "results.json").read_text())
    assert doc["predictors"] == ["ev00", "ev01", "ev02"]
    coef = pd.read_parquet(out / "coefficients.parquet")
    pruned = coef[coef["model"] == "II_pruned"].set_index("term")["estimate"]
    for term, vals in doc["models"]["II_pruned"]["terms"].items():
        assert pruned[term] == pytest.approx(vals["estimate"])
    folds = pd.read_parquet(out / "cv_folds.parquet")
    assert folds.groupby("model")["error_pct"].mean()["I"] == pytest.approx(doc["models"]["I"]["cv_error_pct"])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["study"] == "regression" and manifest["seed"] == 0
    html = (out / "report.html").read_text()
    assert "Table IV" in html and html.count("data:image/png;base64,") >= 4


def test_constant_predictor_warns_and_proceeds(table, tmp_path):
    _, df = table
    df = df.assign(fpu=3.0)
    df.to_csv(tmp_path / "in.csv", index=False)
    result = runner.invoke(app, ["regress", str(tmp_path / "in.csv"), "-r", "cycles", "--json", "--folds", "5"])
    assert result.exit_code == 0
    assert "whatif: warning: predictor 'fpu' is constant (3 in every row); dropped" in result.stderr
    assert json.loads(result.stdout)["dropped_predictors"]["constant"] == ["fpu"]


def test_bad_missing_response_column(table, tmp_path):
    d, _ = table
    _bad(tmp_path, [str(d / "totals.csv"), "-r", "cycle"], f"{d / 'totals.csv'}: response column 'cycle' not found")


def test_bad_non_numeric_cell(table, tmp_path):
    _, df = table
    df = df.astype({"ev02": object})
    df.loc[6, "ev02"] = "1.2.3"
    df.to_csv(tmp_path / "in.csv", index=False)
    _bad(tmp_path, [str(tmp_path / "in.csv"), "-r", "cycles"],
         "predictor column 'ev02' has a non-numeric value '1.2.3' at row 7 (line 8)")


def test_bad_nan_cell(table, tmp_path):
    _, df = table
    df = df.copy()
    df.loc[10, "cycles"] = np.nan
    df.to_csv(tmp_path / "in.csv", index=False)
    _bad(tmp_path, [str(tmp_path / "in.csv"), "-r", "cycles"],
         "response column 'cycles' has a missing (NaN) value at row 11 (line 12)")


def test_bad_all_predictors_constant(table, tmp_path):
    _, df = table
    df = df.assign(ev00=1.0, ev01=2.0, ev02=3.0, ev03=4.0)
    df.to_csv(tmp_path / "in.csv", index=False)
    _bad(tmp_path, [str(tmp_path / "in.csv"), "-r", "cycles"], "every predictor is constant")


def test_bad_more_terms_than_observations(table, tmp_path):
    _, df = table
    df.iloc[:10].to_csv(tmp_path / "in.csv", index=False)
    _bad(tmp_path, [str(tmp_path / "in.csv"), "-r", "cycles", "--folds", "2"],
         "the II-order model has 11 coefficients (10 terms and the intercept) but the table has only 10 rows")


def test_bad_fewer_rows_than_folds(table, tmp_path):
    _, df = table
    df.iloc[:6].to_csv(tmp_path / "in.csv", index=False)
    _bad(tmp_path, [str(tmp_path / "in.csv"), "-r", "cycles", "--order", "1"],
         "the table has 6 rows, fewer than the 10 cross-validation folds")


def test_bad_parameter_value(table, tmp_path):
    d, _ = table
    _bad(tmp_path, [str(d / "totals.csv"), "-r", "cycles", "--order", "4"],
         "The 'order' parameter of RegressionStudy must be one of 1, 2, 3. Got 4 instead.")


def test_bad_exclude_name(table, tmp_path):
    d, _ = table
    _bad(tmp_path, [str(d / "totals.csv"), "-r", "cycles", "--exclude", "ev00*l2_miss"],
         "exclude entry 'ev00*l2_miss' names 'l2_miss', which is not a predictor")


def test_bad_missing_file(tmp_path):
    _bad(tmp_path, [str(tmp_path / "none.csv"), "-r", "cycles"], "none.csv: no such file")


def test_a_study_table_is_regressed_on_events_not_on_its_identifying_columns(tmp_path, table):
    """``heap_factor`` (written by the regression study) and the swept keys that the manifest beside a
    study's totals table records are identifying columns: never predictors by default."""
    _, df = table
    study = tmp_path / "study"
    study.mkdir()
    df.assign(heap_factor=[1.0 + 0.5 * (i % 4) for i in range(len(df))],
              **{"l2.size_kb": [512 * (1 + i % 2) for i in range(len(df))]}).to_parquet(study / "totals.parquet")
    (study / "manifest.json").write_text(json.dumps({
        "whatif_results": 1, "files": ["totals.parquet", "manifest.json"],
        "scenario": {"sweep": {"l2.size_kb": [512, 1024]}},
        "parameters": {"runs": [{"run": "base[l2.size_kb=512]", "variant": "base", "platform": "mpc7447a",
                                 "l2.size_kb": 512, "replicate": 0, "overrides": {"l2.size_kb": 512}}]}}))
    result = runner.invoke(app, ["regress", str(study / "totals.parquet"), "-r", "cycles", "--order", "1", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["predictors"] == ["ev00", "ev01", "ev02", "ev03"]
    assert {"heap_factor", "l2.size_kb"} <= set(doc["settings"]["id_columns"])
