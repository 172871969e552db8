"""``whatif trace``: make synthetic traces, convert between lackey text and ``.wtr``, describe a trace.

Outputs: a name ending in ``.wtr`` gets the binary format (version 2), anything else lackey text.  The
output is checked before any work (a directory, or a file whatif did not write, is refused), written
through a staged file and a rename, and only when everything succeeded.  Long runs show a progress bar
with the time left on stderr (not with ``--json``).
"""

from __future__ import annotations

import math
from contextlib import ExitStack
from pathlib import Path
from typing import Callable

import numpy as np

from whatif.scenarios.errors import ScenarioError
from whatif.scenarios.results.progress import progress_bar
from whatif.scenarios.results.writer import atomic_file, check_output_file
from whatif.simulator import trace_lackey, trace_wtr
from whatif.simulator.traces import (KIND_NAMES, MAX_SYNTHETIC_RECORDS, Trace, TraceFile, mixed_streams,
                                     synthetic_trace, written_by_whatif)

class TraceWriter:
    """Chunks of records -> a trace file of ``out``'s format (whole blocks for ``.wtr``), written as they come
    through a staged file that replaces ``out`` when the block ends (:func:`atomic_file`): a trace of any length
    converts in the memory of a chunk.  Use as a context manager."""

    def __init__(self, out: Path):
        self.out = out
        self.binary = out.suffix == ".wtr"
        self.records = 0
        self.counts = np.zeros(4, np.int64)
        self._stack = ExitStack()
        self._fh = None

    def __enter__(self) -> "TraceWriter":
        self._fh = self._stack.enter_context(atomic_file(self.out, is_ours=written_by_whatif))
        # (the .wtr header's record count is written last, over this one)
        self._fh.write(trace_wtr.header(0) if self.binary else trace_lackey.header_line())
        return self

    def __exit__(self, exc_type, exc, tb) -> bool | None:
        if exc_type is None and self.binary:
            try:
                self._fh.seek(0)
                self._fh.write(trace_wtr.header(self.records))
            except BaseException as failed:               # (the staged file removed, as for a failed chunk)
                self._stack.__exit__(type(failed), failed, failed.__traceback__)
                raise
        return self._stack.__exit__(exc_type, exc, tb)

    def add(self, chunk: Trace) -> None:
        trace_wtr.check_records(chunk.sizes, chunk.kinds, chunk.source, self.records)
        if self.binary:
            for part in trace_wtr.encode(chunk.addrs, chunk.sizes, chunk.kinds):
                self._fh.write(part)
        else:
            self._fh.write(trace_lackey.lackey_lines(chunk.addrs, chunk.sizes, chunk.kinds))
        self.records += len(chunk)
        self.counts += np.bincount(chunk.kinds, minlength=4)

    def summary(self, source: str) -> dict:
        """The keys of the cachesim study's trace summary, and the file written."""
        c = self.counts
        return {"source": source, "records": self.records, "instructions": int(c[0]), "loads": int(c[1]),
                "stores": int(c[2]), "modifies": int(c[3]), "written": str(self.out)}


def write_trace(trace: Trace, out: Path, advance: Callable[[int], None] = lambda n: None) -> TraceWriter:
    """Write a whole trace to ``out`` (``.wtr``: binary, else lackey text)."""
    with TraceWriter(out) as writer:
        for start in range(0, len(trace), trace_wtr.BLOCK_RECORDS * 16):
            part = slice(start, start + trace_wtr.BLOCK_RECORDS * 16)
            writer.add(Trace(trace.addrs[part], trace.sizes[part], trace.kinds[part], trace.source))
            advance(min(len(trace), part.stop) - start)
    return writer


def synth(out: Path, accesses: int, seed: int, instructions_per_access: float, progress: bool = True) -> dict:
    if accesses <= 0:
        raise ScenarioError(f"--accesses must be positive, got {accesses}")
    if seed < 0:
        raise ScenarioError(f"--seed must be >= 0, got {seed}")
    if not (math.isfinite(instructions_per_access) and instructions_per_access >= 0):
        raise ScenarioError(f"--instructions-per-access must be a finite number >= 0, got {instructions_per_access}")
    records = accesses + round(accesses * instructions_per_access)
    if records > MAX_SYNTHETIC_RECORDS:
        raise ScenarioError(f"the trace would hold {records:,} records (--accesses x (1 + "
                            f"--instructions-per-access)); the limit is {MAX_SYNTHETIC_RECORDS:,}")
    check_output_file(out, written_by_whatif)
    with progress_bar(2 * records, f"trace synth {out.name}", enabled=progress) as advance:
        trace = synthetic_trace(mixed_streams(), accesses, seed=seed, instructions_per_access=instructions_per_access,
                                progress=advance)
        writer = write_trace(trace, out, advance)
    return writer.summary(trace.source)


def convert(src: Path, out: Path, fmt: str, progress: bool = True) -> dict:
    check_output_file(out, written_by_whatif)
    with TraceFile(src, fmt) as trace, TraceWriter(out) as writer:
        with progress_bar(trace.total, f"trace convert {src.name}", enabled=progress) as advance:
            for chunk, done in trace.chunks():
                writer.add(chunk)
                advance(done)
    return writer.summary(str(src))


def info(src: Path, fmt: str, progress: bool = True) -> dict:
    counts = np.zeros(4, np.int64)
    lo, hi = np.uint64(2**64 - 1), np.uint64(0)
    lines = np.zeros(0, np.uint64)
    with TraceFile(src, fmt) as trace:
        with progress_bar(trace.total, f"trace info {src.name}", enabled=progress) as advance:
            for chunk, done in trace.chunks():
                counts += np.bincount(chunk.kinds, minlength=4)
                lo, hi = min(lo, chunk.addrs.min()), max(hi, chunk.addrs.max())
                lines = np.union1d(lines, chunk.addrs >> np.uint64(6))
                advance(done)
    names = dict(zip(KIND_NAMES, counts.tolist()))
    return {"source": str(src), "records": int(counts.sum()), "instructions": names["I"], "loads": names["L"],
            "stores": names["S"], "modifies": names["M"], "address_min": hex(int(lo)), "address_max": hex(int(hi)),
            "distinct_64B_lines": int(len(lines))}
