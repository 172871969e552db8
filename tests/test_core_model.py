"""The Core driver: configuration from the platform file, counters, CPI stacks, errors."""

from __future__ import annotations

import numpy as np
import pytest

from whatif.simulator.core import Core, cause_names
from whatif.simulator.core import counters as V
from whatif.simulator.core import microbench as MB
from whatif.simulator.core import timing as TM
from whatif.simulator.core.model import build_config, default_btb_miss_penalty
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.isa import OP_DIV, OP_FP, OP_LOAD, OP_MUL
from whatif.simulator.memory.hierarchy import MemoryHierarchy
from whatif.simulator.platform import load_platform


def test_configuration_comes_from_the_platform_file():
    p = load_platform("nehalem")
    cfg, lat, pcfg = build_config(p, MemoryHierarchy(p))
    assert cfg[TM.K_INORDER] == 0 and cfg[TM.K_ROB] == 128 and cfg[TM.K_RS] == 36 and cfg[TM.K_FE] == 17
    assert cfg[TM.K_LQ] == 48 and cfg[TM.K_SQ] == 32 and cfg[TM.K_MSHRS] == 10 and cfg[TM.K_DTLB1_LAT] == 7
    assert cfg[TM.K_RAT] == 1                      # x86 has partial registers
    assert lat.tolist() == [3, 4, 10, 38, 180]     # L1I, L1D, L2, L3, memory
    div = TM.UNIT_NAMES.index("idiv")
    assert cfg[TM.K_UNIT_OF_OP + OP_DIV] == div and cfg[TM.K_UNIT_LAT + div] == 22 and cfg[TM.K_UNIT_PIPE + div] == 0
    assert pcfg.history_bits == 14
    z = load_platform("z10")
    zcfg, _, _ = build_config(z, MemoryHierarchy(z))
    assert zcfg[TM.K_INORDER] == 1 and zcfg[TM.K_AGI_PEN] == 5 and zcfg[TM.K_GROUP] == 2 and zcfg[TM.K_RAT] == 0


def test_btb_miss_penalty_estimate_and_override():
    assert default_btb_miss_penalty(load_platform("mpc7447a")) == 1
    assert default_btb_miss_penalty(load_platform("nehalem")) == 3
    p = load_platform("nehalem")
    cfg, _, _ = build_config(p, MemoryHierarchy(p), btb_miss_penalty=9)
    assert cfg[TM.K_BTB_PEN] == 9
    with pytest.raises(SimulatorInputError, match="The 'btb_miss_penalty' parameter of Core must be"):
        Core(p, btb_miss_penalty=-1)


def test_bad_configurations_raise_one_line_errors():
    p = load_platform("nehalem")
    units = {k: v.model_dump() for k, v in p.core.units.items() if k != "ialu"}
    no_alu = p.model_copy(update={"core": p.core.model_copy(update={"units": {k: type(p.core.units["ialu"])(**v)
                                                                                for k, v in units.items()}})})
    with pytest.raises(SimulatorInputError, match="no 'ialu' unit"):
        Core(no_alu)
    wide = load_platform("nehalem", ["core.units.ialu.count=9"])
    with pytest.raises(SimulatorInputError, match="core.units.ialu.count"):
        Core(wide)
    with pytest.raises(SimulatorInputError, match="unknown branch predictor"):
        Core(p, predictor="oracle")
    other = MemoryHierarchy(load_platform("westmere"))
    with pytest.raises(SimulatorInputError, match="built for platform 'westmere'"):
        Core(p, other)


def test_counters_hold_generic_and_memory_counters():
    p = load_platform("mpc7447a")
    core = Core(p, seed=2)
    block = MB.random_program(5000, 1, p.isa)
    core.run(block)
    c = core.counters()
    assert set(c) == set(V.COUNTER_NAMES) | {"memory"}
    assert c["instructions"] == 5000
    ops = np.bincount(block.op, minlength=10)
    assert c["loads"] == ops[OP_LOAD] and c["fp"] == ops[OP_FP]
    assert c["other"] == c["instructions"] - c["loads"] - c["stores"] - c["branches"] - c["fp"]
    assert c["other"] == ops[0] + ops[OP_MUL] + ops[OP_DIV]
    assert c["dispatched"] == c["instructions"] + c["dispatched_wrong_path"]
    assert c["mispredicts"] == c["mispredicts_direction"] + c["mispredicts_target"]
    # the memory hierarchy saw exactly the core's data accesses
    l1d = c["memory"]["levels"]["L1D"]
    assert l1d["load_accesses"] == c["loads"] and l1d["store_accesses"] == c["stores"]
    assert c["memory"]["levels"]["L1I"]["instr_accesses"] == c["fetch_accesses"]


def test_cpi_stack_names_follow_the_data_levels():
    p = load_platform("nehalem")
    core = Core(p)
    assert list(core.cycle_stack()) == list(V.FIXED_CAUSES) + ["data_L1D", "data_L2", "data_L3", "data_memory"]
    assert cause_names(["L1I", "L1D", "L2"])[-4:] == ["data_L1I", "data_L1D", "data_L2", "data_memory"]
    z = Core(load_platform("z10"))
    assert [k for k in z.cycle_stack() if k.startswith("data_")] == ["data_L1D", "data_L1_5", "data_L2", "data_memory"]


def test_mispredicts_cost_the_pipeline_refill():
    """The same random branch stream with the platform predictor and with the perfect one: the extra
    cycles per mispredict are at least the mispredict penalty (resolution time comes on top)."""
    p = load_platform("nehalem")
    block = MB.random_branch(20000, 0.5, seed=1, isa=p.isa)
    real, perfect = Core(p), Core(p, predictor="perfect")
    real.run(block)
    perfect.run(block)
    extra = (real.cycles - perfect.cycles) / real.counters(memory=False)["mispredicts"]
    assert p.core.mispredict_penalty <= extra <= p.core.mispredict_penalty + 6
    stack = real.cycle_stack()
    assert stack["branch_mispredict"] / real.counters(memory=False)["mispredicts"] >= p.core.mispredict_penalty
    assert perfect.cycle_stack()["branch_mispredict"] == 0


def test_store_queue_and_rob_stalls_arise_from_their_structures():
    p = load_platform("nehalem")
    block = MB.random_program(20000, 3, p.isa, mix=(0.3, 0, 0, 0, 0.2, 0.5, 0, 0, 0, 0), data_kb=65536)
    small = Core(load_platform("nehalem", ["core.store_queue=4"]))
    big = Core(load_platform("nehalem", ["core.store_queue=256"]))
    small.run(block)
    big.run(block)
    assert small.counters(memory=False)["stall_store_queue_full"] > 10 * big.counters(memory=False)[
        "stall_store_queue_full"]
    assert small.cycles > big.cycles
    rob = Core(load_platform("nehalem", ["core.rob_entries=16"]))
    rob.run(block)
    assert rob.counters(memory=False)["stall_rob_full"] > big.counters(memory=False)["stall_rob_full"]


def test_more_mshrs_overlap_more_misses():
    p = load_platform("nehalem")
    # independent loads to distinct far lines: memory-level parallelism is bounded by the L1D's MSHRs
    n = 4000
    block = MB.independent_ops(n, p.isa, {OP_LOAD: 1})
    m_ = len(block)
    block.mem_addr[:] = np.where(block.op == OP_LOAD, 0x40000000 + np.arange(m_, dtype=np.uint64) * 4096 * 3, 0)
    times = {}
    for m in (1, 4, 16):
        core = Core(load_platform("nehalem", [f"l1d.mshrs={m}", "l1d.prefetchers=[]", "l2.prefetchers=[]",
                                              "memory.page_kb=2048"]))
        core.run(block)
        times[m] = core.cycles
    assert times[1] > 3 * times[4] > 3 * times[16] * 0.9
