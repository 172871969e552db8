"""``whatif trace``: make synthetic traces, convert lackey text to the binary format, describe a trace."""

from __future__ import annotations

from pathlib import Path

from whatif.scenarios.errors import ScenarioError
from whatif.scenarios.results.writer import atomic_write_bytes, atomic_write_text
from whatif.simulator.traces import lackey_text, mixed_streams, read_trace, synthetic_trace, written_by_whatif, wtr_bytes
from whatif.scenarios.render.cachesim import trace_summary


def write_trace(trace, out: Path) -> None:
    """``.wtr`` gets the binary format, anything else lackey text; written atomically, and over an
    existing file only when it is a trace whatif wrote."""
    if out.suffix == ".wtr":
        atomic_write_bytes(out, wtr_bytes(trace), is_ours=written_by_whatif)
    else:
        atomic_write_text(out, lackey_text(trace), is_ours=written_by_whatif)


def synth(out: Path, accesses: int, seed: int, instructions_per_access: float) -> dict:
    if accesses <= 0:
        raise ScenarioError(f"--accesses must be positive, got {accesses}")
    if instructions_per_access < 0:
        raise ScenarioError(f"--instructions-per-access must be >= 0, got {instructions_per_access}")
    trace = synthetic_trace(mixed_streams(), accesses, seed=seed, instructions_per_access=instructions_per_access)
    write_trace(trace, out)
    return {**trace_summary(trace), "written": str(out)}


def convert(src: Path, out: Path, fmt: str) -> dict:
    trace = read_trace(src, fmt)
    write_trace(trace, out)
    return {**trace_summary(trace), "written": str(out)}


def info(src: Path, fmt: str) -> dict:
    trace = read_trace(src, fmt)
    doc = trace_summary(trace)
    if len(trace):
        doc["address_min"] = hex(int(trace.addrs.min()))
        doc["address_max"] = hex(int(trace.addrs.max()))
        doc["distinct_64B_lines"] = int(len(set((trace.addrs >> 6).tolist())))
    return doc
