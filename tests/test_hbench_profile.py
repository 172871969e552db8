"""Application profiles from GC logs and size histograms (simulated or measured): reading and checks."""

from __future__ import annotations

import pandas as pd
import pytest

from whatif.models.errors import ModelInputError
from whatif.models.hbench import AppProfile, read_table
from tests.hbench_helpers import MB, profile_tables


def test_from_tables_and_files(tmp_path):
    log, hist = profile_tables(n_gc=4)
    log.to_csv(tmp_path / "log.csv", index=False)
    hist.to_parquet(tmp_path / "hist.parquet")
    prof = AppProfile.read(tmp_path / "log.csv", tmp_path / "hist.parquet")
    assert prof.name == "log" and prof.collections == 4 and not prof.pooled_only
    sizes, nl, nd = prof.distribution(2)
    assert nl.sum() == log["live_objects"].iloc[2] and nd.sum() == log["dead_objects"].iloc[2]


def test_measured_units_and_defaults():
    log, hist = profile_tables(n_gc=3)
    measured = log[["gc", "live_objects", "dead_objects"]].assign(duration_ms=log["duration_s"] * 1e3,
                                                                  heap_mb=log["heap_bytes"] / MB)
    prof = AppProfile.from_tables(measured, hist)
    assert prof.log["actual_s"].tolist() == pytest.approx(log["duration_s"].tolist())
    assert not prof.log["explicit"].any() and not prof.log["compacted"].any()


@pytest.mark.parametrize("mutate_log, mutate_hist, message", [
    (lambda l: l.drop(columns=["live_objects"]), None, "missing column 'live_objects'"),
    (lambda l: l.drop(columns=["duration_s"]), None, "missing column 'duration_s' (or 'duration_ms')"),
    (lambda l: l.assign(gc=[0, 0, 1]), None, "row 2, column 'gc': collection 0 appears twice"),
    (lambda l: l.assign(dead_objects=[-1, 5, 5]), None, "row 1, column 'dead_objects': must be >= 0, got -1"),
    (lambda l: l.assign(explicit=["maybe", "no", "no"]), None, "row 1, column 'explicit': not a boolean ('maybe')"),
    (None, lambda h: h.assign(gc=h["gc"] + 10), "collection 10 is not in the GC log"),
    (None, lambda h: h.drop(columns=["dead"]), "needs 'live' and 'dead' columns, or a 'count' column"),
    (None, lambda h: h.assign(live=0, dead=0), "has 0 objects" if False else "but an empty size distribution"),
    (None, lambda h: h.iloc[0:0], "the object-size histogram is empty"),
])
def test_bad_profiles(mutate_log, mutate_hist, message):
    log, hist = profile_tables(n_gc=3)
    log = mutate_log(log) if mutate_log else log
    hist = mutate_hist(hist) if mutate_hist else hist
    with pytest.raises(ModelInputError) as err:
        AppProfile.from_tables(log, hist)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_read_table_errors(tmp_path):
    with pytest.raises(ModelInputError, match="no such file"):
        read_table(tmp_path / "missing.csv")
    bad = tmp_path / "bad.parquet"
    bad.write_text("not parquet")
    with pytest.raises(ModelInputError, match="cannot read the table"):
        read_table(bad)


def test_spacing_table():
    log, hist = profile_tables(n_gc=3)
    sp = pd.DataFrame({"gc": [0, 0, 2], "spacing": [20, 400, 60], "count": [5, 1, 7]})
    prof = AppProfile.from_tables(log, hist, spacing=sp)
    g, c = prof.live_spacing(0)
    assert g.tolist() == [20, 400] and c.tolist() == [5, 1]
    with pytest.raises(ModelInputError, match="spacing table: missing column 'count'"):
        AppProfile.from_tables(log, hist, spacing=sp.drop(columns=["count"]))
    with pytest.raises(ModelInputError, match="spacing table: collection 9 is not in the GC log"):
        AppProfile.from_tables(log, hist, spacing=sp.assign(gc=[0, 0, 9]))
