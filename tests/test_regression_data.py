"""Reading counter-totals tables and choosing/validating response and predictors."""

import numpy as np
import pandas as pd
import pytest

from whatif.models.errors import ModelInputError
from whatif.models.regression.data import prepare, read_counter_totals


def _table(n=12):
    rng = np.random.default_rng(0)
    return pd.DataFrame({
        "workload": [f"w{i % 3}" for i in range(n)], "platform": "mpc7447a", "variant": "base",
        "replicate": np.arange(n) % 5, "heap_kb": 2177 * (1 + np.arange(n) % 4),
        "cycles": rng.uniform(1e9, 2e9, n), "dl1_miss": rng.uniform(1e6, 2e6, n),
        "itlb_miss": rng.uniform(1e3, 2e3, n), "note": [f"run {i}" for i in range(n)],
    })


def test_default_predictors_skip_identifying_and_text_columns():
    prep = prepare(_table(), "cycles")
    assert prep.predictors == ("dl1_miss", "itlb_miss")
    assert prep.X.shape == (12, 2)
    assert prep.warnings == ()


def test_read_csv_and_parquet_round_trip(tmp_path):
    df = _table()
    df.to_csv(tmp_path / "t.csv", index=False)
    df.to_parquet(tmp_path / "t.parquet")
    a = read_counter_totals(tmp_path / "t.csv")
    b = read_counter_totals(tmp_path / "t.parquet")
    assert a.index.name == "line" and a.index[0] == 2
    np.testing.assert_allclose(a["cycles"].to_numpy(), b["cycles"].to_numpy())
    assert prepare(a, "cycles").predictors == prepare(b, "cycles").predictors


def test_unknown_format_and_missing_file(tmp_path):
    (tmp_path / "t.xlsx").write_text("x")
    with pytest.raises(ModelInputError, match="unknown table format"):
        read_counter_totals(tmp_path / "t.xlsx")
    with pytest.raises(ModelInputError, match="no such file"):
        read_counter_totals(tmp_path / "nope.csv")


def test_missing_response_names_it_and_lists_columns():
    with pytest.raises(ModelInputError, match=r"response column 'cycle' not found; columns are: workload"):
        prepare(_table(), "cycle")


def test_non_numeric_cell_names_column_row_and_line(tmp_path):
    df = _table()
    df["dl1_miss"] = df["dl1_miss"].astype(object)
    df.loc[4, "dl1_miss"] = "12x"
    df.to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(ModelInputError) as exc:
        prepare(read_counter_totals(tmp_path / "t.csv"), "cycles")
    assert str(exc.value) == "predictor column 'dl1_miss' has a non-numeric value '12x' at row 5 (line 6)"


def test_nan_cell_names_column_and_row():
    df = _table()
    df.loc[7, "cycles"] = np.nan
    with pytest.raises(ModelInputError, match=r"response column 'cycles' has a missing \(NaN\) value at row 8$"):
        prepare(df, "cycles")
    df = _table()
    df.loc[2, "itlb_miss"] = np.inf
    with pytest.raises(ModelInputError, match="'itlb_miss' has an infinite value .* at row 3"):
        prepare(df, "cycles")


def test_constant_predictor_is_dropped_with_a_warning():
    df = _table()
    df["fpu"] = 0.0
    prep = prepare(df, "cycles")
    assert prep.predictors == ("dl1_miss", "itlb_miss")
    assert prep.dropped_constant == ("fpu",)
    assert prep.warnings == ("predictor 'fpu' is constant (0 in every row); dropped",)


def test_all_constant_and_constant_response_are_errors():
    df = _table()
    df["dl1_miss"] = 1.0
    df["itlb_miss"] = 2.0
    with pytest.raises(ModelInputError, match="every predictor is constant"):
        prepare(df, "cycles")
    df = _table()
    df["cycles"] = 5.0
    with pytest.raises(ModelInputError, match="response column 'cycles' is constant"):
        prepare(df, "cycles")


def test_explicit_predictors_are_checked():
    with pytest.raises(ModelInputError, match="predictor column 'l2_miss' not found"):
        prepare(_table(), "cycles", ["dl1_miss", "l2_miss"])
    with pytest.raises(ModelInputError, match="cannot also be a predictor"):
        prepare(_table(), "cycles", ["cycles"])
    with pytest.raises(ModelInputError, match="non-numeric value 'w0' at row 1"):
        prepare(_table(), "cycles", ["workload"])
    assert prepare(_table(), "cycles", ["heap_kb"]).predictors == ("heap_kb",)
