"""The profile of a profiled run as the six tables of seed 001 §4.2 (contract 3 of DESIGN.md).

A hardware profile lists instructions and their counters; the JIT's log adds the control flow.  Here
both come from the simulation: :class:`~simulator.core.profiler.InstructionProfiler` supplies the
sampled and event-based counters and the edge profile, the static program (``StaticProgram``) the
methods, instructions, basic blocks and inlining levels.

=========  =================================================================================
Symbol     one row per method (every function of every phase, the request driver included):
           ``symbol_id``, ``name``, ``jit_entry_offset`` (bytes from the method's first
           instruction to the instruction JIT-to-JIT calls enter)
Disassm    one row per instruction: ``offset`` in bytes within its method, ``opcode`` (the
           mnemonic, :func:`mnemonic`) and ``operands``
IA         sampled counters: ``TICKS`` and one row per instruction and event of
           :data:`~simulator.core.profiler.SAMPLED_EVENTS` with a count > 0
IAEvent    event-based counters (:data:`~simulator.core.profiler.EVENT_COUNTERS`), same columns;
           the FlowGSP reader ignores this table
Listing    ``block`` of each instruction (numbered per method from 2 in layout order; 0 and 1
           are the empty entry and exit blocks of the JIT's CFG), ``inline_level``, ``bytecode``
           (-1: synthesized code has none)
CFGNode    every block with its ``frequency`` (executions of its first instruction)
CFGEdge    every static ``out`` edge between blocks of a method with the frequency the run
           executed: fall-through, branch target, the return point of a call, a return to the exit
           block, and the entry block to the method's interpreter and JIT entries
=========  =================================================================================

Column names and types are the reader's (``whatif.models.flowgsp.profile_db``), which this module,
being part of the simulator, does not import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from whatif.simulator.core.profiler import EVENT_COUNTERS, SAMPLED_EVENTS, InstructionProfiler
from whatif.simulator.errors import SimulatorInputError, constraint_error
from whatif.simulator.machine import Machine
from whatif.simulator.osnoise import TimerNoise
from whatif.simulator.isa import (OP_ALU, OP_BRANCH, OP_CALL, OP_DIV, OP_FP, OP_JUMP, OP_LOAD, OP_MUL, OP_RET,
                                  OP_STORE)

ENTRY_BLOCK, EXIT_BLOCK = 0, 1
FIRST_BLOCK = 2

# z/Architecture mnemonics by operation class and instruction length (Principles of Operation,
# SA22-7832): the length distinguishes the RR (2 bytes), RX/RI/RRE (4) and RXY/RIL (6) formats
_Z_MNEMONICS = {
    OP_ALU: {2: ("LR", "AR"), 4: ("LA", "AGR"), 6: ("LAY", "AGFI")},      # (one source, two sources)
    OP_MUL: {2: ("MR", "MR"), 4: ("MSGR", "MSGR"), 6: ("MSGFI", "MSGFI")},
    OP_DIV: {2: ("DR", "DR"), 4: ("DSGR", "DSGR"), 6: ("DSG", "DSG")},
    OP_FP: {2: ("LDR", "ADR"), 4: ("LDEBR", "ADBR"), 6: ("ADB", "MDB")},
    OP_BRANCH: {2: ("BCR", "BCR"), 4: ("BRC", "BRC"), 6: ("BRCL", "BRCL")},
    OP_JUMP: {2: ("BCR", "BCR"), 4: ("J", "J"), 6: ("JG", "JG")},
    OP_CALL: {2: ("BASR", "BASR"), 4: ("BRAS", "BRAS"), 6: ("BRASL", "BRASL")},
    OP_RET: {2: ("BR", "BR"), 4: ("BR", "BR"), 6: ("BR", "BR")},
}
_Z_LOAD = {1: "LLGC", 2: "LH", 4: "L", 8: "LG", 16: "LMG"}
_Z_STORE = {1: "STC", 2: "STH", 4: "ST", 8: "STG", 16: "STMG"}
_OP_WORDS = ("alu", "mul", "div", "fp", "load", "store", "branch", "jump", "call", "ret")


def mnemonic(isa: str, op: int, size: int, msize: int, two_sources: bool) -> str:
    """The instruction's mnemonic: z/Architecture by class, format and access size; on other ISAs
    the operation class (and access size) in capitals."""
    if isa == "z/Architecture":
        if op == OP_LOAD:
            return _Z_LOAD.get(msize, "LG")
        if op == OP_STORE:
            return _Z_STORE.get(msize, "STG")
        table = _Z_MNEMONICS[op]
        pair = table.get(size, table[4])
        return pair[1] if two_sources else pair[0]
    word = _OP_WORDS[op].upper()
    return f"{word}{msize}" if op in (OP_LOAD, OP_STORE) else word


def _operands(op: int, dst: int, src1: int, src2: int, areg: int) -> str:
    reg = lambda r: f"R{r}"            # noqa: E731
    if op in (OP_LOAD, OP_STORE):
        data = dst if op == OP_LOAD else src1
        base = reg(areg) if areg >= 0 else "0"
        return f"{reg(data) if data >= 0 else 'R0'},0({base})"
    regs = [reg(r) for r in (dst, src1, src2) if r >= 0]
    return ",".join(regs)


def _method_key(program) -> np.ndarray:
    """A key per static instruction that is the same for the instructions of one method."""
    return program.phase.astype(np.int64) * (int(program.func.max()) + 2) + program.func.astype(np.int64)


def profile_tables(program, profiler: InstructionProfiler, workload_name: str = "") -> dict[str, pd.DataFrame]:
    """The seven tables (the six of §4.2 and ``IAEvent``) of a finished profile of ``program``."""
    if not profiler.finished:
        raise ValueError("profile_tables needs a finished profile (InstructionProfiler.finish)")
    n = len(program)
    key = _method_key(program)
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    if len(np.unique(key[starts])) != len(starts):
        raise ValueError("the program's methods are not contiguous in its layout")
    ends = np.r_[starts[1:], n]
    sym_of = np.repeat(np.arange(len(starts)), ends - starts)
    first_of_sym = starts[sym_of]
    offset = (program.pc - program.pc[first_of_sym]).astype(np.int64)

    op = program.op.astype(np.int64)
    tgt = program.tgt.astype(np.int64)
    # JIT entries: the instruction calls from synthesized code enter (the method's first without calls)
    jit_entry = starts.copy()
    methods = getattr(program, "methods", None)
    if callable(methods):
        table = methods()
        by_first = dict(zip(table["first"].to_numpy().tolist(), table["jit_entry"].to_numpy().tolist()))
        jit_entry = np.array([by_first.get(int(s), int(s)) for s in starts], dtype=np.int64)
    else:
        calls = np.flatnonzero((op == OP_CALL) & (tgt >= 0))
        for s in np.unique(sym_of[tgt[calls]]):
            tg = tgt[calls][sym_of[tgt[calls]] == s]
            vals, counts = np.unique(tg, return_counts=True)
            jit_entry[s] = vals[np.argmax(counts)]
    phase_names = program.phase_names
    drivers = {p: code.n_functions for p, code in enumerate(program.codes)}
    names = []
    for s in starts:
        p, f = int(program.phase[s]), int(program.func[s])
        label = "driver" if f == drivers[p] else f"m{f:04d}"
        names.append(f"{phase_names[p]}.{label}" if len(phase_names) > 1 else label)
    symbol = pd.DataFrame({"symbol_id": np.arange(len(starts), dtype=np.int64),
                           "name": [f"{workload_name}/{nm}" if workload_name else nm for nm in names],
                           "jit_entry_offset": (program.pc[jit_entry] - program.pc[starts]).astype(np.int64)})

    # blocks: runs of one (phase, block) within a method, numbered per method in layout order
    bkey = program.phase.astype(np.int64) * (int(program.block.max()) + 2) + program.block.astype(np.int64)
    bstart = np.flatnonzero(np.r_[True, (bkey[1:] != bkey[:-1]) | (sym_of[1:] != sym_of[:-1])])
    bend = np.r_[bstart[1:], n]
    block_run = np.repeat(np.arange(len(bstart)), bend - bstart)
    first_block_of_sym = np.searchsorted(bstart, starts)
    local_block = FIRST_BLOCK + block_run - first_block_of_sym[sym_of]
    inline = getattr(program, "inline_level", None)
    inline = np.zeros(n, np.int64) if inline is None else np.asarray(inline, np.int64)

    isa = program.isa.name
    two = (program.src1 >= 0) & (program.src2 >= 0)
    disassm = pd.DataFrame({
        "symbol_id": sym_of, "offset": offset,
        "opcode": [mnemonic(isa, int(o), int(sz), int(ms), bool(t))
                   for o, sz, ms, t in zip(op, program.size, program.msize, two)],
        "operands": [_operands(int(o), int(d), int(a), int(b), int(r))
                     for o, d, a, b, r in zip(op, program.dst, program.src1, program.src2, program.areg)]})
    listing = pd.DataFrame({"symbol_id": sym_of, "offset": offset, "bytecode": np.full(n, -1, np.int64),
                            "block": local_block, "inline_level": inline})

    def counter_rows(counts: np.ndarray, names_: tuple[str, ...], ticks: np.ndarray | None = None) -> pd.DataFrame:
        cols = ([ticks] if ticks is not None else []) + [counts[:, j] for j in range(counts.shape[1])]
        labels = (["TICKS"] if ticks is not None else []) + list(names_)
        frames = []
        for label, c in zip(labels, cols):
            nz = np.flatnonzero(c > 0)
            frames.append(pd.DataFrame({"symbol_id": sym_of[nz], "offset": offset[nz], "event": label,
                                        "count": c[nz].astype(np.int64)}))
        return pd.concat(frames, ignore_index=True)

    ia = counter_rows(profiler.events, SAMPLED_EVENTS, profiler.ticks)
    ia_event = counter_rows(profiler.occurrences, EVENT_COUNTERS)

    execs, fall, taken = profiler.executions, profiler.fall, profiler.taken
    node = pd.DataFrame({"symbol_id": sym_of[bstart], "block": local_block[bstart],
                         "frequency": execs[bstart].astype(float)})
    # edges out of each block's last instruction
    src_sym, src_blk, dst_blk, freq = [], [], [], []

    def add(s, a, b, f):
        src_sym.append(s), src_blk.append(a), dst_blk.append(b), freq.append(float(f))

    for last in bend - 1:
        s, b, o = int(sym_of[last]), int(local_block[last]), int(op[last])
        nxt = last + 1
        falls_through = nxt < n and sym_of[nxt] == s and o not in (OP_JUMP, OP_RET)
        if falls_through:
            add(s, b, int(local_block[nxt]), fall[last])
        t = int(tgt[last])
        if o in (OP_BRANCH, OP_JUMP) and t >= 0 and sym_of[t] == s:
            add(s, b, int(local_block[t]), taken[last])
        if o == OP_RET:
            add(s, b, EXIT_BLOCK, execs[last])
    # entries: executions of an entry block that did not come from inside the method (a driver's head is
    # also its loop's back-edge target)
    local_in: dict[tuple[int, int], float] = {}
    for s_, a, b, f in zip(src_sym, src_blk, dst_blk, freq):
        if a >= FIRST_BLOCK:
            local_in[(s_, b)] = local_in.get((s_, b), 0.0) + f
    for s in range(len(starts)):
        first, jit = int(starts[s]), int(jit_entry[s])
        for i in ((first, jit) if jit != first else (first,)):
            b = int(local_block[i])
            add(s, ENTRY_BLOCK, b, max(0.0, float(execs[i]) - local_in.get((s, b), 0.0)))
    edges = pd.DataFrame({"symbol_id": np.asarray(src_sym, np.int64), "kind": "out",
                          "src_block": np.asarray(src_blk, np.int64), "dst_block": np.asarray(dst_blk, np.int64),
                          "frequency": np.asarray(freq, float)})
    edges = edges.drop_duplicates(["symbol_id", "src_block", "dst_block"]).reset_index(drop=True)
    entry_exit = pd.DataFrame({"symbol_id": np.repeat(np.arange(len(starts), dtype=np.int64), 2),
                               "block": np.tile([ENTRY_BLOCK, EXIT_BLOCK], len(starts)),
                               "frequency": np.zeros(2 * len(starts))})
    entries = edges[edges.src_block == ENTRY_BLOCK].groupby("symbol_id").frequency.sum()
    exits = edges[edges.dst_block == EXIT_BLOCK].groupby("symbol_id").frequency.sum()
    entry_exit.loc[entry_exit.block == ENTRY_BLOCK, "frequency"] = entries.reindex(range(len(starts))).fillna(0).to_numpy()
    entry_exit.loc[entry_exit.block == EXIT_BLOCK, "frequency"] = exits.reindex(range(len(starts))).fillna(0).to_numpy()
    node = pd.concat([entry_exit, node], ignore_index=True).sort_values(["symbol_id", "block"], kind="stable")
    return {"Symbol": symbol, "Disassm": disassm, "IA": ia, "IAEvent": ia_event, "Listing": listing,
            "CFGNode": node.reset_index(drop=True), "CFGEdge": edges}


def profile_shape(tables: dict[str, pd.DataFrame]) -> dict[str, Any]:
    """Size of a profile as the thesis gives it (§4.2): methods, instructions, basic blocks (the empty
    entry and exit blocks excluded) and inter-block edges (those of the entry and exit blocks excluded)."""
    node, edge = tables["CFGNode"], tables["CFGEdge"]
    inner = (edge.src_block >= FIRST_BLOCK) & (edge.dst_block >= FIRST_BLOCK)
    return {"methods": int(len(tables["Symbol"])), "instructions": int(len(tables["Disassm"])),
            "blocks": int((node.block >= FIRST_BLOCK).sum()), "edges": int(inner.sum()),
            "sampled_instructions": int((tables["IA"].event == "TICKS").sum())}


# ---------------------------------------------------------------------------------------- collection
DEFAULT_SAMPLE_EVERY = 64          # cycles between samples (CPMF's interval is set per run; see the README)
MAX_PLAUSIBLE_CPI = 50.0           # for the up-front check that a run can hold one sample at all


@dataclass
class ProfileRun:
    """A profiled run: the machine after the run, the profile tables and the run's figures."""
    machine: Any
    tables: dict[str, pd.DataFrame]
    summary: dict[str, Any]


def request_count(program, profiler: InstructionProfiler) -> int:
    """Requests served: calls made by the request drivers (one top-level call per request)."""
    drivers = np.array([code.n_functions for code in program.codes])
    in_driver = program.func == drivers[program.phase]
    return int(profiler.executions[in_driver & (program.op == OP_CALL)].sum())


def collect_profile(platform, workload, instructions: int, *, warmup: int = 0,
                    sample_every: int = DEFAULT_SAMPLE_EVERY, program_seed: int = 0, replicate_seed: int = 0,
                    os_noise: bool = True, workload_name: str = "") -> ProfileRun:
    """Run ``workload`` on ``platform`` (``warmup`` instructions first, uncounted: the JIT's burn-in) and
    profile the ``instructions`` after it, sampling every ``sample_every`` cycles."""
    if not isinstance(sample_every, (int, np.integer)) or isinstance(sample_every, bool) or sample_every < 1:
        raise constraint_error("sample_every", "collect_profile", "an integer >= 1 (cycles)", sample_every)
    longest = instructions * MAX_PLAUSIBLE_CPI
    if sample_every > longest:
        raise SimulatorInputError(f"sample_every: {sample_every:,} cycles is longer than a run of "
                                  f"{instructions:,} instructions can last (at most ~{longest:,.0f} cycles)")
    m = Machine(platform, workload, warmup + instructions, seed=program_seed, run_seed=replicate_seed,
                input_seed=program_seed, noise=TimerNoise() if os_noise else None, profile_every=int(sample_every))
    if warmup:
        m.warm_up(warmup)
    m.run()
    prof = m.profile()
    if prof.samples == 0:
        raise SimulatorInputError(f"sample_every: the run lasted {m.cycles:,} cycles, fewer than one sampling "
                                  f"period of {sample_every:,}")
    program = m.synth.program
    tables = profile_tables(program, prof, workload_name)
    counters = m.counters()
    stack = m.cpi_stack()
    cpi = counters["cycles"] / max(1, counters["instructions"])
    requests = request_count(program, prof)
    l1i, itlb = platform.top_cache("instruction"), platform.tlb_chain("instruction")[0]
    summary = {
        "platform": platform.name, "workload": workload_name, "instructions": counters["instructions"],
        "warmup": warmup, "cycles": counters["cycles"], "cpi": cpi, "sample_every": int(sample_every),
        "samples": prof.samples, "samples_outside_program": prof.samples_outside,
        "sampled_events": {name: int(prof.events[:, j].sum()) for j, name in enumerate(SAMPLED_EVENTS)},
        "event_counts": {name: int(prof.occurrences[:, j].sum()) for j, name in enumerate(EVENT_COUNTERS)},
        "l1i_misses": counters[f"{l1i}.misses"], "itlb_misses": counters[f"{itlb}.misses"],
        "icache_cycle_share": stack.get("icache", 0.0) / cpi if cpi else 0.0,
        "itlb_cycle_share": stack.get("itlb", 0.0) / cpi if cpi else 0.0,
        "cpi_stack": stack, "requests": requests,
        "cycles_per_request": counters["cycles"] / requests if requests else None,
        "shape": profile_shape(tables), "sim_instructions_per_s": m.instructions_per_second(),
    }
    return ProfileRun(machine=m, tables=tables, summary=summary)
