"""The one vocabulary of parameter constraints of the analysis engines (scikit-learn style).

Every engine declares ``_parameter_constraints``, a dict from each public ``__init__`` parameter to one of
the constraints below, and checks it at the start of ``fit`` with :func:`validate_params`.  A broken
constraint raises :class:`~models.errors.ModelInputError` with the one message template of
:func:`models.errors.constraint_error`: "The 'x' parameter of Y must be Z. Got W instead.", where Z is
the constraint's ``must`` text.

====================================  ===============================================================
``Interval(int, 0, 16)``              an integer in [0, 16]
``Interval(float, 0, 2, "neither")``  a number in the open interval (0, 2) (ints accepted, NaN never)
``Interval(int, 1, None)``            an integer >= 1
``Options(("a", "b"))``               one of 'a', 'b' (strings compared as strings, ints as ints)
``Boolean()``                         a bool (not 0, 1 or "true")
``String(nonempty=True)``             a non-empty str
``Pattern(regex, description)``       a str the regular expression matches in full
``ListOf(item, nonempty=False)``      a list or tuple whose items each satisfy ``item``
``NoneOr(inner)``                     None or what ``inner`` accepts
====================================  ===============================================================

Each constraint also gives :meth:`Constraint.invalid`, a value it rejects, so that one common test
(``tests/test_models_params.py``) can check every parameter of every engine.
"""

from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass
from typing import Any, ClassVar, Iterable, Mapping

from whatif.models.errors import constraint_error

__all__ = ["Boolean", "Constraint", "Interval", "ListOf", "NoneOr", "Options", "Parameterised", "Pattern", "String",
           "unknown_params", "validate_params"]


class Constraint:
    """What a parameter must be: ``check(value)``, the ``must`` text and a rejected value."""

    @property
    def must(self) -> str:
        raise NotImplementedError

    def check(self, value: Any) -> bool:
        raise NotImplementedError

    def invalid(self) -> Any:
        """A value this constraint rejects (for the common parameter test)."""
        raise NotImplementedError


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


@dataclass(frozen=True)
class Interval(Constraint):
    """An integer (``kind=int``) or a real number (``kind=float``; ints accepted, NaN never) in a range;
    ``None`` bounds are unbounded; ``closed`` says which ends are included."""

    kind: type
    low: float | None
    high: float | None
    closed: str = "both"  # "both" | "left" | "right" | "neither"

    def __post_init__(self) -> None:
        if self.kind not in (int, float):
            raise TypeError(f"Interval kind must be int or float, got {self.kind!r}")
        if self.closed not in ("both", "left", "right", "neither"):
            raise ValueError(f"Interval closed must be 'both', 'left', 'right' or 'neither', got {self.closed!r}")

    def _bound(self, v: float) -> str:
        return str(int(v)) if self.kind is int else f"{v:g}"

    @property
    def must(self) -> str:
        noun = "an integer" if self.kind is int else "a number"
        lo_in = self.closed in ("both", "left")
        hi_in = self.closed in ("both", "right")
        if self.low is None and self.high is None:
            return noun
        if self.high is None:
            return f"{noun} {'>=' if lo_in else '>'} {self._bound(self.low)}"
        if self.low is None:
            return f"{noun} {'<=' if hi_in else '<'} {self._bound(self.high)}"
        if not lo_in and not hi_in:
            return f"{noun} in the open interval ({self._bound(self.low)}, {self._bound(self.high)})"
        return f"{noun} in {'[' if lo_in else '('}{self._bound(self.low)}, {self._bound(self.high)}{']' if hi_in else ')'}"

    def check(self, value: Any) -> bool:
        if not (_is_int(value) if self.kind is int else _is_real(value)):
            return False
        if self.kind is float and math.isnan(value):
            return False
        if self.low is not None:
            if value < self.low or (value == self.low and self.closed in ("right", "neither")):
                return False
        if self.high is not None:
            if value > self.high or (value == self.high and self.closed in ("left", "neither")):
                return False
        return True

    def invalid(self) -> Any:
        if self.low is not None:
            return self.kind(self.low) - 1
        if self.high is not None:
            return self.kind(self.high) + 1
        return 0.5 if self.kind is int else float("nan")


@dataclass(frozen=True)
class Options(Constraint):
    """One of a fixed set; strings compare as strings, ints as ints (never a bool)."""

    values: tuple

    @property
    def must(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)

    def check(self, value: Any) -> bool:
        for v in self.values:
            if isinstance(v, str):
                ok = isinstance(value, str) and value == v
            elif _is_int(v):
                ok = _is_int(value) and value == v
            else:
                ok = value == v
            if ok:
                return True
        return False

    def invalid(self) -> Any:
        if all(isinstance(v, str) for v in self.values):
            return "-".join(self.values) + "-x"
        return max(v for v in self.values if _is_int(v)) + 1 if any(_is_int(v) for v in self.values) else object()


@dataclass(frozen=True)
class Boolean(Constraint):
    """``True`` or ``False`` (not 0, 1 or a string)."""

    @property
    def must(self) -> str:
        return "a bool"

    def check(self, value: Any) -> bool:
        return isinstance(value, bool)

    def invalid(self) -> Any:
        return "true"


@dataclass(frozen=True)
class String(Constraint):
    """A str; ``nonempty`` refuses ``""``."""

    nonempty: bool = False

    @property
    def must(self) -> str:
        return "a non-empty str" if self.nonempty else "a str"

    def check(self, value: Any) -> bool:
        return isinstance(value, str) and (value != "" or not self.nonempty)

    def invalid(self) -> Any:
        return "" if self.nonempty else 1


@dataclass(frozen=True)
class Pattern(Constraint):
    """A str the regular expression ``regex`` matches in full; ``description`` is the ``must`` text."""

    regex: str
    description: str

    @property
    def must(self) -> str:
        return self.description

    def check(self, value: Any) -> bool:
        return isinstance(value, str) and re.fullmatch(self.regex, value, re.S) is not None

    def invalid(self) -> Any:
        return "" if not self.check("") else 1


@dataclass(frozen=True)
class ListOf(Constraint):
    """A list or tuple whose items each satisfy ``item``; ``nonempty`` refuses an empty one."""

    item: Constraint
    nonempty: bool = False

    @property
    def must(self) -> str:
        return f"a {'non-empty ' if self.nonempty else ''}list whose items are each {self.item.must}"

    def check(self, value: Any) -> bool:
        return (isinstance(value, (list, tuple)) and (len(value) > 0 or not self.nonempty)
                and all(self.item.check(v) for v in value))

    def invalid(self) -> Any:
        return [self.item.invalid()]


@dataclass(frozen=True)
class NoneOr(Constraint):
    """``None`` or a value satisfying ``inner``."""

    inner: Constraint

    @property
    def must(self) -> str:
        return f"None or {self.inner.must}"

    def check(self, value: Any) -> bool:
        return value is None or self.inner.check(value)

    def invalid(self) -> Any:
        return self.inner.invalid()


def validate_params(owner: str, params: Mapping[str, Any], constraints: Mapping[str, Constraint]) -> None:
    """Raise :class:`~models.errors.ModelInputError` for the first parameter that breaks its constraint."""
    for name, value in params.items():
        if name not in constraints:
            raise TypeError(f"{owner} declares no constraint for its parameter {name!r}")
        constraint = constraints[name]
        if not constraint.check(value):
            raise constraint_error(name, owner, constraint.must, value)


def unknown_params(owner: str, given: Iterable[str], known: Iterable[str]) -> None:
    """Raise for a keyword that is not a parameter of ``owner``."""
    known = list(known)
    for name in given:
        if name not in known:
            raise constraint_error("keyword", owner, "one of " + ", ".join(known), name)


class Parameterised:
    """Mixin of the engines: ``get_params`` and ``validate_params`` from ``_parameter_constraints``.

    ``__init__`` stores the parameters (attributes of the same names) and nothing else; ``fit`` calls
    :meth:`validate_params` first.
    """

    _parameter_constraints: ClassVar[dict[str, Constraint]] = {}

    def get_params(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._parameter_constraints}

    def validate_params(self) -> None:
        """Raise :class:`~models.errors.ModelInputError` naming the first parameter that breaks its constraint."""
        validate_params(type(self).__name__, self.get_params(), self._parameter_constraints)
