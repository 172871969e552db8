"""``Synthesizer``: resumable instruction-stream synthesis for one workload on one ISA.

    synth = Synthesizer("cint2006/429.mcf", "x86_64", seed=1, instructions=50_000_000)
    block = synth.next_block(1 << 16)        # InstrBlock of the next 65536 instructions
    synth.phase_boundaries()                 # [(0, "init"), (5_000_123, "simplex"), ...]

The static program depends on (workload, ISA, ``seed``) only and is built once per
process (cached); ``run_seed`` (default ``seed``) drives the dynamic choices (data-dependent
branches, random addresses, indirect-call targets), so replicate runs of the same program
differ the way runs of one binary differ.  The concatenation of the blocks does not depend on
the block sizes.
"""

from __future__ import annotations

import bisect

import numpy as np

from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.isa import FIELDS, IsaSpec, InstrBlock, isa_for
from whatif.simulator.synth import kernel as K
from whatif.simulator.synth.program import StaticProgram, nominal_lengths, program_for
from whatif.simulator.workload import Workload, WorkloadRef, load_workload

LOG_CAPACITY = 4096
NOWHERE = InstrBlock.empty(0)                      # what skip() passes for the arrays it does not write


def _resolve(workload: WorkloadRef | Workload | str) -> tuple[Workload, str]:
    if isinstance(workload, WorkloadRef):
        return workload.spec, workload.name
    if isinstance(workload, Workload):
        return workload, "workload"
    ref = load_workload(str(workload))
    return ref.spec, ref.name


class Synthesizer:
    """Walks the static program of a workload and hands out :class:`InstrBlock` chunks."""

    def __init__(self, workload: WorkloadRef | Workload | str, isa: IsaSpec | str, seed: int = 0,
                 instructions: int | None = None, run_seed: int | None = None):
        self.spec, self.name = _resolve(workload)
        if isinstance(isa, str):
            try:
                isa = isa_for(isa)
            except ValueError as exc:
                raise SimulatorInputError(str(exc)) from None
        self.isa = isa
        self.seed = int(seed)
        self.run_seed = self.seed if run_seed is None else int(run_seed)
        self.program: StaticProgram = program_for(self.spec, isa, self.seed, self.name)
        self.schedule = nominal_lengths(self.spec, instructions)
        prog = self.program
        # compact copies of the per-instruction arrays the walker reads (cache footprint)
        self._state = np.zeros(len(prog), np.int32)
        self._runs = K.straight_runs(prog.kind).astype(np.int32)
        self._kind = prog.kind.astype(np.uint8)
        self._tgt = prog.tgt.astype(np.int32)
        self._off = prog.off.astype(np.int32)
        self._packed = K.pack_static(prog.op, prog.size, prog.dst, prog.src1, prog.src2, prog.areg, prog.msize,
                                     prog.flags)
        self._ST = prog.streams.initial_state()
        self._W = np.zeros(K.W_SIZE, np.int64)
        self._W[K.W_CUR] = prog.driver_entry[0]
        self._W[K.W_BOUNDARY] = self.schedule[0]
        self._stack = np.zeros(K.STACK_SIZE, np.int64)
        seed_bits = np.random.SeedSequence([self.run_seed, 0xD1CE]).generate_state(1, np.uint64)
        self._rng = np.array(seed_bits, dtype=np.uint64)
        self._log_at = [0]
        self._log_phase = [0]

    # ------------------------------------------------------------------ generation
    @property
    def position(self) -> int:
        """Instructions generated so far."""
        return int(self._W[K.W_COUNT])

    def next_block(self, n: int) -> InstrBlock:
        """The next ``n`` dynamic instructions, in a newly allocated block."""
        n = int(n)
        if n < 0:
            raise SimulatorInputError(f"block size must be non-negative (got {n})")
        return self.fill(InstrBlock(**{name: np.empty(n, dtype=dt) for name, dt in FIELDS}))

    def fill(self, block: InstrBlock) -> InstrBlock:
        """Overwrite ``block`` with the next ``len(block)`` instructions and return it.  Reusing one
        block saves the allocation and first-touch cost of fresh arrays (a timing model that
        consumes block after block should do this)."""
        self._walk(K.walk, len(block), block.kernel_arrays())
        return block

    def skip(self, n: int) -> None:
        """Move on ``n`` instructions without writing them out: afterwards the walk is where ``n`` more
        instructions of :meth:`fill` would have left it (phases logged as they are entered), at about
        half the cost (fast-forwarding to a sampled run's later segment)."""
        n = int(n)
        if n < 0:
            raise SimulatorInputError(f"instructions to skip must be non-negative (got {n})")
        self._walk(K.skip_walk, n, NOWHERE.kernel_arrays())

    def _walk(self, kernel, n: int, out: tuple) -> None:
        p = self.program
        st = p.streams
        done = 0
        log_at = np.zeros(LOG_CAPACITY, np.int64)
        log_phase = np.zeros(LOG_CAPACITY, np.int64)
        while done < n:
            n_log = np.zeros(1, np.int64)
            views = out if done == 0 or kernel is K.skip_walk else tuple(a[done:] for a in out)
            got = kernel(n - done, *views, p.pc, self._packed, self._runs, self._kind, self._tgt, p.arg, p.arg2,
                         p.prob, p.prob2, self._off, self._state, p.ic_target, p.ic_cdf, self._ST, st.z_lo,
                         st.z_width, st.z_prob, st.z_alias, self.schedule, p.driver_entry, self._W, self._stack,
                         self._rng, log_at, log_phase, n_log)
            done += got
            k = int(n_log[0])
            self._log_at.extend(log_at[:k].tolist())
            self._log_phase.extend(log_phase[:k].tolist())

    # ------------------------------------------------------------------ phases
    @property
    def phase_names(self) -> list[str]:
        return self.program.phase_names

    def phase_boundaries(self) -> list[tuple[int, str]]:
        """(first instruction, phase name) of every phase entered so far, in order.  A phase ends
        when it has run its nominal length: its loops exit at their back edges, and its driver ends it
        when the calls in progress return (tests/test_synth.py: within a few hundred instructions)."""
        names = self.phase_names
        return [(a, names[j]) for a, j in zip(self._log_at, self._log_phase)]

    def phase_at(self, index: int) -> str:
        """Name of the phase that instruction ``index`` (already generated) belongs to."""
        if not 0 <= index < max(1, self.position):
            raise SimulatorInputError(f"instruction {index} has not been generated yet (position {self.position})")
        k = bisect.bisect_right(self._log_at, index) - 1
        return self.phase_names[self._log_phase[k]]

    def phase_ids(self, start: int, stop: int) -> np.ndarray:
        """Phase number of each instruction in [start, stop) (already generated)."""
        idx = np.arange(start, stop)
        k = np.searchsorted(np.array(self._log_at), idx, side="right") - 1
        return np.array(self._log_phase, dtype=np.int64)[k]

    def nominal_boundaries(self, instructions: int) -> list[tuple[int, int, str]]:
        """The nominal schedule (start, stop, phase name) over the first ``instructions``."""
        out = []
        pos, j = 0, 0
        names = self.phase_names
        while pos < instructions:
            stop = min(instructions, pos + int(self.schedule[j]))
            out.append((pos, stop, names[j]))
            pos = stop
            j = (j + 1) % len(self.schedule)
        return out
