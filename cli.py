"""The ``whatif`` command line.  Thin: parse, call into ``scenarios``, print, exit code.

Commands import their library modules when they run, not at the top: ``whatif list`` or ``--help`` should
not pay for loading numba and the simulator.

Exit codes: 0 success, 2 bad input (one line on stderr, nothing written), 1 internal error.
"""

from __future__ import annotations

import errno
import functools
import sys
from pathlib import Path
from typing import Callable, List, Optional

import typer
import typer.core


class _OneLineUsageErrors(typer.core.TyperGroup):
    """The app's click group: a usage error (unknown command or option, missing argument, a value of the
    wrong type or out of range) is one line on stderr and exit code 2, like every other bad input."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except typer.TyperException as exc:                  # click's errors (typer vendors click)
            if type(exc).__name__ != "NoArgsIsHelpError":   # `whatif`, `whatif trace`: the help was shown
                typer.echo(f"whatif: error: {usage_message(exc)}", err=True)
            sys.exit(getattr(exc, "exit_code", 2))
        except typer.Abort:
            typer.echo("whatif: error: aborted", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


def usage_message(exc: typer.TyperException) -> str:
    """``run: Missing argument 'scenario'. (whatif run --help shows the usage)``: one line."""
    text = " ".join((exc.format_message() if hasattr(exc, "format_message") else str(exc)).split())
    ctx = getattr(exc, "ctx", None)
    if ctx is None:
        return text
    command = " ".join(ctx.command_path.split()[1:])
    where = f"{command}: " if command else ""
    return f"{where}{text} (whatif {command + ' ' if command else ''}--help shows the usage)"


app = typer.Typer(cls=_OneLineUsageErrors, add_completion=False, no_args_is_help=True,
                  pretty_exceptions_enable=False,
                  help="whatif: simulation-backed what-if modelling for processor and JVM performance.")


def _version(value: bool) -> None:
    if value:
        from whatif import __version__

        typer.echo(f"whatif {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="print the version and exit")) -> None:
    """whatif: simulation-backed what-if modelling for processor and JVM performance."""


def _user_error_types() -> tuple[type[BaseException], ...]:
    from whatif.models.errors import ModelInputError
    from whatif.scenarios.errors import ScenarioError
    from whatif.simulator.errors import SimulatorInputError

    return (SimulatorInputError, ModelInputError, ScenarioError)


def fail(message: str, code: int = 2) -> None:
    """Print one line on stderr and exit."""
    typer.echo(f"whatif: error: {message}", err=True)
    raise typer.Exit(code)


def command(fn: Callable) -> Callable:
    """Wrap a command so that user errors become one line on stderr and exit code 2.  A command that
    declares ``csv_tables`` (the ``--csv`` option, :data:`CSV`) writes its results directory's tables
    as CSV too."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from whatif.scenarios.results.writer import tables_as_csv

        try:
            with tables_as_csv(kwargs.get("csv_tables", False)):
                return fn(*args, **kwargs)
        except _user_error_types() as exc:
            fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        except OSError as exc:
            # the writers say which output a full disk refused (``write_refused``); this is the net under
            # any other write that meets one
            if exc.errno not in _NO_ROOM:
                raise
            fail(f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror)

    return wrapper


_NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS)


CSV = typer.Option(False, "--csv", help="with --out: every table also as CSV (beside the Parquet)")


def echo_json(doc) -> None:
    from whatif.scenarios.results.writer import to_json

    typer.echo(to_json(doc))


def report_analysis(warnings, doc, summary, as_json: bool, out) -> None:
    """The common ending of an analysis command: warnings on stderr, then JSON or the summary."""
    for warning in warnings:
        typer.echo(f"whatif: warning: {warning}", err=True)
    if as_json:
        echo_json(doc)
    else:
        typer.echo(str(summary))
    if out is not None:
        typer.echo(f"results written to {out}", err=as_json)


# --------------------------------------------------------------------------- list / show
@app.command("list")
@command
def list_cmd(what: str = typer.Argument(..., help="platforms | scenarios | workloads")) -> None:
    """List the shipped platforms, scenarios or workloads."""
    from whatif.scenarios.commands import catalog

    for name, description in catalog.listing(what):
        typer.echo(f"{name:<28} {description}")


@app.command("show")
@command
def show_cmd(what: str = typer.Argument(..., help="platform | workload"),
             name: str = typer.Argument(..., help="platform name (mpc7447a) or TOML path; workload name "
                                                  "(cint2006/429.mcf) or path.toml[:name]"),
             as_json: bool = typer.Option(False, "--json", help="print the resolved description as JSON"),
             set_: Optional[List[str]] = typer.Option(None, "--set", help="platform: override KEY=VALUE "
                                                                          "(repeatable)"),
             sources: bool = typer.Option(False, "--sources", help="platform: each value's source (or estimate "
                                                                   "mark)"),
             isa: str = typer.Option("x86_64", "--isa", help="workload: the ISA its program is synthesised for "
                                                             "(x86_64, powerpc32, z/Architecture)")) -> None:
    """Show a platform description (resolved, with overrides applied), or a workload description beside what
    its synthesised program realises, phase by phase."""
    from whatif.scenarios.commands import catalog

    doc, text = catalog.show(what, name, set_ or [], sources=sources, isa=isa)
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
                 seed: int = typer.Option(0, "--seed", min=0, help="physical page placement and random "
                                                                   "replacement (memory.page_mapping = scattered)"),
                 as_json: bool = typer.Option(False, "--json", help="print one JSON document")) -> None:
    """Run an address trace through a platform's caches and TLBs."""
    from whatif.scenarios.commands.cachesim import cachesim_command

    doc = cachesim_command(trace, platform, set_ or [], fmt, progress=not as_json, seed=seed)
    if as_json:
        echo_json(doc)
    else:
        from whatif.scenarios.render.cachesim import print_summary   # (pandas: not for --json)

        print_summary(doc)


# --------------------------------------------------------------------------- trace
trace_app = typer.Typer(no_args_is_help=True, help="Make, convert and describe address traces.")
app.add_typer(trace_app, name="trace")


@trace_app.command("synth")
@command
def trace_synth_cmd(out: Path = typer.Argument(..., help="output: .wtr (binary) or any other name (lackey text)"),
                    accesses: int = typer.Option(1_000_000, "--accesses", help="data accesses"),
                    seed: int = typer.Option(0, "--seed", min=0),
                    instructions_per_access: float = typer.Option(1.0, "--instructions-per-access",
                                                                  help="instruction fetches per data access"),
                    as_json: bool = typer.Option(False, "--json")) -> None:
    """Write the standard mixed synthetic trace."""
    from whatif.scenarios.commands import trace as trace_command

    doc = trace_command.synth(out, accesses, seed, instructions_per_access, progress=not as_json)
    echo_json(doc) if as_json else typer.echo(f"wrote {doc['records']:,} records to {out}")


@trace_app.command("convert")
@command
def trace_convert_cmd(src: Path = typer.Argument(..., help="input trace"),
                      out: Path = typer.Argument(..., help="output: .wtr (binary) or lackey text"),
                      fmt: str = typer.Option("auto", "--format", help="input format: lackey | whatif | auto"),
                      as_json: bool = typer.Option(False, "--json")) -> None:
    """Convert between valgrind lackey text and whatif's binary trace format."""
    from whatif.scenarios.commands import trace as trace_command

    doc = trace_command.convert(src, out, fmt, progress=not as_json)
    echo_json(doc) if as_json else typer.echo(f"wrote {doc['records']:,} records to {out}")


@trace_app.command("info")
@command
def trace_info_cmd(src: Path = typer.Argument(..., help="trace file"),
                   fmt: str = typer.Option("auto", "--format", help="lackey | whatif | auto"),
                   as_json: bool = typer.Option(False, "--json")) -> None:
    """Count a trace's records by kind and its address range."""
    from whatif.scenarios.commands import trace as trace_command

    doc = trace_command.info(src, fmt, progress=not as_json)
    if as_json:
        echo_json(doc)
    else:
        for key, value in doc.items():
            typer.echo(f"{key:<20} {value:,}" if isinstance(value, int) else f"{key:<20} {value}")


# --------------------------------------------------------------------------- simulate
@app.command("simulate")
@command
def simulate_cmd(platform: str = typer.Option(..., "--platform", "-p", help="platform name or TOML path"),
                 workload: str = typer.Option(..., "--workload", "-w", help="e.g. cint2006/429.mcf (whatif list workloads)"),
                 instructions: int = typer.Option(2_000_000, "--instructions", "-n", help="program instructions to run"),
                 warmup: int = typer.Option(0, "--warmup", help="program instructions run first, uncounted "
                                                                 "(caches, TLBs, predictors warm)"),
                 set_: Optional[List[str]] = typer.Option(None, "--set", help="platform override KEY=VALUE (repeatable)"),
                 sampling: Optional[str] = typer.Option(None, "--sampling",
                                                        help="SD,SP,SI: sampling delay, period, interval in the "
                                                             "seed's seconds (seed 002 used 10,5,3)"),
                 sample: Optional[str] = typer.Option(None, "--sample",
                                                      help="smarts or smarts:U,W,N[,S[,B]]: SMARTS sampled "
                                                           "simulation, N units of U instructions timed in detail "
                                                           "after W of detailed warm-up, caches and predictors "
                                                           "functionally warmed in between (default 1000,2000 and N "
                                                           "by the run's length; N = auto: SMARTS's second run "
                                                           "with the n the first's V asks for, if it asks more); "
                                                           "CPI and event rates with 99.7 % "
                                                           "confidence intervals; S segments (default 1), each after "
                                                           "its own fast-forward and warming, for --workers; B: "
                                                           "bounded warming, at most B instructions functionally "
                                                           "warmed before each unit, the rest of each gap through "
                                                           "the caches below the L1s and the TLBs only (faster, "
                                                           "approximate: see the README)"),
                 time_scale: float = typer.Option(1e-4, "--time-scale",
                                                  help="simulated seconds per second of the real run: scales --sampling "
                                                       "(10 s -> 1 ms) and spreads the timer's work"),
                 seed: int = typer.Option(0, "--seed", min=0),
                 pmu: str = typer.Option("ideal", "--pmu", help="ideal (one run counts all events) | physical "
                                                                "(several runs within the physical counters)"),
                 workers: int = typer.Option(1, "--workers", min=1,
                                             help="threads for the S segments of a sampled run (--sample "
                                                  "smarts:U,W,N,S): side by side, same estimates; with "
                                                  "--live-points replaying, processes for its units"),
                 live_points: Optional[Path] = typer.Option(None, "--live-points",
                                                            help="directory of live-point libraries: a sampled run "
                                                                 "is replayed from the warmed state stored for its "
                                                                 "configuration (all but the core), with no warming; "
                                                                 "the first run stores it"),
                 out: Optional[Path] = typer.Option(None, "--out", "-o", help="write tables, plots, report.html here"),
                 csv_tables: bool = CSV,
                 as_json: bool = typer.Option(False, "--json", help="print one JSON document")) -> None:
    """Run a workload on a platform's core and memory models: event totals, CPI stack, time series."""
    from whatif.scenarios.commands.simulate import simulate_command
    from whatif.scenarios.render.simulate import print_summary

    doc = simulate_command(platform, workload, instructions, set_ or [], sampling, time_scale, seed,
                                          pmu, out, progress=not as_json, warmup=warmup, sample=sample,
                                          workers=workers, live_points=live_points)
    if as_json:
        echo_json(doc)
    else:
        print_summary(doc)
    if out is not None:
        typer.echo(f"results written to {out}", err=as_json)


@app.command("live-points")
@command
def live_points_cmd(store: Path = typer.Argument(..., help="a store of live-point libraries (simulate --live-points "
                                                           "DIR, or a scenario's simulate.live_points)"),
                    remove: Optional[List[str]] = typer.Option(None, "--remove", help="remove this library "
                                                               "(its name as listed; repeatable)"),
                    prune: bool = typer.Option(False, "--prune", help="remove what captures that no longer run "
                                                                      "(killed) left staged"),
                    verify: bool = typer.Option(False, "--verify", help="read every library and check each record "
                                                                        "against its checksum, as a replay would"),
                    remove_stale: bool = typer.Option(False, "--remove-stale", help="remove every library captured "
                                                      "by other code than this whatif's (listed stale)"),
                    as_json: bool = typer.Option(False, "--json", help="print one JSON document")) -> None:
    """List a store's live-point libraries: workload, platform, sample, units, size, what captured them."""
    from whatif.scenarios.commands import live_points as live_points_command

    doc = live_points_command.live_points_command(store, remove or [], prune, verify, progress=not as_json,
                                                      remove_stale=remove_stale)
    if as_json:
        echo_json(doc)
    else:
        live_points_command.print_listing(doc)
    damage = live_points_command.damage(doc)
    if damage is not None:
        fail(damage)


# --------------------------------------------------------------------------- profile
@app.command("profile")
@command
def profile_cmd(platform: str = typer.Option(..., "--platform", "-p", help="platform name or TOML path"),
                workload: str = typer.Option(..., "--workload", "-w", help="e.g. websphere/was (whatif list workloads)"),
                instructions: int = typer.Option(2_000_000, "--instructions", "-n",
                                                 help="program instructions profiled (after the warm-up)"),
                warmup: int = typer.Option(0, "--warmup", help="program instructions run first, unprofiled "
                                                               "(the JIT's burn-in: caches, TLBs, predictors warm)"),
                sample_every: int = typer.Option(64, "--sample-every", help="cycles between samples"),
                set_: Optional[List[str]] = typer.Option(None, "--set", help="platform override KEY=VALUE (repeatable)"),
                seed: int = typer.Option(0, "--seed", min=0, help="the program (binary and input)"),
                out: Path = typer.Option(..., "--out", "-o", help="results directory: profile.sqlite, report.html"),
                csv_tables: bool = CSV,
                as_json: bool = typer.Option(False, "--json", help="print results.json")) -> None:
    """Profile a workload instruction by instruction (CPMF-style sampled and event-based counters) into the
    SQLite profile database that `whatif mine` reads (seed 001)."""
    from whatif.scenarios.commands.profile import profile_command
    from whatif.scenarios.render.profile import print_summary

    if instructions < 1 or warmup < 0:
        fail(f"--instructions must be >= 1 and --warmup >= 0, got {instructions} and {warmup}")
    if sample_every < 1:
        fail(f"--sample-every must be a number of cycles >= 1, got {sample_every}")
    doc, methods = profile_command(platform, workload, instructions, warmup, sample_every, set_ or [], seed, out,
                                   progress=not as_json)
    if as_json:
        echo_json(doc)
    else:
        print_summary(doc, methods)
    typer.echo(f"profile written to {out / 'profile.sqlite'}", err=as_json)


# --------------------------------------------------------------------------- hbench
hbench_app = typer.Typer(no_args_is_help=True, help="HBench (seed 003): predictions from system and application vectors.")
app.add_typer(hbench_app, name="hbench")


@hbench_app.command("predict")
@command
def hbench_predict_cmd(system: Path = typer.Option(..., "--system", help="system vectors: CSV (primitive, unit?, "
                                                                         "one column per system) or TOML"),
                       app_: Path = typer.Option(..., "--app", help="application vectors: CSV (primitive, one "
                                                                    "column per application) or TOML"),
                       reference: Optional[str] = typer.Option(None, "--reference", help="the system speeds are "
                                                                                          "normalised to"),
                       what_if: Optional[List[str]] = typer.Option(None, "--what-if", help="PRIM=x0.5: the "
                                                                   "primitive's cost times 0.5 (repeatable)"),
                       count: Optional[List[str]] = typer.Option(None, "--count", help="PRIM=N: the application "
                                                                 "count of the primitive (repeatable)"),
                       out: Optional[Path] = typer.Option(None, "--out", "-o", help="write tables, plot, report.html"),
                       csv_tables: bool = CSV,
                       as_json: bool = typer.Option(False, "--json", help="print one JSON document")) -> None:
    """Predicted time = system vector · application vector, per-primitive breakdown, ranks and normalised
    speeds across systems, and what-ifs (seed 003 ch. 3, Tables 6-2..6-5)."""
    from whatif.scenarios.commands.hbench import predict_command
    from whatif.scenarios.render.vectors import print_predictions

    base, edited, doc = predict_command(system, app_, reference, what_if or [], count or [], out)
    if as_json:
        echo_json(doc)
    else:
        print_predictions(base, edited)
    if out is not None:
        typer.echo(f"results written to {out}", err=as_json)


@hbench_app.command("os-vector")
@command
def hbench_os_vector_cmd(platform: str = typer.Option(..., "--platform", "-p", help="platform name or TOML path"),
                         set_: Optional[List[str]] = typer.Option(None, "--set", help="platform override KEY=VALUE"),
                         primitive: Optional[List[str]] = typer.Option(None, "--primitive", help="measure only these"),
                         seed: int = typer.Option(0, "--seed", min=0, help="physical page placement"),
                         out: Optional[Path] = typer.Option(None, "--out", "-o", help="results directory, with "
                                                            "system_vector.csv for `hbench predict --system`"),
                         csv_tables: bool = CSV,
                         as_json: bool = typer.Option(False, "--json", help="print one JSON document")) -> None:
    """HBench:OS microbenchmarks (lmbench-style loops) on a simulated platform: its system vector."""
    from whatif.scenarios.commands.hbench import os_vector_command

    vector = os_vector_command(platform, set_ or [], primitive or None, seed, out, progress=not as_json)
    if as_json:
        echo_json({"system": vector.system.iloc[0], "vector": vector.to_dict(orient="records")})
    else:
        from whatif.scenarios.render import stdout_console
        from rich.table import Table

        t = Table(title=f"system vector of {vector.system.iloc[0]}")
        for col in ("primitive", "unit", "cost", "iterations"):
            t.add_column(col, justify="left" if col in ("primitive", "unit") else "right")
        for r in vector.itertuples(index=False):
            t.add_row(r.primitive, r.unit, f"{r.cost:.6g}", str(r.iterations))
        stdout_console().print(t)
    if out is not None:
        typer.echo(f"results written to {out}", err=as_json)


# --------------------------------------------------------------------------- run
@app.command("run")
@command
def run_cmd(scenario: Path = typer.Argument(..., help="scenario TOML file"),
            out: Optional[Path] = typer.Option(None, "--out", "-o", help="results directory (default results/<name>)"),
            csv_tables: bool = CSV,
            seed: Optional[int] = typer.Option(None, "--seed", min=0, help="override the scenario's seed"),
            set_: Optional[List[str]] = typer.Option(None, "--set", help="override KEY=VALUE for every variant"),
            cluster: Optional[str] = typer.Option(None, "--cluster", help="Dask scheduler address, e.g. tcp://host:8786"),
            workers: Optional[int] = typer.Option(None, "--workers", min=1, help="local processes for the study's "
                                                  "independent runs (default: the study's own, 1 or 2)"),
            as_json: bool = typer.Option(False, "--json", help="print results.json instead of the headline")) -> None:
    """Run a scenario: the headline table (variants side by side) here, tables, plots and report.html on disk."""
    from whatif.scenarios import runner

    done = runner.run_scenario_file(scenario, out=out, seed=seed, overrides=set_ or [], cluster=cluster,
                                    progress=not as_json, workers=workers)
    if as_json:
        echo_json(done.output.results)
    else:
        table = runner.headline_table(done.output.headline, done.output.headline_absolute)
        if table is not None:
            from whatif.scenarios.render import stdout_console
            from rich.table import Table

            view = Table(title=f"{done.study.scenario.name}: {done.study.name} study")
            for col in table.columns:
                view.add_column(str(col), justify="left" if col == "metric" else "right")
            for row in table.itertuples(index=False):
                view.add_row(*[_fmt(v) for v in row])
            stdout_console().print(view)
    typer.echo(f"report: {done.out_dir / 'report.html'}", err=as_json)


def _fmt(value) -> str:
    if isinstance(value, str):
        return value
    if value != value:                 # NaN: no baseline to compare against
        return "–"
    if float(value).is_integer() and abs(value) >= 1:
        return f"{value:,.0f}"
    return f"{value:.4g}"


# --------------------------------------------------------------------------- validate
@app.command("validate")
@command
def validate_cmd(quick: bool = typer.Option(False, "--quick", help="smaller problem sizes"),
                 as_json: bool = typer.Option(False, "--json", help="print one JSON document"),
                 only: Optional[List[str]] = typer.Option(None, "--only", help="run only these checks")) -> None:
    """Run the registered ground-truth checks and print expected vs measured."""
    from whatif.scenarios.checks import registry as validation

    known = validation.registered_checks()
    unknown = [name for name in (only or []) if name not in known]
    if unknown:
        fail(f"unknown check {unknown[0]!r}; known checks: {', '.join(sorted(known))}")
    results = validation.run_checks(quick=quick, only=only or None,
                                    progress=None if as_json else (lambda n: typer.echo(f"running {n} ...", err=True)))
    if as_json:
        echo_json({"checks": [r.as_dict() for r in results]})
    else:
        from whatif.scenarios.render import stdout_console
        from rich.table import Table

        table = Table(title="whatif validate")
        for col in ("check", "expected", "measured", "pass"):
            table.add_column(col)
        for r in results:
            table.add_row(r.name, str(r.expected), str(r.measured), "[green]yes[/]" if r.passed else "[red]NO[/]")
        stdout_console().print(table)
    if not all(r.passed for r in results):
        raise typer.Exit(1)


# --------------------------------------------------------------------------- regress (seed 000)
@app.command("regress")
@command
def regress_cmd(data: Path = typer.Argument(..., help="counter-totals table: .csv or .parquet"),
                response: str = typer.Option(..., "--response", "-r", help="response column, e.g. cycles"),
                predictors: Optional[str] = typer.Option(None, "--predictors",
                                                         help="comma-separated predictor columns "
                                                              "(default: every numeric non-identifying column)"),
                order: int = typer.Option(2, "--order", help="highest interaction order: 1, 2 or 3"),
                exclude: Optional[str] = typer.Option(None, "--exclude",
                                                      help="interactions to leave out, e.g. 'l2_imiss*l2_dmiss,a*b'"),
                prune: str = typer.Option("bic", "--prune", help="bic | none"),
                bic: str = typer.Option("seed", "--bic", help="seed (Eq. 5) | conventional (-2 lnL + p ln n)"),
                hierarchy: bool = typer.Option(True, "--hierarchy/--no-hierarchy",
                                               help="keep main effects of kept interactions when pruning"),
                redundancy: Optional[float] = typer.Option(None, "--redundancy",
                                                           help="drop redundant predictors at this Spearman rho^2"),
                keep: Optional[str] = typer.Option(None, "--keep",
                                                   help="comma-separated predictors --redundancy never drops"),
                folds: int = typer.Option(10, "--folds", help="k of k-fold cross-validation"),
                seed: int = typer.Option(0, "--seed", min=0, help="seed of the fold assignment"),
                out: Optional[Path] = typer.Option(None, "--out", "-o", help="write tables, plots, report.html here"),
                csv_tables: bool = CSV,
                as_json: bool = typer.Option(False, "--json", help="print one JSON document")) -> None:
    """Regress a response (e.g. cycles) on counter events and their interactions (seed 000)."""
    from whatif.scenarios.commands import regress as regress_command

    res, doc = regress_command.regress_command(
        data, response, predictors=predictors, exclude=exclude, out=out, progress=not as_json,
        order=order, prune=prune, bic=bic, hierarchy=hierarchy, redundancy_cut=redundancy,
        keep_predictors=regress_command.split_list(keep) or (), folds=folds, seed=seed)
    report_analysis(res.warnings, doc, res.summary(), as_json, out)


# --------------------------------------------------------------------------- similarity (seed 002)
@app.command("similarity")
@command
def similarity_cmd(
        table: Path = typer.Argument(..., help="counter time-series table (CSV or Parquet), or a signatures table "
                                               "with --signatures"),
        signatures: bool = typer.Option(False, "--signatures", help="TABLE holds signatures: application, platform, "
                                                                    "one column per stall (e.g. seed 002 Table 1)"),
        platform: Optional[List[str]] = typer.Option(None, "--platform", "-p", help="analyse only this platform "
                                                                                   "(repeatable)"),
        threshold: float = typer.Option(0.5, "--threshold", "-g", help="g of Algorithm 1, in (0, 2)"),
        reference: Optional[str] = typer.Option(None, "--reference", help="reference application for Algorithm 2 "
                                                                          "and the system evaluation"),
        kmeans: str = typer.Option("3,5", "--kmeans", help="k values for the k-means comparison ('' for none)"),
        method: str = typer.Option("spearman", "--method", help="spearman | kendall"),
        stop_rule: str = typer.Option("graph", "--stop-rule", help="graph (Algorithm 1 as written) | mst "
                                                                   "(single linkage at g)"),
        stalls: Optional[str] = typer.Option(None, "--stalls", help="comma-separated stall columns (default: columns "
                                                                    "whose name contains 'stall')"),
        cycles: Optional[str] = typer.Option(None, "--cycles", help="cycles column (default: cycles or "
                                                                    "CPU_CLK_UNHALTED.REF)"),
        instructions: Optional[str] = typer.Option(None, "--instructions", help="instructions column (default: "
                                                                                "instructions or INST_RETIRED.ANY)"),
        on_constant: str = typer.Option("zero", "--on-constant", help="constant series: zero (r = 0, warn) | error"),
        run_times: Optional[Path] = typer.Option(None, "--run-times", help="run times per application and platform "
                                                                           "(CSV/Parquet) for the system evaluation"),
        matrix: bool = typer.Option(False, "--matrix", help="include the similarity matrix even above 500 "
                                                            "applications"),
        seed: int = typer.Option(0, "--seed", min=0, help="seed of the k-means starts"),
        out: Optional[Path] = typer.Option(None, "--out", "-o", help="write tables, figures and report.html here"),
        csv: bool = typer.Option(False, "--csv", help="also write the tables as CSV"),
        as_json: bool = typer.Option(False, "--json", help="print one JSON document")) -> None:
    """Application similarity (seed 002): signatures, rank similarity, MST clusters, system evaluation."""
    from whatif.scenarios.commands import similarity as similarity_command

    doc, results = similarity_command.run(
        table, signatures=signatures, platforms=platform, threshold=threshold, reference=reference, kmeans=kmeans,
        method=method, stop_rule=stop_rule, stalls=stalls, cycles=cycles, instructions=instructions,
        on_constant=on_constant, run_times=run_times, matrix=matrix, seed=seed, out=out, csv=csv,
        progress=not as_json)
    report_analysis(results.warnings, doc, results.summary(), as_json, out)


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
             csv_tables: bool = CSV,
             as_json: bool = typer.Option(False, "--json", help="print one JSON document")) -> None:
    """Mine an execution flow graph for frequent or costly attribute sequences (FlowGSP)."""
    from whatif.scenarios.commands import mine as mine_command

    results, doc = mine_command.mine_command(profile, gap=gap, window=window, generations=generations,
                                             min_support=min_support, min_diff_support=min_diff_support,
                                             workers=workers, cluster=cluster, top=top, out=out,
                                             progress=not as_json)
    report_analysis([], doc, results.summary(top=top or 25).as_text(), as_json, out)


# --------------------------------------------------------------------------- gc (seed 003, heap simulator)
@app.command("gc")
@command
def gc_cmd(workload: str = typer.Option(..., "--workload", "-w", help="allocation behaviour: suite/name (e.g. "
                                                                       "specjvm98/javac) or FILE.toml:name"),
           heap_mb: Optional[float] = typer.Option(None, "--heap-mb", help="heap size in MB (default: the "
                                                                            "workload's measured heap)"),
           platform: str = typer.Option("mpc7447a", "--platform", "-p", help="platform name or TOML path"),
           set_: Optional[List[str]] = typer.Option(None, "--set", help="platform override KEY=VALUE (repeatable)"),
           collector: str = typer.Option("mark-sweep", "--collector", help="mark-sweep | copying"),
           scale: float = typer.Option(1.0, "--scale", help="shrink allocation volume and heap by this factor "
                                                            "(0, 1]; object sizes are kept"),
           growth: str = typer.Option("fixed", "--growth", help="fixed | expand (mark-sweep)"),
           max_heap_mb: Optional[float] = typer.Option(None, "--max-heap-mb", help="largest heap for --growth expand"),
           seed: int = typer.Option(0, "--seed", min=0),
           out: Optional[Path] = typer.Option(None, "--out", "-o", help="write gc_log, histogram, plots, report.html"),
           csv_tables: bool = CSV,
           as_json: bool = typer.Option(False, "--json", help="print one JSON document")) -> None:
    """Simulate a Java workload's heap: GC log and GCViewer-style summary (pauses, throughput, freed bytes)."""
    from whatif.scenarios.commands import gc as gc_command

    if growth not in ("fixed", "expand"):
        fail(f"--growth must be fixed or expand, got {growth!r}")
    doc, log = gc_command.gc_command(workload, heap_mb, platform_name=platform, collector=collector, scale=scale,
                                     growth=growth, max_heap_mb=max_heap_mb, seed=seed, out=out,
                                     progress=not as_json, overrides=set_ or [])
    if as_json:
        echo_json(doc)
    else:
        gc_command.print_summary(doc, log)
        if out is not None:
            typer.echo(f"results written to {out}")


def main() -> None:
    """The console-script entry point: the command, then the exit without the interpreter's teardown.

    Tearing down numba, LLVM and the modules a command loaded takes 0.1-0.2 s (measured after a
    ``whatif cachesim``), as long as a short trace's whole simulation, for nothing the user sees.  So the
    exit handlers run (pools, forkservers and temporary directories clean up as on any exit), the output
    is flushed, and the process ends with ``os._exit`` and the command's exit status.  (Tests call
    ``app`` in-process: this is only the installed program's ending.)"""
    import atexit
    import os

    code = 0
    try:
        app()
    except SystemExit as exc:              # mapped to a status as the interpreter maps it
        code = 0 if exc.code is None else exc.code
    if not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):      # a closed pipe (``| head``): the interpreter's status 120
            code = code or 120
    os._exit(code)


if __name__ == "__main__":
    main()
