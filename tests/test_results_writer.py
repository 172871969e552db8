"""The results writer never destroys what whatif did not write: staged, atomic, refuses foreign targets,
cleans up after killed runs (issue 12's data-loss repros, each a test)."""

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import pytest

from whatif.scenarios.errors import ScenarioError
from whatif.scenarios.results import writer
from whatif.scenarios.results.directory import write_results_dir
from whatif.scenarios.results.report import Report
from whatif.scenarios.results.writer import (ResultsWriter, atomic_write_text, check_results_target, clean_leftovers,
                                             read_manifest, to_json)

from test_cli import SMALL_SCENARIO, assert_one_line_error, invoke


def write(out, tables=None, results=None):
    return write_results_dir(out, title="t", study="test", results=results or {"x": 1}, started=time.perf_counter(),
                             tables=tables or {"totals": pd.DataFrame({"a": [1, 2]})})


def snapshot(root):
    """Every file under ``root`` with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# ------------------------------------------------------------------------------------ the directory
def test_results_dir_appears_only_on_success(tmp_path):
    out = tmp_path / "res"
    with ResultsWriter(out, csv=True) as w:
        w.table("totals", pd.DataFrame({"a": [1, 2], "b": [0.5, 1.5]}))
        w.json("results.json", {"x": 1})
        assert not out.exists()                                   # still staged
        assert len(list(tmp_path.iterdir())) == 1                 # the staging directory, hidden
    assert sorted(p.name for p in out.iterdir()) == ["results.json", "totals.csv", "totals.parquet"]
    assert pd.read_parquet(out / "totals.parquet")["b"].tolist() == [0.5, 1.5]
    assert w.files == ["totals.parquet", "totals.csv", "results.json"]


def test_manifest_lists_every_file_and_the_provenance(tmp_path):
    out = write(tmp_path / "res")
    manifest = json.loads((out / "manifest.json").read_text())
    assert sorted(manifest["files"]) == sorted(p.name for p in out.iterdir())
    assert manifest["whatif_results"] == writer.RESULTS_FORMAT
    assert manifest["command_line"] == sys.argv and manifest["host_seconds"] >= 0
    assert "git_commit" in manifest and "platforms" in manifest
    assert read_manifest(out) == manifest


def test_host_seconds_are_the_real_wall_time(tmp_path):
    started = time.perf_counter() - 2.5                           # the command started 2.5 s ago
    write_results_dir(tmp_path / "res", title="t", study="s", results={}, started=started)
    assert json.loads((tmp_path / "res" / "manifest.json").read_text())["host_seconds"] >= 2.5


def test_failed_run_leaves_nothing_and_keeps_previous(tmp_path):
    out = write(tmp_path / "res", results={"run": 1})
    with pytest.raises(RuntimeError):
        with ResultsWriter(out) as w:
            w.json("results.json", {"run": 2})
            raise RuntimeError("interrupted")
    assert json.loads((out / "results.json").read_text()) == {"run": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["res"]      # no staging leftovers


def test_earlier_whatif_results_are_replaced_whole(tmp_path):
    out = write(tmp_path / "res", tables={"old_table": pd.DataFrame({"a": [1]})})
    write(out, results={"run": 2})
    assert not (out / "old_table.parquet").exists()
    assert json.loads((out / "results.json").read_text()) == {"run": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["res"]


def test_an_empty_directory_is_used(tmp_path):
    (tmp_path / "res").mkdir()
    write(tmp_path / "res")
    assert (tmp_path / "res" / "manifest.json").is_file()


def test_replace_without_rename_exchange_uses_a_backup(tmp_path, monkeypatch):
    monkeypatch.setattr(writer, "_exchange", lambda a, b: False)
    out = write(tmp_path / "res", results={"run": 1})
    write(out, results={"run": 2})
    assert json.loads((out / "results.json").read_text()) == {"run": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["res"]


@pytest.mark.parametrize("make, fragment", [
    (lambda p: p.write_text("keep"), "existing file"),
    (lambda p: (p.mkdir(), (p / "main.c").write_text("int main;")), "not a whatif results directory"),
    (lambda p: (p.mkdir(), (p / "src").mkdir(), (p / "src" / "main.c").write_text("x")), "not a whatif results"),
    (lambda p: (p.mkdir(), (p / "manifest.json").write_text("{\"mine\": 1}")), "not a whatif results directory"),
])
def test_foreign_targets_are_refused_and_untouched(tmp_path, make, fragment):
    target = tmp_path / "out"
    make(target)
    before = snapshot(tmp_path)
    with pytest.raises(ScenarioError, match=fragment):
        write(target)
    assert snapshot(tmp_path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_file_the_user_put_into_a_results_directory_is_never_deleted(tmp_path):
    out = write(tmp_path / "res")
    (out / "notes.txt").write_text("my notes")
    with pytest.raises(ScenarioError, match="'notes.txt', which whatif did not write"):
        write(out)
    assert (out / "notes.txt").read_text() == "my notes"


def test_a_file_added_during_the_run_is_seen_at_the_move(tmp_path):
    out = write(tmp_path / "res")
    with pytest.raises(ScenarioError, match="notes.txt"):
        with ResultsWriter(out) as w:
            w.json("results.json", {})
            (out / "notes.txt").write_text("written while the run was going")
    assert (out / "notes.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]


def test_the_working_directory_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for out in (".", "..", str(tmp_path)):
        with pytest.raises(ScenarioError, match="working directory"):
            check_results_target(out)


def test_an_out_below_a_file_is_refused(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(ScenarioError, match="is a file"):
        check_results_target(tmp_path / "f" / "sub")


def test_file_names_cannot_escape_the_directory(tmp_path):
    with ResultsWriter(tmp_path / "res") as w:
        for bad in ("../x", "a/b", ".hidden"):
            with pytest.raises(ValueError, match="plain visible name"):
                w.text(bad, "x")
        w.text("ok.txt", "x")


# ------------------------------------------------------------------------------------ killed runs
def _dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_leftovers_of_dead_runs_are_removed_and_live_ones_kept(tmp_path):
    target = tmp_path / "res"
    dead = tmp_path / f".res.whatif-stage-{_dead_pid()}-123-0123abcd"
    dead.mkdir()
    (dead / "results.json").write_text("{}")                    # looked complete
    reused = tmp_path / f".res.whatif-stage-{os.getpid()}-1-0123abcd"   # our pid, another start time
    reused.mkdir()
    live = tmp_path / writer._staging_name("res", "stage")
    live.mkdir()
    other = tmp_path / f".other.whatif-stage-{_dead_pid()}-1-0123abcd"   # another target's
    other.mkdir()
    removed = clean_leftovers(target)
    assert sorted(removed) == sorted([dead, reused])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name])


def test_leftovers_of_wave_1_runs_are_removed(tmp_path):
    (tmp_path / ".res.tmp-ab3_x9Qz").mkdir()                           # staging (mkdtemp)
    (tmp_path / ".res.tmp-ab3_x9Qz" / "totals.parquet").write_bytes(b"PAR1")
    (tmp_path / f".res.old-{_dead_pid()}").mkdir()                     # backup of a killed run
    (tmp_path / ".res.k2j4h5g6.tmp").write_text("half a file")         # a single file's staging
    (tmp_path / f".res.old-{os.getpid()}").mkdir()                     # a live process's: kept
    (tmp_path / ".res.tmp-notes").mkdir()                              # not whatif's pattern: kept
    write(tmp_path / "res")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["res", f".res.old-{os.getpid()}", ".res.tmp-notes"])


def test_a_kill_between_the_two_renames_gets_the_earlier_results_back(tmp_path):
    out = write(tmp_path / "res", results={"run": 1})
    backup = tmp_path / f".res.whatif-old-{_dead_pid()}-1-0123abcd"
    os.rename(out, backup)                                      # killed here: no target
    clean_leftovers(out)
    assert json.loads((out / "results.json").read_text()) == {"run": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["res"]


KILLED_WRITER = textwrap.dedent("""
    import sys, time
    import pandas as pd
    from whatif.scenarios.results.directory import write_results_dir
    from whatif.scenarios.results import writer
    if sys.argv[2] == "backup":
        writer._exchange = lambda a, b: False
    tables = {f"t{i}": pd.DataFrame({"a": range(50)}) for i in range(400)}
    print("ready", flush=True)
    while True:
        write_results_dir(sys.argv[1], title="t", study="s", results={}, started=time.perf_counter(), tables=tables)
""")


@pytest.mark.parametrize("mode", ["exchange", "backup"])
def test_kill_9_at_any_moment_then_a_rerun_leaves_no_leftovers(tmp_path, mode):
    script = tmp_path / "w.py"
    script.write_text(KILLED_WRITER)
    work = tmp_path / "work"
    work.mkdir()
    (work / "thesis.txt").write_text("keep")
    target = work / "res"
    rng = np.random.default_rng(12)
    for delay in rng.uniform(0.0, 0.6, size=6):
        proc = subprocess.Popen([sys.executable, str(script), str(target), mode], stdout=subprocess.PIPE)
        assert proc.stdout.readline().strip() == b"ready"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        write(target, results={"rerun": True})                   # the rerun
        assert sorted(p.name for p in work.iterdir()) == ["res", "thesis.txt"]
        assert json.loads((target / "results.json").read_text()) == {"rerun": True}
    assert (work / "thesis.txt").read_text() == "keep"


# ------------------------------------------------------------------------------------ the repros, end to end
def test_gc_out_dot_keeps_the_thesis(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "thesis.txt").write_text("keep")
    assert_one_line_error(invoke("gc", "-w", "specjvm98/javac", "--scale", "0.01", "--out", "."),
                          "--out .", "working directory")
    assert [p.name for p in tmp_path.iterdir()] == ["thesis.txt"]
    assert (tmp_path / "thesis.txt").read_text() == "keep"


def test_run_into_a_project_directory_is_refused(tmp_path):
    scenario = tmp_path / "s.toml"
    scenario.write_text(SMALL_SCENARIO)
    (tmp_path / "project2" / "src").mkdir(parents=True)
    (tmp_path / "project2" / "src" / "main.c").write_text("int main(void) { return 0; }\n")
    before = snapshot(tmp_path)
    assert_one_line_error(invoke("run", scenario, "--out", tmp_path / "project2"), "not a whatif results directory")
    assert snapshot(tmp_path) == before


def test_run_into_an_existing_file_is_refused(tmp_path):
    scenario = tmp_path / "s.toml"
    scenario.write_text(SMALL_SCENARIO)
    (tmp_path / "out").write_text("keep")
    assert_one_line_error(invoke("run", scenario, "--out", tmp_path / "out"), "existing file")
    assert (tmp_path / "out").read_text() == "keep"


@pytest.mark.parametrize("name", ["..", "../x", ".", "a/b", ".hidden", "a\\\\b"])
def test_scenario_names_must_be_plain_file_names(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keep.txt").write_text("keep")
    scenario = tmp_path / "s.toml"
    scenario.write_text(SMALL_SCENARIO.replace('name = "tiny"', f'name = "{name}"'))
    before = snapshot(tmp_path)
    assert_one_line_error(invoke("run", scenario), "name", "plain file name")
    assert snapshot(tmp_path) == before


def test_simulate_and_regress_refuse_before_any_work(tmp_path):
    (tmp_path / "out").write_text("keep")
    assert_one_line_error(invoke("simulate", "-p", "mpc7447a", "-w", "specjvm98/compress", "-n", "1000",
                                 "--out", tmp_path / "out"), "existing file")
    assert (tmp_path / "out").read_text() == "keep"


# ------------------------------------------------------------------------------------ single files
def test_trace_output_never_replaces_a_foreign_file(tmp_path):
    for name in ("mine.wtr", "mine.lackey"):
        (tmp_path / name).write_text("my own data")
        assert_one_line_error(invoke("trace", "synth", tmp_path / name, "--accesses", "10"), "not written by whatif")
        assert (tmp_path / name).read_text() == "my own data"


def test_trace_output_replaces_its_own_traces(tmp_path):
    for name in ("t.wtr", "t.lackey"):
        assert invoke("trace", "synth", tmp_path / name, "--accesses", "10").exit_code == 0
        result = invoke("trace", "synth", tmp_path / name, "--accesses", "20", "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(invoke("trace", "info", tmp_path / name, "--json").stdout)["records"] >= 20
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.lackey", "t.wtr"]


# ------------------------------------------------------------------------------------ a full disk
def _free(monkeypatch, nbytes):
    usage = shutil.disk_usage("/")
    monkeypatch.setattr(writer.shutil, "disk_usage", lambda path: usage._replace(free=nbytes))


def _no_space(*_):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_outputs_a_file_system_has_no_room_for_are_refused_before_writing(tmp_path, monkeypatch):
    (tmp_path / "mine.txt").write_text("keep")
    before = snapshot(tmp_path)
    _free(monkeypatch, 1000)
    with pytest.raises(ScenarioError, match=r"f.txt: needs 2,000 bytes, and the file system of .* has 1,000 bytes "
                                            r"free; nothing written"):
        atomic_write_text(tmp_path / "f.txt", "x" * 2000)
    assert_one_line_error(invoke("simulate", "-p", "mpc7447a", "-w", "specjvm98/compress", "-n", "1000",
                                 "--out", tmp_path / "out"),
                          f"--out {tmp_path / 'out'}: ", "1,000 bytes free; nothing written")
    assert snapshot(tmp_path) == before and sorted(p.name for p in tmp_path.iterdir()) == ["mine.txt"]
    atomic_write_text(tmp_path / "f.txt", "x" * 1000)
    assert (tmp_path / "f.txt").read_text() == "x" * 1000


@pytest.mark.parametrize("name", ["t.lackey", "t.wtr"])
def test_a_trace_is_written_as_its_chunks_come_not_held_whole(tmp_path, name):
    from whatif.scenarios.commands.trace import TraceWriter
    from whatif.simulator.traces import Trace, TraceFile

    rng = np.random.default_rng(1)
    chunk = Trace(rng.integers(0, 2 ** 40, 50_000).astype(np.uint64), np.full(50_000, 8, np.uint8),
                  rng.integers(0, 3, 50_000).astype(np.uint8), "test")
    with TraceWriter(tmp_path / name) as out:
        sizes = []
        for _ in range(3):
            out.add(chunk)
            staged, = tmp_path.iterdir()
            sizes.append(staged.stat().st_size)
        assert staged.name.startswith(f".{name}.whatif-stage-") and sizes[0] > 100_000
        assert sizes[2] - sizes[1] == sizes[1] - sizes[0] > 100_000     # each chunk on disk once it is added
    assert [p.name for p in tmp_path.iterdir()] == [name]
    with TraceFile(tmp_path / name, "auto") as back:
        got = [np.concatenate(x) for x in zip(*((c.addrs, c.kinds) for c, _ in back.chunks()))]
    np.testing.assert_array_equal(got[0], np.tile(chunk.addrs, 3))
    np.testing.assert_array_equal(got[1], np.tile(chunk.kinds, 3))


def test_a_wtr_whose_header_cannot_be_completed_leaves_nothing(tmp_path, monkeypatch):
    from whatif.scenarios.commands.trace import TraceWriter
    from whatif.simulator import trace_wtr
    from whatif.simulator.traces import Trace

    header = trace_wtr.header

    def fails_at_the_end(records, *args):
        if records:                               # (the count written over the placeholder, last)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / "t.wtr"))
        return header(records, *args)
    monkeypatch.setattr(trace_wtr, "header", fails_at_the_end)
    out = TraceWriter(tmp_path / "t.wtr")
    with pytest.raises(OSError, match="No space left"):
        with out:
            out.add(Trace(np.arange(100, dtype=np.uint64), np.full(100, 8, np.uint8), np.ones(100, np.uint8), "t"))
    assert list(tmp_path.iterdir()) == []         # at once, the writer still held (not when it is collected)
    assert_one_line_error(invoke("trace", "synth", tmp_path / "t.wtr", "--accesses", "1000"),
                          f"{tmp_path / 't.wtr'}: No space left on device")
    assert list(tmp_path.iterdir()) == []


def test_a_trace_the_system_stops_halfway_leaves_nothing_and_the_earlier_one_stands(tmp_path):
    """A trace is written as it is converted (never held whole); here the system refuses it past 1 MB
    (RLIMIT_FSIZE: the write fails with EFBIG, as a full disk's fails with ENOSPC)."""
    assert invoke("trace", "synth", tmp_path / "t.wtr", "--accesses", "200000").exit_code == 0
    assert invoke("trace", "synth", tmp_path / "out.lackey", "--accesses", "10").exit_code == 0
    before = snapshot(tmp_path)
    code = ("import resource, signal, sys\n"
            "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
            "resource.setrlimit(resource.RLIMIT_FSIZE, (10 ** 6, 10 ** 6))\n"
            "from whatif.cli import main\n"
            f"sys.argv = ['whatif', 'trace', 'convert', {str(tmp_path / 't.wtr')!r}, "
            f"{str(tmp_path / 'out.lackey')!r}]\n"
            "main()\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr == (f"whatif: error: {tmp_path / 'out.lackey'}: could not be written (File too large); "
                        f"nothing written\n")
    assert snapshot(tmp_path) == before and sorted(p.name for p in tmp_path.iterdir()) == ["out.lackey", "t.wtr"]


def test_a_disk_that_fills_during_the_write_leaves_nothing(tmp_path, monkeypatch):
    (tmp_path / "mine.txt").write_text("keep")
    assert invoke("trace", "synth", tmp_path / "t.wtr", "--accesses", "10").exit_code == 0
    write(tmp_path / "out")
    before = snapshot(tmp_path)
    monkeypatch.setattr(writer.os, "fsync", _no_space)
    assert_one_line_error(invoke("trace", "synth", tmp_path / "t.wtr", "--accesses", "20"),
                          "t.wtr: could not be written (No space left on device); nothing written")
    assert_one_line_error(invoke("simulate", "-p", "mpc7447a", "-w", "specjvm98/compress", "-n", "1000",
                                 "--out", tmp_path / "out"), "could not be written (No space left on device)")
    # the earlier trace and results stand, and no staging file or directory is left
    assert snapshot(tmp_path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.txt", "out", "t.wtr"]


def test_a_full_disk_anywhere_else_is_one_line_not_a_traceback(tmp_path, monkeypatch):
    from whatif.scenarios.commands import trace as trace_command

    def full(*_, **__):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / "t.wtr"))
    monkeypatch.setattr(trace_command, "write_trace", full)
    assert_one_line_error(invoke("trace", "synth", tmp_path / "t.wtr", "--accesses", "10"),
                          f"{tmp_path / 't.wtr'}: No space left on device")


def test_atomic_write_replaces_whole_file(tmp_path):
    target = tmp_path / "f.txt"
    atomic_write_text(target, "old content that is long")
    atomic_write_text(target, "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


# ------------------------------------------------------------------------------------ JSON, report
def test_to_json_converts_numpy():
    assert json.loads(to_json({"a": np.int64(3), "b": np.float32(0.5), "c": np.arange(3)})) == \
        {"a": 3, "b": 0.5, "c": [0, 1, 2]}


def test_report_is_self_contained():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([1, 2], [3, 4])
    rep = Report("t").heading("h").paragraph("p <b>").table(pd.DataFrame({"x": [1.0]}), caption="c").figure(fig, "f")
    text = rep.html()
    assert "data:image/png;base64," in text
    assert "p &lt;b&gt;" in text
    assert "src=\"http" not in text


def test_a_figure_worker_draws_in_another_process_and_ends_with_its_block():
    import os

    import pandas as pd

    from whatif.models.flowgsp.results import generations_figure
    from whatif.scenarios.results.figure_worker import FigureWorker

    g = pd.DataFrame({"n": [1, 2], "candidates": [10, 4], "kept": [5, 1], "seconds": [0.1, 0.2]})
    with FigureWorker() as worker:
        png = worker.png(generations_figure, g).get(timeout=60)
        (pid,) = [p.pid for p in worker._pool._pool]
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and pid != os.getpid()
    with pytest.raises(ZeroDivisionError):
        with FigureWorker() as worker:
            (pid,) = [p.pid for p in worker._pool._pool]
            1 / 0
    with pytest.raises(ProcessLookupError):          # killed and reaped with the block
        os.kill(pid, 0)
