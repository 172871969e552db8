"""Where the runs of a study execute: in this process, a local process pool, or a Dask cluster.

``Executor(cluster=None)`` runs in order in this process, or -- when a study asks ``map`` for
``workers > 1`` -- in a local pool of that many processes (``concurrent.futures``, forkserver start so
that no lock of a progress thread is inherited); ``Executor("tcp://host:8786")`` submits every run to
the Dask scheduler at that address (never a home-made distribution layer).  Either way ``map``
returns results in the order of the runs.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from whatif.scenarios.errors import ScenarioError


class Executor:
    def __init__(self, cluster: str | None = None):
        self.cluster = cluster
        self._client = None

    def __enter__(self) -> "Executor":
        if self.cluster is not None:
            try:
                from distributed import Client
            except ImportError:  # pragma: no cover - dask[distributed] is a dependency
                raise ScenarioError("--cluster needs dask.distributed") from None
            try:
                self._client = Client(self.cluster, timeout="5s")
            except (OSError, TimeoutError) as exc:
                raise ScenarioError(f"--cluster {self.cluster}: cannot reach a Dask scheduler ({exc})") from None
        return self

    def __exit__(self, *exc) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def map(self, fn: Callable, items: Sequence[Any], shared: Any = None,
            progress: Callable[[int], None] | None = None, units: int = 1, workers: int = 1) -> list[Any]:
        """``[fn(item, shared) for item in items]``.  In this process ``fn`` also receives ``progress``
        (per unit of work); in a local pool (``workers > 1``) and on a cluster the bar advances by
        ``units`` per finished item."""
        if self._client is None:
            if workers <= 1 or len(items) <= 1:
                return [fn(item, shared, progress=progress) for item in items]
            return self._pool_map(fn, items, shared, progress, units, workers)
        from distributed import as_completed

        shared_future = self._client.scatter(shared, broadcast=True) if shared is not None else None
        futures = [self._client.submit(fn, item, shared_future, pure=False) for item in items]
        index = {f.key: i for i, f in enumerate(futures)}
        out: list[Any] = [None] * len(items)
        for fut in as_completed(futures):
            out[index[fut.key]] = fut.result()
            if progress is not None:
                progress(units)
        return out

    @staticmethod
    def _pool_map(fn: Callable, items: Sequence[Any], shared: Any, progress, units: int, workers: int) -> list[Any]:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        out: list[Any] = [None] * len(items)
        with ProcessPoolExecutor(max_workers=min(workers, len(items)),
                                 mp_context=multiprocessing.get_context("forkserver")) as pool:
            futures = {pool.submit(fn, item, shared): i for i, item in enumerate(items)}
            try:
                for fut in as_completed(futures):
                    out[futures[fut]] = fut.result()
                    if progress is not None:
                        progress(units)
            except BaseException:
                for fut in futures:
                    fut.cancel()
                raise
        return out
