"""Glue of ``whatif cachesim``: a trace file streamed through a platform's caches and TLBs -> the JSON document.

The trace is read chunk by chunk (:class:`~whatif.simulator.traces.TraceFile`: a reader thread parses
or decodes the next chunk while the kernel simulates this one), so memory stays bounded and the run takes
about as long as the slower of reading and simulating.  Start-up counts on short traces, so this module
imports only what the command needs: not the study machinery (pandas, the core model).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from whatif.scenarios.kernels import load_kernels
from whatif.scenarios.results.progress import progress_bar
from whatif.simulator.memory.hierarchy import MemoryHierarchy
from whatif.simulator.platform import load_platform
from whatif.simulator.traces import TraceFile


def cachesim_command(trace_path: Path, platform_name: str, overrides: list[str], fmt: str,
                     progress: bool = True, seed: int = 0) -> dict[str, Any]:
    """``whatif cachesim``: the JSON document of the issue (levels and TLBs with all counters)."""
    platform = load_platform(platform_name, overrides)   # validate the platform before reading the trace
    records = 0
    with TraceFile(trace_path, fmt) as trace:
        chunks = trace.chunks()                          # reading starts now, while the kernels load
        load_kernels(progress, trace=platform)
        hierarchy = MemoryHierarchy(platform, seed=seed)
        # progress in records when the file states its count (.wtr), else in bytes of text read
        label = "simulating accesses" if trace.records is not None else "simulating (bytes of trace read)"
        with progress_bar(trace.total, label, enabled=progress) as advance:
            for chunk, done in chunks:
                hierarchy.run(chunk.addrs, chunk.sizes, chunk.kinds)
                records += len(chunk)
                advance(done)
    counters = hierarchy.counters()
    seconds = hierarchy.simulation_seconds
    return {"platform": platform.name, "seed": seed, "trace": str(trace_path), "trace_accesses": records,
            "simulation_seconds": round(seconds, 6),
            "accesses_per_s": records / seconds if seconds > 0 else None,
            "levels": counters["levels"], "tlbs": counters["tlbs"], "memory": counters["memory"]}
