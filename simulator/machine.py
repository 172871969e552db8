"""A platform running a workload: synthesis, the core timing model with its memory hierarchy, OS noise.

``Machine`` is what the studies, ``whatif simulate`` and the sampling engine
drive: it generates the workload's instructions block by block, feeds them to
the core, and interrupts the program with the kernel's timer handler, ``HZ``
handlers a simulated second, each as one burst or spread over its period in
pieces as the time scale asks (:mod:`simulator.osnoise`).  It is cycle driven:
``advance_to(cycle)`` runs until the core's cycle count reaches ``cycle``.
``counters()`` add ``os_instructions``, ``os_ticks`` (handlers completed) and
``os_cycles`` (cycles the clock moved while the handler's instructions ran).

Seeds: ``seed`` fixes the static program (the binary); ``run_seed`` fixes what
varies from one run of the same binary to the next on a real machine — the
physical page placement, the timer phase and the handler's work, and the
program's data-dependent choices.  ``input_seed`` (default ``run_seed``) takes the data-dependent
choices (branch outcomes, random addresses, indirect-call targets: what the program's input decides)
out of ``run_seed``: runs with one ``input_seed`` are runs of one binary on one input, and differ
only in page placement and the timer, as replicate measurements of a benchmark do.

Sampled runs: :meth:`Machine.warm_functionally` consumes program instructions without timing them —
caches, TLBs, prefetchers and predictors see them (SMARTS functional warming, :mod:`simulator.core.warming`)
and the core's clock moves on at an assumed CPI — so :mod:`simulator.smarts` can time only periodic units
of the program in detail.

Profiling: with ``profile_every=N`` an :class:`~simulator.core.profiler.InstructionProfiler` samples the
core every N cycles of the measured run (after any warm-up) and counts events and edges per static
instruction of the program; :meth:`Machine.profile` returns it once the run is over.  Without it the
core records nothing.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable

import numpy as np

from whatif.simulator.core import Core
from whatif.simulator.core import counters as CV
from whatif.simulator.core import timing as TM
from whatif.simulator.core.profiler import InstructionProfiler
from whatif.simulator.isa import InstrBlock, isa_for
from whatif.simulator.memory import state as MS
from whatif.simulator.memory.hierarchy import MemoryHierarchy
from whatif.simulator.osnoise import TimerInterrupts, TimerNoise
from whatif.simulator.platform import Platform
from whatif.simulator.schema import flatten

BLOCK = 1 << 16
EVER = int(np.iinfo(np.int64).max)     # a cycle or position no run reaches


class Machine:
    def __init__(self, platform: Platform, workload: Any, instructions: int, seed: int = 0,
                 run_seed: int | None = None, noise: TimerNoise | None = TimerNoise(), predictor: str | None = None,
                 block_size: int = BLOCK, input_seed: int | None = None, profile_every: int | None = None):
        from whatif.simulator.synth import Synthesizer

        run_seed = seed if run_seed is None else run_seed
        self.platform = platform
        self.instructions_target = int(instructions)
        self.clock_hz = platform.clock_ghz * 1e9
        isa = isa_for(platform.isa)
        self.memory = MemoryHierarchy(platform, seed=run_seed)
        self.core = Core(platform, self.memory, seed=run_seed, predictor=predictor)
        self.synth = Synthesizer(workload, isa, seed=seed, instructions=instructions,
                                 run_seed=run_seed if input_seed is None else input_seed)
        self._buffer = InstrBlock.empty(min(block_size, max(1, self.instructions_target)))
        self.block = self._buffer
        self.pos = len(self.block)           # consumed position in the current block (empty at start)
        self.fence: int | None = None        # program position no block crosses (live-points align to it)
        self.program_retired = 0             # instructions of the program (not the OS) consumed
        self.noise = noise
        self.timer = None if noise is None else \
            TimerInterrupts(noise, isa, self.clock_hz, np.random.default_rng(run_seed))
        self._os_records: np.ndarray | None = None
        self.os_cycles = 0                  # cycles the clock moved while the timer's pieces ran (retire side)
        self.origin = 0                               # core cycle where the measured run starts
        self._base: dict[str, int] | None = None      # counters at the end of the warm-up
        self._base_stack: dict[str, int] = {}
        self.host_seconds = 0.0
        self.on_retired: Callable[[int], None] | None = None   # told the program instructions of each step
        self.profiler: InstructionProfiler | None = None
        self._records: np.ndarray | None = None
        if profile_every is not None:
            self.profiler = self._new_profiler(profile_every)
            self._records_buffer = np.zeros((len(self.block), TM.NREC), dtype=np.int64)
            self._records = self._records_buffer

    # ------------------------------------------------------------------ running
    @property
    def finished(self) -> bool:
        return self.program_retired >= self.instructions_target

    @property
    def cycles(self) -> int:
        """Cycles since the start of the measured run (after any warm-up)."""
        return self.core.cycles - self.origin

    def _new_profiler(self, period: int) -> InstructionProfiler:
        profiler = InstructionProfiler(self.synth.program, period, self.platform.core.mispredict_penalty)
        profiler.start(self.core.cycles)
        return profiler

    def _refill(self) -> None:
        end = self.instructions_target
        if self.fence is not None and self.program_retired < self.fence < end:
            end = self.fence
        n = min(len(self._buffer), end - self.program_retired)
        if n != len(self.block):
            self.block = self._buffer.head(n)
            if self._records is not None:
                self._records = self._records_buffer[:n]
        self.synth.fill(self.block)
        self.pos = 0

    def _run_core(self, block: InstrBlock, records: np.ndarray | None, until_cycle: int, start: int,
                  stop: int | None = None) -> int:
        """``core.run`` of ``block[start:stop]``, its records folded into the profiler when profiling."""
        n = self.core.run(block, until_cycle=until_cycle, start=start, stop=stop, records=records)
        if records is not None:
            self.profiler.consume(records[start:start + n], block.pc[start:start + n], n)
        return n

    @property
    def os_instructions(self) -> int:
        """Timer-handler instructions retired so far."""
        return 0 if self.timer is None else self.timer.instructions

    @property
    def os_ticks(self) -> int:
        """Timer handlers completed so far."""
        return 0 if self.timer is None else self.timer.ticks

    def _os_due(self) -> bool:
        timer = self.timer
        return timer is not None and (timer.running or self.core.cycles >= timer.next_due)

    def _tick_step(self, until_cycle: int) -> None:
        """Run the timer interrupt's work — the piece due, started here, or one in progress — until it
        ends or the core reaches ``until_cycle``: a piece is preemptible by the sampling engine's
        reads, so an interval shorter than a piece still sees the cycles spent in it."""
        timer = self.timer
        if not timer.running and timer.start() and self.profiler is not None:
            self._os_records = np.zeros((len(timer.block), TM.NREC), dtype=np.int64)
        before = self.core.cycles
        timer.done(self._run_core(timer.block, self._os_records if self.profiler is not None else None,
                                  until_cycle, timer.pos, timer.stop))
        self.os_cycles += self.core.cycles - before

    def advance_to(self, cycle: int, program_limit: int | None = None) -> bool:
        """Run until the measured run reaches ``cycle`` (or the program ends, or ``program_limit`` program
        instructions have retired); False once the program has ended before reaching it."""
        t0 = time.perf_counter()
        target = min(cycle + self.origin, EVER)      # (Python ints: no overflow here)
        try:
            while self.core.cycles < target and not self.finished and \
                    (program_limit is None or self.program_retired < program_limit):
                if self._os_due():
                    self._tick_step(target)
                    continue
                if self.pos >= len(self.block):
                    self._refill()
                    if self.finished:
                        break
                stop = target
                if self.timer is not None and self.timer.next_due < stop:
                    stop = self.timer.next_due
                end = len(self.block) if program_limit is None else \
                    min(len(self.block), self.pos + program_limit - self.program_retired)
                n = self._run_core(self.block, self._records, stop, self.pos, end)
                self._consumed(n)
            return self.core.cycles >= target
        finally:
            self.host_seconds += time.perf_counter() - t0

    def warm_functionally(self, instructions: int, cpi: float = 1.0) -> "Machine":
        """SMARTS functional warming (:mod:`simulator.core.warming`): the next ``instructions`` program
        instructions, and the timer interrupts' handlers that fall among them, go through the caches,
        TLBs, prefetchers and branch predictors without timing and without being counted.  They are taken
        to run at ``cpi`` cycles per instruction: that is the clock the memory kernel's prefetch engines
        and the timer see, and the core resumes that many cycles later (:meth:`Core.shift_time`), plus the
        cycles the clock stood for the memory channel where the instructions asked it for more than its
        bandwidth at that CPI (paced warming, :mod:`simulator.core.warming`)."""
        limit = self._untimed_limit(instructions, cpi, "functional warming")
        t0 = time.perf_counter()
        clock = float(self.core.cycles)
        timer = self.timer
        try:
            while self.program_retired < limit:
                if timer is not None and not timer.running and clock >= timer.next_due:
                    timer.start()
                if timer is not None and timer.running:   # the piece due (or one a detailed run left unfinished)
                    n = timer.stop - timer.pos
                    clock = self._warm_piece(timer.block, timer.pos, timer.stop, clock, cpi)
                    timer.done(n)
                    continue
                if self.pos >= len(self.block):
                    self._refill()
                n = min(len(self.block) - self.pos, limit - self.program_retired)
                if timer is not None:                     # up to the next piece of the timer's work
                    n = max(1, min(n, math.ceil((timer.next_due - clock) / cpi)))
                clock = self._warm_piece(self.block, self.pos, self.pos + n, clock, cpi)
                self._consumed(n)
        finally:
            self.core.shift_time(int(clock) - self.core.cycles)
            self.host_seconds += time.perf_counter() - t0
        return self

    def warm_caches(self, instructions: int, cpi: float = 1.0) -> "Machine":
        """Cache warming, bounded SMARTS's cheap warming (:mod:`simulator.smarts`): the next ``instructions``
        program instructions go through the levels below the L1s, the TLBs and the page walks only
        (:meth:`Core.warm_caches`), which is what the last-level cache, whose lines are reused at distances far
        longer than any detailed warm-up, needs; predictors and L1s stay as they were.  The clock moves on
        ``cpi`` cycles an instruction, paced by the memory channel as :meth:`warm_functionally`'s, and the
        timer's work due meanwhile is dropped, as :meth:`fast_forward` drops it."""
        limit = self._untimed_limit(instructions, cpi, "cache warming")
        t0 = time.perf_counter()
        clock = float(self.core.cycles)
        try:
            while self.program_retired < limit:
                if self.pos >= len(self.block):
                    self._refill()
                n = min(len(self.block) - self.pos, limit - self.program_retired)
                stood = self.core.warming_stall_cycles
                self.core.warm_caches(self.block, self.pos, self.pos + n, now=int(clock), cpi=cpi, pace=True)
                clock += n * cpi + self.core.warming_stall_cycles - stood
                self._consumed(n)
        finally:
            self.core.shift_time(int(clock) - self.core.cycles)
            if self.timer is not None:
                self.timer.skip_to(self.core.cycles)
            self.host_seconds += time.perf_counter() - t0
        return self

    def fast_forward(self, instructions: int, cpi: float = 1.0) -> "Machine":
        """Consume the next ``instructions`` program instructions unseen: the program's control flow and
        data-dependent state move on (they are synthesised), but no cache, TLB, predictor or pipeline sees
        them.  The clock moves on ``cpi`` cycles an instruction, and the timer's work due meanwhile is
        dropped (:meth:`TimerInterrupts.skip_to`).  How a later segment of a sampled run reaches its start
        (:mod:`simulator.smarts`), as gem5 and Sniper users fast-forward to a region before warming."""
        limit = self._untimed_limit(instructions, cpi, "fast-forwarding")
        t0 = time.perf_counter()
        skipped = limit - self.program_retired
        self._consumed(min(len(self.block) - self.pos, skipped))       # the rest of the current block
        rest = limit - self.program_retired
        if rest > 0:                                   # then the program's walk, nothing written out
            self.synth.skip(rest)
            self._consumed(rest)
            self.pos = len(self.block)                 # (the current block is spent)
        self.core.shift_time(round(skipped * cpi))
        if self.timer is not None:
            self.timer.skip_to(self.core.cycles)
        self.host_seconds += time.perf_counter() - t0
        return self

    def _untimed_limit(self, instructions: int, cpi: float, what: str) -> int:
        """The program instructions retired once ``instructions`` more are consumed untimed (at most the
        run's); refuses a profiled run (its profile would have gaps) and a CPI that is not positive."""
        if self.profiler is not None:
            raise ValueError(f"{what} would leave gaps in the instruction profile (profile_every)")
        if not cpi > 0:
            raise ValueError(f"cpi must be > 0, got {cpi}")
        return min(self.instructions_target, self.program_retired + max(0, int(instructions)))

    def _consumed(self, n: int) -> None:
        """``n`` more program instructions of the current block consumed (timed, warmed or skipped)."""
        self.pos += n
        self.program_retired += n
        if self.on_retired is not None:
            self.on_retired(n)

    def _warm_piece(self, block: InstrBlock, start: int, stop: int, clock: float, cpi: float) -> float:
        """Warm ``block[start:stop]`` from the warming clock ``clock``, paced; returns the clock after it."""
        stood = self.core.warming_stall_cycles
        n = self.core.warm(block, start, stop, now=int(clock), cpi=cpi, pace=True)
        return clock + n * cpi + self.core.warming_stall_cycles - stood

    def warm_up(self, instructions: int) -> "Machine":
        """Run the first ``instructions`` program instructions uncounted, as gem5 or Sniper users warm a
        sampled region: caches, TLBs and predictors are warm afterwards, and counters, CPI stack, run
        time and the sampling clock start from zero (cold-start misses of multi-megabyte footprints
        otherwise dominate short runs)."""
        self.advance_to(EVER, program_limit=int(instructions))
        self._base = None                             # counters() below: raw, since the start
        self._base = self.counters()
        self._base_stack = self.core.cycle_stack()
        self.origin = self.core.cycles
        if self.profiler is not None:                 # the profile covers the measured run only
            self.profiler = self._new_profiler(self.profiler.period)
        return self

    def run(self) -> "Machine":
        """Run the whole program."""
        self.advance_to(EVER)
        return self

    # ------------------------------------------------------------------ results
    def profile(self) -> InstructionProfiler:
        """The instruction profile of the measured run (``profile_every`` given); pending samples are
        resolved, so call it when the run is over."""
        if self.profiler is None:
            raise ValueError("this Machine was built without profile_every: it has no instruction profile")
        return self.profiler if self.profiler.finished else self.profiler.finish()

    def counters(self) -> dict[str, int]:
        """Counters of the measured run (cumulative since the warm-up, if any): the core's generic
        counters and the memory hierarchy's, flattened (``L2.misses``, ``DTLB.walks``, ``memory.reads``)."""
        c = self.core.counters(memory=False)
        out = self._with_memory_and_os(c, self.memory.counters(), (self.os_instructions, self.os_ticks,
                                                                   self.os_cycles))
        if self._base is not None:
            out = {k: (v - self._base.get(k, 0) if isinstance(v, int) else v) for k, v in out.items()}
            for k in out:
                if k.endswith(".miss_ratio"):          # the one non-additive entry: recomputed
                    level = k[:-len(".miss_ratio")]
                    acc = out.get(f"{level}.accesses", 0)
                    out[k] = out.get(f"{level}.misses", 0) / acc if acc else 0.0
        return out

    def counter_words(self) -> np.ndarray:
        """The raw words of every integer counter of :meth:`counters` (the core's, the memory hierarchy's
        counter rows, the OS counts) in one int64 vector, to be differenced and turned into counters by
        :meth:`counter_columns`: a sampled run reads the counters around each of thousands of units, the
        sampling engine around each interval, and a copy costs a few microseconds where :meth:`counters`
        costs a hundred."""
        return np.concatenate((self.core.CT, self.memory.counter_words(),
                               np.array([self.os_instructions, self.os_ticks, self.os_cycles], np.int64)))

    def counter_columns(self, words: np.ndarray) -> dict[str, np.ndarray]:
        """:meth:`counters`' entries computed from rows of :meth:`counter_words` differences (one row per
        sample): name -> column over the rows, ``counters()[k] - before[k]`` for every integer counter ``k``
        (the miss ratios are the ratios of the rows' differences)."""
        words = np.atleast_2d(words)
        nct = len(self.core.CT)
        nmem = words.shape[1] - nct - 3
        n_rows = words[:, nct:nct + nmem].T.reshape(MS.NROWS, MS.NCOL, len(words))
        core = {name: words[:, i] for i, name in enumerate(CV.COUNTER_NAMES)}
        return self._with_memory_and_os(core, self.memory.counter_doc(n_rows, np.asarray),
                                        tuple(words[:, nct + nmem + k] for k in range(3)))

    @staticmethod
    def _with_memory_and_os(core: dict, mem: dict, os_counts: tuple) -> dict:
        out = dict(core)
        out.update(flatten({**mem["levels"], **mem["tlbs"], "memory": mem["memory"]}))
        out["os_instructions"], out["os_ticks"], out["os_cycles"] = os_counts
        return out

    def cpi_stack(self) -> dict[str, float]:
        """CPI per cause of the measured run; sums to its CPI."""
        stack = {k: v - self._base_stack.get(k, 0) for k, v in self.core.cycle_stack().items()}
        n = self.core.instructions - (self._base or {}).get("instructions", 0)
        return {k: (v / n if n else 0.0) for k, v in stack.items()}

    def seconds(self) -> float:
        """Simulated run time (after any warm-up)."""
        return self.cycles / self.clock_hz

    def instructions_per_second(self) -> float:
        """Simulated instructions (program and OS) per host second."""
        total = self.core.instructions
        return total / self.host_seconds if self.host_seconds > 0 else 0.0
