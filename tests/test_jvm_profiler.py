"""The JVMPI-style profiler against the application's known calls, and J(N, S) against what the JIT
compiled."""

from __future__ import annotations

import pytest

from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.jvm.apps import program, run_application
from whatif.simulator.jvm.microbench import primitive_table
from whatif.simulator.jvm.profiler import COMPILED, USER_BYTECODE, USER_INVOKE, jit_bytecodes, user_footprint
from whatif.simulator.jvm.spec import application, jvm as jvm_spec
from whatif.simulator.platform import load_platform


# Harpertown with its L2's 16 prefetch engines pinned off: a run whose cache simulation counts
# exactly what it counted (engines drop prefetches by time, which a run without timing cannot follow)
UNTIMED_DROPS = ["l2.prefetch_engines=0"]


@pytest.fixture(scope="module")
def runs():
    p = load_platform("harpertown", UNTIMED_DROPS)
    return {j: run_application(p, j, "WebL", 0.02, seed=3) for j in ("jdk122-classic", "jdk121-prod")}


def test_the_application_vector_is_the_programs_calls(runs):
    prog = program(application("WebL"), 0.02, seed=3)
    av = runs["jdk122-classic"]["application_vector"].set_index("primitive")["count"]
    table = primitive_table()
    for label, n in prog.calls.items():
        unit = table[label][1]
        assert av[label] == (prog.units[label] if unit in ("char", "byte") else n), label
    assert av[USER_BYTECODE] == prog.user_bytecodes and av[USER_INVOKE] == prog.user_invocations
    assert set(av.index) == set(prog.calls) | {USER_BYTECODE, USER_INVOKE}
    # WebL's cited vector at 2 %: 80 and 121 class loads, 32768 chars
    assert prog.calls["Class.forName()"] == round(80 * 0.02) and prog.units["BufferedReader.read()"] == 1024


def test_n_counts_nested_invocations(runs):
    r = runs["jdk122-classic"]
    n = r["methods"].set_index("method")["invocations"]
    calls = r["calls"]
    assert n["java.lang.ClassLoader.loadClass"] == calls["Class.forName()"] + calls["ClassLoader.loadClass()"]
    assert r["classes_loaded"] == n["java.lang.ClassLoader.loadClass"]
    # a 1 K read every call; a fill (convert 8 K chars) whenever a read finds the 8 K buffer empty: the
    # first read's included
    assert n["java.io.BufferedReader.read"] == calls["BufferedReader.read()"]
    assert n["sun.io.ByteToCharSingleByte.convert"] == -(-calls["BufferedReader.read()"] * 1024 // 8192) >= 1


@pytest.mark.parametrize("jvm", ["jdk122-classic", "jdk121-prod"])
def test_j_of_n_s_is_what_the_jit_compiled(runs, jvm):
    r = runs[jvm]
    j = jvm_spec(jvm).jit
    assert r["j_of_n_s"] == jit_bytecodes(r["methods"], j.policy, j.threshold, tuple(j.never_compile))
    assert r["compiled_bytecodes"] == r["j_of_n_s"] > 0
    assert jit_bytecodes(r["methods"], "none") == 0


def test_same_seed_same_program_and_time():
    p = load_platform("mpc7447a")
    a = run_application(p, "msjvm-sdk32", "db", 0.002, seed=5)
    b = run_application(p, "msjvm-sdk32", "db", 0.002, seed=5)
    assert a["cycles"] == b["cycles"] and a["system_seconds"] + a["user_seconds"] == pytest.approx(a["seconds"])


def test_bad_scale_and_unknown_application():
    with pytest.raises(SimulatorInputError, match="The 'scale' parameter of program must be in"):
        program(application("WebL"), 0.0)
    with pytest.raises(SimulatorInputError, match="unknown application 'kaffe'"):
        application("kaffe")


def test_an_adaptive_jits_calls_split_at_the_threshold(runs):
    """With the compile events, the calls (units, user bytecodes) made once a method had been invoked
    `threshold` times are priced compiled.  Recount by hand from the program's event order, for the
    methods only user code calls (their invocation count is their count of calls from user code)."""
    r = runs["jdk122-classic"]
    prof, av, n_of = r["profiler"], r["application_vector"], r["methods"].set_index("method")["invocations"]
    table = primitive_table()
    prog = program(application("WebL"), 0.02, seed=3)
    total = av.set_index("primitive")["count"]
    for threshold in (1, 3, 10**9):
        split = prof.split_at_threshold(av, table, threshold).groupby("primitive")["count"].sum()
        for label in total.index:               # nothing lost or made up
            assert split.get(label, 0) + split.get(label + COMPILED, 0) == total[label], (label, threshold)
        seen, late_calls, late_units, late_user = {}, {}, {}, 0
        for kind, method, units in prog.events:
            seen[method] = seen.get(method, 0) + 1
            if seen[method] >= threshold:
                if kind == "api":
                    late_calls[method] = late_calls.get(method, 0) + 1
                    late_units[method] = late_units.get(method, 0) + units
                else:
                    late_user += prog.methods[method].bytecodes
        checked = 0
        for label, (method, unit) in table.items():
            if label in total.index and n_of[method] == prog.calls[label]:     # called from user code only
                expect = (late_units if unit in ("char", "byte") else late_calls).get(method, 0)
                assert split.get(label + COMPILED, 0) == expect, (label, threshold)
                checked += 1
        assert checked >= 3
        assert split.get(USER_BYTECODE + COMPILED, 0) == late_user
    assert not any(p.endswith(COMPILED) for p in prof.split_at_threshold(av, table, 10**9).primitive)
    assert all(p.endswith(COMPILED) or p not in total.index or total[p] == 0
               for p in prof.split_at_threshold(av, table, 1).primitive)


def test_the_size_distribution_is_the_programs_calls_by_size(runs):
    """N(s) of the per-unit primitives: every call from user code at the size it was made with; under an
    adaptive JIT the calls past the threshold apart, the total unchanged."""
    prog = program(application("WebL"), 0.02, seed=3)
    table = primitive_table()
    prof = runs["jdk122-classic"]["profiler"]
    loading = ("Class.forName()", "ClassLoader.loadClass()")
    dist = prof.size_distribution("WebL", table, class_loading=loading)
    spec = application("WebL")
    for r in dist.itertuples():
        # per-unit primitives by their units; class loading by the bytes of the class each call loaded
        want = spec.class_bytes if r.primitive in loading else spec.uses[r.primitive].units
        assert r.size == want and r.count == prog.calls[r.primitive], r.primitive
    assert set(dist.primitive) == {k for k in prog.calls if table[k][1] in ("char", "byte") or k in loading}
    split = runs["jdk121-prod"]["profiler"].size_distribution("WebL", table, threshold=2, class_loading=loading)
    # the application's own bytecodes at its code working set (Σ S of the user methods that ran)
    footprint = user_footprint(runs["jdk122-classic"]["methods"])
    assert footprint == sum(m.size for m in prog.methods.values())
    mine = prof.size_distribution("WebL", table, class_loading=loading, user_footprint=footprint)
    user = mine[mine.primitive == USER_BYTECODE]
    assert list(user["size"]) == [footprint] and user["count"].sum() == prog.user_bytecodes
    both = runs["jdk121-prod"]["profiler"].size_distribution("WebL", table, 50, loading, footprint)
    assert both[both.primitive.str.startswith(USER_BYTECODE)]["count"].sum() == prog.user_bytecodes
    assert set(both.primitive) >= {USER_BYTECODE, USER_BYTECODE + COMPILED}
    for prim, n in dist.groupby("primitive")["count"].sum().items():
        both = split[split.primitive.isin([prim, prim + COMPILED])]["count"].sum()
        assert both == n
        assert split[split.primitive == prim]["count"].sum() == min(n, 1)     # the first call is below 2


def test_a_cache_simulation_of_the_run_counts_the_timed_runs_misses(runs):
    """The hybrid's cache simulation (the run's streams through caches, TLBs and predictors without
    timing) counts, primitive by primitive, the memory reads the timed run made: on a platform without
    time-dependent prefetch engines they are equal; its times are 0."""
    timed = runs["jdk122-classic"]["in_application"].set_index("primitive")
    cache = run_application(load_platform("harpertown", UNTIMED_DROPS), "jdk122-classic", "WebL", 0.02, seed=3,
                            functional=True)["in_application"].set_index("primitive")
    assert (cache["misses"] == timed["misses"]).all() and timed["misses"].sum() > 1000
    assert (cache["calls"] == timed["calls"]).all() and (cache["seconds"] == 0).all()
    assert timed.loc["JIT compile (per bytecode)", "misses"] > 0      # compilations counted apart
