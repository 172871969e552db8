"""Ground-truth checks of the similarity engine (seed 002) for ``whatif validate``.

* ``similarity-planted-families``: families planted in signature space (a few parent signatures with
  well-separated stall rankings; children = parent + Gaussian noise).  Algorithm 1 should recover the
  families (adjusted Rand index >= 0.9) and Algorithm 2, started from any child, should return mostly
  members of its own family.
* ``similarity-signature-recovery``: counter time series synthesised so that each stall ratio has a chosen
  Pearson correlation with CPI — exactly (by construction of the sample) and in distribution (population
  correlation, sampling noise).  The signatures the engine computes from the counts must give them back.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from whatif.models.similarity import SimilarityEngine, adjusted_rand_index, average_ranks, signatures_from_arrays
from whatif.models.similarity.rank import spearman_embedding
from whatif.scenarios.checks.registry import CheckResult, register_check

STALLS = ("RESOURCE_STALLS.LOAD", "RESOURCE_STALLS.STORE", "RAT_STALLS.ANY", "RESOURCE_STALLS.ROB_FULL",
          "RESOURCE_STALLS.RS_FULL")
ARI_GOAL = 0.9


def planted_families(n_families: int, children: int, noise: float, rng: np.random.Generator,
                     m: int = len(STALLS), max_parent_rho: float = 0.2):
    """Parent signatures whose rankings differ (pairwise Spearman rho <= max_parent_rho); children add noise."""
    parents: list[np.ndarray] = []
    for _ in range(10_000):
        cand = rng.uniform(-0.9, 0.9, size=m)
        e = spearman_embedding(np.vstack(parents + [cand]))
        if all(e[-1] @ e[i] <= max_parent_rho for i in range(len(parents))):
            parents.append(cand)
            if len(parents) == n_families:
                break
    else:  # pragma: no cover - the parameters below always find parents
        raise RuntimeError("could not draw well-separated parents")
    sig, fam = [], []
    for f, p in enumerate(parents):
        for _ in range(children):
            sig.append(np.clip(p + rng.normal(0.0, noise, size=m), -1.0, 1.0))
            fam.append(f)
    order = rng.permutation(len(sig))
    return np.asarray(sig)[order], np.asarray(fam)[order]


def _family_ari(n_fam: int, children: int, noise: float, rng: np.random.Generator):
    sig, fam = planted_families(n_fam, children, noise, rng)
    apps = [f"app{i:03d}" for i in range(len(sig))]
    data = signatures_from_arrays({"planted": (apps, STALLS, sig)})
    res = SimilarityEngine(threshold=0.5, kmeans=(n_fam,), seed=1).fit_signatures(data)["planted"]
    return (adjusted_rand_index(res.clustering.labels, fam), adjusted_rand_index(res.kmeans[n_fam].labels, fam),
            res, data, apps, fam)


@register_check("similarity-planted-families")
def check_planted_families(quick: bool) -> list[CheckResult]:
    rng = np.random.default_rng(20110503)
    n_fam, children, noise = (4, 6, 0.05) if quick else (5, 20, 0.05)
    ari, ari_km, res, data, apps, fam = _family_ari(n_fam, children, noise, rng)
    detail = (f"{n_fam} families x {children} children, noise sd {noise}, g = 0.5; {res.clustering.n_clusters} "
              f"clusters; {n_fam}-means ARI = {ari_km:.3f}")
    if not quick:   # how fast the rank-based clustering degrades as noise approaches the component gaps
        for harder in (0.1, 0.2):
            a, k = _family_ari(n_fam, children, harder, np.random.default_rng(20110503))[:2]
            detail += f"; noise {harder}: ARI {a:.3f} (k-means {k:.3f})"
    out = [CheckResult("similarity-planted-families: Algorithm 1 ARI", f">= {ARI_GOAL}", round(ari, 4),
                       ari >= ARI_GOAL, detail)]
    # Algorithm 2 from each family's first child: share of its cluster (reference excluded) from its family
    precisions = []
    for f in range(n_fam):
        ref = int(np.flatnonzero(fam == f)[0])
        r2 = SimilarityEngine(threshold=0.5, reference=apps[ref], kmeans=()).fit_signatures(data)["planted"]
        others = [res.index[a] for a in r2.reference_cluster if a != apps[ref]]
        precisions.append(float(np.mean(fam[others] == f)) if others else 0.0)
    prec = float(np.mean(precisions))
    out.append(CheckResult("similarity-planted-families: Algorithm 2 precision", f">= {ARI_GOAL}", round(prec, 4),
                           prec >= ARI_GOAL, "share of each reference's cluster that is its own family, "
                                             "averaged over one reference per family"))
    return out


def synthetic_time_series(planted: np.ndarray, n_intervals: int, rng: np.random.Generator, exact: bool,
                          platform: str = "synthetic") -> pd.DataFrame:
    """Counter time series whose stall ratios correlate with CPI as ``planted`` (apps x stalls) says.

    exact=True: every sample correlation equals the planted value (noise orthogonalised against CPI);
    exact=False: the planted values are population correlations (independent Gaussian noise).
    """
    rows = []
    t = np.arange(n_intervals) * 5.0 + 10.0          # s_d = 10 s, s_p = 5 s, s_i = 3 s
    for a, r in enumerate(planted):
        cpi = 1.2 + 0.4 * rng.gamma(4.0, 0.25, size=n_intervals)
        z = (cpi - cpi.mean()) / np.linalg.norm(cpi - cpi.mean())
        ratios = np.empty((n_intervals, len(r)))
        for j, rho in enumerate(r):
            e = rng.normal(size=n_intervals)
            if exact:
                e -= e.mean()
                e -= (e @ z) * z
                e /= np.linalg.norm(e)
                y = rho * z + np.sqrt(1.0 - rho ** 2) * e
            else:
                zs = z * np.sqrt(n_intervals)
                y = rho * zs + np.sqrt(1.0 - rho ** 2) * e
            ratios[:, j] = 0.08 + 0.02 * (y - y.min()) / max(np.ptp(y), 1e-12)
        instructions = rng.integers(2_000_000_000, 3_000_000_000, size=n_intervals).astype(np.float64)
        cycles = np.round(cpi * instructions)
        block = pd.DataFrame({"workload": f"w{a:02d}", "platform": platform, "t_start": t, "t_end": t + 3.0,
                              "cycles": cycles, "instructions": instructions})
        for j, name in enumerate(STALLS):
            block[name] = np.round(ratios[:, j] * cycles)
        block["dl1_miss"] = rng.integers(0, 10**6, size=n_intervals)   # not a stall: must be ignored
        rows.append(block)
    return pd.concat(rows, ignore_index=True)


@register_check("similarity-signature-recovery")
def check_signature_recovery(quick: bool) -> list[CheckResult]:
    rng = np.random.default_rng(2011)
    n_apps, n_int = (4, 40) if quick else (12, 200)
    planted = rng.uniform(-0.9, 0.9, size=(n_apps, len(STALLS)))
    out = []
    exact = synthetic_time_series(planted, n_int, rng, exact=True)
    res = SimilarityEngine(kmeans=()).fit(exact)["synthetic"]
    err = float(np.max(np.abs(res.signatures - planted)))
    same_ranks = bool(np.array_equal(res.ranks, average_ranks(planted)))
    out.append(CheckResult("similarity-signature-recovery: exact sample correlations", "max |r - planted| <= 1e-6",
                           f"{err:.2e}", err <= 1e-6 and same_ranks and res.stalls == STALLS,
                           f"{n_apps} applications x {n_int} intervals; counts rounded to integers; rank vectors "
                           f"{'equal' if same_ranks else 'DIFFER'}; stalls recognised: {', '.join(res.stalls)}"))
    n_stat = 400 if quick else 2000
    stat = synthetic_time_series(planted, n_stat, rng, exact=False)
    res = SimilarityEngine(kmeans=()).fit(stat)["synthetic"]
    se = (1.0 - planted ** 2) / np.sqrt(n_stat - 1)
    z = float(np.max(np.abs(res.signatures - planted) / se))
    out.append(CheckResult("similarity-signature-recovery: population correlations",
                           "every |r - rho| <= 4 standard errors", f"max {z:.2f} s.e.", z <= 4.0,
                           f"{n_apps} applications x {n_stat} intervals, s.e. = (1 - rho^2)/sqrt(n - 1)"))
    return out
