"""The ``hbench-java`` study kind on a reduced copy of ``scenarios/hbench-java.toml``: system vectors from
the microbenchmarks, application vectors from the profiler, predicted (vectors + J(N,S)) against simulated
normalised speeds, the SPECjvm98-style composite, the tables of the seed; bad input refused at load."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from whatif.cli import app
from whatif.scenarios.runner import run_scenario_file
from hbench_helpers import assert_refused_at_load, with_keys
from kernel_groups import recorded_steps

SHIPPED = Path(__file__).resolve().parents[1] / "scenarios" / "hbench-java.toml"
LOADED: list[str] = []                   # the kernel steps the study fixture's run loaded
REF = "jdk122-classic@mpc7447a"


def reduced() -> str:
    return with_keys(SHIPPED.read_text(), {
        "platforms": '["mpc7447a", "harpertown"]', "jvms": '["jdk122-classic", "msjvm-sdk32"]',
        "applications": '["WebL", "Mercator"]', "specjvm98": '["compress", "db"]', "scale": "0.01",
        "spec_scale": "0.002", "microbench_min_ticks": "20", "microbench_repetitions": "3",
        "cost_sizes": "[8, 512]", "class_sizes": "[1024, 8192]", "code_footprints": "[80, 5120]"})


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hbench-java")
    path = tmp / "hbj.toml"
    path.write_text(reduced())
    with recorded_steps(LOADED):
        done = run_scenario_file(path, out=tmp / "out", progress=False)
    return done, json.loads((tmp / "out" / "results.json").read_text())


def test_the_jvms_cores_and_collectors_load_before_the_runs(study):
    # the MPC7447A's core, Harpertown's (TAGE), each with functional warming; jdk122-classic's mark-sweep
    # collector, msjvm-sdk32's copying one
    assert LOADED == ["core timing", "functional warming", "core timing (TAGE predictor)",
                      "functional warming (TAGE predictor)", "garbage collector (mark-sweep)",
                      "garbage collector (copying)"]


def test_speeds_and_agreement(study):
    done, doc = study
    assert doc["reference"] == REF and len(doc["configurations"]) == 4
    for app in ("WebL", "Mercator"):
        r = doc["applications"][app]
        for p in ("simulated", "hbench", "hybrid", "system_classes", "specjvm98"):
            assert r["speeds"][REF][p] == pytest.approx(1.0)
        for p, tau in r["kendall_tau"].items():
            assert -1 <= tau <= 1
            others = [c for c in doc["configurations"] if c != REF]
            err = np.mean([abs(r["speeds"][c][p] / r["speeds"][c]["simulated"] - 1) for c in others]) * 100
            assert r["mean_error_pct"][p] == pytest.approx(err)
    # a faster platform and a better JIT: the simulated WebL is fastest on msjvm@harpertown
    sp = doc["applications"]["WebL"]["speeds"]
    assert max(sp, key=lambda c: sp[c]["simulated"]) == "msjvm-sdk32@harpertown"


def test_prediction_is_the_dot_product_plus_jit(study):
    done, doc = study
    out = done.out_dir
    systems = pd.read_parquet(out / "system_vectors.parquet")
    apps = pd.read_parquet(out / "application_vectors.parquet")
    b = pd.read_parquet(out / "breakdown.parquet")
    functions = pd.read_parquet(out / "cost_functions.parquet")
    sizes = pd.read_parquet(out / "size_distributions.parquet")
    for app in ("WebL", "Mercator"):
        av = apps[apps.application == app].set_index("primitive")["count"]
        n_of_s = sizes[sizes.application == app]
        assert set(n_of_s.primitive) == ({"BufferedReader.read()", "StringBuffer.append()", "Class.forName()",
                                          "ClassLoader.loadClass()"} if app == "WebL" else
                                         {"SocketInputStream.read()", "StringBuffer.append()"}) | {
                                            "bytecode (user classes)"}
        av = av.drop(list(set(n_of_s.primitive)))       # per-unit primitives: C(s) x N(s), calls at each size
        for conf in doc["configurations"]:
            cost = systems[systems.system == conf].set_index("primitive")["cost"]
            sel = b[(b.application == app) & (b.configuration == conf)]
            jit = sel[sel.element.str.startswith("JIT compile")]
            sized = 0.0
            for r in n_of_s.itertuples():
                f = functions[(functions.system == conf) & (functions.primitive == r.primitive)].sort_values("size")
                sized += float(np.interp(r.size, f["size"], f["cost"])) * r.count
            dot = float((av * cost[av.index]).sum()) + sized + float(jit.total.iloc[0])
            assert doc["applications"][app]["speeds"][conf]["predicted_seconds"] == pytest.approx(dot * 1e-6)
            assert float(jit.system_vector.iloc[0]) == pytest.approx(cost["JIT compile (per bytecode)"])
            assert sel.percentage.sum() == pytest.approx(100)


def test_in_application_costs_decompose_both_times(study):
    """Per primitive, what the vectors predicted and what its calls took in the run: the predictions sum to
    the predicted time, the run's parts (primitives, user code, the JIT) to its simulated time."""
    done, doc = study
    ctx = pd.read_parquet(done.out_dir / "in_application.parquet")
    for (app, conf), g in ctx.groupby(["application", "configuration"]):
        speeds = doc["applications"][app]["speeds"][conf]
        assert g.predicted_us.sum() * 1e-6 == pytest.approx(speeds["predicted_seconds"])
        assert g.in_application_us.sum() * 1e-6 == pytest.approx(speeds["simulated_seconds"])
        assert {"user code", "Socket.<init>()" if app == "Mercator" else "Class.forName()"} <= set(g.primitive)
        row = g.set_index("primitive").loc["user code"]
        assert row.error_pct == pytest.approx(100 * (row.predicted_us - row.in_application_us) / row.in_application_us)
    # the 7447A's 512 KB L2 (no L3) loses what the warm loops kept: its calls cost more in the application
    ref = ctx[(ctx.configuration == REF) & (ctx.primitive == "Socket.<init>()")]
    assert ref.error_pct.iloc[0] < -10


def test_the_hybrid_adds_each_primitives_excess_misses_at_its_cold_cost(study):
    """Hybrid (§3.1.3) = the vectors' prediction + Σ over primitives (user code, the JIT) of the misses a
    cache simulation of the application counts beyond the warm loops', each at its cold-call µs per miss."""
    done, doc = study
    ctx = pd.read_parquet(done.out_dir / "in_application.parquet")
    for (app, conf), g in ctx.groupby(["application", "configuration"]):
        speeds = doc["applications"][app]["speeds"][conf]
        excess = (g.cache_simulated_misses - g.warm_loop_misses).clip(lower=0)
        assert speeds["hybrid_seconds"] == pytest.approx(speeds["predicted_seconds"]
                                                         + 1e-6 * float((excess * g.miss_penalty_us).sum()))
        assert g.hybrid_us.sum() * 1e-6 == pytest.approx(speeds["hybrid_seconds"])
        assert (g.hybrid_us >= g.predicted_us).all()
    # the 7447A's calls miss far beyond its warm loops: the hybrid moves its prediction towards the run
    ref = ctx[ctx.configuration == REF]
    assert (ref.hybrid_us.sum() - ref.in_application_us.sum()) ** 2 < \
        (ref.predicted_us.sum() - ref.in_application_us.sum()) ** 2


def test_composite_is_the_geometric_mean_of_the_spec_programs(study):
    done, doc = study
    runs = pd.read_parquet(done.out_dir / "runs.parquet").set_index(["configuration", "application"])["seconds"]
    for conf, v in doc["specjvm98"].items():
        want = np.exp(np.mean([np.log(runs[(REF, p)] / runs[(conf, p)]) for p in ("compress", "db")]))
        assert v == pytest.approx(want)


def test_tables_and_report(study):
    done, doc = study
    out = done.out_dir
    for name in ("system_vectors", "application_vectors", "methods", "runs", "speeds", "important_primitives",
                 "time_split", "breakdown", "in_application"):
        assert (out / f"{name}.parquet").is_file(), name
    split = pd.read_parquet(out / "time_split.parquet").set_index("program")
    assert split.loc["Mercator", "seed_system_pct"] == 92.9
    assert (split.system_pct + split.user_pct).round(6).eq(100).all()
    imp = pd.read_parquet(out / "important_primitives.parquet")
    assert "Socket.<init>()" in doc["applications"]["Mercator"]["important"]
    assert set(imp.configuration) == set(doc["configurations"])
    assert "Tables 4-3 and 4-4" in (out / "report.html").read_text()
    assert (out / "normalised_speeds.png").is_file()


@pytest.mark.parametrize("edit, fragment", [
    (('jvms = ["jdk122-classic", "msjvm-sdk32"]', 'jvms = ["kaffe"]'), "unknown JVM 'kaffe'"),
    (('applications = ["WebL", "Mercator"]', 'applications = ["HotJava"]'), "unknown application 'HotJava'"),
    (("scale = 0.01", "scale = 0"), "scale"),
    (("scale = 0.01", "scale = 2"), "scale"),
    (('reference = "jdk122-classic@mpc7447a"', 'reference = "jdk122-classic@z10"'), "is not a configuration"),
    (('jvms = ["jdk122-classic", "msjvm-sdk32"]', 'jvms = ["msjvm-sdk32", "msjvm-sdk32"]'),
     "lists 'msjvm-sdk32' twice"),
    (("cost_sizes = [8, 512]", "cost_sizes = [8, 8]"), "cost_sizes lists 8 twice"),
    (("cost_sizes = [8, 512]", "cost_sizes = []"), "cost_sizes"),
    (("class_sizes = [1024, 8192]", "class_sizes = [16]"), "class_sizes"),
    (("code_footprints = [80, 5120]", "code_footprints = [0]"), "code_footprints"),
    (("class_bytes = 2048", "class_bytes = 8"), "class_bytes"),
    (("scale = 0.01", "scale = 0.01\nfast = true"), "fast"),
])
def test_bad_input_is_refused_at_load(tmp_path, edit, fragment):
    assert_refused_at_load(reduced(), edit, fragment, tmp_path)


def test_the_cli_refuses_bad_input_in_one_line_and_writes_nothing(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(reduced().replace('jvms = ["jdk122-classic", "msjvm-sdk32"]', 'jvms = ["kaffe"]'))
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(out)])
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "unknown JVM 'kaffe'" in lines[0]
    assert not out.exists()
