"""Study kind ``hbench-java``: HBench:Java (seed 003 ch. 4) against applications run on simulated JVMs.

Configurations are every JVM of ``[hbench-java] jvms`` (:mod:`simulator.jvm`, Table 4-1 analogues) on
every platform run of the scenario.  Per configuration the HBench:Java microbenchmarks give the system
vector (:mod:`simulator.jvm.microbench`) and every application and SPECjvm98 program runs in full on it
(:mod:`simulator.jvm.apps`): its simulated running time is the ground truth.  The JVMPI-style profile of
each application's run on the reference configuration gives its application vector and the N and S of
J(N, S).  Predicted time on a configuration = application vector · system vector + J(N, S) × the
configuration's measured compile cost per bytecode (``hbench``), a per-unit primitive (chars, bytes)
priced by its microbenchmarked per-call cost C(s) at the sizes the profile saw it called with, N(s)
(§4.2.2: "extrapolate the running time based on the actual parameters"); under an adaptive JIT the application
vector is split at the JIT's threshold (calls made once a method had been invoked ``threshold`` times
are priced at the primitive's compiled cost, the seed's §4.2.3 compile events); the seed's prototype, system classes
only, is reported beside it (``system_classes``); and the SPECjvm98-style composite -- the geometric mean
of the SPECjvm98 programs' simulated normalised speeds -- predicts the same speed for every application
(``specjvm98``).  The hybrid methodology (§3.1.3, ``hybrid``) adds to ``hbench`` each primitive's misses
(user code and the JIT included) beyond its warm loop's -- counted by a cache simulation of the
application on the configuration (:func:`run_application` with ``functional``: the same streams
through caches, TLBs and predictors, no timing) against the warm loops' misses for the same calls (the
vectors with misses for costs) -- each at the primitive's cold-call cost per miss (its microbenchmark
once more after every cache and TLB was flushed).  Speeds are normalised to the reference configuration (Figures 4-4..4-7); each
predictor's rank agreement is Kendall's τ with the simulated speeds, its error the mean |predicted /
simulated - 1| over the other configurations.

``results.json``::

    {"configurations": [label...], "reference": label,
     "applications": {app: {"speeds": {label: {"simulated", "hbench", "hybrid", "system_classes", "specjvm98",
                                               "simulated_seconds", "predicted_seconds", "hybrid_seconds"}},
                            "kendall_tau": {predictor: t}, "mean_error_pct": {predictor: e},
                            "important": [primitive...], "system_share": s}},
     "specjvm98": {label: composite}, "summary": {predictor: {"min_tau", "mean_error_pct"}}}

Tables: ``system_vectors``, ``cost_functions`` (C(s), µs per call), ``application_vectors``,
``size_distributions`` (N(s), calls), ``methods`` (N and S), ``runs`` (every application
run: times and split), ``speeds``, ``important_primitives`` (Tables 4-3/4-4), ``time_split`` (Tables
4-5/4-6 with the seed's figures), ``breakdown``, ``in_application`` (per application, configuration and
primitive -- API primitives, ``user code``, the JIT -- the predicted µs against the cycles its calls took
in the application's run: where the warm-loop microbenchmarks' context independence fails, §3.1.1.2;
and the hybrid's terms: cache-simulated and warm-loop misses, µs per miss, the hybrid's µs).
"""

from __future__ import annotations

import math
from typing import Annotated

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, PositiveInt, model_validator
from scipy.stats import kendalltau

from whatif.models.hbench.vectors import VectorModel
from whatif.scenarios.measure import load_run_kernels
from whatif.scenarios.registry import StudyKind, StudyOutput, register_study
from whatif.scenarios.render.hbench_java import add_report, speeds_figure
from whatif.scenarios.results.progress import progress_bar
from whatif.scenarios.results.report import figure_png
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.jvm.apps import USER_CODE, run_application
from whatif.simulator.jvm.microbench import (CLASS_SIZES, COST_SIZES, FOOTPRINTS, class_loading_primitives,
                                             cost_functions, primitive_table, system_vector)
from whatif.simulator.jvm.profiler import (COMPILED, JIT_COMPILE, USER_BYTECODE, USER_INVOKE, jit_bytecodes,
                                          user_footprint)
from whatif.simulator.jvm.spec import load_applications, load_jvms
from whatif.simulator.os.microbench import MicrobenchSettings
from whatif.simulator.platform import load_platform

PREDICTORS = ("hbench", "hybrid", "system_classes", "specjvm98")
# seed 003 Tables 4-5 and 4-6: system-class time (%) measured with hprof on JDK 1.2.2
SEED_SYSTEM_PCT = {"compress": 2.6, "jess": 4.5, "db": 33.1, "javac": 6.1, "mpegaudio": 1.4, "mtrt": 1.4,
                   "jack": 15.1, "WebL": 54.0, "Cloudscape": 33.9, "Mercator": 92.9}
ENGINE = (USER_BYTECODE, USER_INVOKE, JIT_COMPILE)


class HbenchJavaSpec(BaseModel):
    """The ``[hbench-java]`` table."""
    model_config = ConfigDict(extra="forbid")
    jvms: list[str] = ["jdk122-classic", "msjvm-sdk32", "jdk122-interp", "jdk121-prod"]
    applications: list[str] = ["WebL", "Cloudscape", "Mercator", "db"]
    specjvm98: list[str] = ["compress", "jess", "db", "javac", "mpegaudio", "mtrt", "jack"]
    scale: float = Field(default=0.1, gt=0, le=1)              # every count of the applications
    spec_scale: float = Field(default=0.01, gt=0, le=1)        # every count of the SPECjvm98 programs
    reference: str | None = None                               # "jvm@platform"; default: the first
    timer_resolution_us: float = Field(default=0.1, gt=0, le=1000)   # §4.2.3: a high-resolution timer
    microbench_min_ticks: PositiveInt = 100
    microbench_repetitions: PositiveInt = 5
    transfer_units: PositiveInt = Field(default=8192, le=1 << 20)    # chars or bytes per call of per-unit primitives
    class_bytes: int = Field(default=2048, ge=64, le=1 << 20)  # the microbenchmark's classes
    # §4.2.2's "several data points" of C(s): units per call of a per-unit primitive, class-file bytes of a
    # loaded class, bytecodes of a user-code working set
    cost_sizes: list[Annotated[int, Field(gt=0, le=1 << 20)]] = Field(default=list(COST_SIZES), min_length=1)
    class_sizes: list[Annotated[int, Field(ge=64, le=1 << 20)]] = Field(default=list(CLASS_SIZES), min_length=1)
    code_footprints: list[Annotated[int, Field(gt=0, le=1 << 20)]] = Field(default=list(FOOTPRINTS), min_length=1)

    @model_validator(mode="after")
    def _check(self) -> "HbenchJavaSpec":
        for what in ("jvms", "applications", "specjvm98", "cost_sizes", "class_sizes", "code_footprints"):
            values = getattr(self, what)
            if len(set(values)) != len(values):
                twice = next(v for v in values if values.count(v) > 1)
                raise ValueError(f"{what} lists {twice!r} twice: {values}")
        if not self.applications:
            raise ValueError("applications must name at least one application")
        if len(self.specjvm98) < 1:
            raise ValueError("specjvm98 must name at least one program (the composite's)")
        return self


def hbench_java_task(item: dict, shared: dict, progress=None) -> dict:
    """One piece of work: a configuration's microbenchmarks, or one application run."""
    platform = load_platform(item["platform"], item["overrides"])
    if item["kind"] == "vector":
        settings = MicrobenchSettings(timer_resolution_s=shared["resolution"], min_ticks=shared["min_ticks"],
                                      repetitions=shared["repetitions"], transfer_bytes=shared["transfer"])
        out = {"vector": system_vector(platform, item["jvm"], settings, seed=item["seed"],
                                       class_bytes=shared["class_bytes"]),
               "functions": cost_functions(platform, item["jvm"], settings, seed=item["seed"],
                                           class_bytes=shared["class_bytes"], sizes=tuple(shared["cost_sizes"]),
                                           class_sizes=tuple(shared["class_sizes"]),
                                           footprints=tuple(shared["code_footprints"]))}
    else:
        out = run_application(platform, item["jvm"], item["app"], item["scale"], seed=shared["seed"],
                              run_seed=item["seed"])
        if item["app"] in shared["applications"]:      # the hybrid's cache simulation of the same run
            out["cache_simulation"] = run_application(platform, item["jvm"], item["app"], item["scale"],
                                                      seed=shared["seed"], run_seed=item["seed"],
                                                      functional=True)["in_application"]
    if progress is not None:
        progress(1)
    return out


def _element_primitive(element: str) -> str:
    """The primitive a breakdown element prices (its compiled and interpreted costs, user code, the JIT)."""
    if element.endswith(COMPILED):
        element = element[:-len(COMPILED)]
    if element in (USER_BYTECODE, USER_INVOKE):
        return USER_CODE
    return JIT_COMPILE if element.startswith(JIT_COMPILE) else element


def _hybrid(cache_simulation: pd.DataFrame, expected: pd.Series, penalty: pd.Series) -> list[dict]:
    """Per primitive (user code and the JIT included): the misses a cache simulation of the application
    counts in its calls, the misses the warm microbenchmarks had for the same calls (``expected``), the
    excess (never below 0) and its price per miss (``penalty``, µs)."""
    rows = []
    for r in cache_simulation.itertuples(index=False):
        warm = float(expected.get(r.primitive, 0.0))
        rows.append({"primitive": r.primitive, "simulated_misses": float(r.misses), "warm_misses": warm,
                     "excess_misses": max(0.0, float(r.misses) - warm),
                     "miss_penalty": float(penalty.get(r.primitive, 0.0))})
    return rows


def _in_application(app: str, label: str, breakdown: pd.DataFrame, in_app: pd.DataFrame,
                    hybrid: list[dict]) -> list[dict]:
    """Per primitive of ``app`` on ``label``: what the vectors predicted (µs), and the hybrid methodology
    with them, against what its calls took in the application's run -- where the microbenchmarks'
    context independence (§3.1.1.2) fails."""
    predicted = breakdown.groupby(breakdown["element"].map(_element_primitive))["total"].sum()
    spent = in_app.set_index("primitive")
    extra = {h["primitive"]: h for h in hybrid}
    rows = []
    for prim in dict.fromkeys([*predicted.index, *spent.index]):
        p = float(predicted.get(prim, 0.0))
        a = 1e6 * float(spent["seconds"].get(prim, 0.0))
        h = extra.get(prim, {"simulated_misses": 0.0, "warm_misses": 0.0, "excess_misses": 0.0, "miss_penalty": 0.0})
        hy = p + h["excess_misses"] * h["miss_penalty"]
        rows.append({"application": app, "configuration": label, "primitive": prim,
                     "calls": int(spent["calls"].get(prim, 0)), "predicted_us": p, "in_application_us": a,
                     "error_pct": 100 * (p - a) / a if a else float("nan"),
                     "cache_simulated_misses": h["simulated_misses"], "warm_loop_misses": h["warm_misses"],
                     "miss_penalty_us": h["miss_penalty"], "hybrid_us": hy,
                     "hybrid_error_pct": 100 * (hy - a) / a if a else float("nan")})
    return rows


def _tau(a, b) -> float:
    t = kendalltau(a, b).statistic
    return float(t) if t == t else 1.0


@register_study
class HbenchJavaStudy(StudyKind):
    name = "hbench-java"
    sections = {"hbench-java": HbenchJavaSpec}

    def check(self) -> None:
        spec = self.spec["hbench-java"]
        try:
            jvms, apps = load_jvms(), load_applications()
        except SimulatorInputError as exc:
            raise self.fail("hbench-java", str(exc)) from None
        for j in spec.jvms:
            if j not in jvms:
                raise self.fail("hbench-java.jvms", f"unknown JVM {j!r}; known: {', '.join(jvms)}")
        for what in ("applications", "specjvm98"):
            for a in getattr(spec, what):
                if a not in apps:
                    raise self.fail(f"hbench-java.{what}", f"unknown application {a!r}; known: {', '.join(apps)}")
        if len(spec.jvms) * len(self.scenario.platforms) < 2:
            raise self.fail("hbench-java.jvms", "the ranking needs at least two JVM x platform configurations")
        if spec.reference is not None:
            labels = [f"{j}@{p}" for j in spec.jvms for p in self.scenario.platforms]
            if spec.reference not in labels:
                raise self.fail("hbench-java.reference", f"{spec.reference!r} is not a configuration "
                                                         f"(jvm@platform: {', '.join(labels)})")

    @staticmethod
    def _label(jvm: str, run) -> str:
        return f"{jvm}@{run.platform}" if run.variant == "baseline" else f"{jvm}@{run.id}"

    def run(self, ctx) -> StudyOutput:
        spec = self.spec["hbench-java"]
        apps = list(dict.fromkeys([*spec.applications, *spec.specjvm98]))
        items = []
        for run in ctx.runs:
            for j in spec.jvms:
                base = {"platform": run.platform, "overrides": list(run.overrides), "jvm": j, "seed": run.seed,
                        "label": self._label(j, run)}
                items.append({**base, "kind": "vector"})
                for a in apps:
                    scale = spec.scale if a in spec.applications else spec.spec_scale
                    items.append({**base, "kind": "app", "app": a, "scale": scale})
        # the longest first, so that two workers finish together
        order = sorted(range(len(items)), key=lambda i: items[i]["kind"] != "vector")
        shared = {"resolution": spec.timer_resolution_us * 1e-6, "min_ticks": spec.microbench_min_ticks,
                  "repetitions": spec.microbench_repetitions, "transfer": spec.transfer_units,
                  "class_bytes": spec.class_bytes, "seed": self.scenario.seed, "applications": spec.applications,
                  "cost_sizes": spec.cost_sizes, "class_sizes": spec.class_sizes,
                  "code_footprints": spec.code_footprints}
        # the JVMs' cores and heaps (a collection when one fills), and the cache simulations (functional warming)
        jvms = load_jvms()
        load_run_kernels(ctx, warming=True, collectors=[jvms[j].collector.name for j in spec.jvms])
        with progress_bar(len(items), "hbench-java", enabled=ctx.progress) as advance:
            outs = ctx.executor.map(hbench_java_task, [items[i] for i in order], shared=shared, progress=advance,
                                    units=1, workers=2)
        done = [None] * len(items)
        for i, o in zip(order, outs):
            done[i] = o
        return self._analyse(spec, items, done)

    def _analyse(self, spec: HbenchJavaSpec, items: list[dict], outs: list[dict]) -> StudyOutput:
        labels = list(dict.fromkeys(i["label"] for i in items))
        reference = spec.reference if spec.reference is not None else labels[0]
        if reference not in labels:
            reference = labels[0]
        jvm_of = {i["label"]: i["jvm"] for i in items}
        jvms = load_jvms()
        vectors = pd.concat([o["vector"].assign(system=i["label"]) for i, o in zip(items, outs)
                             if i["kind"] == "vector"], ignore_index=True)
        functions = pd.concat([o["functions"].assign(system=i["label"]) for i, o in zip(items, outs)
                               if i["kind"] == "vector"], ignore_index=True)
        plain_functions = functions[~functions.primitive.str.endswith(COMPILED)]
        runs = {(i["label"], i["app"]): o for i, o in zip(items, outs) if i["kind"] == "app"}
        run_rows = [{"configuration": lab, "application": a, "seconds": o["seconds"],
                     "system_seconds": o["system_seconds"], "user_seconds": o["user_seconds"],
                     "jit_seconds": o["jit_seconds"], "gc_seconds": o["gc_seconds"], "collections": o["collections"],
                     "compiled_bytecodes": o["compiled_bytecodes"], "j_of_n_s": o["j_of_n_s"],
                     "instructions": o["instructions"], "classes_loaded": o["classes_loaded"]}
                    for (lab, a), o in runs.items()]
        # SPECjvm98-style composite: geometric mean of the programs' simulated normalised speeds
        composite = {lab: float(np.exp(np.mean([np.log(runs[(reference, p)]["seconds"] / runs[(lab, p)]["seconds"])
                                                for p in spec.specjvm98]))) for lab in labels}
        jit_cost = vectors[vectors.primitive == JIT_COMPILE].set_index("system")["cost"]
        jit_misses = vectors[vectors.primitive == JIT_COMPILE].set_index("system")["misses"]
        # µs per miss beyond the warm loop's, per configuration and primitive (user code: the bytecode's)
        penalties = vectors[~vectors.primitive.str.endswith(COMPILED)].pivot(index="system", columns="primitive",
                                                                               values="miss_penalty")
        penalties[USER_CODE] = penalties[USER_BYTECODE]
        plain = vectors[~vectors.primitive.str.endswith(COMPILED)]      # one cost a primitive
        api_vectors = plain[~plain.primitive.isin(ENGINE)]
        primitives = primitive_table()
        loading = class_loading_primitives()
        results_apps, speed_rows, important_rows, breakdowns, app_vectors, method_tables = {}, [], [], [], [], []
        context_rows: list[dict] = []
        size_tables: list[pd.DataFrame] = []
        for app in spec.applications:
            ref_run = runs[(reference, app)]
            av = ref_run["application_vector"]
            app_vectors.append(av)
            methods = ref_run["methods"]
            method_tables.append(methods.assign(application=app))
            # per-unit primitives at the sizes the application called them with: C(s) against N(s)
            footprint = user_footprint(methods)
            sizes = ref_run["profiler"].size_distribution(app, primitives, class_loading=loading,
                                                          user_footprint=footprint)
            size_tables.append(sizes)
            full = VectorModel(reference=reference).fit(plain[plain.primitive != JIT_COMPILE], av, plain_functions,
                                                        sizes, source="hbench-java")
            sys_only = VectorModel(reference=reference).fit(
                api_vectors, av[~av.primitive.isin(ENGINE)], plain_functions[~plain_functions.primitive.isin(ENGINE)],
                sizes[~sizes.primitive.isin(ENGINE)], source="hbench-java")
            pred_sys = sys_only.predictions.set_index("system")["predicted"]
            predicted, hybrid = {}, {}
            for lab in labels:
                j = jvms[jvm_of[lab]]
                jn = jit_bytecodes(methods, j.jit.policy, j.jit.threshold, tuple(j.jit.never_compile))
                mine = plain[(plain.system == lab) & (plain.primitive != JIT_COMPILE)]
                app_v, fun, dist = av, plain_functions[plain_functions.system == lab], sizes
                if j.jit.policy == "threshold":
                    # an adaptive JIT: the calls made after a primitive's method reached the threshold
                    # priced at its compiled cost (the profile's invocation counts; §4.2.3's compile events)
                    app_v = ref_run["profiler"].split_at_threshold(av, primitives, j.jit.threshold)
                    mine = vectors[(vectors.system == lab) & (vectors.primitive != JIT_COMPILE)]
                    fun = functions[functions.system == lab]
                    dist = ref_run["profiler"].size_distribution(app, primitives, j.jit.threshold, loading, footprint)
                model = VectorModel(reference=lab).fit(mine, app_v, fun, dist, source="hbench-java")
                base = float(model.predictions.set_index("system")["predicted"][lab])
                predicted[lab] = base + jn * float(jit_cost[lab])
                # the hybrid methodology (§3.1.3): the misses the warm loops had, by the same vectors,
                # against the misses a cache simulation of the application on this configuration counts;
                # each element's excess priced at its cold-call cost per miss
                warm_misses = VectorModel(reference=lab).fit(mine.assign(cost=mine["misses"]), app_v,
                                                             fun.assign(cost=fun["misses"]), dist, source="hbench-java")
                warm_table = warm_misses.table(app, lab)
                expected = warm_table.groupby(warm_table.element.map(_element_primitive))["total"].sum()
                expected[JIT_COMPILE] = jn * float(jit_misses[lab])
                hybrid_rows = _hybrid(runs[(lab, app)]["cache_simulation"], expected,
                                      penalties.loc[lab])
                hybrid[lab] = predicted[lab] + sum(r["excess_misses"] * r["miss_penalty"] for r in hybrid_rows)
                table = model.table(app, lab)
                table = pd.concat([table, pd.DataFrame([{"element": JIT_COMPILE + " x J(N,S)",
                                                         "application_vector": float(jn),
                                                         "system_vector": float(jit_cost[lab]),
                                                         "total": jn * float(jit_cost[lab])}])], ignore_index=True)
                table["percentage"] = 100 * table["total"] / table["total"].sum()
                breakdowns.append(table.assign(application=app, configuration=lab))
                context_rows += _in_application(app, lab, table, runs[(lab, app)]["in_application"], hybrid_rows)
            speeds = {}
            for lab in labels:
                sim = runs[(reference, app)]["seconds"] / runs[(lab, app)]["seconds"]
                speeds[lab] = {"simulated": sim, "hbench": predicted[reference] / predicted[lab],
                               "hybrid": hybrid[reference] / hybrid[lab], "hybrid_seconds": hybrid[lab] * 1e-6,
                               "system_classes": float(pred_sys[reference] / pred_sys[lab]),
                               "specjvm98": composite[lab], "simulated_seconds": runs[(lab, app)]["seconds"],
                               "predicted_seconds": predicted[lab] * 1e-6}
                speed_rows.append({"application": app, "configuration": lab, **speeds[lab]})
            taus = {p: _tau([speeds[x][p] for x in labels], [speeds[x]["simulated"] for x in labels])
                    for p in PREDICTORS}
            others = [x for x in labels if x != reference]
            errors = {p: float(np.mean([abs(speeds[x][p] / speeds[x]["simulated"] - 1) for x in others]) * 100)
                      for p in PREDICTORS}
            ref_table = full.table(app, reference)
            top = [e for e in ref_table.element if e not in (USER_BYTECODE, USER_INVOKE)][:3]
            for lab in labels:
                cost = vectors[vectors.system == lab].set_index("primitive")["cost"]
                important_rows.append({"application": app, "configuration": lab, **{p: float(cost[p]) for p in top}})
            r = runs[(reference, app)]
            results_apps[app] = {"speeds": speeds, "kendall_tau": taus, "mean_error_pct": errors, "important": top,
                                 "application_vector": {k: float(v) for k, v in zip(av.primitive, av["count"])},
                                 "system_share": r["system_seconds"] / (r["system_seconds"] + r["user_seconds"])}
        split = []
        for a in dict.fromkeys([*spec.applications, *spec.specjvm98]):
            r = runs[(reference, a)]
            share = 100 * r["system_seconds"] / (r["system_seconds"] + r["user_seconds"])
            split.append({"program": a, "suite": r["suite"], "system_pct": share, "user_pct": 100 - share,
                          "seed_system_pct": SEED_SYSTEM_PCT.get(a, float("nan"))})
        summary = {p: {"min_tau": min(v["kendall_tau"][p] for v in results_apps.values()),
                       "mean_error_pct": float(np.mean([v["mean_error_pct"][p] for v in results_apps.values()]))}
                   for p in PREDICTORS}
        tables = {"system_vectors": vectors, "cost_functions": functions,
                  "application_vectors": pd.concat(app_vectors, ignore_index=True),
                  "size_distributions": pd.concat(size_tables, ignore_index=True),
                  "methods": pd.concat(method_tables, ignore_index=True), "runs": pd.DataFrame(run_rows),
                  "speeds": pd.DataFrame(speed_rows), "important_primitives": pd.DataFrame(important_rows),
                  "time_split": pd.DataFrame(split), "breakdown": pd.concat(breakdowns, ignore_index=True),
                  "in_application": pd.DataFrame(context_rows)}
        results = {"configurations": labels, "reference": reference, "applications": results_apps,
                   "specjvm98": composite, "summary": summary}
        fig = figure_png(speeds_figure(tables["speeds"], reference))
        headline = pd.DataFrame([{"metric": f"{app}: {m}", "variant": "all", "value": v}
                                 for app, r in results_apps.items()
                                 for m, v in (("Kendall tau, HBench:Java", r["kendall_tau"]["hbench"]),
                                              ("Kendall tau, HBench:Java hybrid", r["kendall_tau"]["hybrid"]),
                                              ("Kendall tau, SPECjvm98 composite", r["kendall_tau"]["specjvm98"]),
                                              ("mean speed error (%), HBench:Java", r["mean_error_pct"]["hbench"]),
                                              ("mean speed error (%), HBench:Java hybrid",
                                               r["mean_error_pct"]["hybrid"]),
                                              ("mean speed error (%), SPECjvm98", r["mean_error_pct"]["specjvm98"]))]
                                + [{"metric": f"all: {m}", "variant": "all", "value": summary[p][k]}
                                   for p, name in (("hbench", "HBench:Java"), ("hybrid", "HBench:Java hybrid"),
                                                   ("specjvm98", "SPECjvm98 composite"))
                                   for m, k in ((f"worst Kendall tau, {name}", "min_tau"),
                                                (f"mean speed error (%), {name}", "mean_error_pct"))])
        return StudyOutput(results=results, tables=tables, figures={"normalised_speeds": (fig, "Figures 4-4..4-7")},
                           headline=headline, headline_absolute=tuple(headline.metric),
                           parameters={"hbench-java": spec.model_dump()},
                           report=lambda rep: add_report(rep, results, tables, fig))
