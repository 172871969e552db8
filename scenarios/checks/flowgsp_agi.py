"""Ground truth for the miner on simulated hardware (issue 13): a planted address-generation pathology.

``websphere/was`` compiled by a code generator that keeps address generation away from the use
(``dependences.agi = 0``) is the control.  The planted variant adds the pathology in its hottest methods
(``jit.agi_methods``): the address-generating instruction right before its use.  Both run on the z10 and
are profiled; the profile of the planted methods is mined with FlowGSP.  The z10's address-generation
interlock stalls the planted accesses, the profiler samples the stalls, and mining must rank a sequence
containing ``AGIstall`` among its top 10 by S_M (w = 1, the thesis's setting) -- and must not in the same
methods of the control (what AGI stalls remain there come from pointer chasing and prologues).  The rank
with w = 0 is reported too (§4.4: the pairing of instructions moves samples to a partner).
"""

from __future__ import annotations

import pandas as pd

from whatif.models.flowgsp import FlowGSP
from whatif.models.flowgsp.profile_db import efg_from_tables
from whatif.scenarios.checks.registry import CheckResult, register_check
from whatif.simulator.platform import load_platform
from whatif.simulator.profiledb import collect_profile
from whatif.simulator.workload import load_workload

WORKLOAD = "websphere/was"
PLANTED_METHODS = 20
TOP = 10


def control_variant():
    """The workload compiled without address generation next to its use."""
    spec = load_workload(WORKLOAD).spec
    return spec.model_copy(update={"dependences": spec.dependences.model_copy(update={"agi": 0.0})})


def planted_variant(n_methods: int = PLANTED_METHODS):
    """The control with the pathology in its ``n_methods`` hottest methods."""
    spec = control_variant()
    return spec.model_copy(update={"jit": spec.jit.model_copy(update={"agi_methods": n_methods})})


def methods_tables(tables: dict[str, pd.DataFrame], symbols: set[int]) -> dict[str, pd.DataFrame]:
    """The profile tables of the given methods only."""
    return {name: df[df.symbol_id.isin(symbols)] for name, df in tables.items()}


def agi_rank(tables: dict[str, pd.DataFrame], window: int, prologue_bytes: int = 48) -> tuple[int | None, str]:
    """Rank (1 = highest S_M) of the first kept sequence containing AGIstall, and that sequence."""
    efg = efg_from_tables(tables, source="planted methods", prologue_bytes=prologue_bytes)
    res = FlowGSP(gap=0, window=window, n_generations=2, min_support=0.01, min_diff_support=0.01,
                  workers=1).fit(efg)
    for rank, seq in enumerate(res.sequences, start=1):
        if any("AGIstall" in element for element in seq.elements):
            return rank, seq.text
    return None, "(none kept)"


@register_check("flowgsp-agi-planted")
def planted_agi(quick: bool) -> list[CheckResult]:
    platform = load_platform("z10")
    n, warm = (2_000_000, 2_000_000) if quick else (8_000_000, 4_000_000)
    every = 256
    planted = collect_profile(platform, planted_variant(), n, warmup=warm, sample_every=every, program_seed=0,
                              os_noise=False, workload_name="was-agi")
    program = planted.machine.synth.program
    methods = program.methods()
    owner = pd.Series(range(len(methods)), index=methods["first"]).reindex(range(len(program)), method="ffill")
    symbols = set(owner[program.agi_planted].astype(int).tolist())
    control = collect_profile(platform, control_variant(), n, warmup=warm, sample_every=every, program_seed=0,
                              os_noise=False, workload_name="was")
    ranks = {w: agi_rank(methods_tables(planted.tables, symbols), w) for w in (1, 0)}
    control_rank, control_seq = agi_rank(methods_tables(control.tables, symbols), 1)
    rank, seq = ranks[1]
    detail = (f"{len(symbols)} planted methods ({int(program.agi_planted.sum())} accesses), {n:,} instructions "
              f"after {warm:,}, a sample every {every} cycles; w=1: {seq}; w=0: rank {ranks[0][0]} "
              f"{ranks[0][1]}; control (no plant), same methods, w=1: rank {control_rank} {control_seq}")
    found = rank is not None and rank <= TOP
    quiet = control_rank is None or control_rank > TOP
    return [CheckResult(name="flowgsp-agi-planted: AGIstall in the top 10 by S_M (w=1), planted vs control",
                        expected=f"planted <= {TOP}, control > {TOP}",
                        measured=f"planted {rank}, control {control_rank}", passed=found and quiet, detail=detail)]
