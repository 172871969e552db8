"""whatif: simulation-backed what-if modelling for processor and JVM performance analysis.

Installed, the project owns one import package, ``whatif`` (this directory): ``whatif.simulator``
produces measurements, ``whatif.models`` analyses them, ``whatif.scenarios`` runs studies and
``whatif.cli`` is the command line.
"""

from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("whatif")
except _metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree that is not installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
