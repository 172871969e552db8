"""System evaluation (§4.3, Table 9) on hand-made similar sets and run times."""

import pandas as pd
import pytest

from whatif.models.similarity.evaluation import SEED002_TABLE9, direction, evaluate_systems, predict


def _times(rows):
    return pd.DataFrame(rows, columns=["application", "platform", "run_time"])


def test_direction_and_prediction():
    assert direction(1.2) == 1 and direction(0.8) == -1 and direction(1.0) == 0
    assert predict([1.1, 1.5]) == 1
    assert predict([0.9, 0.5]) == -1
    assert predict([1.1, 0.9]) == 0          # mixed: unpredictable
    assert predict([1.0, 1.2]) == 0          # no change is no evidence of a direction
    assert predict([]) == 0


def test_table9_percentages_and_reference():
    # speedups harpertown -> nehalem: a 2.0, b 1.5, c 0.5, d 2.0, y 1.25
    times = _times([("a", "h", 10), ("a", "n", 5), ("b", "h", 9), ("b", "n", 6), ("c", "h", 4), ("c", "n", 8),
                    ("d", "h", 8), ("d", "n", 4), ("y", "h", 10), ("y", "n", 8)])
    similar = {"h": {"a": ["b"],            # b up, a up: correct
                     "b": ["a", "c"],       # mixed: unpredictable
                     "c": ["d"],            # d up, c down: incorrect
                     "d": ["a", "b"]}}      # up, up: correct
    ev = evaluate_systems(similar, times, reference="y", reference_sets={"h": ["c", "a"]},
                          nearest={"h": ["a", "c", "b", "d"]})
    assert [p.key for p in ev.pairs] == ["h->n"]
    p = ev.pairs[0]
    assert (p.n_cases, p.correct_pct, p.incorrect_pct, p.unpredictable_pct) == (4, 50.0, 25.0, 25.0)
    assert p.reference_speedup == 1.25
    assert p.reference_prediction == "unpredictable" and p.reference_direction_correct is None
    assert p.nearest_neighbour == "a" and p.nearest_neighbour_direction_correct is True
    assert p.similar_mean_speedup == pytest.approx((0.5 + 2.0) / 2)
    assert p.suite_mean_speedup == pytest.approx((2.0 + 1.5 + 0.5 + 2.0) / 4)
    assert ev.cases["outcome"].tolist() == ["correct", "unpredictable", "incorrect", "correct"]
    assert ev.table().iloc[0]["% correct"] == 50.0
    assert ev.to_dict()["h->n"]["incorrect_pct"] == 25.0


def test_applications_without_run_times_are_no_evidence():
    times = _times([("a", "h", 2), ("a", "n", 1), ("y", "h", 1), ("y", "n", 2)])
    ev = evaluate_systems({"h": {"a": ["b"]}}, times, reference="y", reference_sets={"h": ["a"]},
                          nearest={"h": ["b", "a"]})
    p = ev.pairs[0]
    assert p.unpredictable_pct == 100.0                    # b has no run times
    assert p.reference_prediction == "up" and p.reference_direction_correct is False   # y slows down
    assert p.nearest_neighbour == "a"                      # b skipped: no run times


def test_reference_without_true_speedup_is_reported_unchecked():
    times = _times([("a", "h", 2), ("a", "n", 1), ("b", "h", 2), ("b", "n", 1), ("y", "h", 3)])
    ev = evaluate_systems({"h": {"a": ["b"], "b": ["a"]}}, times, reference="y", reference_sets={"h": ["a"]})
    p = ev.pairs[0]
    assert p.reference_prediction == "up" and p.reference_speedup is None and p.reference_direction_correct is None
    assert any("true speedup of reference 'y'" in w for w in ev.warnings)


def test_seed_table9_transcribed():
    row = SEED002_TABLE9.set_index("current -> candidate").loc["nehalem -> harpertown"]
    assert (row["% correct"], row["% incorrect"], row["% unpredictable"]) == (50.0, 16.0, 34.0)
    assert len(SEED002_TABLE9) == 6
