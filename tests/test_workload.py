"""Workload descriptions: the shipped catalogs, name lookup, phase resolution, and one test per
kind of bad input (each a single line naming the file and the field)."""

from __future__ import annotations

import pytest

from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.workload import (SCHEMA_VERSION, catalog_paths, load_catalog, load_workload, phase_lengths,
                                workload_from_dict, workload_names)

CINT2006 = ["400.perlbench", "401.bzip2", "403.gcc", "429.mcf", "445.gobmk", "456.hmmer", "458.sjeng",
            "462.libquantum", "464.h264ref", "471.omnetpp", "473.astar", "483.xalancbmk"]
# seed 000 Table III (H_min in kB; the seed misspells mtrt as "mrtt")
SEED000_HMIN = {"compress": 8193, "jess": 2177, "raytrace": 4097, "db": 8193, "javac": 8193, "mpegaudio": 2177,
                "mtrt": 6145, "jack": 2177, "ecm": 2177}

GOOD = """schema_version = 1
description = "test catalog"
[workloads.w]
description = "a workload"
mix = { load = 0.25, store = 0.1, branch = 0.2, fp = 0.0, other = 0.45 }
[workloads.w.streams.heap]
kind = "random"
footprint_kb = 64
[[workloads.w.phases]]
name = "one"
fraction = 0.5
[[workloads.w.phases]]
name = "two"
fraction = 0.5
"""


def write(tmp_path, text: str):
    path = tmp_path / "cat.toml"
    path.write_text(text)
    return path


def load_error(tmp_path, text: str) -> str:
    path = write(tmp_path, text)
    with pytest.raises(SimulatorInputError) as exc:
        load_workload(f"{path}:w")
    msg = str(exc.value)
    assert "\n" not in msg
    assert str(path) in msg
    return msg


# ------------------------------------------------------------------------------------------ catalogs
def test_shipped_catalogs_load():
    stems = sorted(p.stem for p in catalog_paths())
    assert stems == ["cint2006", "specjvm98", "websphere", "yahoo_y"]
    for path in catalog_paths():
        cat = load_catalog(path)
        assert cat.schema_version == SCHEMA_VERSION and cat.description
        for name, wl in cat.workloads.items():
            assert wl.description and wl.streams
            assert load_workload(f"{path.stem}/{name}").spec is wl


def test_specjvm98_has_the_seed_000_programs_and_minimum_heaps():
    cat = load_catalog([p for p in catalog_paths() if p.stem == "specjvm98"][0])
    assert {n: w.min_heap_kb for n, w in cat.workloads.items()} == SEED000_HMIN


def test_cint2006_has_the_seed_002_programs():
    cat = load_catalog([p for p in catalog_paths() if p.stem == "cint2006"][0])
    assert sorted(cat.workloads) == CINT2006
    for name, wl in cat.workloads.items():
        assert wl.description.startswith(name + ":")
        assert wl.min_heap_kb is None


def test_yahoo_y_is_large_and_control_intensive():
    y = load_workload("yahoo_y/Y").spec
    cint = [load_workload(n).spec for n in CINT2006]
    assert sum(s.footprint_kb for s in y.streams.values()) > max(sum(s.footprint_kb for s in c.streams.values())
                                                                 for c in cint)
    assert y.mix.branch >= sorted(c.mix.branch for c in cint)[-3]


def test_names_and_listing():
    names = workload_names()
    assert len(names) == 23 and "cint2006/429.mcf" in names and "specjvm98/compress" in names
    assert "websphere/was" in names
    from whatif.scenarios.commands.catalog import listing
    listed = dict(listing("workloads"))
    assert listed["cint2006/429.mcf"].startswith("429.mcf:")
    assert set(listed) == set(names)


@pytest.mark.parametrize("text,name", [("cint2006/429.mcf", "429.mcf"), ("429.mcf", "429.mcf"), ("mcf", "429.mcf"),
                                       ("compress", "compress"), ("Y", "Y"), (" db ", "db")])
def test_lookup_forms(text, name):
    assert load_workload(text).name == name


def test_lookup_by_file(tmp_path):
    path = write(tmp_path, GOOD)
    assert load_workload(f"{path}:w").name == "w"
    assert load_workload(str(path)).name == "w"           # the only workload of the file


def test_phase_resolution_merges_overrides():
    doc = {"description": "d", "mix": {"load": 0.3, "store": 0.1, "branch": 0.2, "fp": 0.0, "other": 0.4},
           "branches": {"loops": 0.3},
           "streams": {"a": {"kind": "sequential", "footprint_kb": 64, "weight": 2.0},
                       "b": {"kind": "random", "footprint_kb": 64, "store_weight": 3.0}},
           "phases": [{"name": "x", "fraction": 0.25, "branches": {"loop_trips": 20}},
                      {"name": "y", "fraction": 0.75, "stream_weights": {"b": 1.0},
                       "mix": {"load": 0.2, "other": 0.5}}]}
    x, y = workload_from_dict(doc).phases()
    assert x.branches.loops == 0.3 and x.branches.loop_trips == 20
    assert x.load_weights == {"a": 2.0, "b": 1.0} and x.store_weights == {"a": 2.0, "b": 3.0}
    assert y.mix.load == 0.2 and y.mix.store == 0.1 and y.branches.loop_trips == 8.0
    assert y.load_weights == {"a": 0.0, "b": 1.0} == y.store_weights


def test_phase_lengths():
    doc = workload_from_dict({"description": "d", "instructions": 1000, "phase_repeat": 2,
                              "mix": {"load": 0.3, "store": 0.1, "branch": 0.2, "fp": 0.0, "other": 0.4},
                              "streams": {"a": {"kind": "sequential", "footprint_kb": 64}},
                              "phases": [{"name": "x", "fraction": 0.3}, {"name": "y", "fraction": 0.7}]}).spec
    assert phase_lengths(doc) == [150, 350]
    assert phase_lengths(doc, 10_000) == [1500, 3500]
    absolute = doc.model_copy(update={"phases": [p.model_copy(update={"fraction": None, "instructions": 77})
                                                 for p in doc.phases]})
    assert phase_lengths(absolute, 10_000) == [77, 77]


# ------------------------------------------------------------------------------------------ bad input
def test_unknown_workload_lists_the_known_ones():
    with pytest.raises(SimulatorInputError) as exc:
        load_workload("nosuch")
    msg = str(exc.value)
    assert msg.startswith("unknown workload 'nosuch'; known: ") and "cint2006/429.mcf" in msg and "\n" not in msg


def test_negative_size(tmp_path):
    msg = load_error(tmp_path, GOOD.replace("footprint_kb = 64", "footprint_kb = -4"))
    assert "workloads.w.streams.heap.footprint_kb: Input should be greater than 0 (got -4)" in msg


def test_negative_function_count(tmp_path):
    msg = load_error(tmp_path, GOOD + "[workloads.w.code]\nfunctions = -3\n")
    assert "workloads.w.code.functions: Input should be greater than 0 (got -3)" in msg


def test_probability_above_one(tmp_path):
    msg = load_error(tmp_path, GOOD + "[workloads.w.branches]\nrandom_taken = 1.5\n")
    assert "workloads.w.branches.random_taken: Input should be less than or equal to 1 (got 1.5)" in msg


def test_probability_below_zero(tmp_path):
    msg = load_error(tmp_path, GOOD + "[workloads.w.dependences]\nagi = -0.1\n")
    assert "workloads.w.dependences.agi: Input should be greater than or equal to 0 (got -0.1)" in msg


def test_mix_does_not_sum_to_one(tmp_path):
    msg = load_error(tmp_path, GOOD.replace("other = 0.45", "other = 0.55"))
    assert "workloads.w.mix: load + store + branch + fp + other must sum to 1 (got 1.1)" in msg


def test_phase_mix_override_does_not_sum_to_one(tmp_path):
    msg = load_error(tmp_path, GOOD + 'mix = { load = 0.5 }\n')
    assert "workloads.w.phases.1.mix: load + store + branch + fp + other must sum to 1 (got 1.25)" in msg


def test_branch_kinds_do_not_sum_to_one(tmp_path):
    msg = load_error(tmp_path, GOOD + "[workloads.w.branches]\nbiased = 0.5\n")
    assert "workloads.w.branches: biased + periodic + random must sum to 1 (got 0.75)" in msg


def test_phase_fractions_do_not_sum_to_one(tmp_path):
    msg = load_error(tmp_path, GOOD.replace("fraction = 0.5\n[[", "fraction = 0.2\n[["))
    assert "workloads.w: phases: fractions must sum to 1 (got 0.7)" in msg


def test_phase_with_both_lengths(tmp_path):
    msg = load_error(tmp_path, GOOD + "instructions = 1000\n")
    assert "phase 'two': give exactly one of fraction and instructions" in msg


def test_unknown_stream_in_phase_weights(tmp_path):
    msg = load_error(tmp_path, GOOD + "stream_weights = { nosuch = 1.0 }\n")
    assert "workloads.w.phases.1.stream_weights: unknown stream 'nosuch'; known: heap" in msg


def test_loads_without_streams(tmp_path):
    text = GOOD.replace('[workloads.w.streams.heap]\nkind = "random"\nfootprint_kb = 64\n', "")
    msg = load_error(tmp_path, text)
    assert "workloads.w.phases.0: mix.load is 0.25 but the loads have no data streams" in msg


def test_unknown_field(tmp_path):
    msg = load_error(tmp_path, GOOD + "[workloads.w.code]\nfunktions = 3\n")
    assert "workloads.w.code.funktions: unknown field" in msg


def test_unknown_stream_kind(tmp_path):
    msg = load_error(tmp_path, GOOD.replace('kind = "random"', 'kind = "zigzag"'))
    assert "workloads.w.streams.heap.kind:" in msg and "'sequential'" in msg


def test_stride_not_a_multiple_of_the_element(tmp_path):
    text = GOOD.replace('kind = "random"', 'kind = "strided"\nstride_bytes = 100\nelement_bytes = 8')
    msg = load_error(tmp_path, text)
    assert "stride_bytes (100) must be a multiple of element_bytes (8)" in msg


def test_footprint_smaller_than_a_unit(tmp_path):
    msg = load_error(tmp_path, GOOD.replace("footprint_kb = 64", "footprint_kb = 0.01"))
    assert "footprint_kb (0.01) is smaller than one random unit (64 bytes)" in msg


def test_unsupported_schema_version(tmp_path):
    msg = load_error(tmp_path, GOOD.replace("schema_version = 1", "schema_version = 7"))
    assert "schema_version 7 is not supported (this whatif reads version 1" in msg


def test_invalid_toml(tmp_path):
    msg = load_error(tmp_path, GOOD + "[[[")
    assert "invalid TOML" in msg


def test_missing_workload_in_file(tmp_path):
    path = write(tmp_path, GOOD)
    with pytest.raises(SimulatorInputError, match=r"no workload 'x'; known: w$"):
        load_workload(f"{path}:x")


def test_too_many_chase_streams(tmp_path):
    chase = "".join(f'[workloads.w.streams.c{i}]\nkind = "chase"\nfootprint_kb = 64\n' for i in range(4))
    msg = load_error(tmp_path, GOOD + chase)
    assert "workloads.w: streams: at most 3 chase streams are supported" in msg


def test_unknown_isa():
    from whatif.simulator.synth import Synthesizer
    with pytest.raises(SimulatorInputError, match="unknown ISA 'vax'; known: "):
        Synthesizer("compress", "vax")


@pytest.mark.parametrize("jit, fragment", [
    ("prologue_instructions = 2", "prologue_instructions must be 0 or at least 4"),
    ("prologue_instructions = 4", "stack_stream"),
    ('prologue_instructions = 4\nstack_stream = "nope"', "jit.stack_stream: unknown stream 'nope'"),
    ("inlined = [0.1, 0.2, 0.0]", "shares must not increase"),
    ("inlined = [0.1]", "levels 1, 2 and 3"),
    ("method_spacing_bytes = -1", "method_spacing_bytes"),
])
def test_bad_jit_table(tmp_path, jit, fragment):
    assert fragment in load_error(tmp_path, GOOD + f"[workloads.w.jit]\n{jit}\n")
