"""The ``capacity`` study kind on a reduced copy of ``scenarios/webserver-capacity.toml``: curves against
offered load, the planner's operational-law and MVA cross-check, worker-pool sizing, what-ifs side by side;
bad input refused at load."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, strategies as st

from whatif.scenarios.runner import run_scenario_file
from whatif.scenarios.studies.capacity import GAP_COLUMNS, bound_gap, mva
from hbench_helpers import assert_refused_at_load, with_keys

SHIPPED = Path(__file__).resolve().parents[1] / "scenarios" / "webserver-capacity.toml"


def reduced() -> str:
    """The shipped scenario on LAN-speed clients (so tens of connections saturate the server instead of
    hundreds), two loads, a short window, two of its what-ifs."""
    text = with_keys(SHIPPED.read_text(), {"clients": "[4, 40]", "requests": "400", "p95_objective_s": "0.15",
                                           "objective_clients": "40", "worker_counts": "[4, 40]"})
    text = text.replace("[capacity]\n", "[capacity]\nline_kbit_s = [8000, 10000]\n")
    head, *what_ifs = text.split("[[capacity.what_if]]")
    keep = [w for w in what_ifs if 'name = "fastcgi"' in w or 'name = "harpertown"' in w]
    assert len(keep) == 2
    return head + "".join("[[capacity.what_if]]" + w for w in keep)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("capacity")
    path = tmp / "cap.toml"
    path.write_text(reduced())
    done = run_scenario_file(path, out=tmp / "out", progress=False)
    return done, json.loads((tmp / "out" / "results.json").read_text())


def test_curves_rise_to_the_cpu_bound(study):
    done, doc = study
    assert list(doc["runs"]) == ["baseline", "baseline / fastcgi",
                                 "baseline / harpertown"]
    base = doc["runs"]["baseline"]
    light, heavy = base["curve"]
    assert light["clients"] == 4 and heavy["clients"] == 40
    assert light["cpu_utilisation"] < 0.5 and heavy["cpu_utilisation"] > 0.95
    assert base["saturated_loads"] == [40]
    # the planner's cross-check: the saturated throughput against 1/D measured at light load
    assert abs(base["saturation_vs_bound_pct"]) < 10
    assert base["saturation_throughput"] == pytest.approx(heavy["throughput"])
    # at light load the server is a delay: X = N / (D + Z) and MVA agree with the measurement
    assert light["throughput"] == pytest.approx(4 / (1e-6 * base["demand_us"] + base["think_s"]), rel=0.1)
    assert light["mva_throughput"] == pytest.approx(light["throughput"], rel=0.1)
    assert heavy["latency_p95"] > light["latency_p95"]
    # the saturated window against the bound, factor by factor: their product is the whole
    gap, = base["saturation_gap"]
    assert gap["clients"] == 40 and gap["vs_bound_pct"] == pytest.approx(base["saturation_vs_bound_pct"])
    assert math.prod(1 + gap[k] / 100 for k in GAP_COLUMNS[1:]) == pytest.approx(1 + gap["vs_bound_pct"] / 100)
    assert -5 < gap["gap_utilisation_pct"] <= 1e-9
    assert heavy["share_static"] + heavy["share_cgi"] == pytest.approx(1)
    # a window holding more of the costly CGI requests than the mix's 15 % serves fewer: a negative draw
    assert (heavy["share_cgi"] > 0.15) == (gap["gap_draw_pct"] < 0)


def test_what_ifs_side_by_side(study):
    done, doc = study
    rows = {r["what_if"]: r for r in doc["what_if"]}
    assert set(rows) == {"(baseline)", "fastcgi", "harpertown"}
    assert rows["(baseline)"]["capacity_change_pct"] == 0
    # FastCGI: no fork+exec per dynamic request, far less CPU per request, more capacity
    assert rows["fastcgi"]["demand_us"] < 0.6 * rows["(baseline)"]["demand_us"]
    assert rows["fastcgi"]["capacity_change_pct"] > 50
    # measured again on the requests both runs served at the load both saturate (the same files, CGI ones
    # FastCGI in the what-if): the paired change agrees with the whole-window one and carries its interval
    fast = rows["fastcgi"]
    assert fast["paired_requests"] >= 200
    assert fast["ci95_low_pct"] < fast["capacity_change_paired_pct"] < fast["ci95_high_pct"]
    assert fast["capacity_change_paired_pct"] == pytest.approx(fast["capacity_change_pct"], rel=0.15)
    assert rows["(baseline)"]["capacity_change_paired_pct"] is None and rows["(baseline)"]["paired_requests"] == 0
    # another platform: Harpertown does not saturate at 40 clients; its capacity is its bound 1/D
    harp = doc["runs"]["baseline / harpertown"]
    assert harp["saturated_loads"] == [] and harp["saturation_throughput"] is None
    assert rows["harpertown"]["capacity_change_pct"] == pytest.approx(
        100 * (rows["harpertown"]["bound_throughput"] / rows["(baseline)"]["saturation_throughput"] - 1))
    assert rows["harpertown"]["capacity_change_paired_pct"] is None      # no load saturates both
    assert rows["harpertown"]["capacity_change_pct"] > 200


def test_the_worker_pool_is_sized_for_the_objective(study):
    done, doc = study
    base = doc["runs"]["baseline"]
    sizing = {s["workers"]: s["latency_p95"] for s in base["sizing"]}
    # 4 workers for 40 connections: the listen queue.  (40 workers' p95 of 400 requests moves with the file
    # draw: 0.102 s with the clients' own streams, under 0.1 s with the server-wide one before; the reduced
    # objective is 0.15 s, clear of both sides.)
    assert sizing[4] > 2 * 0.15 and sizing[40] <= 0.15
    assert base["workers_needed"] == 40


def test_tables_figure_report_and_headline(study):
    done, doc = study
    out = done.out_dir
    curves = pd.read_parquet(out / "curves.parquet")
    assert len(curves) == 6 and {"mva_throughput", "bound_throughput", "demand_us", "think_s"} <= set(curves.columns)
    assert (out / "curves.png").is_file()
    html = (out / "report.html").read_text()
    assert "Planner&#x27;s cross-check" in html or "Planner's cross-check" in html
    assert "draw of types (%)" in html and "window edges (%)" in html
    # where the host's time went: one entry per server run (the sizing run at 40 workers is the curve's)
    rates = done.output.rates
    pieces = [k for k in rates if k.startswith("host_seconds[")]
    assert len(pieces) == 7 and "host_seconds[baseline 40 clients 4 workers]" in rates
    assert rates["worker_seconds"] == pytest.approx(sum(rates[k] for k in pieces))
    assert 0 < rates["wall_seconds"] < rates["worker_seconds"]
    metrics = list(dict.fromkeys(done.output.headline.metric))
    assert metrics[0] == "saturation throughput (req/s)"
    assert "saturation vs bound (%)" in done.output.headline_absolute


def test_bound_gap_splits_a_planted_window_exactly():
    """A window of 100 requests, 20 of them CGI against the mix's 15 %, each type 2 % dearer than at light
    load, 1 % of the busy time carried by no request of the window, the CPU 97 % busy."""
    light = {"static": 0.4e-3, "cgi": 6e-3}
    mix = {"static": 0.85, "cgi": 0.15}
    d0 = 0.85 * light["static"] + 0.15 * light["cgi"]
    window = {t: 1.02 * v for t, v in light.items()}
    d_req = (80 * window["static"] + 20 * window["cgi"]) / 100
    d_w = d_req / 0.99
    summary = {"throughput": 0.97 / d_w, "cpu_utilisation": 0.97, "service_demand_s": d_w,
               "cpu_seconds_per_request": d_req}
    g = bound_gap(summary, window, {"static": 80, "cgi": 20}, mix, d0)
    assert g["gap_utilisation_pct"] == pytest.approx(-3)
    assert g["gap_interference_pct"] == pytest.approx(100 * (1 / 1.02 - 1))
    assert g["gap_draw_pct"] == pytest.approx(100 * (1.02 * d0 / d_req - 1)) and g["gap_draw_pct"] < -10
    assert g["gap_edges_pct"] == pytest.approx(-1)
    assert g["vs_bound_pct"] == pytest.approx(100 * (0.97 * 0.99 * d0 / d_req - 1))   # X D0 = U D0 / D_w
    assert g["share_cgi"] == 0.2 and g["demand_nominal_mix_us"] == pytest.approx(1e6 * 1.02 * d0)
    # a type of the mix the window did not serve: no mix-weighted demand, so no interference or draw
    g = bound_gap(summary, {"static": window["static"]}, {"static": 100}, mix, d0)
    assert g["gap_draw_pct"] is None and g["gap_interference_pct"] is None and g["share_cgi"] == 0


@given(u=st.floats(0.01, 1), x_per=st.floats(0.5, 2), d0=st.floats(1e-5, 1e-2), a=st.floats(1e-5, 1e-2),
       b=st.floats(1e-5, 1e-2), n_a=st.integers(1, 1000), n_b=st.integers(1, 1000), share=st.floats(0.01, 0.99))
def test_bound_gap_factors_multiply_to_the_whole(u, x_per, d0, a, b, n_a, n_b, share):
    d_req = (n_a * a + n_b * b) / (n_a + n_b)
    d_w = d_req * x_per
    summary = {"throughput": u / d_w, "cpu_utilisation": u, "service_demand_s": d_w, "cpu_seconds_per_request": d_req}
    g = bound_gap(summary, {"s": a, "c": b}, {"s": n_a, "c": n_b}, {"s": 1 - share, "c": share}, d0)
    assert math.prod(1 + g[k] / 100 for k in GAP_COLUMNS[1:]) == pytest.approx(1 + g["vs_bound_pct"] / 100, rel=1e-9)


def test_mva_is_exact_for_one_queue_and_one_delay():
    """Exact MVA against its closed forms: one customer sees no queue; many saturate at 1/D."""
    x = mva(0.01, 0.09, 200)
    assert x[0] == pytest.approx(1 / 0.1)
    assert x[-1] == pytest.approx(100, rel=1e-6)
    assert np.all(np.diff(x) > -1e-9) and np.all(x <= np.minimum(np.arange(1, 201) / 0.1, 100) + 1e-9)


@pytest.mark.parametrize("edit, fragment", [
    (("clients = [4, 40]", "clients = [0, 40]"), "clients"),
    (("clients = [4, 40]", "clients = [40, 4]"), "clients must increase"),
    (("mix = { static = 0.85, cgi = 0.15 }", "mix = { static = 0.85, cgi = 0.25 }"), "sum to 1"),
    (("mix = { static = 0.85, cgi = 0.15 }", "mix = { static = 0.85, ssi = 0.15 }"), "unknown request type 'ssi'"),
    (('mix = { static = 0.85, fastcgi = 0.15 }', 'primitive_scale = { forkexec = 0.5 }'),
     "unknown primitive 'forkexec'"),
    (('mix = { static = 0.85, fastcgi = 0.15 }', 'primitive_scale = { proc_simple = -1 }'), "must be in (0, 1000]"),
    (('platform = "harpertown"', 'platform = "pentium9"'), "pentium9"),
])
def test_bad_input_is_refused_at_load(tmp_path, edit, fragment):
    assert_refused_at_load(reduced(), edit, fragment, tmp_path)


@pytest.mark.parametrize("edit, fragment", [
    (("clients = [4, 40]", "clients = [0, 40]"), "capacity: clients.0: Input should be greater than 0"),
    (("mix = { static = 0.85, cgi = 0.15 }", "mix = { static = 0.5, cgi = 0.15 }"), "sum to 1"),
])
def test_whatif_run_refuses_bad_input_in_one_line_and_writes_nothing(tmp_path, edit, fragment):
    from typer.testing import CliRunner

    from whatif.cli import app

    path = tmp_path / "bad.toml"
    path.write_text(reduced().replace(edit[0], edit[1], 1))
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(out)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("whatif: error: ") and fragment in lines[0], result.stderr
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["bad.toml"]
