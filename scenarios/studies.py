"""Name-keyed registry of study kinds.

A study kind is a class with ``sections`` (the extra scenario tables it reads)
and ``run(context) -> StudyOutput``.  Modules are imported on first use, so
``whatif list`` stays fast.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pandas as pd

# study kind -> "module:Class"
STUDY_MODULES = {
    "cachesim": "whatif.scenarios.cachesim_study:CachesimStudy",
    "simulate": "whatif.scenarios.simulate_study:SimulateStudy",
    "hbench-gc": "whatif.scenarios.hbench_study:HbenchGcStudy",
    "regression": "whatif.scenarios.regression_study:RegressionStudyKind",
    "similarity": "whatif.scenarios.similarity_study:SimilarityStudy",
}


@dataclass
class StudyContext:
    scenario: Any                 # scenarios.scenario.Scenario
    runs: list                    # list[scenarios.scenario.Run]
    source: str                   # the scenario file, for messages
    base_dir: Path                # relative paths in the scenario resolve here
    progress: bool = True
    executor: Any = None          # scenarios.executor.Executor


@dataclass
class StudyOutput:
    """What a study hands the runner: tables, figures, the results document, report sections."""
    results: dict[str, Any]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)          # name -> (figure, caption)
    report: Callable[[Any], None] | None = None                       # fills a scenarios.report.Report
    rates: dict[str, float] = field(default_factory=dict)
    parameters: dict[str, Any] = field(default_factory=dict)


def study_kinds() -> dict[str, type]:
    out = {}
    for kind, target in STUDY_MODULES.items():
        module, _, cls = target.partition(":")
        out[kind] = getattr(importlib.import_module(module), cls)
    return out
