"""Operating-system noise: the timer interrupt that runs between a program's instructions.

A real run is interrupted ``HZ`` times a second by the kernel's timer handler,
which executes its own code and touches its own data, stealing cycles and
evicting some of the program's cache lines and TLB entries.  Where in the
program the ticks fall depends on when the run started relative to the timer
(a seeded phase), and what the handler does varies a little from tick to tick
(how many timers expire, whether the scheduler runs): that, together with the
physical page placement, is the run-to-run variation of a real machine that
multi-run PMU collections see (seed 000 reports ±1.53% at 95% confidence).

The handler is an instruction stream of the contract in :mod:`simulator.isa`:
a fixed code path (the same PCs every tick, so it warms up in the caches like
the real handler) of ``base_instructions`` plus a seeded number of extra
timer-list iterations, with loads and stores to kernel data structures.  Its
registers are the kernel's own, numbered above the ISA's architectural ones:
the interrupt saves the program's registers on entry and restores them on exit,
so no value flows between the handler and the program (the core's scoreboard
keeps the two name spaces apart; nothing else about the core changes).

Spreading at compressed time scales
-----------------------------------
The studies simulate compressed windows: the similarity study scales seed 002's
3 s sampling intervals by ``time_scale`` = 2.5e-6 to 7.5 µs, the regression study
stands a 0.3-2 ms window for a run of seconds.  The timer's *rate* is a property of
the simulated clock and stays ``HZ`` ticks of handler work per simulated second:
the share of cycles the kernel takes is the same at every time scale.  What the
compression changes is the *granularity*.  A real interval of ``w / s`` seconds
(``w`` simulated seconds at time scale ``s``) holds ``HZ · w / s`` ticks -- 750 in
seed 002's 3 s -- so it sees the handler's mean share, give or take one tick in
750.  Delivered as whole handlers at ``HZ`` in the simulated window, the same work
comes as 0 or 1 tick per window (250 Hz is a tick every 4 ms; a cold handler is
~39 k cycles, 5-9 % of a 0.3-2 ms window): a step no real interval of that
length shows.

So a simulated tick period, which stands for ``1 / s`` real tick periods, runs its
handler as ``1 / s`` pieces evenly spread over the period, each the work of one
real tick compressed by ``s``.  A piece is at least one instruction (the core's
quantum), so :meth:`TimerNoise.pieces` is ``min(handler instructions, round(1 / s))``:
at ``s = 1`` (real time) a tick is one burst, as on a real machine; at the shipped
studies' scales (``s`` <= 1e-4, below one over the handler's ~1,700 instructions)
a piece would be one instruction.  Each piece is the handler's code and data in
the handler's order, so per period the same PCs and the same kernel lines are
touched, cold after a period of program execution as a real tick's are.

One bound is the simulator's, not the kernel's: every piece is a call into the
core (some 40 µs of host time), so pieces come at least ``min_piece_cycles`` =
20,000 cycles apart (8 µs at 2.5 GHz, 13 µs at 1.5 GHz): 450-670 pieces of 3-4
instructions a period on the Xeons, 300 of 6 on the 7447A, instead of ~1,700 of
one.  A window then sees the timer's share to within one such piece: the
similarity study's 7.5 µs windows (19-25 k cycles) hold about one, the regression
study's 0.3-2 ms windows 20-150.  ``min_piece_cycles = 0`` lifts the bound.  A
piece is preemptible by the sampling engine's reads like a whole handler
(:mod:`simulator.machine`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from whatif.simulator.isa import OP_ALU, OP_BRANCH, OP_LOAD, OP_STORE, InstrBlock, IsaSpec

KERNEL_TEXT = {"powerpc32": 0xC0000000, "x86_64": 0xFFFFFFFF81000000, "z/Architecture": 0x0000000000100000}
KERNEL_DATA = {"powerpc32": 0xC0400000, "x86_64": 0xFFFF880000000000, "z/Architecture": 0x0000000008000000}
KERNEL_REGISTERS = 16       # the handler's register rotation (kernel name space above the ISA's registers)


@dataclass(frozen=True)
class TimerNoise:
    hz: int = 250                      # Linux 2.6 default timer frequency (CONFIG_HZ_250)
    base_instructions: int = 1500      # estimate: entry, irq accounting, timer-wheel check, exit
    per_timer_instructions: int = 120  # estimate: one expiring timer's callback and list handling
    mean_expiring: float = 2.0         # estimate: timers expiring per tick (Poisson)
    data_kb: int = 64                  # kernel data the handler walks (runqueue, timer wheel, task structs)
    time_scale: float = 1.0            # simulated seconds per second of the run simulated (1: real time)
    min_piece_cycles: int = 20_000     # pieces at least this far apart: a simulation-cost bound (module docstring)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.time_scale) and self.time_scale > 0):
            raise ValueError(f"TimerNoise.time_scale must be a finite number > 0, got {self.time_scale}")
        if self.hz <= 0:
            raise ValueError(f"TimerNoise.hz must be > 0, got {self.hz}")
        if self.min_piece_cycles < 0:
            raise ValueError(f"TimerNoise.min_piece_cycles must be >= 0, got {self.min_piece_cycles}")

    def period_cycles(self, clock_hz: float) -> int:
        return int(round(clock_hz / self.hz))

    def pieces(self, instructions: int, period_cycles: int | None = None) -> int:
        """How many pieces a tick's handler of ``instructions`` is spread into over its period: the real
        ticks the period stands for at this time scale, at least one instruction each and, with
        ``min_piece_cycles``, at least that far apart in a period of ``period_cycles`` (module docstring)."""
        real_ticks = 1.0 / self.time_scale
        m = min(int(instructions), int(round(real_ticks)) if real_ticks < 2 ** 62 else 2 ** 62)
        if self.min_piece_cycles > 0 and period_cycles is not None:
            m = min(m, period_cycles // self.min_piece_cycles)
        return max(1, m)


def _split128(x: int) -> tuple[int, int]:
    """A 128-bit unsigned integer as two int64 words (high, low), bit for bit."""
    hi, lo = x >> 64, x & (2**64 - 1)
    return tuple(v - 2**64 if v >= 2**63 else v for v in (hi, lo))


def _join128(hi: int, lo: int) -> int:
    return ((hi % 2**64) << 64) | (lo % 2**64)


class TickHandler:
    """Builds the instruction block of one timer tick; deterministic for a seed."""

    def __init__(self, noise: TimerNoise, isa: IsaSpec, seed: int):
        self.noise = noise
        self.isa = isa
        self.rng = np.random.default_rng(seed)
        self.text = KERNEL_TEXT.get(isa.name, 0xC0000000)
        self.data = KERNEL_DATA.get(isa.name, 0xC0400000)
        self.reg0 = isa.gprs + isa.fprs                # first kernel register
        if self.reg0 + KERNEL_REGISTERS > 127:
            raise ValueError(f"ISA {isa.name}: no room for {KERNEL_REGISTERS} kernel registers above its "
                             f"{self.reg0} architectural ones (int8 register numbers)")

    def block(self) -> InstrBlock:
        noise = self.noise
        extra = int(self.rng.poisson(noise.mean_expiring))
        n = noise.base_instructions + extra * noise.per_timer_instructions
        b = InstrBlock.empty(n)
        size = self.isa.sizes[int(np.argmax(self.isa.size_weights))]
        idx = np.arange(n, dtype=np.uint64)
        b.pc[:] = np.uint64(self.text) + idx * np.uint64(size)      # one straight code path
        b.size[:] = size
        kind = np.full(n, OP_ALU, dtype=np.uint8)
        kind[1::4] = OP_LOAD                                         # a quarter loads, an eighth stores
        kind[3::8] = OP_STORE
        kind[7::16] = OP_BRANCH                                      # not-taken checks along the path
        b.op[:] = kind
        # a dependence chain through the kernel's registers: each instruction reads the previous one's result
        rot = np.uint64(KERNEL_REGISTERS)
        b.dst[:] = (self.reg0 + idx % rot).astype(np.int8)
        b.src1[:] = (self.reg0 + (idx + rot - np.uint64(1)) % rot).astype(np.int8)
        mem = (kind == OP_LOAD) | (kind == OP_STORE)
        lines = max(1, noise.data_kb * 1024 // 64)
        # the fixed structures first, then this tick's expiring timers at varying places
        offsets = (np.arange(int(mem.sum())) * 64) % (lines * 64)
        if extra:
            tail = self.rng.integers(0, lines, size=min(extra * 8, len(offsets))) * 64
            offsets[-len(tail):] = tail
        b.mem_addr[mem] = np.uint64(self.data) + offsets.astype(np.uint64)
        b.mem_size[mem] = 8
        b.areg[mem] = b.src1[mem]
        b.dst[kind == OP_STORE] = -1
        b.dst[kind == OP_BRANCH] = -1
        return b


class TimerInterrupts:
    """The timer's work on one machine: which piece of which tick's handler is due at what cycle.

    Tick ``t`` begins at ``phase + t * period``; its handler (a new :meth:`TickHandler.block`) is cut into
    :meth:`TimerNoise.pieces` consecutive pieces, piece ``j`` of ``m`` due ``j * period // m`` cycles into
    the tick.  Spread, the run begins partway through the period of the tick before the first (its pieces
    due from cycle 0 on run; a burst of that tick lies before the run).  The driver runs a piece once the
    core's clock reaches :attr:`next_due` (:meth:`start`), in one or more steps (:meth:`done`: a piece is
    preemptible), and the program in between.  Pieces due while an earlier one still runs (a core slowed
    down by long stalls) run back to back."""

    def __init__(self, noise: TimerNoise, isa: IsaSpec, clock_hz: float, rng: np.random.Generator):
        self.noise = noise
        self.handler = TickHandler(noise, isa, int(rng.integers(0, 2**62)))
        self.period = noise.period_cycles(clock_hz)
        self.tick_start = int(rng.integers(0, self.period))          # timer phase at program start
        self.block: InstrBlock | None = None       # the handler of the current tick
        self.bounds: list[int] = []                # its pieces' first instructions, and its length
        self.piece = 0                             # pieces of the current tick started so far
        self.pos = 0                               # next instruction of the running piece
        self.stop = 0                              # end of the running piece
        self.ticks = 0                             # handlers completed
        self.instructions = 0                      # handler instructions retired
        self.started = 0                           # pieces started
        if noise.pieces(2) > 1:                    # spread: the period the run starts in is under way
            self.tick_start -= self.period
            self._begin_tick()
            while self.piece < self._m and self._due(self.piece) < 0:
                self.piece += 1
        self.next_due = self._next_due()

    @property
    def _m(self) -> int:
        return len(self.bounds) - 1

    def _due(self, j: int) -> int:
        return self.tick_start + j * self.period // self._m

    def _next_due(self) -> int:
        if self.block is None:
            return self.tick_start
        return self._due(self.piece) if self.piece < self._m else self.tick_start + self.period

    def _begin_tick(self) -> None:
        self._tick_rng = self.handler.rng.bit_generator.state      # what the block is drawn from (snapshot)
        self.block = self.handler.block()
        n = len(self.block)
        m = self.noise.pieces(n, self.period)
        self.bounds = [j * n // m for j in range(m)] + [n]
        self.piece = 0

    @property
    def running(self) -> bool:
        """A piece has started and not finished."""
        return self.pos < self.stop

    def start(self) -> bool:
        """Start the piece that is due (call once the clock reached :attr:`next_due`, none running);
        True when it begins a new tick's handler (a new :attr:`block`)."""
        new = self.block is None or self.piece >= self._m
        if new:
            if self.block is not None:
                self.tick_start += self.period
            self._begin_tick()
        self.pos, self.stop = self.bounds[self.piece], self.bounds[self.piece + 1]
        self.piece += 1
        self.started += 1
        self.next_due = self._next_due()
        return new

    def skip_to(self, clock: int) -> None:
        """Drop the work due before ``clock`` (time a machine fast-forwarded, :meth:`Machine.fast_forward`):
        the running piece and every piece due before it, none counted; the timer resumes at the first piece
        due at or after ``clock`` (of a new tick's handler when that lies in a later tick)."""
        self.pos = self.stop
        if self.next_due >= clock:
            return
        if self.block is not None:
            while self.piece < self._m and self._due(self.piece) < clock:
                self.piece += 1
            if self.piece < self._m:
                self.next_due = self._next_due()
                return
            first = self.tick_start + self.period          # the next tick's start
        else:
            first = self.tick_start
        if first < clock:                                  # the tick under way at ``clock``
            self.tick_start = first + (clock - first) // self.period * self.period
            self._begin_tick()
            while self.piece < self._m and self._due(self.piece) < clock:
                self.piece += 1
        self.next_due = self._next_due()

    def snapshot(self) -> np.ndarray:
        """The timer's state as int64 words (:meth:`restore`): where it is in which tick's handler, its counts,
        and the handler's random state -- as it was before the current tick's block was drawn, which
        :meth:`restore` draws again, rather than the block itself."""
        has = self.block is not None
        rng = self._tick_rng if has else self.handler.rng.bit_generator.state
        return np.array([int(has), self.tick_start, self.piece, self.pos, self.stop, self.ticks, self.instructions,
                         self.started, self.next_due, *_split128(rng["state"]["state"]),
                         *_split128(rng["state"]["inc"]), rng["has_uint32"], rng["uinteger"]], dtype=np.int64)

    def restore(self, words: np.ndarray) -> None:
        """Put the timer back where :meth:`snapshot` found it (of a timer with the same noise and clock)."""
        w = [int(x) for x in words]
        bit = self.handler.rng.bit_generator
        state = {"bit_generator": bit.state["bit_generator"],
                 "state": {"state": _join128(w[9], w[10]), "inc": _join128(w[11], w[12])},
                 "has_uint32": w[13], "uinteger": w[14]}
        if not (w[0] and self.block is not None and self._tick_rng == state):   # (else: that tick's block is here)
            bit.state = state
            if w[0]:
                self._begin_tick()                 # the tick's block drawn again (the handler's state moves on)
            else:
                self.block, self.bounds = None, []
        (self.tick_start, self.piece, self.pos, self.stop, self.ticks, self.instructions, self.started,
         self.next_due) = w[1:9]

    def done(self, n: int) -> None:
        """``n`` instructions of the running piece retired."""
        self.pos += n
        self.instructions += n
        if self.pos >= self.stop and self.piece == self._m:
            self.ticks += 1
