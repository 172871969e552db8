"""Fuzz inputs for every reader of user input: valid shipped files and fixtures, mutated.

Shared by ``tests/test_fuzz_readers.py`` (hypothesis drives the random choices, a few dozen inputs a
reader) and ``tests/benchmarks/fuzz_readers.py`` (a ``random.Random`` per input, 10^5 inputs a reader).
A generator takes a ``random.Random`` (or hypothesis's stand-in for one) and returns a case: file name
-> bytes.  It starts from a valid input -- a shipped platform, workload, scenario or vector file, a
fixture of ``tests/badinput/fixtures.py``, a synthetic trace, a small generated table -- and applies one
to a few mutations, textual and structural (:mod:`fuzzgen.mutations`), chosen so that most inputs get
past the first syntax check and reach the checks behind it; the generators of :mod:`fuzzgen.readers`
also change a SQLite profile's cells, rows, columns and tables, and a ``.wtr`` file's blocks (their
CRCs made right again, so that the decoder reads them).

Each :class:`Reader` parses a case as whatif does (``parse``) and names the one user error of its layer
(``error``); :func:`outcome` says ``"parsed"`` or ``"user error"`` and lets any other exception -- a
crash -- propagate.  Generators draw few random numbers (bulk randomness comes from a seed drawn once),
so that hypothesis can shrink what it finds.
"""

from fuzzgen.readers import READERS, Case, Reader, describe, outcome, write_case

__all__ = ["READERS", "Case", "Reader", "describe", "outcome", "write_case"]
