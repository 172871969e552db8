"""Errors raised by the analysis engines for bad user input (tables, graphs, parameters).

The CLI maps :class:`ModelInputError` to exit code 2 and prints its message as one line.
"""


class ModelInputError(ValueError):
    """Input that an engine cannot analyse; the message names the column, row or parameter."""


def shown(value: object) -> str:
    """``repr`` of a cell for a message, numpy scalars as the plain numbers and strings they hold
    (``nan``, ``'x'``; never ``np.float64(nan)``)."""
    item = getattr(value, "item", None)
    if callable(item) and type(value).__module__ == "numpy":
        value = item()
    return repr(value)


def constraint_error(param: str, owner: str, must: str, got: object) -> ModelInputError:
    """The one message template for parameter constraints (scikit-learn style)."""
    return ModelInputError(f"The '{param}' parameter of {owner} must be {must}. Got {shown(got)} instead.")
