"""Correlation-driven application similarity (seed 002, Cammarota et al.).

signature = Pearson(CPI, stall ratio) per stall type; similarity = Spearman rho (or Kendall tau) between
signatures; distance 1 - rho; minimum spanning tree; Algorithm 1 (recursive maximum-edge cut with threshold
g) and Algorithm 2 (smallest cluster holding a reference); k-means comparison; system evaluation (§4.3).

Typical use::

    from whatif.models.similarity import SimilarityEngine
    res = SimilarityEngine(threshold=0.5, reference="yahoo_y").fit(time_series_df, run_times=run_times_df)
    res["harpertown"].clusters, res.system_evaluation.table(), res.to_dict()
"""

from .engine import SimilarityEngine
from .evaluation import PairEvaluation, SystemEvaluation, evaluate_systems
from .hierarchy import Clustering, CutStep, Hierarchy, ReferenceSearch, algorithm1, algorithm2, build_hierarchy
from .io import read_table, run_times_from_table
from .kmeans import KMeansResult, hartigan_wong
from .mst import DistanceSource, SpanningTree, minimum_spanning_tree, minimum_spanning_tree_dense
from .rank import average_ranks, kendall_embedding, similarity_matrix, spearman_embedding
from .results import PlatformSimilarity, SimilarityResults, adjusted_rand_index
from .signatures import (SignatureSet, Signatures, SimilarityWarning, signatures_from_arrays,
                         signatures_from_table, signatures_from_time_series)

__all__ = [
    "SimilarityEngine", "SimilarityResults", "PlatformSimilarity",
    "SystemEvaluation", "PairEvaluation", "evaluate_systems",
    "Signatures", "SignatureSet", "SimilarityWarning", "signatures_from_time_series", "signatures_from_table",
    "signatures_from_arrays", "read_table", "run_times_from_table",
    "average_ranks", "spearman_embedding", "kendall_embedding", "similarity_matrix",
    "DistanceSource", "SpanningTree", "minimum_spanning_tree", "minimum_spanning_tree_dense",
    "Hierarchy", "CutStep", "Clustering", "ReferenceSearch", "build_hierarchy", "algorithm1", "algorithm2",
    "KMeansResult", "hartigan_wong", "adjusted_rand_index",
]
