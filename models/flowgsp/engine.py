"""The FlowGSP engine (seed 001 §3.4, Algorithm 1, with the semantics of issue 6).

    results = FlowGSP(gap=0, window=0, n_generations=10, min_support=0.01, min_diff_support=0.01).fit(efg)

Generation 1 holds every attribute; each generation's candidates are counted on every method (in
parallel, see :mod:`parallel`), a candidate is dropped when S_M < ``min_support`` and S_D <
``min_diff_support``, and the next generation is the GSP join and prune of the kept ones.  Mining stops
after ``n_generations`` generations or at an empty generation.  The definitions are those of issue 6;
where seed 001's pseudo-code (Algorithms 1-3) disagrees with them, ``models/flowgsp/README.md`` lists the
differences ("Where the seed's pseudo-code disagrees").  ``max_candidates`` guards memory: a generation
with more candidates stops the run with an error asking for higher thresholds.
"""

from __future__ import annotations

import time

import numpy as np

from whatif.models.errors import ModelInputError
from whatif.models.flowgsp.graph import CHUNK_VERTICES, EFG
from whatif.models.flowgsp.parallel import default_workers, make_executor
from whatif.models.flowgsp.results import FlowGSPResults, GenerationStats, SequenceSupport
from whatif.models.flowgsp.sequences import Seq, first_generation, next_generation
from whatif.models.flowgsp.trie import build_trie
from whatif.models.params import Interval, NoneOr, Parameterised, Pattern

MAX_GAP = 16
MAX_WINDOW = 16
MAX_GENERATIONS = 64  # a candidate holds at most 64 items


class Progress:
    """Progress hooks (no-ops); the CLI implements them with a rich progress bar."""

    def generation_started(self, n: int, candidates: int, chunks: int) -> None: ...

    def chunk_done(self) -> None: ...

    def generation_finished(self, n: int, kept: int, seconds: float) -> None: ...


class FlowGSP(Parameterised):
    """Mine an EFG for frequent and/or costly attribute sequences."""

    _parameter_constraints = {
        "gap": Interval(int, 0, MAX_GAP),
        "window": Interval(int, 0, MAX_WINDOW),
        "n_generations": Interval(int, 1, MAX_GENERATIONS),
        "min_support": Interval(float, 0.0, 1.0),
        "min_diff_support": Interval(float, 0.0, 1.0),
        "workers": NoneOr(Interval(int, 1, None)),
        "cluster": NoneOr(Pattern(r".*://.+", "a Dask scheduler address such as 'tcp://host:8786'")),
        "chunk_vertices": Interval(int, 1, None),
        "max_candidates": Interval(int, 1, None),
    }

    def __init__(self, gap: int = 0, window: int = 0, n_generations: int = 10, min_support: float = 0.01,
                 min_diff_support: float = 0.01, workers: int | None = None, cluster: str | None = None,
                 chunk_vertices: int = CHUNK_VERTICES, max_candidates: int = 2_000_000):
        self.gap = gap
        self.window = window
        self.n_generations = n_generations
        self.min_support = min_support
        self.min_diff_support = min_diff_support
        self.workers = workers
        self.cluster = cluster
        self.chunk_vertices = chunk_vertices
        self.max_candidates = max_candidates

    def fit(self, efg: EFG, progress: Progress | None = None) -> FlowGSPResults:
        self.validate_params()
        if not isinstance(efg, EFG):
            raise ModelInputError(f"FlowGSP.fit needs an EFG, got {type(efg).__name__}")
        progress = progress or Progress()
        t_start = time.perf_counter()
        workers = self.workers or default_workers()
        executor = make_executor(efg.chunks(self.chunk_vertices), workers, self.cluster)
        kept_all: list[SequenceSupport] = []
        stats: list[GenerationStats] = []
        names = efg.attribute_names
        try:
            cands: list[Seq] = first_generation(efg.n_attributes)
            for n in range(1, self.n_generations + 1):
                if not cands:
                    break
                if len(cands) > self.max_candidates:
                    raise ModelInputError(
                        f"generation {n} has {len(cands)} candidates, more than max_candidates="
                        f"{self.max_candidates}; raise --min-support/--min-diff-support or lower --generations")
                t0 = time.perf_counter()
                progress.generation_started(n, len(cands), executor.n_chunks)
                totals = executor.count(build_trie(cands, efg.n_attributes), self.gap, self.window,
                                        progress.chunk_done)
                sf, sw = totals[0], totals[1]
                keep = (np.maximum(sf, sw) >= self.min_support) | (np.abs(sf - sw) >= self.min_diff_support)
                kept = [cands[i] for i in np.flatnonzero(keep)]
                kept_all.extend(SequenceSupport(elements=tuple(tuple(names[a] for a in e) for e in cands[i]),
                                                sf=float(sf[i]), sw=float(sw[i]), generation=n)
                                for i in np.flatnonzero(keep))
                cands = next_generation(kept) if n < self.n_generations else []
                seconds = time.perf_counter() - t0
                stats.append(GenerationStats(n=n, candidates=len(keep), kept=len(kept), seconds=seconds))
                progress.generation_finished(n, len(kept), seconds)
        finally:
            executor.close()
        kept_all.sort(key=lambda s: (-s.sm, -s.sd, s.text))
        params = {k: v for k, v in self.get_params().items() if k not in ("max_candidates",)}
        params["workers"] = workers if not self.cluster else None
        return FlowGSPResults(sequences=tuple(kept_all), generations=tuple(stats), parameters=params,
                              graph=efg.describe(), seconds=time.perf_counter() - t_start)


def count_candidates(efg: EFG, cands: list[Seq], gap: int, window: int, workers: int = 1,
                     cluster: str | None = None, chunk_vertices: int = CHUNK_VERTICES) -> np.ndarray:
    """``[[S_f], [S_w]]`` of given candidates (no thresholds, no generations) — for tests and checks."""
    executor = make_executor(efg.chunks(chunk_vertices), workers, cluster)
    try:
        return executor.count(build_trie(cands, efg.n_attributes), gap, window)
    finally:
        executor.close()

