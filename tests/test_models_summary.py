"""One summary protocol (models/summary.py) and tables()/figures() on every engine's results."""

from __future__ import annotations

import html
import json
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from tests.hbench_helpers import microbench, profile_tables  # noqa: E402
from whatif.models.flowgsp import EFG, FlowGSP, FlowGSPResults  # noqa: E402
from whatif.models.flowgsp.results import GenerationStats, SequenceSupport  # noqa: E402
from whatif.models.hbench import AppProfile, GcCostModel  # noqa: E402
from whatif.models.hbench.vector_files import read_vectors, seed_vectors  # noqa: E402
from whatif.models.hbench.vectors import VectorModel  # noqa: E402
from whatif.models.regression import ModelInputWarning, RegressionStudy  # noqa: E402
from whatif.models.similarity import SimilarityEngine, SimilarityWarning  # noqa: E402
from whatif.models.summary import Summary  # noqa: E402

TABLE1 = Path(__file__).parent / "data" / "seed002_table1.csv"


def small_efg() -> EFG:
    return EFG.from_methods([{"name": "m", "vertices": [{"id": 0, "weight": 1, "attributes": ["A"]},
                                                        {"id": 1, "weight": 0, "attributes": ["B"]},
                                                        {"id": 2, "weight": 3, "attributes": ["C", "A"]}],
                              "edges": [[0, 1, 2], [1, 2, 2], [0, 2, 1]]}])


def counter_table(n: int = 60, seed: int = 4) -> pd.DataFrame:
    """cycles = planted main effects and one interaction of three counters, plus noise."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(1, 10, size=(n, 3))
    cycles = 1000 + 50 * x[:, 0] + 30 * x[:, 1] + 8 * x[:, 0] * x[:, 1] + rng.normal(0, 5, n)
    return pd.DataFrame({"cycles": cycles, "l1_miss": x[:, 0], "tlb_miss": x[:, 1], "branch": x[:, 2]})


@pytest.fixture(scope="module")
def results() -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelInputWarning)
        warnings.simplefilter("ignore", SimilarityWarning)
        regression = RegressionStudy(folds=5, seed=1).fit(counter_table(), response="cycles")
        similarity = SimilarityEngine(reference="473.astar", kmeans=(3,)).fit_signatures(pd.read_csv(TABLE1))
    flowgsp = FlowGSP(n_generations=2, min_support=0.3, min_diff_support=1.0, workers=1).fit(small_efg())
    costs = GcCostModel(copy_bandwidth=1e8).fit(microbench())
    log, hist = profile_tables(explicit=(1,), copied=(1,))
    prediction = costs.predict(AppProfile.from_tables(log, hist, name="app"))
    vectors = read_vectors(seed_vectors("os"), seed_vectors("os"))
    vector = VectorModel().fit(vectors.systems, vectors.applications)
    return {"regression": regression, "similarity": similarity, "flowgsp": flowgsp, "costs": costs,
            "prediction": prediction, "vectors": vector}


ENGINES = ["regression", "similarity", "flowgsp", "costs", "prediction", "vectors"]


@pytest.mark.parametrize("engine", ENGINES)
def test_summary_is_the_one_summary(results, engine):
    s = results[engine].summary()
    assert type(s) is Summary
    assert s.title and s.as_text() and s.as_text() == str(s) == s.text
    assert s.tables and all(isinstance(df, pd.DataFrame) for df in s.tables.values())
    with pytest.raises(TypeError):
        s.tables["x"] = pd.DataFrame()                              # read-only mapping


@pytest.mark.parametrize("engine", ENGINES)
def test_as_html_escapes_the_text_and_holds_every_table(results, engine):
    s = results[engine].summary()
    page = s.as_html()
    assert f"<pre>{html.escape(s.text)}</pre>" in page
    assert page.count('<div class="scroll"><table') == len(s.tables)
    for name, df in s.tables.items():
        assert f"<b>{html.escape(name)}</b>" in page
        for col in df.columns:
            assert html.escape(str(col)) in page


@pytest.mark.parametrize("engine", ENGINES)
def test_to_dict_is_json(results, engine):
    s = results[engine].summary()
    doc = json.loads(json.dumps(s.to_dict(), allow_nan=False))
    assert doc["title"] == s.title and doc["text"] == s.text
    assert list(doc["tables"]) == list(s.tables)
    for name, df in s.tables.items():
        assert len(doc["tables"][name]) == len(df)


@pytest.mark.parametrize("engine", ENGINES)
def test_tables_and_figures(results, engine):
    res = results[engine]
    tables = res.tables()
    assert tables and all(isinstance(df, pd.DataFrame) for df in tables.values())
    open_before = set(plt.get_fignums())
    figures = res.figures()
    assert figures and all(callable(f) for f in figures.values())
    assert set(plt.get_fignums()) == open_before                      # nothing drawn until asked
    for name, draw in figures.items():
        fig = draw()
        assert isinstance(fig, plt.Figure) and fig.axes, name
        plt.close(fig)


def test_table_iv_keeps_its_row_labels_in_html_and_json(results):
    s = results["regression"].summary()
    assert "<th>R²</th>" in s.as_html()
    assert s.to_dict()["tables"]["table_iv"][0]["diagnostic"] == "R²"


def test_flowgsp_summary_text_is_unchanged():
    efg_res = FlowGSP(n_generations=2, min_support=0.3, min_diff_support=1.0, workers=1).fit(small_efg())
    res = FlowGSPResults(sequences=efg_res.sequences, parameters=efg_res.parameters, graph=efg_res.graph,
                         generations=tuple(GenerationStats(g.n, g.candidates, g.kept, 0.01)
                                           for g in efg_res.generations), seconds=1.5)
    assert res.summary(top=3).as_text() == (
        "graph       1 methods, 3 vertices, 3 edges, 3 attributes\n"
        "parameters  g_max=0 w_max=0 n_gen=2 S_M>=0.3 or S_D>=1.0\n"
        "kept        7 sequences of 15 candidates in 2 generations, 1.50 s\n"
        "shown       top 3 by S_M\n"
        "\n"
        "sequence  items  elements      sf      sw      sm      sd\n"
        "   <(A)>      1         1 1.20000 1.00000 1.20000 0.20000\n"
        "<(A, C)>      2         1 0.60000 0.75000 0.75000 0.15000\n"
        "   <(C)>      1         1 0.60000 0.75000 0.75000 0.15000\n"
        "\n"
        " n  candidates  kept  seconds\n"
        " 1           3     3    0.010\n"
        " 2          12     4    0.010")


def test_cost_summary_text_is_unchanged(results):
    lines = str(results["costs"].summary()).splitlines()
    assert lines[:6] == [
        "HBench:JGC cost functions (seed 003 Table 5-4 layout)",
        "  C_fixed(h) = 0.2 ms + 3.75 ms/MB x h   (R^2 1.0000, 3 points)",
        "  C_ref = 0.005 us per further reference field",
        "  C_visit = 0.003 us per further incoming reference",
        "  copy bandwidth = 95.37 MB/s",
        " object_size  c_fixed_ms_per_mb  c_live_ms_per_object  c_dead_ms_per_object"]
    assert lines[6] == "          12          3.750e+00             7.720e-04             3.480e-04"
    assert len(lines) == 6 + 16


def test_empty_flowgsp_results_summary():
    empty = FlowGSPResults(sequences=(), generations=(GenerationStats(1, 4, 0, 0.01),))
    s = empty.summary()
    assert "(no sequence met the thresholds)" in s.as_text()
    assert json.dumps(s.to_dict(), allow_nan=False)
    one = FlowGSPResults(sequences=(SequenceSupport((("A",),), 0.5, float("nan"), 1),), generations=())
    assert one.summary().to_dict()["tables"]["sequences"][0]["sw"] is None      # NaN -> null
