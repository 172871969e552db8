"""Work division: per-method chunks counted on local cores (threads) or on a Dask distributed cluster.

The graph is cut into chunks of whole methods once (§4.5, §5.1); the cut depends on the graph only.
Each generation's candidate trie is counted on every chunk and the per-chunk arrays are added in chunk
order, so one worker, N local workers and a Dask cluster produce bit-for-bit identical supports.

Local workers are threads: the numba kernel releases the GIL, so threads share the graph without
copying it.  On a cluster the chunks are scattered to the workers once, the trie once per generation;
the workers must be able to import ``models.flowgsp`` (the same whatif installation).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Callable, Sequence

import numpy as np

from whatif.models.errors import ModelInputError
from whatif.models.flowgsp.graph import GraphChunk
from whatif.models.flowgsp.kernel import count_chunk
from whatif.models.flowgsp.trie import CandidateTrie, build_trie

DASK_CONNECT_TIMEOUT_S = 10


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def _reduce(parts: Sequence[np.ndarray], n: int) -> np.ndarray:
    total = np.zeros((2, n))
    for part in parts:  # chunk order: deterministic whatever the executor
        total += part
    return total


class LocalExecutor:
    """Counts chunks on ``workers`` threads (inline when ``workers == 1``)."""

    def __init__(self, chunks: Sequence[GraphChunk], workers: int):
        self.chunks = list(chunks)
        self.workers = workers
        self._pool = ThreadPoolExecutor(max_workers=workers) if workers > 1 else None
        if self.chunks:  # load (or compile) the kernel now, not inside the first generation's timing
            count_chunk(self.chunks[0], build_trie([], 1), 0, 0)

    @property
    def n_chunks(self) -> int:
        return len(self.chunks)

    def count(self, trie: CandidateTrie, gap: int, window: int,
              on_chunk: Callable[[], None] | None = None) -> np.ndarray:
        if self._pool is None:
            parts = []
            for chunk in self.chunks:
                parts.append(count_chunk(chunk, trie, gap, window))
                if on_chunk:
                    on_chunk()
        else:
            futures = [self._pool.submit(count_chunk, chunk, trie, gap, window) for chunk in self.chunks]
            for _ in as_completed(futures):
                if on_chunk:
                    on_chunk()
            parts = [f.result() for f in futures]
        return _reduce(parts, trie.n_candidates)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


class DaskExecutor:
    """Counts chunks as tasks on the Dask distributed cluster at ``address`` (e.g. ``tcp://host:8786``)."""

    def __init__(self, chunks: Sequence[GraphChunk], address: str):
        try:
            from distributed import Client
        except ImportError as exc:  # pragma: no cover - dask[distributed] is a dependency
            raise ModelInputError(f"--cluster needs dask.distributed: {exc}") from None
        try:
            self.client = Client(address, timeout=DASK_CONNECT_TIMEOUT_S, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            raise ModelInputError(f"cannot connect to the Dask scheduler at {address}: "
                                  f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
        self._chunk_futures = self.client.scatter(list(chunks), hash=False)
        self._n = len(chunks)

    @property
    def n_chunks(self) -> int:
        return self._n

    def count(self, trie: CandidateTrie, gap: int, window: int,
              on_chunk: Callable[[], None] | None = None) -> np.ndarray:
        from distributed import as_completed as dask_completed

        trie_future = self.client.scatter(trie, broadcast=True, hash=False)
        futures = [self.client.submit(count_chunk, cf, trie_future, gap, window, pure=False)
                   for cf in self._chunk_futures]
        for _ in dask_completed(futures, loop=self.client.loop):
            if on_chunk:
                on_chunk()
        parts = self.client.gather(futures)
        del trie_future
        return _reduce(parts, trie.n_candidates)

    def close(self) -> None:
        self.client.close()


def make_executor(chunks: Sequence[GraphChunk], workers: int, cluster: str | None):
    if cluster:
        return DaskExecutor(chunks, cluster)
    return LocalExecutor(chunks, workers)
