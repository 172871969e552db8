"""The HBench:OS microbenchmark checks: registered, pass in quick mode, and fail when the first-principles
figure and the simulation disagree."""

from __future__ import annotations

import numpy as np
import pytest

from whatif.scenarios.checks import os as checks_os
from whatif.scenarios.checks.registry import CHECK_MODULES, registered_checks, run_checks
from whatif.simulator.isa import isa_for
from whatif.simulator.os.kernel import Kernel
from whatif.simulator.os.microbench import MicrobenchSettings, measure, system_vector
from whatif.simulator.os.primitives import OsCode, load_primitives
from whatif.simulator.platform import load_platform

OS_CHECKS = [n for n in registered_checks() if n.startswith("os:")]


def test_module_is_listed_and_checks_are_registered():
    assert "whatif.scenarios.checks.os" in CHECK_MODULES
    assert len(OS_CHECKS) == 2


def test_quick_checks_pass():
    results = run_checks(quick=True, only=OS_CHECKS)
    failed = [(r.name, r.expected, r.measured, r.detail) for r in results if not r.passed]
    assert failed == []
    # two per-call primitives and two per-byte ones (the bare copy loop, file_read) on two platforms
    assert len(results) == 8
    for platform in checks_os.QUICK_PLATFORMS:
        assert sum(f"on {platform}" in r.name for r in results) == 4
    assert all(abs(r.measured / r.expected - 1) <= checks_os.TOLERANCE for r in results)


def test_path_and_loop_rates_from_first_principles():
    nehalem, mpc = load_platform("nehalem"), load_platform("mpc7447a")
    assert checks_os.path_cpi(nehalem) == (0.5, "even ALU chain")     # 8 dependent 1-cycle ALU ops per 16
    assert checks_os.path_cpi(mpc) == (0.5, "even ALU chain")
    one_wide = load_platform("mpc7447a", list(checks_os.VARIANTS["mpc7447a, one-wide"][1]))
    assert checks_os.path_cpi(one_wide) == (1.0, "width")
    slow_alu = load_platform("nehalem", [("core.units.ialu.latency", 2)])
    assert checks_os.path_cpi(slow_alu) == (1.0, "even ALU chain")
    # the null call: 160 instructions, traps at an ALU op (0) and an ALU op (159), each 1 + 1 cycles, one
    # refill cycle, 158 instructions at CPI 0.5
    assert checks_os.expected_call_cycles(mpc, load_primitives()["other"]) == 2 + 2 + 1 + 158 * 0.5
    copy = checks_os.LOOPS["copy"].per_byte
    assert checks_os.loop_cycles(mpc, copy, True) == (2.0, "lsu")      # a load and a store, one LSU
    assert checks_os.loop_cycles(nehalem, copy, True)[0] == 1.0          # two LSUs; a taken branch per fetch
    assert checks_os.loop_cycles(mpc, copy, False) == (4 / 3, "width")   # read pass: 4 ops, 3-wide


def test_the_check_fails_on_a_changed_platform_or_primitive():
    p = load_platform("nehalem")
    stat = load_primitives()["stat"]
    measured = system_vector(p, ["stat"]).iloc[0]["cost"] * 1e3
    right = checks_os.expected_call_cycles(p, stat) / p.clock_ghz
    assert checks_os._row("ns per call", "nehalem", "stat", right, measured, "").passed
    # the expectation for a core with a two-cycle ALU does not match the shipped core's measurement
    slow = load_platform("nehalem", [("core.units.ialu.latency", 2)])
    wrong = checks_os.expected_call_cycles(slow, stat) / p.clock_ghz
    assert not checks_os._row("ns per call", "nehalem", "stat", wrong, measured, "").passed
    # nor the expectation of a primitive with a longer path
    longer = stat.model_copy(update={"path_instructions": int(stat.path_instructions * 1.2)})
    wrong = checks_os.expected_call_cycles(p, longer) / p.clock_ghz
    assert not checks_os._row("ns per call", "nehalem", "stat", wrong, measured, "").passed
    # per byte: a copy loop moving 16 bytes per iteration measured against the 8-byte loop's figure
    wide = {"copy": checks_os.LOOPS["copy"].model_copy(
        update={"per_byte": checks_os.LOOPS["copy"].per_byte.model_copy(update={"bytes_per_iteration": 16})})}
    size = 8192
    row = measure(Kernel(p, code=OsCode(isa_for(p.isa), wide)), "copy", MicrobenchSettings(transfer_bytes=size))
    for spec, ok in ((wide["copy"], True), (checks_os.LOOPS["copy"], False)):
        expected = checks_os.expected_call_cycles(p, spec, size) / size / p.clock_ghz
        assert checks_os._row("ns per byte", "nehalem", "copy", expected, row["cost"] * 1e3, "").passed is ok


def test_set_conflicts_count_lines_and_pages_per_set():
    addrs = np.array([0x0000, 0x1000, 0x2000, 0x3000, 0x0040], dtype=np.uint64)
    # 4 KB pages in 2 sets of 2 ways: pages 0 and 2 (set 0), 1 and 3 (set 1): they fit
    assert checks_os._conflicts(addrs, 12, 2, 2, "pages") == ""
    assert checks_os._conflicts(addrs, 12, 1, 2, "pages") == "4 of its 4 pages share set 0 of the 2-way"
    # 64-byte lines in 64 sets of 4 ways: lines 0, 64, 128, 192 and 1 -- set 0 holds four
    assert checks_os._conflicts(addrs, 6, 64, 4, "lines") == ""
    assert checks_os._conflicts(addrs, 6, 64, 3, "lines").startswith("4 of its 5 lines share set 0")


def test_tlb_aliasing_is_measured_with_the_tlbs_fully_associative():
    p = load_platform("mpc7447a")
    code = OsCode(isa_for(p.isa))
    size = checks_os.transfer_bytes(p, code, "file_read")
    assert size >= checks_os.MIN_TRANSFER
    assert not checks_os.set_conflicts(p, code, "file_read", size)["caches"]
    conflicts = checks_os.set_conflicts(p, code, "file_read", size)["tlbs"]
    derived, label, note = checks_os._setting(p, "mpc7447a", code, "file_read", size)
    assert not checks_os.set_conflicts(derived, code, "file_read", size)["tlbs"]
    if conflicts:
        assert all(derived.tlbs[t].associativity == derived.tlbs[t].entries for t in conflicts)
        assert "fully associative" in label and all(how in note for how in conflicts.values())
    else:
        assert derived is p and label == "mpc7447a" and note == ""


def test_a_call_that_does_not_fit_the_l1_is_not_checked():
    p = load_platform("mpc7447a")
    code = OsCode(isa_for(p.isa))
    assert checks_os.set_conflicts(p, code, "tcp_latency")["caches"]       # 32 KB of kernel data
    assert not checks_os.set_conflicts(p, code, "stat")["caches"]
    with pytest.raises(ValueError, match="page-table copies"):
        checks_os.expected_call_cycles(p, load_primitives()["proc_simple"])
