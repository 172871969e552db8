"""Study kind ``simulate``: workloads on platforms -> counters, CPI stacks, counter time series.

Counting modes (``pmu``):

* ``ideal`` — one run counts every event of the platform's list (a PMU with enough counters);
* ``physical`` — the platform's physical counters limit the events per run, so the event list is
  collected over several runs of the same program on the same input that differ by the modelled
  run-to-run variation (OS timer phase and work, physical page placement), as perfctr collections on
  the real machine.

Warm-up: ``warmup`` program instructions run first, uncounted (caches, TLBs, predictors warm); the
counters, CPI stack, run time and the sampling clock cover the ``instructions`` after it.

SMARTS: ``sample = "smarts"`` or ``"smarts:U,W,N"`` makes every run a SMARTS sampled run
(:mod:`simulator.smarts`): totals, CPI and CPI stack are the units' estimates, and each run's
``sampled`` entry in ``results.json`` carries their confidence intervals.

Sampling: ``sampling = [s_d, s_p, s_i]`` in the seed's seconds of a real run; ``time_scale`` (default
1e-4) maps them to simulated time (10 s -> 1 ms), keeping s_i/s_p and s_d/s_p.

``results.json``: ``{"runs": [{"platform", "workload", "variant", ..., "cpi", "cpi_stack": {cause: cpi},
"totals": {event: n}, "sim_instructions_per_s", "seconds"}, ...]}``.  Tables: ``totals`` (contract 1,
one row per run, one column per platform event), ``cpi_stacks`` (long form), ``timeseries`` (contract 2)
when sampling is on.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from whatif.scenarios.measure import (SimulateSpec, check_sampling, check_smarts, check_workloads, live_point_store,
                                      simulate_runs)
from whatif.scenarios.registry import StudyKind, StudyOutput, register_study
from whatif.scenarios.render.simulate import add_report, simulate_figures, simulate_tables


@register_study
class SimulateStudy(StudyKind):
    name = "simulate"
    sections = {"simulate": SimulateSpec}
    needs_workloads = True

    def check(self) -> None:
        check_workloads(self.scenario.workloads, self.source)

    def plan(self, runs: list) -> list:
        check_sampling(self.spec["simulate"], runs, self.source)
        check_smarts(self.spec["simulate"], self.source)
        live_point_store(self.spec["simulate"], self.source, self.base_dir)      # (a foreign directory fails now)
        return runs

    def run(self, ctx) -> StudyOutput:
        spec = self.spec["simulate"]
        runs = simulate_runs(ctx, spec)
        tables = simulate_tables(runs)
        figures = simulate_figures(runs)
        results = {"runs": [{k: r[k] for k in r if k not in ("counters", "timeseries")} for r in runs]}
        rates = {"sim_instructions_per_s": float(np.mean([r["sim_instructions_per_s"] for r in runs])) if runs else 0.0}
        for r in runs:          # and every run's own rate (the manifest records each)
            key = f"sim_instructions_per_s[{r['platform']}/{r['workload']}/{r['variant']}/{r['replicate']}]"
            rates[key] = float(r["sim_instructions_per_s"])
        headline = pd.DataFrame([{"metric": f"CPI {r['workload']} @{r['platform']}", "variant": r["variant"],
                                  "value": r["cpi"]} for r in runs])
        return StudyOutput(results=results, tables=tables, figures=figures,
                           report=lambda rep: add_report(rep, tables, figures),
                           rates=rates, parameters={"simulate": spec.model_dump()},
                           headline=headline.groupby(["metric", "variant"], sort=False, as_index=False).mean())
