"""Study kinds: a base class with typed sections, ``plan()`` and ``run(ctx)``, registered by name.

A study kind declares the scenario tables it reads as pydantic models (``sections``); they are validated
when the scenario loads, with :meth:`StudyKind.check` for what the schema cannot say (names that must
exist, sizes that must fit), so that a scenario that cannot run fails in the first second, before any
simulation.  :meth:`StudyKind.plan` sees the expanded runs (every override resolved against every
platform) and may refuse them; :meth:`StudyKind.run` does the work and returns a :class:`StudyOutput`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar

from pydantic import BaseModel, ValidationError

from whatif.scenarios.errors import ScenarioError
from whatif.simulator.schema import format_validation_error

if TYPE_CHECKING:
    import pandas as pd

STUDY_KINDS: dict[str, type["StudyKind"]] = {}


@dataclass
class StudyContext:
    scenario: Any                 # whatif.scenarios.scenario.Scenario
    runs: list                    # list[whatif.scenarios.scenario.Run]
    source: str                   # the scenario file, for messages
    base_dir: Path                # relative paths in the scenario resolve here
    progress: bool = True
    executor: Any = None          # whatif.scenarios.executor.Executor


@dataclass
class StudyOutput:
    """What a study hands the runner: tables, figures, the results document, report sections, and the
    headline -- one row per (metric, variant) with its ``value`` -- that the terminal shows side by side."""
    results: dict[str, Any]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)          # name -> (PNG bytes, caption)
    report: Callable[[Any], None] | None = None                       # fills a results.report.Report
    rates: dict[str, float] = field(default_factory=dict)
    parameters: dict[str, Any] = field(default_factory=dict)
    headline: pd.DataFrame | None = None                              # columns metric, variant, value
    headline_absolute: tuple[str, ...] = ()                           # metrics with no Δ% (errors, shares)
    files: dict[str, bytes] = field(default_factory=dict)             # other files of the run, by name


class StudyKind:
    """Base of every study kind.  Subclasses set ``name`` and ``sections`` and implement ``run``."""

    name: ClassVar[str] = ""
    sections: ClassVar[dict[str, type[BaseModel]]] = {}    # scenario table -> its model
    required_sections: ClassVar[tuple[str, ...]] = ()
    needs_workloads: ClassVar[bool] = False

    def __init__(self, scenario, source: str, base_dir: Path):
        self.scenario = scenario
        self.source = source
        self.base_dir = base_dir
        self.spec: dict[str, BaseModel] = {}
        for name, model in self.sections.items():
            raw = scenario.section(name)
            if raw is None and name in self.required_sections:
                raise ScenarioError(f"{source}: {name}: the {self.name} study needs a [{name}] table")
            try:
                self.spec[name] = model.model_validate(raw or {})
            except ValidationError as exc:
                raise ScenarioError(format_validation_error(exc, f"{source}: {name}")) from None
        if self.needs_workloads and not scenario.workloads:
            raise ScenarioError(f"{source}: workloads: the {self.name} study needs at least one workload")
        self.check()

    def check(self) -> None:
        """Load-time checks beyond the schema; no simulation."""

    def plan(self, runs: list) -> list:
        """Checks that need the expanded runs (platforms resolved with their overrides); returns the runs."""
        return runs

    def run(self, ctx: StudyContext) -> StudyOutput:  # pragma: no cover - every kind implements it
        raise NotImplementedError

    def fail(self, where: str, message: str) -> ScenarioError:
        """The one-line error of this scenario: ``FILE: where: message``."""
        return ScenarioError(f"{self.source}: {where}: {message}")


def register_study(cls: type[StudyKind]) -> type[StudyKind]:
    """Class decorator: make ``cls`` the study kind called ``cls.name``."""
    if not cls.name or cls.name in STUDY_KINDS:
        raise ValueError(f"study kind name {cls.name!r} is empty or taken")
    STUDY_KINDS[cls.name] = cls
    return cls


def study_kinds() -> dict[str, type[StudyKind]]:
    # imported here, not at the top: the study modules import this registry to register themselves
    importlib.import_module("whatif.scenarios.studies")
    return dict(STUDY_KINDS)
