"""Trace readers and writers: lackey text, the binary format, the synthetic generator."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.traces import (Stream, Trace, lackey_text, mixed_streams, read_lackey, read_trace, read_wtr,
                              synthetic_trace, wtr_bytes)


def test_lackey_skips_valgrind_lines_blank_lines_and_crlf(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes(b"==1== Lackey\r\n\r\nI  0400000,4\r\n L 7ff000010,8\r\n S 10,1\r\n M ffffffffffffffff,2\r\n   \n")
    tr = read_lackey(path)
    assert tr.kinds.tolist() == [0, 1, 2, 3]
    assert tr.addrs.tolist() == [0x400000, 0x7FF000010, 0x10, 0xFFFFFFFFFFFFFFFF]
    assert tr.sizes.tolist() == [4, 8, 1, 2]


@pytest.mark.parametrize("line", [" X 400,4", "I 400,4x", " L 400", " L ,4", "L 400,4", " I 400,4",
                                  " L 400,0", " L 12345678901234567,4", "garbage", "=1= nope"])
def test_lackey_bad_line_reports_its_number(tmp_path, line):
    path = tmp_path / "bad.txt"
    path.write_text(f"I  400,4\n L 500,8\n{line}\n L 600,8\n")
    with pytest.raises(SimulatorInputError, match=rf"bad.txt:3: "):
        read_lackey(path)


def test_empty_trace_file(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("")
    assert len(read_lackey(path)) == 0


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**64 - 1), st.integers(1, 65535), st.integers(0, 3)), max_size=60))
def test_lackey_and_binary_round_trip(tmp_path_factory, records):
    tr = Trace(np.array([r[0] for r in records], dtype=np.uint64), np.array([r[1] for r in records], np.uint16),
               np.array([r[2] for r in records], np.uint8))
    d = tmp_path_factory.mktemp("rt")
    (d / "t.lackey").write_text(lackey_text(tr))
    (d / "t.wtr").write_bytes(wtr_bytes(tr))
    for back in (read_lackey(d / "t.lackey"), read_wtr(d / "t.wtr"), read_trace(d / "t.wtr"),
                 read_trace(d / "t.lackey")):
        assert back.addrs.tolist() == tr.addrs.tolist()
        assert back.sizes.tolist() == tr.sizes.tolist()
        assert back.kinds.tolist() == tr.kinds.tolist()


def test_truncated_binary_trace(tmp_path):
    tr = synthetic_trace(mixed_streams(), 100, seed=1)
    path = tmp_path / "t.wtr"
    path.write_bytes(wtr_bytes(tr)[:-5])
    with pytest.raises(SimulatorInputError, match="truncated or corrupt"):
        read_wtr(path)


def test_binary_with_wrong_magic(tmp_path):
    path = tmp_path / "t.wtr"
    path.write_bytes(b"NOTATRACE" + bytes(40))
    with pytest.raises(SimulatorInputError, match="bad magic"):
        read_wtr(path)


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


def test_sequential_stream_walks_forward_and_wraps():
    tr = synthetic_trace([Stream("sequential", 1.0, footprint_kb=1, access_bytes=8)], 300, seed=0)
    offsets = (tr.addrs - tr.addrs[0]).astype(np.int64)
    assert offsets[:3].tolist() == [0, 8, 16]
    assert offsets.max() == 1024 - 8 and offsets[128] == 0


def test_synthetic_rejects_bad_streams():
    with pytest.raises(SimulatorInputError, match="store_fraction"):
        synthetic_trace([Stream("random", 1.0, footprint_kb=4, store_fraction=1.5)], 10, seed=0)
    with pytest.raises(SimulatorInputError, match="unknown stream kind"):
        synthetic_trace([Stream("zigzag", 1.0, footprint_kb=4)], 10, seed=0)
