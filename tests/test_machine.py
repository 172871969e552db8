"""Machine: the program, the OS timer interrupt and the core together — determinism, run-to-run
variation from the run seed only, the tick rate, and a timer handler that sampling reads can preempt."""

from __future__ import annotations

import numpy as np
import pytest

from whatif.simulator.machine import Machine
from whatif.simulator.osnoise import TimerNoise
from whatif.simulator.platform import load_platform
from whatif.simulator.sampling import Sampling, sample
from whatif.simulator.workload import load_workload

N = 80_000


@pytest.fixture(scope="module")
def nehalem():
    return load_platform("nehalem")


def _run(platform, noise=TimerNoise(), seed=1, run_seed=None, n=N, workload="464.h264ref"):
    return Machine(platform, load_workload(workload), n, seed=seed, run_seed=run_seed, noise=noise).run()


def test_same_seeds_identical_counters_run_seed_varies_them(nehalem):
    a, b = _run(nehalem, run_seed=7), _run(nehalem, run_seed=7)
    assert a.counters() == b.counters()
    c = _run(nehalem, run_seed=8)
    assert c.counters()["cycles"] != a.counters()["cycles"]
    assert c.counters()["instructions"] - c.os_instructions == a.counters()["instructions"] - a.os_instructions


def test_input_seed_fixes_the_program_choices_run_seed_the_rest(nehalem):
    def machine(run_seed, input_seed):
        return Machine(nehalem, load_workload("429.mcf"), N, seed=1, run_seed=run_seed, input_seed=input_seed,
                       noise=None)

    def stream(m):
        block = m.synth.next_block(N)
        return block.pc, block.mem_addr, block.taken

    # one input: the same instructions, addresses and branch outcomes in every run ...
    a, b = stream(machine(7, 3)), stream(machine(8, 3))
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    # ... which the run seed alone would have varied (another input)
    c = stream(machine(8, None))
    assert not np.array_equal(a[1], c[1]) and not np.array_equal(a[2], c[2])
    # while the run still differs in what the run seed fixes (page placement: another cycle count)
    x, y = machine(7, 3).run().counters(), machine(8, 3).run().counters()
    assert x["instructions"] == y["instructions"] and x["cycles"] != y["cycles"]


def test_program_instructions_are_exactly_the_target(nehalem):
    m = _run(nehalem)
    assert m.program_retired == N
    assert m.counters()["instructions"] == N + m.os_instructions


def test_ticks_at_hz_of_simulated_time(nehalem):
    # a fast tick (100 kHz) so that a short run sees many: ticks = run time x HZ, +-1 for the phase
    noise = TimerNoise(hz=100_000)
    m = _run(nehalem, noise=noise, n=300_000)
    expected = m.seconds() * noise.hz
    assert abs(m.os_ticks - expected) <= 1.5, (m.os_ticks, expected)
    assert m.os_instructions >= m.os_ticks * noise.base_instructions


def test_no_noise_no_os_instructions(nehalem):
    m = _run(nehalem, noise=None)
    assert m.os_instructions == 0 and m.os_ticks == 0 and m.counters()["instructions"] == N


def test_sampling_intervals_shorter_than_a_handler_still_see_cycles(nehalem):
    # handlers of ~20k instructions every 20 us; 1 us intervals every 2 us: many intervals fall inside a
    # handler, and each must still count the cycles spent in it
    noise = TimerNoise(hz=50_000, base_instructions=20_000)
    m = Machine(nehalem, load_workload("464.h264ref"), 400_000, seed=1, noise=noise)
    rows = sample(m, Sampling(1e-6, 2e-6, 1e-6))
    assert len(rows) > 20
    cycles = np.array([r["cycles"] for r in rows])
    assert (cycles > 0).all()
    # an interval is ~1 us of a 2.67 GHz clock (the last instruction may retire a little beyond its end)
    assert np.median(cycles) == pytest.approx(nehalem.clock_ghz * 1e3, rel=0.2)
    assert m.os_ticks > 5


def test_warm_up_counts_only_the_measured_run(nehalem):
    cold = _run(nehalem, noise=None, n=N, workload="456.hmmer")          # a cache-resident program
    m = Machine(nehalem, load_workload("456.hmmer"), 5 * N, seed=1, noise=None).warm_up(4 * N)
    assert m.cycles == 0 and m.counters()["instructions"] == 0 and m.counters()["L1D.misses"] == 0
    m.run()
    c = m.counters()
    assert c["instructions"] == N and m.program_retired == 5 * N
    assert sum(m.cpi_stack().values()) == pytest.approx(c["cycles"] / N, rel=1e-9)
    assert m.seconds() == pytest.approx(c["cycles"] / (nehalem.clock_ghz * 1e9))
    assert 0.0 <= c["L1D.miss_ratio"] == pytest.approx(c["L1D.misses"] / c["L1D.accesses"])
    # warm caches and TLBs: far fewer memory reads than the same number of instructions from cold (the
    # warm-up is long enough to have touched most of the program's data: 1 MB of it is read at random)
    assert c["memory.reads"] < 0.5 * cold.counters()["memory.reads"]


def test_sampling_clock_starts_after_the_warm_up(nehalem):
    m = Machine(nehalem, load_workload("464.h264ref"), 300_000, seed=1, noise=None).warm_up(150_000)
    rows = sample(m, Sampling(1e-6, 2e-6, 1e-6))
    assert rows[0]["t_start"] == pytest.approx(1e-6)
    assert sum(r["instructions"] for r in rows) < 150_000
    assert all(r["cycles"] > 0 for r in rows)
