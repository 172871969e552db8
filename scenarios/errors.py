"""Errors raised while loading or running a scenario (schema violations, bad overrides, missing files).

The CLI maps :class:`ScenarioError` to exit code 2 and prints its message as one line.
"""


class ScenarioError(ValueError):
    """A scenario or command input that cannot be run; the message names the file and field."""
