"""Trace readers and writers: lackey text, the binary format (v2 and v1), chunked reading, the synthetic
generator, and the trace commands' bad inputs.  The fast readers are checked against the slow reference
twins of ``tests/traceref.py`` on arbitrary inputs."""

import json
import struct
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cli import assert_one_line_error, invoke

import traceref
from whatif.scenarios.commands import cachesim as cachesim_cmd
from whatif.scenarios.commands import trace as trace_cmd
from whatif.simulator import trace_wtr
from whatif.simulator.collect import run_trace
from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.platform import load_platform
from whatif.simulator.trace_lackey import LackeyReader
from whatif.simulator.traces import (CHUNK_RECORDS, Stream, Trace, TraceFile, interleave_fetches, lackey_text,
                                     mixed_streams, read_lackey, read_trace, read_wtr, synthetic_trace, wtr_bytes)

# 64 bytes of canonical lines: the scanner's word-at-a-time path stops 48 bytes before the end of its buffer,
# so a test input followed by this suffix goes through the fast path, without it through the general one
SUFFIX = b"I  00400000,4\n L 7ff0001000,8\nI  00400004,4\n S 7ff0001008,8\n"
SUFFIX_RECORDS = [(0x400000, 4, 0), (0x7FF0001000, 8, 1), (0x400004, 4, 0), (0x7FF0001008, 8, 2)]


def records_of(trace: Trace) -> list[tuple[int, int, int]]:
    return list(zip(trace.addrs.tolist(), trace.sizes.tolist(), trace.kinds.tolist()))


def fast_lackey(path, cap: int) -> tuple[list[tuple[int, int, int]], int]:
    """The chunked reader with arrays of ``cap`` records, as (records, bad line number or 0)."""
    out = []
    a, s, k = np.empty(cap, np.uint64), np.empty(cap, np.uint16), np.empty(cap, np.uint8)
    with LackeyReader(path) as reader:
        try:
            while n := reader.fill(a, s, k):
                out += zip(a[:n].tolist(), s[:n].tolist(), k[:n].tolist())
        except SimulatorInputError as exc:
            return out, int(str(exc).split(":")[1])
    return out, 0


# ------------------------------------------------------------------------------------ lackey
def test_lackey_skips_valgrind_lines_blank_lines_and_crlf(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes(b"==1== Lackey\r\n\r\nI  0400000,4\r\n L 7ff000010,8\r\n S 10,1\r\n M ffffffffffffffff,2\r\n   \n")
    tr = read_lackey(path)
    assert tr.kinds.tolist() == [0, 1, 2, 3]
    assert tr.addrs.tolist() == [0x400000, 0x7FF000010, 0x10, 0xFFFFFFFFFFFFFFFF]
    assert tr.sizes.tolist() == [4, 8, 1, 2]


BAD_LINES = [" X 400,4", "I 400,4x", " L 400", " L ,4", "L 400,4", " I 400,4", " L 400,0", " L 400,65536",
             " L 12345678901234567,4", "garbage", "=1= nope", "I  0123456789abcdefX4", " L 400,4 x",
             " L 400,99999999999999999999", "I  0040,\t4", " L 40\x000,4"]


@pytest.mark.parametrize("suffix", [b"", SUFFIX * 2], ids=["general", "fast"])
@pytest.mark.parametrize("line", BAD_LINES)
def test_lackey_bad_line_reports_its_number(tmp_path, line, suffix):
    path = tmp_path / "bad.txt"
    path.write_bytes(f"I  400,4\n L 500,8\n{line}\n L 600,8\n".encode() + suffix)
    with pytest.raises(SimulatorInputError, match=r"bad.txt:3: "):
        read_lackey(path)


@pytest.mark.parametrize("line, record", [("I  ffffffffffffffff,65535", (2**64 - 1, 65535, 0)),
                                          (" M 0000000000000001,0000000000000000000004", (1, 4, 3)),
                                          ("\t L\t\tABCdef,16 \t", (0xABCDEF, 16, 1)), ("I 0,1", (0, 1, 0))])
def test_lackey_accepts_the_whole_grammar(tmp_path, line, record):
    for suffix in (b"", SUFFIX):
        path = tmp_path / "t.lackey"
        path.write_bytes(line.encode() + b"\n" + suffix)
        assert records_of(read_lackey(path))[0] == record


@pytest.mark.parametrize("text", [b"", b"==1== Lackey\n==1== Command: true\n\n", b"\n\n   \n"])
def test_a_trace_without_records_is_an_error(tmp_path, text):
    path = tmp_path / "empty.lackey"
    path.write_bytes(text)
    with pytest.raises(SimulatorInputError, match="holds no records"):
        read_trace(path)
    with TraceFile(path) as tf, pytest.raises(SimulatorInputError, match="holds no records"):
        list(tf.chunks())


# Lines of the grammar, canonical (as valgrind prints them) and not (tabs, blanks, case, zeros, CRLF).
addresses = st.integers(0, 2**64 - 1)
sizes = st.integers(1, 65535)
blank = st.sampled_from([" ", "\t", "  ", " \t"])


@st.composite
def lackey_line(draw) -> str:
    kind = draw(st.sampled_from("ILSM"))
    addr, size = draw(addresses), draw(sizes)
    if draw(st.booleans()):                                # canonical
        return f"I  {addr:08x},{size}" if kind == "I" else f" {kind} {addr:08x},{size}"
    digits = draw(st.sampled_from([f"{addr:x}", f"{addr:X}", f"{addr:016x}"]))
    lead = "" if kind == "I" else draw(blank)
    zeros = "0" * draw(st.integers(0, 3))
    tail = draw(st.sampled_from(["", " ", "\t", "\r"]))
    return f"{lead}{kind}{draw(blank)}{digits},{zeros}{size}{tail}"


other_line = st.sampled_from(["", "   ", "==4242== Lackey, an example Valgrind tool", "  ==1== x", "\r"])
lines = st.lists(st.one_of(lackey_line(), lackey_line(), other_line), max_size=40)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines, st.booleans(), st.booleans(), st.integers(1, 9))
def test_fast_lackey_reader_equals_the_reference_on_valid_text(tmp_path, text_lines, fast, final_newline, cap):
    data = "\n".join(text_lines).encode() + (b"\n" if final_newline or fast else b"") + (SUFFIX if fast else b"")
    path = tmp_path / "t.lackey"
    path.write_bytes(data)
    expected, bad = traceref.lackey(data)
    assert bad == 0
    assert fast_lackey(path, cap) == (expected, 0)
    if expected:
        assert records_of(read_lackey(path)) == expected


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines, st.integers(0, 40), st.binary(max_size=30), st.booleans(), st.integers(1, 9))
def test_fast_lackey_reader_equals_the_reference_on_any_bytes(tmp_path, text_lines, at, noise, fast, cap):
    """Valid lines with arbitrary bytes spliced in: the same records, and the same first bad line."""
    body = "\n".join(text_lines).encode()
    at = min(at, len(body))
    data = body[:at] + noise + body[at:] + (SUFFIX if fast else b"")
    path = tmp_path / "t.lackey"
    path.write_bytes(data)
    expected, bad = traceref.lackey(data)
    got, got_bad = fast_lackey(path, cap)
    assert got_bad == bad
    assert got == (expected[:len(got)] if bad else expected)     # (a failed fill delivers nothing)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(addresses, sizes, st.integers(0, 3)), min_size=1, max_size=60))
def test_lackey_writer_prints_as_valgrind_does(records):
    tr = Trace(*(np.array(col, dtype) for col, dtype in zip(zip(*records), (np.uint64, np.uint16, np.uint8))))
    text = lackey_text(tr).encode()
    assert text.split(b"\n", 1)[1] == traceref.lackey_lines(records)


def test_a_bad_line_in_a_later_chunk_is_raised_by_the_reader_thread(tmp_path):
    path = tmp_path / "t.lackey"
    path.write_bytes(SUFFIX * 10 + b"bad\n" + SUFFIX)
    with TraceFile(path) as tf, pytest.raises(SimulatorInputError, match=r"t.lackey:41: "):
        list(tf.chunks(size=7))


# ------------------------------------------------------------------------------------ .wtr
record_lists = st.lists(st.tuples(st.one_of(addresses, st.integers(0x400000, 0x400100)),
                                  st.one_of(sizes, st.sampled_from([1, 2, 4, 8, 16, 64, 15, 3])),
                                  st.integers(0, 3)), min_size=1, max_size=80)


def as_trace(records) -> Trace:
    return Trace(*(np.array(col, dtype) for col, dtype in zip(zip(*records), (np.uint64, np.uint16, np.uint8))))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(record_lists, st.sampled_from([1, 2, 8, 1 << 16]), st.integers(0, 3))
def test_wtr_v2_matches_the_reference_coder_and_reads_back_in_any_chunks(tmp_path, records, block, chunk_shift):
    tr = as_trace(records)
    data = trace_wtr.wtr_bytes(tr.addrs, tr.sizes, tr.kinds, block_records=block)
    assert data == traceref.wtr(records, block)
    path = tmp_path / "t.wtr"
    path.write_bytes(data)
    assert records_of(read_trace(path)) == records
    with TraceFile(path) as tf:
        assert tf.records == len(records)
        got = [r for chunk, _ in tf.chunks(size=block << chunk_shift) for r in records_of(chunk)]
    assert got == records
    # and the reference decoder reads what the fast coder wrote
    count, length, _ = struct.unpack_from("<III", data, 32)
    assert traceref.read_wtr_block(data[44:44 + length], count) == records[:count]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(record_lists, st.data())
def test_a_damaged_wtr_file_is_one_user_error(tmp_path, records, data):
    tr = as_trace(records)
    raw = bytearray(trace_wtr.wtr_bytes(tr.addrs, tr.sizes, tr.kinds, block_records=8))
    how = data.draw(st.sampled_from(["flip", "truncate", "append"]))
    if how == "flip":
        at = data.draw(st.integers(12, len(raw) - 1))      # anything after the magic and the version
        raw[at] ^= data.draw(st.integers(1, 255))
    elif how == "truncate":
        raw = raw[:data.draw(st.integers(0, len(raw) - 1))]
    else:
        raw += data.draw(st.binary(min_size=1, max_size=20))
    path = tmp_path / "t.wtr"
    path.write_bytes(bytes(raw))
    try:
        back = read_trace(path)
    except SimulatorInputError:
        return
    assert records_of(back) == records        # a changed block size that still fits the blocks: harmless


def test_wtr_v2_is_at_least_four_times_smaller_than_lackey_text():
    tr = synthetic_trace(mixed_streams(), 200_000, seed=1, instructions_per_access=1.0)
    assert len(lackey_text(tr)) / len(wtr_bytes(tr)) >= 4.0


def test_wtr_v1_files_are_still_read(tmp_path):
    tr = synthetic_trace(mixed_streams(), 1000, seed=2, instructions_per_access=0.5)
    path = tmp_path / "old.wtr"
    path.write_bytes(trace_wtr.wtr_v1_bytes(tr.addrs, tr.sizes, tr.kinds))
    assert records_of(read_wtr(path)) == records_of(tr)
    with TraceFile(path) as tf:
        assert [r for c, _ in tf.chunks(size=64) for r in records_of(c)] == records_of(tr)


def test_wtr_v1_with_a_zero_size_record_is_an_error(tmp_path):
    tr = Trace(np.array([1, 2, 3], np.uint64), np.array([4, 0, 4], np.uint16), np.array([1, 1, 2], np.uint8))
    path = tmp_path / "t.wtr"
    path.write_bytes(trace_wtr.wtr_v1_bytes(tr.addrs, tr.sizes, tr.kinds))
    with pytest.raises(SimulatorInputError, match="record 1 has size 0"):
        read_wtr(path)
    with pytest.raises(SimulatorInputError, match="record 1 has size 0"):
        wtr_bytes(tr)                                       # and nothing writes one


def test_truncated_binary_traces(tmp_path):
    tr = synthetic_trace(mixed_streams(), 100, seed=1)
    path = tmp_path / "t.wtr"
    path.write_bytes(trace_wtr.wtr_v1_bytes(tr.addrs, tr.sizes, tr.kinds)[:-5])
    with pytest.raises(SimulatorInputError, match="truncated or corrupt"):
        read_wtr(path)
    path.write_bytes(wtr_bytes(tr)[:-5])
    with pytest.raises(SimulatorInputError, match="truncated"):
        read_wtr(path)


def test_binary_with_wrong_magic_or_version(tmp_path):
    path = tmp_path / "t.wtr"
    path.write_bytes(b"NOTATRACE" + bytes(40))
    with pytest.raises(SimulatorInputError, match="bad magic"):
        read_wtr(path)
    path.write_bytes(struct.pack("<8sIIQQ", b"WHATIFTR", 3, 0, 0, 0))
    with pytest.raises(SimulatorInputError, match="format version 3 is not supported"):
        read_wtr(path)


# ------------------------------------------------------------------------------------ chunked simulation
def test_a_streamed_cachesim_equals_the_whole_trace_in_one_run(tmp_path):
    """cachesim runs a file chunk by chunk (CHUNK_RECORDS records, the hierarchy's own chunk): the counters
    equal one run over the whole trace, across chunk boundaries (prefetch engines' time included)."""
    tr = synthetic_trace(mixed_streams(), 3_000_000, seed=6, instructions_per_access=0.5)
    assert len(tr) > CHUNK_RECORDS
    path = tmp_path / "t.wtr"
    path.write_bytes(wtr_bytes(tr))
    doc = cachesim_cmd.cachesim_command(path, "nehalem", [], "auto", progress=False)
    counters, _ = run_trace(load_platform("nehalem"), tr, seed=0)
    assert doc["trace_accesses"] == len(tr)
    assert doc["levels"] == counters["levels"] and doc["tlbs"] == counters["tlbs"]
    assert doc["memory"] == counters["memory"]


def test_a_wtr_files_blocks_larger_than_a_chunk_are_delivered_whole(tmp_path):
    """A v2 file may use blocks of up to 4 M records, larger than CHUNK_RECORDS: its chunks are then a block
    each, and the records are all there, in order."""
    n = 2 * CHUNK_RECORDS + 5
    tr = synthetic_trace(mixed_streams(), n, seed=2)
    assert len(tr) == n
    path = tmp_path / "big_blocks.wtr"
    path.write_bytes(trace_wtr.wtr_bytes(tr.addrs, tr.sizes, tr.kinds, block_records=2 * CHUNK_RECORDS))
    with TraceFile(path) as tf:
        chunks = [(len(t), t.addrs[-1], done) for t, done in tf.chunks()]
    assert [c[0] for c in chunks] == [2 * CHUNK_RECORDS, 5] and [c[2] for c in chunks] == [2 * CHUNK_RECORDS, 5]
    assert chunks[0][1] == tr.addrs[2 * CHUNK_RECORDS - 1] and chunks[1][1] == tr.addrs[-1]


# ------------------------------------------------------------------------------------ synthetic
def test_synthetic_is_deterministic_and_mixes_as_asked():
    a = synthetic_trace(mixed_streams(), 50_000, seed=3, instructions_per_access=0.5)
    b = synthetic_trace(mixed_streams(), 50_000, seed=3, instructions_per_access=0.5)
    c = synthetic_trace(mixed_streams(), 50_000, seed=4, instructions_per_access=0.5)
    assert np.array_equal(a.addrs, b.addrs) and np.array_equal(a.kinds, b.kinds)
    assert not np.array_equal(a.addrs, c.addrs)
    counts = a.counts()
    assert counts["I"] == 25_000 and counts["L"] + counts["S"] == 50_000
    stores = counts["S"] / 50_000
    expected = sum(s.weight * s.store_fraction for s in mixed_streams())
    assert abs(stores - expected) < 0.01


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 50), st.data())
def test_instruction_fetches_are_interleaved_as_a_stable_sort_would(n, data):
    """Wave 1 interleaved the fetches with a stable argsort (the reference); now by index arithmetic."""
    pos = np.sort(np.array(data.draw(st.lists(st.integers(0, n), max_size=50)), dtype=np.int64))
    trace = Trace(np.arange(n, dtype=np.uint64) + 1000, np.full(n, 8, np.uint16), np.ones(n, np.uint8))
    code = np.arange(len(pos), dtype=np.uint64)
    order = np.argsort(np.concatenate([np.arange(n) + 0.5, pos.astype(float)]), kind="stable")
    merged = interleave_fetches(trace, code, pos)
    assert np.array_equal(merged.addrs, np.concatenate([trace.addrs, code])[order])
    assert np.array_equal(merged.kinds, np.concatenate([trace.kinds, np.zeros(len(pos), np.uint8)])[order])


def test_sequential_stream_walks_forward_and_wraps():
    tr = synthetic_trace([Stream("sequential", 1.0, footprint_kb=1, access_bytes=8)], 300, seed=0)
    offsets = (tr.addrs - tr.addrs[0]).astype(np.int64)
    assert offsets[:3].tolist() == [0, 8, 16]
    assert offsets.max() == 1024 - 8 and offsets[128] == 0


def test_synthetic_rejects_bad_streams_and_parameters():
    with pytest.raises(SimulatorInputError, match="store_fraction"):
        synthetic_trace([Stream("random", 1.0, footprint_kb=4, store_fraction=1.5)], 10, seed=0)
    with pytest.raises(SimulatorInputError, match="unknown stream kind"):
        synthetic_trace([Stream("zigzag", 1.0, footprint_kb=4)], 10, seed=0)
    for bad in (float("nan"), float("inf"), -1.0):
        with pytest.raises(SimulatorInputError, match="instructions_per_access must be a finite number >= 0"):
            synthetic_trace(mixed_streams(), 10, seed=0, instructions_per_access=bad)
    with pytest.raises(SimulatorInputError, match="the limit is 200,000,000"):
        synthetic_trace(mixed_streams(), 10**12, seed=0)


# ------------------------------------------------------------------------------------ commands
def test_cachesim_of_an_empty_lackey_trace_is_one_line(tmp_path):
    path = tmp_path / "empty.lackey"
    path.write_text("==1== Lackey\n")
    assert_one_line_error(invoke("cachesim", path, "-p", "nehalem"), "holds no records")
    assert_one_line_error(invoke("trace", "convert", path, tmp_path / "out.wtr"), "holds no records")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.lackey"]


def test_a_zero_size_record_in_a_wtr_file_is_one_line(tmp_path):
    path = tmp_path / "zero.wtr"
    path.write_bytes(trace_wtr.wtr_v1_bytes(np.array([64, 128], np.uint64), np.array([8, 0], np.uint16),
                                            np.array([1, 1], np.uint8)))
    assert_one_line_error(invoke("cachesim", path, "-p", "nehalem", "--json"), "record 1 has size 0")
    assert_one_line_error(invoke("trace", "info", path), "record 1 has size 0")


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "-inf"])
def test_synth_rejects_a_non_finite_or_negative_instruction_rate(tmp_path, value):
    result = invoke("trace", "synth", tmp_path / "t.wtr", "--accesses", 100, f"--instructions-per-access={value}")
    assert_one_line_error(result, "--instructions-per-access")
    assert list(tmp_path.iterdir()) == []


def test_synth_checks_its_size_before_any_work(tmp_path):
    assert_one_line_error(invoke("trace", "synth", tmp_path / "t.wtr", "--accesses", 10**12), "the limit is")
    assert list(tmp_path.iterdir()) == []


def test_synth_checks_the_memory_it_needs_before_any_work(tmp_path, monkeypatch):
    from whatif.simulator import traces

    if sys.platform.startswith("linux"):
        assert 0 < traces.available_memory() < 2 ** 50          # (read from /proc/meminfo)
    monkeypatch.setattr(traces, "available_memory", lambda: 10 ** 8)
    # 10 M accesses and an instruction fetch each: 20 M records, 37 bytes a record while they are made
    assert_one_line_error(invoke("trace", "synth", tmp_path / "t.wtr", "--accesses", 10 ** 7),
                          "20,000,000 records need about 0.7 GB of memory while they are made, and this host has "
                          "0.1 GB available")
    assert list(tmp_path.iterdir()) == []
    assert invoke("trace", "synth", tmp_path / "t.wtr", "--accesses", 10 ** 6).exit_code == 0     # 74 MB: fits


def test_convert_to_a_directory_is_one_line_and_writes_nothing(tmp_path, monkeypatch):
    src = tmp_path / "in.lackey"
    assert invoke("trace", "synth", src, "--accesses", 100).exit_code == 0
    monkeypatch.chdir(tmp_path)
    assert_one_line_error(invoke("trace", "convert", src, "."), "is a directory")
    assert_one_line_error(invoke("trace", "convert", src, tmp_path), "is a directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.lackey"]


def test_convert_round_trips_and_upgrades_v1(tmp_path):
    lackey, v2, v1, again = (tmp_path / n for n in ("t.lackey", "t.wtr", "old.wtr", "again.lackey"))
    assert invoke("trace", "synth", lackey, "--accesses", 5000, "--seed", 3).exit_code == 0
    doc = json.loads(invoke("trace", "convert", lackey, v2, "--json").stdout)
    assert doc["records"] == 10_000 and doc["instructions"] == 5000 and doc["written"] == str(v2)
    original = read_trace(lackey)
    v1.write_bytes(trace_wtr.wtr_v1_bytes(original.addrs, original.sizes, original.kinds))
    assert invoke("trace", "convert", v1, again).exit_code == 0
    assert records_of(read_trace(v2)) == records_of(original) == records_of(read_trace(again))
    assert v2.read_bytes()[8:12] == struct.pack("<I", 2)
    info = json.loads(invoke("trace", "info", v2, "--json").stdout)
    assert info["records"] == 10_000 and info["distinct_64B_lines"] == len(np.unique(original.addrs >> np.uint64(6)))


def test_synth_and_convert_progress_reaches_its_total(tmp_path, monkeypatch):
    seen = []

    class Bar:
        def __init__(self, total, description, enabled=True):
            seen.append([total, 0])

        def __enter__(self):
            return lambda n: seen[-1].__setitem__(1, seen[-1][1] + n)

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(trace_cmd, "progress_bar", Bar)
    trace_cmd.synth(tmp_path / "t.lackey", 3000, 1, 0.5)
    trace_cmd.convert(tmp_path / "t.lackey", tmp_path / "t.wtr", "auto")
    trace_cmd.convert(tmp_path / "t.wtr", tmp_path / "u.lackey", "auto")
    assert [done for total, done in seen] == pytest.approx([total for total, done in seen])
    assert seen[0][0] == 2 * 4500 and seen[2][0] == 4500
