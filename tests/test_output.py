"""Results directories are written atomically: complete on success, absent on failure."""

import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
import pytest

from whatif.scenarios.output import ResultsWriter, atomic_write_text, to_json
from whatif.scenarios.report import Report


def test_results_dir_appears_only_on_success(tmp_path):
    out = tmp_path / "res"
    with ResultsWriter(out, csv=True) as w:
        w.table("totals", pd.DataFrame({"a": [1, 2], "b": [0.5, 1.5]}))
        w.json("results.json", {"x": 1})
        assert not out.exists()  # still staged
    assert sorted(p.name for p in out.iterdir()) == ["results.json", "totals.csv", "totals.parquet"]
    assert pd.read_parquet(out / "totals.parquet")["b"].tolist() == [0.5, 1.5]
    assert w.files == ["totals.parquet", "totals.csv", "results.json"]


def test_failed_run_leaves_nothing_and_keeps_previous(tmp_path):
    out = tmp_path / "res"
    with ResultsWriter(out) as w:
        w.json("results.json", {"run": 1})
    with pytest.raises(RuntimeError):
        with ResultsWriter(out) as w:
            w.json("results.json", {"run": 2})
            raise RuntimeError("interrupted")
    assert json.loads((out / "results.json").read_text()) == {"run": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["res"]  # no staging leftovers


def test_atomic_write_replaces_whole_file(tmp_path):
    target = tmp_path / "f.txt"
    atomic_write_text(target, "old content that is long")
    atomic_write_text(target, "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_to_json_converts_numpy():
    import numpy as np

    assert json.loads(to_json({"a": np.int64(3), "b": np.float32(0.5), "c": np.arange(3)})) == \
        {"a": 3, "b": 0.5, "c": [0, 1, 2]}


def test_report_is_self_contained():
    fig, ax = plt.subplots()
    ax.plot([1, 2], [3, 4])
    rep = Report("t").heading("h").paragraph("p <b>").table(pd.DataFrame({"x": [1.0]}), caption="c").figure(fig, "f")
    text = rep.html()
    assert "data:image/png;base64," in text
    assert "p &lt;b&gt;" in text
    assert "src=\"http" not in text
