"""Suite-wide hooks.

Compile each numba kernel group once per run: every pytest-xdist worker compiles its share of
``kernel_groups.GROUPS`` before its first test, and finds the others' in numba's on-disk cache when a
test calls them (on a warm cache this costs each worker about a second).  Without it both workers of a
fresh clone's run compiled the core's and the trace simulator's kernels side by side in their first
tests.  Only the whole suite does this (pytest run without paths, as the README's command and CI run
it): a run of a few files, or without workers, compiles kernels where its tests first call them.
"""

from __future__ import annotations

import os

import pytest

from kernel_groups import GROUPS, shares


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session):
    worker = os.environ.get("PYTEST_XDIST_WORKER")      # "gw0", "gw1", ...: after this worker's collection
    whole_suite = session.config.args_source == pytest.Config.ArgsSource.TESTPATHS
    if worker is not None and whole_suite and session.items and not session.config.option.collectonly:
        for name in shares(int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))[int(worker[2:])]:
            GROUPS[name][0]()()
    return (yield)
