"""``whatif run SCENARIO.toml``: load and check, plan the runs, run the study, write the results directory.

The results directory holds ``manifest.json`` (scenario, resolved parameters and platforms, seed,
versions, command line, git commit, host seconds, simulated rates), the study's tables as Parquet,
``results.json`` (headline figures; each study kind documents its keys), PNG plots and a self-contained
``report.html``; it is written by :func:`~whatif.scenarios.results.directory.write_results_dir`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from whatif.scenarios.executor import Executor
from whatif.scenarios.registry import StudyContext, StudyKind, StudyOutput, study_kinds
from whatif.scenarios.results.writer import check_results_target
from whatif.scenarios.scenario import Run, expand_runs, load_scenario
from whatif.simulator.platform import load_platform

if TYPE_CHECKING:                    # (pandas loads with the study kinds: a refused scenario fails before it)
    import pandas as pd


@dataclass
class StudyRun:
    """What ``whatif run`` produced: where it wrote, the study's output, and the planned runs."""
    out_dir: Path
    output: StudyOutput
    runs: list[Run]
    study: StudyKind


def load_study(path: str | Path, seed: int | None = None, overrides: list[str] = ()) -> tuple[StudyKind, list[Run]]:
    """Load the scenario, validate its sections and plan its runs: everything that can fail on the input
    fails here, before any simulation."""
    scenario, path = load_scenario(path, seed=seed)
    study = study_kinds()[scenario.study](scenario, str(path), path.parent)
    runs = study.plan(expand_runs(scenario, str(path), list(overrides)))
    return study, runs


def run_scenario_file(path: str | Path, out: str | Path | None = None, seed: int | None = None,
                      overrides: list[str] = (), cluster: str | None = None, progress: bool = True,
                      workers: int | None = None) -> StudyRun:
    started = time.perf_counter()
    study, runs = load_study(path, seed, overrides)
    scenario, source = study.scenario, study.source
    out_dir = Path(out) if out is not None else Path("results") / scenario.name
    check_results_target(out_dir)                       # refused before any work, not after
    with Executor(cluster, workers) as executor:
        ctx = StudyContext(scenario=scenario, runs=runs, source=source, base_dir=study.base_dir,
                           progress=progress, executor=executor)
        output = study.run(ctx)
    platforms = {f"{r.variant}@{r.platform}": load_platform(r.platform, r.overrides).model_dump()
                 for r in runs}
    from whatif.scenarios.results.directory import write_results_dir   # (with pandas: after the checks)

    write_results_dir(out_dir, title=f"{scenario.name}: {scenario.study} study", study=scenario.study,
                      results=output.results, started=started, tables=output.tables, figures=output.figures,
                      report=lambda rep: _report(rep, output), description=scenario.description,
                      seed=scenario.seed, scenario=scenario.model_dump(),
                      parameters={"runs": [{**r.identity(), "overrides": dict(r.overrides), "seed": r.seed,
                                            "program_seed": r.program_seed} for r in runs], **output.parameters},
                      rates=output.rates, platforms=platforms, files=output.files,
                      extra={"scenario_file": source, "cluster": cluster})
    return StudyRun(out_dir=out_dir, output=output, runs=runs, study=study)


def _report(rep, output: StudyOutput) -> None:
    table = headline_table(output.headline, output.headline_absolute)
    if table is not None:
        rep.heading("Headline")
        rep.table(table, caption="Variants side by side (Δ%: against the first variant)")
    if output.report is not None:
        output.report(rep)


PUBLISHED = "seed (published)"      # headline column: the seed's measurement of a figure, where it has one


def headline_table(headline: pd.DataFrame | None, absolute: tuple[str, ...] = ()) -> pd.DataFrame | None:
    """The long headline (metric, variant, value) as one row per metric, one column per variant, and for
    every other variant its change against the first (the baseline) in percent -- but for the
    ``absolute`` metrics (errors, percentages), whose change in percent means nothing.  An optional
    ``published`` column (the seed's real measurement of the same figure) becomes the column
    :data:`PUBLISHED` beside the variants."""
    if headline is None or len(headline) == 0:
        return None
    variants = list(dict.fromkeys(headline["variant"]))
    metrics = list(dict.fromkeys(headline["metric"]))
    wide = headline.pivot_table(index="metric", columns="variant", values="value", aggfunc="mean", sort=False,
                                dropna=False)
    wide = wide.reindex(index=metrics, columns=variants)
    if "published" in headline.columns:
        wide[PUBLISHED] = headline.groupby("metric", sort=False)["published"].first().reindex(metrics)
    base = variants[0]
    for v in variants[1:]:
        ref = wide[base].where(wide[base] != 0)
        wide[f"Δ% {v}"] = 100.0 * (wide[v] - wide[base]) / ref.abs()
    wide.loc[wide.index.isin(absolute), [f"Δ% {v}" for v in variants[1:]]] = float("nan")
    empty = [f"Δ% {v}" for v in variants[1:] if wide[f"Δ% {v}"].isna().all()]     # every metric absolute
    return wide.drop(columns=empty).reset_index()
