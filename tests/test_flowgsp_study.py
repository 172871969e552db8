"""The ``flowgsp`` study kind: profiled variants mined with FlowGSP, the seed's patterns side by side, the
large-page what-if against the baseline; on a reduced copy of a scenario."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from whatif.models.flowgsp.profile_db import read_sqlite
from whatif.scenarios.runner import run_scenario_file
from whatif.scenarios.render.flowgsp import SEED_PATTERNS, pattern_text
from kernel_groups import recorded_steps

SHIPPED = Path(__file__).resolve().parents[1] / "scenarios" / "websphere-z10.toml"
LOADED: list[str] = []                   # the kernel steps the study fixture's run loaded


def reduced() -> str:
    """The shipped scenario at a fraction of its length: fewer instructions, denser samples, 3 generations."""
    text = SHIPPED.read_text()
    # (600 k measured instructions: at 300 k, <(Branchmispredict, Icachemiss)> sat at 1.0-1.3 % support
    # against the 1 % minimum and came and went with the program's draws; 2.7 % at 600 k)
    for key, value in (("instructions", "600_000"), ("warmup", "300_000"), ("sample_every", "256"),
                       ("generations", "3")):
        text, n = re.subn(rf"^{key} = [0-9_]+", f"{key} = {value}", text, flags=re.M)
        assert n == 1, key
    return text.replace("[flowgsp]", "[flowgsp]\nworkers = 1")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("flowgsp")
    path = tmp / "fg.toml"
    path.write_text(reduced())
    with recorded_steps(LOADED):
        done = run_scenario_file(path, out=tmp / "out", progress=False)
    return done, json.loads((tmp / "out" / "results.json").read_text())


def test_the_synthesiser_core_profiler_and_miner_load_before_the_runs(study):
    assert LOADED == ["synthesiser", "core timing", "profiler", "FlowGSP miner"]


def test_every_run_is_profiled_mined_and_compared(study):
    done, doc = study
    assert list(doc["runs"]) == ["websphere/was:baseline", "websphere/was:large-pages"]
    for run in doc["runs"].values():
        assert set(run["patterns"]) == {pattern_text(e) for e, _, _ in SEED_PATTERNS}
        assert run["mined_sequences"] > 0 and run["top_by_sm"][0]["sm"] >= run["top_by_sm"][-1]["sm"]
        assert 0 < run["icache_cycle_share"] < 1 and run["requests"] > 0
    (cmp_,) = doc["comparisons"]
    base, large = doc["runs"]["websphere/was:baseline"], doc["runs"]["websphere/was:large-pages"]
    assert cmp_["itlb_misses_change_pct"] == pytest.approx(100 * (large["itlb_misses"] - base["itlb_misses"])
                                                          / base["itlb_misses"])
    assert large["itlb_misses"] < 0.1 * base["itlb_misses"]         # 1 MB code pages: a handful of ITLB entries
    # ... and the L1I's sequential prefetch is no longer cut at every 4 KB
    assert cmp_["l1i_misses_change_pct"] < -1.0 and large["l1i_misses"] < base["l1i_misses"]
    assert base["patterns_found"] >= 3


def test_the_profiles_are_written_and_mine_again(study):
    done, _ = study
    out = done.out_dir
    efg = read_sqlite(out / "websphere_was_baseline_profile.sqlite")
    assert efg.describe()["vertices"] > 90_000
    patterns = pd.read_parquet(out / "patterns.parquet")
    assert list(patterns.columns[:4]) == ["variant", "pattern", "where", "seed_sm"] and len(patterns) == 10


def test_the_headline_sets_the_variants_side_by_side(study):
    done, _ = study
    metrics = set(done.output.headline.metric)
    assert {"ITLB misses", "L1I misses", "cycles per request", "I-cache share of cycles"} <= metrics
    assert {f"S_M {pattern_text(e)}" for e, _, _ in SEED_PATTERNS} <= metrics
