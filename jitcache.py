"""Stale numba caches across modules, and loading cached kernels without numba's registry refresh.

A neutral module (it imports numba only), so that the simulator's kernels and the engines' (``models/``,
which never import the simulator) load the same way.

numba's ``cache=True`` keys a function's cached machine code on its own source file only, but a kernel
also carries the code and constants it calls or inlines from other modules (the core's timing kernel
inlines the memory hierarchy's fast paths): edit ``memory/caches.py`` and the cached timing kernel would
keep running the old cache code.  So the modules whose code ends up in one kernel form a group, and
when any file of the group changes, the cached machine code of the whole group is dropped (each process
checks once, when the group's last module is imported).

Loading one cached kernel makes numba refresh its target context first: it imports and installs every
typing and lowering registry it has (linear algebra with scipy, random generators, typed containers,
...): about 0.3 s, a third of a short ``whatif cachesim``'s 0.86 s start-up.  Rebuilding a cached kernel
needs none of that, only the runtime (NRT) its code allocates through; a compilation refreshes the context
in full anyway (numba's compiler does, before typing).  So a group's kernels load through
:class:`RegistryFreeCache`.

Saving a compiled kernel, numba reads the function's index, names a data file after the entries it holds, writes
the file, then the index: two processes that compile two signatures of one function at once (the test suite's
workers, a command and its compile helper: ``scenarios/kernels.py``) can both read the same index, name the same
data file and each overwrite the other's, leaving an index entry whose data is the other signature's code.  So
:class:`RegistryFreeCache` saves under an exclusive lock of the function's index (``flock``, where there is one).
"""

from __future__ import annotations

import hashlib
import os
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Iterable, Iterator

try:
    import fcntl
except ImportError:                      # (not on Windows: saves there are as numba makes them)
    fcntl = None

from numba.core.caching import FunctionCache
from numba.core.dispatcher import Dispatcher
from numba.core.runtime import rtsys


# the two private steps of numba's Cache.load_overload that the class below reuses (numba 0.68 has them; a
# numba without them keeps its own loading)
_LOAD_STEPS = all(hasattr(FunctionCache, step) for step in ("_load_overload", "_guard_against_spurious_io_errors"))


class RegistryFreeCache(FunctionCache):
    """numba's function cache, loading without the registry refresh: a hit initialises only the
    runtime; a miss returns None and numba compiles, refreshing the context as it always does."""

    def load_overload(self, sig, target_context):
        rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)

    def save_overload(self, sig, data):
        """numba's save, one process at a time per function (module docstring)."""
        with self._index_locked():
            super().save_overload(sig, data)

    @contextmanager
    def _index_locked(self) -> Iterator[None]:
        index = getattr(getattr(self, "_cache_file", None), "_index_path", None)      # (numba 0.68's names)
        if fcntl is None or index is None or not self._enabled:
            yield
            return
        try:
            self._impl.locator.ensure_cache_path()
            fd = os.open(index + ".lock", os.O_CREAT | os.O_RDWR, 0o644)
        except OSError:
            yield                        # (a cache numba cannot write either: its save fails as it always did)
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)                 # (releases the lock)


def sources_digest(files: Iterable[Path]) -> str:
    """The digest of the files' contents, in the order given: any byte changed in any of them changes it."""
    return hashlib.sha1(b"".join(f.read_bytes() for f in files)).hexdigest()


def drop_stale_caches(group: str, modules: tuple[ModuleType, ...]) -> None:
    """Flush every cached dispatcher of ``modules`` unless their sources are those the group's stamp
    file records; then record them.  Their caches load through :class:`RegistryFreeCache` (when this numba
has the steps it reuses)."""
    digest = sources_digest(Path(m.__file__) for m in modules)
    cached = [d._cache for m in modules for d in vars(m).values()
              if isinstance(d, Dispatcher) and d.__module__ == m.__name__ and isinstance(d._cache, FunctionCache)]
    if not cached:
        return
    if _LOAD_STEPS:
        for cache in cached:
            cache.__class__ = RegistryFreeCache
    stamp = Path(cached[-1].cache_path) / f"whatif_{group}_kernels.sha1"
    try:
        if stamp.read_text() == digest:
            return
    except OSError:
        pass
    for cache in cached:
        cache.flush()
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(digest)
    except OSError:
        pass
