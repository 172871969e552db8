"""Kernel steps for tests/test_kernel_loading.py that its helper process can import (the tests' directory is on
the path the helper inherits).  A step "compiles" the first time any process runs it -- fires numba's
``numba:compile`` event, as a compilation does, and records which process did -- and "loads" later."""

from __future__ import annotations

import os
import time
from pathlib import Path

from numba.core import event


def fake_steps(folder: str, names: list[str], compile_seconds: dict[str, float], parent: int,
               wait_in_first: str = "", die_in_helper: str = "") -> list[tuple[str, object]]:
    """Steps ``names``; each run appends ``name pid`` to ``runs.log`` in ``folder``; a compile writes its pid
    into ``compiled-<name>`` and lasts ``compile_seconds[name]``.  The first step's compile lasts until the
    file ``wait_in_first`` appears (at most 60 s); in a process other than ``parent``, step ``die_in_helper``
    ends the process before compiling (the file ``helper-died`` says so)."""
    where = Path(folder)

    def make(name: str):
        def run():
            with open(where / "runs.log", "a") as log:
                log.write(f"{name} {os.getpid()}\n")
            if name == die_in_helper and os.getpid() != parent:
                (where / "helper-died").touch()
                os._exit(3)
            try:
                fd = os.open(where / f"compiled-{name}", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return                              # compiled before: a load from the cache
            with event.trigger_event("numba:compile", data={"dispatcher": None, "args": (), "return_type": None}):
                os.write(fd, str(os.getpid()).encode())
                os.close(fd)
                time.sleep(compile_seconds.get(name, 0.0))
                if name == names[0] and wait_in_first:
                    deadline = time.monotonic() + 60
                    while not (where / wait_in_first).exists() and time.monotonic() < deadline:
                        time.sleep(0.02)
            (where / f"finished-{name}").touch()
        return run
    return [(name, make(name)) for name in names]


def small_graph():
    """A FlowGSP graph of three vertices (a cycle) for the helper's real-kernel test."""
    from whatif.models.flowgsp import EFG

    vertices = [{"id": v, "weight": w, "attributes": list(a)} for v, w, a in ((0, 3, "AB"), (1, 5, "B"), (2, 2, "AC"))]
    return EFG.from_methods([{"name": "m", "vertices": vertices, "edges": [[0, 1, 1], [1, 2, 1], [2, 0, 1]]}])
