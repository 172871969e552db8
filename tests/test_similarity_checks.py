"""The similarity validation checks are registered and pass on their planted ground truth."""

import numpy as np

from whatif.models.similarity import average_ranks
from whatif.scenarios.checks import registry as validation
from whatif.scenarios.checks.similarity import planted_families, synthetic_time_series
from whatif.models.similarity.rank import similarity_matrix, spearman_embedding


def test_checks_registered_and_pass_quick():
    checks = validation.registered_checks()
    assert {"similarity-planted-families", "similarity-signature-recovery"} <= set(checks)
    results = validation.run_checks(quick=True, only=["similarity-planted-families", "similarity-signature-recovery"])
    assert len(results) == 4
    assert all(r.passed for r in results), [r.as_dict() for r in results]
    ari = next(r for r in results if r.name.endswith("Algorithm 1 ARI"))
    assert ari.measured >= 0.9


def test_planted_parents_are_well_separated():
    rng = np.random.default_rng(0)
    sig, fam = planted_families(4, 3, 0.0, rng)
    assert np.bincount(fam).tolist() == [3, 3, 3, 3]
    sim = similarity_matrix(spearman_embedding(sig))
    same = fam[:, None] == fam[None, :]
    assert np.all(sim[same] == 1.0) and np.all(sim[~same] <= 0.2 + 1e-12)


def test_synthetic_series_have_the_planted_sample_correlations():
    rng = np.random.default_rng(1)
    planted = np.array([[0.5, -0.2, 0.9, 0.0, -0.8]])
    df = synthetic_time_series(planted, 25, rng, exact=True)
    cpi = df["cycles"] / df["instructions"]
    r = [np.corrcoef(cpi, df[c] / df["cycles"])[0, 1] for c in df.columns if "STALLS" in c]
    np.testing.assert_allclose(r, planted[0], atol=1e-6)
    assert average_ranks(np.array([r]))[0].tolist() == [4, 2, 5, 3, 1]
