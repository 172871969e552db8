"""Ground-truth checks of seed 002's method on *simulated* workloads (issue 7, item 4), for ``whatif validate``.

* ``similarity-sim-families``: planted families of workloads — variants of a few CINT2006 parents whose
  stream footprints, instruction mix and conditional-branch shares are perturbed by a few per cent — run on
  one Xeon under the sampling engine; their signatures go through the similarity engine, and Algorithm 1
  must recover the families (adjusted Rand index, goal >= 0.9).
* ``similarity-sim-direction``: the same families on a current and a candidate Xeon, so every variant's
  true speedup T(current) / T(candidate) is known from the simulated run times.  The engine's Table 9
  (every benchmark in turn predicted from its Algorithm 2 cluster) must equal an independent recount from
  the run times, and for held-out reference applications (one more variant per family, not among the
  benchmarks) the share of correct direction predictions must be what that table claims (within the
  binomial tolerance of the few references).

The parents are chosen so that the directions differ: 456.hmmer (compute bound) runs slower on Nehalem's
lower clock than on Harpertown, while 462.libquantum (memory bound), 401.bzip2 and 445.gobmk run faster.
"""

from __future__ import annotations

import math
import warnings
from functools import lru_cache

import numpy as np
import pandas as pd

from whatif.models.similarity import SimilarityEngine, SimilarityWarning, adjusted_rand_index
from whatif.models.similarity.evaluation import direction, predict
from whatif.scenarios.measure import SimulateSpec
from whatif.simulator.collect import simulate_one
from whatif.scenarios.checks.registry import CheckResult, register_check
from whatif.simulator.platform import load_platform
from whatif.simulator.workload import WorkloadRef, load_workload, workload_from_dict

ARI_GOAL = 0.9
PARENTS = ("462.libquantum", "456.hmmer", "401.bzip2", "445.gobmk")
CURRENT, CANDIDATE = "harpertown", "nehalem"
SEED = 20110503
# quick: 2 families x 2 variants of 600k instructions; full: 4 x 4 of 6M; plus one held-out variant per
# family.
SIZES = {True: dict(parents=2, variants=2, instructions=600_000, time_scale=2e-6),
         False: dict(parents=4, variants=4, instructions=6_000_000, time_scale=1e-6)}   # 200+ intervals
BIAS_DEFAULT = 0.99           # simulator.workload.Branches.bias
PERTURBATION = 0.02          # relative scale of the parameter perturbations (log-normal factors, sd)


def perturbed_variant(parent: str, index: int, rng: np.random.Generator, scale: float = PERTURBATION) -> WorkloadRef:
    """A variant of ``parent``: every stream footprint x exp(N(0, scale)), the load/store/branch shares of the
    mix x exp(N(0, scale / 2)) (``other`` takes up the difference), and the branch bias: the share of
    biased branches going against their bias x exp(N(0, scale))."""
    spec = load_workload(parent).spec.model_dump(exclude_unset=True)
    for stream in spec.get("streams", {}).values():
        stream["footprint_kb"] = float(stream["footprint_kb"] * math.exp(rng.normal(0.0, scale)))
    mix = spec["mix"]
    for key in ("load", "store", "branch"):
        mix[key] = round(float(mix[key] * math.exp(rng.normal(0.0, scale / 2))), 4)
    mix["other"] = round(1.0 - sum(mix[k] for k in ("load", "store", "branch", "fp")), 4)
    br = spec.setdefault("branches", {})
    miss = 1.0 - br.get("bias", BIAS_DEFAULT)              # how often a biased branch goes the other way
    br["bias"] = round(float(min(1.0, max(0.5, 1.0 - miss * math.exp(rng.normal(0.0, scale))))), 6)
    return workload_from_dict(spec, name=f"{parent}~{index}", source=f"variant {index} of {parent}")


def planted_workloads(quick: bool, held_out: bool = True) -> tuple[list[WorkloadRef], list[int], list[WorkloadRef]]:
    """The family members (with their family index) and, one per family, a held-out variant."""
    size = SIZES[quick]
    rng = np.random.default_rng(SEED)
    members, families, extra = [], [], []
    for f, parent in enumerate(PARENTS[:size["parents"]]):
        for i in range(size["variants"] + (1 if held_out else 0)):
            w = perturbed_variant(parent, i, rng)
            if i == size["variants"]:
                extra.append(w)
            else:
                members.append(w)
                families.append(f)
    return members, families, extra


@lru_cache(maxsize=2)
def _simulated(quick: bool) -> tuple:
    """(time series, run times, families, member names, held-out names) of the planted workloads on the
    current and the candidate platform (cached: both checks use the same runs)."""
    size = SIZES[quick]
    spec = SimulateSpec(instructions=size["instructions"], sampling=[10, 5, 3], time_scale=size["time_scale"])
    members, families, extra = planted_workloads(quick)
    parts, rt = [], []
    platforms = {name: load_platform(name) for name in (CURRENT, CANDIDATE)}
    for w in members + extra:                   # platforms inner: the synthesised program is reused
        for platform_name, platform in platforms.items():
            out = simulate_one(platform, w, spec.collect_spec(), program_seed=SEED, replicate_seed=SEED)
            ts = out["timeseries"].copy()
            ts.insert(0, "platform", platform_name)
            ts.insert(0, "workload", w.name)
            parts.append(ts)
            rt.append({"application": w.name, "platform": platform_name, "run_time": out["seconds"]})
    return (pd.concat(parts, ignore_index=True), pd.DataFrame(rt), tuple(families),
            tuple(w.name for w in members), tuple(w.name for w in extra))


def _fit(series: pd.DataFrame, run_times=None, reference=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SimilarityWarning)
        return SimilarityEngine(threshold=0.5, reference=reference, kmeans=()).fit(series, run_times)


@register_check("similarity-sim-families")
def check_sim_families(quick: bool) -> CheckResult:
    series, _, families, names, _ = _simulated(quick)
    res = _fit(series[(series["platform"] == CURRENT) & series["workload"].isin(names)])[CURRENT]
    fam = np.array([families[names.index(a)] for a in res.applications])
    ari = adjusted_rand_index(res.clustering.labels, fam)
    size = SIZES[quick]
    n_int = int(np.min(res.n_intervals)) if res.n_intervals is not None else 0
    return CheckResult("similarity-sim-families: Algorithm 1 ARI on simulated variants", f">= {ARI_GOAL}",
                       round(ari, 4), ari >= ARI_GOAL,
                       f"{size['parents']} parents ({', '.join(PARENTS[:size['parents']])}) x {size['variants']} "
                       f"variants (footprints, mix, branch bias perturbed ~{PERTURBATION:.0%}), "
                       f"{size['instructions']:,} instructions on {CURRENT}, >= {n_int} intervals per series; "
                       f"{res.clustering.n_clusters} clusters: "
                       + "; ".join("{" + ", ".join(c) + "}" for c in res.clusters))


def recount_table9(series: pd.DataFrame, run_times: pd.DataFrame, current: str, candidate: str) -> dict:
    """The obvious recount: each application as the reference of Algorithm 2 (its own fit), predicted
    direction from its cluster's true speedups, compared with its own."""
    t = {(a, p): v for a, p, v in run_times[["application", "platform", "run_time"]].itertuples(index=False)}
    counts = {"correct": 0, "incorrect": 0, "unpredictable": 0}
    apps = list(dict.fromkeys(series.loc[series["platform"] == current, "workload"]))
    for app in apps:
        r = _fit(series[series["platform"] == current], reference=app)[current]
        similar = [a for a in r.reference_cluster if a != app]
        pred = predict([t[(a, current)] / t[(a, candidate)] for a in similar]) if similar else 0
        truth = direction(t[(app, current)] / t[(app, candidate)])
        counts["unpredictable" if pred == 0 else ("correct" if pred == truth else "incorrect")] += 1
    n = sum(counts.values())
    return {k: 100.0 * v / n for k, v in counts.items()}


@register_check("similarity-sim-direction")
def check_sim_direction(quick: bool) -> list[CheckResult]:
    series, rt, families, names, extra = _simulated(quick)
    bench = series[series["workload"].isin(names)]
    res = _fit(bench, rt)
    pair = next(p for p in res.system_evaluation.pairs if p.current == CURRENT and p.candidate == CANDIDATE)
    recount = recount_table9(bench, rt, CURRENT, CANDIDATE)
    same = all(abs(recount[k] - v) < 1e-9 for k, v in (("correct", pair.correct_pct),
                                                       ("incorrect", pair.incorrect_pct),
                                                       ("unpredictable", pair.unpredictable_pct)))
    out = [CheckResult("similarity-sim-direction: Table 9 equals the recount from simulated run times",
                       "equal", f"{pair.correct_pct:.1f}/{pair.incorrect_pct:.1f}/{pair.unpredictable_pct:.1f} %",
                       same, f"{CURRENT} -> {CANDIDATE}, {pair.n_cases} benchmarks; recount "
                             f"{recount['correct']:.1f}/{recount['incorrect']:.1f}/{recount['unpredictable']:.1f} % "
                             f"(correct/incorrect/unpredictable)")]
    # held-out references: the claim is P(correct | predicted) = correct / (correct + incorrect)
    predicted = pair.correct_pct + pair.incorrect_pct
    claimed = pair.correct_pct / predicted if predicted > 0 else 0.0
    right, made, details = 0, 0, []
    for ref in extra:
        sub = series[series["workload"].isin(names + (ref,))]
        pe = next(p for p in _fit(sub, rt, reference=ref).system_evaluation.pairs
                  if p.current == CURRENT and p.candidate == CANDIDATE)
        if pe.reference_direction_correct is not None:
            made += 1
            right += int(pe.reference_direction_correct)
        details.append(f"{ref}: {pe.reference_prediction}, true {pe.reference_speedup:.3f}")
    observed = right / made if made else 0.0
    # binomial tolerance for `made` references around the claimed rate, at least one reference's worth
    tol = max(2.0 * math.sqrt(max(claimed * (1 - claimed), 0.0) / max(made, 1)), 1.0 / max(made, 1))
    ok = made > 0 and observed >= claimed - tol
    out.append(CheckResult("similarity-sim-direction: held-out references predicted at the claimed rate",
                           f">= {claimed:.2f} - {tol:.2f}", f"{right}/{made} = {observed:.2f}", ok,
                           f"claimed P(correct | predicted) = {claimed:.2f} from Table 9 ({CURRENT} -> "
                           f"{CANDIDATE}); " + "; ".join(details)))
    return out
