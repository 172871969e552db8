"""The whatif command line: listings, platform descriptions, cachesim, run, validate, trace, bad input."""

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from whatif.cli import app
from whatif.simulator.platform import load_platform
from whatif.simulator.schema import flatten

runner = CliRunner()

SMALL_SCENARIO = """
schema_version = 1
name = "tiny"
description = "a small cachesim study"
study = "cachesim"
seed = 7
platforms = ["mpc7447a"]

[trace]
synthetic = "mixed"
accesses = 20000
instructions_per_access = 0.5

[variants.baseline]

[variants.big]
"l2.size_kb" = 1024
"""

LACKEY = """==12345== Lackey, an example Valgrind tool
==12345== Command: ./a.out

I  04016b0,3
 L 1ffefffd78,8
 S 1ffefffd70,8
I  04016b3,4
 M 0601040,4

"""


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def assert_one_line_error(result, *fragments):
    assert result.exit_code == 2, result.output
    lines = [l for l in result.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("whatif: error: ")
    for frag in fragments:
        assert frag in lines[0], lines[0]
    assert "Traceback" not in result.output


# ------------------------------------------------------------------------------------ list / show
def test_list_platforms_names_all_five():
    result = invoke("list", "platforms")
    assert result.exit_code == 0
    names = {line.split()[0] for line in result.stdout.splitlines()}
    assert {"mpc7447a", "z10", "harpertown", "nehalem", "westmere"} <= names


def test_list_scenarios_includes_quickstart():
    result = invoke("list", "scenarios")
    assert result.exit_code == 0
    assert "scenarios/quickstart.toml" in result.stdout


def test_list_unknown_is_one_line():
    assert_one_line_error(invoke("list", "bananas"), "bananas")


def test_show_platform_json_paths_are_exactly_settable():
    result = invoke("show", "platform", "mpc7447a", "--json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["caches"]["L2"]["size_kb"] == 512
    assert len(doc["pmu"]["events"]) == 19
    flat = flatten(doc)
    # every dotted path is a key --set accepts (setting it to its own value changes nothing)
    for key, value in flat.items():
        load_platform("mpc7447a", [(key, value)])
    assert load_platform("mpc7447a", ["caches.L2.size_kb=1024"]).caches["L2"].size_kb == 1024
    assert load_platform("mpc7447a", ["l2.size_kb=1024"]).caches["L2"].size_kb == 1024


def test_show_workload_sets_what_its_program_realises_beside_the_description():
    """``show workload``: per phase the described mix and stream shares beside the program's expected dynamic
    ones, and a flag on each share realised beyond 2x either way.  429.mcf's third phase has two stores that
    carry 93 % of its stores, so its stack stores realise 0.5 % for a described 15 %: flagged, with the
    heaviest store's share that explains it; the mix is met in every phase."""
    result = invoke("show", "workload", "cint2006/429.mcf", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["workload"] == "cint2006/429.mcf" and doc["isa"] == "x86_64"
    assert [p["name"] for p in doc["phases"]] == [p["name"] for p in doc["description"]["phases"]]
    for ph in doc["phases"]:
        assert all(abs(v["realised"] - v["described"]) < 0.01 for v in ph["mix"].values())
        for kind in ("load", "store"):
            rows = [r for r in ph["streams"] if r["kind"] == kind]
            assert sum(r["realised"] for r in rows) == pytest.approx(1.0)
            assert sum(r["described"] for r in rows) == pytest.approx(1.0)
        for r in ph["streams"]:
            assert r["flagged"] == (not r["described"] / 2 <= r["realised"] <= 2 * r["described"])
    stack = next(r for r in doc["phases"][2]["streams"] if (r["kind"], r["stream"]) == ("store", "stack"))
    assert stack["flagged"] and stack["realised"] < 0.01 and stack["heaviest_instruction"] > 0.45
    flagged = sum(r["flagged"] for ph in doc["phases"] for r in ph["streams"])
    text = invoke("show", "workload", "mcf").stdout
    assert "phase 2 'update_tree'" in text
    assert sum(line.endswith(" !") for line in text.splitlines()) == flagged == 3


def test_show_workload_from_a_file_and_its_bad_input(tmp_path):
    """A workload file works as ``path.toml:name`` (the same program as the catalog's), on the ISA asked for;
    a workload that does not exist, an unknown ISA, and platform-only options are one line and exit 2."""
    from whatif.scenarios.commands.catalog import WORKLOAD_DIR

    path = tmp_path / "mine.toml"
    path.write_text((WORKLOAD_DIR / "specjvm98.toml").read_text())
    mine = json.loads(invoke("show", "workload", f"{path}:compress", "--isa", "powerpc32", "--json").stdout)
    shipped = json.loads(invoke("show", "workload", "compress", "--isa", "powerpc32", "--json").stdout)
    assert mine["phases"] == shipped["phases"] and mine["isa"] == "powerpc32"
    assert_one_line_error(invoke("show", "workload", "nosuch"), "nosuch")
    assert_one_line_error(invoke("show", "workload", "mcf", "--isa", "arm"), "arm")
    assert_one_line_error(invoke("show", "workload", "mcf", "--set", "mix.load=0.3"), "--set")
    assert_one_line_error(invoke("show", "bananas", "mcf"), "bananas", "workload")


def test_show_with_override_and_text():
    result = invoke("show", "platform", "nehalem", "--set", "l3.size_kb=4096")
    assert result.exit_code == 0
    assert "caches.L3.size_kb" in result.stdout and "4096" in result.stdout


def test_show_sources_gives_each_value_its_source_or_estimate_mark():
    """Every resolved value gets where it came from: the platform file's comment on it (a citation or an
    estimate mark), --set, or the schema's default; --json carries the same map."""
    result = invoke("show", "platform", "nehalem", "--sources", "--set", "l2.size_kb=512")
    assert result.exit_code == 0, result.output
    line = {ln.split("=")[0].strip(): ln for ln in result.stdout.splitlines() if "=" in ln}
    assert line["caches.L2.size_kb"].endswith("# --set")
    assert "# [S002] Table 2: 256 KB" in invoke("show", "platform", "nehalem", "--sources").stdout
    assert "estimate" in line["core.mispredict_penalty"] and line["core.agi_penalty"].endswith("# default")
    assert "values marked estimate" in result.stdout
    doc = json.loads(invoke("show", "platform", "z10", "--sources", "--json").stdout)
    assert set(doc["sources"]) == set(flatten({k: v for k, v in doc.items() if k != "sources"}))
    assert doc["sources"]["caches.L1I.line_bytes"] == "[RWT] 256-byte lines"


# ------------------------------------------------------------------------------------ cachesim
def test_cachesim_lackey_json_shape(tmp_path):
    trace = tmp_path / "t.lackey"
    trace.write_text(LACKEY)
    result = invoke("cachesim", trace, "--platform", "mpc7447a", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["platform"] == "mpc7447a"
    assert doc["trace_accesses"] == 5
    assert set(doc["levels"]) == {"L1I", "L1D", "L2"}
    assert doc["levels"]["L1D"]["accesses"] >= 3 and doc["levels"]["L1I"]["accesses"] == 2
    assert {"accesses", "hits", "misses"} <= set(doc["levels"]["L2"])
    assert doc["tlbs"]["DTLB"]["accesses"] == 3
    assert isinstance(doc["simulation_seconds"], float)


def test_cachesim_binary_equals_lackey(tmp_path):
    lackey = tmp_path / "t.lackey"
    binary = tmp_path / "t.wtr"
    assert invoke("trace", "synth", lackey, "--accesses", 3000, "--seed", 4).exit_code == 0
    assert invoke("trace", "convert", lackey, binary).exit_code == 0
    a = json.loads(invoke("cachesim", lackey, "-p", "harpertown", "--json").stdout)
    b = json.loads(invoke("cachesim", binary, "-p", "harpertown", "--json").stdout)
    assert a["levels"] == b["levels"] and a["tlbs"] == b["tlbs"]


def test_malformed_trace_line_names_its_line_number(tmp_path):
    trace = tmp_path / "bad.lackey"
    trace.write_text(LACKEY.replace(" S 1ffefffd70,8", " S 1ffefffd70;8"))
    assert_one_line_error(invoke("cachesim", trace, "-p", "mpc7447a"), f"{trace}:6:")


def test_unknown_platform(tmp_path):
    trace = tmp_path / "t.lackey"
    trace.write_text(LACKEY)
    assert_one_line_error(invoke("cachesim", trace, "-p", "pentium4"), "unknown platform 'pentium4'", "mpc7447a")


def test_unknown_override_key(tmp_path):
    trace = tmp_path / "t.lackey"
    trace.write_text(LACKEY)
    assert_one_line_error(invoke("cachesim", trace, "-p", "mpc7447a", "--set", "l2.sise_kb=1024"),
                          "l2.sise_kb", "did you mean")


@pytest.mark.parametrize("override, fragment", [
    ("l2.associativity=0", "associativity"),
    ("l2.size_kb=384", "power of two"),                 # 384 KB / 8 ways / 64 B = 768 sets
    ("l1d.line_bytes=48", "power of two"),
    ("l1d.size_kb=0.01", "does not divide"),
    ("l2.replacement=clock", "unknown replacement"),
])
def test_invalid_override_values(tmp_path, override, fragment):
    trace = tmp_path / "t.lackey"
    trace.write_text(LACKEY)
    assert_one_line_error(invoke("cachesim", trace, "-p", "mpc7447a", "--set", override), fragment)


def test_missing_trace_file(tmp_path):
    assert_one_line_error(invoke("cachesim", tmp_path / "nope.lackey", "-p", "mpc7447a"), "no such file")


# ------------------------------------------------------------------------------------ run
def test_run_writes_complete_results_directory_and_is_deterministic(tmp_path):
    scenario = tmp_path / "tiny.toml"
    scenario.write_text(SMALL_SCENARIO)
    out1, out2 = tmp_path / "r1", tmp_path / "r2"
    assert invoke("run", scenario, "--out", out1).exit_code == 0
    assert invoke("run", scenario, "--out", out2).exit_code == 0
    names = {p.name for p in out1.iterdir()}
    assert {"manifest.json", "results.json", "report.html", "totals.parquet", "levels.parquet",
            "tlbs.parquet", "miss_ratios.png", "mpka.png"} <= names
    for table in ("totals", "levels", "tlbs"):
        pd.testing.assert_frame_equal(pd.read_parquet(out1 / f"{table}.parquet"),
                                      pd.read_parquet(out2 / f"{table}.parquet"))
    results = json.loads((out1 / "results.json").read_text())
    assert [r["variant"] for r in results["runs"]] == ["baseline", "big"]
    base, big = results["runs"]
    assert big["levels"]["L2"]["misses"] <= base["levels"]["L2"]["misses"]
    manifest = json.loads((out1 / "manifest.json").read_text())
    assert manifest["seed"] == 7 and manifest["rates"]["simulated_accesses_per_s"] > 0
    assert manifest["parameters"]["runs"][1]["overrides"] == {"l2.size_kb": 1024}
    html = (out1 / "report.html").read_text()
    assert "baseline" in html and "big" in html and "data:image/png;base64," in html


def test_run_seed_override_changes_the_trace(tmp_path):
    scenario = tmp_path / "tiny.toml"
    scenario.write_text(SMALL_SCENARIO)
    assert invoke("run", scenario, "--out", tmp_path / "a").exit_code == 0
    assert invoke("run", scenario, "--out", tmp_path / "b", "--seed", 8).exit_code == 0
    a = pd.read_parquet(tmp_path / "a" / "totals.parquet")
    b = pd.read_parquet(tmp_path / "b" / "totals.parquet")
    assert not a.equals(b)


@pytest.mark.parametrize("edit, fragment", [
    (("study = \"cachesim\"", "study = \"cachesimm\""), "unknown study kind"),
    (("seed = 7", "seed = -1"), "seed"),
    (("\"l2.size_kb\" = 1024", "\"l2.size_kb\" = 1000"), "variants.big"),
    (("accesses = 20000", "accesses = 0"), "trace"),
    (("[trace]", "[trace]\nfile = \"x.lackey\""), "exactly one of"),
    (("platforms = [\"mpc7447a\"]", "platforms = [\"mpc7447\"]"), "unknown platform"),
    (("name = \"tiny\"", "name = \"tiny\"\ncolour = \"blue\""), "colour"),
])
def test_bad_scenario_is_one_line_and_writes_nothing(tmp_path, edit, fragment):
    scenario = tmp_path / "bad.toml"
    scenario.write_text(SMALL_SCENARIO.replace(*edit))
    out = tmp_path / "out"
    assert_one_line_error(invoke("run", scenario, "--out", out), fragment)
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["bad.toml"]


def test_run_missing_scenario_file(tmp_path):
    assert_one_line_error(invoke("run", tmp_path / "none.toml"), "no such file")


def test_run_invalid_toml(tmp_path):
    scenario = tmp_path / "broken.toml"
    scenario.write_text("name = \n")
    assert_one_line_error(invoke("run", scenario, "--out", tmp_path / "o"), "invalid TOML")


# ------------------------------------------------------------------------------------ validate
def test_validate_quick_json_memory_checks():
    result = invoke("validate", "--quick", "--json", "--only",
                    "cache: cyclic sweep over more lines than an LRU set holds misses every time",
                    "--only", "tlb: a page-sized stride touches one TLB entry per access")
    assert result.exit_code == 0, result.output
    checks = json.loads(result.stdout)["checks"]
    assert len(checks) == 2
    assert all(set(c) >= {"name", "expected", "measured", "passed"} and c["passed"] for c in checks)


def test_validate_unknown_check():
    assert_one_line_error(invoke("validate", "--only", "no such check"), "unknown check")


def test_csv_writes_every_table_beside_its_parquet(tmp_path):
    """--csv exists wherever a command writes a results directory; every table gets its CSV twin with the
    same rows, and the manifest lists both."""
    scenario = tmp_path / "tiny.toml"
    scenario.write_text(SMALL_SCENARIO)
    out = tmp_path / "run"
    assert invoke("run", scenario, "--out", out, "--csv").exit_code == 0
    parquets = sorted(p.stem for p in out.glob("*.parquet"))
    assert parquets and parquets == sorted(p.stem for p in out.glob("*.csv"))
    for stem in parquets:
        assert len(pd.read_csv(out / f"{stem}.csv")) == len(pd.read_parquet(out / f"{stem}.parquet"))
    files = json.loads((out / "manifest.json").read_text())["files"]
    assert all(f"{stem}.csv" in files for stem in parquets)
    plain = tmp_path / "plain"
    assert invoke("run", scenario, "--out", plain).exit_code == 0
    assert not list(plain.glob("*.csv"))
    for cmd in (["simulate"], ["gc"], ["mine"], ["regress"], ["profile"], ["hbench", "predict"],
                ["hbench", "os-vector"]):
        assert "--csv" in invoke(*cmd, "--help").stdout, cmd


def test_cachesim_seed_places_pages(tmp_path):
    """--seed is the physical page placement: the same seed gives the same counts, and on the 7447A
    (scattered frames, a physically indexed 512 KB L2) other seeds move the L2 misses of a trace whose
    footprint is near the L2's size."""
    trace = tmp_path / "t.wtr"
    assert invoke("trace", "synth", trace, "--accesses", "300000", "--seed", "3").exit_code == 0
    def l2(seed):
        r = invoke("cachesim", trace, "-p", "mpc7447a", "--seed", seed, "--json")
        assert r.exit_code == 0, r.output
        doc = json.loads(r.stdout)
        assert doc["seed"] == seed
        return doc["levels"]["L2"]["misses"]
    assert l2(1) == l2(1)
    assert len({l2(s) for s in (1, 2, 3, 4)}) > 1


def _wide_table():
    from rich.table import Table

    table = Table(*[f"baseline / variant {i}" for i in range(10)])
    table.add_row(*[f"{1000 + i}.25" for i in range(10)])
    return table


def test_results_into_a_file_or_pipe_print_tables_whole(monkeypatch, capsys):
    from whatif.scenarios.render import stdout_console

    monkeypatch.delenv("COLUMNS", raising=False)
    stdout_console().print(_wide_table())
    out = capsys.readouterr().out
    assert "…" not in out
    header = next(line for line in out.splitlines() if "variant 0" in line)
    assert all(f"baseline / variant {i}" in header for i in range(10))
    assert all(f"{1000 + i}.25" in out for i in range(10))


def test_an_explicit_terminal_width_is_kept(monkeypatch, capsys):
    from whatif.scenarios.render import stdout_console

    monkeypatch.setenv("COLUMNS", "80")
    stdout_console().print(_wide_table())
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "baseline / variant 9" not in out


MAIN = ("import atexit, sys; from whatif.cli import main; "
        "atexit.register(lambda: print('exit handler ran', file=sys.stderr)); "
        "sys.argv = ['whatif'] + sys.argv[1:]; main()")


@pytest.mark.parametrize("args, status", [(["show", "platform", "nehalem", "--json"], 0),
                                          (["show", "platform", "nosuch"], 2),
                                          (["list"], 2)])
def test_the_installed_program_ends_with_the_commands_status_output_and_exit_handlers(args, status):
    """``main()`` ends the process with ``os._exit`` (no interpreter teardown): the exit handlers still
    run, the whole output arrives through the pipe, and the status is the command's."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", MAIN, *args], capture_output=True, text=True, timeout=120)
    assert out.returncode == status
    assert out.stderr.splitlines()[-1] == "exit handler ran"
    if status == 0:
        doc = json.loads(out.stdout)                           # complete: it parses
        assert doc == json.loads(runner.invoke(app, args).stdout)
    else:
        assert out.stdout == "" and out.stderr.startswith("whatif: error: ")
        assert len(out.stderr.splitlines()) == 2                # one line, then the handler's
