"""Where the runs of a study execute: in this process, a local process pool, or a Dask cluster.

``Executor(cluster=None)`` runs in order in this process, or -- when a study asks ``map`` for
``workers > 1`` -- in a local pool of that many processes (``concurrent.futures``, forkserver start so
that no lock of a progress thread is inherited); ``Executor("tcp://host:8786")`` submits every run to
the Dask scheduler at that address (never a home-made distribution layer).  Either way ``map``
returns results in the order of the runs.

A killed run leaves no process behind, even on ``kill -9`` (Linux): the local pool's workers ask the
kernel for SIGKILL when their parent dies (``prctl(PR_SET_PDEATHSIG)`` in the pool initializer), and
so does the forkserver, their parent -- it imports this module as a preload, and the module, when it
finds itself imported by a forkserver that a whatif process started, makes the forkserver die with
that process.  Main process gone -> forkserver killed -> workers killed.  When a forkserver was
already running without that preload (started by other code), the pool uses the ``spawn`` start
method instead, whose workers are the main process's own children.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any, Callable, Sequence

from whatif.scenarios.errors import ScenarioError

_PR_SET_PDEATHSIG = 1
# The pid of the whatif process that starts the forkserver; a forkserver that preloads this module and
# whose parent has that pid asks to die with it.
_FORKSERVER_PARENT_ENV = "WHATIF_FORKSERVER_PARENT"


def _die_with_parent() -> bool:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux); False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return int(fh.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _worker_init(main_pid: int) -> None:
    """Pool initializer: die with the parent (the forkserver, or the main process under ``spawn``); if
    the main process is already gone -- it died before the request took effect -- exit now."""
    if not _die_with_parent():
        return
    parent = os.getppid()
    if parent != main_pid and _parent_of(parent) != main_pid:
        os._exit(1)


def _imported_by_forkserver() -> bool:
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        filename = code.co_filename.replace("\\", "/")
        if code.co_name == "main" and filename.endswith("multiprocessing/forkserver.py"):
            return True
        frame = frame.f_back
    return False


def _forkserver_dies_with_parent() -> None:
    """Run on import in a forkserver started by :func:`_pool_context`."""
    expected = os.environ.get(_FORKSERVER_PARENT_ENV, "")
    if not expected.isdigit() or not _imported_by_forkserver():
        return
    if _die_with_parent() and os.getppid() != int(expected):
        os._exit(1)                             # the whatif process died before the request took effect


_forkserver_dies_with_parent()


def _pool_context():
    """The multiprocessing context of the local pool: forkserver whose server dies with this process."""
    import multiprocessing
    import multiprocessing.forkserver as forkserver

    if not sys.platform.startswith("linux"):
        return multiprocessing.get_context("forkserver")
    server = getattr(forkserver, "_forkserver", None)
    preload = list(getattr(server, "_preload_modules", None) or ["__main__"])
    ours = __name__ in preload
    if not ours and (server is None or getattr(server, "_forkserver_pid", None) is not None):
        return multiprocessing.get_context("spawn")              # someone else's forkserver runs
    os.environ[_FORKSERVER_PARENT_ENV] = str(os.getpid())        # read by the (re)started forkserver
    ctx = multiprocessing.get_context("forkserver")
    if not ours:
        ctx.set_forkserver_preload(preload + [__name__])
    return ctx


class Executor:
    """Where a study's independent pieces run: this process, a local pool, or a Dask cluster.
    ``workers`` (``whatif run --workers N``), when given, replaces every study's own pool size."""

    def __init__(self, cluster: str | None = None, workers: int | None = None):
        if workers is not None and workers < 1:
            raise ScenarioError(f"--workers must be >= 1, got {workers}")
        self.cluster = cluster
        self.workers = workers
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
            except (ValueError, TypeError) as exc:          # dask's address parser: scheme, host, port
                raise ScenarioError(f"--cluster {self.cluster}: not a Dask scheduler address such as "
                                    f"'tcp://host:8786' ({exc})") from None
        return self

    def __exit__(self, *exc) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def map(self, fn: Callable, items: Sequence[Any], shared: Any = None,
            progress: Callable[[int], None] | None = None, units: int = 1, workers: int = 1,
            cost: Callable[[Any], float] | None = None) -> list[Any]:
        """``[fn(item, shared) for item in items]``.  In this process ``fn`` also receives ``progress``
        (per unit of work); in a local pool (``workers > 1``) and on a cluster the bar advances by
        ``units`` per finished item.  ``cost``: an item's expected host time (any scale); a pool or cluster
        then starts the costliest first, so that no long item is left to run alone at the end."""
        if self.workers is not None:
            workers = self.workers
        if self._client is None and (workers <= 1 or len(items) <= 1):
            return [fn(item, shared, progress=progress) for item in items]
        order = sorted(range(len(items)), key=lambda k: -cost(items[k])) if cost else list(range(len(items)))
        if self._client is None:
            return self._pool_map(fn, items, order, shared, progress, units, workers)
        from distributed import as_completed

        shared_future = self._client.scatter(shared, broadcast=True) if shared is not None else None
        futures = [None] * len(items)
        for k in order:
            futures[k] = self._client.submit(fn, items[k], shared_future, pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        out: list[Any] = [None] * len(items)
        for fut in as_completed(futures):
            out[index[fut.key]] = fut.result()
            if progress is not None:
                progress(units)
        return out

    @staticmethod
    def _pool_map(fn: Callable, items: Sequence[Any], order: Sequence[int], shared: Any, progress, units: int,
                  workers: int) -> list[Any]:
        from concurrent.futures import ProcessPoolExecutor, as_completed

        out: list[Any] = [None] * len(items)
        with ProcessPoolExecutor(max_workers=min(workers, len(items)), mp_context=_pool_context(),
                                 initializer=_worker_init, initargs=(os.getpid(),)) as pool:
            futures = {pool.submit(fn, items[i], shared): i for i in order}
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


def piece_rates(names: Sequence[str], outs: Sequence[dict], wall: float) -> dict[str, float]:
    """Where a study's host time went, piece by piece (each output's ``host_seconds``), with the wall time
    and the workers' total: what a scheduler, or a user sizing ``--workers``, needs (the manifest's
    ``rates``)."""
    seconds = {f"host_seconds[{name}]": out["host_seconds"] for name, out in zip(names, outs)}
    return {"wall_seconds": wall, "worker_seconds": sum(seconds.values()), **seconds}
