"""Runs on a Dask cluster give the same tables as runs in this process; a local pool dies with its parent."""

import signal
import subprocess
import sys
import time

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
    local = run_scenario_file(scenario, out=tmp_path / "local", progress=False).out_dir
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        remote = run_scenario_file(scenario, out=tmp_path / "remote", cluster=cluster.scheduler_address,
                                   progress=False).out_dir
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


def _started(item, shared, progress=None):
    """Note the start, then hold the worker until two items have started: a worker that came up late would
    otherwise start its first item after the other worker had finished one and taken the next."""
    from pathlib import Path

    started = time.monotonic()
    folder, pause = Path(shared[0]), shared[1]
    (folder / str(item)).touch()
    deadline = started + 60
    while len(list(folder.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(pause)
    return started


def test_a_pool_starts_the_costliest_items_first_and_keeps_the_order(tmp_path):
    items = [1, 5, 3, 9, 2]
    with Executor() as ex:
        started = ex.map(_started, items, shared=(str(tmp_path), 0.3), workers=2, cost=lambda i: i)
    first_two = {items[k] for k in sorted(range(len(items)), key=lambda k: started[k])[:2]}
    assert first_two == {9, 5}
    # results in the items' order: the starts of 9 and 5 (indices 3 and 1) are the two earliest
    assert max(started[1], started[3]) < min(started[0], started[2], started[4])


def _pid(item, shared, progress=None):
    import os

    if progress is not None:
        progress(1)
    return os.getpid()


def test_workers_replaces_the_studys_pool_size():
    """--workers 1 runs a study's pieces in this process even where the study asks for a pool of 2
    (a pool would run them elsewhere and report per finished item instead)."""
    import os

    with Executor(workers=1) as ex:
        assert ex.map(_pid, [0, 1, 2], workers=2) == [os.getpid()] * 3
    with Executor() as ex:
        assert os.getpid() not in ex.map(_pid, [0, 1, 2], workers=2)
    with pytest.raises(ScenarioError, match="--workers must be >= 1"):
        Executor(workers=0)


POOL_PARENT = """
import os, sys, time
sys.path.insert(0, sys.argv[1])
from whatif.scenarios.executor import Executor
from poolwork import sleep_forever

if __name__ == "__main__":
    with Executor() as ex:
        ex.map(sleep_forever, [sys.argv[1]] * 2, workers=2)
"""

POOL_WORK = """
import os, time

def sleep_forever(folder, shared, progress=None):
    # written aside and renamed: the test must never read a worker file before its pid is in it
    with open(os.path.join(folder, f"tmp-{os.getpid()}"), "w") as fh:
        fh.write(str(os.getppid()))
    os.rename(os.path.join(folder, f"tmp-{os.getpid()}"), os.path.join(folder, f"worker-{os.getpid()}"))
    time.sleep(600)
"""


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_kill_9_of_a_study_leaves_no_pool_worker_behind(tmp_path):
    (tmp_path / "poolwork.py").write_text(POOL_WORK)
    (tmp_path / "parent.py").write_text(POOL_PARENT)
    parent = subprocess.Popen([sys.executable, str(tmp_path / "parent.py"), str(tmp_path)])
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("worker-*"))) < 2:
        assert time.monotonic() < deadline and parent.poll() is None, "the pool's workers did not start"
        time.sleep(0.05)
    workers = [int(p.name.split("-")[1]) for p in tmp_path.glob("worker-*")]
    servers = {int(p.read_text()) for p in tmp_path.glob("worker-*")} - {parent.pid}   # the forkserver
    assert all(_alive(pid) for pid in workers)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers + sorted(servers)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in workers + sorted(servers) if _alive(pid)]
