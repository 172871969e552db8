"""``LruCache`` against the obvious model: the keys in order of last use, the last ``capacity`` kept."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from whatif.simulator.lru import LruCache


@given(capacity=st.integers(1, 5), keys=st.lists(st.integers(0, 8), max_size=60))
def test_keeps_the_last_used_and_builds_only_what_it_lacks(capacity, keys):
    cache, kept, builds = LruCache(capacity), [], []
    for k in keys:
        expected_build = k not in kept
        n = len(builds)
        assert cache.get(k, lambda k=k: builds.append(k) or ("value", k)) == ("value", k)
        assert len(builds) == n + expected_build
        if k in kept:
            kept.remove(k)
        kept.append(k)
        del kept[:-capacity]
        assert len(cache) == len(kept) and all(key in cache for key in kept)


def test_capacity_must_be_positive():
    with pytest.raises(ValueError, match="capacity must be at least 1, got 0"):
        LruCache(0)
