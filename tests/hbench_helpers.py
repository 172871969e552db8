"""Planted microbenchmark tables and profiles for the HBench:JGC tests (known cost functions)."""

from __future__ import annotations

import numpy as np
import pandas as pd

MB = 1024 * 1024
SIZES = np.arange(12, 133, 8)
A, B = 2e-4, 3.75e-3 / MB                          # C_fixed = A + B h (seconds, per byte)
C_LIVE = 7e-7 + 6e-9 * np.minimum(SIZES, 60)       # rises to 60 bytes, flat after
C_DEAD = 3e-7 + 4e-9 * np.minimum(SIZES, 60)
C_REF, C_VISIT = 5e-9, 3e-9


def c_live(s):
    return np.interp(s, SIZES, C_LIVE)


def c_dead(s):
    return np.interp(s, SIZES, C_DEAD)


def microbench(counts=(100_000, 200_000, 300_000), connectivity=True) -> pd.DataFrame:
    rows = []
    for h in (16, 32, 64):
        rows.append({"step": "empty", "heap_bytes": h * MB, "object_size": 28, "objects": 1000,
                     "gc_seconds": A + B * h * MB, "purpose": "fixed"})
    heap = 64 * MB
    base = A + B * heap
    for s, cl, cd in zip(SIZES, C_LIVE, C_DEAD):
        for n in counts:
            rows.append({"step": "live", "heap_bytes": heap, "object_size": s, "objects": n, "gc_seconds": base + cl * n,
                         "purpose": "size", "memory_reads": n * min(s + 4, 64) / 64})
            rows.append({"step": "dead", "heap_bytes": heap, "object_size": s, "objects": n, "gc_seconds": base + cd * n,
                         "purpose": "size", "memory_reads": n * min(s + 4, 64) / 64})
    if connectivity:
        n = 100_000
        cl = c_live(28)
        rows.append({"step": "live", "heap_bytes": heap, "object_size": 28, "objects": n, "fields": 2, "fan_in": 1,
                     "gc_seconds": base + (cl + C_REF) * n, "purpose": "fanout"})
        rows.append({"step": "live", "heap_bytes": heap, "object_size": 28, "objects": n, "fields": 2, "fan_in": 2,
                     "gc_seconds": base + (cl + C_REF + C_VISIT) * n, "purpose": "fanin"})
    df = pd.DataFrame(rows)
    for col, default in (("fields", 1), ("fan_in", 1)):
        df[col] = df[col].fillna(default) if col in df else default
    return df


def profile_tables(n_gc=12, seed=1, heap=32 * MB, explicit=(), copied=()):
    rng = np.random.default_rng(seed)
    logs, hists = [], []
    sizes = np.array([12, 20, 28, 60, 100, 132, 500])
    for gc in range(n_gc):
        nl = rng.integers(0, 3000, len(sizes))
        nd = rng.integers(0, 30000, len(sizes))
        refs = int(nl.sum() * 1.7)
        visits = int(nl.sum() * 1.2)
        cp = 2_000_000 if gc in copied else 0
        t = (A + B * heap + (c_live(np.minimum(sizes, 132)) * nl).sum() + (c_dead(np.minimum(sizes, 132)) * nd).sum()
             + C_REF * (refs - nl.sum()) + C_VISIT * (visits - nl.sum()) + cp / 1e8)
        logs.append({"gc": gc, "duration_s": t, "heap_bytes": heap, "live_objects": int(nl.sum()),
                     "dead_objects": int(nd.sum()), "explicit": gc in explicit, "bytes_copied": cp,
                     "compacted": cp > 0, "mark_visits": visits, "references_scanned": refs})
        hists.append(pd.DataFrame({"gc": gc, "object_size": sizes, "live": nl, "dead": nd}))
    return pd.DataFrame(logs), pd.concat(hists, ignore_index=True)


def assert_refused_at_load(text: str, edit: tuple[str, str], fragment: str, tmp_path) -> None:
    """A study scenario ``text`` with ``edit`` (old, new) applied fails at load with one line naming
    ``fragment`` (the study kinds' bad-input tests)."""
    import re

    import pytest

    from whatif.scenarios.errors import ScenarioError
    from whatif.scenarios.runner import load_study

    assert edit[0] in text
    path = tmp_path / "bad.toml"
    path.write_text(text.replace(edit[0], edit[1], 1))
    with pytest.raises(ScenarioError, match=re.escape(fragment)) as err:
        load_study(path)
    assert "\n" not in str(err.value)


def with_keys(text: str, values: dict[str, str]) -> str:
    """A scenario's ``text`` with each ``key = ...`` line (exactly one each) set to ``key = value``."""
    import re

    for key, value in values.items():
        text, n = re.subn(rf"^{key} = (\[[^\]]*\]|\S+)", f"{key} = {value}", text, flags=re.M)
        assert n == 1, key
    return text
