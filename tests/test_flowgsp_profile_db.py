"""SQLite profile databases (§4.2) and the EFG construction of §4.3."""

import sqlite3

import numpy as np
import pandas as pd
import pytest

from whatif.models.errors import ModelInputError
from whatif.models.flowgsp import read_profile, read_sqlite, read_tables, write_tables
from whatif.models.flowgsp.profile_db import SCHEMA, efg_from_tables


def hand_tables():
    """One method: blocks 2 (offsets 0, 2, 4), 3 (8), 4 (10); empty CFG entry 0 and exit 1."""
    return {
        "Symbol": pd.DataFrame({"symbol_id": [1, 2], "name": ["pkg/C.m()V", "pkg/C.n()V"], "jit_entry_offset": [4, 0]}),
        "Disassm": pd.DataFrame({"symbol_id": [1, 1, 1, 1, 1, 2, 2], "offset": [0, 2, 4, 8, 10, 0, 4],
                                 "opcode": ["L", "AHI", "BRC", "ST", "BCR", "LR", "BCR"], "operands": [""] * 7}),
        "IA": pd.DataFrame({"symbol_id": [1, 1, 1, 1, 1, 1, 2], "offset": [0, 4, 8, 0, 8, 2, 0],
                            "event": ["TICKS", "TICKS", "TICKS", "Icachemiss", "Dcachemiss", "Latency", "TICKS"],
                            "count": [5, 3, 2, 2, 0, 7, 4]}),
        "Listing": pd.DataFrame({"symbol_id": [1, 1, 1, 1, 1, 2, 2], "offset": [0, 2, 4, 8, 10, 0, 4],
                                 "bytecode": [0, 1, 2, 3, 4, 0, 1], "block": [2, 2, 2, 3, 4, 2, 3],
                                 "inline_level": [0, 0, 0, 1, 0, 0, 2]}),
        "CFGNode": pd.DataFrame({"symbol_id": [1] * 5 + [2, 2], "block": [0, 1, 2, 3, 4, 2, 3],
                                 "frequency": [10, 10, 10, 6, 10, 3, 3]}),
        "CFGEdge": pd.DataFrame({"symbol_id": [1] * 10 + [2],
                                 "kind": ["out", "out", "out", "out", "out", "in", "in", "in", "in", "in", "in"],
                                 "src_block": [0, 2, 2, 3, 4, 0, 2, 2, 3, 4, 2],
                                 "dst_block": [2, 3, 4, 4, 1, 2, 3, 4, 4, 1, 3],
                                 "frequency": [10, 6, 4, 6, 10, 10, 6, 4, 6, 10, 3]}),
    }


def test_construction_follows_section_4_3(tmp_path):
    db = tmp_path / "p.sqlite"
    write_tables(hand_tables(), db)
    efg = read_sqlite(db, prologue_bytes=4, bins={"Latency": [1, 5, 20]})
    assert efg.method_names == ("pkg/C.m()V", "pkg/C.n()V")
    assert efg.vertex_ids.tolist() == [0, 2, 4, 8, 10, 0, 4]
    assert efg.weight.tolist() == [5, 0, 3, 2, 0, 4, 0]
    edges = sorted(zip(efg.vertex_ids[efg.edge_src].tolist(), efg.vertex_ids[efg.edge_dst].tolist(),
                       efg.edge_freq.tolist(), efg.edge_src.tolist()))
    # intra-block chain at block frequency; CFG edges between last and first instructions; edges touching
    # the empty entry/exit blocks are skipped; method 2 has only 'in' rows, which are used
    assert edges == [(0, 2, 10.0, 0), (0, 4, 3.0, 5), (2, 4, 10.0, 1), (4, 8, 6.0, 2), (4, 10, 4.0, 2),
                     (8, 10, 6.0, 3)]
    attrs = [set(efg.vertex_attributes(v)) for v in range(efg.n_vertices)]
    assert attrs[0] == {"Opcode=L", "Prologue", "Icachemiss"}
    assert attrs[1] == {"Opcode=AHI", "Prologue", "Latency[5,20)"}
    assert attrs[2] == {"Opcode=BRC", "JITtarget"}
    assert attrs[3] == {"Opcode=ST", "InlineLvl=1"}       # Dcachemiss counted 0: absent
    assert attrs[4] == {"Opcode=BCR"}
    assert attrs[5] == {"Opcode=LR", "Prologue", "JITtarget"}
    assert attrs[6] == {"Opcode=BCR", "InlineLvl=2"}


def test_bins_cover_the_top_range(tmp_path):
    t = hand_tables()
    t["IA"].loc[5, "count"] = 25
    efg = efg_from_tables(t, bins={"Latency": [1, 5, 20]})
    assert "Latency>=20" in efg.vertex_attributes(1)


def test_round_trip_through_sqlite_matches_tables(tmp_path):
    db = tmp_path / "p.sqlite"
    write_tables(hand_tables(), db)
    back = read_tables(db)
    assert set(back) == set(SCHEMA)
    assert back["CFGEdge"].frequency.tolist() == hand_tables()["CFGEdge"].frequency.tolist()
    direct = efg_from_tables(hand_tables())
    via_db = read_profile(db)
    assert np.array_equal(direct.edge_freq, via_db.edge_freq) and direct.attribute_names == via_db.attribute_names


def test_missing_tables_are_named(tmp_path):
    db = tmp_path / "p.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE Symbol (symbol_id INTEGER, name TEXT, jit_entry_offset INTEGER)")
    con.execute("CREATE TABLE IA (symbol_id INTEGER)")
    con.commit()
    con.close()
    with pytest.raises(ModelInputError) as info:
        read_sqlite(db)
    assert str(info.value) == (f"{db}: SQLite profile lacks table(s) Disassm, Listing, CFGNode, CFGEdge "
                               "(expected Symbol, Disassm, IA, Listing, CFGNode, CFGEdge)")


def test_missing_columns_are_named(tmp_path):
    db = tmp_path / "p.sqlite"
    write_tables(hand_tables(), db)
    con = sqlite3.connect(db)
    con.execute("ALTER TABLE CFGEdge RENAME COLUMN frequency TO freq")
    con.commit()
    con.close()
    with pytest.raises(ModelInputError, match=r"table CFGEdge lacks column\(s\) frequency"):
        read_sqlite(db)


def test_bad_values_name_table_row_and_column(tmp_path):
    t = hand_tables()
    t["IA"]["count"] = t["IA"]["count"].astype(object)
    t["IA"].loc[2, "count"] = -3
    with pytest.raises(ModelInputError, match="table IA row 3 column count: must be non-negative"):
        efg_from_tables(t, source="p.sqlite")
    t = hand_tables()
    t["CFGEdge"].loc[1, "kind"] = "sideways"
    with pytest.raises(ModelInputError, match="table CFGEdge row 2 column kind"):
        efg_from_tables(t)
    t = hand_tables()
    t["CFGNode"] = t["CFGNode"][t["CFGNode"].block != 2]
    with pytest.raises(ModelInputError, match="CFGNode has no row for block 2 of symbol 1"):
        efg_from_tables(t)


def test_not_a_database(tmp_path):
    f = tmp_path / "x.sqlite"
    f.write_bytes(b"garbage")
    with pytest.raises(ModelInputError, match="not a SQLite database"):
        read_tables(f)
