"""Loading the kernels a command calls before it runs (scenarios/kernels.py) under a bar with the time left
(scenarios/results/progress.run_steps), and the helper process that compiles the last steps meanwhile."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given, strategies as st
from rich.console import Console

from compile_fakes import small_graph
from whatif.models.flowgsp import kernel as FK
from whatif.scenarios import kernels
from whatif.scenarios.errors import ScenarioError
from whatif.scenarios.results.progress import run_steps, step_position
from whatif.scenarios.results.writer import atomic_write_text
from whatif.simulator.core import profiler as PROF
from whatif.simulator.core import timing as TM
from whatif.simulator.core import warming as WM
from whatif.simulator.gc import heap as HEAP
from whatif.simulator.gc import kernel_alloc as KA
from whatif.simulator.gc import microbench as GCMB
from whatif.simulator.memory import kernel as MK
from whatif.simulator.platform import load_platform
from whatif.simulator.synth import kernel as SK


def test_the_steps_name_each_kernel_flavour_once_in_order():
    nehalem, westmere, g4 = (load_platform(n) for n in ("nehalem", "westmere", "mpc7447a"))
    names = [name for name, _ in kernels.kernel_steps([nehalem, westmere, g4], sampled=True, workload="429.mcf",
                                                      trace=g4, collectors=("copying", "mark-sweep", "copying"),
                                                      profiler=True, gc_microbenchmarks=True, miner=True)]
    assert names == ["synthesiser", "core timing (TAGE predictor)", "functional warming (TAGE predictor)",
                     "core timing", "functional warming", "cache warming", "profiler", "garbage collector (copying)",
                     "garbage collector (mark-sweep)", "address-trace kernel", "GC microbenchmarks", "FlowGSP miner"]
    # the runs' predictor override decides the flavour; no sample, no warming; no workload, no synthesiser
    assert [n for n, _ in kernels.kernel_steps([nehalem], predictor="gshare")] == ["core timing"]
    assert [n for n, _ in kernels.kernel_steps([g4], predictor="tage")] == ["core timing (TAGE predictor)"]
    # a cache simulation warms, it does not sample; no workload, no profile
    assert [n for n, _ in kernels.kernel_steps([g4], warming=True, profiler=True)] == ["core timing",
                                                                                       "functional warming"]
    assert kernels.kernel_steps() == []
    assert set(kernels.DEFAULT_SECONDS) == {"synthesiser", "core timing (TAGE predictor)", "core timing",
                                            "functional warming (TAGE predictor)", "functional warming",
                                            "cache warming", "profiler", "garbage collector (mark-sweep)",
                                            "garbage collector (copying)", "address-trace kernel",
                                            "GC microbenchmarks", "FlowGSP miner"}


def _spy(monkeypatch, module, name: str, calls: list) -> None:
    real = getattr(module, name)

    def spy(*args, **kwargs):
        calls.append((name, args, kwargs))
        return real(*args, **kwargs)
    monkeypatch.setattr(module, name, spy)


def test_each_step_calls_its_kernel_flavour_on_nothing(monkeypatch):
    calls: list = []
    # (only kernels that no kernel calls: one that does would find the spy when it compiles)
    for module, name in ((TM, "simulate"), (WM, "warm"), (WM, "warm_caches"), (WM, "_shift_ring"), (SK, "walk"),
                         (SK, "skip_walk"), (MK, "run_trace"), (HEAP, "ms_step"), (HEAP, "cp_step"),
                         (PROF, "profile_records"), (PROF, "_finish"), (KA, "build_lists"), (GCMB, "_copy_stream"),
                         (FK, "count_supports")):
        _spy(monkeypatch, module, name, calls)
    nehalem, g4 = load_platform("nehalem"), load_platform("mpc7447a")
    steps = dict(kernels.kernel_steps([nehalem, g4], sampled=True, workload="462.libquantum", trace=g4,
                                      collectors=("mark-sweep", "copying"), profiler=True, gc_microbenchmarks=True,
                                      miner=True))
    assert len(steps) == 12
    for name, fn in steps.items():
        calls.clear()
        fn()
        called = [c[0] for c in calls]
        if name.startswith("core timing"):
            assert called == ["simulate"]
            args = calls[0][1]
            # (..., start, stop, until, records[, tage]): start == stop == 0, nothing simulated; the TAGE flavour
            # passes its flag, the other leaves it out
            assert args[-5:-3] == (0, 0) if name.endswith("(TAGE predictor)") else args[-4:-2] == (0, 0)
            assert (args[-1] is True) == name.endswith("(TAGE predictor)")
        elif name.startswith("functional warming"):
            assert called == ["warm"]
            assert (calls[0][1][-1] is True) == name.endswith("(TAGE predictor)")
        elif name == "cache warming":
            assert called == ["warm_caches", "_shift_ring"]
        elif name == "profiler":
            # one record, of an instruction outside the program
            assert called[-2:] == ["profile_records", "_finish"] and calls[-2][1][2] == 1
        elif name == "GC microbenchmarks":
            assert {"build_lists", "_copy_stream", "ms_step"} <= set(called)
        elif name == "FlowGSP miner":
            assert set(called) == {"count_supports"}
        elif name == "synthesiser":
            assert "walk" in called and "skip_walk" in called
        elif name.startswith("garbage collector"):
            # the collector's own step kernel, several collections' worth, and not the other's
            step = "ms_step" if name.endswith("(mark-sweep)") else "cp_step"
            assert called.count(step) >= 2 and set(called) == {step}
        else:
            assert called == ["run_trace"] and len(calls[0][1][2]) == 0            # an empty trace


def test_load_kernels_estimates_from_this_machines_record_and_records_what_compiled(tmp_path, monkeypatch):
    path = tmp_path / kernels.ESTIMATES_FILE
    monkeypatch.setattr(kernels, "estimates_path", lambda: path)
    kernels.write_estimates(path, {"core timing": 50.0})
    seen = {}

    def fake_run_steps(steps, description, enabled, estimates=None):
        seen["estimates"] = {name: est for name, est, _ in steps}
        return [31.0, 0.02]                  # the first step compiled, the second loaded from the cache
    monkeypatch.setattr(kernels, "run_steps", fake_run_steps)
    g4 = load_platform("mpc7447a")
    kernels.load_kernels(False, [g4], trace=g4)
    assert seen["estimates"] == {"core timing": 50.0,
                                 "address-trace kernel": kernels.DEFAULT_SECONDS["address-trace kernel"]}
    assert kernels.read_estimates(path) == {"core timing": 31.0}
    assert json.loads(path.read_text()) == {"whatif_compile_seconds": {"core timing": 31.0}}


def test_estimates_in_a_file_whatif_did_not_write_are_ignored_and_the_file_kept(tmp_path):
    path = tmp_path / kernels.ESTIMATES_FILE
    path.write_text('{"core timing": 1}\n')
    assert kernels.read_estimates(path) == {}
    kernels.write_estimates(path, {"core timing": 12.0})
    assert path.read_text() == '{"core timing": 1}\n'
    with pytest.raises(ScenarioError):                # (what write_estimates swallows: the file is refused)
        atomic_write_text(path, "{}", is_ours=lambda p: bool(kernels.read_estimates(p)))


def test_step_position_moves_with_the_clock_and_stops_short_of_the_estimate():
    assert step_position(3.0, 10.0) == 3.0
    assert step_position(9.9, 10.0) == pytest.approx(9.5)
    assert step_position(40.0, 10.0) == pytest.approx(9.5)
    assert step_position(-1.0, 10.0) == 0.0


def test_run_steps_runs_them_in_order_and_returns_their_seconds():
    order = []
    seconds = run_steps([("a", 5.0, lambda: order.append("a")), ("b", 7.0, lambda: order.append("b"))], "x",
                        enabled=False)
    assert order == ["a", "b"] and len(seconds) == 2 and all(s >= 0 for s in seconds)


def test_run_steps_shows_the_running_step_and_the_time_left_on_a_terminal():
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120, color_system=None)
    time_left = re.compile(r"compiling: first step.*0:1[01]:\d\d")        # about 11 minutes of estimates left
    drawn = threading.Event()

    def first_step():
        for _ in range(400):                 # (bounded: the bar redraws every 0.1 s)
            if time_left.search(out.getvalue()):
                drawn.set()
                return
            drawn.wait(0.05)
    run_steps([("first step", 600.0, first_step), ("second", 60.0, lambda: None)], "compiling", delay=0.0,
              console=console)
    assert drawn.is_set()


def test_run_steps_draws_nothing_for_steps_done_within_the_delay():
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120)
    seconds = run_steps([("a", 60.0, lambda: None)], "compiling", delay=60.0, console=console)
    assert out.getvalue() == "" and len(seconds) == 1


# Run in a process of its own, a command must find every kernel it calls already loaded by its steps: a numba
# dispatcher that gains a compiled (or cache-loaded) signature after them is one the bar left out.
LATE_KERNELS = """
import sys
import numba.core.dispatcher as ND
from typer.testing import CliRunner
import whatif.scenarios.kernels as K
from whatif.cli import app

def loaded():
    return {f"{d.py_func.__module__}.{d.py_func.__name__}": len(d.overloads) for name, m in list(sys.modules.items())
            if name.startswith("whatif") for d in list(vars(m).values()) if isinstance(d, ND.Dispatcher)}

after_steps = {}
real_run_steps = K.run_steps

def run_steps(*args, **kwargs):
    seconds = real_run_steps(*args, **kwargs)
    after_steps.update(loaded())
    return seconds

K.run_steps = run_steps
result = CliRunner().invoke(app, sys.argv[1:])
assert result.exit_code == 0, result.output
assert after_steps, "no steps ran"
print(sorted(name for name, n in loaded().items() if n > after_steps.get(name, 0)))
"""


@pytest.mark.parametrize("args", [
    ["simulate", "-p", "nehalem", "-w", "cint2006/462.libquantum", "-n", "200000", "--sample", "smarts:1000,2000,20",
     "--json"],
    ["profile", "-p", "z10", "-w", "websphere/was", "-n", "20000", "-o", "{tmp}/profile"],
    ["gc", "-w", "specjvm98/jess", "--scale", "0.01", "--collector", "copying", "-o", "{tmp}/gc"],
    ["mine", "{tmp}/g.json", "--json"],
], ids=["simulate-sample", "profile", "gc", "mine"])
def test_a_command_calls_no_kernel_its_steps_did_not_load(args, tmp_path):
    (tmp_path / "g.json").write_text(json.dumps({"methods": [
        {"name": "m", "vertices": [{"id": 0, "weight": 2, "attributes": ["A"]}, {"id": 1, "weight": 1,
                                                                             "attributes": ["A", "B"]}],
         "edges": [[0, 1, 3]]}]}))
    out = subprocess.run([sys.executable, "-c", LATE_KERNELS, *(a.format(tmp=tmp_path) for a in args)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


# ------------------------------------------------------------------------------------ the helper process
FAKES = "compile_fakes:fake_steps"


def load_fakes(monkeypatch, tmp_path, names, precompiled=(), **fake_kwargs) -> tuple[Path, list[tuple[str, int]]]:
    """``load_kernels`` over the fake steps (tests/compile_fakes.py; ``precompiled``: steps compiled before) in a
    folder of their own; returns the estimates record's path and the runs (step, pid) in the order they began."""
    folder = tmp_path / "steps"
    folder.mkdir()
    for name in precompiled:
        (folder / f"compiled-{name}").write_text("1")
    record = tmp_path / kernels.ESTIMATES_FILE
    monkeypatch.setattr(kernels, "STEP_FACTORY", FAKES)
    monkeypatch.setattr(kernels, "estimates_path", lambda: record)
    monkeypatch.setattr(kernels, "helper_allowed", lambda n: n >= 2)            # (whatever CPUs the host has)
    fake_kwargs.setdefault("compile_seconds", {})
    kernels.load_kernels(False, str(folder), names, parent=os.getpid(), **fake_kwargs)
    runs = [(name, int(pid)) for name, pid in (line.split() for line in (folder / "runs.log").read_text().splitlines())]
    return record, runs


def compiled_by(tmp_path, name: str) -> int:
    return int((tmp_path / "steps" / f"compiled-{name}").read_text())


def test_the_helper_compiles_the_last_steps_and_this_process_still_runs_every_step(monkeypatch, tmp_path):
    # the first step compiles until the helper has compiled the last, so the helper certainly takes it
    record, runs = load_fakes(monkeypatch, tmp_path, ["a", "b", "c"], compile_seconds={"c": 1.2},
                              wait_in_first="finished-c")
    me = os.getpid()
    assert compiled_by(tmp_path, "a") == me and compiled_by(tmp_path, "c") != me
    helper = compiled_by(tmp_path, "c")
    # every step ran here, in order, after the helper's steps were done; the helper ran only what it compiled
    assert [name for name, pid in runs if pid == me] == ["a", "b", "c"]
    assert {name for name, pid in runs if pid == helper} <= {"b", "c"}
    assert runs.index(("c", me)) > runs.index(("c", helper))
    # each step compiled once, by one process
    assert {compiled_by(tmp_path, n) for n in "abc"} <= {me, helper}
    # the helper's 1.2 s compile is what the record keeps for "c", not this process's load of it
    assert 1.0 <= kernels.read_estimates(record)["c"] < 10.0


def test_a_step_the_helper_left_unfinished_is_compiled_here(monkeypatch, tmp_path):
    # the helper claims "c" and dies before compiling it; the first step waits for that
    _, runs = load_fakes(monkeypatch, tmp_path, ["a", "b", "c"], die_in_helper="c", wait_in_first="helper-died")
    me = os.getpid()
    assert {compiled_by(tmp_path, n) for n in "abc"} == {me}
    assert [name for name, pid in runs if pid == me] == ["a", "b", "c"]
    assert [name for name, pid in runs if pid != me] == ["c"]


def test_no_helper_starts_when_nothing_compiles(monkeypatch, tmp_path):
    _, runs = load_fakes(monkeypatch, tmp_path, ["a", "b", "c"], precompiled="abc")
    assert runs == [("a", os.getpid()), ("b", os.getpid()), ("c", os.getpid())]


def test_arguments_a_process_cannot_be_given_leave_every_step_here(tmp_path):
    ran = []
    with kernels.StepSharing(FAKES, (lambda: None,), {}, ["a", "b"], [1.0, 1.0]) as sharing:
        assert sharing.dir is None
        for i, name in enumerate("ab"):
            sharing.step(i, lambda name=name: ran.append(name))()
    assert ran == ["a", "b"] and sharing.proc is None


def test_a_claims_folder_gone_leaves_the_step_here(tmp_path):
    ran = []
    with kernels.StepSharing(FAKES, (str(tmp_path),), {}, ["a", "b"], [1.0, 1.0]) as sharing:
        shutil.rmtree(sharing.dir)
        sharing.step(0, lambda: ran.append("a"))()
    assert ran == ["a"] and sharing.proc is None


def test_the_helper_needs_two_steps_two_cpus_and_is_not_turned_off(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.delenv(kernels.HELPER_ENV, raising=False)
    assert kernels.helper_allowed(2) and not kernels.helper_allowed(1)
    monkeypatch.setenv(kernels.HELPER_ENV, "0")
    assert not kernels.helper_allowed(2)
    monkeypatch.setenv(kernels.HELPER_ENV, "1")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3}, raising=False)
    assert not kernels.helper_allowed(5)


def test_split_where_a_step_goes_to_whichever_process_is_free_first():
    # this process has 5 s of step 0 left, the helper is ready in 2 s: it takes the 20 s step, this process the
    # 60 s one (at 5 s), the helper the 10 s one (at 22 s)
    assert kernels.split([9.0, 60.0, 10.0, 20.0], 0, 5.0, 2.0) == 2
    assert kernels.split([9.0, 1.0], 0, 30.0, 2.0) == 1                   # the helper is free first: it takes step 1
    assert kernels.split([9.0, 1.0], 0, 1.0, 2.0) == 2                    # this process is: nothing for the helper
    assert kernels.split([9.0], 0, 9.0, 2.0) == 1


@given(st.lists(st.floats(0.0, 100.0), min_size=1, max_size=12), st.data())
def test_split_never_ends_later_than_this_process_alone(estimates, data):
    first = data.draw(st.integers(0, len(estimates) - 1))
    left = data.draw(st.floats(0.0, 100.0))
    start = data.draw(st.floats(0.0, 10.0))
    meet = kernels.split(estimates, first, left, start)
    assert first + 1 <= meet <= len(estimates)
    alone = left + sum(estimates[first + 1:])
    mine = left + sum(estimates[first + 1:meet])
    theirs = start + sum(estimates[meet:]) if meet < len(estimates) else 0.0
    assert max(mine, theirs) <= alone + 1e-9


def test_the_bar_reads_estimates_a_step_revises():
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120, color_system=None)
    estimates = [600.0, 60.0]
    time_left = re.compile(r"compiling: first step.*0:5[01]:\d\d")        # 3060 s: about 51 minutes
    drawn = threading.Event()

    def first_step():
        estimates[1] = 2460.0
        for _ in range(400):
            if time_left.search(out.getvalue()):
                drawn.set()
                return
            drawn.wait(0.05)
    run_steps([("first step", 600.0, first_step), ("second", 60.0, lambda: None)], "compiling", delay=0.0,
              console=console, estimates=estimates)
    assert drawn.is_set()


HELPER_RUN = """
import json, sys
import whatif.scenarios.kernels as K
seen = {}
real_exit = K.StepSharing.__exit__

def leave(self, *exc):
    seen.update(self.helper_seconds)
    return real_exit(self, *exc)

K.StepSharing.__exit__ = leave
K.load_kernels(False, collectors=("copying",), miner=True)
print(json.dumps(seen))
"""

MINE = """
import json
from whatif.models.flowgsp import FlowGSP
from compile_fakes import small_graph
print(FlowGSP(n_generations=3).fit(small_graph()).table().to_json())
"""


def test_real_kernels_compiled_by_a_helper_load_and_give_the_same_results(tmp_path):
    """A cold cache: the copying collector compiles here and the FlowGSP miner in the helper, which records
    its seconds; a later process loads the miner the helper cached and mines what this process mines."""
    from whatif.models.flowgsp import FlowGSP

    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), WHATIF_COMPILE_HELPER="1",
               PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, "-c", HELPER_RUN], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert set(json.loads(run.stdout.splitlines()[-1])) == {"FlowGSP miner"}
    mined = subprocess.run([sys.executable, "-c", MINE], env=env, capture_output=True, text=True, timeout=600)
    assert mined.returncode == 0, mined.stderr
    here = FlowGSP(n_generations=3).fit(small_graph()).table()
    assert len(here) > 0 and json.loads(mined.stdout.splitlines()[-1]) == json.loads(here.to_json())
