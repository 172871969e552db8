"""The program-identity check (issue 15, item 1): its statistics, and a reduced run of its measurement."""

from __future__ import annotations

import numpy as np
import pytest

from whatif.scenarios.checks import identity
from whatif.scenarios.checks.registry import CHECK_MODULES, registered_checks


def test_registered():
    assert "whatif.scenarios.checks.identity" in CHECK_MODULES
    assert "identity: binaries of one workload description run alike" in registered_checks()
    assert len(identity.workloads(False)) == 12 and len(identity.workloads(True)) == 4


def test_binary_agreement_statistics():
    sig = np.array([[0.1, 0.5, -0.2, 0.9, 0.0]] * 3)
    cv, rho = identity.binary_agreement(np.array([1.0, 1.1, 0.9]), sig)
    assert cv == pytest.approx(0.1) and rho == pytest.approx(1.0)
    # one binary's ranks reversed: two of the three pairs at -1, so the median is -1
    flipped = sig.copy()
    flipped[1] = -flipped[1]
    _, rho = identity.binary_agreement(np.ones(3), flipped)
    assert rho == pytest.approx(-1.0)
    # an all-tied signature has no ranking: its pairs count 0
    tied = sig.copy()
    tied[0] = 0.0
    tied[1] = 0.0
    _, rho = identity.binary_agreement(np.ones(3), tied)
    assert rho == 0.0


def test_a_signature_rho_of_exactly_the_goal_passes():
    """Two swapped neighbours in each of two pairs: rho = 1 - 6 * 4 / 120 = 0.8, which the rank correlation
    computes as 0.7999999999999999."""
    sig = np.array([[1.0, 2, 3, 4, 5], [2, 1, 3, 5, 4], [1, 2, 3, 4, 5]])
    cv, rho = identity.binary_agreement(np.ones(3), sig)
    assert rho == pytest.approx(0.8) and identity.meets_goals(cv, rho)
    assert not identity.meets_goals(cv, 0.79) and not identity.meets_goals(0.051, 1.0)


def test_reduced_measurement_is_deterministic_and_binaries_differ(monkeypatch):
    monkeypatch.setitem(identity.SIZES, True, dict(binaries=3, instructions=150_000, warmup=50_000,
                                                   time_scale=2e-7))
    cpi, sig, stalls, n_int = identity.measure_rows([("cint2006/462.libquantum", "nehalem")], quick=True)[0]
    assert sig.shape == (3, len(stalls)) and "RAT_STALLS.ANY" in stalls and n_int >= 3
    assert (cpi > 0.2).all() and len(set(np.round(cpi, 9))) == 3        # three layouts and inputs
    # again, as a row among others run by a pool of two processes (as the check runs them)
    rows = [("cint2006/401.bzip2", "westmere"), ("cint2006/462.libquantum", "nehalem")]
    pooled = identity.measure_rows(rows, quick=True, workers=2)
    assert np.array_equal(cpi, pooled[1][0]) and np.array_equal(sig, pooled[1][1])
    assert not np.array_equal(cpi, pooled[0][0])


def test_rows_say_how_far_each_signature_is_from_noise(monkeypatch):
    """A row's detail gives each binary's largest |r(CPI, stall)|: a signature whose components are all
    near zero ranks noise, and its rho says nothing about the program."""
    sig = np.array([[0.1, -0.9, 0.2, 0.0, 0.3], [0.05, 0.1, -0.12, 0.0, 0.02], [0.4, 0.3, 0.2, 0.1, 0.0]])
    monkeypatch.setattr(identity, "workloads", lambda quick: ("cint2006/456.hmmer",))
    monkeypatch.setattr(identity, "measure_rows",
                        lambda rows, quick, workers=1: [(np.ones(3), sig, tuple("abcde"), 9)] * len(rows))
    rows = identity.program_identity(True)
    assert len(rows) == len(identity.PLATFORMS)
    assert all("largest |r(CPI, stall)| per binary 0.90, 0.12, 0.40" in r.detail for r in rows)
