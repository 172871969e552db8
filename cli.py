"""The ``whatif`` command line.  Thin: parse, call into ``scenarios``, print, exit code.

Exit codes: 0 success, 2 bad input (one line on stderr, nothing written), 1 internal error.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Callable, List, Optional

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="whatif: simulation-backed what-if modelling for processor and JVM performance.")


def _user_error_types() -> tuple[type[BaseException], ...]:
    from models.errors import ModelInputError
    from scenarios.errors import ScenarioError
    from simulator.errors import SimulatorInputError

    return (SimulatorInputError, ModelInputError, ScenarioError)


def fail(message: str, code: int = 2) -> None:
    """Print one line on stderr and exit."""
    typer.echo(f"whatif: error: {message}", err=True)
    raise typer.Exit(code)


def command(fn: Callable) -> Callable:
    """Wrap a command so that user errors become one line on stderr and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except _user_error_types() as exc:
            fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)

    return wrapper


def echo_json(doc) -> None:
    from scenarios.output import to_json

    typer.echo(to_json(doc))


# --------------------------------------------------------------------------- list / show
@app.command("list")
@command
def list_cmd(what: str = typer.Argument(..., help="platforms | scenarios | workloads")) -> None:
    """List the shipped platforms, scenarios or workloads."""
    from scenarios import catalog

    for name, description in catalog.listing(what):
        typer.echo(f"{name:<28} {description}")


@app.command("show")
@command
def show_cmd(what: str = typer.Argument(..., help="platform"),
             name: str = typer.Argument(..., help="platform name, e.g. mpc7447a, or a path to a TOML file"),
             as_json: bool = typer.Option(False, "--json", help="print the resolved description as JSON"),
             set_: Optional[List[str]] = typer.Option(None, "--set", help="override KEY=VALUE (repeatable)")) -> None:
    """Show a platform description (resolved, with overrides applied)."""
    from scenarios import catalog

    doc, text = catalog.show(what, name, set_ or [])
    if as_json:
        echo_json(doc)
    else:
        typer.echo(text)


# --------------------------------------------------------------------------- cachesim
@app.command("cachesim")
@command
def cachesim_cmd(trace: Path = typer.Argument(..., help="trace file (valgrind lackey --trace-mem=yes output, or .wtr)"),
                 platform: str = typer.Option(..., "--platform", "-p", help="platform name or TOML path"),
                 set_: Optional[List[str]] = typer.Option(None, "--set", help="override KEY=VALUE (repeatable)"),
                 fmt: str = typer.Option("auto", "--format", help="lackey | whatif | auto (by extension)"),
                 as_json: bool = typer.Option(False, "--json", help="print one JSON document")) -> None:
    """Run an address trace through a platform's caches and TLBs."""
    from scenarios import cachesim_study

    doc = cachesim_study.cachesim_command(trace, platform, set_ or [], fmt, progress=not as_json)
    if as_json:
        echo_json(doc)
    else:
        cachesim_study.print_summary(doc)


# --------------------------------------------------------------------------- run
@app.command("run")
@command
def run_cmd(scenario: Path = typer.Argument(..., help="scenario TOML file"),
            out: Optional[Path] = typer.Option(None, "--out", "-o", help="results directory (default results/<name>)"),
            seed: Optional[int] = typer.Option(None, "--seed", help="override the scenario's seed"),
            set_: Optional[List[str]] = typer.Option(None, "--set", help="override KEY=VALUE for every variant"),
            cluster: Optional[str] = typer.Option(None, "--cluster", help="Dask scheduler address, e.g. tcp://host:8786")) -> None:
    """Run a scenario and write its results directory (tables, plots, report.html)."""
    from scenarios import runner

    out_dir = runner.run_scenario_file(scenario, out=out, seed=seed, overrides=set_ or [], cluster=cluster)
    typer.echo(f"results written to {out_dir}")


# --------------------------------------------------------------------------- validate
@app.command("validate")
@command
def validate_cmd(quick: bool = typer.Option(False, "--quick", help="smaller problem sizes"),
                 as_json: bool = typer.Option(False, "--json", help="print one JSON document"),
                 only: Optional[List[str]] = typer.Option(None, "--only", help="run only these checks")) -> None:
    """Run the registered ground-truth checks and print expected vs measured."""
    from scenarios import validation

    known = validation.registered_checks()
    unknown = [name for name in (only or []) if name not in known]
    if unknown:
        fail(f"unknown check {unknown[0]!r}; known checks: {', '.join(sorted(known))}")
    results = validation.run_checks(quick=quick, only=only or None,
                                    progress=None if as_json else (lambda n: typer.echo(f"running {n} ...", err=True)))
    if as_json:
        echo_json({"checks": [r.as_dict() for r in results]})
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(title="whatif validate")
        for col in ("check", "expected", "measured", "pass"):
            table.add_column(col)
        for r in results:
            table.add_row(r.name, str(r.expected), str(r.measured), "[green]yes[/]" if r.passed else "[red]NO[/]")
        Console().print(table)
    if not all(r.passed for r in results):
        raise typer.Exit(1)


# --------------------------------------------------------------------------- mine (FlowGSP, seed 001)
@app.command("mine")
@command
def mine_cmd(profile: Path = typer.Argument(..., help="EFG as JSON (interchange format) or a SQLite profile database"),
             gap: int = typer.Option(0, "--gap", help="maximum gap g_max between windows"),
             window: int = typer.Option(0, "--window", help="maximum window size w_max (a window spans w_max+1 vertices)"),
             generations: int = typer.Option(10, "--generations", help="number of generations n_gen"),
             min_support: float = typer.Option(0.01, "--min-support", help="S_M threshold, in [0, 1]"),
             min_diff_support: float = typer.Option(0.01, "--min-diff-support", help="S_D threshold, in [0, 1]"),
             workers: Optional[int] = typer.Option(None, "--workers", help="local worker threads (default: all cores)"),
             cluster: Optional[str] = typer.Option(None, "--cluster", help="Dask scheduler address, e.g. tcp://host:8786"),
             top: Optional[int] = typer.Option(None, "--top", help="print only the N sequences with the largest S_M"),
             out: Optional[Path] = typer.Option(None, "--out", "-o", help="results directory (Parquet, report.html)"),
             as_json: bool = typer.Option(False, "--json", help="print one JSON document")) -> None:
    """Mine an execution flow graph for frequent or costly attribute sequences (FlowGSP)."""
    from scenarios import mine_command

    results, doc = mine_command.mine_command(profile, gap=gap, window=window, generations=generations,
                                             min_support=min_support, min_diff_support=min_diff_support,
                                             workers=workers, cluster=cluster, top=top, out=out,
                                             progress=not as_json)
    if as_json:
        echo_json(doc)
    else:
        typer.echo(results.summary(top=top or 25).as_text())
        if out is not None:
            typer.echo(f"results written to {out}")


def main() -> None:  # console-script entry point
    app()


if __name__ == "__main__":
    main()
