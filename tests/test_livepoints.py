"""Live-points: a replay times every unit exactly as the capture did, on every platform; the capture's estimates
are the sampled run's; the records' verification is what makes the replay exact; the key admits a core what-if
and nothing else; a core what-if replayed lands near its own sampled run; the timer's snapshot."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from whatif.cli import app
from whatif.scenarios.errors import ScenarioError
from whatif.scenarios.results.livepoint_store import LivePointStore
from whatif.simulator import livepoints as LP
from whatif.simulator.isa import isa_for
from whatif.simulator.livepoints import LivePoints, capture_sampled, replay_sampled, state_key
from whatif.simulator.machine import Machine
from whatif.simulator.osnoise import TimerInterrupts, TimerNoise
from whatif.simulator.platform import load_platform
from whatif.simulator.smarts import SmartsSpec, run_sampled
from whatif.simulator.workload import load_workload

runner = CliRunner()


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


def test_segments_captured_side_by_side_give_the_library_and_estimates_of_one_thread(tmp_path):
    fresh = machines("nehalem", "403.gcc", 1_500_000)
    spec = SmartsSpec(units=40, segments=2, overlap=200_000)
    told = {1: [], 2: []}
    # (the two threads streaming their chains' records into files as they make them)
    (one, alone), (two, pair) = (capture_sampled(fresh(), spec, seed=1, fresh=fresh, start=100_000, workers=w,
                                                 progress=told[w].append, into=tmp_path if w == 2 else None)
                                 for w in (1, 2))
    assert_same_units(two, one)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"chain{k}.{a}.npy" for k in (0, 1)
                                                          for a in ("index", "values")]
    for a, b in zip(pair.chains, alone.chains):
        for name in LP.CHAIN_ARRAYS:
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    # progress: the warm-up and each segment's share, once (not a later segment's fast-forward and overlap)
    covered = 100_000 + one.covered_instructions
    assert sum(told[1]) == sum(told[2]) and 0.95 * covered < sum(told[2]) <= covered


def test_a_later_share_rolls_forward_from_a_keyframe_to_the_image_of_the_records_before_it(monkeypatch, tmp_path):
    fresh = machines("nehalem", "429.mcf", 1_500_000)
    monkeypatch.setattr(LP, "KEYFRAME_RATIO", 1)            # a keyframe whenever the records outgrow one image
    captured, library = capture_sampled(fresh(), SmartsSpec(units=40), seed=1)
    chain = library.chains[0]
    assert chain.keyframes is not None and 2 <= len(chain.keyframe_units) < 40 and chain.keyframe_units[0] > 5
    assert chain.keyframes.shape[1] == sum(len(a) for a in LP.state_parts(fresh()))
    # streamed: the records and keyframes go to files as they are made, the chain maps them, save completes them
    again, streamed = capture_sampled(fresh(), SmartsSpec(units=40), seed=1, into=tmp_path)
    assert_same_units(again, captured)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chain0.index.npy", "chain0.keyframes.npy",
                                                          "chain0.values.npy"]
    for name in LP.CHAIN_ARRAYS:
        np.testing.assert_array_equal(getattr(streamed.chains[0], name), getattr(chain, name), err_msg=name)
    streamed.save(tmp_path)
    loaded = LivePoints.load(tmp_path)
    np.testing.assert_array_equal(loaded.chains[0].keyframes, chain.keyframes)
    bare = LivePoints(library.spec, library.seed, library.start, library.total, library.key,
                      (replace(chain, keyframe_units=None, keyframes=None),))
    for j in (5, int(chain.keyframe_units[0]), int(chain.keyframe_units[1]) + 3, 39):
        a, b = LP.Replay(fresh(), loaded.chains[0]), LP.Replay(fresh(), bare.chains[0])
        a.roll(j)
        b.roll(j)
        for x, y in zip(a.image, b.image):
            np.testing.assert_array_equal(x, y)
    assert_same_units(replay_sampled(loaded, fresh), captured)
    np.testing.assert_array_equal(replay_sampled(loaded, fresh, workers=2).unit_cpi,
                                  replay_sampled(bare, fresh, workers=2).unit_cpi)


def test_without_the_records_verification_a_replay_goes_wrong(monkeypatch):
    """On the Harpertown (its L2 the last level, prefetched into) some of omnetpp's units read a row their run
    wrote no word of (a prefetch that found its line present): verification extends those records."""
    fresh = machines("harpertown", "471.omnetpp", 1_500_000)
    spec = SmartsSpec(units=40)
    captured, library = capture_sampled(fresh(), spec, seed=1)
    assert library.chains[0].extended >= 2 and library.chains[0].widened == 0
    monkeypatch.setattr(LP.Capture, "_rerun", lambda self, machine, end, *after: (True, np.zeros(0, np.int64)))
    careless = replay_sampled(capture_sampled(fresh(), spec, seed=1)[1], fresh)
    assert not np.array_equal(careless.unit_cpi, captured.unit_cpi)


def test_ready_times_long_past_are_left_out_and_the_replay_stays_exact(monkeypatch):
    """mcf on the Nehalem (timed prefetch arrival): records without the lines' ready times that lie long before
    the unit in both the state and the image are smaller, and every unit replays as captured; ready times
    taken as past from the lead-in clock itself would be read by the unit's first accesses, which start a
    pipeline's span earlier: the verification then widens records (larger libraries, still exact)."""
    fresh = machines("nehalem", "429.mcf", 1_500_000)
    spec = SmartsSpec(units=40)
    sizes, widened, default = {}, {}, LP.READY_PAST
    for past in (default, 0, 1 << 62):
        monkeypatch.setattr(LP, "READY_PAST", past)
        captured, library = capture_sampled(fresh(), spec, seed=1)
        assert_same_units(replay_sampled(library, fresh), captured)
        sizes[past], widened[past] = library.nbytes, library.chains[0].widened
    assert sizes[default] < 0.9 * sizes[1 << 62] and widened[default] == 0
    assert widened[0] > 0


def test_the_key_admits_a_core_what_if_and_nothing_else():
    base = state_key(machines("nehalem", "464.h264ref", 100_000)())
    assert state_key(machines("nehalem", "464.h264ref", 100_000, ("core.rob_entries=64",))()) == base
    assert state_key(machines("nehalem", "464.h264ref", 100_000, ("core.mispredict_penalty=30",))()) == base
    for other in (machines("nehalem", "464.h264ref", 100_000, ("caches.L3.size_kb=4096",)),
                  machines("nehalem", "464.h264ref", 100_000, ("branch_predictor.kind=gshare",)),
                  machines("nehalem", "403.gcc", 100_000), machines("westmere", "464.h264ref", 100_000),
                  machines("nehalem", "464.h264ref", 200_000)):
        assert state_key(other()) != base
    with pytest.MonkeyPatch.context() as patch:          # the code that makes the state is in the key too
        patch.setattr(LP, "state_code", lambda: "0" * 16)
        assert state_key(machines("nehalem", "464.h264ref", 100_000)()) != base
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


# ----------------------------------------------------------------------------- a damaged library
@pytest.fixture(scope="module")
def saved_library(tmp_path_factory):
    """A saved library of 40 of mcf's units with keyframes, the capture's result and the machines."""
    fresh = machines("nehalem", "429.mcf", 1_500_000)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(LP, "KEYFRAME_RATIO", 1)
        captured, library = capture_sampled(fresh(), SmartsSpec(units=40), seed=1)
    where = tmp_path_factory.mktemp("library")
    library.save(where)
    return where, captured, fresh


def damaged_copy(saved: Path, into: Path, name: str, at, change) -> Path:
    """A copy of the library ``saved`` with the word ``at`` of its array ``name`` changed by ``change``."""
    shutil.copytree(saved, into)
    a = np.load(into / f"chain0.{name}.npy", mmap_mode="r+")
    a[at] = change(a[at])
    a.flush()
    return into


def test_a_damaged_record_keyframe_or_table_is_one_error_naming_it_and_nothing_of_it_is_written(saved_library,
                                                                                                  tmp_path):
    saved, captured, fresh = saved_library
    chain = LivePoints.load(saved).chains[0]
    unit, p = 9, int(chain.offsets[9])
    later = 20                                           # the second worker's first unit rolls from a keyframe
    kf = int(np.searchsorted(chain.keyframe_units, later, side="right")) - 1
    assert kf >= 0 and chain.keyframe_units[kf] > unit
    cases = [("values", p + 3, np.invert, "replay", f"unit {unit}'s record does not match its checksum"),
             # a position 2**31 words before the state: written, it crashed the process (SIGSEGV)
             ("index", p + 1, lambda v: -2**31 + 5, "replay", f"unit {unit}'s record does not match its checksum"),
             ("keyframes", (kf, 1000), lambda v: v + 1, "roll", f"keyframe {kf} does not match its checksum"),
             ("scalars", (unit, 1), lambda v: v + 1, "load", "chain0.scalars.npy does not match its checksum"),
             ("offsets", unit, lambda v: v - 1, "load", "chain0.offsets.npy does not match its checksum")]
    for k, (name, at, change, when, message) in enumerate(cases):
        where = damaged_copy(saved, tmp_path / str(k), name, at, change)
        with pytest.raises(LP.DamagedLibrary) as raised:
            library = LivePoints.load(where)
            assert when != "load"
            if when == "roll":
                LP.Replay(fresh(), library.chains[0], library.label).roll(later)
            else:
                replay = LP.Replay(machine := fresh(), library.chains[0], library.label)
                for j in range(unit):
                    replay.restore(machine, j)
                before = [a.copy() for a in replay.parts]
                replay.restore(machine, unit)
        assert str(raised.value) == f"{where}: a damaged live-point library ({'' if when == 'load' else 'chain0: '}" \
                                    f"{message})", name
        if when == "replay":
            for a, b in zip(replay.parts, before):          # the record refused before any of it was written
                np.testing.assert_array_equal(a, b)
        if when != "load":
            with pytest.raises(LP.DamagedLibrary, match=message):
                LivePoints.load(where).verify()           # found by reading the library alone
    LivePoints.load(saved).verify()
    with pytest.raises(LP.DamagedLibrary, match=f"keyframe {kf} does not match"):
        replay_sampled(LivePoints.load(tmp_path / "2"), fresh, workers=2)     # (from a forked worker)


def test_a_library_of_format_2_replays_without_checksums_its_records_positions_checked(saved_library, tmp_path):
    saved, captured, fresh = saved_library
    old = tmp_path / "old"
    shutil.copytree(saved, old)
    doc = json.loads((old / "livepoints.json").read_text())
    doc["whatif_live_points"] = 2
    del doc["state_words"]
    for c in doc["chains"]:
        del c["sums"], c["digests"]
    (old / "livepoints.json").write_text(json.dumps(doc))
    for name in ("sums", "keyframe_sums"):
        (old / f"chain0.{name}.npy").unlink()
    library = LivePoints.load(old)
    assert library.chains[0].sums is None and library.chains[0].keyframe_sums is None
    assert_same_units(replay_sampled(library, fresh), captured)
    library.verify()
    p = int(library.chains[0].offsets[9])
    total = sum(len(a) for a in LP.state_parts(fresh()))
    # a position before the state, past it, or in a part after the record's next words' (the memory's come first)
    for k, (at, change) in enumerate([(p + 1, lambda v: -2**31 + 5), (p, lambda v: 2**31 - 1),
                                      (p + 1, lambda v: total - 1)]):
        where = damaged_copy(old, tmp_path / str(k), "index", at, change)
        with pytest.raises(LP.DamagedLibrary, match="unit 9's record places words outside the state"):
            replay_sampled(LivePoints.load(where), fresh)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data())
def test_a_library_with_any_byte_changed_replays_as_captured_or_is_refused_as_damaged(small_library, tmp_path_factory,
                                                                                      data):
    saved, captured, fresh = small_library
    files = sorted(f.name for f in saved.iterdir())
    name = data.draw(st.sampled_from(files), label="file")
    blob = bytearray((saved / name).read_bytes())
    at = data.draw(st.integers(0, len(blob) - 1), label="byte")
    blob[at] ^= data.draw(st.integers(1, 255), label="xor")
    where = tmp_path_factory.mktemp("damaged")
    shutil.copytree(saved, where, dirs_exist_ok=True)
    (where / name).write_bytes(bytes(blob))
    try:
        replayed = replay_sampled(LivePoints.load(where), fresh)
    except LP.DamagedLibrary as exc:
        assert str(exc).startswith(f"{where}: a damaged live-point library (")
        event(f"damaged: {exc.what.split(':')[0][:40]}")
    except ValueError as exc:                            # the manifest's format or JSON
        assert name == "livepoints.json" and "livepoints.json" in str(exc), exc
        event("not a library")
    else:
        assert_same_units(replayed, captured)            # (a byte of a header's padding, a count in `about`, ...)
        event("replayed as captured")


def test_a_damaged_npy_header_is_a_damaged_library(small_library, tmp_path):
    """Found by the test above: numpy's reader of this header raised tokenize's TokenError, not a ValueError."""
    shutil.copytree(small_library[0], tmp_path / "lib")
    header = tmp_path / "lib" / "chain0.index.npy"
    blob = header.read_bytes()
    assert b",), }" in blob[:128]
    header.write_bytes(blob.replace(b",), }", b",(, }", 1))
    with pytest.raises(LP.DamagedLibrary, match=r"a damaged live-point library \(TokenError: "):
        LivePoints.load(tmp_path / "lib")


@pytest.fixture(scope="module")
def small_library(tmp_path_factory):
    fresh = machines("nehalem", "464.h264ref", 600_000)
    captured, library = capture_sampled(fresh(), SmartsSpec(units=20), seed=1)
    where = tmp_path_factory.mktemp("small")
    library.save(where)
    return where, captured, fresh


# ----------------------------------------------------------------------------- the store and the CLI
def simulate(*extra, store=None):
    args = ["simulate", "-p", "nehalem", "-w", "403.gcc", "-n", "1500000", "--sample", "smarts:1000,2000,40",
            *extra]
    if store is not None:
        args += ["--live-points", str(store)]
    return runner.invoke(app, [*args, "--json"])


def test_cli_captures_once_then_replays_the_units_exactly_and_a_core_what_if_from_the_same_library(tmp_path):
    store = tmp_path / "lp"
    plain = json.loads(simulate().stdout)["sampled"]
    first = simulate(store=store)
    assert first.exit_code == 0, first.stderr
    captured = json.loads(first.stdout)["sampled"]
    assert captured["live_points"]["action"] == "captured" and captured["live_points"]["units"] == 40
    assert captured["cpi"] == plain["cpi"] and captured["event_rates"] == plain["event_rates"]
    library = Path(captured["live_points"]["library"])
    assert library.parent == store and (store / "whatif-live-points.json").is_file()
    stamp = {p.name: p.stat().st_mtime_ns for p in library.iterdir()}
    again = json.loads(simulate(store=store).stdout)["sampled"]
    assert again["live_points"]["action"] == "replayed" and again["live_points"]["exact"]
    assert again["cpi"] == captured["cpi"] and again["cpi_stack"] == captured["cpi_stack"]
    assert again["warmed_instructions"] == 0 and captured["warmed_instructions"] > 1_000_000
    assert {p.name: p.stat().st_mtime_ns for p in library.iterdir()} == stamp          # read, not rewritten
    small = json.loads(simulate("--set", "core.rob_entries=48", store=store).stdout)["sampled"]
    own = json.loads(simulate("--set", "core.rob_entries=48").stdout)["sampled"]
    assert small["live_points"]["action"] == "replayed" and not small["live_points"]["exact"]
    assert small["live_points"]["library"] == str(library)
    assert small["cpi"]["mean"] == pytest.approx(own["cpi"]["mean"], rel=0.02) != captured["cpi"]["mean"]
    shown = runner.invoke(app, ["simulate", "-p", "nehalem", "-w", "403.gcc", "-n", "1500000", "--sample",
                                "smarts:1000,2000,40", "--live-points", str(store), "--set", "core.rob_entries=48"])
    said = " ".join(shown.stdout.split())
    assert "replayed from live-points, no warming (captured on another nehalem core" in said
    other = json.loads(simulate("--set", "caches.L3.size_kb=4096", store=store).stdout)["sampled"]
    assert other["live_points"]["action"] == "captured" and other["live_points"]["library"] != str(library)
    listed = runner.invoke(app, ["live-points", str(store), "--json"])
    assert listed.exit_code == 0, listed.stderr
    rows = {r["name"]: r for r in json.loads(listed.stdout)["libraries"]}
    assert set(rows) == {library.name, Path(other["live_points"]["library"]).name}
    mine = rows[library.name]
    assert (mine["workload"], mine["platform"]) == ("403.gcc", "nehalem")
    assert mine["units"] == mine["design"]["units"] == 40
    assert mine["bytes"] == sum(p.stat().st_size for p in library.iterdir()) > captured["live_points"]["bytes"]
    assert mine["captured_on"]["core"] == captured["live_points"]["captured_on"]["core"]
    shown = " ".join(runner.invoke(app, ["live-points", str(store)]).stdout.split())
    assert f"2 live-point libraries in {store}, " in shown and shown.count("nehalem") >= 2   # (cells wrap at 80)


def test_cli_replays_with_workers_and_a_warm_up(tmp_path):
    store = tmp_path / "lp"
    captured = json.loads(simulate("--warmup", "300000", store=store).stdout)["sampled"]
    both = simulate("--warmup", "300000", "--workers", "2", store=store)
    assert both.exit_code == 0, both.stderr
    replayed = json.loads(both.stdout)["sampled"]
    assert replayed["live_points"]["action"] == "replayed" and replayed["units"] == 40
    assert replayed["live_points"]["same_core"] and not replayed["live_points"]["exact"]
    assert replayed["live_points"]["workers"] == 2 and captured["live_points"]["exact"]
    # the second half's first unit starts from an empty pipeline: every other unit is timed as captured
    assert replayed["cpi"]["mean"] == pytest.approx(captured["cpi"]["mean"], rel=2e-3)


def test_a_library_captured_by_other_code_is_another_library_and_listed_stale(tmp_path, monkeypatch):
    store = tmp_path / "lp"
    old = Path(json.loads(simulate(store=store).stdout)["sampled"]["live_points"]["library"])
    assert json.loads((old / "livepoints.json").read_text())["state_code"] == LP.state_code()
    edited = "0" * 16                                   # as if a kernel's source had changed since the capture
    monkeypatch.setattr(LP, "state_code", lambda: edited)
    monkeypatch.setattr("whatif.scenarios.results.livepoint_store.state_code", lambda: edited)
    again = json.loads(simulate(store=store).stdout)["sampled"]["live_points"]
    assert again["action"] == "captured" and Path(again["library"]) != old
    listed = runner.invoke(app, ["live-points", str(store), "--json"])
    assert {r["name"]: r["stale"] for r in json.loads(listed.stdout)["libraries"]} == \
        {old.name: True, Path(again["library"]).name: False}
    shown = " ".join(runner.invoke(app, ["live-points", str(store)], terminal_width=200).stdout.split())
    assert "1 stale (captured by other code than this whatif's: no run finds it; --remove-stale removes it)" in shown
    assert shown.count("(stale)") == 1
    gone = runner.invoke(app, ["live-points", str(store), "--remove-stale", "--json"])
    assert gone.exit_code == 0, gone.stderr
    doc = json.loads(gone.stdout)
    assert [r["name"] for r in doc["removed"]] == [old.name] and not old.exists()
    assert [r["name"] for r in doc["libraries"]] == [Path(again["library"]).name]


def test_the_state_code_covers_every_module_a_capture_runs_and_changes_with_any_byte(tmp_path):
    script = ("import sys\n"
              "from whatif.simulator.livepoints import capture_sampled\n"
              "from whatif.simulator.machine import Machine\n"
              "from whatif.simulator.platform import load_platform\n"
              "from whatif.simulator.smarts import SmartsSpec\n"
              "from whatif.simulator.workload import load_workload\n"
              "m = Machine(load_platform('nehalem', []), load_workload('cint2006/464.h264ref'), 100000, seed=1)\n"
              "capture_sampled(m, SmartsSpec(units=5), seed=1)\n"
              "print(' '.join(sorted(getattr(sys.modules[m], '__file__', '') or '' for m in list(sys.modules)\n"
              "                      if m.startswith('whatif.simulator'))))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    loaded = [Path(f).resolve().relative_to(LP.PACKAGE_ROOT).as_posix() for f in done.stdout.split()]
    assert "simulator/memory/caches.py" in loaded and "simulator/synth/kernel.py" in loaded
    uncovered = [f for f in loaded if not any(f == s or f.startswith(s + "/") for s in LP.STATE_SOURCES)]
    assert uncovered == []
    copy = tmp_path / "copy"
    for rel in LP.STATE_SOURCES:
        src = LP.PACKAGE_ROOT / rel
        if src.is_dir():
            shutil.copytree(src, copy / rel, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, copy / rel)
    assert LP.state_code(copy) == LP.state_code()
    caches = copy / "simulator/memory/caches.py"
    text = caches.read_bytes()
    caches.write_bytes(text.replace(b"C_WAYS)", b"C_WAYS )", 1))
    assert LP.state_code.__wrapped__(copy) != LP.state_code()


@pytest.mark.parametrize("make, fragment", [
    (lambda p: p.write_text("x"), "is a file, not a directory of live-point libraries"),
    (lambda p: (p.mkdir(), (p / "notes.txt").write_text("mine")), "a directory whatif did not make as a live-point"),
])
def test_cli_refuses_a_foreign_store_and_touches_nothing(tmp_path, make, fragment):
    store = tmp_path / "lp"
    make(store)
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    r = simulate(store=store)
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and fragment in r.stderr, r.stderr
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


def test_cli_refuses_a_damaged_library_and_bad_combinations(tmp_path):
    store = tmp_path / "lp"
    library = Path(json.loads(simulate(store=store).stdout)["sampled"]["live_points"]["library"])
    (library / "chain0.values.npy").write_bytes(b"not numpy")
    r = simulate(store=store)
    assert r.exit_code == 2 and "a damaged live-point library" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert (library / "chain0.values.npy").read_bytes() == b"not numpy"
    r = runner.invoke(app, ["simulate", "-p", "nehalem", "-w", "403.gcc", "--live-points", str(tmp_path / "other")])
    assert r.exit_code == 2 and "give --sample" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert not (tmp_path / "other").exists()
    (library / "livepoints.json").write_text("{")          # listed, as damaged
    row, = json.loads(runner.invoke(app, ["live-points", str(store), "--json"]).stdout)["libraries"]
    assert row["name"] == library.name and row["damaged"].startswith("JSONDecodeError")
    for extra in ([], ["--prune"], ["--remove", library.name]):
        r = runner.invoke(app, ["live-points", str(tmp_path / "other"), *extra])
        assert r.exit_code == 2 and "holds no live-point store" in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_cli_verify_reads_every_record_and_a_damaged_library_is_one_line_exit_2(tmp_path):
    store = tmp_path / "lp"
    library = Path(json.loads(simulate(store=store).stdout)["sampled"]["live_points"]["library"])
    r = runner.invoke(app, ["live-points", str(store), "--verify", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["libraries"][0]["verified"] is True, r.stderr
    assert "verified: all sound" in " ".join(runner.invoke(app, ["live-points", str(store), "--verify"]).stdout.split())
    # captured by a whatif whose state has another size: refused, not replayed into this one's
    manifest = (library / "livepoints.json").read_text()
    doc = json.loads(manifest)
    doc["state_words"][0] += 8
    (library / "livepoints.json").write_text(json.dumps(doc))
    r = simulate(store=store)
    assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"whatif: error: --live-points: {library}: captured by another version of whatif "
                               f"(whatif {doc['about']['whatif_version']}: its state's parts hold "
                               f"{doc['state_words'][0]:,}, "), r.stderr
    (library / "livepoints.json").write_text(manifest)
    values = np.load(library / "chain0.values.npy", mmap_mode="r+")
    values[np.load(library / "chain0.offsets.npy")[30] + 2] += 1
    values.flush()
    del values
    listed = runner.invoke(app, ["live-points", str(store), "--json"])         # the manifest alone: sound
    assert listed.exit_code == 0 and "damaged" not in json.loads(listed.stdout)["libraries"][0]
    r = runner.invoke(app, ["live-points", str(store), "--verify"])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"1 library damaged: {library.name} (chain0: unit 30's record does not match its checksum)" in r.stderr
    assert "verified: 1 damaged" in " ".join(r.stdout.split())
    r = simulate(store=store)
    assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"whatif: error: --live-points: {library}: a damaged live-point library (chain0: unit "
                               f"30's record does not match its checksum); move it away to capture it again")


def test_a_disk_that_fills_stops_the_capture_at_once_and_nothing_is_kept(tmp_path, monkeypatch):
    store = tmp_path / "lp"
    appended = []
    append = LP._ArrayFile.append

    def fills_up(self, rows):
        appended.append(len(rows))
        if len(appended) > 10:                    # the 6th unit's records
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        append(self, rows)
    monkeypatch.setattr(LP._ArrayFile, "append", fills_up)
    r = simulate(store=store)
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.output, r.stderr
    assert f"--live-points {store}/403.gcc-nehalem-" in r.stderr
    assert "could not be written (No space left on device); nothing written" in r.stderr
    assert len(appended) == 11                    # the capture stopped there, not after its 40 units
    assert [p.name for p in store.iterdir()] == ["whatif-live-points.json"]      # no library, no staging left
    monkeypatch.undo()
    # an in-memory library that the disk has no room for is refused before anything is written
    _, library = capture_sampled(machines("nehalem", "464.h264ref", 600_000)(), SmartsSpec(units=20), seed=1)
    from whatif.scenarios.results import writer
    usage = writer.shutil.disk_usage(tmp_path)
    monkeypatch.setattr(writer.shutil, "disk_usage", lambda path: usage._replace(free=10 ** 5))
    with pytest.raises(ScenarioError, match=r"--live-points .*/h264ref-nehalem-.*: needs [\d.]+ MB, and the file "
                                            r"system of .* has 100,000 bytes free; nothing written"):
        LivePointStore(store).keep(library, "h264ref", "nehalem", {})
    assert [p.name for p in store.iterdir()] == ["whatif-live-points.json"]


def test_cli_removes_libraries_by_name_and_never_a_directory_whatif_did_not_write(tmp_path):
    store = tmp_path / "lp"
    libs = [Path(json.loads(simulate("--seed", str(seed), store=store).stdout)["sampled"]["live_points"]["library"])
            for seed in (1, 2)]
    (store / "mine").mkdir()
    (store / "mine" / "notes.txt").write_text("mine")
    (libs[1] / "mine.txt").write_text("mine")

    def remove(*names):
        return runner.invoke(app, ["live-points", str(store), *(x for n in names for x in ("--remove", n)), "--json"])
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    for names, fragment in [((libs[0].name, "nope"), "holds no library 'nope'"),
                            (("mine",), "not a live-point library whatif wrote (it holds 'notes.txt')"),
                            ((libs[0].name, libs[1].name),
                             "not a live-point library whatif wrote (it holds 'mine.txt')")]:
        r = remove(*names)
        assert r.exit_code == 2 and r.stderr.count("\n") == 1 and fragment in r.stderr, r.stderr
        assert "nothing removed" in r.stderr and sorted(str(p) for p in tmp_path.rglob("*")) == before
    doc = json.loads(remove(libs[0].name, libs[0].name).stdout)
    assert [r["name"] for r in doc["removed"]] == [libs[0].name] and doc["removed"][0]["units"] == 40
    assert [r["name"] for r in doc["libraries"]] == [libs[1].name, "mine"] and doc["free_bytes"] > 0
    assert doc["libraries"][1]["damaged"] == "no livepoints.json: not a live-point library"
    assert sorted(p.name for p in store.iterdir()) == sorted([libs[1].name, "mine", "whatif-live-points.json"])
    assert (store / "mine" / "notes.txt").read_text() == "mine" and (libs[1] / "mine.txt").read_text() == "mine"


def test_cli_lists_unfinished_captures_and_prunes_the_killed_ones_only(tmp_path):
    from whatif.scenarios.results.writer import _staging_name

    store = tmp_path / "lp"
    store.mkdir()
    (store / "whatif-live-points.json").write_text('{"whatif_live_point_store": 1}')
    killed = store / ".429.mcf-nehalem-0123456789abcdef01234567.whatif-stage-999999999-1-0123abcd"
    running = store / _staging_name("403.gcc-nehalem-89abcdef0123456789abcdef", "stage")     # (this process's)
    for d in (killed, running):
        d.mkdir()
        (d / "chain0.index.npy").write_bytes(bytes(1000))
    doc = json.loads(runner.invoke(app, ["live-points", str(store), "--json"]).stdout)
    assert doc["unfinished"] == [
        {"library": "403.gcc-nehalem-89abcdef0123456789abcdef", "bytes": 1000, "running": True},
        {"library": "429.mcf-nehalem-0123456789abcdef01234567", "bytes": 1000, "running": False}]
    shown = " ".join(runner.invoke(app, ["live-points", str(store)]).stdout.split())
    assert "2 unfinished captures, 0.0 MB (1 running, 1 killed: --prune removes those)" in shown, shown
    doc = json.loads(runner.invoke(app, ["live-points", str(store), "--prune", "--json"]).stdout)
    assert [r["library"] for r in doc["pruned"]] == ["429.mcf-nehalem-0123456789abcdef01234567"]
    assert not killed.exists() and (running / "chain0.index.npy").exists()
    assert [r["library"] for r in doc["unfinished"]] == ["403.gcc-nehalem-89abcdef0123456789abcdef"]


def test_cli_auto_stores_each_of_smarts_two_runs_and_replays_both(tmp_path):
    store = tmp_path / "lp"
    args = ["simulate", "-p", "nehalem", "-w", "464.h264ref", "-n", "2000000", "--sample", "smarts:1000,2000,auto",
            "--live-points", str(store), "--json"]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.stderr
    captured = json.loads(first.stdout)["sampled"]
    lp = captured["live_points"]
    # the first run's V asks for more units than its 66: a second sample, with a library of its own
    assert captured["first_run"]["units"] == 66 and captured["units"] == lp["units"] == 666
    assert lp["action"] == lp["first_run"]["action"] == "captured" and lp["first_run"]["units"] == 66
    assert lp["library"] != lp["first_run"]["library"]
    again = json.loads(runner.invoke(app, args).stdout)["sampled"]
    assert again["live_points"]["action"] == again["live_points"]["first_run"]["action"] == "replayed"
    assert again["live_points"]["exact"] and again["warmed_instructions"] == 0
    assert again["cpi"] == captured["cpi"] and again["first_run"]["cpi"] == captured["first_run"]["cpi"]
    assert sorted(p.name for p in store.iterdir() if p.is_dir()) == sorted(
        Path(x).name for x in (lp["library"], lp["first_run"]["library"]))
    shown = runner.invoke(app, args[:-1])
    said = " ".join(shown.stdout.split())
    assert shown.exit_code == 0 and "replayed from live-points, no warming (captured on this core: every unit as the " \
        "capture timed it); the first run's 66 units replayed (" in said, said


def test_a_library_saved_and_loaded_is_the_same_and_a_killed_capture_leaves_no_library(tmp_path):
    fresh = machines("nehalem", "464.h264ref", 600_000)
    captured, library = capture_sampled(fresh(), SmartsSpec(units=20), seed=1)
    library.save(tmp_path)
    loaded = LivePoints.load(tmp_path)
    assert loaded.id == library.id and loaded.design == library.design and loaded.key == library.key
    for a, b in zip(loaded.chains, library.chains):
        for name in LP.CHAIN_ARRAYS:
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert_same_units(replay_sampled(loaded, fresh), captured)
    manifest = json.loads((tmp_path / "livepoints.json").read_text())
    (tmp_path / "livepoints.json").write_text(json.dumps({**manifest, "whatif_live_points": 1}))
    with pytest.raises(ValueError, match="not a live-point library of format 2 or 3"):
        LivePoints.load(tmp_path)                     # (format 1's records did not undo the unit before)
    store = LivePointStore(tmp_path / "store")
    leftover = tmp_path / "store" / ".x.whatif-stage-999999999-1-0123abcd"
    leftover.mkdir(parents=True)
    (tmp_path / "store" / "whatif-live-points.json").write_text('{"whatif_live_point_store": 1}')
    where = store.keep(library, "h264ref", "nehalem", {"platform": "nehalem"})
    assert LivePoints.load(where["path"]).id == library.id
    assert [p.name for p in (tmp_path / "store").iterdir() if p.name.startswith(".")] == [leftover.name]


# ----------------------------------------------------------------------------- in a study: simulate.live_points
STUDY = """schema_version = 1
name = "lp-study"
description = "a core what-if and a memory what-if of sampled runs, their warmed state stored"
study = "simulate"
seed = 3
platforms = ["nehalem"]
workloads = ["403.gcc"]

[simulate]
instructions = 1_500_000
sample = "smarts:1000,2000,40"
live_points = "lp"                # (relative to this file)

[variants.rob48]
"core.rob_entries" = 48

[variants.l3-4mb]
"caches.L3.size_kb" = 4096

[variants.as-shipped]
"""


def study_runs(out: Path) -> dict[str, dict]:
    return {r["variant"]: r["sampled"] for r in json.loads((out / "results.json").read_text())["runs"]}


def test_a_study_captures_each_library_once_in_its_first_wave_and_replays_it_in_the_next(tmp_path):
    scenario = tmp_path / "study.toml"
    scenario.write_text(STUDY)
    r = runner.invoke(app, ["run", str(scenario), "--out", str(tmp_path / "r1"), "--workers", "2"])
    assert r.exit_code == 0, r.stderr
    first = study_runs(tmp_path / "r1")
    lp = {v: s["live_points"] for v, s in first.items()}
    # rob48 and as-shipped differ in the core alone: one library, captured by the first of them (run side by
    # side, both would have captured it); the L3 what-if has its own
    assert [lp[v]["action"] for v in ("rob48", "l3-4mb", "as-shipped")] == ["captured", "captured", "replayed"]
    assert lp["as-shipped"]["library"] == lp["rob48"]["library"] != lp["l3-4mb"]["library"]
    assert Path(lp["rob48"]["library"]).parent == tmp_path / "lp" and not lp["as-shipped"]["same_core"]
    assert first["as-shipped"]["warmed_instructions"] == 0 < first["l3-4mb"]["warmed_instructions"]
    r = runner.invoke(app, ["run", str(scenario), "--out", str(tmp_path / "r2")])
    assert r.exit_code == 0, r.stderr
    again = study_runs(tmp_path / "r2")
    assert all(s["live_points"]["action"] == "replayed" for s in again.values())
    for variant in ("rob48", "l3-4mb", "as-shipped"):          # a capture's own core replays it exactly
        assert again[variant]["cpi"] == first[variant]["cpi"], variant
    assert again["rob48"]["live_points"]["exact"] and not again["as-shipped"]["live_points"]["exact"]


@pytest.mark.parametrize("edit, fragment", [
    (lambda text, d: ((d / "lp").write_text("x"), text)[1], "is a file, not a directory of live-point libraries"),
    (lambda text, d: text.replace('sample = "smarts:1000,2000,40"\n', ""), "give simulate.sample"),
])
def test_a_study_refuses_a_foreign_store_or_a_sample_it_cannot_store_and_writes_nothing(tmp_path, edit, fragment):
    scenario = tmp_path / "study.toml"
    scenario.write_text(edit(STUDY, tmp_path))
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    r = runner.invoke(app, ["run", str(scenario), "--out", str(tmp_path / "out")])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and fragment in r.stderr, r.stderr
    assert str(scenario) in r.stderr
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


def test_validate_live_points_check_passes_on_every_platform_quick():
    from whatif.scenarios.checks.registry import registered_checks
    from whatif.simulator.platform import platform_names

    rows = registered_checks()["live-points: replayed units against the capture, and a core what-if against its "
                               "own sampled run"](True)
    assert len(rows) == 4 * len(platform_names())
    assert sum("every estimate equal to the capture's" in r.detail for r in rows) == 2 * len(platform_names())
    assert sum("core.rob_entries" in r.name for r in rows) == 2 * (len(platform_names()) - 1)
    failed = [(r.name, r.expected, r.measured, r.detail) for r in rows if not r.passed]
    assert not failed
