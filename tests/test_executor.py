"""Runs on a Dask cluster give the same tables as runs in this process."""

import pandas as pd
import pytest

from whatif.scenarios.errors import ScenarioError
from whatif.scenarios.executor import Executor
from whatif.scenarios.runner import run_scenario_file

from test_cli import SMALL_SCENARIO


def test_dask_cluster_gives_identical_tables(tmp_path):
    import distributed
    scenario = tmp_path / "tiny.toml"
    scenario.write_text(SMALL_SCENARIO)
    local = run_scenario_file(scenario, out=tmp_path / "local", progress=False)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        remote = run_scenario_file(scenario, out=tmp_path / "remote", cluster=cluster.scheduler_address,
                                   progress=False)
    for table in ("totals", "levels", "tlbs"):
        pd.testing.assert_frame_equal(pd.read_parquet(local / f"{table}.parquet"),
                                      pd.read_parquet(remote / f"{table}.parquet"))


def test_unreachable_cluster_is_a_clear_error():
    with pytest.raises(ScenarioError, match="cannot reach a Dask scheduler"):
        with Executor("tcp://127.0.0.1:1"):
            pass


def _square(item, shared, progress=None):
    return item * item + shared


def test_local_pool_keeps_the_order_and_advances_per_item():
    seen = []
    with Executor() as ex:
        out = ex.map(_square, list(range(7)), shared=1, progress=seen.append, units=3, workers=2)
    assert out == [i * i + 1 for i in range(7)]
    assert seen == [3] * 7
