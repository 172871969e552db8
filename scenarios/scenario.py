"""Scenario files: the schema every study shares, variants and sweeps, and their expansion into runs.

A scenario names a study kind, the platforms (and, for later kinds, workloads),
a seed, replicates, an optional sweep (dotted key -> list of values, crossed)
and named variants (dotted overrides run side by side).  Each study kind adds
its own tables (``[trace]`` for cachesim) and validates them.

Override keys are platform keys as ``whatif show platform NAME --json`` prints
them (``l2.size_kb`` for ``caches.L2.size_kb``); a ``platform.`` prefix is
accepted.  Every override is checked against every platform of the scenario
before anything runs, so a typo fails at once with one line.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt, ValidationError

from whatif.scenarios.errors import ScenarioError
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.platform import load_platform
from whatif.simulator.schema import format_validation_error, load_toml, split_assignment

SCENARIO_SCHEMA_VERSION = 1


class Scenario(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    schema_version: int = SCENARIO_SCHEMA_VERSION
    name: str = Field(min_length=1)
    description: str = ""
    study: str
    seed: NonNegativeInt = 0
    platforms: list[str] = Field(min_length=1)
    workloads: list[str] = []
    replicates: PositiveInt = 1
    sweep: dict[str, list[Any]] = {}
    variants: dict[str, dict[str, Any]] = {"baseline": {}}

    def section(self, name: str) -> Any:
        return (self.model_extra or {}).get(name)


@dataclass(frozen=True)
class Run:
    """One simulation of a study: a platform under a variant, sweep point and replicate."""
    id: str
    variant: str
    platform: str
    overrides: tuple[tuple[str, Any], ...]
    sweep: dict[str, Any] = field(default_factory=dict)
    replicate: int = 0
    seed: int = 0
    workload: str | None = None

    def identity(self) -> dict[str, Any]:
        ident = {"run": self.id, "variant": self.variant, "platform": self.platform}
        if self.workload is not None:
            ident["workload"] = self.workload
        return {**ident, **self.sweep, "replicate": self.replicate}


def _strip_prefix(key: str) -> str:
    return key[len("platform."):] if key.startswith("platform.") else key


def load_scenario(path: str | Path, seed: int | None = None) -> tuple[Scenario, Path]:
    path = Path(path)
    try:
        raw = load_toml(path)
    except SimulatorInputError as exc:
        raise ScenarioError(str(exc)) from None
    from whatif.scenarios.studies import study_kinds

    try:
        scenario = Scenario.model_validate(raw)
    except ValidationError as exc:
        raise ScenarioError(format_validation_error(exc, str(path))) from None
    if scenario.schema_version != SCENARIO_SCHEMA_VERSION:
        raise ScenarioError(f"{path}: schema_version {scenario.schema_version} is not supported "
                            f"(this whatif reads version {SCENARIO_SCHEMA_VERSION})")
    kinds = study_kinds()
    if scenario.study not in kinds:
        raise ScenarioError(f"{path}: study: unknown study kind {scenario.study!r}; known: {', '.join(sorted(kinds))}")
    allowed = set(kinds[scenario.study].sections)
    for extra in (scenario.model_extra or {}):
        if extra not in allowed:
            hint = f" (the {scenario.study} study reads: {', '.join(sorted(allowed))})" if allowed else ""
            raise ScenarioError(f"{path}: {extra}: unknown field{hint}")
    if not scenario.variants:
        raise ScenarioError(f"{path}: variants: at least one variant is required (an empty table is the baseline)")
    if seed is not None:
        scenario = scenario.model_copy(update={"seed": seed})
    return scenario, path


def expand_runs(scenario: Scenario, source: str, extra_overrides: list[str] = ()) -> list[Run]:
    """Every run of the scenario, with all overrides validated against every platform first."""
    cli = [split_assignment(item) for item in extra_overrides]
    sweep_keys = list(scenario.sweep)
    for key, values in scenario.sweep.items():
        if not values:
            raise ScenarioError(f"{source}: sweep.{key}: needs at least one value")
    points = [dict(zip(sweep_keys, combo)) for combo in itertools.product(*scenario.sweep.values())] or [{}]
    runs: list[Run] = []
    import numpy as np

    # common random numbers: replicate r of every variant and platform uses the same seed, so what-if
    # comparisons are not blurred by different page placements or OS-noise phases
    rep_seeds = [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(scenario.seed).spawn(scenario.replicates)]
    for variant, overrides in scenario.variants.items():
        for platform in scenario.platforms:
            for point in points:
                ov = tuple((_strip_prefix(k), v) for k, v in overrides.items())
                ov += tuple((_strip_prefix(k), v) for k, v in point.items())
                ov += tuple((_strip_prefix(k), v) for k, v in cli)
                try:
                    load_platform(platform, ov)
                except SimulatorInputError as exc:
                    where = f"variants.{variant}" if overrides else "sweep" if point else "--set"
                    raise ScenarioError(f"{source}: {where}: {exc}") from None
                for workload in scenario.workloads or [None]:
                    for rep in range(scenario.replicates):
                        label = variant if len(scenario.platforms) == 1 else f"{variant}@{platform}"
                        if workload is not None:
                            label = f"{workload}:{label}"
                        if point:
                            label += "[" + ",".join(f"{k}={v}" for k, v in point.items()) + "]"
                        if scenario.replicates > 1:
                            label += f"#{rep}"
                        runs.append(Run(id=label, variant=variant, platform=platform, overrides=ov,
                                        sweep={k: v for k, v in point.items()}, replicate=rep, seed=rep_seeds[rep],
                                        workload=workload))
    return runs
