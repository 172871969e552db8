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
timer-list iterations, with loads and stores to kernel data structures.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from whatif.simulator.isa import OP_ALU, OP_BRANCH, OP_LOAD, OP_STORE, InstrBlock, IsaSpec

KERNEL_TEXT = {"powerpc32": 0xC0000000, "x86_64": 0xFFFFFFFF81000000, "z/Architecture": 0x0000000000100000}
KERNEL_DATA = {"powerpc32": 0xC0400000, "x86_64": 0xFFFF880000000000, "z/Architecture": 0x0000000008000000}


@dataclass(frozen=True)
class TimerNoise:
    hz: int = 250                      # Linux 2.6 default timer frequency (CONFIG_HZ_250)
    base_instructions: int = 1500      # estimate: entry, irq accounting, timer-wheel check, exit
    per_timer_instructions: int = 120  # estimate: one expiring timer's callback and list handling
    mean_expiring: float = 2.0         # estimate: timers expiring per tick (Poisson)
    data_kb: int = 64                  # kernel data the handler walks (runqueue, timer wheel, task structs)

    def period_cycles(self, clock_hz: float) -> int:
        return int(round(clock_hz / self.hz))


class TickHandler:
    """Builds the instruction block of one timer tick; deterministic for a seed."""

    def __init__(self, noise: TimerNoise, isa: IsaSpec, seed: int):
        self.noise = noise
        self.isa = isa
        self.rng = np.random.default_rng(seed)
        self.text = KERNEL_TEXT.get(isa.name, 0xC0000000)
        self.data = KERNEL_DATA.get(isa.name, 0xC0400000)

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
        gprs = self.isa.gprs
        b.dst[:] = (idx % np.uint64(gprs - 1)).astype(np.int8)
        b.src1[:] = ((idx + np.uint64(gprs - 2)) % np.uint64(gprs - 1)).astype(np.int8)
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
