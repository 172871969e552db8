"""The seeds' published tables shipped as data (models/*/data/seed00N.toml): every file loads, agrees with the
other transcriptions in the repository, and a format this whatif does not read is refused."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from whatif.models.regression import seed000
from whatif.models.seed_data import load_seed_data
from whatif.models.similarity import seed002
from whatif.scenarios.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]


def test_seed002_table1_is_the_csv_transcription():
    csv = pd.read_csv(ROOT / "tests" / "data" / "seed002_table1.csv")
    for platform in seed002.PLATFORMS:
        mine = seed002.signatures(platform)
        theirs = csv[csv["platform"] == platform].set_index("application")[list(seed002.STALLS[platform])]
        assert theirs.loc[list(seed002.APPS)].to_numpy().tolist() == mine.to_numpy().tolist()


def test_seed002_tables_and_sensitivity():
    assert seed002.TABLE1["462.libquantum"][:5] == (0.99, 0.08, 0.38, -0.93, -0.75)
    for platform in seed002.PLATFORMS:
        m = seed002.similarity(platform)
        assert (m.to_numpy() == m.to_numpy().T).all() and (m.to_numpy().diagonal() == 1).all()
    assert seed002.TABLE9.set_index("current -> candidate").loc["nehalem -> harpertown"].tolist() == [50, 16, 34]
    assert seed002.MEAN_IMPROVEMENT_PCT["harpertown->westmere"] == {"similar to Y": 39.0, "suite": 33.0}
    s = seed002.SENSITIVITY
    assert s["settings"] == [(3, 5), (5, 10), (30, 60)] and s["mean_cpi_change_pct"] == [6, 9]
    assert s["printed_ratios_pct"] == [60, 50, 20] and s["delay_s"] == 10
    assert seed002.SOURCE.startswith("seed 002 (Cammarota et al.), Tables 1, 4, 5-9")


def test_seed000_tables_cover_the_regression_study():
    scenario, _ = load_scenario(ROOT / "scenarios" / "java-7447a-regression.toml")
    assert sorted(seed000.TABLE_III_KB) == sorted(w.rpartition("/")[2] for w in scenario.workloads)
    assert seed000.TABLE_III_KB["mtrt"] == 6145 and min(seed000.TABLE_III_KB.values()) == seed000.JVM_FLOOR_KB
    assert seed000.TABLE_IV["I"] == {"r2": 0.907, "f_test": "reject", "cv_error_pct": 12.02, "cv_error_spread": 32.34}
    assert seed000.TABLE_IV["II_pruned"]["f_test"] == "accept" and seed000.MEASUREMENT_CI95_PCT == 1.53


def test_an_unknown_format_is_refused(tmp_path):
    bad = tmp_path / "seed009.toml"
    bad.write_text('schema_version = 2\nsource = "x"\n')
    with pytest.raises(ValueError, match=r"seed009.toml: schema_version 2 is not supported \(this whatif reads version 1\)"):
        load_seed_data(bad, 1)
