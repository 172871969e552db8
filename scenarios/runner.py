"""``whatif run SCENARIO.toml``: validate, expand into runs, run the study, write the results directory.

The results directory holds ``manifest.json`` (scenario, resolved parameters,
seed, versions, host seconds, simulated rates), the study's tables as Parquet,
``results.json`` (headline figures; each study kind documents its keys), PNG
plots and a self-contained ``report.html``.  It is written atomically: staged
and renamed into place only when everything succeeded.
"""

from __future__ import annotations

import time
from pathlib import Path

from whatif.scenarios.executor import Executor
from whatif.scenarios.manifest import build_manifest
from whatif.scenarios.output import ResultsWriter
from whatif.scenarios.report import Report
from whatif.scenarios.scenario import expand_runs, load_scenario
from whatif.scenarios.studies import StudyContext, study_kinds


def run_scenario_file(path: str | Path, out: str | Path | None = None, seed: int | None = None,
                      overrides: list[str] = (), cluster: str | None = None, progress: bool = True) -> Path:
    started = time.perf_counter()
    scenario, path = load_scenario(path, seed=seed)
    source = str(path)
    runs = expand_runs(scenario, source, list(overrides))        # every override checked before any work
    study = study_kinds()[scenario.study]()
    out_dir = Path(out) if out is not None else Path("results") / scenario.name
    with Executor(cluster) as executor:
        ctx = StudyContext(scenario=scenario, runs=runs, source=source, base_dir=path.parent,
                           progress=progress, executor=executor)
        output = study.run(ctx)
    host_seconds = time.perf_counter() - started
    manifest = build_manifest(
        scenario=scenario.model_dump(), study=scenario.study, seed=scenario.seed,
        parameters={"runs": [{**r.identity(), "overrides": dict(r.overrides), "seed": r.seed} for r in runs],
                    **output.parameters},
        host_seconds=host_seconds, rates=output.rates,
        extra={"scenario_file": source, "cluster": cluster})
    report = Report(f"{scenario.name}: {scenario.study} study")
    if scenario.description:
        report.paragraph(scenario.description)
    if output.report is not None:
        output.report(report)
    report.provenance(manifest)
    with ResultsWriter(out_dir) as writer:
        writer.results(tables=output.tables, figures=output.figures, results=output.results, manifest=manifest,
                       report=report)
    return out_dir
