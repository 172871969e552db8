"""The FlowGSP engine: parameters, generations, thresholds, results object."""

import pytest

from whatif.models.errors import ModelInputError
from whatif.models.flowgsp import EFG, FlowGSP


def small():
    # A -> B -> C chain twice as frequent as the A -> C shortcut; weights on A and C
    return EFG.from_methods([{"name": "m", "vertices": [{"id": 0, "weight": 1, "attributes": ["A"]},
                                                        {"id": 1, "weight": 0, "attributes": ["B"]},
                                                        {"id": 2, "weight": 3, "attributes": ["C", "A"]}],
                              "edges": [[0, 1, 2], [1, 2, 2], [0, 2, 1]]}])


def test_every_parameter_has_a_constraint():
    import inspect

    params = [p for p in inspect.signature(FlowGSP.__init__).parameters if p != "self"]
    assert sorted(params) == sorted(FlowGSP._parameter_constraints)


@pytest.mark.parametrize("kwargs, message", [
    ({"min_support": 1.5}, "The 'min_support' parameter of FlowGSP must be a number in [0, 1]. Got 1.5 instead."),
    ({"min_diff_support": -0.1}, "The 'min_diff_support' parameter of FlowGSP must be a number in [0, 1]."),
    ({"gap": -1}, "The 'gap' parameter of FlowGSP must be an integer in [0, 16]. Got -1 instead."),
    ({"window": 1.0}, "The 'window' parameter of FlowGSP must be an integer in [0, 16]."),
    ({"n_generations": 0}, "The 'n_generations' parameter of FlowGSP must be an integer in [1, 64]."),
    ({"workers": 0}, "The 'workers' parameter of FlowGSP must be None or an integer >= 1."),
    ({"cluster": "localhost"}, "The 'cluster' parameter of FlowGSP must be None or a Dask scheduler address"),
])
def test_bad_parameters(kwargs, message):
    with pytest.raises(ModelInputError) as info:
        FlowGSP(**kwargs).fit(small())
    assert str(info.value).startswith(message)


def test_generations_thresholds_and_order():
    res = FlowGSP(n_generations=3, min_support=0.3, min_diff_support=1.0, workers=1).fit(small())
    # F = 2/5, 2/5, 1/5; W = 1/4, 0, 3/4; S_f(v0) = 3/5 (out-edges), S_f(v1) = 2/5, S_f(v2) = 3/5
    by_text = {s.text: s for s in res.sequences}
    assert by_text["<(A)>"].sf == pytest.approx(3 / 5 + 3 / 5) and by_text["<(A)>"].sw == pytest.approx(1.0)
    assert by_text["<(C)>"].sf == pytest.approx(3 / 5) and by_text["<(C)>"].sw == pytest.approx(3 / 4)
    assert by_text["<(A, C)>"].sm == pytest.approx(3 / 4)
    assert "<(B)>" in by_text and by_text["<(B)>"].sm == pytest.approx(2 / 5)
    assert "<(A), (B)>" in by_text and by_text["<(A), (B)>"].sf == pytest.approx(2 / 5)
    sms = [s.sm for s in res.sequences]
    assert sms == sorted(sms, reverse=True)
    assert [g.n for g in res.generations] == [1, 2, 3]
    assert res.generations[0].candidates == 3 and res.generations[0].kept == 3
    assert all(s.sm >= 0.3 for s in res.sequences)


def test_stops_at_an_empty_generation_and_respects_n_gen():
    res = FlowGSP(n_generations=10, min_support=0.7, min_diff_support=1.0, workers=1).fit(small())
    assert res.generations[-1].kept == 0 or len(res.generations) < 10
    assert len(FlowGSP(n_generations=1, min_support=0.0, workers=1).fit(small()).generations) == 1


def test_max_candidates_guard():
    with pytest.raises(ModelInputError, match="generation 2 has 12 candidates, more than max_candidates=5"):
        FlowGSP(min_support=0.0, max_candidates=5, workers=1).fit(small())
