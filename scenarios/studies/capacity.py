"""Study kind ``capacity``: capacity planning on the simulated web server.

For each run (platform under a variant) and each what-if of ``[[capacity.what_if]]`` (another platform,
platform overrides such as a larger L2, a primitive made k times cheaper, another request mix -- FastCGI
instead of CGI), the server (:mod:`simulator.os.webserver`) is driven at every offered load of
``clients``: throughput, p50/p95/p99 latency and CPU utilisation per load.  From the curves: the
saturation throughput, the largest load whose p95 meets ``p95_objective_s``, and,
at ``objective_clients``, the fewest of ``worker_counts`` workers that meet it.

The planner's cross-check (operational laws, MVA): the CPU demand per request D and the rest of a
request's cycle Z (its bytes on the client's line) come from the lowest load's run -- D as each request
type's mean CPU time weighted by the mix (a multi-class demand, free of the window's draw of types); the
throughput bound is 1/D, the knee N* = (D + Z)/D, and exact MVA for one queueing centre (the CPU, D) and
one delay centre (Z) gives the throughput expected at every load.  The curves' ``demand_us`` is the
operational D = B/C of each load's window (CPU busy time over requests served): where it moves with the
load, the requests' interference in the caches did.  Each load's throughput against the bound is split
into exact factors (:func:`bound_gap`): the CPU's idle share, the window's draw of files and of request
types (its requests priced at light-load costs), the caches' interference (the same requests' CPU time
under the load against that price), and CPU time at the window's edges -- a saturated window short of
1/D says which: the sample, or the load.  The interference is also measured without a fit, on the light
window's requests that recur in a loaded one (the same files: common random numbers), with its interval.

``results.json``::

    {"runs": {label: {"curve": [{clients, throughput, latency_p50, latency_p95, latency_p99,
                                 cpu_utilisation, demand_us, think_s, mva_throughput, bound_throughput,
                                 demand_requests_us, demand_light_priced_us, share_<type>, vs_bound_pct,
                                 gap_utilisation_pct, gap_files_pct, gap_types_pct, gap_interference_pct,
                                 gap_edges_pct, interference_paired_pct, interference_ci95_low_pct,
                                 interference_ci95_high_pct, interference_pairs}],
                      "saturation_throughput", "bound_throughput",
                      "saturated_loads", "peak_throughput", "saturation_vs_bound_pct", "demand_us",
                      "demand_at_saturation_us", "saturation_gap": [{clients, vs_bound_pct, gap_*}],
                      "think_s", "knee_clients", "max_clients_within_objective",
                      "workers_needed", "sizing": [{workers, latency_p95}], "what_if"}},
     "what_if": [{"run", "what_if", "saturation_throughput", "peak_throughput", "bound_throughput",
                  "capacity_change_pct", "demand_us", "max_clients_within_objective",
                  "capacity_change_paired_pct", "ci95_low_pct", "ci95_high_pct", "paired_requests"}],
     "objective_s": x, "objective_clients": n}

The saturation throughput is the mean throughput of the loads that keep the CPU busy (utilisation >=
0.95), None where no load of the sweep does; a what-if's capacity change compares saturation
throughputs, or the bounds 1/D where a run did not saturate.  Every run serves each client the same files
(common random numbers), so the change is also measured on the requests a what-if and its baseline both
served at their common saturated loads, with a 95 % interval (``capacity_change_paired_pct``): each run's
own throughput carries a sampling error of a few per cent, which the pairing removes.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Annotated

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, model_validator

from whatif.scenarios.executor import piece_rates
from whatif.scenarios.measure import load_run_kernels
from whatif.scenarios.registry import StudyKind, StudyOutput, register_study
from whatif.scenarios.render.capacity import add_report, curve_figure
from whatif.scenarios.results.progress import progress_bar
from whatif.scenarios.results.report import figure_png
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.isa import isa_for
from whatif.simulator.os.kernel import Kernel
from whatif.simulator.os.primitives import OsCode, scaled_primitives
from whatif.simulator.os.webserver import (MAX_CLIENTS, MAX_REQUESTS, MAX_WORKERS, SATURATED, Mix, load_webserver,
                                           paired_speed, run_server, with_line_speed)
from whatif.simulator.platform import load_platform

# the factors of a window's throughput against the light-load bound (:func:`bound_gap`)
GAP_COLUMNS = ("vs_bound_pct", "gap_utilisation_pct", "gap_files_pct", "gap_types_pct", "gap_interference_pct",
               "gap_edges_pct")
# ... and the interference measured on the requests the light window and a loaded one share
PAIRED_COLUMNS = ("interference_paired_pct", "interference_ci95_low_pct", "interference_ci95_high_pct",
                  "interference_pairs")
# ... and a what-if's capacity change measured on the requests it and the baseline both served
CHANGE_COLUMNS = ("capacity_change_paired_pct", "ci95_low_pct", "ci95_high_pct", "paired_requests")


def unpaired(columns: tuple[str, ...]) -> dict:
    """A paired measure's columns where nothing is paired: no change, no interval, no requests."""
    return {**dict.fromkeys(columns[:3]), columns[3]: 0}


NO_PAIRS = unpaired(PAIRED_COLUMNS)          # the light window itself, or none in common


class WhatIf(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    platform: str | None = None                      # another platform
    set: dict[str, object] = {}                      # platform overrides
    primitive_scale: dict[str, float] = {}           # primitive -> k
    mix: dict[str, float] | None = None              # another request mix


class CapacitySpec(BaseModel):
    """The ``[capacity]`` table."""
    model_config = ConfigDict(extra="forbid")
    clients: list[Annotated[int, Field(gt=0, le=MAX_CLIENTS)]] = Field(min_length=2)
    workers: Annotated[int, Field(gt=0, le=MAX_WORKERS)] | None = None     # default: the largest load
    mix: dict[str, float] = {"static": 1.0}
    line_kbit_s: tuple[float, float] | None = None
    requests: int = Field(default=2000, gt=0, le=MAX_REQUESTS // 2)
    warmup_requests: int | None = Field(default=None, ge=0, le=MAX_REQUESTS // 2)   # default: 2 x clients
    p95_objective_s: float = Field(gt=0)
    objective_clients: Annotated[int, Field(gt=0, le=MAX_CLIENTS)] | None = None
    worker_counts: list[Annotated[int, Field(gt=0, le=MAX_WORKERS)]] = []
    what_if: list[WhatIf] = []

    @model_validator(mode="after")
    def _check(self) -> "CapacitySpec":
        if sorted(set(self.clients)) != list(self.clients):
            raise ValueError(f"clients must increase, got {self.clients}")
        if self.worker_counts and self.objective_clients is None:
            raise ValueError("worker_counts needs objective_clients (the load to size the pool for)")
        names = [w.name for w in self.what_if]
        if len(set(names)) != len(names):
            raise ValueError(f"what_if names must differ, got {names}")
        return self


def capacity_task(item: dict, shared: dict, progress=None) -> dict:
    """One server run (module level for pool and Dask workers): the run's figures and the delay a request
    spends away from the CPU and the listen queue (its bytes on the lines: the MVA's delay centre)."""
    started = time.perf_counter()
    platform = load_platform(item["platform"], item["overrides"])
    kernel = None
    if item["scale"]:
        kernel = Kernel(platform, seed=item["seed"],
                        code=OsCode(isa_for(platform.isa), scaled_primitives(item["scale"])))
    run = run_server(platform, item["mix"], item["clients"], shared["requests"],
                     warmup_requests=item["warmup"], workers=item["workers"], seed=item["seed"],
                     spec=with_line_speed(load_webserver(), shared["line"]), kernel=kernel)
    if progress is not None:
        progress(1)
    r = run.requests
    return {"summary": run.summary, "think_s": float(((r.start - r.connected) + (r.end - r.served)).mean()),
            "requests": r[["client", "seq", "type", "bytes", "new_connection", "cpu_seconds"]],
            "host_seconds": time.perf_counter() - started}


def light_costs(light: pd.DataFrame) -> dict[str, np.ndarray]:
    """Per request type, what a request costs without load: least squares of its CPU seconds on
    (1, new connection, bytes) over the light-load window's requests (rows ``type``, ``new_connection``,
    ``bytes``, ``cpu_seconds``)."""
    out = {}
    for rtype, g in light.groupby("type"):
        x = np.column_stack([np.ones(len(g)), g.new_connection.to_numpy(float), g.bytes.to_numpy(float)])
        out[rtype] = np.linalg.lstsq(x, g.cpu_seconds.to_numpy(float), rcond=None)[0]
    return out


def bound_gap(summary: dict, requests: pd.DataFrame, mix: dict[str, float], light_demand_s: float,
              costs: dict[str, np.ndarray]) -> dict:
    """A window's throughput X against the planner's bound 1/D0 (D0: the light-load window's per-type mean
    CPU times weighted by the mix), split into exact factors,
    X D0 = U (D0 / D_mix) (D_mix / D_light) (D_light / D_req) (D_req / D_w):

    * ``gap_utilisation_pct``: the CPU's idle share, U - 1 (X = U / D_w, the utilisation law);
    * ``gap_files_pct``: D0 / D_mix - 1, where D_mix prices this window's requests at light-load costs
      (``costs``: :func:`light_costs`) and weights each type's mean by the mix -- the window's draw of
      files (sizes, new connections) within each type, against the light window's;
    * ``gap_types_pct``: D_mix / D_light - 1, where D_light is the mean light-load price of the window's
      requests -- the window drew more (negative) or fewer of the expensive types than the mix;
    * ``gap_interference_pct``: D_light / D_req - 1, where D_req is the mean CPU time the window's requests
      took -- the same requests cost more (negative) or less under this load: the caches' interference;
    * ``gap_edges_pct``: D_req / D_w - 1, where D_w = B/C is the CPU busy time over requests served -- CPU
      time in the window that its requests' own counts do not carry (work in flight at its edges).

    Each is a percentage; ``vs_bound_pct`` = 100 (X D0 - 1) is their product's.  The files, types and
    interference factors need a light-load cost for every type the window or the mix holds, and every
    type of the mix in the window; otherwise they are None."""
    d_w, d_req = summary["service_demand_s"], float(requests.cpu_seconds.mean())
    mix = {t: v for t, v in mix.items() if v}
    served = requests.type.value_counts()
    out = {"demand_requests_us": 1e6 * d_req, "demand_light_priced_us": None,
           **{f"share_{t}": served.get(t, 0) / len(requests) for t in sorted(set(mix) | set(served.index))},
           "vs_bound_pct": 100 * (summary["throughput"] * light_demand_s - 1),
           "gap_utilisation_pct": 100 * (summary["cpu_utilisation"] - 1),
           "gap_files_pct": None, "gap_types_pct": None, "gap_interference_pct": None,
           "gap_edges_pct": 100 * (d_req / d_w - 1)}
    if not (set(served.index) | set(mix)) <= set(costs) or not set(mix) <= set(served.index):
        return out
    coef = np.stack([costs[t] for t in requests.type])
    priced = pd.Series(coef[:, 0] + coef[:, 1] * requests.new_connection.to_numpy(float)
                       + coef[:, 2] * requests.bytes.to_numpy(float), index=requests.index)
    d_light = float(priced.mean())
    d_mix = sum(v * float(priced[requests.type == t].mean()) for t, v in mix.items())
    return {**out, "demand_light_priced_us": 1e6 * d_light, "gap_files_pct": 100 * (light_demand_s / d_mix - 1),
            "gap_types_pct": 100 * (d_mix / d_light - 1), "gap_interference_pct": 100 * (d_light / d_req - 1)}


def paired_pct(before: pd.DataFrame, after: pd.DataFrame, columns: tuple[str, ...]) -> dict:
    """``columns`` (change, 95 % interval low and high, all in percent; the requests paired) of
    :func:`paired_speed` of the requests ``before`` and ``after`` both served: positive where ``after``
    took less CPU.  The change None and no requests where they share fewer than two."""
    try:
        pr = paired_speed(before, after)
    except SimulatorInputError:
        return unpaired(columns)
    return dict(zip(columns, (100 * (pr["ratio"] - 1), 100 * (pr["ci_low"] - 1), 100 * (pr["ci_high"] - 1),
                              pr["shared_requests"])))


def paired_interference(light: pd.DataFrame, requests: pd.DataFrame) -> dict:
    """The interference measured without a fit: the light-load window's requests that recur in this window
    (the same client and request number: the same file, with common random numbers), their mean CPU time
    at light load over theirs under this load (positive: cheaper under the load), with its 95 % interval;
    :data:`NO_PAIRS` where the windows share fewer than two requests."""
    return paired_pct(light, requests, PAIRED_COLUMNS)


def mva(demand: float, think: float, n_max: int) -> np.ndarray:
    """Exact MVA, one queueing centre (demand D) and one delay centre (Z): throughput for 1..n_max."""
    q, out = 0.0, np.zeros(n_max)
    for n in range(1, n_max + 1):
        r = demand * (1 + q)
        x = n / (r + think)
        q = x * r
        out[n - 1] = x
    return out


@register_study
class CapacityStudy(StudyKind):
    name = "capacity"
    sections = {"capacity": CapacitySpec}
    required_sections = ("capacity",)

    def check(self) -> None:
        spec = self.spec["capacity"]
        server = load_webserver()
        try:
            Mix(dict(spec.mix)).check(server, "capacity.mix")
            for w in spec.what_if:
                if w.mix is not None:
                    Mix(dict(w.mix)).check(server, f"capacity.what_if.{w.name}.mix")
                if w.primitive_scale:
                    scaled_primitives(w.primitive_scale)
                load_platform(w.platform or self.scenario.platforms[0],
                              tuple((k.removeprefix("platform."), v) for k, v in w.set.items()))
        except SimulatorInputError as exc:
            raise self.fail("capacity", str(exc)) from None

    def run(self, ctx) -> StudyOutput:
        spec = self.spec["capacity"]
        workers = spec.workers or max(spec.clients)
        cases = []                       # (label, what-if name or None, platform, overrides, scale, mix)
        for run in ctx.runs:
            cases.append((run.id, None, run.platform, list(run.overrides), {}, dict(spec.mix), run.seed))
            for w in spec.what_if:
                overrides = list(run.overrides) + [(k.removeprefix("platform."), v) for k, v in w.set.items()]
                cases.append((f"{run.id} / {w.name}", w.name, w.platform or run.platform,
                              overrides if w.platform is None else [(k.removeprefix("platform."), v)
                                                                    for k, v in w.set.items()],
                              dict(w.primitive_scale), dict(w.mix or spec.mix), run.seed))
        items = []
        for label, what, platform, overrides, scale, mix, seed in cases:
            for n in spec.clients:
                items.append({"label": label, "platform": platform, "overrides": overrides, "scale": scale,
                              "mix": mix, "clients": n, "workers": workers, "seed": seed, "sizing": False,
                              "warmup": spec.warmup_requests if spec.warmup_requests is not None else 2 * n})
            if what is None and spec.worker_counts:
                for wk in spec.worker_counts:
                    n = spec.objective_clients
                    items.append({"label": label, "platform": platform, "overrides": overrides, "scale": scale,
                                  "mix": mix, "clients": n, "workers": wk, "seed": seed, "sizing": True,
                                  "warmup": spec.warmup_requests if spec.warmup_requests is not None else 2 * n})
        shared = {"requests": spec.requests, "line": spec.line_kbit_s}
        # a sizing run at a pool size the curve already ran (objective_clients among clients, a worker count
        # equal to the curve's) is the same simulation: run it once
        key = [json.dumps({k: v for k, v in i.items() if k != "sizing"}, sort_keys=True) for i in items]
        unique = list(dict.fromkeys(key))
        todo = [items[key.index(k)] for k in unique]
        load_run_kernels(ctx, configs=[(platform, overrides) for _, _, platform, overrides, *_ in cases])
        started = time.perf_counter()
        with progress_bar(len(unique), "capacity", enabled=ctx.progress) as advance:
            # the most requests first (a run's host time follows its requests), so that no long run is left
            # to run alone at the end
            ran = ctx.executor.map(capacity_task, todo, shared=shared, progress=advance, units=1, workers=2,
                                   cost=lambda i: i["warmup"] + spec.requests)
        wall = time.perf_counter() - started
        outs = [ran[unique.index(k)] for k in key]
        names = [f"{i['label']} {i['clients']} clients{' ' + str(i['workers']) + ' workers' if i['sizing'] else ''}"
                 for i in todo]
        return replace(self._analyse(spec, cases, items, outs), rates=piece_rates(names, ran, wall))

    @staticmethod
    def _paired_change(items, outs, base_label: str, label: str, r: dict, base: dict) -> dict:
        """The capacity change measured on the requests the what-if and the baseline both served at the loads
        where both saturate (the same files: common random numbers): at saturation a throughput is 1 / the
        CPU seconds per request, so the change is the baseline's mean over the what-if's, with its 95 %
        interval (:func:`paired_speed`).  None where no load saturates both, or for the baseline itself."""
        loads = sorted(set(r["saturated_loads"]) & set(base["saturated_loads"]))
        if label == base_label or not loads:
            return unpaired(CHANGE_COLUMNS)

        def pooled(of: str) -> pd.DataFrame:        # a request: its load, client and number
            return pd.concat([o["requests"].assign(client=o["requests"].client + i["clients"] * MAX_CLIENTS)
                              for i, o in zip(items, outs)
                              if i["label"] == of and not i["sizing"] and i["clients"] in loads])

        return paired_pct(pooled(base_label), pooled(label), CHANGE_COLUMNS)

    def _analyse(self, spec: CapacitySpec, cases, items, outs) -> StudyOutput:
        runs, curves = {}, []
        for label, what, *_ in cases:
            mine = [(i, o) for i, o in zip(items, outs) if i["label"] == label and not i["sizing"]]
            curve = pd.DataFrame([{"clients": i["clients"], **{k: o["summary"][k] for k in (
                "throughput", "latency_p50", "latency_p95", "latency_p99", "cpu_utilisation")},
                "demand_us": 1e6 * o["summary"]["service_demand_s"], "think_s": o["think_s"]} for i, o in mine])
            # the planner measures D and Z at light load and predicts the rest (operational laws, MVA); D is
            # the request types' demands weighted by the mix (multi-class), not the window's draw of types
            light, mix = mine[0][1], {t: v for t, v in mine[0][0]["mix"].items() if v}
            type_demand = light["requests"].groupby("type").cpu_seconds.mean()
            demand = (sum(v * type_demand[t] for t, v in mix.items())
                      if set(mix) <= set(type_demand.index) else light["summary"]["service_demand_s"])
            think = curve.think_s.iloc[0]
            model = mva(demand, think, max(spec.clients))
            curve["mva_throughput"] = [model[n - 1] for n in curve.clients]
            costs = light_costs(light["requests"])
            gaps = pd.DataFrame([{**bound_gap(o["summary"], o["requests"], i["mix"], demand, costs),
                                  **(paired_interference(light["requests"], o["requests"]) if k else NO_PAIRS)}
                                 for k, (i, o) in enumerate(mine)])
            curve = pd.concat([curve, gaps], axis=1)
            curve["bound_throughput"] = np.minimum(curve.clients / (demand + think), 1 / demand)
            within = curve[curve.latency_p95 <= spec.p95_objective_s].clients
            sizing = [(i["workers"], o["summary"]["latency_p95"]) for i, o in zip(items, outs)
                      if i["label"] == label and i["sizing"]]
            enough = [w for w, p95 in sorted(sizing) if p95 <= spec.p95_objective_s]
            plateau = curve[curve.cpu_utilisation >= SATURATED]
            saturation = float(plateau.throughput.mean()) if len(plateau) else None
            runs[label] = {"curve": curve.to_dict(orient="records"), "what_if": what,
                           "saturation_throughput": saturation, "saturated_loads": plateau.clients.tolist(),
                           "peak_throughput": float(curve.throughput.max()),
                           "bound_throughput": 1 / demand,
                           "saturation_vs_bound_pct": 100 * (saturation * demand - 1) if saturation else None,
                           "demand_us": 1e6 * demand,
                           "demand_at_saturation_us": float(plateau.demand_us.mean()) if len(plateau) else None,
                           "saturation_gap": plateau[["clients", *GAP_COLUMNS, *PAIRED_COLUMNS]].to_dict(
                               orient="records"),
                           "think_s": think, "knee_clients": (demand + think) / demand,
                           "max_clients_within_objective": int(within.max()) if len(within) else None,
                           "workers_needed": enough[0] if enough else None,
                           "sizing": [{"workers": w, "latency_p95": p} for w, p in sizing]}
            curves.append(curve.assign(run=label))
        base_of = {label: label.split(" / ")[0] for label, *_ in cases}
        what_rows = []
        for label, what, *_ in cases:
            base, r = runs[base_of[label]], runs[label]
            capacity = r["saturation_throughput"] or r["bound_throughput"]
            base_capacity = base["saturation_throughput"] or base["bound_throughput"]
            row = {"run": label, "what_if": what or "(baseline)", "saturation_throughput": r["saturation_throughput"],
                   "peak_throughput": r["peak_throughput"], "bound_throughput": r["bound_throughput"],
                   "capacity_change_pct": 100 * (capacity / base_capacity - 1), "demand_us": r["demand_us"],
                   "max_clients_within_objective": r["max_clients_within_objective"]}
            what_rows.append({**row, **self._paired_change(items, outs, base_of[label], label, r, base)})
        what_table = pd.DataFrame(what_rows)
        curves_df = pd.concat(curves, ignore_index=True)
        fig = figure_png(curve_figure(curves_df, spec.p95_objective_s))
        results = {"runs": runs, "what_if": what_rows, "objective_s": spec.p95_objective_s,
                   "objective_clients": spec.objective_clients}
        headline = pd.DataFrame([{"metric": m, "variant": r["run"], "value": v} for r in what_rows for m, v in (
            ("saturation throughput (req/s)", r["saturation_throughput"] or float("nan")),
            ("peak throughput measured (req/s)", r["peak_throughput"]),
            ("bound 1/D at light load (req/s)", r["bound_throughput"]),
            ("saturation vs bound (%)", runs[r["run"]]["saturation_vs_bound_pct"] or float("nan")),
            ("CPU demand per request D (µs)", r["demand_us"]),
            (f"most clients with p95 <= {spec.p95_objective_s:g} s", r["max_clients_within_objective"]))])
        return StudyOutput(results=results, tables={"curves": curves_df, "what_if": what_table},
                           figures={"curves": (fig, "Throughput and latency against offered load")},
                           headline=headline, headline_absolute=("saturation vs bound (%)",),
                           parameters={"capacity": spec.model_dump()},
                           report=lambda rep: add_report(rep, results, curves_df, what_table, fig))
