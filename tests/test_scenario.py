"""Scenario files: every shipped one loads and plans; seeds mean one thing; names are plain file names;
everything that can fail on the input fails when the scenario loads, before any simulation."""

from __future__ import annotations

from pathlib import Path

import pytest

from whatif.scenarios.errors import ScenarioError
from whatif.scenarios.registry import StudyKind, study_kinds
from whatif.scenarios.runner import load_study
from whatif.scenarios.scenario import MAX_RUNS, Scenario, expand_runs, program_seeds, replicate_seeds

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
SHIPPED = sorted(SCENARIOS.glob("*.toml"))


def test_the_shipped_scenarios_are_the_ones_the_readme_names():
    readme = (SCENARIOS.parent / "README.md").read_text()
    assert "quickstart.toml" in {p.name for p in SHIPPED}
    for path in SHIPPED:
        assert f"scenarios/{path.name}" in readme, path.name


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_every_shipped_scenario_loads_and_plans(path):
    study, runs = load_study(path)
    kinds = study_kinds()
    assert type(study) is kinds[study.scenario.study]
    assert runs and all(r.platform in study.scenario.platforms for r in runs)
    variants = list(study.scenario.variants)
    assert list(dict.fromkeys(r.variant for r in runs)) == variants
    assert len({r.id for r in runs}) == len(runs)                      # every run has its own label


def test_every_study_kind_declares_typed_sections():
    kinds = study_kinds()
    assert {"cachesim", "capacity", "flowgsp", "simulate", "hbench-gc", "hbench-os", "regression",
            "similarity"} <= set(kinds)
    for name, kind in kinds.items():
        assert issubclass(kind, StudyKind) and kind.name == name
        assert kind.run is not StudyKind.run, name
        for section, model in kind.sections.items():
            assert model.model_config.get("extra") == "forbid", (name, section)


def scenario(**fields) -> Scenario:
    base = dict(name="s", study="cachesim", seed=5, platforms=["mpc7447a", "harpertown"])
    return Scenario.model_validate({**base, **fields})


def test_seeds_mean_one_thing():
    sc = scenario(replicates=3, binaries=2, variants={"a": {}, "b": {"l1d.associativity": 4}})
    runs = expand_runs(sc, "s.toml")
    assert len(runs) == 2 * 2 * 2 * 3
    # the scenario seed is the first program; replicate seeds are shared by every variant, platform, binary
    assert program_seeds(sc)[0] == 5 and len(set(program_seeds(sc))) == 2
    reps = replicate_seeds(sc)
    assert len(set(reps)) == 3
    for r in runs:
        assert r.seed == reps[r.replicate]
        assert r.program_seed == program_seeds(sc)[r.binary]
    # replicates of one program differ only in the replicate seed
    same_program = {(r.variant, r.platform, r.program_seed) for r in runs}
    assert len(same_program) == 2 * 2 * 2
    # one binary unless a study asks for more: every run is the scenario seed's program
    assert {r.program_seed for r in expand_runs(scenario(replicates=4), "s.toml")} == {5}


def test_seeds_do_not_depend_on_the_other_axes():
    small = {(r.replicate, r.seed) for r in expand_runs(scenario(replicates=2), "s.toml")}
    big = {(r.replicate, r.seed) for r in expand_runs(scenario(replicates=2, variants={"a": {}, "b": {}}),
                                                       "s.toml")}
    assert small == big


@pytest.mark.parametrize("name", ["..", ".", "../x", "a/b", "a\\b", ".hidden", ""])
def test_names_are_plain_file_names(name):
    with pytest.raises(ValueError):
        scenario(name=name)


def test_too_many_runs_fail_before_any_is_built():
    sc = scenario(replicates=MAX_RUNS)
    with pytest.raises(ScenarioError, match=f"plans {2 * MAX_RUNS:,} runs"):
        expand_runs(sc, "s.toml")


REGRESSION = """
schema_version = 1
name = "tiny-regression"
study = "regression"
platforms = ["mpc7447a"]
workloads = ["specjvm98/compress", "specjvm98/db"]

[regression]
heap_factors = [1.0, 2.0]
"""


def test_a_regression_that_cannot_fit_fails_at_load_not_after_simulating(tmp_path, monkeypatch):
    kind = study_kinds()["regression"]
    monkeypatch.setattr(kind, "run", lambda self, ctx: pytest.fail("simulated before refusing"))
    path = tmp_path / "r.toml"
    path.write_text(REGRESSION)
    with pytest.raises(ScenarioError, match=r"regression: variant baseline: the order-2 model has at least \d+ "
                                            r"coefficients but 10-fold cross-validation fits on 3 of the 4 rows"):
        load_study(path)


def test_an_unknown_study_kind_lists_the_known_ones(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('schema_version = 1\nname = "s"\nstudy = "nope"\nplatforms = ["mpc7447a"]\n')
    with pytest.raises(ScenarioError, match="unknown study kind 'nope'; known: cachesim, capacity, flowgsp, "
                                            "hbench-gc, hbench-java, hbench-os, regression"):
        load_study(path)


def test_a_section_of_another_study_kind_is_refused(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('schema_version = 1\nname = "s"\nstudy = "cachesim"\nplatforms = ["mpc7447a"]\n'
                    '[trace]\nsynthetic = "mixed"\n[regression]\norder = 1\n')
    with pytest.raises(ScenarioError, match=r"regression: unknown field \(the cachesim study reads: trace\)"):
        load_study(path)
