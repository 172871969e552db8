"""Stale numba caches across modules (``simulator/jitcache.py``): numba keys a kernel's cached machine code
on its own source file, so a kernel that inlines a helper from another module keeps the helper's old code
after the helper's file changes; a ``drop_stale_caches`` group drops it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

HELPER = "from numba import njit\n\n\n@njit(cache=True)\ndef h(x):\n    return x + {inc}\n"
KERNEL = textwrap.dedent("""\
    import sys
    from numba import njit
    import helper
    {group_import}


    @njit(cache=True)
    def k(x):
        return helper.h(x) * 2


    {group_call}
    """)


def kernel_result(where: Path, module: str) -> int:
    """``module.k(1)`` in a fresh process (so each run loads the caches from disk)."""
    out = subprocess.run([sys.executable, "-c", f"import {module}; print({module}.k(1))"], cwd=where,
                         capture_output=True, text=True, check=True)
    return int(out.stdout)


def test_a_group_drops_a_kernel_whose_inlined_helper_changed(tmp_path):
    (tmp_path / "helper.py").write_text(HELPER.format(inc=1))
    (tmp_path / "grouped.py").write_text(KERNEL.format(
        group_import="from whatif.simulator.jitcache import drop_stale_caches",
        group_call='drop_stale_caches("probe", (helper, sys.modules[__name__]))'))
    (tmp_path / "plain.py").write_text(KERNEL.format(group_import="", group_call=""))
    assert kernel_result(tmp_path, "grouped") == kernel_result(tmp_path, "plain") == (1 + 1) * 2   # cached now
    (tmp_path / "helper.py").write_text(HELPER.format(inc=10))
    # without a group numba serves the kernel compiled against the old helper (what the groups are for) ...
    assert kernel_result(tmp_path, "plain") == (1 + 1) * 2
    # ... with one, the kernel is recompiled against the new helper
    assert kernel_result(tmp_path, "grouped") == (1 + 10) * 2
