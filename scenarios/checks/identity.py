"""Program identity (issue 15, item 1) for ``whatif validate``: a workload's behaviour should belong to its
description, so binaries synthesised from one description with different binary (program) seeds should
run alike.  A program seed lays the description's program out (function order, instruction sizes, data
placement) and draws its input; the program itself (structure, instructions, dataflow) is the
description's (``source_seed``).

``identity: binaries of one description run alike``: per CINT2006 workload and Xeon, N binaries of the
description (program seeds 1..N), each run once with the same run seed under the sampling engine after a
warm-up.  A row passes when the binaries' CPI has a coefficient of variation of at most 5 % and their stall
signatures (seed 002's r(CPI, stall) rows, as the similarity engine computes them) agree with a median
Spearman rho of at least 0.8 over the binary pairs.  Full mode: every CINT2006 workload, five binaries,
24 M instructions after 2 M; quick: four workloads, three binaries, 1.5 M after 0.5 M.  The full runs
are that long because a signature is a rank order of five correlations, each known to about
1 / sqrt(intervals): at 6 M (~400 intervals on Westmere, +-0.05) 400.perlbench's components lie within 0.1
of each other there, and five runs of one binary (program seed 1, run seeds 1000-1004) agreed only to a
median rho of 0.40, so the check could not tell binaries from repeats; at 24 M the same five runs agree
to 1.00.
"""

from __future__ import annotations

import warnings
from itertools import combinations

import numpy as np
import pandas as pd

from whatif.models.similarity import SimilarityWarning
from whatif.models.similarity.rank import similarity_matrix, spearman_embedding
from whatif.models.similarity.signatures import signatures_from_time_series
from whatif.scenarios.checks.registry import CheckResult, register_check
from whatif.scenarios.measure import SimulateSpec
from whatif.simulator.collect import simulate_one
from whatif.simulator.platform import load_platform
from whatif.simulator.workload import workload_names

CV_GOAL = 0.05
RHO_GOAL = 0.8
PLATFORMS = ("harpertown", "nehalem", "westmere")
RUN_SEED = 20261127
QUICK_WORKLOADS = ("cint2006/462.libquantum", "cint2006/456.hmmer", "cint2006/401.bzip2", "cint2006/445.gobmk")
# seed 002's sampling schedule [s_d, s_p, s_i] in its seconds, time-scaled to the runs' length
SIZES = {True: dict(binaries=3, instructions=1_500_000, warmup=500_000, time_scale=1e-6),
         False: dict(binaries=5, instructions=24_000_000, warmup=2_000_000, time_scale=1e-6)}


def workloads(quick: bool) -> tuple[str, ...]:
    return QUICK_WORKLOADS if quick else tuple(n for n in workload_names() if n.startswith("cint2006/"))


def binary_agreement(cpi: np.ndarray, signatures: np.ndarray) -> tuple[float, float]:
    """CV of the binaries' CPI (sample standard deviation over the mean) and the median Spearman rho of
    their signatures over all pairs (0 for a pair with an all-tied signature, as the engine has it)."""
    cv = float(np.std(cpi, ddof=1) / np.mean(cpi))
    sim = similarity_matrix(spearman_embedding(signatures))
    rho = float(np.median([sim[i, j] for i, j in combinations(range(len(cpi)), 2)]))
    return cv, rho


def meets_goals(cv: float, rho: float) -> bool:
    """Both goals, rho to rounding: over five components rho moves in steps of 0.05 or 0.1, and a rank
    difference of 0.8 computes as 0.7999999999999999."""
    return cv <= CV_GOAL and rho >= RHO_GOAL - 1e-9


def measure(workload: str, platform_name: str, quick: bool) -> tuple[np.ndarray, np.ndarray, tuple, int]:
    """Per binary its CPI and signature on ``platform_name``; the stall names; the fewest intervals."""
    size = SIZES[quick]
    spec = SimulateSpec(instructions=size["instructions"], warmup=size["warmup"], sampling=[10, 5, 3],
                        time_scale=size["time_scale"])
    platform = load_platform(platform_name)
    parts, cpi = [], []
    for seed in range(1, size["binaries"] + 1):
        out = simulate_one(platform, workload, spec.collect_spec(), program_seed=seed, replicate_seed=RUN_SEED)
        cpi.append(out["cpi"])
        ts = out["timeseries"].copy()
        ts.insert(0, "platform", platform_name)
        ts.insert(0, "workload", f"binary {seed}")
        parts.append(ts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SimilarityWarning)
        sig = signatures_from_time_series(pd.concat(parts, ignore_index=True)).platforms[platform_name]
    order = [sig.applications.index(f"binary {s}") for s in range(1, size["binaries"] + 1)]
    return np.array(cpi), sig.values[order], sig.stalls, int(np.min(sig.n_intervals))


@register_check("identity: binaries of one workload description run alike")
def program_identity(quick: bool) -> list[CheckResult]:
    size = SIZES[quick]
    out = []
    for w in workloads(quick):
        for p in PLATFORMS:
            cpi, sig, stalls, n_int = measure(w, p, quick)
            cv, rho = binary_agreement(cpi, sig)
            out.append(CheckResult(
                f"identity: {w} on {p}, CPI CV / median signature rho over binaries",
                f"<= {CV_GOAL:.0%} / >= {RHO_GOAL}", f"{cv:.1%} / {rho:.2f}", meets_goals(cv, rho),
                f"{size['binaries']} binaries (program seeds 1-{size['binaries']}), {size['instructions']:,} "
                f"instructions after {size['warmup']:,}, >= {n_int} intervals; CPI "
                + ", ".join(f"{c:.3f}" for c in cpi) + f"; signature components {', '.join(stalls)}; "
                f"largest |r(CPI, stall)| per binary " + ", ".join(f"{m:.2f}" for m in np.abs(sig).max(axis=1))))
    return out
