"""The engine end to end: seed 002's Table 1, parameters, JSON document, reference handling, plots."""

import dataclasses
import inspect
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from whatif.models.errors import ModelInputError
from whatif.models.similarity import SimilarityEngine, SimilarityWarning, signatures_from_arrays
from whatif.models.similarity import results as results_mod

TABLE1 = Path(__file__).parent / "data" / "seed002_table1.csv"
APPS = ["400.perlbench", "483.xalancbmk", "403.gcc", "429.mcf", "401.bzip2", "445.gobmk", "456.hmmer",
        "458.sjeng", "462.libquantum", "464.h264ref", "471.omnetpp", "473.astar"]
# seed 002, Table 5 (Harpertown), lower triangle as printed
TABLE5 = [[], [-0.8], [-0.1, -0.1], [0.7, -0.2, -0.4], [0.3, -0.3, 0.6, 0.3], [0.1, 0.1, -1, 0.4, -0.6],
          [-0.5, 0.1, 0.2, -0.4, 0.4, -0.2], [0, 0.3, -0.9, 0.3, -0.8, 0.9, -0.5],
          [0.1, 0.1, -0.7, 0.6, 0.1, 0.7, 0.3, 0.4], [0.3, 0.3, -0.6, 0.8, -0.2, 0.6, -0.6, 0.7, 0.5],
          [0.2, 0.2, -0.5, 0.8, 0.3, 0.5, 0.1, 0.3, 0.9, 0.7], [0.7, -0.2, -0.4, 1, 0.3, 0.4, -0.4, 0.3, 0.6, 0.8, 0.8]]


@pytest.fixture(scope="module")
def table1_results():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SimilarityWarning)
        return SimilarityEngine(reference="473.astar").fit_signatures(pd.read_csv(TABLE1))


def test_runs_on_seed002_table1(table1_results):
    res = table1_results
    assert list(res.platforms) == ["harpertown", "nehalem", "westmere"]
    for p in res.platforms.values():
        assert list(p.applications) == APPS
        assert len(p.tree.a) == 11
        assert sorted(a for c in p.clusters for a in c) == sorted(APPS)
        assert "473.astar" in p.reference_cluster and len(p.reference_cluster) >= 2
        assert set(p.kmeans) == {3, 5}
    h = res["harpertown"]
    assert ["483.xalancbmk"] in h.clusters and ["445.gobmk", "458.sjeng"] in h.clusters
    assert h.reference_cluster == ["429.mcf", "473.astar"]      # identical rank vectors: rho = 1


def test_table5_agrees_where_table1_is_unambiguous(table1_results):
    """Table 5 was computed from unrounded signatures: pairs whose Table 1 rows have tied (rounded) components
    (464.h264ref, 471.omnetpp) differ, and so does every pair with 483.xalancbmk; every other pair matches."""
    sim = table1_results["harpertown"].similarity
    ties = {"464.h264ref", "471.omnetpp"}
    checked = 0
    for i, row in enumerate(TABLE5):
        for j, v in enumerate(row):
            if {APPS[i], APPS[j]} & (ties | {"483.xalancbmk"}):
                continue
            assert round(sim[i, j], 1) == pytest.approx(v, abs=1e-9), (APPS[i], APPS[j])
            checked += 1
    assert checked == 36


def test_rank_vectors_in_the_document(table1_results):
    doc = table1_results.to_dict()
    h = doc["platforms"]["harpertown"]
    assert h["rank_vectors"]["483.xalancbmk"] == [4, 2, 1, 3, 5]
    assert h["rank_vectors"]["471.omnetpp"] == [5, 3.5, 3.5, 1.5, 1.5]
    assert set(h) >= {"signatures", "similarity", "mst", "clusters", "reference_cluster", "cut_steps", "kmeans"}
    assert h["signatures"]["473.astar"]["RESOURCE_STALLS.RS_FULL"] == -0.88
    assert h["similarity"]["429.mcf"]["473.astar"] == 1.0
    assert all(len(e) == 3 for e in h["mst"])
    assert doc["platforms"]["westmere"]["reference_cluster"] == table1_results["westmere"].reference_cluster


def test_matrix_left_out_above_the_limit(table1_results, monkeypatch):
    monkeypatch.setattr(results_mod, "MATRIX_LIMIT", 5)
    assert "similarity" not in table1_results.to_dict()["platforms"]["nehalem"]
    assert "similarity" in table1_results.to_dict(matrix=True)["platforms"]["nehalem"]
    assert "mst" in table1_results.to_dict()["platforms"]["nehalem"]


def test_every_parameter_is_constrained():
    params = [p for p in inspect.signature(SimilarityEngine.__init__).parameters if p != "self"]
    constraints = SimilarityEngine._parameter_constraints
    assert sorted(params) == sorted(constraints)
    defaults = SimilarityEngine()
    for name, constraint in constraints.items():
        assert constraint.check(getattr(defaults, name)), name


@pytest.mark.parametrize("g", [0, 2, -0.5, 2.5, float("nan"), "0.5", True])
def test_threshold_outside_open_interval(g):
    with pytest.raises(ModelInputError, match=r"The 'threshold' parameter of SimilarityEngine must be a number in "
                                              r"the open interval \(0, 2\)\. Got .* instead\."):
        SimilarityEngine(threshold=g).fit_signatures(pd.read_csv(TABLE1))


@pytest.mark.parametrize("name,value", [("method", "pearson"), ("stop_rule", "tree"), ("kmeans", (1,)),
                                        ("seed", -1), ("on_constant", "ignore"), ("reference", "")])
def test_other_constraints(name, value):
    with pytest.raises(ModelInputError, match=f"The '{name}' parameter of SimilarityEngine must be"):
        SimilarityEngine(**{name: value}).fit_signatures(pd.read_csv(TABLE1))


def test_reference_missing_from_the_table():
    with pytest.raises(ModelInputError, match="reference application 'yahoo_y' is not in the table"):
        SimilarityEngine(reference="yahoo_y").fit_signatures(pd.read_csv(TABLE1))


def test_reference_missing_on_one_platform_is_a_warning():
    df = pd.read_csv(TABLE1)
    df = df[~((df.application == "473.astar") & (df.platform == "nehalem"))]
    with pytest.warns(SimilarityWarning, match="'473.astar' has no data on platform 'nehalem'"):
        res = SimilarityEngine(reference="473.astar", kmeans=()).fit_signatures(df)
    assert res["nehalem"].reference_cluster is None and res["westmere"].reference_cluster is not None


def test_results_are_immutable(table1_results):
    with pytest.raises(dataclasses.FrozenInstanceError):
        table1_results["harpertown"].threshold = 1.0
    with pytest.raises(ValueError):
        table1_results["harpertown"].signatures[0, 0] = 0.0


def test_kendall_option_and_stop_rules():
    df = pd.read_csv(TABLE1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SimilarityWarning)
        k = SimilarityEngine(method="kendall", kmeans=()).fit_signatures(df)["harpertown"]
        graph = SimilarityEngine(threshold=1.0, kmeans=()).fit_signatures(df)["harpertown"]
        mst = SimilarityEngine(threshold=1.0, stop_rule="mst", kmeans=()).fit_signatures(df)["harpertown"]
    assert k.similarity[3, 11] == pytest.approx(1.0, abs=1e-12) and k.method == "kendall"
    # the MST rule only looks at tree edges (all < 1 here): one cluster; the graph rule splits on rho <= 0
    assert len(mst.clusters) == 1 and len(graph.clusters) == 4


def test_dedup_gives_the_same_clusters_as_the_plain_path():
    rng = np.random.default_rng(8)
    sig = np.round(rng.uniform(-1, 1, size=(300, 5)), 1)
    apps = [f"x{i}" for i in range(300)]
    data = signatures_from_arrays({"p": (apps, ["s1", "s2", "s3", "s4", "s5"], sig)})
    for g in (0.3, 1.2):
        a = SimilarityEngine(threshold=g, kmeans=(), reference="x7").fit_signatures(data)["p"]
        b = SimilarityEngine(threshold=g, kmeans=(), reference="x7", dedup=False).fit_signatures(data)["p"]
        assert a.clusters == b.clusters and a.reference_cluster == b.reference_cluster
        assert np.isclose(a.tree.total_weight, b.tree.total_weight, atol=1e-9)


def test_time_series_and_system_evaluation_end_to_end():
    rng = np.random.default_rng(9)
    planted = {"a1": [0.9, 0.5, 0.1, -0.3, -0.7], "a2": [0.85, 0.45, 0.05, -0.35, -0.75],
               "b1": [-0.7, -0.3, 0.1, 0.5, 0.9], "b2": [-0.75, -0.35, 0.05, 0.45, 0.85],
               "ref": [0.8, 0.4, 0.0, -0.4, -0.8]}
    rows = []
    for app, r in planted.items():
        t = np.arange(30) * 5.0
        cpi = 1 + rng.gamma(2, 0.2, 30)
        z = (cpi - cpi.mean()) / cpi.std()
        block = {"workload": app, "platform": "old", "t_start": t, "t_end": t + 3, "instructions": 1e9,
                 "cycles": cpi * 1e9}
        for j, rho in enumerate(r):
            y = rho * z + np.sqrt(1 - rho ** 2) * 0.2 * rng.normal(size=30)
            block[f"STALL_{j}"] = (0.2 + 0.02 * y) * cpi * 1e9
        rows.append(pd.DataFrame(block))
    df = pd.concat(rows, ignore_index=True)
    times = pd.DataFrame({"application": list(planted) * 2, "platform": ["old"] * 5 + ["new"] * 5,
                          "run_time": [10, 10, 10, 10, 10, 8, 7, 12, 13, 9]})
    res = SimilarityEngine(threshold=0.5, reference="ref", kmeans=(2,)).fit(df, run_times=times)
    p = res["old"]
    assert sorted(map(sorted, p.clusters)) == [["a1", "a2", "ref"], ["b1", "b2"]]
    assert p.reference_cluster == ["a1", "a2", "ref"]
    pair = res.system_evaluation.pairs[0]
    assert pair.key == "old->new"
    # a1/a2 speed up together, b1/b2 slow down together: every benchmark's prediction is right
    assert (pair.correct_pct, pair.incorrect_pct, pair.unpredictable_pct) == (100.0, 0.0, 0.0)
    assert pair.reference_prediction == "up" and pair.reference_direction_correct is True
    assert pair.similar_mean_speedup == pytest.approx((10 / 8 + 10 / 7) / 2)
    doc = res.to_dict()
    assert doc["system_evaluation"]["old->new"]["reference_direction_correct"] is True
    assert p.n_intervals.tolist() == [30] * 5
    fig = res.plot_time_series("ref")
    assert len(fig.axes) == 2
    plt.close(fig)


def test_plots_and_summary(table1_results):
    p = table1_results["westmere"]
    for fig in (p.plot_signatures(), p.plot_similarity(), p.plot_mst(), p.plot_cut_steps(), p.plot_dendrogram()):
        assert isinstance(fig, plt.Figure) and fig.axes
        plt.close(fig)
    text = str(table1_results.summary())
    assert "Algorithm 2, cluster of 473.astar" in text and "platform westmere" in text
    t8 = table1_results.kmeans_table()
    assert t8["method"].tolist() == ["Algorithm 2", "3-means", "5-means"]
    assert "473.astar" in t8.loc[0, "harpertown"]


def test_linkage_matrix_is_valid_for_scipy(table1_results):
    from scipy.cluster.hierarchy import is_valid_linkage

    from whatif.models.similarity.plots import linkage_matrix

    z = linkage_matrix(table1_results["nehalem"].hierarchy)
    assert is_valid_linkage(z) and len(z) == 11
    assert z[-1, 3] == 12 and z[-1, 2] == table1_results["nehalem"].clustering.steps[0].weight


def test_too_few_applications():
    data = signatures_from_arrays({"p": (["a"], ["s1", "s2"], np.array([[0.1, 0.2]]))})
    with pytest.raises(ModelInputError, match="platform 'p' has 1 application"):
        SimilarityEngine().fit_signatures(data)
