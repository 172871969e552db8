"""The similarity engine of seed 002: signatures -> rank similarity -> MST -> Algorithms 1 and 2 -> k-means
comparison -> system evaluation.  Parameters are declared as data and checked at the start of ``fit``."""

from __future__ import annotations

import warnings as _warnings
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from ..errors import ModelInputError
from ..params import Boolean, Interval, ListOf, NoneOr, Options, Parameterised, String
from .evaluation import SystemEvaluation, evaluate_systems
from .hierarchy import STOP_RULES, algorithm1, algorithm2, build_hierarchy
from .io import run_times_from_table
from .kmeans import hartigan_wong
from .mst import DistanceSource, minimum_spanning_tree
from .rank import METHODS, average_ranks, degenerate_rows, embedding, quantise_distance
from .results import PlatformSimilarity, SimilarityResults
from .signatures import (CONSTANT_POLICIES, SignatureSet, Signatures, SimilarityWarning, signatures_from_table,
                         signatures_from_time_series)


_NAMES = NoneOr(ListOf(String(nonempty=True), nonempty=True))
_NAME = NoneOr(String(nonempty=True))


class SimilarityEngine(Parameterised):
    """Correlation-driven application similarity (Cammarota et al., seed 002).

    Parameters
    ----------
    threshold : g of Algorithm 1, in (0, 2): a set is a cluster when every distance 1 - rho in it is < g.
    method : "spearman" (Eq. 4, average ranks for ties) or "kendall" (tau-b).
    stop_rule : "graph" (Algorithm 1 as written: test every edge of the similarity graph of the set) or
        "mst" (test the set's MST edges only = single-linkage clusters at height g).
    reference : the application of interest for Algorithm 2 and the system evaluation (None: none).
    kmeans : values of k for the k-means comparison (Table 8); Hartigan–Wong on the signature vectors.
    kmeans_n_init, kmeans_max_iter : random starts (best kept) and iteration limit of k-means.
    seed : seeds the k-means starts.
    on_constant : "zero" (undefined Pearson r of a constant series -> 0, with a warning) or "error".
    stalls, cycles, instructions : column names in a time-series table (None: recognised automatically).
    platforms : analyse only these platforms (None: all).
    dedup : collapse identical rank vectors before the MST (same results, much faster for few stalls).
    """

    _parameter_constraints = {
        "threshold": Interval(float, 0.0, 2.0, "neither"),
        "method": Options(METHODS),
        "stop_rule": Options(STOP_RULES),
        "reference": _NAME,
        "kmeans": ListOf(Interval(int, 2, None)),      # empty: no k-means
        "kmeans_n_init": Interval(int, 1, None),
        "kmeans_max_iter": Interval(int, 1, None),
        "seed": Interval(int, 0, None),
        "on_constant": Options(CONSTANT_POLICIES),
        "stalls": _NAMES,
        "cycles": _NAME,
        "instructions": _NAME,
        "platforms": _NAMES,
        "dedup": Boolean(),
    }

    def __init__(self, threshold: float = 0.5, method: str = "spearman", stop_rule: str = "graph",
                 reference: str | None = None, kmeans: Sequence[int] = (3, 5), kmeans_n_init: int = 10,
                 kmeans_max_iter: int = 50, seed: int = 0, on_constant: str = "zero",
                 stalls: Sequence[str] | None = None, cycles: str | None = None,
                 instructions: str | None = None, platforms: Sequence[str] | None = None, dedup: bool = True):
        self.threshold = threshold
        self.method = method
        self.stop_rule = stop_rule
        self.reference = reference
        self.kmeans = kmeans
        self.kmeans_n_init = kmeans_n_init
        self.kmeans_max_iter = kmeans_max_iter
        self.seed = seed
        self.on_constant = on_constant
        self.stalls = stalls
        self.cycles = cycles
        self.instructions = instructions
        self.platforms = platforms
        self.dedup = dedup

    # -- entry points ------------------------------------------------------------
    def fit(self, time_series: pd.DataFrame, run_times: pd.DataFrame | None = None, *, source: str = "table",
            csv_lines: bool = False, progress: Callable[[str], None] | None = None) -> SimilarityResults:
        """Analyse a counter time-series table (contract 2); ``run_times`` enables the system evaluation."""
        self.validate_params()
        sigs = signatures_from_time_series(time_series, stalls=self.stalls, cycles=self.cycles,
                                           instructions=self.instructions, platforms=self.platforms,
                                           on_constant=self.on_constant, source=source, csv_lines=csv_lines)
        return self._fit(sigs, run_times, progress)

    def fit_signatures(self, signatures: pd.DataFrame | Signatures, run_times: pd.DataFrame | None = None, *,
                       source: str = "table", csv_lines: bool = False,
                       progress: Callable[[str], None] | None = None) -> SimilarityResults:
        """Analyse signatures given directly (a table such as seed 002's Table 1, or a ``Signatures``)."""
        self.validate_params()
        if not isinstance(signatures, Signatures):
            signatures = signatures_from_table(signatures, stalls=self.stalls, platforms=self.platforms,
                                               source=source, csv_lines=csv_lines)
        elif self.platforms is not None:
            missing = [p for p in self.platforms if p not in signatures.platforms]
            if missing:
                raise ModelInputError(f"platform '{missing[0]}' not among the signatures "
                                      f"({', '.join(signatures.platforms)})")
            signatures = Signatures({p: signatures.platforms[p] for p in self.platforms}, signatures.warnings,
                                    signatures.series, signatures.source)
        return self._fit(signatures, run_times, progress)

    # -- the pipeline ---------------------------------------------------------------
    def _fit(self, sigs: Signatures, run_times, progress) -> SimilarityResults:
        notes = list(sigs.warnings)
        ref = self.reference
        if ref is not None:
            having = [p for p, s in sigs.platforms.items() if ref in s.applications]
            if not having:
                raise ModelInputError(f"{sigs.source}: reference application '{ref}' is not in the table "
                                      f"(platforms: {', '.join(sigs.platforms)})")
            for p in sigs.platforms:
                if p not in having:
                    notes.append(f"reference application '{ref}' has no data on platform '{p}'; "
                                 f"Algorithm 2 and the evaluation from '{p}' are skipped")
        rt = None
        if run_times is not None:
            rt = run_times if {"application", "platform", "run_time"} <= set(run_times.columns) \
                else run_times_from_table(run_times)
        results: dict[str, PlatformSimilarity] = {}
        similar_sets: dict[str, dict[str, list[str]]] = {}
        reference_sets: dict[str, list[str]] = {}
        nearest: dict[str, list[str]] = {}
        for platform, sset in sigs.platforms.items():
            if progress is not None:
                progress(platform)
            res = self._analyse_platform(sset, ref if ref in sset.applications else None)
            notes.extend(res.warnings)
            results[platform] = res
            if rt is not None:
                similar_sets[platform] = self._benchmark_similar_sets(res)
                if res.reference_search is not None:
                    reference_sets[platform] = [a for a in res.reference_cluster if a != ref]
                    nearest[platform] = self._nearest(res)
        evaluation: SystemEvaluation | None = None
        if rt is not None:
            evaluation = evaluate_systems(similar_sets, rt, reference=ref, reference_sets=reference_sets,
                                          nearest=nearest)
            notes.extend(evaluation.warnings)
            if not evaluation.pairs:
                notes.append("the run times cover no (current, candidate) platform pair with known run times on "
                             "both; no system evaluation")
        for w in notes:
            _warnings.warn(w, SimilarityWarning, stacklevel=3)
        params = {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.get_params().items()}
        return SimilarityResults(results, params, tuple(notes), evaluation, sigs.series)

    def _analyse_platform(self, sset: SignatureSet, reference: str | None) -> PlatformSimilarity:
        apps, values = sset.applications, sset.values
        n = len(apps)
        if n < 2:
            raise ModelInputError(f"platform '{sset.platform}' has {n} application(s); similarity needs at least 2")
        notes: list[str] = []
        ranks = average_ranks(values)
        emb = embedding(values, self.method)
        for i in np.flatnonzero(degenerate_rows(emb)):
            notes.append(f"application '{apps[i]}' on platform '{sset.platform}' has a signature whose components "
                         f"are all equal, so it has no ranking and its rank correlation with every other "
                         f"application is undefined; it is taken as 0 (distance 1)")
        source = DistanceSource.from_embedding(emb, dedup=self.dedup)
        tree = minimum_spanning_tree(source)
        hier = build_hierarchy(tree)
        clustering = algorithm1(hier, source, float(self.threshold), self.stop_rule)
        search = algorithm2(hier, apps.index(reference)) if reference is not None else None
        km = {}
        rng = np.random.default_rng(self.seed)
        n_distinct = len(np.unique(values, axis=0))
        for k in self.kmeans:
            if k >= n or k > n_distinct:
                notes.append(f"platform '{sset.platform}': {k}-means skipped: it needs more than {k} applications "
                             f"with distinct signatures ({n} applications, {n_distinct} distinct)")
                continue
            res = hartigan_wong(values, int(k), n_init=self.kmeans_n_init, max_iter=self.kmeans_max_iter, rng=rng)
            if not res.converged:
                notes.append(f"platform '{sset.platform}': {k}-means did not converge in {self.kmeans_max_iter} "
                             f"iterations")
            km[int(k)] = _relabel(res)
        return PlatformSimilarity(sset.platform, apps, sset.stalls, values, ranks, self.method, emb, source, tree,
                                  hier, clustering, float(self.threshold), self.stop_rule, reference, search, km,
                                  sset.n_intervals, tuple(notes))

    def _benchmark_similar_sets(self, res: PlatformSimilarity) -> dict[str, list[str]]:
        """Algorithm 2 with each benchmark (every application but the reference) as the reference, over the
        benchmark set."""
        if res.reference is None:
            idx = np.arange(res.n)
            hier = res.hierarchy
        else:
            idx = np.array([i for i in range(res.n) if res.applications[i] != res.reference])
            if len(idx) < 2:
                return {}
            sub = DistanceSource.from_embedding(res.embedding[idx], dedup=self.dedup)
            hier = build_hierarchy(minimum_spanning_tree(sub))
        out = {}
        for local, item in enumerate(idx):
            cluster = algorithm2(hier, local).cluster
            out[res.applications[item]] = [res.applications[idx[c]] for c in cluster if c != local]
        return out

    @staticmethod
    def _nearest(res: PlatformSimilarity) -> list[str]:
        r = res.index[res.reference]
        dist = quantise_distance(1.0 - res.embedding @ res.embedding[r])
        order = [int(i) for i in np.argsort(dist, kind="stable") if i != r]
        return [res.applications[i] for i in order]


def _relabel(res):
    """Number k-means clusters by their first member, so labels do not depend on the random start."""
    from dataclasses import replace

    first = {}
    for lab in res.labels:
        first.setdefault(int(lab), len(first))
    perm = np.array([first[c] for c in range(res.k)])
    inv = np.argsort(perm)
    return replace(res, labels=perm[res.labels], centers=res.centers[inv], withinss=res.withinss[inv])
