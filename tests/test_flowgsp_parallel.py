"""One worker, N local workers and a Dask cluster on loopback give identical results."""

import pytest

from whatif.models.errors import ModelInputError
from whatif.models.flowgsp import FlowGSP
from whatif.models.flowgsp.synthetic import synthetic_efg


@pytest.fixture(scope="module")
def efg():
    return synthetic_efg(n_methods=40, seed=9)


def _mine(efg, **kw):
    res = FlowGSP(gap=1, window=1, n_generations=4, min_support=0.02, min_diff_support=0.02, chunk_vertices=500,
                  **kw).fit(efg)
    return [s.as_dict() for s in res.sequences], [(g.n, g.candidates, g.kept) for g in res.generations]


def test_local_workers_and_dask_cluster_agree_exactly(efg):
    from distributed import LocalCluster

    assert len(efg.chunk_bounds(500)) > 4
    one = _mine(efg, workers=1)
    three = _mine(efg, workers=3)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
                      dashboard_address=None) as cluster:
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        dask = _mine(efg, cluster=cluster.scheduler_address)
    assert len(one[0]) > 20 and len(one[1]) == 4
    assert one == three  # exact equality, floats included
    assert one == dask


def test_unreachable_cluster_is_a_user_error(efg, monkeypatch):
    import whatif.models.flowgsp.parallel as parallel

    monkeypatch.setattr(parallel, "DASK_CONNECT_TIMEOUT_S", 0.5)
    with pytest.raises(ModelInputError, match=r"cannot connect to the Dask scheduler at tcp://127.0.0.1:9"):
        FlowGSP(cluster="tcp://127.0.0.1:9").fit(efg)
