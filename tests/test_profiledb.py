"""The profile database of a profiled run: the six tables of seed 001 §4.2, consistent with the run and
readable by the FlowGSP reader; a profile written by hand in the same schema mines the same way."""

from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd
import pytest

from whatif.models.flowgsp import FlowGSP
from whatif.models.flowgsp.profile_db import SCHEMA, read_sqlite, write_tables
from whatif.simulator.core.profiler import SAMPLED_EVENTS
from whatif.simulator.isa import OP_CALL, OP_LOAD, OP_RET, OP_STORE
from whatif.simulator.machine import Machine
from whatif.simulator.platform import load_platform
from whatif.simulator.profiledb import ENTRY_BLOCK, EXIT_BLOCK, mnemonic, profile_shape, profile_tables


@pytest.fixture(scope="module")
def run():
    m = Machine(load_platform("z10"), "specjvm98/db", 600_000, seed=4, noise=None, profile_every=41)
    m.warm_up(200_000).run()
    tables = profile_tables(m.synth.program, m.profile(), "db")
    return m, tables


def test_every_instruction_of_the_program_is_listed_once(run):
    m, t = run
    n = len(m.synth.program)
    assert len(t["Disassm"]) == len(t["Listing"]) == n
    assert not t["Disassm"].duplicated(["symbol_id", "offset"]).any()
    assert (t["Disassm"].offset >= 0).all()
    # the methods are the program's functions: one symbol per (phase, function), the drivers included
    assert len(t["Symbol"]) == len({(int(p), int(f)) for p, f in zip(m.synth.program.phase, m.synth.program.func)})
    assert t["Symbol"].name.str.startswith("db/").all() and t["Symbol"].name.str.endswith("driver").sum() == \
        len(m.synth.program.phase_names)


def test_counters_are_the_profilers(run):
    m, t = run
    prof = m.profile()
    ia = t["IA"]
    assert ia[ia.event == "TICKS"]["count"].sum() == prof.ticks.sum() == prof.samples - prof.samples_outside
    for j, name in enumerate(SAMPLED_EVENTS):
        assert ia[ia.event == name]["count"].sum() == prof.events[:, j].sum()
    assert (ia["count"] > 0).all()
    assert t["IAEvent"]["count"].sum() == prof.occurrences.sum()


def test_a_method_is_entered_by_calls_not_by_its_own_back_edges(run):
    """The entry block's frequency counts entries from outside the method.  A driver's head is also the
    target of its loop's back edge: it is entered once per phase entry in the measured window."""
    m, t = run
    node = t["CFGNode"]
    entries = node[node.block == ENTRY_BLOCK].set_index("symbol_id").frequency
    head_runs = node[node.block == 2].set_index("symbol_id").frequency
    drivers = t["Symbol"][t["Symbol"].name.str.endswith("driver")]
    start = 200_000                                  # the warm-up
    entered = [name for at, name in m.synth.phase_boundaries() if at >= start]
    assert (head_runs[drivers.symbol_id] > 5).any()           # some driver loops in the window
    for sid, name in zip(drivers.symbol_id, drivers.name):
        assert entries[sid] == entered.count(name.split("/")[1].removesuffix(".driver")), name


def test_block_frequencies_are_conserved_by_the_edges(run):
    """Executions of a block = what flows out of it (fall-through, branch, call return, exit), up to the
    calls still open and the instructions of the last block when the run stopped."""
    m, t = run
    node = t["CFGNode"][t["CFGNode"].block >= 2].set_index(["symbol_id", "block"]).frequency
    edge = t["CFGEdge"]
    out = edge.groupby(["symbol_id", "src_block"]).frequency.sum()
    out.index.names = ["symbol_id", "block"]
    executed = node[node > 0]
    diff = (executed - out.reindex(executed.index).fillna(0)).abs()
    assert diff.max() <= 16                                 # the call depth at the end of the run
    assert (diff > 0).sum() <= 16
    inflow = edge[edge.dst_block >= 2].groupby(["symbol_id", "dst_block"]).frequency.sum()
    inflow.index.names = ["symbol_id", "block"]
    diff_in = (executed - inflow.reindex(executed.index).fillna(0)).abs()
    assert diff_in.max() <= 16
    # the entry and exit blocks hold the calls into and returns out of each method
    ends = t["CFGNode"][t["CFGNode"].block < 2]
    assert (ends.groupby("symbol_id").frequency.sum() >= 0).all()
    entry = edge[edge.src_block == ENTRY_BLOCK].frequency.sum()
    exit_ = edge[edge.dst_block == EXIT_BLOCK].frequency.sum()
    assert abs(entry - exit_) <= 16


def test_shape_counts_blocks_and_inner_edges(run):
    _, t = run
    shape = profile_shape(t)
    assert shape["instructions"] == len(t["Disassm"])
    assert shape["blocks"] == len(t["CFGNode"]) - 2 * len(t["Symbol"])
    assert 0 < shape["edges"] < len(t["CFGEdge"])
    assert shape["sampled_instructions"] == int((t["IA"].event == "TICKS").sum())


def test_z_mnemonics():
    assert [mnemonic("z/Architecture", OP_LOAD, 6, s, False) for s in (1, 2, 4, 8)] == ["LLGC", "LH", "L", "LG"]
    assert mnemonic("z/Architecture", OP_STORE, 4, 8, False) == "STG"
    assert mnemonic("z/Architecture", OP_CALL, 6, 0, False) == "BRASL"
    assert mnemonic("z/Architecture", OP_RET, 2, 0, False) == "BR"
    assert mnemonic("x86_64", OP_LOAD, 3, 8, False) == "LOAD8"


def _by_hand(tables: dict[str, pd.DataFrame], path) -> None:
    """The same tables written with plain SQL: other column order, an extra column, TEXT numbers."""
    con = sqlite3.connect(path)
    for table, columns in SCHEMA.items():
        cols = list(reversed(columns)) + ["note"]
        con.execute(f"CREATE TABLE {table} ({', '.join(cols)})")
        df = tables[table]
        rows = [tuple(str(v) if isinstance(v, (int, np.integer)) and c == "offset" else
                      (v.item() if hasattr(v, "item") else v) for c, v in zip(reversed(columns), row)) + ("x",)
                for row in df[list(reversed(columns))].itertuples(index=False, name=None)]
        con.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(cols))})", rows)
    con.commit()
    con.close()


def test_a_profile_written_by_hand_mines_the_same_way(run, tmp_path):
    _, t = run
    write_tables(t, tmp_path / "whatif.sqlite")
    _by_hand(t, tmp_path / "hand.sqlite")
    a, b = read_sqlite(tmp_path / "whatif.sqlite"), read_sqlite(tmp_path / "hand.sqlite")
    assert a.describe() == b.describe()
    engine = FlowGSP(gap=0, window=1, n_generations=2, min_support=0.02, min_diff_support=0.02, workers=1)
    ra, rb = engine.fit(a), engine.fit(b)
    pd.testing.assert_frame_equal(ra.table(), rb.table())
    assert len(ra.table()) > 5
