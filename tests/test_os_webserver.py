"""The SimPy web server: SPECweb99-like clients, pre-forked workers, every request's primitives on the core
model; log-then-assert tests of the timelines, the truss against seed 003's tables, and bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from whatif.models.hbench.vector_files import read_vectors, seed_vectors
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.os.webserver import cache_simulation, load_webserver, paired_speed, run_server
from whatif.simulator.platform import load_platform

FAST = load_webserver().model_copy(update={"clients": load_webserver().clients.model_copy(
    update={"line_kbit_s": (8000.0, 10000.0)})})


@pytest.fixture(scope="module")
def static_run():
    log: list = []
    run = run_server(load_platform("westmere"), {"static": 1.0}, clients=40, workers=40, requests=600,
                     warmup_requests=100, seed=3, spec=FAST, log=log)
    return run, log


def test_the_timeline_log(static_run):
    """Log then assert: every request is logged once by its client, and ends after it arrives."""
    run, log = static_run
    assert len(log) >= 700
    assert all(end > arrival for _, _, arrival, end in log)
    per_client = {}
    for who, _, arrival, end in log:
        per_client.setdefault(who, []).append((arrival, end))
    for events in per_client.values():            # a client's requests follow one another, never overlap
        assert all(a2 >= e1 for (_, e1), (a2, _) in zip(events, events[1:]))


def test_requests_table_is_contract_6(static_run):
    run, _ = static_run
    r = run.requests
    assert list(r.columns) == ["client", "seq", "worker", "type", "bytes", "new_connection", "arrival",
                               "connected", "start", "served", "end", "cpu_seconds", "kernel_seconds", "primitives"]
    assert len(r) == 600
    assert not r.duplicated(["client", "seq"]).any()
    for _, g in r.groupby("client"):                  # a client's requests are numbered in the order it asked
        assert (g.sort_values("arrival")["seq"].diff().dropna() > 0).all()
    assert (r.connected >= r.arrival).all() and (r.start > r.connected).all()
    assert (r.served > r.start).all() and (r.end > r.served).all()
    assert (r.arrival[~r.new_connection] == r.connected[~r.new_connection]).all()
    assert (r.cpu_seconds > 0).all()
    # a worker serves one connection at a time: its requests never overlap
    for _, g in r.sort_values("start").groupby("worker"):
        assert (g.start.to_numpy()[1:] >= g.end.to_numpy()[:-1]).all()
    s = run.summary
    assert s["throughput"] == pytest.approx(len(r) / s["seconds"])
    assert 0 < s["cpu_utilisation"] <= 1.0 + 1e-9
    assert s["latency_p50"] <= s["latency_p95"] <= s["latency_p99"]


def test_the_window_counts_requests_served_so_long_transfers_are_not_missed():
    """At SPECweb99's line speeds a 900 KB file is on the wire for ~20 s, far longer than a window of a few
    hundred requests: counted when served, the measured requests are a fair sample of the file set
    (mean 14,726 bytes), every one of them completes, and the service demand is busy time over requests."""
    run = run_server(load_platform("harpertown"), {"static": 1.0}, clients=300, workers=300, requests=1500,
                     warmup_requests=300, seed=5)
    r = run.requests
    assert r["end"].notna().all() and len(r) == 1500
    assert r["bytes"].mean() == pytest.approx(14726, rel=0.15)
    assert r["end"].max() - r["served"].max() > 1.0              # transfers outlived the window
    s = run.summary
    assert s["service_demand_s"] == pytest.approx(s["cpu_utilisation"] * s["seconds"] / s["requests"])
    assert s["service_demand_s"] == pytest.approx(s["cpu_seconds_per_request"], rel=0.05)


def test_waiting_for_a_worker_counts_in_the_latency():
    """Fewer workers than clients (Apache's MaxClients): a connection's first request waits in the listen
    queue, and that wait is part of what the client sees."""
    run = run_server(load_platform("nehalem"), {"static": 1.0}, clients=30, workers=3, requests=300,
                     warmup_requests=30, seed=4, spec=FAST)
    r = run.requests
    first = r[r.new_connection]
    assert (first.connected > first.arrival).mean() > 0.5
    assert r.worker.nunique() == 3


def test_the_truss_is_the_seeds_application_vector(static_run):
    """The per-request counts of Table 6-2 (tcp_connect: the new connections' share; bytes: the files')."""
    run, _ = static_run
    truss = run.truss.set_index("primitive")["count"]
    seed = read_vectors(seed_vectors("os"), seed_vectors("os")).applications
    table = seed[seed.application == "static"].set_index("primitive")["count"]
    for prim in ("tcp_latency", "stat", "open_close", "mmap", "fcntl", "signal_handler_install", "file_write",
                 "other"):
        assert truss[prim] == pytest.approx(table[prim], rel=0.01), prim
    assert 0.2 < truss["tcp_connect"] < 0.6                          # persistent connections: 0.37 expected
    assert truss["tcp_transfer"] == pytest.approx(run.requests["bytes"].mean(), rel=1e-9)
    assert truss["mmap_read"] == truss["tcp_transfer"]


def test_cgi_and_fastcgi_trusses_follow_tables_6_3_to_6_5():
    for rtype, tables in (("cgi", ("cgi_parent", "cgi_child")), ("fastcgi", ("fastcgi",))):
        run = run_server(load_platform("nehalem"), {rtype: 1.0}, clients=8, workers=8, requests=40, seed=1,
                         spec=FAST)
        truss = run.truss.set_index("primitive")["count"]
        seed = read_vectors(seed_vectors("os"), seed_vectors("os")).applications
        table = seed[seed.application.isin(tables)].groupby("primitive")["count"].sum()
        assert set(truss.index) == set(table.index)
        for prim in table.index:
            if prim not in ("tcp_connect", "tcp_transfer", "pipe_read", "socket_rw", "file_read"):
                assert truss[prim] == pytest.approx(table[prim]), (rtype, prim)
        extra = {"tcp_transfer": 294 if rtype == "cgi" else 370, "file_read": 0}
        assert truss["tcp_transfer"] == pytest.approx(run.requests["bytes"].mean() + extra["tcp_transfer"])


def test_the_same_seed_gives_the_same_run():
    a = run_server(load_platform("z10"), {"static": 0.8, "fastcgi": 0.2}, clients=6, requests=50, seed=7, spec=FAST)
    b = run_server(load_platform("z10"), {"static": 0.8, "fastcgi": 0.2}, clients=6, requests=50, seed=7, spec=FAST)
    pd.testing.assert_frame_equal(a.requests, b.requests)
    c = run_server(load_platform("z10"), {"static": 0.8, "fastcgi": 0.2}, clients=6, requests=50, seed=8, spec=FAST)
    assert not a.requests["bytes"].equals(c.requests["bytes"])


def test_runs_of_one_seed_serve_every_client_the_same_files():
    """Common random numbers: a client's k-th request is the same file on another platform and under another
    mix (CGI there where the other mix has FastCGI), however differently the runs are timed; so two runs'
    throughputs differ by the platforms, not by two samples of the file set."""
    def files(platform, dyn):
        run = run_server(load_platform(platform), {"static": 0.7, dyn: 0.3}, clients=6, requests=60,
                         warmup_requests=0, seed=5, spec=FAST)
        r = run.requests.sort_values("seq")
        assert (r.groupby("client")["seq"].first() == 1).all()
        return {c: list(zip(g["bytes"], g["type"])) for c, g in r.groupby("client")}

    a, b = files("nehalem", "cgi"), files("mpc7447a", "fastcgi")
    assert set(a) == set(b)
    compared = 0
    for c in a:
        n = min(len(a[c]), len(b[c]))
        assert [size for size, _ in a[c][:n]] == [size for size, _ in b[c][:n]]
        assert [t.replace("cgi", "fastcgi") if t == "cgi" else t for _, t in a[c][:n]] == [t for _, t in b[c][:n]]
        compared += n
    assert compared >= 40
    assert any(t == "cgi" for seq in a.values() for _, t in seq)
    # (one stream per run, drawn in the order the server met the requests, gave two runs different files)


def test_requests_interfere_in_the_caches():
    """The same primitive costs more per call in the server, where other requests ran in between, than
    in a loop of itself (the vector model's context-independence, §3.1.1.2, measured)."""
    from whatif.simulator.os.kernel import Kernel
    from whatif.simulator.os.microbench import MicrobenchSettings, measure

    p = load_platform("nehalem")
    run = run_server(p, {"static": 1.0}, clients=20, workers=20, requests=300, warmup_requests=50, seed=2, spec=FAST)
    served = run.in_context.set_index("primitive")
    loop = measure(Kernel(p), "stat", MicrobenchSettings(repetitions=3, min_ticks=20))
    assert served.loc["stat", "cost"] > 1.2 * loop["cost"]


@pytest.mark.parametrize("kwargs, fragment", [
    ({"mix": {"static": 0.5, "cgi": 0.4}}, "sum to 1"),
    ({"mix": {"ssi": 1.0}}, "unknown request type 'ssi'"),
    ({"clients": 0}, "clients: must be >= 1"),
    ({"requests": 0}, "requests: must be >= 1"),
])
def test_bad_input(kwargs, fragment):
    args = {"mix": {"static": 1.0}, "clients": 2, "requests": 5, **kwargs}
    with pytest.raises(SimulatorInputError, match=fragment):
        run_server(load_platform("nehalem"), args["mix"], args["clients"], args["requests"], spec=FAST)


def test_a_bad_step_in_the_description_is_named(tmp_path):
    text = (load_webserver.__defaults__[0]).read_text().replace('["stat", "1", "server"]', '["statx", "1", "server"]', 1)
    path = tmp_path / "ws.toml"
    path.write_text(text)
    with pytest.raises(SimulatorInputError, match=r"types\.static\.steps\.3: unknown primitive 'statx'"):
        load_webserver(path)


def test_a_description_of_another_format_version_is_one_line(tmp_path):
    path = tmp_path / "ws.toml"
    path.write_text((load_webserver.__defaults__[0]).read_text().replace("schema_version = 1", "schema_version = 9"))
    with pytest.raises(SimulatorInputError, match=r"ws\.toml: schema_version 9 is not supported"):
        load_webserver(path)


def test_the_servers_trace_replayed_as_a_cache_simulation_counts_its_lines():
    """The hybrid's application side: the kernel's calls and user bursts, in the order the server ran
    them, replayed without timing on the same platform count the lines each primitive brought into every
    cache depth, and its page walks, in the measured window exactly as the timed server did (Westmere's L2
    pinned to no prefetch engines, which drop by time); on the 7447A, whose 512 KB L2 the same trace
    overflows, a call brings far more lines into its last level than on Westmere."""
    westmere = load_platform("westmere", ["l2.prefetch_engines=0"])
    run = run_server(westmere, {"static": 1.0}, clients=20, workers=20, requests=150, warmup_requests=50,
                     seed=4, spec=FAST, trace=True)
    assert 0 < run.trace_window[0] < run.trace_window[1] == len(run.trace)
    assert {kind for kind, *_ in run.trace} == {"call", "user"}
    cache = cache_simulation(westmere, run.trace, run.trace_window, seed=4).set_index("primitive")
    timed = run.in_context.set_index("primitive")
    levels = ["lines_L1I+L1D", "lines_L2", "lines_L3", "lines_walks"]
    assert [c for c in cache.columns if c.startswith("lines_")] == levels
    assert (cache["calls"] == timed["calls"]).all() and (timed[levels].sum() > 0).all()
    assert (cache[levels] == timed[levels]).all().all()
    g4 = cache_simulation(load_platform("mpc7447a"), run.trace, run.trace_window, seed=4).set_index("primitive")
    assert g4.loc["tcp_connect", "lines_L2"] > 10 * max(1, cache.loc["tcp_connect", "lines_L3"])


def _requests(cpu, clients=10):
    n = len(cpu)
    return pd.DataFrame({"client": np.arange(n) % clients, "seq": np.arange(n) // clients + 1, "cpu_seconds": cpu})


def test_paired_speed_of_a_uniformly_faster_run_is_exact():
    x = np.random.default_rng(0).lognormal(0.0, 1.0, 500)
    r = paired_speed(_requests(x), _requests(x / 1.25))
    assert r["ratio"] == pytest.approx(1.25) and r["se"] == pytest.approx(0.0, abs=1e-6) and r["resolved"]
    r = paired_speed(_requests(x), _requests(x))
    assert r["ratio"] == 1.0 and not r["resolved"]
    # only the requests both runs measured are compared: a request of b's alone does not count
    b = pd.concat([_requests(x / 1.25), pd.DataFrame({"client": [99], "seq": [1], "cpu_seconds": [1e9]})])
    assert paired_speed(_requests(x), b)["ratio"] == pytest.approx(1.25)
    with pytest.raises(SimulatorInputError, match="share 0 measured"):
        paired_speed(_requests(x), _requests(x).assign(client=-1))


def test_paired_speeds_95_percent_interval_covers_the_planted_ratio_95_percent_of_the_time():
    """Run b serves every request 1.04x faster than a, times per-request noise of 10 % (the platforms' cache
    luck), on file-size-like demands (log-normal, CV > 1): the interval holds 1.04 in about 95 % of
    400 replicates (binomial 3-sigma band 91.7-98.3 %), and pairing makes it far narrower than the
    runs' own standard errors."""
    rng = np.random.default_rng(11)
    covered, widths = 0, []
    for _ in range(400):
        x = rng.lognormal(0.0, 1.0, 600)
        y = x / 1.04 * rng.lognormal(0.0, 0.1, 600)
        r = paired_speed(_requests(x), _requests(y))
        truth = 1.04 * np.exp(-0.1 ** 2 / 2)       # E[x] / E[y], E[y] = E[x] / 1.04 * E[lognormal(0, 0.1)]
        covered += r["ci_low"] <= truth <= r["ci_high"]
        widths.append(r["se"] / r["ratio"])
    assert 0.917 <= covered / 400 <= 0.983
    own_se = np.sqrt(np.exp(1.0) - 1) / np.sqrt(600)   # a log-normal(0, 1) mean's relative standard error
    assert np.median(widths) < own_se / 5
