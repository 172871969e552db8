"""The validation harness behind ``whatif validate``: registered ground-truth checks.

A check is a function that takes ``quick: bool`` and returns one or more
:class:`CheckResult` rows (expected value, measured value, pass/fail).  Checks
are registered by name with :func:`register_check`; modules holding checks are
listed in ``CHECK_MODULES`` and imported on demand.
"""

from __future__ import annotations

import importlib
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterable

# Modules whose import registers checks.  Each subsystem keeps its checks next to its study code.
CHECK_MODULES: list[str] = [
    "whatif.scenarios.checks.core",
    "whatif.scenarios.checks.memory",
    "whatif.scenarios.checks.regression",
    "whatif.scenarios.checks.similarity",
    "whatif.scenarios.checks.similarity_sim",
    "whatif.scenarios.checks.identity",
    "whatif.scenarios.checks.flowgsp",
    "whatif.scenarios.checks.flowgsp_agi",
    "whatif.scenarios.checks.gc",
    "whatif.scenarios.checks.os",
    "whatif.scenarios.checks.smarts",
]


@dataclass(frozen=True)
class CheckResult:
    name: str
    expected: Any
    measured: Any
    passed: bool
    detail: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


CheckFn = Callable[[bool], "CheckResult | Iterable[CheckResult]"]
_REGISTRY: dict[str, CheckFn] = {}


def register_check(name: str) -> Callable[[CheckFn], CheckFn]:
    """Decorator: register ``fn(quick) -> CheckResult | iterable of CheckResult`` under ``name``."""

    def deco(fn: CheckFn) -> CheckFn:
        if name in _REGISTRY and _REGISTRY[name] is not fn:
            raise RuntimeError(f"validation check {name!r} registered twice")
        _REGISTRY[name] = fn
        return fn

    return deco


def registered_checks() -> dict[str, CheckFn]:
    for module in CHECK_MODULES:
        importlib.import_module(module)
    return dict(_REGISTRY)


def run_checks(quick: bool = False, only: Iterable[str] | None = None,
               progress: Callable[[str], None] | None = None) -> list[CheckResult]:
    checks = registered_checks()
    names = list(checks) if only is None else list(only)
    results: list[CheckResult] = []
    for name in names:
        if progress is not None:
            progress(name)
        out = checks[name](quick)
        results.extend([out] if isinstance(out, CheckResult) else list(out))
    return results
