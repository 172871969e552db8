"""``Core``: a platform's core timing model bound to its memory hierarchy, driven chunk by chunk.

>>> core = Core(platform, MemoryHierarchy(platform, seed=1))
>>> done = core.run(block)                      # all of it
>>> done = core.run(block, until_cycle=10**6)   # or up to an interval boundary; resume with the rest
>>> core.counters()["cycles"], core.cpi_stack()

Parameters that the platform files do not state:

``btb_miss_penalty``  decode redirect after a BTB miss: the fetch-to-decode distance, estimated as
                      ``max(1, round(pipeline_depth / 5))`` (1 cycle on the 7447A's 7 stages, 3 on the Xeons
                      and z10); a keyword argument overrides it
``predictor``         a predictor name from :data:`simulator.core.predictors.PREDICTORS` replacing the
                      platform's ``branch_predictor.kind`` (e.g. ``"perfect"`` as a what-if)
"""

from __future__ import annotations

import math
import time
from collections import namedtuple

import numpy as np

from whatif.simulator.core import counters as V
from whatif.simulator.core import timing as TM
from whatif.simulator.core import warming as WM
from whatif.simulator.core.predictors import P_TAGE, PredictorConfig
from whatif.simulator.errors import SimulatorInputError, constraint_error
from whatif.simulator.isa import OP_NAMES, InstrBlock, isa_for
from whatif.simulator.memory.hierarchy import MemoryHierarchy
from whatif.simulator.platform import Platform

# op class -> preferred unit names (first present in the platform's [core.units] wins)
UNIT_PREFERENCE = {
    "alu": ("ialu",), "mul": ("imul", "ialu"), "div": ("idiv", "imul", "ialu"), "fp": ("fpu", "ialu"),
    "load": ("lsu", "ialu"), "store": ("lsu", "ialu"), "branch": ("branch", "ialu"), "jump": ("branch", "ialu"),
    "call": ("branch", "ialu"), "ret": ("branch", "ialu"),
}

NO_RECORDS = np.zeros((0, TM.NREC), dtype=np.int64)     # records off: the kernel writes nothing
CoreState = namedtuple("CoreState", ["S", "rob_ring", "lq_ring", "sq_ring", "fq_ring", "reg_ready", "reg_partial",
                                     "reg_wseq", "reg_port_from", "ring_tag", "ring_cnt", "rs_bits", "ufree",
                                     "mshr", "opcount"])


def default_btb_miss_penalty(platform: Platform) -> int:
    return max(1, round(platform.core.pipeline_depth / 5))


def build_config(platform: Platform, hierarchy: MemoryHierarchy, predictor: str | None = None,
                 btb_miss_penalty: int | None = None) -> tuple[np.ndarray, np.ndarray, PredictorConfig]:
    """The kernel's configuration vector, the per-level load-to-use latencies, the predictor sizes."""
    core = platform.core
    owner = f"platform {platform.name}"
    if "ialu" not in core.units:
        raise SimulatorInputError(f"{owner}: core.units has no 'ialu' unit (the timing model needs integer ALUs; "
                                  f"units: {', '.join(core.units)})")
    for name, u in core.units.items():
        if u.count > TM.MAX_UNIT_COUNT:
            raise constraint_error(f"core.units.{name}.count", owner, f"at most {TM.MAX_UNIT_COUNT}", u.count)
    pcfg = PredictorConfig.from_platform(platform, predictor)
    cfg = np.zeros(TM.NCFG, dtype=np.int64)
    cfg[TM.K_INORDER] = int(core.kind == "in_order")
    cfg[TM.K_FW], cfg[TM.K_DW], cfg[TM.K_IW], cfg[TM.K_RW] = (core.fetch_width, core.dispatch_width,
                                                              core.issue_width, core.retire_width)
    cfg[TM.K_FQ], cfg[TM.K_ROB], cfg[TM.K_RS] = core.fetch_queue, core.rob_entries, core.rs_entries
    cfg[TM.K_LQ], cfg[TM.K_SQ] = core.load_queue, core.store_queue
    cfg[TM.K_FE] = core.mispredict_penalty
    pen = default_btb_miss_penalty(platform) if btb_miss_penalty is None else int(btb_miss_penalty)
    if pen < 0:
        raise constraint_error("btb_miss_penalty", "Core", "a non-negative number of cycles", pen)
    cfg[TM.K_BTB_PEN] = pen
    cfg[TM.K_AGI_PEN], cfg[TM.K_AGI_DIST], cfg[TM.K_GROUP] = core.agi_penalty, core.agi_distance, core.group_size
    (cfg[TM.K_PRED], cfg[TM.K_PC_SHIFT], cfg[TM.K_BHT_MASK], cfg[TM.K_CTR_MAX], cfg[TM.K_CTR_THRESH],
     cfg[TM.K_HIST_MASK], cfg[TM.K_BTB_SETS], cfg[TM.K_BTB_WAYS], cfg[TM.K_RAS_N]) = pcfg.scalars()
    names = hierarchy.level_names
    l1i, l1d = platform.top_cache("instruction"), platform.top_cache("data")
    cfg[TM.K_L1I], cfg[TM.K_L1D] = names.index(l1i), names.index(l1d)
    cfg[TM.K_ILINE_BITS] = int(math.log2(platform.caches[l1i].line_bytes))
    cfg[TM.K_DLINE_BITS] = int(math.log2(platform.caches[l1d].line_bytes))
    cfg[TM.K_NLEVELS] = len(names)
    cfg[TM.K_MSHRS] = platform.caches[l1d].mshrs
    ichain, dchain = platform.tlb_chain("instruction"), platform.tlb_chain("data")
    cfg[TM.K_ITLB1_LAT] = platform.tlbs[ichain[1]].latency_cycles if len(ichain) > 1 else 0
    cfg[TM.K_DTLB1_LAT] = platform.tlbs[dchain[1]].latency_cycles if len(dchain) > 1 else 0
    cfg[TM.K_WALK_OVH] = platform.page_walk.overhead_cycles
    cfg[TM.K_RAT] = int(isa_for(platform.isa).partial_registers)
    cfg[TM.K_DWALLOC] = int(platform.caches[l1d].write_allocate)
    cfg[TM.K_RPORTS] = core.register_read_ports
    for k, unit in enumerate(TM.UNIT_NAMES):
        spec = core.units.get(unit)
        if spec is not None:
            cfg[TM.K_UNIT_CNT + k] = spec.count
            cfg[TM.K_UNIT_LAT + k] = spec.latency
            cfg[TM.K_UNIT_PIPE + k] = int(spec.pipelined)
    for op, name in enumerate(OP_NAMES):
        unit = next(u for u in UNIT_PREFERENCE[name] if u in core.units)
        cfg[TM.K_UNIT_OF_OP + op] = TM.UNIT_NAMES.index(unit)
    lat = np.array([platform.caches[n].latency_cycles for n in names] + [platform.memory.latency_cycles],
                   dtype=np.int64)
    return cfg, lat, pcfg


def new_state(cfg: np.ndarray) -> CoreState:
    # the per-register arrays are rows of one allocation, at fixed distances (with a per-register port array
    # beside them as separate arrays the kernel's speed varied by up to 30 % between processes; whether 4K
    # aliasing was the cause is not settled: one arena for every small array varied as much)
    regs = np.zeros((4, TM.NREG), np.int64)
    reg_ready, reg_partial, reg_wseq, reg_port_from = regs
    reg_partial[:] = -1
    reg_wseq[:] = -1
    reg_port_from[:] = 0                     # never written, never read: a read from the first cycle on
    reg_port_from[0] = TM.PORT_NEVER         # slot 0, no register
    return CoreState(
        S=TM.initial_scalars(),
        rob_ring=np.zeros(cfg[TM.K_ROB], np.int64), lq_ring=np.zeros(cfg[TM.K_LQ] + 1, np.int64),
        sq_ring=np.zeros(cfg[TM.K_SQ], np.int64), fq_ring=np.zeros(cfg[TM.K_FQ], np.int64),
        reg_ready=reg_ready, reg_partial=reg_partial, reg_wseq=reg_wseq, reg_port_from=reg_port_from,
        ring_tag=np.full(TM.RING, -1, np.int64), ring_cnt=np.zeros((TM.RING, TM.RING_COLS), np.int16),
        rs_bits=np.zeros(TM.RS_WORDS, np.uint64), ufree=np.zeros((TM.NUNIT, TM.MAX_UNIT_COUNT), np.int64),
        mshr=np.zeros((cfg[TM.K_MSHRS], TM.MSHR_WORDS), np.int64), opcount=np.zeros(len(OP_NAMES), np.int64))


class Core:
    """The core timing model of ``platform`` driving ``memory_hierarchy`` (built from the platform and
    ``seed`` when not given).  Counters are cumulative over all :meth:`run` calls."""

    def __init__(self, platform: Platform, memory_hierarchy: MemoryHierarchy | None = None, seed: int = 0, *,
                 predictor: str | None = None, btb_miss_penalty: int | None = None):
        self.platform = platform
        self.seed = int(seed)
        self.memory = memory_hierarchy if memory_hierarchy is not None else MemoryHierarchy(platform, seed)
        if self.memory.platform is not platform and self.memory.platform != platform:
            raise SimulatorInputError(f"Core: the memory hierarchy was built for platform "
                                      f"{self.memory.platform.name!r}, not {platform.name!r}")
        self.cfg, self.lat, self.predictor_config = build_config(platform, self.memory, predictor, btb_miss_penalty)
        self.state = new_state(self.cfg)
        self.predictor_state = self.predictor_config.new_state()
        # the kernels' last argument: given (True) only for TAGE, left out otherwise (predict_control)
        self._tage = (True,) if self.predictor_config.kind == P_TAGE else ()
        self.CT = np.zeros(V.NCOUNTERS, dtype=np.int64)
        self.CS = np.zeros(V.NCAUSES, dtype=np.int64)
        self.simulation_seconds = 0.0
        self.warming_stall_cycles = 0      # cycles paced functional warming's clock stood for the memory channel
        self._stand_ins = None             # cache warming's stand-ins of the L1s and first-level TLBs (warm_caches)
        names = self.memory.level_names
        data_levels = [names.index(n) for n in platform.cache_chain("data")]
        # the CPI stack's causes and their rows of CS, in the order of cycle_stack()
        self.cause_rows = {n: i for i, n in enumerate(V.FIXED_CAUSES)}
        for lv in data_levels:
            self.cause_rows[f"data_{names[lv]}"] = V.CS_DATA0 + lv
        self.cause_rows["data_memory"] = V.CS_DATA0 + len(names)

    # ------------------------------------------------------------------ running
    def run(self, block: InstrBlock, until_cycle: int | None = None, start: int = 0, stop: int | None = None,
            records: np.ndarray | None = None) -> int:
        """Simulate ``block[start:stop]`` in program order; returns how many instructions were consumed.

        With ``until_cycle``, stops after the first instruction that retires at or after that cycle
        (so ``counters()["cycles"] > until_cycle`` then); resume with ``run(block, start=start + n)``.
        ``records`` (int64, ``len(block)`` rows of :data:`~simulator.core.timing.NREC`) receives each
        simulated instruction's schedule and event intervals in the row of its block position, for the
        instruction profiler (:mod:`simulator.core.profiler`); without it nothing is recorded."""
        n = len(block)
        if start < 0 or start > n:
            raise ValueError(f"start {start} outside the block of {n} instructions")
        end = n if stop is None else int(stop)
        if end < start or end > n:
            raise ValueError(f"stop {stop} outside [{start}, {n}]")
        arrays = block.kernel_arrays()
        until = -1 if until_cycle is None else int(until_cycle)
        if records is None:
            records = NO_RECORDS
        elif records.dtype != np.int64 or records.shape != (n, TM.NREC) or not records.flags.c_contiguous:
            raise ValueError(f"records: expected contiguous int64[{n}, {TM.NREC}], got {records.dtype}{records.shape}")
        t0 = time.perf_counter()
        done = TM.simulate(self.cfg, self.lat, *self.state, *self.predictor_state, self.CT, self.CS,
                           tuple(self.memory.state), *arrays, start, end, until, records, *self._tage)
        dt = time.perf_counter() - t0
        self.simulation_seconds += dt
        return int(done)

    def warm(self, block: InstrBlock, start: int = 0, stop: int | None = None, now: int | None = None,
             cpi: float = 1.0, pace: bool = False) -> int:
        """Functionally warm ``block[start:stop]``: the fetches, data accesses and branch predictions the
        timing kernel would make, without timing (:mod:`simulator.core.warming`); the memory kernel's
        clock reads ``now`` (default: the core's cycles) plus ``cpi`` cycles per instruction, and with
        ``pace`` the cycles it stood for the memory channel (added to :attr:`warming_stall_cycles`).
        Counters, CPI stack and pipeline are untouched; returns the number of instructions warmed."""
        pc, op, size, _, _, _, _, mem_addr, mem_size, taken, target, _ = block.kernel_arrays()
        return self._warming(block, start, stop, now, cpi, lambda first, end, now0, cpi_q16: WM.warm(
            self.cfg, self.state.S, *self.predictor_state, tuple(self.memory.state), pc, op, size, mem_addr, mem_size,
            taken, target, first, end, now0, cpi_q16, bool(pace), *self._tage))

    def warm_caches(self, block: InstrBlock, start: int = 0, stop: int | None = None, now: int | None = None,
                    cpi: float = 1.0, pace: bool = False) -> int:
        """Cache-warm ``block[start:stop]`` (:func:`~simulator.core.warming.warm_caches`): the levels below the
        L1s, the TLBs and the page walks see the instructions' lines through stand-ins of the L1s; no predictor,
        no L1, no pipeline.  Clock and pacing as :meth:`warm`; returns the number of instructions warmed."""
        if self._stand_ins is None:
            self._stand_ins = self.memory.l1_stand_ins()
        return self._warming(block, start, stop, now, cpi, lambda first, end, now0, cpi_q16: WM.warm_caches(
            tuple(self.memory.state), *self._stand_ins, block.pc, block.op, block.mem_addr, first, end, now0, cpi_q16,
            bool(pace)))

    def _warming(self, block: InstrBlock, start: int, stop: int | None, now: int | None, cpi: float, kernel) -> int:
        """Check ``block[start:stop]`` and ``cpi``, run ``kernel(start, stop, now, cpi x 65536)`` (a warming kernel,
        which returns the cycles its clock stood for the channel) and book its cycles and time."""
        n = len(block)
        end = n if stop is None else int(stop)
        if start < 0 or end < start or end > n:
            raise ValueError(f"[{start}, {stop}) outside the block of {n} instructions")
        if not cpi > 0:
            raise ValueError(f"cpi must be > 0, got {cpi}")
        t0 = time.perf_counter()
        stall = kernel(int(start), end, self.cycles if now is None else int(now), max(1, round(cpi * WM.CPI_ONE)))
        self.warming_stall_cycles += int(stall)
        self.simulation_seconds += time.perf_counter() - t0
        return end - int(start)

    def make_functional(self) -> None:
        """From now on :meth:`run` warms instead of timing (:meth:`warm`): a cache simulation of whatever
        runs on this core -- every stream through its caches, TLBs and predictors, no cycles counted.  The
        memory kernel's clock (for prefetch engines) advances a cycle an instruction."""
        clock = [self.cycles]

        def run(block: InstrBlock, *args, **kwargs) -> int:
            done = self.warm(block, now=clock[0])
            clock[0] += len(block)
            return done

        self.run = run

    def shift_time(self, cycles: int) -> None:
        """Resume ``cycles`` later: the pipeline as it was, its clock (and ``cycles``) moved on, as after a
        stretch of functionally warmed instructions that took that long (:func:`~simulator.core.warming.shift_time`)."""
        WM.shift_time(self.state, self.CT, cycles)

    # ------------------------------------------------------------------ results
    @property
    def cycles(self) -> int:
        return int(self.CT[V.CT_CYCLES])

    @property
    def instructions(self) -> int:
        return int(self.CT[V.CT_INSTRUCTIONS])

    def counters(self, memory: bool = True) -> dict:
        """Cumulative generic counters (see :mod:`simulator.core.counters`), plus the memory hierarchy's
        counters under ``"memory"``."""
        out: dict = {name: int(self.CT[i]) for i, name in enumerate(V.COUNTER_NAMES)}
        if memory:
            out["memory"] = self.memory.counters()
        return out

    def cycle_stack(self) -> dict[str, int]:
        """Cycles per CPI-stack cause; sums exactly to ``cycles``."""
        return {name: int(self.CS[i]) for name, i in self.cause_rows.items()}

    def cpi_stack(self) -> dict[str, float]:
        """CPI per cause (cycles per cause / instructions); sums to the CPI."""
        n = self.instructions
        return {name: (c / n if n else 0.0) for name, c in self.cycle_stack().items()}

    @property
    def instructions_per_second(self) -> float:
        return self.instructions / self.simulation_seconds if self.simulation_seconds else 0.0
