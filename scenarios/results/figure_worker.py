"""Figures drawn in a second process, started before the work whose results they show.

Importing matplotlib and drawing the first figure cost about 0.6 s of one core; a command whose work is
a second or two long (``whatif mine`` of a small profile) would spend a third of its time on its report.
A thread cannot hide that -- the import holds the GIL the work's Python glue needs -- but a process can:
forked when the command starts, it imports matplotlib and draws a throw-away figure on the core the work
leaves idle, then draws each figure it is sent (a module-level function and plain tables) while the
command writes its tables.  The work itself never waits for it.
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.pool import AsyncResult
from typing import Any, Callable

from whatif.scenarios.results.report import figure_png


def _warm() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2, 2))
    ax.scatter([1, 2], [1, 2], c=[1, 2], cmap="viridis")
    ax.bar([1, 2], [1, 10], label="warm-up")
    ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    figure_png(fig)


def _png(make: Callable[..., Any], args: tuple) -> bytes:
    return figure_png(make(*args))


class FigureWorker:
    """One forked process that draws figures: ``png(make, *args)`` -> the PNG of ``make(*args)`` (a
    module-level function returning a matplotlib figure), later, with ``.get()``.  A context manager:
    the process ends with the block (killed if the block raised)."""

    def __init__(self) -> None:
        self._pool = multiprocessing.get_context("fork").Pool(1, initializer=_warm)

    def png(self, make: Callable[..., Any], *args: Any) -> AsyncResult:
        return self._pool.apply_async(_png, (make, args))

    def __enter__(self) -> "FigureWorker":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self._pool.close()
        else:
            self._pool.terminate()
        self._pool.join()
