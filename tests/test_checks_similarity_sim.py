"""Ground-truth checks on simulated workloads: the planted variants are their parents' programs on data of other
sizes, and the quick checks run and report what they measured."""

import numpy as np
import pytest

from whatif.models.similarity import adjusted_rand_index
from whatif.scenarios.checks import similarity_sim as chk
from whatif.scenarios.checks.registry import CHECK_MODULES
from whatif.simulator.isa import isa_for
from whatif.simulator.synth.compare import program_change
from whatif.simulator.synth.program import build_program
from whatif.simulator.workload import load_workload


def test_variant_is_its_parents_program_on_data_of_other_sizes():
    parent = load_workload("401.bzip2").spec
    a = chk.perturbed_variant("401.bzip2", 0, np.random.default_rng(3)).spec
    b = chk.perturbed_variant("401.bzip2", 0, np.random.default_rng(3)).spec
    assert a == b                                                    # seeded: same draw, same workload
    for name, stream in parent.streams.items():
        ratio = a.streams[name].footprint_kb / stream.footprint_kb
        assert ratio != 1.0 and 0.85 < ratio < 1.15
    strip = {"streams"}
    assert a.model_dump(exclude=strip) == parent.model_dump(exclude=strip)     # mix, branches, phases: the parent's
    # the code is the parent's: no control transfer, block length, class or stream binding moves; only the
    # dependence calibration's walk sees other addresses, which may move a register choice or two
    isa = isa_for("x86_64")
    change = program_change(build_program(parent, isa, 0), build_program(a, isa, 0))
    assert change["structure"] == change["lengths"] == change["class"] == change["stream"] == 0.0
    assert change["dataflow"] < 0.02


def test_planted_workloads_hold_families_and_one_held_out_each():
    members, families, extra = chk.planted_workloads(quick=True)
    size = chk.SIZES[True]
    assert len(members) == size["parents"] * size["variants"] and len(extra) == size["parents"]
    assert families == [f for f in range(size["parents"]) for _ in range(size["variants"])]
    assert {w.name.split("~")[0] for w in extra} == set(chk.PARENTS[:size["parents"]])


def test_quick_checks_are_registered_and_report_consistent_figures():
    assert "whatif.scenarios.checks.similarity_sim" in CHECK_MODULES
    fam = chk.check_sim_families(True)
    assert fam.expected == f">= {chk.ARI_GOAL}" and -1.0 <= fam.measured <= 1.0
    assert fam.passed == (fam.measured >= chk.ARI_GOAL)
    # the ARI is recomputable from the clusters it reports
    clusters = [c.split(", ") for c in fam.detail.split("clusters: ")[1].strip("{}").split("}; {")]
    names = [a for c in clusters for a in c]
    labels = np.array([i for i, c in enumerate(clusters) for _ in c])
    truth = np.array([chk.PARENTS.index(a.split("~")[0]) for a in names])
    assert adjusted_rand_index(labels, truth) == pytest.approx(fam.measured, abs=1e-4)
    table9, held_out = chk.check_sim_direction(True)
    assert table9.passed, table9.detail                              # the engine's Table 9 = the recount
    assert "/" in held_out.measured and held_out.expected.startswith(">=")
