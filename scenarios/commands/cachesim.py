"""Glue of ``whatif cachesim``: a trace through a platform's caches and TLBs -> the JSON document."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from whatif.scenarios.measure import compile_kernels
from whatif.scenarios.results.progress import progress_bar
from whatif.simulator.collect import run_trace
from whatif.simulator.platform import load_platform
from whatif.simulator.traces import read_trace


def cachesim_command(trace_path: Path, platform_name: str, overrides: list[str], fmt: str,
                     progress: bool = True) -> dict[str, Any]:
    """``whatif cachesim``: the JSON document of the issue (levels and TLBs with all counters)."""
    platform = load_platform(platform_name, overrides)   # validate the platform before reading the trace
    trace = read_trace(trace_path, fmt)
    compile_kernels(progress)
    with progress_bar(len(trace), "simulating accesses", enabled=progress) as advance:
        counters, seconds = run_trace(platform, trace, seed=0, progress=advance)
    return {"platform": platform.name, "trace": str(trace_path), "trace_accesses": len(trace),
            "simulation_seconds": round(seconds, 6),
            "accesses_per_s": len(trace) / seconds if seconds > 0 else None,
            "levels": counters["levels"], "tlbs": counters["tlbs"], "memory": counters["memory"]}
