"""A SimPy web server on a simulated platform: Apache-1.3-style pre-forked workers serving SPECweb99-like
clients (seed 003 §6.2-6.3), every request's primitives executed on the core model in the order the
server issues them.

Timelines (SimPy processes, ``env`` first):

* :func:`client` -- one SPECweb99 connection after another: a persistent connection (share
  ``persistent_share`` of the requests, 5-15 requests) or one request; each request waits for the
  request's bytes to cross the client's line, the server's work, and the response's bytes back at the
  client's line speed (320-400 Kb/s), then the next request follows at once.  A client joins in the
  middle of a transfer (:meth:`WebServer.residual_transfer`), so the request stream starts steady.
* :func:`serve` -- a worker holds its connection (Apache 1.3: one connection per process); each
  request's steps (``webserver.toml``: kernel primitives, the server's and the CGI or FastCGI process's
  user-mode work) run on the one CPU in order, a process's consecutive steps in one burst (it keeps the
  CPU until it blocks on another process); bursts queue for the CPU in arrival order, and the core's
  caches, TLBs and predictors carry over from whatever ran before, so requests interfere for real.
  The worker then writes the response: it stays busy for the transfer at the client's line speed, the
  CPU does not.

The measurement (:func:`run_server`) counts requests when the server has *served* them (their last CPU
step done), not when their last byte reaches the client: a window closed by the k-th completion would
hold the short transfers and miss the long ones still on the wire (a 900 KB file at 360 Kb/s takes 20 s),
biasing the mix towards small files.  The window opens when ``warmup_requests`` have been served and
closes when ``requests`` more have; throughput, CPU utilisation and service demand (busy time over
requests served, the operational law's D = B/C) are those of the window.  Then the clients stop issuing
requests, requests not yet served are abandoned, and the measured ones finish their transfers, so
every measured request has its latency.

Outputs (contract 6): one row per request (the client and its request number ``seq``, the same file in
every run of the seed; arrival -- for a connection's first request, when the client
asked to connect, so waiting for a free worker counts --, connected, start of service after the request's
bytes crossed the line, served, end of the response's transfer, type, bytes, primitives, CPU seconds)
and the run's figures (throughput, latency percentiles, CPU utilisation), the "truss" of every
request type -- its application vector, primitive by primitive -- and each primitive's mean cost as the
server actually paid it (the system vector in context).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import simpy
from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt, field_validator

from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.os.kernel import Kernel
from whatif.simulator.os.primitives import load_primitives
from whatif.simulator.platform import Platform
from whatif.simulator.schema import load_versioned

WEBSERVER_FILE = Path(__file__).parent / "webserver.toml"
SCHEMA_VERSION = 1
CHANGELOG = {1: "initial web-server description (server, clients, files, request types)"}
FILES_BASE = 0x0000_4000_0000            # the file set in the page cache: a file every 1 MB
FILE_STRIDE = 1 << 20
PROCESS_SERVER, PROCESS_CHILD = 0, 2048  # user-process numbers: worker w is w, its CGI child 2048 + w
FASTCGI_PROCESS = 4000
PROGRAM_HTTPD, PROGRAM_CGI, PROGRAM_FASTCGI = 0, 1, 2   # user programs: their text is shared by their processes
SKB_POOL = 8                             # socket buffers in circulation: the slab allocator reuses hot ones (LIFO)
SATURATED = 0.95                         # CPU utilisation from which the server, not its clients, sets the pace
MAX_WORKERS = PROCESS_CHILD - 1          # worker numbers stay below their CGI children's
MAX_CLIENTS = 100_000                    # simulated connections (a SimPy process each); checked before any runs
MAX_REQUESTS = 10_000_000                # warm-up + measured requests of one run
USER_BUFFER = 0x0000_2000_0000           # a process's I/O buffer (16 MB apart)
USER_BUFFER_STRIDE = 1 << 24
_SIZE = re.compile(r"^(file|connect|\d+)(?:\+(\d+))?$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ServerSpec(_Strict):
    workers: int = Field(default=64, gt=0, le=MAX_WORKERS)
    user_data_kb: float = Field(default=24, ge=0)


class ClientSpec(_Strict):
    line_kbit_s: tuple[float, float] = (320, 400)
    persistent_share: float = Field(default=0.7, ge=0, le=1)
    requests_per_connection: tuple[PositiveInt, PositiveInt] = (5, 15)
    request_bytes: PositiveInt = 300

    @field_validator("line_kbit_s")
    @classmethod
    def _line(cls, v):
        if not 0 < v[0] <= v[1]:
            raise ValueError(f"must be [low, high] with 0 < low <= high, got {list(v)}")
        return v


class FileSpec(_Strict):
    class_shares: list[float] = [0.35, 0.50, 0.14, 0.01]
    class_base_bytes: list[PositiveInt] = [102, 1024, 10240, 102400]
    file_shares: list[float] = [0.039, 0.059, 0.088, 0.177, 0.353, 0.118, 0.071, 0.050, 0.044]
    directories: PositiveInt = 10


class RequestType(_Strict):
    user_instructions: NonNegativeInt = 0
    child_user_instructions: NonNegativeInt = 0
    steps: list[tuple[str, str, str]]


class WebServerSpec(_Strict):
    schema_version: int
    server: ServerSpec = ServerSpec()
    clients: ClientSpec = ClientSpec()
    files: FileSpec = FileSpec()
    types: dict[str, RequestType]


def load_webserver(path: str | Path = WEBSERVER_FILE) -> WebServerSpec:
    path = Path(path)
    spec = load_versioned(path, WebServerSpec, SCHEMA_VERSION, CHANGELOG)
    known = load_primitives()
    for tname, t in spec.types.items():
        for k, (prim, size, who) in enumerate(t.steps):
            where = f"{path}: types.{tname}.steps.{k}"
            if prim not in known:
                raise SimulatorInputError(f"{where}: unknown primitive {prim!r}; known: {', '.join(known)}")
            if _SIZE.match(size) is None:
                raise SimulatorInputError(f"{where}: size {size!r} must be a count, 'file', 'file+N' or 'connect'")
            if who not in ("server", "child"):
                raise SimulatorInputError(f"{where}: {who!r} must be 'server' or 'child'")
    return spec


def with_line_speed(spec: WebServerSpec, line_kbit_s) -> WebServerSpec:
    """The description with the clients' line speed replaced (None: as described)."""
    if line_kbit_s is None:
        return spec
    return spec.model_copy(update={"clients": spec.clients.model_copy(update={"line_kbit_s": tuple(line_kbit_s)})})


@dataclass
class Mix:
    """Shares of the request types (they sum to 1)."""
    shares: dict[str, float]

    def check(self, spec: WebServerSpec, where: str = "mix") -> None:
        unknown = [t for t in self.shares if t not in spec.types]
        if unknown:
            raise SimulatorInputError(f"{where}: unknown request type {unknown[0]!r}; known: {', '.join(spec.types)}")
        if any(v < 0 for v in self.shares.values()) or abs(sum(self.shares.values()) - 1.0) > 1e-6:
            raise SimulatorInputError(f"{where}: shares must be >= 0 and sum to 1, got {self.shares}")


@dataclass
class ServerRun:
    """What a run measured."""
    requests: pd.DataFrame
    truss: pd.DataFrame
    in_context: pd.DataFrame
    summary: dict[str, Any]
    log: list = field(default_factory=list)
    trace: list | None = None                 # with ``trace``: the kernel's calls and user bursts in order
    trace_window: tuple[int, int] = (0, 0)    # the part of ``trace`` the measured window ran


class WebServer:
    """The server's state: its kernel (one core), worker pool, CPU and the file set."""

    def __init__(self, env: simpy.Environment, platform: Platform, spec: WebServerSpec, mix: Mix, seed: int,
                 workers: int | None = None, kernel: Kernel | None = None):
        mix.check(spec)
        self.env = env
        self.platform = platform
        self.spec = spec
        self.mix = mix
        self.rng = np.random.default_rng(seed)
        self.kernel = kernel if kernel is not None else Kernel(platform, seed=seed)
        self.workers = simpy.Resource(env, capacity=workers or spec.server.workers)
        self.cpu = simpy.Resource(env, capacity=1)
        self.free_workers = list(range(workers or spec.server.workers))
        self.rows: list[dict] = []                         # per served request, in the order served
        self.traces: list[dict[str, float]] = []          # per served request: primitive -> calls or bytes
        self.closed = False                                # the window has closed: no new work
        self.cpu_busy = 0.0
        self.kbuf = 0
        f = spec.files
        self.class_p = np.asarray(f.class_shares) / sum(f.class_shares)
        self.file_p = np.asarray(f.file_shares) / sum(f.file_shares)
        self.type_names = list(mix.shares)
        self.type_p = np.asarray([mix.shares[t] for t in self.type_names])

    def pick_request(self, rng: np.random.Generator) -> tuple[str, int, int]:
        """(type, file size, file address), drawn from the asking client's stream ``rng``: the k-th request
        of a client is then the same file in every run of the same seed, whatever the platform, the
        what-if or the timing (common random numbers), and a mix's type is one inverse-CDF draw, so a
        CGI request of one mix is a FastCGI request at the same place in the other.  (A draw from one
        server-wide stream gave each run its own file sample, and a throughput's sampling error of 1.8-3.4 %
        to every comparison between runs.)"""
        f = self.spec.files
        t = self.type_names[int(rng.choice(len(self.type_names), p=self.type_p))]
        c = int(rng.choice(len(self.class_p), p=self.class_p))
        j = int(rng.choice(len(self.file_p), p=self.file_p))
        d = int(rng.integers(0, f.directories))
        size = (j + 1) * f.class_base_bytes[c]
        index = (d * len(self.class_p) + c) * len(self.file_p) + j
        return t, size, FILES_BASE + index * FILE_STRIDE

    def residual_transfer(self, rng: np.random.Generator) -> float:
        """Seconds until a client joining a running benchmark asks for its next request: the rest of the
        transfer it is in the middle of.  At a random instant a client is more likely to be inside a long
        transfer than a short one (length-biased), at a uniform point of it.  Starting every client this
        way starts the request stream in its steady state; starting them all at once would not settle
        for as long as the longest transfer takes (a 900 KB file: 20 s at 360 Kb/s)."""
        f, c = self.spec.files, self.spec.clients
        sizes = np.outer(f.class_base_bytes, np.arange(1, len(self.file_p) + 1)).ravel() + c.request_bytes
        p = np.outer(self.class_p, self.file_p).ravel() * sizes
        nbytes = sizes[int(rng.choice(len(sizes), p=p / p.sum()))]
        return float(rng.random() * nbytes / (rng.uniform(*c.line_kbit_s) * 1e3 / 8))

    def socket_buffer(self) -> int:
        """The kernel buffer a send copies into: the slab allocator hands out recently freed (cache-hot)
        objects, so a handful circulate."""
        self.kbuf = (self.kbuf + 1) % SKB_POOL
        return self.kernel.code.kernel_buffer(4096 + self.kbuf)

    def run_on_cpu(self, work):
        """Hold the CPU for one step: ``work()`` runs it on the core and returns its cycles."""
        with self.cpu.request() as req:
            yield req
            cycles = work()
            seconds = self.kernel.seconds(cycles)
            self.cpu_busy += seconds
            yield self.env.timeout(seconds)
        return seconds


def _size(expr: str, file_size: int, first: bool) -> int:
    m = _SIZE.match(expr)
    head, plus = m.group(1), int(m.group(2) or 0)
    if head == "connect":
        return 1 if first else 0
    if head == "file":
        return file_size + plus
    return int(head) + plus


def _bursts(steps: list[tuple[str, str, str]], size: int, first: bool) -> list[tuple[str, list[tuple[str, int]]]]:
    """A request's steps as CPU bursts: the consecutive steps of one process, (who, [(primitive, amount)])."""
    out: list[tuple[str, list[tuple[str, int]]]] = []
    for prim, expr, who in steps:
        amount = _size(expr, size, first)
        if amount == 0:
            continue
        if not out or out[-1][0] != who:
            out.append((who, []))
        out[-1][1].append((prim, amount))
    return out


def serve(env: simpy.Environment, server: WebServer, worker: int, rtype: str, size: int, faddr: int, first: bool):
    """One request on the CPU, burst by burst; returns (CPU seconds, kernel CPU seconds, primitives executed,
    response bytes, the request's truss), or None if the measurement closed first.

    A process keeps the CPU until it blocks (Apache 1.3 and the kernel switch processes when one waits,
    not between its system calls), and here it blocks where the work passes to another process: the
    server forks or connects to the CGI or FastCGI process and waits for its output, which that process
    computes in a burst of its own.  Between bursts, other requests' bursts run in arrival order."""
    spec = server.spec.types[rtype]
    kernel = server.kernel
    data_kb = server.spec.server.user_data_kb
    wbuf = USER_BUFFER + worker * USER_BUFFER_STRIDE
    cbuf = USER_BUFFER + (PROCESS_CHILD + worker) * USER_BUFFER_STRIDE
    child = (PROGRAM_FASTCGI, FASTCGI_PROCESS) if rtype == "fastcgi" else (PROGRAM_CGI, PROCESS_CHILD + worker)
    done = {"cpu": 0.0, "kernel_cycles": 0, "primitives": 0, "response": size, "user": set()}
    traced: dict[str, float] = {}

    def run(who: str, steps: list[tuple[str, int]]) -> int:
        cycles = 0
        if who not in done["user"]:      # the process's user-mode work: request parsing and handlers, or the page
            done["user"].add(who)
            n = spec.user_instructions if who == "server" else spec.child_user_instructions
            program, process = (PROGRAM_HTTPD, worker) if who == "server" else child
            cycles += kernel.user(program, process, n, data_kb) if n else 0
        for prim, amount in steps:
            if kernel.code.spec(prim).unit == "byte":
                src, dst = {"mmap_read": (faddr, 0), "file_read": (faddr, cbuf), "pipe_read": (cbuf, wbuf),
                            "socket_rw": (cbuf, wbuf)}.get(prim, (faddr if rtype == "static" else wbuf,
                                                                server.socket_buffer()))
                calls = [(amount, src, dst)]
                if prim == "tcp_transfer":
                    done["response"] = amount
            else:
                calls = [(0, 0, 0)] * amount
            for nbytes, src, dst in calls:
                c = kernel.call(prim, nbytes, src, dst)
                cycles += c
                done["kernel_cycles"] += c
                done["primitives"] += 1
            traced[prim] = traced.get(prim, 0) + amount
        return cycles

    for who, steps in _bursts(spec.steps, size, first):
        if server.closed:
            return None                                   # abandoned: the measurement is over
        done["cpu"] += yield from server.run_on_cpu(lambda w=who, st=steps: run(w, st))
    return done["cpu"], kernel.seconds(done["kernel_cycles"]), done["primitives"], done["response"], traced


def client(env: simpy.Environment, server: WebServer, cid: int, log: list | None = None):
    """A SPECweb99 client: connections of one or 5-15 requests, back to back."""
    c = server.spec.clients
    rng = np.random.default_rng([server.rng.integers(1 << 62), cid])
    lo, hi = c.requests_per_connection
    mean_k = (lo + hi) / 2
    # per connection: persistent with the probability that gives persistent_share of the requests
    h = c.persistent_share
    q = h / (h + (1 - h) * mean_k) if h < 1 else 1.0
    yield env.timeout(server.residual_transfer(rng))
    seq = 0                                                      # the client's requests so far
    while True:
        line = rng.uniform(*c.line_kbit_s) * 1e3 / 8           # bytes per second
        n = int(rng.integers(lo, hi + 1)) if rng.random() < q else 1
        asked = env.now                                          # the connection attempt: the listen queue
        with server.workers.request() as req:
            yield req
            worker = server.free_workers.pop()
            try:
                for k in range(n):
                    if server.closed:
                        return
                    rtype, size, faddr = server.pick_request(rng)
                    seq += 1
                    arrival, connected = (asked if k == 0 else env.now), env.now
                    yield env.timeout(c.request_bytes / line)
                    start = env.now
                    done = yield from serve(env, server, worker, rtype, size, faddr, k == 0)
                    if done is None:
                        return
                    cpu, kcpu, prims, response, traced = done
                    row = {"client": cid, "seq": seq, "worker": worker, "type": rtype, "bytes": size,
                           "new_connection": k == 0,
                           "arrival": arrival, "connected": connected, "start": start, "served": env.now,
                           "end": math.nan,
                           "cpu_seconds": cpu, "kernel_seconds": kcpu, "primitives": prims}
                    server.rows.append(row)
                    server.traces.append(traced)
                    yield env.timeout(response / line)             # the worker writes at the line's pace
                    row["end"] = env.now
                    if log is not None:
                        log.append((f"client{cid}", rtype, round(arrival, 9), round(env.now, 9)))
            finally:
                server.free_workers.append(worker)


def run_server(platform: Platform, mix: dict[str, float], clients: int, requests: int, *, warmup_requests: int = 0,
               workers: int | None = None, seed: int = 0, spec: WebServerSpec | None = None,
               kernel: Kernel | None = None, log: list | None = None, trace: bool = False) -> ServerRun:
    """Serve until ``warmup_requests + requests`` have been served; the figures cover the last ``requests``
    (from the time the warm-up's last request was served), whose transfers then complete.  ``trace``: keep
    the kernel's calls and user bursts in the order they ran (for :func:`cache_simulation`)."""
    if clients < 1:
        raise SimulatorInputError(f"clients: must be >= 1, got {clients}")
    if requests < 1:
        raise SimulatorInputError(f"requests: must be >= 1, got {requests}")
    if clients > MAX_CLIENTS:                   # limits before work: nothing is allocated yet
        raise SimulatorInputError(f"clients: at most {MAX_CLIENTS:,}, got {clients:,}")
    if warmup_requests + requests > MAX_REQUESTS:
        raise SimulatorInputError(f"requests: warm-up and measured requests at most {MAX_REQUESTS:,} in all, got "
                                  f"{warmup_requests + requests:,}")
    if workers is not None and not 1 <= workers <= MAX_WORKERS:
        raise SimulatorInputError(f"workers: must be in [1, {MAX_WORKERS:,}], got {workers:,}")
    spec = spec or load_webserver()
    env = simpy.Environment()
    server = WebServer(env, platform, spec, Mix(dict(mix)), seed, workers, kernel)
    if trace:
        server.kernel.trace = []
    for cid in range(clients):
        env.process(client(env, server, cid, log))
    total = warmup_requests + requests
    marks: dict[str, float] = {}
    while len(server.rows) < total:
        if len(server.rows) >= warmup_requests and "start" not in marks:
            marks["start"], marks["busy"] = env.now, server.cpu_busy
            server.kernel.reset_counts()
            marks["trace"] = len(server.kernel.trace or ())
        env.step()
    window = max(env.now - marks["start"], 1e-12)
    busy = server.cpu_busy - marks["busy"]
    in_context = _in_context(server.kernel)
    traced = server.kernel.trace
    traced_window = (marks["trace"], len(traced or ()))
    server.kernel.trace = None
    server.closed = True
    env.run()                                             # the measured requests' transfers complete
    rows = pd.DataFrame(server.rows[warmup_requests:total])
    latency = rows["end"] - rows["arrival"]
    summary = {
        "platform": platform.name, "clients": clients, "workers": server.workers.capacity, "mix": dict(mix),
        "requests": len(rows), "seconds": window, "throughput": len(rows) / window,
        "latency_p50": float(latency.quantile(0.5)), "latency_p95": float(latency.quantile(0.95)),
        "latency_p99": float(latency.quantile(0.99)), "latency_mean": float(latency.mean()),
        "cpu_utilisation": busy / window,
        "service_demand_s": busy / len(rows),
        "cpu_seconds_per_request": float(rows["cpu_seconds"].mean()),
        "kernel_seconds_per_request": float(rows["kernel_seconds"].mean()),
        "mean_bytes": float(rows["bytes"].mean()),
    }
    truss = _truss(rows, server.traces[warmup_requests:total])
    return ServerRun(requests=rows, truss=truss, in_context=in_context, summary=summary, log=log or [],
                     trace=traced, trace_window=traced_window)


def paired_speed(a: pd.DataFrame, b: pd.DataFrame, z: float = 1.96) -> dict[str, float]:
    """How much faster run ``b`` serves than run ``a``, from the requests both measured (the same client and
    request number: the same file, with common random numbers): the ratio of their mean CPU seconds per
    request, a's over b's -- at saturation the ratio of the throughputs --, its standard error by the delta
    method on the paired sample, and the interval of +- ``z`` standard errors (1.96: 95 %).  Pairing removes
    the file-size sampling that both runs share: each run's own throughput has a standard error of 1.8-3.4 %
    over 3,000 requests, their ratio on the shared requests far less.  ``resolved``: the interval excludes
    1, so the order of the two runs is not a matter of sampling."""
    m = a[["client", "seq", "cpu_seconds"]].merge(b[["client", "seq", "cpu_seconds"]], on=["client", "seq"],
                                                  suffixes=("_a", "_b"))
    n = len(m)
    if n < 2:
        raise SimulatorInputError(f"paired_speed: the runs share {n} measured request(s); at least 2 are needed")
    x, y = m["cpu_seconds_a"].to_numpy(), m["cpu_seconds_b"].to_numpy()
    mx, my = x.mean(), y.mean()
    ratio = mx / my
    rel_var = (x.var(ddof=1) / mx ** 2 + y.var(ddof=1) / my ** 2 - 2 * np.cov(x, y)[0, 1] / (mx * my)) / n
    se = ratio * math.sqrt(max(rel_var, 0.0))
    lo, hi = ratio - z * se, ratio + z * se
    return {"ratio": float(ratio), "se": float(se), "ci_low": float(lo), "ci_high": float(hi), "shared_requests": n,
            "resolved": bool(lo > 1.0 or hi < 1.0)}


def cache_simulation(platform: Platform, trace: list[tuple], window: tuple[int, int], seed: int = 0) -> pd.DataFrame:
    """A server's kernel trace (:attr:`ServerRun.trace`: its calls and user bursts in the order they ran)
    replayed on ``platform`` as a cache simulation (no timing: :meth:`Core.make_functional`) -- the
    hybrid methodology's application-side count (seed 003 §3.1.3: the application's trace fed to a cache
    simulator of the target).  Per primitive of the trace's ``window``: calls, bytes and the lines its
    calls brought into each cache depth and their page walks (``lines_<levels>``, ``lines_walks``:
    :meth:`MemoryHierarchy.lines_in`)."""
    kernel = Kernel(platform, seed=seed)
    kernel.core.make_functional()
    names = [f"lines_{n}" for n in kernel.core.memory.lines_in_names()]
    # what runs before the window warms the caches; what runs after it counts nowhere
    for part in (trace[:window[0]], trace[window[0]:window[1]]):
        kernel.reset_counts()
        for kind, *args in part:
            if kind == "user":
                kernel.user(*args)
            else:
                kernel.call(*args)
    lines = kernel.lines_by_primitive
    return pd.DataFrame([{"primitive": p, "calls": n, "bytes": kernel.bytes_by_primitive[p],
                          **dict(zip(names, map(int, lines[p])))} for p, n in kernel.calls.items()],
                        columns=["primitive", "calls", "bytes"] + names)


def _truss(rows: pd.DataFrame, traces: list[dict[str, float]]) -> pd.DataFrame:
    """Per request type and primitive: calls or bytes per request of the measured requests (the
    application vector a truss of the server gives)."""
    out = []
    for rtype, idx in rows.groupby("type").groups.items():
        sums: dict[str, float] = {}
        for i in idx:
            for prim, amount in traces[rows.index.get_loc(i)].items():
                sums[prim] = sums.get(prim, 0.0) + amount
        out += [{"application": rtype, "primitive": p, "count": v / len(idx)} for p, v in sums.items()]
    return pd.DataFrame(out, columns=["application", "primitive", "count"])


def _in_context(kernel: Kernel) -> pd.DataFrame:
    """Each primitive's mean cost as the server paid it: µs per call, or per byte for per-byte ones (the
    system vector in context, against the microbenchmarks' warm loops), and the lines its calls brought
    into each cache depth (``lines_<levels>``, as :func:`cache_simulation` counts them)."""
    names = [f"lines_{n}" for n in kernel.core.memory.lines_in_names()]
    lines_by_primitive = kernel.lines_by_primitive
    rows = []
    for prim, calls in kernel.calls.items():
        seconds = kernel.seconds(kernel.cycles_by_primitive.get(prim, 0))
        per_byte = kernel.code.spec(prim).unit == "byte"
        units = kernel.bytes_by_primitive.get(prim, 0) if per_byte else calls
        lines = lines_by_primitive.get(prim, np.zeros(len(names), dtype=np.int64))
        rows.append({"primitive": prim, "unit": "us/byte" if per_byte else "us", "calls": calls,
                     "cost": 1e6 * seconds / units if units else float("nan"), "seconds": seconds,
                     **dict(zip(names, map(int, lines)))})
    return pd.DataFrame(rows, columns=["primitive", "unit", "calls", "cost", "seconds"] + names)
