"""Stale numba caches across modules.

numba's ``cache=True`` keys a function's cached machine code on its own source file only, but a kernel
also carries the code and constants it calls or inlines from other modules (the core's timing kernel
inlines the memory hierarchy's fast paths): edit ``memory/caches.py`` and the cached timing kernel would
keep running the old cache code.  So the modules whose code ends up in one kernel form a group, and
when any file of the group changes, the cached machine code of the whole group is dropped (each process
checks once, when the group's last module is imported).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import ModuleType

from numba.core.dispatcher import Dispatcher


def drop_stale_caches(group: str, modules: tuple[ModuleType, ...]) -> None:
    """Flush every cached dispatcher of ``modules`` unless their sources are those the group's stamp
    file records; then record them."""
    digest = hashlib.sha1(b"".join(Path(m.__file__).read_bytes() for m in modules)).hexdigest()
    cached = [d._cache for m in modules for d in vars(m).values()
              if isinstance(d, Dispatcher) and d.__module__ == m.__name__ and hasattr(d._cache, "cache_path")]
    if not cached:
        return
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
