"""Errors raised by the simulator for bad user input (platform files, traces, overrides).

The CLI maps :class:`SimulatorInputError` to exit code 2 and prints its message as one line.
"""


class SimulatorInputError(ValueError):
    """User input that the simulator cannot accept; the message names where and what."""


def constraint_error(param: str, owner: str, must: str, got: object) -> SimulatorInputError:
    """The one message template for parameter constraints (scikit-learn style)."""
    item = getattr(got, "item", None)
    if callable(item) and type(got).__module__ == "numpy":      # np.float64(nan) -> nan
        got = item()
    return SimulatorInputError(f"The '{param}' parameter of {owner} must be {must}. Got {got!r} instead.")
