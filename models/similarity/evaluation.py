"""System evaluation (seed 002, §4.3, Table 9): does the similar set predict the direction of a speedup?

For a *current* platform c (where signatures are measured) and a *candidate*
platform k, the speedup of an application is T(c) / T(k) (> 1: faster on the
candidate).  Every benchmark application a (each application except the
designated reference) takes a turn as the reference of Algorithm 2 on c, over
the benchmark set; its similar applications are the others in that cluster
whose run times on c and k are known.  The prediction for a is

* "up" if all similar applications speed up (> 1), "down" if all slow down (< 1),
* otherwise (mixed, a speedup of exactly 1, or no similar application with
  known run times) the case is *unpredictable*;

it is *correct* if a's own speedup goes the predicted way, else *incorrect*.
Table 9 gives the percentage of each outcome over the cases of a pair.

For the designated reference (the proprietary application, whose speedup is
what the method is for), the prediction comes from its own Algorithm 2
cluster (computed with the reference in the graph), and — as the seed also
reports — from its single most similar application alone.  When its true run
times are known (e.g. simulated), the report says whether each was right.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from whatif.models.similarity import seed002

DIRECTION_NAMES = {1: "up", -1: "down", 0: "unpredictable"}


def direction(speedup: float) -> int:
    return 1 if speedup > 1.0 else (-1 if speedup < 1.0 else 0)


def predict(speedups: Sequence[float]) -> int:
    """+1 / -1 when every similar application moves the same way, 0 (unpredictable) otherwise."""
    dirs = {direction(s) for s in speedups}
    if len(dirs) == 1 and 0 not in dirs:
        return dirs.pop()
    return 0


@dataclass(frozen=True)
class PairEvaluation:
    current: str
    candidate: str
    n_cases: int
    correct_pct: float
    incorrect_pct: float
    unpredictable_pct: float
    reference: str | None
    reference_speedup: float | None             # true speedup of the reference, when its run times are known
    reference_similar: tuple                    # its similar applications with known speedups
    reference_prediction: str | None            # up / down / unpredictable
    reference_direction_correct: bool | None    # None: unpredictable or true speedup unknown
    nearest_neighbour: str | None
    nearest_neighbour_direction_correct: bool | None
    similar_mean_speedup: float | None          # arithmetic mean over the reference's similar set
    suite_mean_speedup: float | None            # arithmetic mean over every benchmark with known speedup

    @property
    def key(self) -> str:
        return f"{self.current}->{self.candidate}"

    def to_dict(self) -> dict:
        return {"correct_pct": self.correct_pct, "incorrect_pct": self.incorrect_pct,
                "unpredictable_pct": self.unpredictable_pct, "n_cases": self.n_cases,
                "reference": self.reference, "reference_speedup": self.reference_speedup,
                "reference_similar": list(self.reference_similar),
                "reference_prediction": self.reference_prediction,
                "reference_direction_correct": self.reference_direction_correct,
                "nearest_neighbour": self.nearest_neighbour,
                "nearest_neighbour_direction_correct": self.nearest_neighbour_direction_correct,
                "similar_mean_speedup": self.similar_mean_speedup, "suite_mean_speedup": self.suite_mean_speedup}


@dataclass(frozen=True)
class SystemEvaluation:
    pairs: tuple                 # PairEvaluation, in (current, candidate) order
    cases: pd.DataFrame          # one row per (current, candidate, application)
    warnings: tuple = ()

    def table(self) -> pd.DataFrame:
        """The Table 9 analogue."""
        return pd.DataFrame([{"current -> candidate": f"{p.current} -> {p.candidate}", "cases": p.n_cases,
                              "% correct": p.correct_pct, "% incorrect": p.incorrect_pct,
                              "% unpredictable": p.unpredictable_pct} for p in self.pairs])

    def reference_table(self) -> pd.DataFrame:
        return pd.DataFrame([{"current -> candidate": f"{p.current} -> {p.candidate}",
                              "similar set": ", ".join(p.reference_similar),
                              "predicted": p.reference_prediction, "true speedup": p.reference_speedup,
                              "prediction correct": p.reference_direction_correct,
                              "nearest neighbour": p.nearest_neighbour,
                              "nearest correct": p.nearest_neighbour_direction_correct,
                              "mean speedup, similar set": p.similar_mean_speedup,
                              "mean speedup, suite": p.suite_mean_speedup} for p in self.pairs])

    def to_dict(self) -> dict:
        return {p.key: p.to_dict() for p in self.pairs}


def evaluate_systems(similar_sets: Mapping[str, Mapping[str, Sequence[str]]], run_times: pd.DataFrame, *,
                     reference: str | None = None,
                     reference_sets: Mapping[str, Sequence[str]] | None = None,
                     nearest: Mapping[str, Sequence[str]] | None = None) -> SystemEvaluation:
    """Table 9 for every (current, candidate) pair.

    ``similar_sets[c][a]``: the applications similar to benchmark a on current platform c (Algorithm 2,
    without a itself).  ``reference_sets[c]``: the reference's similar applications on c.  ``nearest[c]``:
    the other applications ordered from most to least similar to the reference on c.  ``run_times``:
    columns application, platform, run_time (one row per pair; see ``io.run_times_from_table``).
    """
    t = {(str(a), str(p)): float(v) for a, p, v in run_times[["application", "platform"] + ["run_time"]]
         .itertuples(index=False)}
    rt_platforms = list(dict.fromkeys(run_times["platform"].astype(str)))
    pairs: list[PairEvaluation] = []
    rows: list[dict] = []
    warnings: list[str] = []
    for current, sets in similar_sets.items():
        for candidate in rt_platforms:
            if candidate == current:
                continue

            def speedup(app: str) -> float | None:
                a, b = t.get((app, current)), t.get((app, candidate))
                return None if a is None or b is None else a / b

            counts = {"correct": 0, "incorrect": 0, "unpredictable": 0}
            suite = []
            for app, similar in sets.items():
                s = speedup(app)
                if s is None:
                    continue
                suite.append(s)
                known = [(x, speedup(x)) for x in similar if speedup(x) is not None]
                pred = predict([v for _, v in known]) if known else 0
                outcome = "unpredictable" if pred == 0 else ("correct" if pred == direction(s) else "incorrect")
                counts[outcome] += 1
                rows.append({"current": current, "candidate": candidate, "application": app, "speedup": s,
                             "similar": ", ".join(x for x, _ in known),
                             "similar_speedups": ", ".join(f"{v:.4g}" for _, v in known),
                             "predicted": DIRECTION_NAMES[pred], "actual": DIRECTION_NAMES[direction(s)],
                             "outcome": outcome})
            n = sum(counts.values())
            if n == 0:
                continue
            pct = {k: 100.0 * v / n for k, v in counts.items()}
            ref_fields = _reference_fields(reference, current, (reference_sets or {}).get(current),
                                           (nearest or {}).get(current), speedup)
            pairs.append(PairEvaluation(current, candidate, n, pct["correct"], pct["incorrect"],
                                        pct["unpredictable"], reference, *ref_fields,
                                        suite_mean_speedup=float(np.mean(suite))))
    if reference is not None and not any(p.reference_speedup is not None for p in pairs) and pairs:
        warnings.append(f"the run times do not give the true speedup of reference '{reference}' on any platform "
                        f"pair; its predictions are reported without a check")
    cases = pd.DataFrame(rows, columns=["current", "candidate", "application", "speedup", "similar",
                                        "similar_speedups", "predicted", "actual", "outcome"])
    return SystemEvaluation(tuple(pairs), cases, tuple(warnings))


def _reference_fields(reference, current, similar, nearest, speedup):
    if reference is None or similar is None:
        return None, (), None, None, None, None, None
    true = speedup(reference)
    known = [(x, speedup(x)) for x in similar if speedup(x) is not None]
    pred = predict([v for _, v in known]) if known else 0
    correct = None if (pred == 0 or true is None) else pred == direction(true)
    nn = next((x for x in (nearest or []) if speedup(x) is not None), None)
    nn_correct = None
    if nn is not None and true is not None and direction(speedup(nn)) != 0:
        nn_correct = direction(speedup(nn)) == direction(true)
    mean_similar = float(np.mean([v for _, v in known])) if known else None
    return (true, tuple(x for x, _ in known), DIRECTION_NAMES[pred], correct, nn, nn_correct, mean_similar)


# Seed 002, Table 9, as published (percentages over the cases of each platform pair): models/similarity/data/seed002.toml.
SEED002_TABLE9 = seed002.TABLE9
