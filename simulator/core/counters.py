"""The generic counters of the core timing model and the causes of its CPI stack.

Generic counters are what the core model counts, named independently of any
vendor's PMU; the platform event lists (``pmu.events`` in the platform files)
map onto them together with the memory hierarchy's counters.  Every counter is
cumulative over the runs of one :class:`simulator.core.Core`.

Stall counters come in two families:

* **dispatch side** (``stall_*``): cycles in which rename/allocate dispatched
  nothing, each cycle charged to exactly one cause.  When the front end has
  delivered no instruction the cycle is a front-end cause (``branch_miss_clear``,
  ``icache``, ``itlb``, ``btb``, ``fetch``); when an instruction is waiting, the
  first full structure in the order ROB, RS, load queue, store queue, serialisation,
  RAT is charged (Intel's ``RESOURCE_STALLS.*`` and ``RAT_STALLS.ANY``).
* **issue side, in-order cores** (``issue_stall_*``): cycles the in-order issue
  stage waited, by cause (completion window full, operands not ready, the
  address-generation interlock, functional unit / pairing).

The CPI stack is retirement-side: every cycle is either a *base* cycle (at
least one instruction retired) or a stall cycle, charged to the oldest
unretired instruction by the phase of its life it was in (see
:mod:`simulator.core.timing`).  It sums exactly to ``cycles``.

PMU events and the quantities they come from (the lead's mapping builds on these):

=============================== =====================================================
Harpertown RESOURCE_STALLS.LD_ST  stall_load_queue_full + stall_store_queue_full
RESOURCE_STALLS.BR_MISS_CLEAR     stall_branch_miss_clear
Nehalem/Westmere .LOAD, .STORE    stall_load_queue_full, stall_store_queue_full
RESOURCE_STALLS.ROB_FULL, RS_FULL stall_rob_full, stall_rs_full
RAT_STALLS.ANY                    stall_rat
BR_INST_RETIRED.MISPRED           mispredicts
7447A instd / inst                dispatched / instructions
7447A br_mpred, ld, st, fpu, br   mispredicts, loads, stores, fp, branches
7447A other                       other (= instructions - loads - stores - branches - fp)
z10 AGIstall                      issue_stall_agi (cycles) or agi_events (occurrences)
=============================== =====================================================
"""

from __future__ import annotations

# ---- generic counters: (name, meaning) in index order ------------------------------------------
COUNTERS: tuple[tuple[str, str], ...] = (
    ("cycles", "core cycles: the retirement cycle of the last instruction + 1"),
    ("instructions", "instructions retired (correct path)"),
    ("dispatched", "instructions dispatched, correct path plus modelled wrong path"),
    ("dispatched_wrong_path", "wrong-path instructions dispatched between a mispredicted branch's dispatch "
                              "and its resolution (dispatch_width per cycle, at most rob_entries - 1)"),
    ("loads", "load instructions"),
    ("stores", "store instructions"),
    ("branches", "control transfers: conditional branches, jumps, calls and returns"),
    ("conditional_branches", "conditional branches"),
    ("taken_branches", "taken control transfers"),
    ("fp", "floating-point instructions"),
    ("other", "instructions - loads - stores - branches - fp"),
    ("mispredicts", "control transfers resolved against their prediction (direction or target), "
                    "each costing a front-end redirect at resolution"),
    ("mispredicts_direction", "conditional branches whose direction was mispredicted"),
    ("mispredicts_target", "taken transfers whose predicted target was wrong (BTB or return stack)"),
    ("btb_lookups", "BTB/BTIC lookups (predicted-taken transfers other than returns)"),
    ("btb_misses", "BTB/BTIC misses: the target comes from decode, a redirect of btb_miss_penalty cycles"),
    ("ras_mispredicts", "returns whose return-stack prediction was wrong or missing"),
    ("fetch_accesses", "instruction-cache accesses (one per new line or after a taken transfer)"),
    ("stall_rob_full", "dispatch stalled: reorder buffer / completion queue full"),
    ("stall_rs_full", "dispatch stalled: reservation stations / issue queue full"),
    ("stall_load_queue_full", "dispatch stalled: load queue full (a load waiting)"),
    ("stall_store_queue_full", "dispatch stalled: store queue full (a store waiting; entries free when the "
                               "store drains to the cache after retirement)"),
    ("stall_serialize", "dispatch stalled around a serialising instruction"),
    ("stall_rat", "dispatch stalled in rename: a full read of a register or of the flags whose last write "
                  "was partial and has not retired (partial-register / partial-flags stall), or more retired "
                  "registers to read than the register read ports give in a cycle (ROB read-port stall)"),
    ("stall_branch_miss_clear", "dispatch starved: the front end refills after a mispredicted branch"),
    ("stall_btb", "dispatch starved: decode redirect after a BTB miss"),
    ("stall_icache", "dispatch starved: instruction-cache miss"),
    ("stall_itlb", "dispatch starved: instruction-TLB miss (second-level TLB latency, page walk)"),
    ("stall_fetch", "dispatch starved: fetch bandwidth, taken-transfer bubbles, pipeline fill"),
    ("issue_stall_completion", "in-order issue stalled: completion window (rob_entries past issue) full"),
    ("issue_stall_operands", "in-order issue stalled: source operands not ready"),
    ("issue_stall_agi", "in-order issue stalled: address-generation interlock"),
    ("issue_stall_unit", "in-order issue stalled: functional unit busy (non-pipelined unit)"),
    ("agi_events", "loads/stores that suffered an address-generation interlock"),
    ("rat_events", "instructions that suffered a RAT stall (partial register or flags, or read ports)"),
    ("issue_groups", "in-order cores: issue groups formed"),
    ("mshr_wait_cycles", "cycles L1D misses waited for a free miss-status holding register"),
    ("load_miss_merges", "loads that hit a line still being filled (merged into its MSHR)"),
    ("rat_read_port_events", "instructions renamed a cycle late because the register read ports were taken "
                             "(RAT_STALLS.ROB_READ_PORT occurrences)"),
    ("l1d_prefetch_fills", "prefetches into the L1D; each holds an MSHR until its line arrives, the supplying "
                           "level's latency after the access that triggered it"),
    ("late_prefetches", "loads and stores that found their line still being brought in by an L1D prefetch "
                        "(they wait for the rest of its latency)"),
)
COUNTER_NAMES: tuple[str, ...] = tuple(n for n, _ in COUNTERS)
COUNTER_INDEX: dict[str, int] = {n: i for i, n in enumerate(COUNTER_NAMES)}
NCOUNTERS = len(COUNTERS)

(CT_CYCLES, CT_INSTRUCTIONS, CT_DISPATCHED, CT_WRONG_PATH, CT_LOADS, CT_STORES, CT_BRANCHES, CT_COND,
 CT_TAKEN, CT_FP, CT_OTHER, CT_MISPRED, CT_MISPRED_DIR, CT_MISPRED_TGT, CT_BTB_LOOKUPS, CT_BTB_MISSES,
 CT_RAS_MISPRED, CT_FETCH_ACC, CT_ST_ROB, CT_ST_RS, CT_ST_LQ, CT_ST_SQ, CT_ST_SERIAL, CT_ST_RAT, CT_ST_BRCLEAR,
 CT_ST_BTB, CT_ST_ICACHE, CT_ST_ITLB, CT_ST_FETCH, CT_IS_COMPLETION, CT_IS_OPERANDS, CT_IS_AGI, CT_IS_UNIT,
 CT_AGI_EVENTS, CT_RAT_EVENTS, CT_GROUPS, CT_MSHR_WAIT, CT_MERGES, CT_PORT_EVENTS, CT_PF_FILLS, CT_LATE_PF) = \
    range(NCOUNTERS)

# ---- CPI-stack causes ---------------------------------------------------------------------------
# Fixed causes first; data-memory causes follow, one per cache level (in the hierarchy's level order)
# and one for memory, named data_<LEVEL> / data_memory by the Core.
CAUSES: tuple[tuple[str, str], ...] = (
    ("base", "cycles in which at least one instruction retired"),
    ("branch_mispredict", "front-end refill after a mispredicted branch resolved"),
    ("frontend", "fetch bandwidth, taken-transfer bubbles, pipeline fill"),
    ("btb", "decode redirect after a BTB miss"),
    ("icache", "instruction-cache misses"),
    ("itlb", "instruction-TLB misses"),
    ("resource", "the oldest instruction could not dispatch: a full back-end structure (store queue "
                 "draining, ...)"),
    ("serialize", "serialising instructions"),
    ("rat", "rename stalls: partial-register / partial-flags merges, register read ports"),
    ("dependency", "the oldest instruction waited for source operands"),
    ("execution", "functional-unit latency and contention of non-memory operations"),
    ("agi", "address-generation interlock (in-order cores)"),
    ("dtlb", "data-TLB misses: second-level TLB latency and page walks"),
)
FIXED_CAUSES: tuple[str, ...] = tuple(n for n, _ in CAUSES)
(CS_BASE, CS_BRANCH, CS_FRONTEND, CS_BTB, CS_ICACHE, CS_ITLB, CS_RESOURCE, CS_SERIAL, CS_RAT, CS_DEPENDENCY,
 CS_EXECUTION, CS_AGI, CS_DTLB) = range(len(CAUSES))
CS_DATA0 = len(CAUSES)            # CS_DATA0 + level: data supplied by that cache level; + nlevels: memory
MAX_DATA_LEVELS = 9               # up to 8 cache levels + memory
NCAUSES = CS_DATA0 + MAX_DATA_LEVELS


def cause_names(level_names: list[str]) -> list[str]:
    """Names of all CPI-stack causes for a hierarchy with these cache levels (core outwards)."""
    data = [f"data_{name}" for name in level_names] + ["data_memory"]
    return list(FIXED_CAUSES) + data
