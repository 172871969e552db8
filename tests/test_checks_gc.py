"""The gc and hbench validation checks pass in quick mode."""

from __future__ import annotations

import pytest

from scenarios import checks_gc


@pytest.mark.parametrize("check", [checks_gc.empty_heap_linear, checks_gc.knee_at_line, checks_gc.out_of_memory,
                                   checks_gc.collections_vs_heap, checks_gc.planted_hbench])
def test_check_passes(check):
    results = check(True)
    assert results and all(r.passed for r in results), [r.as_dict() for r in results if not r.passed]
