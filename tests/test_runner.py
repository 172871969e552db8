"""``whatif run``: the headline table (variants side by side, deltas against the baseline) and the report's
path in the terminal, results.json with ``--json``; ``whatif --version``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from whatif import __version__
from whatif.scenarios.runner import headline_table

from test_cli import SMALL_SCENARIO, invoke


def test_headline_table_puts_variants_side_by_side_with_deltas():
    long = pd.DataFrame({"metric": ["L2 misses", "L2 misses", "CPI", "CPI", "zero", "zero"],
                         "variant": ["base", "big", "base", "big", "base", "big"],
                         "value": [200.0, 150.0, 1.0, 1.1, 0.0, 3.0]})
    wide = headline_table(long)
    assert list(wide.columns) == ["metric", "base", "big", "Δ% big"]
    assert wide["metric"].tolist() == ["L2 misses", "CPI", "zero"]          # the study's order
    assert wide["Δ% big"].iloc[:2].tolist() == [-25.0, 10.000000000000009]
    assert np.isnan(wide["Δ% big"].iloc[2])                                  # no change against nothing


def test_absolute_metrics_get_no_delta():
    """An error in percent, or a speed already normalised to the baseline, changes by nothing meaningful."""
    long = pd.DataFrame({"metric": ["throughput", "throughput", "error (%)", "error (%)"],
                         "variant": ["a", "b", "a", "b"], "value": [100.0, 150.0, -3.0, 6.0]})
    wide = headline_table(long, absolute=("error (%)",))
    assert wide["Δ% b"].iloc[0] == 50.0 and np.isnan(wide["Δ% b"].iloc[1])
    assert wide["b"].tolist() == [150.0, 6.0]


def test_published_figures_sit_beside_the_variants():
    """A seed's real measurement of a figure (fidelity) is a column of its own, not a variant: no Δ% against
    it, and metrics without one show none; with every metric absolute there is no Δ% column at all."""
    long = pd.DataFrame({"metric": ["R2", "R2", "error (%)", "error (%)", "terms", "terms"],
                         "variant": ["a", "b"] * 3, "value": [0.99, 0.98, 2.0, 1.5, 12.0, 30.0],
                         "published": [0.907, 0.907, 12.02, 12.02, np.nan, np.nan]})
    wide = headline_table(long)
    assert list(wide.columns) == ["metric", "a", "b", "seed (published)", "Δ% b"]
    assert wide["seed (published)"].tolist()[:2] == [0.907, 12.02] and np.isnan(wide["seed (published)"].iloc[2])
    only = headline_table(long, absolute=("R2", "error (%)", "terms"))
    assert list(only.columns) == ["metric", "a", "b", "seed (published)"]


def test_run_prints_the_variants_side_by_side_and_the_report_path(tmp_path):
    scenario = tmp_path / "tiny.toml"
    scenario.write_text(SMALL_SCENARIO)
    out = tmp_path / "out"
    result = invoke("run", scenario, "--out", out)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    header = next(line for line in lines if "metric" in line)
    assert header.index("baseline") < header.index("big") < header.index("Δ% big")
    l2 = next(line for line in lines if "L2 misses" in line).split("│")
    doc = json.loads((out / "results.json").read_text())
    base, big = (r["levels"]["L2"]["misses"] for r in doc["runs"])
    assert [c.strip() for c in l2[2:5]] == [f"{base:,}", f"{big:,}", f"{100 * (big - base) / base:.4g}"]
    assert lines[-1] == f"report: {out / 'report.html'}"
    assert "Headline" in (out / "report.html").read_text()


def test_run_json_prints_results_json(tmp_path):
    scenario = tmp_path / "tiny.toml"
    scenario.write_text(SMALL_SCENARIO)
    out = tmp_path / "out"
    result = invoke("run", scenario, "--out", out, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == json.loads((out / "results.json").read_text())
    assert f"report: {out / 'report.html'}" in result.stderr


def test_version():
    result = invoke("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"whatif {__version__}"
