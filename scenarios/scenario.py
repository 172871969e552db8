"""Scenario files: the schema every study shares, variants and sweeps, and their expansion into runs.

A scenario names a study kind, the platforms (and, for later kinds, workloads),
a seed, replicates, an optional sweep (dotted key -> list of values, crossed)
and named variants (dotted overrides run side by side).  Each study kind adds
its own tables (``[trace]`` for cachesim) and validates them.

Seeds mean one thing in every study kind.  The scenario ``seed`` fixes the program: the synthesised
binary (the description's program, which its ``source_seed`` draws, laid out), its input (every
data-dependent choice), a synthetic trace, and everything else a study draws once.  Replicate seeds --
one per replicate, drawn from the scenario seed and shared by every variant and platform (common random
numbers) -- vary only what differs between two runs of the same program on a
real machine: physical page placement, timer phase, OS noise.  A study that wants different binaries
says so: ``binaries = n`` crosses n binaries (program seeds drawn from the scenario seed; the first is
the scenario seed itself) with the replicates.  ``Run.program_seed`` and ``Run.seed`` carry the two.

Override keys are platform keys as ``whatif show platform NAME --json`` prints
them (``l2.size_kb`` for ``caches.L2.size_kb``); a ``platform.`` prefix is
accepted.  Every override is checked against every platform of the scenario
before anything runs, so a typo fails at once with one line.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt, ValidationError, field_validator

from whatif.scenarios.errors import ScenarioError
from whatif.scenarios.registry import study_kinds
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.platform import load_platform
from whatif.simulator.schema import format_validation_error, load_toml, split_assignment

SCENARIO_SCHEMA_VERSION = 1
MAX_RUNS = 100_000          # planned runs of one scenario, checked before any is built


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
    binaries: PositiveInt = 1
    sweep: dict[str, list[Any]] = {}
    variants: dict[str, dict[str, Any]] = {"baseline": {}}

    @field_validator("name")
    @classmethod
    def _plain_file_name(cls, name: str) -> str:
        # the default results directory is results/<name>: a name must not climb out of it or nest
        if name in (".", "..") or any(c in name for c in "/\\\0") or name.startswith("."):
            raise ValueError(f"must be a plain file name (no '/', '\\', leading '.'), got {name!r}")
        return name

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
    seed: int = 0                 # the replicate seed: page placement, timer phase, OS noise
    workload: str | None = None
    program_seed: int = 0         # binary and input
    binary: int = 0


    def identity(self) -> dict[str, Any]:
        ident = {"run": self.id, "variant": self.variant, "platform": self.platform}
        if self.workload is not None:
            ident["workload"] = self.workload
        extra = {"binary": self.binary} if self.binary else {}
        return {**ident, **self.sweep, **extra, "replicate": self.replicate}


def _strip_prefix(key: str) -> str:
    return key[len("platform."):] if key.startswith("platform.") else key


def load_scenario(path: str | Path, seed: int | None = None) -> tuple[Scenario, Path]:
    path = Path(path)
    try:
        raw = load_toml(path)
    except SimulatorInputError as exc:
        raise ScenarioError(str(exc)) from None
    try:
        scenario = Scenario.model_validate(raw)
    except ValidationError as exc:
        raise ScenarioError(format_validation_error(exc, str(path))) from None
    if scenario.schema_version != SCENARIO_SCHEMA_VERSION:
        raise ScenarioError(f"{path}: schema_version {scenario.schema_version} is not supported "
                            f"(this whatif reads version {SCENARIO_SCHEMA_VERSION})")
    check_run_limit(scenario, str(path))          # first: before the study kinds load or anything is built
    check_platforms(scenario, str(path))
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


def program_seeds(scenario: Scenario) -> list[int]:
    """The program seed of each binary: the scenario seed itself, then seeds drawn from it."""
    drawn = np.random.SeedSequence([scenario.seed, 1]).spawn(scenario.binaries - 1)
    return [int(scenario.seed)] + [int(s.generate_state(1)[0]) for s in drawn]


def replicate_seeds(scenario: Scenario) -> list[int]:
    """One seed per replicate, shared by every variant, platform and binary (common random numbers:
    what-if comparisons are not blurred by different page placements or OS-noise phases)."""
    return [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(scenario.seed).spawn(scenario.replicates)]


def planned_runs(scenario: Scenario) -> int:
    points = math.prod(len(v) for v in scenario.sweep.values())     # exact: no int64 wrap-around
    return (len(scenario.variants) * len(scenario.platforms) * points * max(1, len(scenario.workloads))
            * scenario.binaries * scenario.replicates)


def check_run_limit(scenario: Scenario, source: str) -> None:
    """Refuse a scenario that plans more than :data:`MAX_RUNS` runs: counted, never allocated."""
    n = planned_runs(scenario)
    if n > MAX_RUNS:
        raise ScenarioError(f"{source}: the scenario plans {n:,} runs (variants x platforms x sweep points x "
                            f"workloads x binaries x replicates); the limit is {MAX_RUNS:,}")


def check_platforms(scenario: Scenario, source: str) -> None:
    """Every platform of the scenario loads (an unknown name lists the known ones)."""
    for i, platform in enumerate(scenario.platforms):
        try:
            load_platform(platform)
        except SimulatorInputError as exc:
            raise ScenarioError(f"{source}: platforms[{i}]: {exc}") from None


def expand_runs(scenario: Scenario, source: str, extra_overrides: list[str] = ()) -> list[Run]:
    """Every run of the scenario, with all overrides validated against every platform first."""
    check_run_limit(scenario, source)
    try:
        cli = [split_assignment(item) for item in extra_overrides]
    except SimulatorInputError as exc:
        raise ScenarioError(f"{source}: --set: {exc}") from None
    check_platforms(scenario, source)
    sweep_keys = list(scenario.sweep)
    for key, values in scenario.sweep.items():
        if not values:
            raise ScenarioError(f"{source}: sweep.{key}: needs at least one value")
    points = [dict(zip(sweep_keys, combo)) for combo in itertools.product(*scenario.sweep.values())] or [{}]
    runs: list[Run] = []
    rep_seeds = replicate_seeds(scenario)
    programs = program_seeds(scenario)
    for variant, overrides in scenario.variants.items():
        for platform in scenario.platforms:
            for point in points:
                for where, items in ((f"variants.{variant}", overrides.items()), ("sweep", point.items()),
                                     ("--set", cli)):
                    try:
                        load_platform(platform, tuple((_strip_prefix(k), v) for k, v in items),
                                      label="--set" if where == "--set" else "override")
                    except SimulatorInputError as exc:
                        raise ScenarioError(f"{source}: {where}: {exc}") from None
                ov = tuple((_strip_prefix(k), v) for k, v in [*overrides.items(), *point.items(), *cli])
                try:
                    load_platform(platform, ov, label="the overrides together:")
                except SimulatorInputError as exc:
                    raise ScenarioError(f"{source}: variants.{variant}: {exc}") from None
                for workload in scenario.workloads or [None]:
                    for binary, program_seed in enumerate(programs):
                        for rep in range(scenario.replicates):
                            label = variant if len(scenario.platforms) == 1 else f"{variant}@{platform}"
                            if workload is not None:
                                label = f"{workload}:{label}"
                            if point:
                                label += "[" + ",".join(f"{k}={v}" for k, v in point.items()) + "]"
                            if scenario.binaries > 1:
                                label += f"/b{binary}"
                            if scenario.replicates > 1:
                                label += f"#{rep}"
                            runs.append(Run(id=label, variant=variant, platform=platform, overrides=ov,
                                            sweep=dict(point), replicate=rep, seed=rep_seeds[rep],
                                            workload=workload, program_seed=program_seed, binary=binary))
    return runs
