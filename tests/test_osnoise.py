"""The timer interrupt: handler blocks, the schedule of their pieces (a burst at real time scale, spread over
the tick period at compressed scales), and the step a whole handler puts into a compressed window."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from whatif.simulator.isa import ISAS, OP_BRANCH, OP_STORE
from whatif.simulator.machine import Machine
from whatif.simulator.osnoise import KERNEL_REGISTERS, TickHandler, TimerInterrupts, TimerNoise
from whatif.simulator.platform import load_platform
from whatif.simulator.sampling import Sampling, sample
from whatif.simulator.workload import load_workload

CLOCK = 1.5e9


def _schedule(noise: TimerNoise, ticks: int, seed: int = 3) -> tuple[TimerInterrupts, list[tuple[int, int, int, bool]]]:
    """Run the schedule with a core that takes no time: (due cycle, first, stop, new tick) per piece."""
    timer = TimerInterrupts(noise, ISAS["powerpc32"], CLOCK, np.random.default_rng(seed))
    log = []
    while timer.ticks < ticks:
        due = timer.next_due
        new = timer.start()
        log.append((due, timer.pos, timer.stop, new))
        timer.done(timer.stop - timer.pos)
    return timer, log


def test_pieces_follow_the_time_scale():
    assert TimerNoise().pieces(1740) == 1                       # real time: one burst a tick
    assert TimerNoise(time_scale=0.5).pieces(1740) == 2
    assert TimerNoise(time_scale=0.01).pieces(1740) == 100      # a period stands for 100 real ticks
    assert TimerNoise(time_scale=2.5e-6).pieces(1740) == 1740   # at most one piece an instruction
    assert TimerNoise(time_scale=1e-300).pieces(7) == 7
    assert TimerNoise(time_scale=4.0).pieces(1740) == 1
    # pieces at least min_piece_cycles apart (a simulation-cost bound): 300 in a 6 M-cycle period
    assert TimerNoise(time_scale=2.5e-6).pieces(1740, 6_000_000) == 300
    assert TimerNoise(time_scale=2.5e-6, min_piece_cycles=0).pieces(1740, 6_000_000) == 1740
    assert TimerNoise(time_scale=0.01).pieces(1740, 6_000_000) == 100
    assert TimerNoise(time_scale=2.5e-6).pieces(1740, 10_000) == 1
    for bad in (0.0, -1e-4, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="time_scale"):
            TimerNoise(time_scale=bad)


def test_burst_schedule_one_handler_a_period_from_the_phase():
    noise = TimerNoise()
    timer, log = _schedule(noise, 4)
    period = noise.period_cycles(CLOCK)
    phase = log[0][0]
    assert 0 <= phase < period
    assert [(due, first, new) for due, first, _, new in log] == [(phase + t * period, 0, True) for t in range(4)]
    assert timer.instructions == sum(stop for _, _, stop, _ in log)
    assert all(stop >= noise.base_instructions for _, _, stop, _ in log)


def test_spread_schedule_pieces_evenly_over_each_period():
    noise = TimerNoise(time_scale=0.01)                         # 100 pieces a tick
    timer, log = _schedule(noise, 3)
    period = noise.period_cycles(CLOCK)
    starts = [i for i, entry in enumerate(log) if entry[3]]
    # the run begins inside the period of the tick before the first: its remaining pieces come first,
    # the first due within one piece's spacing of the start
    assert 0 <= log[0][0] <= period // 100 and not log[0][3] and log[0][1] > 0
    for a, b in zip(starts, starts[1:] + [len(log)]):
        pieces = log[a:b]
        if b - a < 100:
            break                                               # the last tick: not finished
        t0 = pieces[0][0]
        assert [due - t0 for due, *_ in pieces] == [j * period // 100 for j in range(100)]
        assert [p[1] for p in pieces][0] == 0 and all(p[2] == q[1] for p, q in zip(pieces, pieces[1:]))
    assert log[starts[1]][0] - log[starts[0]][0] == period


@settings(max_examples=60, deadline=None)
@given(base=st.integers(1, 3000), scale=st.floats(1e-7, 3.0), seed=st.integers(0, 2**32))
def test_pieces_partition_every_handler(base, scale, seed):
    noise = TimerNoise(base_instructions=base, mean_expiring=0.0, time_scale=scale)
    timer, log = _schedule(noise, 3, seed)
    period = noise.period_cycles(CLOCK)
    m = noise.pieces(base, period)
    dues = [due for due, *_ in log]
    assert dues == sorted(dues) and dues[0] >= 0
    # every tick after the first partial one: m pieces of >= 1 instruction, back to back, covering the handler
    starts = [i for i, entry in enumerate(log) if entry[3]]
    for a in starts[:-1]:
        pieces = log[a:a + m]
        assert len(pieces) == m and pieces[0][1] == 0 and pieces[-1][2] == base
        assert all(stop > first for _, first, stop, _ in pieces)
        assert all(p[2] == q[1] for p, q in zip(pieces, pieces[1:]))
        assert pieces[-1][0] - pieces[0][0] < period
    assert timer.instructions == sum(stop - first for _, first, stop, _ in log)


@settings(max_examples=60, deadline=None)
@given(base=st.integers(1, 3000), scale=st.floats(1e-7, 3.0), seed=st.integers(0, 2**32), at=st.floats(0.0, 3.5))
def test_a_timer_skipped_to_a_clock_resumes_with_the_schedules_next_piece(base, scale, seed, at):
    """Fast-forwarded time (``Machine.fast_forward``): the timer drops the work due before the clock, counts
    none of it, and resumes with the piece the full schedule has due next -- the same due cycle and the
    same instructions of the handler -- and the pieces after it."""
    noise = TimerNoise(base_instructions=base, mean_expiring=0.0, time_scale=scale)
    clock = int(at * noise.period_cycles(CLOCK))
    _, log = _schedule(noise, 6, seed)
    expected = [(due, first, stop) for due, first, stop, _ in log if due >= clock][:8]
    timer = TimerInterrupts(noise, ISAS["powerpc32"], CLOCK, np.random.default_rng(seed))
    timer.skip_to(clock)
    assert timer.ticks == timer.instructions == timer.started == 0 and not timer.running
    resumed = []
    for _ in expected:
        due = timer.next_due
        timer.start()
        resumed.append((due, timer.pos, timer.stop))
        timer.done(timer.stop - timer.pos)
    assert expected and resumed == expected


def test_handler_registers_are_the_kernels_own():
    for isa in ISAS.values():
        b = TickHandler(TimerNoise(), isa, seed=1).block()
        regs = np.concatenate([b.dst, b.src1, b.src2, b.areg])
        used = regs[regs >= 0]
        low = isa.gprs + isa.fprs
        assert used.min() >= low and used.max() < low + KERNEL_REGISTERS
        # one dependence chain: each instruction reads its predecessor's register
        writes = b.dst >= 0
        assert (b.dst[(b.op != OP_STORE) & (b.op != OP_BRANCH)] >= 0).all()
        chain = np.flatnonzero(writes[:-1]) + 1
        assert (b.src1[chain] == b.dst[chain - 1]).all()


# ------------------------------------------------------------------ the step in a compressed window
@pytest.fixture(scope="module")
def windows():
    """A Java program's mutator on the 7447A sampled in 0.3 ms windows (the regression study's run length),
    with the timer as a burst at HZ and spread at a compressed time scale: per window, the cycles the clock
    moved while timer instructions ran and the timer instructions."""
    platform = load_platform("mpc7447a")
    out = {}
    for label, noise in (("burst", TimerNoise()), ("spread", TimerNoise(time_scale=1e-4))):
        m = Machine(platform, load_workload("specjvm98/db"), 2_000_000, seed=1, run_seed=5, input_seed=1,
                    noise=noise)
        rows = sample(m, Sampling(0.0, 3e-4, 3e-4))
        m.run()
        out[label] = {"os_cycles": np.array([r["os_cycles"] for r in rows], dtype=float),
                      "os_instructions": np.array([r["os_instructions"] for r in rows], dtype=float),
                      "cycles": np.array([r["cycles"] for r in rows], dtype=float),
                      "machine": m, "noise": noise}
    return out


def test_a_whole_handler_is_a_step_in_a_compressed_window(windows):
    burst = windows["burst"]
    share = burst["os_cycles"] / burst["cycles"]
    assert burst["machine"].os_ticks >= 2
    assert share.max() > 0.05                        # the 5-9 % step: one cold handler in 0.3 ms
    assert (burst["os_instructions"] == 0).mean() > 0.5
    assert burst["os_cycles"].std() / burst["os_cycles"].mean() > 2.0


def test_spread_timer_work_has_no_step(windows):
    spread, burst = windows["spread"], windows["burst"]
    share = spread["os_cycles"] / spread["cycles"]
    # no step: the largest window holds a small part of the step one whole handler makes, and not much more
    # than the mean window. (The shares themselves are what the handler's cold misses cost: the largest 0.63 %
    # before the 7447A's memory traffic was timed (b7b770a), 1.83 % in the trial of that change, whose burst
    # step doubled to 17 %.)
    burst_share = burst["os_cycles"] / burst["cycles"]
    assert share.max() < 0.15 * burst_share.max() and share.max() < 3 * share.mean() and share.min() > 0
    assert spread["os_cycles"].std() / spread["os_cycles"].mean() < 0.75
    # the rate is HZ handlers a simulated second: every window holds its share of handler instructions
    m, noise = spread["machine"], spread["noise"]
    per_window = noise.hz * 3e-4 * (noise.base_instructions + noise.mean_expiring * noise.per_timer_instructions)
    assert spread["os_instructions"].min() > 0.7 * per_window and spread["os_instructions"].max() < 1.3 * per_window
    for mode in (spread, burst):
        seconds = mode["machine"].seconds()
        expected = noise.hz * seconds * (noise.base_instructions + noise.mean_expiring * noise.per_timer_instructions)
        assert mode["machine"].os_instructions == pytest.approx(expected, rel=0.5)
