"""FlowGSPResults: the --json document, ordering, summary, tables, plots, immutability."""

import json

import matplotlib

matplotlib.use("Agg")
import pytest

from whatif.models.flowgsp import EFG, FlowGSP, FlowGSPResults
from whatif.models.flowgsp.results import GenerationStats, SequenceSupport


def small():
    return EFG.from_methods([{"name": "m", "vertices": [{"id": 0, "weight": 1, "attributes": ["A"]},
                                                        {"id": 1, "weight": 0, "attributes": ["B"]},
                                                        {"id": 2, "weight": 3, "attributes": ["C", "A"]}],
                              "edges": [[0, 1, 2], [1, 2, 2], [0, 2, 1]]}])


def test_results_document_summary_and_plots():
    res = FlowGSP(n_generations=2, min_support=0.3, min_diff_support=1.0, workers=1).fit(small())
    assert isinstance(res, FlowGSPResults)
    doc = res.to_dict(top=2)
    assert set(doc) == {"sequences", "generations"}
    assert doc["sequences"][0] == {"sequence": [["A"]], "sf": pytest.approx(1.2), "sw": 1.0,
                                   "sm": pytest.approx(1.2), "sd": pytest.approx(0.2)}
    assert len(doc["sequences"]) == 2 and set(doc["generations"][0]) == {"n", "candidates", "kept", "seconds"}
    json.dumps(doc)
    text = res.summary(top=3).as_text()
    assert "g_max=0 w_max=0" in text and "<(A)>" in text
    assert list(res.table().columns) == ["sequence", "items", "elements", "sf", "sw", "sm", "sd"]
    assert res.plot_supports().axes and res.plot_generations().axes
    with pytest.raises(AttributeError):
        res.sequences = ()
    with pytest.raises(TypeError):
        res.parameters["gap"] = 3


def test_sequence_support_derived_values():
    s = SequenceSupport(elements=(("A",), ("B", "C")), sf=0.2, sw=0.5, generation=3)
    assert s.sm == 0.5 and s.sd == pytest.approx(0.3) and s.text == "<(A), (B, C)>"
    assert s.as_dict() == {"sequence": [["A"], ["B", "C"]], "sf": 0.2, "sw": 0.5, "sm": 0.5, "sd": pytest.approx(0.3)}
    empty = FlowGSPResults(sequences=(), generations=(GenerationStats(1, 4, 0, 0.01),))
    assert "(no sequence met the thresholds)" in empty.summary().as_text()
    assert empty.plot_supports().axes
