"""The planted-sequence validation check finds every planted sequence with the definitions' supports."""

from whatif.scenarios.checks import registry as validation
from whatif.scenarios.checks.flowgsp import planted_sequences


def test_planted_check_is_registered_and_passes():
    assert "flowgsp-planted" in validation.registered_checks()
    rows = planted_sequences(quick=True)
    assert len(rows) == 4
    assert all(r.passed for r in rows), [r.as_dict() for r in rows]
    assert all(r.measured is not None and r.expected > 0 for r in rows)
    assert {r.name.split()[-1] for r in rows} == {"S_f", "S_w"}


def test_planted_agi_pathology_is_found_and_absent_from_the_control():
    from whatif.scenarios.checks.flowgsp_agi import PLANTED_METHODS, control_variant, planted_agi, planted_variant
    from whatif.simulator.synth import Synthesizer

    assert "flowgsp-agi-planted" in validation.registered_checks()
    assert control_variant().dependences.agi == 0.0
    program = Synthesizer(planted_variant(), "z/Architecture", seed=0).program
    assert program.agi_planted.sum() > 100                      # loads and stores right after their ALU op
    at = program.agi_planted.nonzero()[0]
    assert (program.areg[at] == program.dst[at - 1]).all()      # the base comes from the instruction before
    (row,) = planted_agi(quick=True)
    assert row.passed, row.as_dict()
    planted_rank, control_rank = (int(x.split()[1].rstrip(",")) if x.split()[1] != "None" else None
                                  for x in row.measured.split(", "))
    assert planted_rank <= 10 and (control_rank is None or control_rank > 10)
    assert f"{PLANTED_METHODS} planted methods" in row.detail
