"""The ``flowgsp`` study kind: profiled variants mined with FlowGSP, the seed's patterns side by side, the
large-page what-if against the baseline; on a reduced copy of a scenario."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from whatif.models.flowgsp.profile_db import read_sqlite
from whatif.scenarios.runner import run_scenario_file
from whatif.scenarios.render.flowgsp import SEED_PATTERNS, pattern_text

SCENARIO = """
schema_version = 1
name = "fg-small"
study = "flowgsp"
seed = 1
platforms = ["z10"]
workloads = ["specjvm98/javac"]

[flowgsp]
instructions = 200_000
warmup = 100_000
generations = 3
workers = 1

[variants.baseline]
[variants."large-pages"]
"memory.code_page_kb" = 1024
"""


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("flowgsp")
    path = tmp / "fg.toml"
    path.write_text(SCENARIO)
    done = run_scenario_file(path, out=tmp / "out", progress=False)
    return done, json.loads((tmp / "out" / "results.json").read_text())


def test_every_run_is_profiled_mined_and_compared(study):
    done, doc = study
    assert list(doc["runs"]) == ["specjvm98/javac:baseline", "specjvm98/javac:large-pages"]
    for run in doc["runs"].values():
        assert set(run["patterns"]) == {pattern_text(e) for e, _, _ in SEED_PATTERNS}
        assert run["mined_sequences"] > 0 and run["top_by_sm"][0]["sm"] >= run["top_by_sm"][-1]["sm"]
        assert 0 < run["icache_cycle_share"] < 1 and run["requests"] > 0
    (cmp_,) = doc["comparisons"]
    base, large = doc["runs"]["specjvm98/javac:baseline"], doc["runs"]["specjvm98/javac:large-pages"]
    assert cmp_["itlb_misses_change_pct"] == pytest.approx(100 * (large["itlb_misses"] - base["itlb_misses"])
                                                          / base["itlb_misses"])
    assert large["itlb_misses"] < base["itlb_misses"]               # 1 MB code pages: a handful of ITLB entries


def test_the_profiles_are_written_and_mine_again(study):
    done, _ = study
    out = done.out_dir
    efg = read_sqlite(out / "specjvm98_javac_baseline_profile.sqlite")
    assert efg.describe()["vertices"] > 100_000
    patterns = pd.read_parquet(out / "patterns.parquet")
    assert list(patterns.columns[:4]) == ["variant", "pattern", "where", "seed_sm"] and len(patterns) == 10


def test_the_headline_sets_the_variants_side_by_side(study):
    done, _ = study
    metrics = set(done.output.headline.metric)
    assert {"ITLB misses", "L1I misses", "cycles per request", "I-cache share of cycles"} <= metrics
    assert {f"S_M {pattern_text(e)}" for e, _, _ in SEED_PATTERNS} <= metrics
