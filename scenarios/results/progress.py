"""Progress on stderr: a bar for work of known size, a status line for work of unknown size.

Both are no-ops when disabled (``--json`` runs, tests), so callers never branch on it.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator


@contextmanager
def progress_bar(total: int, description: str, enabled: bool = True) -> Iterator[Callable[[int], None]]:
    """Yields ``advance(n)``; shows a rich progress bar with rate and time left on stderr."""
    if not enabled or total <= 0:
        yield lambda n: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    console = Console(stderr=True)
    if not console.is_terminal:         # a transient bar leaves an empty line in a file or pipe: none at all
        yield lambda n: None
        return
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), console=console, transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n: bar.advance(task, n)


@contextmanager
def status(label: str, enabled: bool = True) -> Iterator[Callable[[str], None]]:
    """Yields ``say(message)``; shows a spinner on stderr whose text follows the messages."""
    if not enabled:
        yield lambda msg: None
        return
    from rich.console import Console

    with Console(stderr=True).status(label) as st:
        yield lambda msg: st.update(f"{label}: {msg}")
