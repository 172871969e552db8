"""Signatures from counter time series equal scipy's pearsonr (1e-12); bad input is reported precisely."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import pearsonr

from whatif.models.errors import ModelInputError
from whatif.models.similarity.io import read_table, run_times_from_table
from whatif.models.similarity.signatures import (select_stall_columns, signatures_from_table,
                                          signatures_from_time_series)

TABLE1 = Path(__file__).parent / "data" / "seed002_table1.csv"
HARPERTOWN = ["RESOURCE_STALLS.LD_ST", "RESOURCE_STALLS.BR_MISS_CLEAR", "RAT_STALLS.ANY",
              "RESOURCE_STALLS.ROB_FULL", "RESOURCE_STALLS.RS_FULL"]
NEHALEM = ["RESOURCE_STALLS.LOAD", "RESOURCE_STALLS.STORE", "RAT_STALLS.ANY", "RESOURCE_STALLS.ROB_FULL",
           "RESOURCE_STALLS.RS_FULL"]


def make_series(rng, apps=("a", "b", "c"), platforms=("harpertown", "nehalem"), n=12):
    rows = []
    for p in platforms:
        stalls = HARPERTOWN if p == "harpertown" else NEHALEM
        for a in apps:
            t = np.arange(n) * 5.0 + 10
            ins = rng.integers(10**8, 10**9, size=n).astype(float)
            cyc = np.round(ins * rng.uniform(0.5, 3.0, size=n))
            block = pd.DataFrame({"workload": a, "platform": p, "t_start": t, "t_end": t + 3,
                                  "CPU_CLK_UNHALTED.REF": cyc, "INST_RETIRED.ANY": ins})
            for s in stalls:
                block[s] = np.round(cyc * rng.uniform(0.01, 0.3, size=n))
            block["dl1_miss"] = rng.integers(0, 1000, size=n)
            rows.append(block)
    return pd.concat(rows, ignore_index=True)


def test_signatures_equal_scipy_pearsonr():
    rng = np.random.default_rng(1)
    df = make_series(rng)
    sigs = signatures_from_time_series(df.sample(frac=1.0, random_state=3))   # row order must not matter
    for p, sset in sigs.platforms.items():
        # a platform's stalls: the columns with values there, in table column order
        assert set(sset.stalls) == set(HARPERTOWN if p == "harpertown" else NEHALEM)
        assert list(sset.stalls) == [c for c in df.columns if c in set(sset.stalls)]
        for i, app in enumerate(sset.applications):
            block = df[(df.platform == p) & (df.workload == app)].sort_values("t_start")
            cpi = block["CPU_CLK_UNHALTED.REF"] / block["INST_RETIRED.ANY"]
            for j, s in enumerate(sset.stalls):
                ratio = block[s] / block["CPU_CLK_UNHALTED.REF"]
                assert abs(sset.values[i, j] - pearsonr(cpi, ratio).statistic) <= 1e-12
        assert sset.n_intervals.tolist() == [12, 12, 12]
    assert sigs.warnings == ()
    assert set(sigs.series.columns) >= {"platform", "application", "t_start", "cpi", "RAT_STALLS.ANY"}


def test_stall_columns_recognised():
    df = pd.DataFrame({"workload": ["a"], "cycles": [1.0], "instructions": [1.0], "heap_kb": [1.0],
                       "my_stall_x": [1.0], "RAT_STALLS.ANY": [1.0], "dl1_miss": [1.0]})
    assert select_stall_columns(df, None, ["workload"], "t") == ["my_stall_x", "RAT_STALLS.ANY"]
    no_named = df.drop(columns=["my_stall_x", "RAT_STALLS.ANY"])
    assert select_stall_columns(no_named, None, ["workload"], "t") == ["heap_kb", "dl1_miss"]
    assert select_stall_columns(df, ["dl1_miss", "heap_kb"], ["workload"], "t") == ["dl1_miss", "heap_kb"]
    with pytest.raises(ModelInputError, match="stall column 'nope' not found"):
        select_stall_columns(df, ["nope", "heap_kb"], ["workload"], "t")


def test_constant_stall_series_is_zero_with_a_warning_naming_it():
    rng = np.random.default_rng(2)
    df = make_series(rng, platforms=("nehalem",))
    df.loc[df.workload == "b", "RESOURCE_STALLS.STORE"] = df.loc[df.workload == "b", "CPU_CLK_UNHALTED.REF"] * 0.25
    sigs = signatures_from_time_series(df)
    sset = sigs.platforms["nehalem"]
    assert sset.values[1, 1] == 0.0 and sset.values[0, 1] != 0.0
    assert len(sigs.warnings) == 1
    w = sigs.warnings[0]
    assert "'b'" in w and "'nehalem'" in w and "RESOURCE_STALLS.STORE" in w and "set to 0" in w
    with pytest.raises(ModelInputError, match="application 'b' on platform 'nehalem'.*RESOURCE_STALLS.STORE"):
        signatures_from_time_series(df, on_constant="error")


def test_constant_cpi_zeroes_the_whole_signature():
    rng = np.random.default_rng(3)
    df = make_series(rng, platforms=("nehalem",))
    sel = df.workload == "c"
    df.loc[sel, "CPU_CLK_UNHALTED.REF"] = 2 * df.loc[sel, "INST_RETIRED.ANY"]
    sigs = signatures_from_time_series(df)
    assert np.all(sigs.platforms["nehalem"].values[2] == 0.0)
    assert len(sigs.warnings) == 1 and "CPI series is constant" in sigs.warnings[0]


def test_fewer_than_three_intervals():
    rng = np.random.default_rng(4)
    df = make_series(rng, platforms=("nehalem",))
    df = df[~((df.workload == "b") & (df.t_start > 15))]
    with pytest.raises(ModelInputError, match="application 'b' on platform 'nehalem' has 2 sampling interval"):
        signatures_from_time_series(df)


def test_mismatched_stall_sets():
    rng = np.random.default_rng(5)
    df = make_series(rng, platforms=("nehalem",))
    df.loc[df.workload == "c", "RESOURCE_STALLS.ROB_FULL"] = np.nan
    with pytest.raises(ModelInputError, match="mismatched stall sets on platform 'nehalem': application 'c' has "
                                              "no 'RESOURCE_STALLS.ROB_FULL' values"):
        signatures_from_time_series(df)


def test_gap_in_a_series_names_the_row():
    rng = np.random.default_rng(6)
    df = make_series(rng, platforms=("nehalem",))
    df.loc[5, "RAT_STALLS.ANY"] = np.nan
    with pytest.raises(ModelInputError, match="line 7: missing value in stall column 'RAT_STALLS.ANY'"):
        signatures_from_time_series(df, source="x.csv", csv_lines=True)


def test_non_positive_cycles():
    rng = np.random.default_rng(7)
    df = make_series(rng, platforms=("nehalem",))
    df.loc[3, "CPU_CLK_UNHALTED.REF"] = 0
    with pytest.raises(ModelInputError, match="row 3: column 'CPU_CLK_UNHALTED.REF' must be a positive number"):
        signatures_from_time_series(df)


def test_missing_cycles_column():
    df = pd.DataFrame({"workload": ["a"], "instructions": [1.0], "RAT_STALLS.ANY": [1.0], "X_STALLS": [1.0]})
    with pytest.raises(ModelInputError, match="no cycles column"):
        signatures_from_time_series(df)


def test_seed002_table1_fixture():
    df, csv_lines = read_table(TABLE1)
    assert csv_lines
    sigs = signatures_from_table(df, source=str(TABLE1), csv_lines=True)
    assert list(sigs.platforms) == ["harpertown", "nehalem", "westmere"]
    assert list(sigs.platforms["harpertown"].stalls) == HARPERTOWN
    assert list(sigs.platforms["westmere"].stalls) == NEHALEM
    h = sigs.platforms["harpertown"]
    assert len(h.applications) == 12
    assert h.values[h.applications.index("473.astar")].tolist() == [0.94, 0.96, 0.80, -0.24, -0.88]
    w = sigs.platforms["westmere"]
    assert w.values[w.applications.index("471.omnetpp")].tolist() == [0.21, 0.18, 0.21, 0.31, 0.31]


def test_signature_table_errors():
    df, _ = read_table(TABLE1)
    bad = df.copy()
    bad.loc[2, "RAT_STALLS.ANY"] = 1.5
    with pytest.raises(ModelInputError, match="t1.csv line 4: column 'RAT_STALLS.ANY' must be a correlation"):
        signatures_from_table(bad, source="t1.csv", csv_lines=True)
    dup = pd.concat([df, df.iloc[[0]]], ignore_index=True)
    with pytest.raises(ModelInputError, match="'400.perlbench' appears twice on platform 'harpertown'"):
        signatures_from_table(dup)
    with pytest.raises(ModelInputError, match="platform 'sandybridge' not in the table"):
        signatures_from_table(df, platforms=["sandybridge"])


def test_read_table_errors(tmp_path):
    with pytest.raises(ModelInputError, match="unknown table format '.txt'"):
        read_table(tmp_path / "x.txt")
    with pytest.raises(ModelInputError, match="no such file"):
        read_table(tmp_path / "x.csv")
    (tmp_path / "e.csv").write_text("")
    with pytest.raises(ModelInputError, match="cannot read csv table"):
        read_table(tmp_path / "e.csv")
    df = pd.DataFrame({"application": ["a"], "platform": ["p"], "run_time": [2.0]})
    df.to_parquet(tmp_path / "r.parquet")
    out, csv_lines = read_table(tmp_path / "r.parquet")
    assert not csv_lines and out["run_time"].tolist() == [2.0]


def test_run_times_table():
    df = pd.DataFrame({"workload": ["a", "a", "b"], "platform": ["p", "p", "p"], "run_time_s": [1.0, 3.0, 2.0]})
    out = run_times_from_table(df)
    assert out.to_dict("list") == {"application": ["a", "b"], "platform": ["p", "p"], "run_time": [2.0, 2.0]}
    with pytest.raises(ModelInputError, match="line 3: column 'run_time_s' must be a positive time"):
        run_times_from_table(df.assign(run_time_s=[1.0, -1.0, 2.0]), csv_lines=True)
    with pytest.raises(ModelInputError, match="missing column run_time/run_time_s"):
        run_times_from_table(df.drop(columns=["run_time_s"]))
