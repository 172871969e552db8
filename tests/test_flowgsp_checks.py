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
