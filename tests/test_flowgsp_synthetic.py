"""The synthetic WebSphere-like generator: shape, determinism, planting helpers."""

import numpy as np
import pytest

from whatif.models.errors import ModelInputError
from whatif.models.flowgsp import count_candidates
from whatif.models.flowgsp.profile_db import efg_from_tables
from whatif.models.flowgsp.synthetic import (chain_support, chain_walks, plant, profile_shape, synthetic_efg,
                                      synthetic_profile)


@pytest.fixture(scope="module")
def tables():
    return synthetic_profile(n_methods=200, seed=3)


def test_shape_is_websphere_like(tables):
    shape = profile_shape(tables)
    assert shape["methods"] == 200
    assert 3.0 <= shape["instructions"] / shape["basic_blocks"] <= 3.9       # thesis: 102,865 / 30,430 = 3.38
    assert 1.3 <= shape["inter_block_edges"] / shape["basic_blocks"] <= 1.6  # thesis: 44,178 / 30,430 = 1.45
    sizes = tables["Disassm"].groupby("symbol_id").size()
    assert sizes.min() >= 50 and sizes.max() <= 725
    efg = efg_from_tables(tables)
    d = efg.describe()
    assert 1.2 <= d["attributes_per_vertex"] <= 1.6
    assert 36 <= d["attributes"] <= 40
    counts = np.sort(np.bincount(efg.attr_ids))[::-1]
    assert counts[0] > 20 * counts[len(counts) // 2] / 10  # skewed: the commonest kind far above the median
    share = np.add.reduceat(efg.weight, efg.method_ptr[:-1]) / efg.weight.sum()
    assert share.max() < 0.1  # a flat profile


def test_deterministic_in_seed(tables):
    again = synthetic_profile(n_methods=200, seed=3)
    for name in tables:
        assert tables[name].equals(again[name])
    assert not synthetic_profile(n_methods=200, seed=4)["IA"].equals(tables["IA"])


def test_rejects_bad_size():
    with pytest.raises(ModelInputError, match="'n_methods' parameter of synthetic_profile must be an integer >= 1"):
        synthetic_profile(n_methods=0)


def test_planted_chain_support_is_what_the_kernel_counts():
    efg = synthetic_efg(n_methods=30, seed=1)
    starts = chain_walks(efg, 3)
    assert len(starts) > 10
    for v in starts[:50]:
        assert all(np.diff(efg.indptr)[v:v + 2] == 1)
        assert efg.edge_dst[efg.indptr[v]] == v + 1 and efg.edge_dst[efg.indptr[v + 1]] == v + 2
    picked = [int(starts[5]), int(starts[-5])]
    planted = plant(efg, [(v, [("T1",), (), ("T2",)]) for v in picked])
    a1, a2 = planted.attribute_names.index("T1"), planted.attribute_names.index("T2")
    got = count_candidates(planted, [((a1,), (a2,))], 1, 0)[:, 0]
    expected = np.sum([chain_support(planted, v, 3) for v in picked], axis=0)
    assert got == pytest.approx(expected, rel=1e-12)
    assert expected[0] > 0


def test_event_scale_makes_a_denser_profile():
    sparse = synthetic_efg(n_methods=40, seed=2).describe()["attributes_per_vertex"]
    dense = synthetic_efg(n_methods=40, seed=2, event_scale=4.0).describe()["attributes_per_vertex"]
    assert dense > sparse + 0.4
    with pytest.raises(ModelInputError, match="'event_scale' parameter of synthetic_profile must be a number in"):
        synthetic_profile(n_methods=2, event_scale=0)
