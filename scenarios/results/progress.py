"""Progress on stderr: a bar for work of known size, a status line for work of unknown size, and a bar over
steps whose durations are only estimated (compiling the kernels).

All are no-ops when disabled (``--json`` runs, tests), so callers never branch on it.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence


class Advance:
    """``advance(n)``: ``n`` more units of work done; ``advance.restart(label)``: the same work begins again
    (SMARTS's second run), the bar starts over with ``label`` beside its description.  Without a bar: no-ops."""

    def __init__(self, bar=None, task=None, description: str = ""):
        self.bar, self.task, self.description = bar, task, description

    def __call__(self, n: int) -> None:
        if self.bar is not None:
            self.bar.advance(self.task, n)

    def restart(self, label: str) -> None:
        if self.bar is not None:
            self.bar.reset(self.task, description=f"{self.description}: {label}")


@contextmanager
def progress_bar(total: int, description: str, enabled: bool = True) -> Iterator[Advance]:
    """Yields ``advance`` (:class:`Advance`); shows a rich progress bar with rate and time left on stderr."""
    if not enabled or total <= 0:
        yield Advance()
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    console = Console(stderr=True)
    if not console.is_terminal:         # a transient bar leaves an empty line in a file or pipe: none at all
        yield Advance()
        return
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), console=console, transient=True) as bar:
        yield Advance(bar, bar.add_task(description, total=total), description)


@contextmanager
def status(label: str, enabled: bool = True) -> Iterator[Callable[[str], None]]:
    """Yields ``say(message)``; shows a spinner on stderr whose text follows the messages."""
    if not enabled:
        yield lambda msg: None
        return
    from rich.console import Console

    with Console(stderr=True).status(label) as st:
        yield lambda msg: st.update(f"{label}: {msg}")


def run_steps(steps: Sequence[tuple[str, float, Callable[[], object]]], description: str, enabled: bool = True,
              delay: float = 0.5, console=None, estimates: list[float] | None = None) -> list[float]:
    """Run ``steps`` -- (label, estimated seconds, callable) -- in order; returns each one's seconds.

    Work that reports no progress of its own (a numba compilation) gets a bar whose units are the estimated
    seconds: within a step it moves with the clock, up to just short of the step's estimate, and it jumps to
    the step's end when the step returns; the time left is then the rest of the estimates, and grows while a
    step overruns its own.  The bar appears only once the steps have run ``delay`` seconds, so steps that
    finish sooner (kernels loaded from the cache) show nothing.  ``console``: rich's, default stderr's.
    ``estimates``: the steps' estimates as a list that a running step may revise (a step another process
    has taken is then this one's wait for it: :mod:`whatif.scenarios.kernels`); the bar reads it at
    every redraw.  Default: the steps' own."""
    est = [e for _, e, _ in steps] if estimates is None else estimates
    total = sum(est)
    seconds: list[float] = []
    bar = None
    if enabled and total > 0:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        console = console or Console(stderr=True)
        if console.is_terminal:
            bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), TimeRemainingColumn(),
                           console=console, transient=True)
    if bar is None:
        for _, _, fn in steps:
            t0 = time.perf_counter()
            fn()
            seconds.append(time.perf_counter() - t0)
        return seconds
    task = bar.add_task(description, total=total)
    current = (0, time.perf_counter(), "")                # the step running, its start, its label
    finished = threading.Event()

    def tick() -> None:
        if finished.wait(delay):
            return
        bar.start()
        while not finished.is_set():
            i, t0, label = current
            bar.update(task, total=sum(est), completed=sum(est[:i]) + step_position(time.perf_counter() - t0, est[i]),
                       description=f"{description}: {label}")
            finished.wait(0.1)

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        for i, (label, _, fn) in enumerate(steps):
            current = (i, time.perf_counter(), label)
            fn()
            seconds.append(time.perf_counter() - current[1])
    finally:
        finished.set()
        ticker.join()
        if bar.live.is_started:
            bar.stop()
    return seconds


def step_position(elapsed: float, estimate: float) -> float:
    """Where a running step's bar stands after ``elapsed`` seconds of its ``estimate``: with the clock, but
    never past 95 % of the estimate (the step has not ended)."""
    return min(max(elapsed, 0.0), 0.95 * estimate)
