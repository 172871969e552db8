"""Ground-truth check of SMARTS sampled simulation for ``whatif validate``: on every shipped platform, the
CPI a sampled run estimates against the CPI of the full detailed run of the same program, input, page
placement and timer phase (:func:`simulator.collect.simulate_one` both times).

The full run's CPI is the truth; the sampled estimate passes when the truth lies in its confidence
interval (99.7 %) or within +-3 % of it (the issue's acceptance: a CPI within +-3 % at 99.7 % confidence,
which a sample with enough units gives; a smaller sample passes on its wider interval, and the interval
then says so).
"""

from __future__ import annotations

from whatif.scenarios.checks.registry import CheckResult, register_check
from whatif.simulator.collect import CollectSpec, simulate_one
from whatif.simulator.platform import load_platform, platform_names
from whatif.simulator.smarts import DEFAULT_TARGET_ERROR, SmartsSpec

WORKLOADS = ("cint2006/464.h264ref", "cint2006/429.mcf")     # compute bound, memory bound
SEED = 11
QUICK = (2_000_000, 400)             # program instructions, units (one in 5 timed in detail, with its warm-up)
FULL = (20_000_000, 2_000)


def compare(platform_name: str, workload: str, instructions: int, units: int) -> tuple[float, dict]:
    """(full detailed CPI, the sampled run's ``sampled`` entry) for one program."""
    platform = load_platform(platform_name)
    full = simulate_one(platform, workload, CollectSpec(instructions=instructions), program_seed=SEED,
                        replicate_seed=SEED)
    sampled = simulate_one(platform, workload, CollectSpec(instructions=instructions, sample=SmartsSpec(units=units)),
                           program_seed=SEED, replicate_seed=SEED)
    return full["cpi"], sampled["sampled"]


@register_check("smarts: sampled CPI against a full detailed run")
def sampled_against_detailed(quick: bool) -> list[CheckResult]:
    instructions, units = QUICK if quick else FULL
    out = []
    for name in platform_names():
        for workload in WORKLOADS:
            truth, smp = compare(name, workload, instructions, units)
            est = smp["cpi"]
            lo, hi = est["ci"]
            error = est["mean"] / truth - 1
            passed = lo <= truth <= hi or abs(error) <= DEFAULT_TARGET_ERROR
            out.append(CheckResult(
                f"smarts: {workload} on {name}, CPI (sampled vs full detailed)", round(truth, 4),
                f"{est['mean']:.4f} ± {est['half_width']:.4f}", passed,
                f"{instructions:,} instructions; {smp['units']} units of {smp['unit']} after {smp['warmup']} of "
                f"warm-up; error {error:+.2%}, CI ± {est['relative_error']:.1%} at {smp['confidence']:.1%}"))
    return out
