"""Small valid inputs of every format the corpus breaks: scenarios of each study kind, tables, graphs,
vectors, a platform file.  ``test_corpus.test_fixture_is_accepted`` checks that each one is accepted,
so that a corpus case fails because of its one edit and nothing else."""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path

import whatif.scenarios
import whatif.simulator

from test_cli import SMALL_SCENARIO

SCENARIO_DIR = Path(whatif.scenarios.__file__).parent
PLATFORM_DIR = Path(whatif.simulator.__file__).parent / "platforms"


def shipped_scenario(name: str) -> str:
    return (SCENARIO_DIR / f"{name}.toml").read_text(encoding="utf-8")


def edit(text: str, *replacements: tuple[str, str]) -> str:
    """``text`` with each (old, new) replaced once; an ``old`` that is not there is a broken fixture."""
    for old, new in replacements:
        if old not in text:
            raise AssertionError(f"corpus fixture: {old!r} not found")
        text = text.replace(old, new, 1)
    return text


# ------------------------------------------------------------------------------------- scenarios
CACHESIM = SMALL_SCENARIO.lstrip()          # the CLI tests' small cachesim study

SIMULATE = """\
schema_version = 1
name = "sim"
study = "simulate"
seed = 1
platforms = ["nehalem"]
workloads = ["429.mcf"]

[simulate]
instructions = 100_000
sampling = [10, 5, 3]
time_scale = 1e-5
pmu = "ideal"

[variants.base]
"""

REGRESSION = shipped_scenario("java-7447a-regression")
SIMILARITY = shipped_scenario("cint2006-similarity")
HBENCH_GC = shipped_scenario("hbench-jgc")
HBENCH_OS = shipped_scenario("hbench-os-webserver")
HBENCH_JAVA = shipped_scenario("hbench-java")
CAPACITY = shipped_scenario("webserver-capacity")
FLOWGSP = shipped_scenario("websphere-z10")
XEON = shipped_scenario("xeon-cpi-stacks")

PLATFORM = (PLATFORM_DIR / "mpc7447a.toml").read_text(encoding="utf-8")

# ------------------------------------------------------------------------------------- tables
def _time_series() -> str:
    rows = ["application,platform,t_start,t_end,cycles,instructions,A_stall,B_stall,C_stall"]
    for a, app in enumerate("abcd"):
        for i in range(5):
            k = 7 * a + 3 * i
            rows.append(f"{app},p1,{i},{i + 1},{1000 + 37 * ((k * 5) % 11)},{800 + 13 * ((k * 3) % 7)},"
                        f"{20 + (k * 7) % 50},{30 + (k * 11) % 40},{15 + (k * 13) % 60}")
    return "\n".join(rows) + "\n"


TIME_SERIES = _time_series()

SIGNATURES = """\
application,platform,A_stall,B_stall,C_stall
a,p1,0.1,0.2,0.3
b,p1,0.2,0.1,0.5
c,p1,0.5,-0.2,0.1
d,p1,-0.4,0.6,0.2
"""

RUN_TIMES = """\
application,platform,run_time
a,p1,10
b,p1,12
c,p1,9
d,p1,11
"""


def _totals() -> str:
    rows = ["workload,heap_kb,replicate,cycles,l1_miss,l2_miss,branches"]
    for i in range(12):
        l1, l2, br = 100 + 17 * ((i * 5) % 7), 10 + 3 * ((i * 3) % 5), 500 + 11 * ((i * 7) % 9)
        rows.append(f"w{i % 3},{1024 * (1 + i % 4)},{i % 2},{5 * l1 + 40 * l2 + br + (i * 13) % 17},{l1},{l2},{br}")
    return "\n".join(rows) + "\n"


TOTALS = _totals()

# ------------------------------------------------------------------------------------- graphs
EFG = {"methods": [
    {"name": "A.run()V",
     "vertices": [{"id": 0, "weight": 12, "attributes": ["Opcode=L", "Icachemiss"]},
                  {"id": 1, "weight": 5, "attributes": ["Opcode=ST"]},
                  {"id": 2, "weight": 7, "attributes": ["Opcode=L"]}],
     "edges": [[0, 1, 250.0], [1, 2, 100.0], [0, 2, 150.0]]},
    {"name": "B.go()V",
     "vertices": [{"id": 0, "weight": 3, "attributes": ["Icachemiss"]},
                  {"id": 1, "weight": 9, "attributes": ["Opcode=L", "DTLBmiss"]}],
     "edges": [[0, 1, 80.0]]},
]}


def efg_text(doc=None) -> str:
    return json.dumps(EFG if doc is None else doc)


def efg_edited(change) -> str:
    """The EFG after ``change(doc)`` (a deep copy is changed)."""
    doc = json.loads(json.dumps(EFG))
    change(doc)
    return json.dumps(doc)


def sqlite_bytes(*statements: str) -> bytes:
    """A SQLite database file made by ``statements``."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.sqlite"
        con = sqlite3.connect(path)
        for s in statements:
            con.execute(s)
        con.commit()
        con.close()
        return path.read_bytes()


# ------------------------------------------------------------------------------------- vectors
SYSTEM_CSV = """\
primitive,unit,A,B
file_read,us,1.0,2.0
tcp_connect,us,3.0,1.5
"""

APP_CSV = """\
primitive,static
file_read,10
tcp_connect,2
"""

VECTORS_TOML = """\
schema_version = 1
source = "corpus"
[systems.A]
file_read = 1.0
tcp_connect = 3.0
[systems.B]
file_read = 2.0
tcp_connect = 1.5
[applications.static]
file_read = 10
tcp_connect = 2
"""
