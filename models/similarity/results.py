"""Immutable results of the similarity engine: per-platform analyses, JSON document, summary, plots."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property, partial
from types import MappingProxyType
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from ..summary import Summary
from .evaluation import SystemEvaluation
from .hierarchy import Clustering, Hierarchy, ReferenceSearch
from .kmeans import KMeansResult
from .mst import DistanceSource, SpanningTree
from .rank import similarity_matrix

MATRIX_LIMIT = 500          # the similarity matrix goes into JSON and tables up to this many applications
PLOT_LIMIT = 150            # per-application figures are drawn up to this many applications


def adjusted_rand_index(a: np.ndarray, b: np.ndarray) -> float:
    """Hubert–Arabie adjusted Rand index of two labelings (1 = identical partitions)."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape:
        raise ValueError("labelings differ in length")
    n = len(a)
    if n < 2:
        return 1.0
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    table = np.zeros((ia.max() + 1, ib.max() + 1), dtype=np.int64)
    np.add.at(table, (ia.ravel(), ib.ravel()), 1)

    def comb2(x):
        x = np.asarray(x, dtype=np.float64)
        return float((x * (x - 1) / 2).sum())

    index = comb2(table)
    sa, sb = comb2(table.sum(axis=1)), comb2(table.sum(axis=0))
    expected = sa * sb / (n * (n - 1) / 2)
    maximum = (sa + sb) / 2
    if maximum == expected:
        return 1.0
    return (index - expected) / (maximum - expected)


@dataclass(frozen=True)
class PlatformSimilarity:
    """Everything the engine found on one platform."""

    platform: str
    applications: tuple
    stalls: tuple
    signatures: np.ndarray          # n x M Pearson r (Table 1 rows)
    ranks: np.ndarray               # n x M rank vectors pi(v), ties averaged
    method: str                     # spearman | kendall
    embedding: np.ndarray           # similarity(a, b) = embedding[a] @ embedding[b]
    source: DistanceSource = field(repr=False)
    tree: SpanningTree = field(repr=False)
    hierarchy: Hierarchy = field(repr=False)
    clustering: Clustering = field(repr=False)
    threshold: float = 0.5
    stop_rule: str = "graph"
    reference: str | None = None
    reference_search: ReferenceSearch | None = None
    kmeans: Mapping = field(default_factory=dict)      # k -> KMeansResult
    n_intervals: np.ndarray | None = None
    warnings: tuple = ()

    def __post_init__(self):
        for arr in (self.signatures, self.ranks, self.embedding, self.n_intervals, self.clustering.labels):
            if arr is not None:
                arr.setflags(write=False)
        object.__setattr__(self, "kmeans", MappingProxyType(dict(self.kmeans)))

    # -- derived ---------------------------------------------------------------
    @property
    def n(self) -> int:
        return len(self.applications)

    @cached_property
    def index(self) -> dict:
        return {a: i for i, a in enumerate(self.applications)}

    @cached_property
    def similarity(self) -> np.ndarray:
        """Dense n x n rho (or tau) matrix (Tables 5–7).  n^2 doubles: mind memory for large n."""
        m = similarity_matrix(self.embedding)
        m.setflags(write=False)
        return m

    def names(self, idx) -> list[str]:
        return [self.applications[int(i)] for i in idx]

    @property
    def clusters(self) -> list[list[str]]:
        return [self.names(c) for c in self.clustering.clusters]

    @property
    def reference_cluster(self) -> list[str] | None:
        return None if self.reference_search is None else self.names(self.reference_search.cluster)

    def kmeans_clusters(self, k: int) -> list[list[str]]:
        res: KMeansResult = self.kmeans[k]
        return [self.names(np.flatnonzero(res.labels == c)) for c in range(res.k)]

    def kmeans_reference_cluster(self, k: int) -> list[str] | None:
        if self.reference is None:
            return None
        lab = self.kmeans[k].labels
        return self.names(np.flatnonzero(lab == lab[self.index[self.reference]]))

    @cached_property
    def cut_edge_step(self) -> np.ndarray:
        """Per MST edge: the Algorithm 1 step that cut it (0 = never cut)."""
        out = np.zeros(len(self.tree.weight), dtype=np.int64)
        for s in self.clustering.steps:
            out[list(s.edges)] = s.step
        return out

    # -- tables ----------------------------------------------------------------
    def signature_frame(self) -> pd.DataFrame:
        """Table 1 analogue with the rank vectors pi(v)."""
        df = pd.DataFrame(self.signatures, columns=list(self.stalls))
        df.insert(0, "application", list(self.applications))
        df["rank_vector"] = [self.format_ranks(r) for r in self.ranks]
        if self.n_intervals is not None:
            df["intervals"] = self.n_intervals
        return df

    @staticmethod
    def format_ranks(r) -> str:
        return "(" + ", ".join(f"{x:g}" for x in r) + ")"

    def similarity_frame(self) -> pd.DataFrame:
        df = pd.DataFrame(self.similarity, columns=list(self.applications))
        df.insert(0, "application", list(self.applications))
        return df

    def mst_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"a": self.names(self.tree.a), "b": self.names(self.tree.b),
                             "distance": self.tree.weight, "cut_at_step": self.cut_edge_step})

    def clusters_frame(self) -> pd.DataFrame:
        df = pd.DataFrame({"application": list(self.applications), "cluster": self.clustering.labels})
        if self.reference_search is not None:
            df["in_reference_cluster"] = np.isin(np.arange(self.n), self.reference_search.cluster)
        for k, res in self.kmeans.items():
            df[f"kmeans_{k}"] = res.labels
        return df

    def cut_steps_frame(self) -> pd.DataFrame:
        """One row per cut step; the parts are named up to MATRIX_LIMIT applications, else given as sizes."""
        named = self.n <= MATRIX_LIMIT
        return pd.DataFrame([{"step": s.step, "depth": s.depth, "cut_distance": s.weight,
                              "edges_cut": len(s.edges), "set_size": len(s.members),
                              "parts": " | ".join(", ".join(self.names(p)) if named else str(len(p))
                                                  for p in s.parts)}
                             for s in self.clustering.steps],
                            columns=["step", "depth", "cut_distance", "edges_cut", "set_size", "parts"])

    def reference_search_frame(self) -> pd.DataFrame:
        if self.reference_search is None:
            return pd.DataFrame(columns=["step", "set_size", "cut_distance", "set"])
        named = self.n <= MATRIX_LIMIT
        return pd.DataFrame([{"step": i + 1, "set_size": len(m), "cut_distance": w,
                              "set": ", ".join(self.names(m)) if named else ""}
                             for i, (m, w) in enumerate(self.reference_search.path)])

    # -- JSON ------------------------------------------------------------------
    def to_dict(self, matrix: bool | None = None) -> dict:
        apps = self.applications
        doc: dict = {
            "applications": list(apps),
            "stalls": list(self.stalls),
            "signatures": {a: dict(zip(self.stalls, map(float, row))) for a, row in zip(apps, self.signatures)},
            "rank_vectors": {a: [float(x) for x in r] for a, r in zip(apps, self.ranks)},
        }
        if matrix or (matrix is None and self.n <= MATRIX_LIMIT):
            sim = self.similarity
            doc["similarity"] = {a: dict(zip(apps, map(float, row))) for a, row in zip(apps, sim)}
        doc["mst"] = [[apps[a], apps[b], float(w)] for a, b, w in zip(self.tree.a, self.tree.b, self.tree.weight)]
        doc["clusters"] = self.clusters
        named = self.n <= MATRIX_LIMIT      # above it, steps give sizes (member lists are O(n x depth))
        doc["cut_steps"] = [{"step": s.step, "depth": s.depth, "cut_distance": s.weight, "set_size": len(s.members),
                             **({"set": self.names(s.members), "parts": [self.names(p) for p in s.parts]} if named
                                else {"part_sizes": [len(p) for p in s.parts]}),
                             "edges": [[apps[self.tree.a[e]], apps[self.tree.b[e]], float(self.tree.weight[e])]
                                       for e in s.edges]}
                            for s in self.clustering.steps]
        doc["reference_cluster"] = self.reference_cluster
        if self.reference_search is not None:
            doc["reference_search"] = [{"set_size": len(m), "cut_distance": w, **({"set": self.names(m)}
                                                                                 if named else {})}
                                       for m, w in self.reference_search.path]
        doc["kmeans"] = {str(k): {"algorithm": r.algorithm, "clusters": self.kmeans_clusters(k),
                                  "reference_cluster": self.kmeans_reference_cluster(k),
                                  "tot_withinss": r.tot_withinss, "converged": r.converged,
                                  "adjusted_rand_vs_algorithm1": adjusted_rand_index(r.labels,
                                                                                     self.clustering.labels)}
                         for k, r in self.kmeans.items()}
        if self.n_intervals is not None:
            doc["intervals"] = dict(zip(apps, map(int, self.n_intervals)))
        return doc

    # -- plots -----------------------------------------------------------------
    def plot_signatures(self, **kw):
        from . import plots
        return plots.signatures(self, **kw)

    def plot_similarity(self, **kw):
        from . import plots
        return plots.similarity_heatmap(self, **kw)

    def plot_mst(self, **kw):
        from . import plots
        return plots.mst(self, **kw)

    def plot_cut_steps(self, **kw):
        from . import plots
        return plots.cut_steps(self, **kw)

    def plot_dendrogram(self, **kw):
        from . import plots
        return plots.dendrogram(self, **kw)


@dataclass(frozen=True)
class SimilarityResults:
    """What ``SimilarityEngine.fit`` returns."""

    platforms: Mapping[str, PlatformSimilarity]
    parameters: Mapping
    warnings: tuple = ()
    system_evaluation: SystemEvaluation | None = None
    series: pd.DataFrame | None = field(default=None, repr=False)   # per-interval CPI and stall ratios

    def __post_init__(self):
        object.__setattr__(self, "platforms", MappingProxyType(dict(self.platforms)))
        object.__setattr__(self, "parameters", MappingProxyType(dict(self.parameters)))

    def __getitem__(self, platform: str) -> PlatformSimilarity:
        return self.platforms[platform]

    def to_dict(self, matrix: bool | None = None) -> dict:
        doc = {"method": self.parameters.get("method"), "threshold": self.parameters.get("threshold"),
               "stop_rule": self.parameters.get("stop_rule"), "reference": self.parameters.get("reference"),
               "platforms": {p: r.to_dict(matrix) for p, r in self.platforms.items()}}
        if self.system_evaluation is not None:
            doc["system_evaluation"] = self.system_evaluation.to_dict()
        doc["warnings"] = list(self.warnings)
        return doc

    def kmeans_table(self) -> pd.DataFrame:
        """Table 8 analogue: Algorithm 2's reference cluster next to the k-means cluster holding the reference."""
        rows = []
        ref = self.parameters.get("reference")
        ks = sorted({k for r in self.platforms.values() for k in r.kmeans})
        if ref is None:
            return pd.DataFrame()
        row = {"method": "Algorithm 2"}
        for p, r in self.platforms.items():
            row[p] = ", ".join(r.reference_cluster or [])
        rows.append(row)
        for k in ks:
            row = {"method": f"{k}-means"}
            for p, r in self.platforms.items():
                row[p] = ", ".join(r.kmeans_reference_cluster(k) or []) if k in r.kmeans else "–"
            rows.append(row)
        return pd.DataFrame(rows)

    def summary(self) -> Summary:
        lines = [f"similarity: {self.parameters.get('method')} rank correlation, threshold g = "
                 f"{self.parameters.get('threshold')}, stop rule '{self.parameters.get('stop_rule')}'"]
        tables: dict[str, pd.DataFrame] = {}
        for p, r in self.platforms.items():
            lines.append(f"\nplatform {p}: {r.n} applications, stalls: {', '.join(r.stalls)}")
            lines.append(f"  MST total distance {r.tree.total_weight:.4g}; Algorithm 1: {len(r.clusters)} clusters "
                         f"in {len(r.clustering.steps)} cut steps")
            for c in r.clusters[:20]:
                lines.append("    {" + ", ".join(c[:12]) + (", ..." if len(c) > 12 else "") + "}")
            if len(r.clusters) > 20:
                lines.append(f"    ... {len(r.clusters) - 20} more clusters")
            if r.reference_cluster is not None:
                lines.append(f"  Algorithm 2, cluster of {r.reference}: {', '.join(r.reference_cluster)}")
            for k in r.kmeans:
                lines.append(f"  {k}-means (Hartigan-Wong): adjusted Rand vs Algorithm 1 = "
                             f"{adjusted_rand_index(r.kmeans[k].labels, r.clustering.labels):.3f}"
                             + (f"; cluster of {r.reference}: {', '.join(r.kmeans_reference_cluster(k))}"
                                if r.reference is not None else ""))
            tables[f"clusters ({p})"] = r.clusters_frame()
        if self.parameters.get("reference") is not None:
            tables["Table 8 analogue"] = self.kmeans_table()
        if self.system_evaluation is not None:
            t9 = self.system_evaluation.table()
            tables["Table 9 analogue"] = t9
            lines.append("\nsystem evaluation (Table 9 analogue):")
            lines.append(t9.to_string(index=False, float_format=lambda x: f"{x:.2f}"))
            for pe in self.system_evaluation.pairs:
                if pe.reference is not None and pe.reference_prediction is not None:
                    lines.append(f"  {pe.key}: {pe.reference} predicted {pe.reference_prediction}"
                                 + ("" if pe.reference_speedup is None else
                                    f", true speedup {pe.reference_speedup:.3f} "
                                    f"({_verdict(pe.reference_direction_correct)})"))
        if self.warnings:       # the warnings themselves go to stderr and the report's list, once
            lines.append(f"\n{len(self.warnings)} warning(s): see results.warnings (on stderr in the terminal)")
        return Summary("Similarity results", "\n".join(lines), tables)

    def tables(self, matrix: bool = False) -> dict[str, pd.DataFrame]:
        """Every table of the results directory, by file stem: per-platform tables stacked with a
        ``platform`` column (signatures, mst, clusters, cut_steps, reference_search), each platform's
        similarity matrix (up to MATRIX_LIMIT applications unless ``matrix``), the k-means comparison
        and the system evaluation."""
        tables: dict[str, pd.DataFrame] = {}
        stacked: dict[str, list[pd.DataFrame]] = {"signatures": [], "mst": [], "clusters": [], "cut_steps": [],
                                                  "reference_search": []}
        for p, r in self.platforms.items():
            for name, frame in (("signatures", r.signature_frame()), ("mst", r.mst_frame()),
                                ("clusters", r.clusters_frame()), ("cut_steps", r.cut_steps_frame()),
                                ("reference_search", r.reference_search_frame())):
                frame = frame.copy()
                frame.insert(0, "platform", p)
                stacked[name].append(frame)
            if matrix or r.n <= MATRIX_LIMIT:
                tables[f"similarity_{_safe(p)}"] = r.similarity_frame()
        for name, frames in stacked.items():
            if frames:
                tables[name] = pd.concat(frames, ignore_index=True)
        if self.parameters.get("reference") is None:
            tables.pop("reference_search", None)
        else:
            tables["kmeans_comparison"] = self.kmeans_table()
        if self.system_evaluation is not None:
            tables["system_evaluation"] = self.system_evaluation.table()
            tables["system_evaluation_reference"] = self.system_evaluation.reference_table()
            tables["system_evaluation_cases"] = self.system_evaluation.cases
        return tables

    def figures(self) -> dict[str, Callable[[], Any]]:
        """Per platform (up to PLOT_LIMIT applications) the signatures, similarity matrix, MST, cut steps
        (when any) and cut hierarchy, and the time series of the reference (or first application) when
        the input was a time series; by file stem, as functions that draw them."""
        figs: dict[str, Callable[[], Any]] = {}
        for p, r in self.platforms.items():
            if r.n > PLOT_LIMIT:
                continue
            figs[f"signatures_{_safe(p)}"] = r.plot_signatures
            figs[f"similarity_{_safe(p)}"] = r.plot_similarity
            figs[f"mst_{_safe(p)}"] = r.plot_mst
            if r.clustering.steps:
                figs[f"cut_steps_{_safe(p)}"] = r.plot_cut_steps
            figs[f"dendrogram_{_safe(p)}"] = r.plot_dendrogram
        if self.series is not None and self.platforms:
            app = self.parameters.get("reference") or next(iter(self.platforms.values())).applications[0]
            figs[f"time_series_{_safe(app)}"] = partial(self.plot_time_series, app)
        return figs

    def plot_time_series(self, application: str, **kw):
        """CPI and stall-ratio series of one application on each platform (Figure 3 analogue)."""
        from . import plots
        return plots.time_series(self, application, **kw)


def _safe(name: str) -> str:
    """A file stem from a platform or application name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def _verdict(correct: bool | None) -> str:
    return "direction correct" if correct else ("direction wrong" if correct is False else "not checkable")
