"""Where the runs of a study execute: in this process, or on a Dask distributed cluster.

``Executor(cluster=None)`` runs in order in this process; ``Executor("tcp://host:8786")``
submits every run to the Dask scheduler at that address (never a home-made
distribution layer).  Either way ``map`` returns results in the order of the runs.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from scenarios.errors import ScenarioError


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
            progress: Callable[[int], None] | None = None, units: int = 1) -> list[Any]:
        """``[fn(item, shared) for item in items]``.  Locally ``fn`` also receives ``progress``
        (per unit of work); on a cluster the bar advances by ``units`` per finished item."""
        if self._client is None:
            return [fn(item, shared, progress=progress) for item in items]
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
