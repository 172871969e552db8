"""A SimPy web server on a simulated platform: Apache-1.3-style pre-forked workers serving SPECweb99-like
clients (seed 003 §6.2-6.3), every request's primitives executed on the core model in the order the
server issues them.

Timelines (SimPy processes, ``env`` first):

* :func:`client` -- one SPECweb99 connection after another: a persistent connection (share
  ``persistent_share`` of the requests, 5-15 requests) or one request; each request waits for the
  request's bytes to cross the client's line, the server's work, and the response's bytes back at the
  client's line speed (320-400 Kb/s), then the next request follows at once.
* :func:`serve` -- a worker holds its connection (Apache 1.3: one connection per process); each
  request's steps (``webserver.toml``: kernel primitives, the server's and the CGI or FastCGI process's
  user-mode work) run on the one CPU, a step at a time, in order: the core's caches, TLBs and
  predictors carry over from whatever ran before, so requests interfere for real.  The worker then
  writes the response: it stays busy for the transfer at the client's line speed, the CPU does not.

Outputs (contract 6): one row per request (arrival, start, end, type, bytes, primitives, CPU seconds)
and the run's figures (throughput, latency percentiles, CPU utilisation), the "truss" of every request
type -- its application vector, primitive by primitive -- and each primitive's mean cost as the server
actually paid it (the system vector in context).
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
from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt, ValidationError, field_validator

from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.os.kernel import Kernel
from whatif.simulator.os.primitives import OsCode, load_primitives
from whatif.simulator.platform import Platform
from whatif.simulator.schema import check_schema_version, format_validation_error, load_toml

WEBSERVER_FILE = Path(__file__).parent / "webserver.toml"
SCHEMA_VERSION = 1
CHANGELOG = {1: "initial web-server description (server, clients, files, request types)"}
FILES_BASE = 0x0000_4000_0000            # the file set in the page cache: a file every 1 MB
FILE_STRIDE = 1 << 20
PROCESS_SERVER, PROCESS_CHILD = 0, 2048  # user-process numbers: worker w is w, its CGI child 2048 + w
FASTCGI_PROCESS = 4000
USER_BUFFER = 0x0000_2000_0000           # a process's I/O buffer (16 MB apart)
USER_BUFFER_STRIDE = 1 << 24
_SIZE = re.compile(r"^(file|connect|\d+)(?:\+(\d+))?$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ServerSpec(_Strict):
    workers: PositiveInt = 64
    user_data_kb: float = Field(default=96, ge=0)


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
    raw = load_toml(path)
    try:
        spec = WebServerSpec.model_validate(check_schema_version(raw, SCHEMA_VERSION, CHANGELOG))
    except ValidationError as exc:
        raise SimulatorInputError(format_validation_error(exc, str(path))) from None
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
        self.rows: list[dict] = []
        self.traces: list[dict[str, float]] = []          # per completed request: primitive -> calls or bytes
        self.cpu_busy = 0.0
        self.kbuf = 0
        f = spec.files
        self.class_p = np.asarray(f.class_shares) / sum(f.class_shares)
        self.file_p = np.asarray(f.file_shares) / sum(f.file_shares)
        self.type_names = list(mix.shares)
        self.type_p = np.asarray([mix.shares[t] for t in self.type_names])

    def pick_request(self) -> tuple[str, int, int]:
        """(type, file size, file address)."""
        f = self.spec.files
        t = self.type_names[int(self.rng.choice(len(self.type_names), p=self.type_p))]
        c = int(self.rng.choice(len(self.class_p), p=self.class_p))
        j = int(self.rng.choice(len(self.file_p), p=self.file_p))
        d = int(self.rng.integers(0, f.directories))
        size = (j + 1) * f.class_base_bytes[c]
        index = (d * len(self.class_p) + c) * len(self.file_p) + j
        return t, size, FILES_BASE + index * FILE_STRIDE

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


def serve(env: simpy.Environment, server: WebServer, worker: int, rtype: str, size: int, faddr: int, first: bool):
    """One request's steps on the CPU, in order; returns (CPU seconds, primitives executed, response bytes)."""
    spec = server.spec.types[rtype]
    kernel = server.kernel
    per_byte = {n for n, s in kernel.code.specs.items() if s.unit == "byte"}
    wbuf = USER_BUFFER + worker * USER_BUFFER_STRIDE
    cbuf = USER_BUFFER + (PROCESS_CHILD + worker) * USER_BUFFER_STRIDE
    cpu = 0.0
    n_prims = 0
    response = size
    traced: dict[str, float] = {}
    # the server's user-mode work (request parsing, handlers, logging)
    cpu += yield from server.run_on_cpu(lambda: kernel.user(worker, spec.user_instructions,
                                                            server.spec.server.user_data_kb))
    child_done = spec.child_user_instructions == 0
    for prim, expr, who in spec.steps:
        amount = _size(expr, size, first)
        if amount == 0:
            continue
        if who == "child" and not child_done:
            process = FASTCGI_PROCESS if rtype == "fastcgi" else PROCESS_CHILD + worker
            cpu += yield from server.run_on_cpu(lambda p=process: kernel.user(p, spec.child_user_instructions,
                                                                                server.spec.server.user_data_kb))
            child_done = True
        if prim in per_byte:
            src, dst = {"mmap_read": (faddr, 0), "file_read": (faddr, cbuf), "pipe_read": (cbuf, wbuf),
                        "socket_rw": (cbuf, wbuf)}.get(prim, (faddr if rtype == "static" else wbuf,
                                                            kernel.code.kernel_buffer(4096 + worker)))
            calls = [(amount, src, dst)]
            key_amount = amount
            if prim == "tcp_transfer":
                response = amount
        else:
            calls = [(0, 0, 0)] * amount
            key_amount = amount
        for nbytes, src, dst in calls:
            cpu += yield from server.run_on_cpu(lambda p=prim, b=nbytes, s=src, d=dst: kernel.call(p, b, s, d))
            n_prims += 1
        traced[prim] = traced.get(prim, 0) + key_amount
    return cpu, n_prims, response, traced


def client(env: simpy.Environment, server: WebServer, cid: int, log: list | None = None):
    """A SPECweb99 client: connections of one or 5-15 requests, back to back."""
    c = server.spec.clients
    rng = np.random.default_rng([server.rng.integers(1 << 62), cid])
    lo, hi = c.requests_per_connection
    mean_k = (lo + hi) / 2
    # per connection: persistent with the probability that gives persistent_share of the requests
    h = c.persistent_share
    q = h / (h + (1 - h) * mean_k) if h < 1 else 1.0
    while True:
        line = rng.uniform(*c.line_kbit_s) * 1e3 / 8           # bytes per second
        n = int(rng.integers(lo, hi + 1)) if rng.random() < q else 1
        with server.workers.request() as req:
            yield req
            worker = server.free_workers.pop()
            try:
                for k in range(n):
                    rtype, size, faddr = server.pick_request()
                    arrival = env.now
                    yield env.timeout(c.request_bytes / line)
                    start = env.now
                    cpu, prims, response, traced = yield from serve(env, server, worker, rtype, size, faddr, k == 0)
                    yield env.timeout(response / line)             # the worker writes at the line's pace
                    server.rows.append({"client": cid, "worker": worker, "type": rtype, "bytes": size,
                                        "new_connection": k == 0, "arrival": arrival, "start": start,
                                        "end": env.now, "cpu_seconds": cpu, "primitives": prims})
                    server.traces.append(traced)
                    if log is not None:
                        log.append((f"client{cid}", rtype, round(arrival, 9), round(env.now, 9)))
            finally:
                server.free_workers.append(worker)


def run_server(platform: Platform, mix: dict[str, float], clients: int, requests: int, *, warmup_requests: int = 0,
               workers: int | None = None, seed: int = 0, spec: WebServerSpec | None = None,
               kernel: Kernel | None = None, log: list | None = None) -> ServerRun:
    """Serve until ``warmup_requests + requests`` have completed; the figures cover the last ``requests``
    (from the time the warm-up ended)."""
    if clients < 1:
        raise SimulatorInputError(f"clients: must be >= 1, got {clients}")
    if requests < 1:
        raise SimulatorInputError(f"requests: must be >= 1, got {requests}")
    spec = spec or load_webserver()
    env = simpy.Environment()
    server = WebServer(env, platform, spec, Mix(dict(mix)), seed, workers, kernel)
    for cid in range(clients):
        env.process(client(env, server, cid, log))
    total = warmup_requests + requests
    marks: dict[str, float] = {}
    while len(server.rows) < total:
        if len(server.rows) >= warmup_requests and "start" not in marks:
            marks["start"], marks["busy"] = env.now, server.cpu_busy
            server.kernel.calls.clear()
            server.kernel.cycles_by_primitive.clear()
            server.kernel.bytes_by_primitive.clear()
        env.step()
    rows = pd.DataFrame(server.rows[warmup_requests:total])
    window = max(env.now - marks["start"], 1e-12)
    latency = rows["end"] - rows["arrival"]
    summary = {
        "platform": platform.name, "clients": clients, "workers": server.workers.capacity, "mix": dict(mix),
        "requests": len(rows), "seconds": window, "throughput": len(rows) / window,
        "latency_p50": float(latency.quantile(0.5)), "latency_p95": float(latency.quantile(0.95)),
        "latency_p99": float(latency.quantile(0.99)), "latency_mean": float(latency.mean()),
        "cpu_utilisation": (server.cpu_busy - marks["busy"]) / window,
        "cpu_seconds_per_request": float(rows["cpu_seconds"].mean()),
        "mean_bytes": float(rows["bytes"].mean()),
    }
    truss = _truss(rows, server.traces[warmup_requests:total])
    in_context = _in_context(server.kernel)
    return ServerRun(requests=rows, truss=truss, in_context=in_context, summary=summary, log=log or [])


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
    system vector in context, against the microbenchmarks' warm loops)."""
    rows = []
    for prim, calls in kernel.calls.items():
        seconds = kernel.seconds(kernel.cycles_by_primitive.get(prim, 0))
        per_byte = kernel.code.spec(prim).unit == "byte"
        units = kernel.bytes_by_primitive.get(prim, 0) if per_byte else calls
        rows.append({"primitive": prim, "unit": "us/byte" if per_byte else "us", "calls": calls,
                     "cost": 1e6 * seconds / units if units else float("nan"), "seconds": seconds})
    return pd.DataFrame(rows, columns=["primitive", "unit", "calls", "cost", "seconds"])
