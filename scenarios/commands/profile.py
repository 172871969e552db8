"""Glue of ``whatif profile``: a CPMF-style instruction profile of a workload on a platform, written as the
SQLite profile database that ``whatif mine`` reads (seed 001 §4.2), with results.json and report.html."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from whatif.scenarios.kernels import load_kernels
from whatif.scenarios.render.profile import add_report, method_table, sqlite_bytes
from whatif.scenarios.results.directory import write_results_dir
from whatif.scenarios.results.progress import status
from whatif.scenarios.results.writer import check_results_target
from whatif.simulator.platform import load_platform
from whatif.simulator.profiledb import collect_profile
from whatif.simulator.workload import load_workload

PROFILE_FILE = "profile.sqlite"


def profile_command(platform_name: str, workload: str, instructions: int, warmup: int, sample_every: int,
                    overrides: list[str], seed: int, out: Path, progress: bool = True) -> tuple[dict[str, Any], Any]:
    """Profile and write ``out``; returns the results document and the per-method table."""
    started = time.perf_counter()
    check_results_target(out)
    platform = load_platform(platform_name, overrides)
    load_workload(workload)                     # an unknown name fails now, listing the known ones
    load_kernels(progress, [platform], workload=workload, seed=seed, profiler=True)
    with status(f"whatif profile: {workload} on {platform.name}", enabled=progress):
        run = collect_profile(platform, workload, instructions, warmup=warmup, sample_every=sample_every,
                              program_seed=seed, replicate_seed=seed, workload_name=workload)
    summary = run.summary
    methods = method_table(run.tables)
    write_results_dir(out, title=f"Instruction profile: {workload} on {platform.name}", study="profile",
                      results=summary, started=started, tables={"methods": methods},
                      files={PROFILE_FILE: sqlite_bytes(run.tables)},
                      report=lambda rep: add_report(rep, summary, methods), seed=seed,
                      parameters={"workload": workload, "instructions": instructions, "warmup": warmup,
                                  "sample_every": sample_every},
                      platforms={platform.name: platform.model_dump()},
                      rates={"sim_instructions_per_s": summary["sim_instructions_per_s"]})
    return summary, methods
