"""EFG model: normalisation, S_f of entries, merged duplicate edges, chunks, bitsets, validation."""

import numpy as np
import pytest

from whatif.models.errors import ModelInputError
from whatif.models.flowgsp import EFG


def two_methods():
    return [
        {"name": "a", "vertices": [{"id": 5, "weight": 2, "attributes": ["X"]},
                                   {"id": 7, "weight": 0, "attributes": ["Y", "X"]},
                                   {"id": 9, "weight": 6, "attributes": []}],
         "edges": [[5, 7, 3], [7, 9, 2], [7, 9, 1], [9, 7, 2]]},
        {"name": "b", "vertices": [{"id": 1, "weight": 2, "attributes": ["Z"]}, {"id": 2, "weight": 0, "attributes": []}],
         "edges": [[1, 2, 2]]},
    ]


def test_normalisation_and_vertex_frequency_support():
    efg = EFG.from_methods(two_methods())
    assert efg.attribute_names == ("X", "Y", "Z")
    assert efg.n_edges == 4  # the two parallel edges 7->9 are merged
    assert efg.edge_freq.tolist() == [3.0, 3.0, 2.0, 2.0]
    assert efg.F.sum() == pytest.approx(1.0) and efg.W.sum() == pytest.approx(1.0)
    assert efg.W.tolist() == pytest.approx([0.2, 0.0, 0.6, 0.2, 0.0])
    # entries (5 of a, 1 of b) have no in-edge: S_f = sum over out-edges
    assert efg.Sf_vertex.tolist() == pytest.approx([0.3, 0.5, 0.3, 0.2, 0.2])
    assert efg.vertex_attributes(1) == ("X", "Y")


def test_attribute_bitsets_and_chunks_of_whole_methods():
    efg = EFG.from_methods(two_methods())
    assert efg.attr_words[:, 0].tolist() == [1, 3, 0, 4, 0]
    assert efg.chunk_bounds(1) == [(0, 3), (3, 5)]
    assert efg.chunk_bounds(100) == [(0, 5)]
    ch = efg.chunk(3, 5)
    assert ch.indptr.tolist() == [0, 1, 1] and ch.indices.tolist() == [1]
    assert ch.vattr_ids.tolist() == [2] and ch.vattr_ptr.tolist() == [0, 1, 1]
    assert ch.vertex_sf.tolist() == pytest.approx([0.2, 0.2])


def test_many_attributes_use_several_words():
    names = [f"a{i:03d}" for i in range(130)]
    efg = EFG.from_methods([{"name": "m", "vertices": [{"id": 0, "weight": 1, "attributes": names},
                                                       {"id": 1, "weight": 1, "attributes": ["a129"]}],
                             "edges": [[0, 1, 1]]}])
    assert efg.attr_words.shape == (2, 3)
    assert efg.attr_words[1].tolist() == [0, 0, 1 << 1]
    assert bin(int(efg.attr_words[0, 0])).count("1") == 64


def test_interchange_round_trip():
    efg = EFG.from_methods(two_methods())
    again = EFG.from_methods(efg.to_methods())
    assert np.array_equal(again.edge_freq, efg.edge_freq) and again.vertex_ids.tolist() == [5, 7, 9, 1, 2]
    assert [again.vertex_attributes(v) for v in range(5)] == [efg.vertex_attributes(v) for v in range(5)]


def test_extra_attributes_are_added_in_name_order():
    efg = EFG.from_methods(two_methods()).with_extra_attributes({0: {"Q2", "Q1"}, 4: ["Q1"]})
    assert efg.attribute_names == ("X", "Y", "Z", "Q1", "Q2")
    assert efg.vertex_attributes(0) == ("X", "Q1", "Q2") and efg.vertex_attributes(4) == ("Q1",)


@pytest.mark.parametrize("mutate, message", [
    (lambda m: m[0]["edges"].append([5, 99, 1]), "methods[0].edges[4]: edge to unknown vertex 99"),
    (lambda m: m[0]["vertices"][1].update(weight=-1), "methods[0].vertices[1].weight: must be a non-negative"),
    (lambda m: m[1]["edges"][0].__setitem__(2, -2), "methods[1].edges[0]: frequency must be a non-negative"),
    (lambda m: m[0]["vertices"][2].update(id=5), "methods[0].vertices[2].id: duplicate vertex id 5"),
    (lambda m: m[0]["vertices"][0].update(attributes="X"), "methods[0].vertices[0].attributes"),
    (lambda m: m[0]["edges"].append([5, 7]), "methods[0].edges[4]: must be [src_id, dst_id, frequency]"),
    (lambda m: [x.update(edges=[]) for x in m], "the graph has no edges"),
    (lambda m: [v.update(weight=0) for x in m for v in x["vertices"]], "all vertex weights are zero"),
    (lambda m: [e.__setitem__(2, 0) for x in m for e in x["edges"]], "all edge frequencies are zero"),
    (lambda m: m[0]["vertices"][0].update(weight=float("nan")), "must be a non-negative number"),
])
def test_bad_graphs_name_the_place(mutate, message):
    methods = two_methods()
    mutate(methods)
    with pytest.raises(ModelInputError, match=None) as info:
        EFG.from_methods(methods, source="g.json")
    assert str(info.value).startswith("g.json: ")
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_edges_may_not_leave_their_method():
    with pytest.raises(ModelInputError, match="leaves its method"):
        EFG.from_arrays(attribute_names=[], method_names=["a", "b"], method_ptr=[0, 1, 2], vertex_ids=[0, 0],
                        weight=[1, 1], attr_ptr=[0, 0, 0], attr_ids=[], edge_src=[0], edge_dst=[1], edge_freq=[1])
