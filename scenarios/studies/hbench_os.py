"""Study kind ``hbench-os``: HBench:OS (seed 003 ch. 6) against a simulated web server.

Per platform of the scenario (under each variant): the HBench:OS microbenchmarks give the system vector
(:mod:`simulator.os.microbench`); the SimPy web server (:mod:`simulator.os.webserver`) serves static
requests at saturation -- its throughput is the ground truth -- and a truss of it gives the application
vector.  As in Figure 6-1, one application vector (the static truss on the reference platform) is laid
over every system vector (:mod:`models.hbench.vectors`): the predicted speeds, normalised to the
reference, against the simulated throughputs normalised the same way.  Each platform's own truss against
the kernel time its server actually spent per request measures the vector model's context independence
(§3.1.1.2): microbenchmarks run in warm loops, the server's primitives find other requests' code and
data in the caches.  On the ``speedup_platforms`` the server also serves mixes with ``dynamic_shares`` of
CGI and of FastCGI requests: the simulated speedup of switching CGI to FastCGI is the ratio of the
saturated throughputs, the predicted one is r = s1/s2 and r' with each ``user_over_s1`` and with the
server's measured user share (§6.3.3.3, Figure 6-2).  The hybrid methodology (§3.1.3) is reported beside
the vectors: the reference's static server trace replayed on every platform as a cache simulation
(:func:`simulator.os.webserver.cache_simulation`), the lines each truss primitive brought into every
cache depth and its page walks beyond the warm loops' priced at the platform's µs per line of that
depth (:func:`simulator.os.microbench.lines_in_prices`) and added to the prediction.

``results.json``::

    {"platforms": {p: {"predicted_us", "predicted_speed", "simulated_throughput", "simulated_speed",
                       "speed_error_pct", "cpu_utilisation", "cpu_us_per_request", "kernel_us_in_server",
                       "own_truss_predicted_us", "context_error_pct", "user_share", "hybrid_us", "hybrid_speed",
                       "hybrid_speed_error_pct"}},
     "reference": p, "unsaturated": [p...],
     "ranking": {"predicted": [...], "simulated": [...], "pairs_agree": k, "pairs": n, "kendall_tau": t,
                 "pairs_resolved": m, "pairs_agree_resolved": j, "unresolved": [[a, b]...]},
     "ranking_hybrid": {"predicted": [...], "pairs_agree": k, "pairs": n, "kendall_tau": t, ...},
     "speedups": [{"platform", "dynamic", "s1_us", "s2_us", "simulated", "simulated_paired",
                   "simulated_ci95_low", "simulated_ci95_high", "r", "r_error_pct",
                   "r_prime_<u>", "r_prime_<u>_error_pct", "measured_user_over_s1", "r_prime_measured",
                   "r_prime_measured_error_pct"}],
     "type_errors": [{"platform", "request", "predicted_us", "in_server_us", "error_pct"}],
     "context": [{"platform", "primitive", "unit", "microbenchmark", "in_server", "error_pct"}]}

Every server run of a seed serves each client the same files (:meth:`WebServer.pick_request`: common random
numbers), so two runs are also compared on the requests both measured (:func:`paired_speed`): a pair of
platforms, or a CGI mix and its FastCGI twin, with a 95 % interval; a pair whose interval holds 1 is
*unresolved*: its simulated order is within the sampling error, and ``ranking`` counts the agreement on the
resolved pairs apart.

Tables: ``system_vectors``, ``application_vectors`` (every truss), ``pairs`` (every platform pair: whole-run
and paired simulated speed with its interval, predicted and hybrid speed), ``breakdown`` (Tables 6-2..6-5
analogues), ``throughputs``, ``speedups``, ``type_errors``, ``context``, ``requests`` (every measured
request of every server run), ``hybrid`` (per platform, truss primitive and element -- the lines into a cache
depth, or the page walks --: cache-simulated and warm-loop counts per request, the difference, µs per
line).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Annotated

import pandas as pd
from scipy.stats import kendalltau
from pydantic import BaseModel, ConfigDict, Field, PositiveInt, model_validator

from whatif.models.hbench.vectors import VectorModel, speedup
from whatif.scenarios.executor import piece_rates
from whatif.scenarios.measure import load_run_kernels
from whatif.scenarios.registry import StudyKind, StudyOutput, register_study
from whatif.scenarios.render.hbench_os import add_report, speed_figure, speedup_figure
from whatif.scenarios.results.progress import progress_bar
from whatif.scenarios.results.report import figure_png
from whatif.simulator.os.microbench import MicrobenchSettings, system_vector
from whatif.simulator.os.webserver import (MAX_CLIENTS, MAX_REQUESTS, MAX_WORKERS, SATURATED, cache_simulation,
                                           load_webserver, paired_speed, run_server, with_line_speed)
from whatif.simulator.platform import load_platform



class HbenchOsSpec(BaseModel):
    """The ``[hbench-os]`` table."""
    model_config = ConfigDict(extra="forbid")
    clients: int = Field(default=400, gt=0, le=MAX_CLIENTS)
    workers: Annotated[int, Field(gt=0, le=MAX_WORKERS)] | None = None     # default: one per client
    line_kbit_s: tuple[float, float] | None = None   # default: the server description's SPECweb99 320-400 Kb/s
    requests: int = Field(default=3000, gt=0, le=MAX_REQUESTS // 2)
    warmup_requests: int | None = Field(default=None, ge=0, le=MAX_REQUESTS // 2)   # default: 2 x clients
    dynamic_shares: list[float] = [0.05, 0.15, 0.30]
    speedup_platforms: list[str] | None = None       # default: the first platform
    user_over_s1: list[float] = [0.11, 0.18]
    microbench_repetitions: PositiveInt = 5
    microbench_min_ticks: PositiveInt = 100

    @model_validator(mode="after")
    def _check(self) -> "HbenchOsSpec":
        if any(not 0 < d < 1 for d in self.dynamic_shares):
            raise ValueError(f"dynamic_shares must lie in (0, 1), got {self.dynamic_shares}")
        if any(u < 0 for u in self.user_over_s1):
            raise ValueError(f"user_over_s1 must be >= 0, got {self.user_over_s1}")
        if self.line_kbit_s is not None and not 0 < self.line_kbit_s[0] <= self.line_kbit_s[1]:
            raise ValueError(f"line_kbit_s must be [low, high] with 0 < low <= high, got {list(self.line_kbit_s)}")
        return self


def hbench_os_task(item: dict, shared: dict, progress=None) -> dict:
    """One piece of work (module level for pool and Dask workers): a platform's microbenchmarks, or one
    server run of a mix."""
    started = time.perf_counter()
    platform = load_platform(item["platform"], item["overrides"])
    if item["kind"] == "vector":
        out = {"vector": system_vector(platform, settings=MicrobenchSettings(
            repetitions=shared["repetitions"], min_ticks=shared["min_ticks"]), seed=item["seed"])}
    elif item["kind"] == "replay":
        out = {"cache": cache_simulation(platform, shared["trace"], shared["window"], seed=item["seed"])}
    else:
        run = run_server(platform, item["mix"], shared["clients"], shared["requests"],
                         warmup_requests=shared["warmup"], workers=shared["workers"], seed=item["seed"],
                         spec=with_line_speed(load_webserver(), shared["line"]), trace=item.get("trace", False))
        out = {"summary": run.summary, "truss": run.truss, "in_context": run.in_context,
               "requests": run.requests.assign(platform=item["label"], mix=item["mix_name"]),
               "trace": run.trace, "trace_window": run.trace_window}
    out["host_seconds"] = time.perf_counter() - started
    if progress is not None:
        progress(1)
    return out


def _hybrid_terms(app: pd.DataFrame, vector: pd.DataFrame, cache: pd.DataFrame) -> list[dict]:
    """The hybrid methodology's terms for one request of ``app`` (primitive, count per request) on a
    platform, level by level: per primitive and element (the lines brought into each cache depth, the page
    walks), what the cache simulation of the server's trace counted (per call or byte, times the count),
    the warm loops' count for the same count, the difference and the platform's µs per line of that
    element.  The model is linear, as the seed's cache-hit and cache-miss reads are: a request's
    primitive costs its warm cost plus its lines beyond the warm loop's at their prices, or less where
    the server's calls bring in fewer than the loop's (a 900-byte send against a 64 KB loop)."""
    sim = cache.set_index("primitive")
    v = vector.set_index("primitive")
    elements = [c[len("lines_"):] for c in sim.columns if c.startswith("lines_")]
    out = []
    for r in app.itertuples(index=False):
        if r.primitive not in sim.index or r.primitive not in v.index:
            continue
        per_byte = v.loc[r.primitive, "unit"] == "us/byte"
        units = sim.loc[r.primitive, "bytes"] if per_byte else sim.loc[r.primitive, "calls"]
        for e in elements:
            simulated = float(sim.loc[r.primitive, f"lines_{e}"]) / units * r.count if units else 0.0
            warm = float(v.loc[r.primitive, f"lines_{e}"]) * r.count
            out.append({"primitive": r.primitive, "element": e, "count": float(r.count),
                        "simulated_lines": simulated, "warm_lines": warm, "excess_lines": simulated - warm,
                        "price_us": float(v.loc[r.primitive, f"price_{e}"])})
    return out


def _ranking(rows: dict[str, dict], labels: list[str], key: str, paired: dict[tuple[str, str], dict]) -> dict:
    """The platforms ordered by a predictor's speed ``key`` (fastest first) and its agreement with the
    simulated throughputs: platform pairs ordered alike, of all pairs, and Kendall's τ; and the same on the
    pairs whose simulated order the paired comparison resolves (``paired``: :func:`paired_speed` of each
    pair's static runs), with the unresolved pairs named."""
    pairs = [(a, b) for k, a in enumerate(labels) for b in labels[k + 1:]]
    agree = sum((rows[a][key] > rows[b][key]) == (rows[a]["simulated_throughput"] > rows[b]["simulated_throughput"])
                for a, b in pairs)
    resolved = [pr for pr in pairs if paired[pr]["resolved"]]
    tau = float(kendalltau([rows[p][key] for p in labels], [rows[p]["simulated_throughput"] for p in labels]).statistic)
    return {"predicted": sorted(labels, key=lambda p: -rows[p][key]), "pairs_agree": int(agree),
            "pairs": len(pairs), "kendall_tau": tau, "pairs_resolved": len(resolved),
            "pairs_agree_resolved": int(sum((rows[a][key] < rows[b][key]) == (paired[(a, b)]["ratio"] > 1)
                                            for a, b in resolved)),
            "unresolved": [[a, b] for a, b in pairs if not paired[(a, b)]["resolved"]]}


def _mix_name(mix: dict[str, float]) -> str:
    return "+".join(f"{k}{round(100 * v)}" for k, v in mix.items() if v)


@register_study
class HbenchOsStudy(StudyKind):
    name = "hbench-os"
    sections = {"hbench-os": HbenchOsSpec}

    def check(self) -> None:
        spec = self.spec["hbench-os"]
        for p in spec.speedup_platforms or []:
            if p not in self.scenario.platforms:
                raise self.fail("hbench-os.speedup_platforms", f"{p!r} is not one of the scenario's platforms "
                                                              f"({', '.join(self.scenario.platforms)})")
        if len(self.scenario.platforms) < 2:
            raise self.fail("platforms", "the ranking needs at least two platforms")

    def run(self, ctx) -> StudyOutput:
        spec = self.spec["hbench-os"]
        speedup_on = spec.speedup_platforms or [self.scenario.platforms[0]]
        items = []
        for run in ctx.runs:
            label = run.id
            base = {"platform": run.platform, "overrides": list(run.overrides), "label": label, "seed": run.seed}
            items.append({**base, "kind": "vector"})
            items.append({**base, "kind": "server", "mix": {"static": 1.0}, "mix_name": "static",
                          "trace": run.id == ctx.runs[0].id})     # the reference's: the hybrid's trace
            if run.platform in speedup_on:
                for d in spec.dynamic_shares:
                    for dyn in ("cgi", "fastcgi"):
                        mix = {"static": 1.0 - d, dyn: d}
                        items.append({**base, "kind": "server", "mix": mix, "mix_name": _mix_name(mix),
                                      "dynamic": d, "dyn": dyn})
        shared = {"clients": spec.clients, "workers": spec.workers or spec.clients, "requests": spec.requests,
                  "warmup": spec.warmup_requests if spec.warmup_requests is not None else 2 * spec.clients,
                  "line": spec.line_kbit_s, "repetitions": spec.microbench_repetitions,
                  "min_ticks": spec.microbench_min_ticks}
        # the servers' cores, and the replays' cache simulations (functional warming)
        load_run_kernels(ctx, warming=True)
        started = time.perf_counter()
        with progress_bar(len(items) + len(ctx.runs), "hbench-os", enabled=ctx.progress) as advance:
            outs = ctx.executor.map(hbench_os_task, items, shared=shared, progress=advance, units=1, workers=2)
            # the hybrid methodology (§3.1.3): the reference's static server trace replayed on every platform
            # as a cache simulation
            traced = next(o for i, o in zip(items, outs) if i.get("trace"))
            replays = [{"platform": r.platform, "overrides": list(r.overrides), "label": r.id, "seed": r.seed,
                        "kind": "replay"} for r in ctx.runs]
            caches = ctx.executor.map(hbench_os_task, replays, shared={"trace": traced["trace"],
                                                                       "window": traced["trace_window"]},
                                      progress=advance, units=1, workers=2)
        wall = time.perf_counter() - started
        for o in outs:
            o.pop("trace", None)
        output = self._analyse(ctx, spec, items, outs, {i["label"]: o["cache"] for i, o in zip(replays, caches)})
        names = [f"{i['kind']} {i['label']}{' ' + i['mix_name'] if 'mix_name' in i else ''}"
                 for i in items + replays]
        return replace(output, rates=piece_rates(names, outs + caches, wall))

    def _analyse(self, ctx, spec: HbenchOsSpec, items: list[dict], outs: list[dict],
                 caches: dict[str, pd.DataFrame]) -> StudyOutput:
        labels = [r.id for r in ctx.runs]
        reference = labels[0]
        vectors = pd.concat([o["vector"].assign(system=i["label"]) for i, o in zip(items, outs)
                             if i["kind"] == "vector"], ignore_index=True)
        servers = {(i["label"], i["mix_name"]): (i, o) for i, o in zip(items, outs) if i["kind"] == "server"}
        # the application vector of a request type: its truss in a server run (calls or bytes per request)
        trusses = pd.concat([o["truss"].assign(run=f"{label}/{mix}") for (label, mix), (_, o) in servers.items()],
                            ignore_index=True)

        def truss(label: str, mix: str, rtype: str) -> pd.DataFrame:
            t = trusses[(trusses.run == f"{label}/{mix}") & (trusses.application == rtype)]
            return t[["application", "primitive", "count"]]

        # Figure 6-1: one application vector (the static truss on the reference), every system vector
        static_app = truss(reference, "static", "static")
        fig61 = VectorModel(reference=reference).fit(vectors, static_app, source="hbench-os")
        pred = fig61.predictions.set_index("system")
        rows = {}
        for label in labels:
            s = servers[(label, "static")][1]["summary"]
            own = VectorModel().fit(vectors[vectors.system == label], truss(label, "static", "static"))
            kernel_us = 1e6 * s["kernel_seconds_per_request"]
            rows[label] = {"predicted_us": float(pred.loc[label, "predicted"]),
                           "predicted_speed": float(pred.loc[label, "normalised_speed"]),
                           "simulated_throughput": s["throughput"], "cpu_utilisation": s["cpu_utilisation"],
                           "cpu_us_per_request": 1e6 * s["cpu_seconds_per_request"],
                           "kernel_us_in_server": kernel_us,
                           "own_truss_predicted_us": own.predicted("static", label),
                           "context_error_pct": 100 * (own.predicted("static", label) - kernel_us) / kernel_us,
                           "user_share": 1 - s["kernel_seconds_per_request"] / s["cpu_seconds_per_request"]}
        hybrid_rows = []
        for label in labels:
            terms = _hybrid_terms(static_app, vectors[vectors.system == label], caches[label])
            hybrid_rows += [{"platform": label, **t} for t in terms]
            rows[label]["hybrid_us"] = rows[label]["predicted_us"] + sum(t["excess_lines"] * t["price_us"]
                                                                         for t in terms)
        for label in labels:
            rows[label]["simulated_speed"] = (rows[label]["simulated_throughput"]
                                              / rows[reference]["simulated_throughput"])
            rows[label]["speed_error_pct"] = 100 * (rows[label]["predicted_speed"] / rows[label]["simulated_speed"] - 1)
            rows[label]["hybrid_speed"] = rows[reference]["hybrid_us"] / rows[label]["hybrid_us"]
            rows[label]["hybrid_speed_error_pct"] = 100 * (rows[label]["hybrid_speed"]
                                                           / rows[label]["simulated_speed"] - 1)
        # every platform pair on the requests both static runs served (the same files: common random numbers)
        static_req = {label: servers[(label, "static")][1]["requests"] for label in labels}
        paired = {(a, b): paired_speed(static_req[a], static_req[b])
                  for k, a in enumerate(labels) for b in labels[k + 1:]}
        pairs = pd.DataFrame([{"platform_a": a, "platform_b": b,
                               "simulated_speed_b_over_a": rows[b]["simulated_throughput"]
                               / rows[a]["simulated_throughput"],
                               "paired_speed_b_over_a": pr["ratio"], "paired_ci95_low": pr["ci_low"],
                               "paired_ci95_high": pr["ci_high"], "shared_requests": pr["shared_requests"],
                               "resolved": pr["resolved"],
                               "predicted_speed_b_over_a": rows[b]["predicted_speed"] / rows[a]["predicted_speed"],
                               "hybrid_speed_b_over_a": rows[b]["hybrid_speed"] / rows[a]["hybrid_speed"]}
                              for (a, b), pr in paired.items()])
        ranking = {**_ranking(rows, labels, "predicted_speed", paired),
                   "simulated": sorted(labels, key=lambda p: -rows[p]["simulated_throughput"])}
        ranking_hybrid = _ranking(rows, labels, "hybrid_speed", paired)
        breakdowns = [fig61.table("static", label).assign(platform=label, request="static") for label in labels]
        speedups, type_errors = self._speedups(spec, servers, vectors, truss, breakdowns)
        context = []
        for label in labels:
            micro = vectors[vectors.system == label].set_index("primitive")["cost"]
            for r in servers[(label, "static")][1]["in_context"].itertuples(index=False):
                context.append({"platform": label, "primitive": r.primitive, "unit": r.unit,
                                "microbenchmark": float(micro[r.primitive]), "in_server": r.cost,
                                "error_pct": 100 * (micro[r.primitive] - r.cost) / r.cost})
        throughputs = pd.DataFrame([{"platform": p, **v} for p, v in rows.items()])
        tables = {"system_vectors": vectors, "application_vectors": trusses, "pairs": pairs,
                  "breakdown": pd.concat(breakdowns, ignore_index=True), "throughputs": throughputs,
                  "speedups": speedups, "type_errors": type_errors, "context": pd.DataFrame(context),
                  "requests": pd.concat([o["requests"] for _, o in servers.values()], ignore_index=True),
                  "hybrid": pd.DataFrame(hybrid_rows)}
        fig_speed = figure_png(speed_figure(throughputs, reference))
        figures = {"normalised_throughputs": (fig_speed, "Figure 6-1 analogue")}
        fig_speedup = figure_png(speedup_figure(speedups)) if len(speedups) else None
        if fig_speedup is not None:
            figures["speedups"] = (fig_speedup, "Figure 6-2 analogue")
        results = {"platforms": rows, "reference": reference,
                   "unsaturated": [p for p in labels if rows[p]["cpu_utilisation"] < SATURATED],
                   "ranking": ranking, "ranking_hybrid": ranking_hybrid,
                   "speedups": speedups.to_dict(orient="records"), "type_errors": type_errors.to_dict(orient="records"),
                   "context": context}
        headline = pd.DataFrame([{"metric": m, "variant": p, "value": rows[p][k]} for p in labels
                                 for m, k in (("simulated throughput (req/s)", "simulated_throughput"),
                                              (f"simulated speed (x {reference})", "simulated_speed"),
                                              (f"predicted speed (x {reference})", "predicted_speed"),
                                              ("speed prediction error (%)", "speed_error_pct"),
                                              (f"hybrid predicted speed (x {reference})", "hybrid_speed"),
                                              ("hybrid speed prediction error (%)", "hybrid_speed_error_pct"),
                                              ("kernel time: vectors vs server (%)", "context_error_pct"))])
        return StudyOutput(results=results, tables=tables, figures=figures, headline=headline,
                           headline_absolute=(f"simulated speed (x {reference})", f"predicted speed (x {reference})",
                                              "speed prediction error (%)", "kernel time: vectors vs server (%)",
                                              f"hybrid predicted speed (x {reference})",
                                              "hybrid speed prediction error (%)"),
                           parameters={"hbench-os": spec.model_dump()},
                           report=lambda rep: add_report(rep, results, tables, fig_speed, fig_speedup))

    @staticmethod
    def _speedups(spec, servers, vectors, truss, breakdowns) -> tuple[pd.DataFrame, pd.DataFrame]:
        """CGI -> FastCGI at each dynamic share: the simulated speedup (ratio of the saturated throughputs)
        against r = s1/s2 and r' (§6.3.3.3), s1 and s2 the mixes' predicted kernel times per request (the
        vector model is linear: a mix's application vector is its types' trusses weighted by their shares);
        and each request type's predicted kernel time against the server's."""
        out, errors = [], []
        for (label, mix_name), (i, o) in servers.items():
            if i.get("dyn") != "cgi":
                continue
            d = i["dynamic"]
            fi, fo = servers[(label, _mix_name({"static": 1.0 - d, "fastcgi": d}))]
            lat, user = {}, {}
            for which, (ii, oo) in (("cgi", (i, o)), ("fastcgi", (fi, fo))):
                parts = [truss(label, ii["mix_name"], t).assign(count=lambda x, w=w: x["count"] * w)
                         for t, w in ii["mix"].items() if w]
                app = pd.concat(parts).groupby("primitive", as_index=False)["count"].sum().assign(application=which)
                res = VectorModel().fit(vectors[vectors.system == label], app)
                lat[which] = res.predicted(which, label)
                s = oo["summary"]
                user[which] = s["cpu_seconds_per_request"] / s["kernel_seconds_per_request"] - 1
                if d == max(spec.dynamic_shares):
                    req = oo["requests"]
                    for t in [t for t, w in ii["mix"].items() if w]:
                        one = VectorModel().fit(vectors[vectors.system == label], truss(label, ii["mix_name"], t))
                        served = 1e6 * req[req.type == t]["kernel_seconds"].mean()
                        errors.append({"platform": label, "request": t, "predicted_us": one.predicted(t, label),
                                       "in_server_us": served,
                                       "error_pct": 100 * (one.predicted(t, label) - served) / served})
                        if t != "static":
                            breakdowns.append(one.table(t, label).assign(platform=label, request=t))
            simulated = fo["summary"]["throughput"] / o["summary"]["throughput"]
            pr = paired_speed(o["requests"], fo["requests"])        # the same requests, CGI ones as FastCGI
            r = speedup(lat["cgi"], lat["fastcgi"])
            row = {"platform": label, "dynamic": d, "s1_us": lat["cgi"], "s2_us": lat["fastcgi"],
                   "simulated": simulated, "simulated_paired": pr["ratio"], "simulated_ci95_low": pr["ci_low"],
                   "simulated_ci95_high": pr["ci_high"], "r": r, "r_error_pct": 100 * (r - simulated) / simulated}
            for u in spec.user_over_s1:
                rp = speedup(lat["cgi"], lat["fastcgi"], u)
                row[f"r_prime_{u:g}"] = rp
                row[f"r_prime_{u:g}_error_pct"] = 100 * (rp - simulated) / simulated
            row["measured_user_over_s1"] = user["cgi"]
            rp = speedup(lat["cgi"], lat["fastcgi"], user["cgi"])
            row["r_prime_measured"] = rp
            row["r_prime_measured_error_pct"] = 100 * (rp - simulated) / simulated
            out.append(row)
        return pd.DataFrame(out), pd.DataFrame(errors)
