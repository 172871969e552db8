"""One constraint vocabulary for every engine (models/params.py): nothing unconstrained, one message template."""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil
import re

import numpy as np
import pytest

import whatif.models
from whatif.models.errors import ModelInputError
from whatif.models.flowgsp import FlowGSP
from whatif.models.hbench import GcCostModel, GcTimePredictor, MicrobenchPlan
from whatif.models.hbench.vectors import VectorModel
from whatif.models.params import (Boolean, Interval, ListOf, NoneOr, Options, Parameterised, Pattern, String,
                                  validate_params)
from whatif.models.regression import RegressionStudy
from whatif.models.similarity import SimilarityEngine

ENGINES = [RegressionStudy, SimilarityEngine, FlowGSP, GcCostModel, GcTimePredictor, MicrobenchPlan, VectorModel]


def _model_classes() -> list[type]:
    classes = []
    for info in pkgutil.walk_packages(whatif.models.__path__, "whatif.models."):
        module = importlib.import_module(info.name)
        classes += [obj for _, obj in inspect.getmembers(module, inspect.isclass) if obj.__module__ == info.name]
    return classes


def test_every_estimator_like_class_uses_the_vocabulary():
    classes = _model_classes()
    declared = {c for c in classes if issubclass(c, Parameterised) and c is not Parameterised}
    assert declared == set(ENGINES)
    fitting = {c for c in classes if callable(getattr(c, "fit", None)) and inspect.isfunction(c.fit)}
    assert fitting <= set(ENGINES), fitting - set(ENGINES)


def _params(cls) -> list[str]:
    return [name for name in inspect.signature(cls).parameters]


def _cases():
    for cls in ENGINES:
        for name, constraint in cls._parameter_constraints.items():
            yield pytest.param(cls, name, constraint, id=f"{cls.__name__}.{name}")


@pytest.mark.parametrize("cls", ENGINES, ids=lambda c: c.__name__)
def test_every_public_parameter_has_a_constraint(cls):
    assert sorted(_params(cls)) == sorted(cls._parameter_constraints)
    assert all(not name.startswith("_") for name in _params(cls))


@pytest.mark.parametrize("cls", ENGINES, ids=lambda c: c.__name__)
def test_defaults_are_valid(cls):
    est = cls()
    est.validate_params()
    assert list(est.get_params()) == list(cls._parameter_constraints)
    for name, constraint in cls._parameter_constraints.items():
        assert constraint.check(getattr(est, name)), name


@pytest.mark.parametrize("cls, name, constraint", list(_cases()))
def test_a_wrong_value_is_named_with_the_one_template(cls, name, constraint):
    bad = constraint.invalid()
    assert not constraint.check(bad)
    message = f"The '{name}' parameter of {cls.__name__} must be {constraint.must}. Got {bad!r} instead."
    with pytest.raises(ModelInputError) as info:
        cls(**{name: bad}).validate_params()          # MicrobenchPlan raises on construction
    assert str(info.value) == message


@pytest.mark.parametrize("cls, name, constraint", [c for c in _cases() if c.values[0] is not MicrobenchPlan])
def test_fit_checks_the_parameters_before_reading_its_input(cls, name, constraint):
    est = cls(**{name: constraint.invalid()})
    required = [p for p in inspect.signature(est.fit).parameters.values()
                if p.default is inspect.Parameter.empty and p.kind is p.POSITIONAL_OR_KEYWORD]
    with pytest.raises(ModelInputError, match=f"^The '{name}' parameter of {cls.__name__} must be "):
        est.fit(*[None] * len(required))


@pytest.mark.parametrize("constraint, must", [
    (Interval(int, 0, 16), "an integer in [0, 16]"),
    (Interval(int, 1, None), "an integer >= 1"),
    (Interval(float, 0.0, 1.0), "a number in [0, 1]"),
    (Interval(float, 0.0, 2.0, "neither"), "a number in the open interval (0, 2)"),
    (Interval(float, 0.0, 1.0, "right"), "a number in (0, 1]"),
    (Interval(float, 0.0, None, "neither"), "a number > 0"),
    (Interval(float, None, 1e-2, "left"), "a number < 0.01"),
    (Options((1, 2, 3)), "one of 1, 2, 3"),
    (Options(("pooled", "separate")), "one of 'pooled', 'separate'"),
    (Boolean(), "a bool"),
    (String(nonempty=True), "a non-empty str"),
    (ListOf(Interval(int, 2, None)), "a list whose items are each an integer >= 2"),
    (NoneOr(ListOf(String(), nonempty=True)), "None or a non-empty list whose items are each a str"),
    (Pattern(r".*://.+", "a scheduler address"), "a scheduler address"),
])
def test_must_texts(constraint, must):
    assert constraint.must == must
    assert not constraint.check(constraint.invalid())


@pytest.mark.parametrize("constraint, good, bad", [
    (Interval(int, 0, 16), [0, 16, np.int64(3)], [-1, 17, 1.0, True, "3", None]),
    (Interval(float, 0.0, 2.0, "neither"), [1, 0.5, np.float64(1.9)], [0, 2, math.nan, True, "1"]),
    (Interval(float, 0.0, None, "neither"), [1e300, math.inf], [0.0, -1.0, math.nan]),
    (Options((1, 2)), [1, np.int64(2)], [True, 1.0, "1"]),
    (Options(("a",)), ["a"], ["A", 0, None]),
    (Boolean(), [True, False], [0, 1, "true", None]),
    (ListOf(String(nonempty=True), nonempty=True), [["x"], ("x", "y")], [[], "x", [""], [1], None]),
    (NoneOr(Interval(int, 1, None)), [None, 1], [0, "1"]),
    (Pattern(r".*://.+", "an address"), ["tcp://h:1"], ["h:1", "tcp://", 1]),
])
def test_checks(constraint, good, bad):
    assert all(constraint.check(v) for v in good)
    assert not any(constraint.check(v) for v in bad)


def test_validate_params_refuses_an_undeclared_parameter():
    with pytest.raises(TypeError, match="declares no constraint for its parameter 'b'"):
        validate_params("X", {"a": 1, "b": 2}, {"a": Interval(int, 0, None)})


def test_interval_declaration_errors():
    with pytest.raises(TypeError):
        Interval(str, 0, 1)
    with pytest.raises(ValueError, match=re.escape("closed must be")):
        Interval(int, 0, 1, "open")
