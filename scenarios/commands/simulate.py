"""Glue of ``whatif simulate``: one workload on one platform -> events, CPI stack, time series."""

from __future__ import annotations

import time

from pydantic import ValidationError

from whatif.scenarios.errors import ScenarioError
from whatif.scenarios.kernels import load_kernels
from whatif.scenarios.measure import SimulateSpec
from whatif.scenarios.render.simulate import add_report, simulate_figures, simulate_tables
from whatif.scenarios.results.directory import write_results_dir
from whatif.scenarios.results.livepoint_store import LivePointStore
from whatif.scenarios.results.progress import progress_bar
from whatif.scenarios.results.writer import check_results_target
from whatif.simulator.collect import check_sample, pmu_run_count, simulate_one
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.platform import load_platform
from whatif.simulator.sampling import Sampling
from whatif.simulator.schema import format_validation_error
from whatif.simulator.workload import load_workload


def simulate_command(platform_name: str, workload: str, instructions: int, overrides: list[str],
                     sampling: str | None, time_scale: float, seed: int, pmu: str, out, progress: bool,
                     warmup: int = 0, sample: str | None = None, workers: int = 1,
                     live_points: str | None = None) -> dict:
    """``seed`` is the program seed (binary and input); the replicate seed is drawn from it.  ``sample``:
    ``smarts[:U,W,N[,S[,B]]]``, a SMARTS sampled run (the document's ``sampled`` entry carries the estimates'
    confidence intervals); ``workers``: threads that run its S segments side by side (or, replayed from
    live-points, processes that run its units); ``live_points``: a directory of live-point libraries, the sample
    replayed from this configuration's when there is one, else run capturing it."""
    started = time.perf_counter()
    if out is not None:
        check_results_target(out)
    store = None
    if live_points is not None:
        if sample is None:
            raise ScenarioError("--live-points stores the warmed state of a sampled run's units: give --sample")
        store = LivePointStore(live_points)
    platform = load_platform(platform_name, overrides)
    try:
        spec = SimulateSpec(instructions=instructions, warmup=warmup, time_scale=time_scale, pmu=pmu,
                            sampling=list(Sampling.parse(sampling).__dict__.values()) if sampling else None,
                            sample=sample)
    except ValidationError as exc:           # named as the option the user typed: --time-scale, --pmu, ...
        loc = exc.errors()[0].get("loc") or ("simulate",)
        option = "--" + str(loc[0]).replace("_", "-")
        raise ScenarioError(format_validation_error(exc, option).replace(f"{option}: {loc[0]}", option, 1)) from None
    load_workload(workload)                 # an unknown name fails now, listing the known ones
    collect = spec.collect_spec("--sample")
    check_sample(collect, "--sample")
    if workers > 1 and store is None and (collect.sample is None or collect.sample.segments == 1):
        raise ScenarioError(f"--workers {workers} runs the segments of a sampled run side by side: give them with "
                            f"--sample smarts:U,W,N,S (S >= 2 segments), or replay its units with --live-points")
    load_kernels(progress, [platform], sampled=collect.sample is not None, workload=workload, seed=seed)
    total = (collect.warmup + collect.instructions) * pmu_run_count(platform, collect.pmu)
    with progress_bar(total, f"simulate {workload} on {platform.name}", enabled=progress) as advance:
        res = simulate_one(platform, workload, collect, program_seed=seed, replicate_seed=seed, on_retired=advance,
                           workers=workers, live_points=store)
    if collect.sampling is not None and (res["timeseries"] is None or len(res["timeseries"]) == 0):
        raise SimulatorInputError(f"the run of {instructions:,} instructions ended before the first sampling "
                                  f"interval closed; give more instructions or a shorter --sampling")
    doc = {"platform": platform.name, "workload": workload, "instructions": res["counters"]["instructions"],
           "totals": res["totals"], "cpi": res["cpi"], "cpi_stack": res["cpi_stack"],
           "sim_instructions_per_s": res["sim_instructions_per_s"], "seconds": res["seconds"],
           "pmu_runs": res["pmu_runs"]}
    if "sampled" in res:
        doc["instructions"] = collect.instructions         # program instructions (the units' estimates cover them)
        doc["sampled"] = res["sampled"]
    if out is not None:
        run = {"platform": platform.name, "workload": workload, "variant": "as-shipped", **res}
        tables, figures = simulate_tables([run]), simulate_figures([run])
        write_results_dir(out, title=f"{workload} on {platform.name}", study="simulate", results=doc,
                          started=started, tables=tables, figures=figures,
                          report=lambda rep: add_report(rep, tables, figures), seed=seed,
                          parameters={"workload": workload, "simulate": spec.model_dump()},
                          platforms={platform.name: platform.model_dump()},
                          rates={"sim_instructions_per_s": res["sim_instructions_per_s"]})
    return doc
