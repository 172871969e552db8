"""Shared workload descriptions for the synthesis tests (no tests here), and one check that they
are valid.  Imported by the other test_synth*.py modules as ``from test_synth_cases import ...``."""

from __future__ import annotations

import copy

import numpy as np

from whatif.simulator.isa import OP_LOAD, OP_STORE, InstrBlock
from whatif.simulator.synth import Synthesizer
from whatif.simulator.workload import workload_from_dict

BASE = {
    "description": "synthesis test workload: every stream kind, two phases",
    "instructions": 600_000,
    "mix": {"load": 0.25, "store": 0.10, "branch": 0.18, "fp": 0.05, "other": 0.42},
    "code": {"functions": 60, "function_instructions": 40, "call_depth": 3, "calls_per_function": 2,
             "indirect_calls": 0.2, "indirect_targets": 3, "hot_skew": 0.7, "max_call_instructions": 5000},
    "branches": {"taken_rate": 0.6, "loops": 0.25, "loop_trips": 8, "fixed_trip_loops": 0.6},
    "dependences": {"agi": 0.4, "partial_writes": 0.05, "partial_flag_writes": 0.1},
    "streams": {
        "stack": {"kind": "random", "footprint_kb": 8, "weight": 0.3},
        "array": {"kind": "sequential", "footprint_kb": 256, "element_bytes": 8, "weight": 0.2},
        "column": {"kind": "strided", "footprint_kb": 512, "stride_bytes": 256, "element_bytes": 8, "weight": 0.1},
        "list": {"kind": "chase", "footprint_kb": 4096, "node_bytes": 64, "fields": 2, "weight": 0.2},
        "heap": {"kind": "random", "footprint_kb": 16384, "skew": 0.8, "accesses_per_block": 2, "weight": 0.2},
    },
    "phases": [
        {"name": "a", "fraction": 0.6},
        {"name": "b", "fraction": 0.4, "mix": {"load": 0.3, "store": 0.15, "branch": 0.12, "fp": 0.0, "other": 0.43},
         "stream_weights": {"array": 0.5, "list": 0.3, "stack": 0.2}},
    ],
}


def spec(**changes) -> dict:
    """BASE with top-level tables updated key by key (``code={"functions": 10}``); ``streams`` and
    ``phases`` are replaced."""
    doc = copy.deepcopy(BASE)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(doc.get(key), dict) and key != "streams":
            doc[key].update(value)
        else:
            doc[key] = value
    return doc


def ref(doc: dict | None = None, name: str = "test"):
    return workload_from_dict(doc or spec(), name, "test.toml")


def synth(doc: dict | None = None, isa: str = "x86_64", seed: int = 1, **kw) -> Synthesizer:
    return Synthesizer(ref(doc), isa, seed=seed, **kw)


def memory(block: InstrBlock) -> np.ndarray:
    return np.isin(block.op, (OP_LOAD, OP_STORE))


def static_index(synthesizer: Synthesizer, block: InstrBlock) -> np.ndarray:
    """Static instruction of every dynamic instruction (pcs are unique)."""
    p = synthesizer.program
    order = np.argsort(p.pc)
    return order[np.searchsorted(p.pc[order], block.pc)]


def test_cases_are_valid():
    r = ref()
    assert [p.name for p in r.phases()] == ["a", "b"]
    assert r.phases()[1].load_weights == {"stack": 0.2, "array": 0.5, "column": 0.0, "list": 0.3, "heap": 0.0}
