"""Engine and simulation results -> tables, figures and report sections, shared by commands and studies."""

import os

#: the width of a console that is not a terminal: wide enough that no table is cut
UNBOUNDED_WIDTH = 1000


def stdout_console():
    """The rich console for results on stdout.  In a terminal (or with ``COLUMNS`` set) rich's own width;
    into a file or a pipe, where nothing limits a line, a table prints at its natural width instead of 80
    columns, which cut a ten-variant headline's headers and figures to 'base…'."""
    from rich.console import Console

    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(width=UNBOUNDED_WIDTH)
    return console
