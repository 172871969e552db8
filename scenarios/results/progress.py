"""Progress on stderr: a bar for work of known size, a status line for work of unknown size.

Both are no-ops when disabled (``--json`` runs, tests), so callers never branch on it.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator


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
