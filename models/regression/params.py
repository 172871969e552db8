"""Parameter constraints declared as data, checked at the start of ``fit`` (scikit-learn style).

Each constraint is a small object with ``check(value) -> bool`` and a ``must`` text for the one
message template of :func:`models.errors.constraint_error`.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from whatif.models.errors import constraint_error


@dataclass(frozen=True)
class Options:
    """The value is one of a fixed set."""

    values: tuple

    @property
    def must(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)

    def check(self, value: Any) -> bool:
        for v in self.values:
            if isinstance(v, str):
                ok = isinstance(value, str) and value == v
            elif isinstance(v, numbers.Integral):
                ok = isinstance(value, numbers.Integral) and not isinstance(value, bool) and value == v
            else:
                ok = value == v
            if ok:
                return True
        return False


@dataclass(frozen=True)
class Interval:
    """A real or integer number in a range; ``closed`` says which ends are included."""

    kind: type
    low: float | None
    high: float | None
    closed: str = "both"  # "both" | "left" | "right" | "neither"

    @property
    def must(self) -> str:
        name = "an int" if self.kind is int else "a float"
        lo_b = "[" if self.closed in ("both", "left") else "("
        hi_b = "]" if self.closed in ("both", "right") else ")"
        lo = "-inf" if self.low is None else repr(self.low)
        hi = "inf" if self.high is None else repr(self.high)
        return f"{name} in the range {lo_b}{lo}, {hi}{hi_b}"

    def check(self, value: Any) -> bool:
        if isinstance(value, bool):
            return False
        if self.kind is int and not isinstance(value, numbers.Integral):
            return False
        if self.kind is float and not isinstance(value, numbers.Real):
            return False
        if self.low is not None:
            if value < self.low or (value == self.low and self.closed in ("right", "neither")):
                return False
        if self.high is not None:
            if value > self.high or (value == self.high and self.closed in ("left", "neither")):
                return False
        return True


@dataclass(frozen=True)
class Boolean:
    must: str = "a bool"

    def check(self, value: Any) -> bool:
        return isinstance(value, bool)


@dataclass(frozen=True)
class NoneOr:
    """``None`` or a value satisfying ``inner``."""

    inner: Any

    @property
    def must(self) -> str:
        return f"None or {self.inner.must}"

    def check(self, value: Any) -> bool:
        return value is None or self.inner.check(value)


@dataclass(frozen=True)
class StrSequence:
    """A list or tuple of strings."""

    must: str = "a list of str"

    def check(self, value: Any) -> bool:
        return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)


def validate_params(owner: str, params: Mapping[str, Any], constraints: Mapping[str, Any]) -> None:
    """Raise :class:`~models.errors.ModelInputError` for the first parameter that breaks its constraint."""
    for name, value in params.items():
        constraint = constraints[name]
        if not constraint.check(value):
            raise constraint_error(name, owner, constraint.must, value)


def unknown_params(owner: str, given: Iterable[str], known: Iterable[str]) -> None:
    known = list(known)
    for name in given:
        if name not in known:
            raise constraint_error("keyword", owner, "one of " + ", ".join(known), name)
