"""Live-points: a replay times every unit exactly as the capture did, on every platform; the capture's estimates
are the sampled run's; the records' verification is what makes the replay exact; the key admits a core what-if
and nothing else; a core what-if replayed lands near its own sampled run; the timer's snapshot."""

from __future__ import annotations

import numpy as np
import pytest

from whatif.simulator import livepoints as LP
from whatif.simulator.isa import isa_for
from whatif.simulator.livepoints import capture_sampled, replay_sampled, state_key
from whatif.simulator.machine import Machine
from whatif.simulator.osnoise import TimerInterrupts, TimerNoise
from whatif.simulator.platform import load_platform
from whatif.simulator.smarts import SmartsSpec, run_sampled
from whatif.simulator.workload import load_workload


def machines(platform_name: str, workload: str, instructions: int, overrides: tuple[str, ...] = ()):
    p = load_platform(platform_name, list(overrides))
    return lambda: Machine(p, load_workload(f"cint2006/{workload}"), instructions, seed=1, run_seed=7)


def assert_same_units(a, b):
    np.testing.assert_array_equal(a.unit_cpi, b.unit_cpi)
    assert a.unit_counters.keys() == b.unit_counters.keys()
    for k in a.unit_counters:
        np.testing.assert_array_equal(a.unit_counters[k], b.unit_counters[k], err_msg=k)
    for k in a.unit_stack:
        np.testing.assert_array_equal(a.unit_stack[k], b.unit_stack[k], err_msg=k)


@pytest.mark.parametrize("platform_name, workload, spec", [
    ("nehalem", "429.mcf", SmartsSpec(units=40)),
    ("nehalem", "403.gcc", SmartsSpec(units=40, segments=2, overlap=200_000)),
    ("westmere", "464.h264ref", SmartsSpec(units=40, warming=5000)),
    ("harpertown", "471.omnetpp", SmartsSpec(units=40)),
    ("z10", "403.gcc", SmartsSpec(units=40)),
    ("mpc7447a", "464.h264ref", SmartsSpec(units=40))])
def test_a_replay_times_every_unit_as_the_capture_did(platform_name, workload, spec):
    fresh = machines(platform_name, workload, 1_500_000)
    captured, library = capture_sampled(fresh(), spec, seed=1, fresh=fresh)
    replayed = replay_sampled(library, fresh)
    assert_same_units(replayed, captured)
    assert replayed.warmed_instructions == 0 and replayed.detailed_instructions == captured.detailed_instructions
    assert library.units == 40 and len(library.chains) == spec.segments
    if platform_name != "mpc7447a":
        # the capture cuts the blocks at every unit's lead-in and end; the instructions and their timing stay as
        # they were (on the 7447A the warming clock's rounding at the new block ends moves a few units by a few
        # cycles: its L1D's prefetch engines drop prefetches by time)
        assert_same_units(captured, run_sampled(fresh(), spec, seed=1, fresh=fresh))


def test_without_the_records_verification_a_replay_goes_wrong(monkeypatch):
    """On the Harpertown's L2 (LRU, the last level, prefetched into) a quarter of omnetpp's units read a set
    their run wrote no word of (a prefetch that found its line present): verification widens those records."""
    fresh = machines("harpertown", "471.omnetpp", 1_500_000)
    spec = SmartsSpec(units=40)
    captured, library = capture_sampled(fresh(), spec, seed=1)
    assert library.chains[0].widened >= 4
    monkeypatch.setattr(LP.Capture, "_replays", lambda self, machine, end: True)
    careless = replay_sampled(capture_sampled(fresh(), spec, seed=1)[1], fresh)
    assert not np.array_equal(careless.unit_cpi, captured.unit_cpi)


def test_the_key_admits_a_core_what_if_and_nothing_else():
    base = state_key(machines("nehalem", "464.h264ref", 100_000)())
    assert state_key(machines("nehalem", "464.h264ref", 100_000, ("core.rob_entries=64",))()) == base
    assert state_key(machines("nehalem", "464.h264ref", 100_000, ("core.mispredict_penalty=30",))()) == base
    for other in (machines("nehalem", "464.h264ref", 100_000, ("caches.L3.size_kb=4096",)),
                  machines("nehalem", "464.h264ref", 100_000, ("branch_predictor.kind=gshare",)),
                  machines("nehalem", "403.gcc", 100_000), machines("westmere", "464.h264ref", 100_000),
                  machines("nehalem", "464.h264ref", 200_000)):
        assert state_key(other()) != base
    fresh = machines("nehalem", "464.h264ref", 600_000)
    _, library = capture_sampled(fresh(), SmartsSpec(units=20), seed=1)
    with pytest.raises(ValueError, match="only the core may"):
        replay_sampled(library, machines("nehalem", "464.h264ref", 600_000, ("caches.L3.size_kb=4096",)))


def test_a_core_what_if_replayed_lands_near_its_own_sampled_run():
    """A smaller ROB timed from the as-shipped core's live-points against its own SMARTS run (same units, its own
    warming): the state the units start from differs only by what the warming clock's CPI and the other core's
    reads change."""
    spec = SmartsSpec(units=60)
    _, library = capture_sampled(machines("nehalem", "403.gcc", 2_000_000)(), spec, seed=1)
    small = machines("nehalem", "403.gcc", 2_000_000, ("core.rob_entries=48",))
    replayed, own = replay_sampled(library, small), run_sampled(small(), spec, seed=1)
    assert replayed.cpi.mean == pytest.approx(own.cpi.mean, rel=0.01)
    assert abs(replayed.cpi.mean - own.cpi.mean) < own.cpi.half_width / 3
    assert not np.array_equal(replayed.unit_cpi, own.unit_cpi)       # (the other core's units are its own)


def test_capture_refuses_what_it_cannot_record():
    fresh = machines("nehalem", "464.h264ref", 600_000)
    with pytest.raises(ValueError, match="from a fresh machine"):
        capture_sampled(fresh().warm_functionally(1000), SmartsSpec(units=20), seed=1)
    with pytest.raises(ValueError, match="N = auto would record two"):
        capture_sampled(fresh(), SmartsSpec(second_run=True), seed=1, fresh=fresh)


@pytest.mark.parametrize("pieces", [False, True])
def test_a_restored_timer_runs_on_as_the_one_it_was_taken_from(pieces):
    noise = TimerNoise(time_scale=1e-4 if pieces else 1.0)
    timer = TimerInterrupts(noise, isa_for("x86_64"), 2.26e9, np.random.default_rng(3))
    twin = TimerInterrupts(noise, isa_for("x86_64"), 2.26e9, np.random.default_rng(99))

    def walk(t, steps):
        seen = []
        for _ in range(steps):
            t.start()
            seen.append((t.next_due, t.pos, t.stop, len(t.block), t.block.mem_addr.sum()))
            t.done(t.stop - t.pos)
        return seen

    walk(timer, 7)
    twin.restore(timer.snapshot())
    assert walk(twin, 20) == walk(timer, 20)
