"""Stale numba caches across modules (``jitcache.py``): numba keys a kernel's cached machine code
on its own source file, so a kernel that inlines a helper from another module keeps the helper's old code
after the helper's file changes; a ``drop_stale_caches`` group drops it.  A group's cached kernels load
without numba's registry refresh (``RegistryFreeCache``), and compiling still works after such a load; the
engines' kernels (``models/``) load that way too."""

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
        group_import="from whatif.jitcache import drop_stale_caches",
        group_call='drop_stale_caches("probe", (helper, sys.modules[__name__]))'))
    (tmp_path / "plain.py").write_text(KERNEL.format(group_import="", group_call=""))
    assert kernel_result(tmp_path, "grouped") == kernel_result(tmp_path, "plain") == (1 + 1) * 2   # cached now
    (tmp_path / "helper.py").write_text(HELPER.format(inc=10))
    # without a group numba serves the kernel compiled against the old helper (what the groups are for) ...
    assert kernel_result(tmp_path, "plain") == (1 + 1) * 2
    # ... with one, the kernel is recompiled against the new helper
    assert kernel_result(tmp_path, "grouped") == (1 + 10) * 2


ALLOCATING = textwrap.dedent("""\
    import sys
    import numpy as np
    from numba import njit
    from whatif.jitcache import drop_stale_caches


    @njit(cache=True)
    def k(n):
        a = np.empty(n, np.int64)          # allocates: needs numba's runtime
        s = 0
        for i in range(n):                 # (np.arange or a.sum() would make the cached code's
            a[i] = i                       # environment import numba's arraymath, and so linalg)
            s += a[i]
        return s


    drop_stale_caches("alloc", (sys.modules[__name__],))
    """)
# k's result, whether numba has loaded its linear-algebra registry (imported by the refresh, by nothing else
# here), and a function compiled after the load that needs the registries (np.linalg, np.random)
PROBE = ("import sys, numpy as np, alloc; from numba import njit; r = alloc.k(10); "
         "linalg = 'numba.np.linalg' in sys.modules; "
         "f = njit(lambda a: np.linalg.norm(a) + np.random.random() * 0); "
         "print(r, linalg, f(np.full(4, 2.0)))")


def test_a_cached_kernel_loads_without_the_registry_refresh_and_compiling_still_works(tmp_path):
    (tmp_path / "alloc.py").write_text(ALLOCATING)

    def probe() -> list[str]:
        out = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, capture_output=True, text=True,
                             check=True)
        return out.stdout.split()

    assert probe() == ["45", "True", "4.0"]       # compiled: numba refreshed its registries to compile k
    assert probe() == ["45", "False", "4.0"]      # loaded from the cache: no refresh, and f still compiles


# the engines' kernels: the minimum spanning tree (which inlines rank's pair_distance), k-means, FlowGSP
ENGINES = ("import sys, numpy as np; from numba.core.caching import FunctionCache; "
           "from whatif.jitcache import RegistryFreeCache; "
           "from whatif.models.similarity import mst, rank, kmeans; from whatif.models.flowgsp import kernel; "
           "x = np.arange(12.0).reshape(4, 3); r = mst._prim(x, False, 4); "
           "grouped = all(type(d._cache) is RegistryFreeCache for d in (mst._prim, mst.find_pair_at_least, "
           "rank.pair_distance, kmeans._kmns, kernel.count_supports)); "
           "print(round(float(r[1].sum()), 6), 'numba.np.linalg' in sys.modules, grouped)")


def test_the_engines_kernels_load_without_the_registry_refresh(tmp_path):
    import os

    from whatif.jitcache import _LOAD_STEPS

    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))

    def probe() -> list[str]:
        out = subprocess.run([sys.executable, "-c", ENGINES], capture_output=True, text=True, check=True,
                             env=env)
        return out.stdout.split()

    first = probe()                                # compiles _prim into the empty cache directory
    second = probe()                               # loads it
    assert first[0] == second[0] and first[2] == second[2] == str(_LOAD_STEPS)
    assert second[1] == str(not _LOAD_STEPS)


RACY = textwrap.dedent("""\
    import sys
    from numba import njit
    from whatif.jitcache import drop_stale_caches


    @njit(cache=True)
    def k(x):
        return x * 2


    drop_stale_caches("racy", (sys.modules[__name__],))
    """)
# racy.k compiled for one argument, numba pausing 2 s after each read of k's index: two of these started together
# both read the index before either writes it, unless their saves take turns
RACE = ("import sys, time, numba.core.caching as C; real = C.IndexDataCacheFile._load_index; "
        "C.IndexDataCacheFile._load_index = lambda self: (real(self), time.sleep(2.0))[0]; "
        "import racy; print(racy.k(eval(sys.argv[1])))")
LOAD = ("import racy; print(racy.k(3), racy.k(1.5), sum(racy.k.stats.cache_hits.values()), "
        "sum(racy.k.stats.cache_misses.values()))")


def test_two_processes_saving_two_signatures_of_a_kernel_at_once_keep_both(tmp_path):
    (tmp_path / "racy.py").write_text(RACY)
    racing = [subprocess.Popen([sys.executable, "-c", RACE, arg], cwd=tmp_path, stdout=subprocess.PIPE, text=True)
              for arg in ("3", "1.5")]
    assert [p.communicate(timeout=300)[0].split() for p in racing] == [["6"], ["3.0"]]
    out = subprocess.run([sys.executable, "-c", LOAD], cwd=tmp_path, capture_output=True, text=True, check=True)
    # both signatures load from the cache, each its own code: nothing compiled again
    assert out.stdout.split() == ["6", "3.0", "2", "0"]
