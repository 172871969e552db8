"""Microbenchmark streams: the structure each generator promises, and the random program's contract."""

from __future__ import annotations

import numpy as np

from whatif.simulator.core import microbench as MB
from whatif.simulator.isa import CONTROL_OPS, OP_ALU, OP_BRANCH, OP_CALL, OP_JUMP, OP_LOAD, OP_RET


def test_dependent_chain_reads_the_previous_result():
    b = MB.dependent_chain(2000, "x86_64", body=100)
    b.validate()
    alu = np.flatnonzero(b.op == OP_ALU)
    assert (b.src1[alu] == b.dst[alu]).all() and len(set(b.dst[alu].tolist())) == 1
    jumps = np.flatnonzero(b.op == OP_JUMP)
    assert (b.target[jumps] == b.pc[0]).all() and (b.taken[jumps] == 1).all()


def test_independent_ops_mix_and_no_dependences():
    b = MB.independent_ops(4000, "powerpc32", {OP_ALU: 3, OP_LOAD: 1})
    b.validate()
    body = b.op[b.op != OP_JUMP]
    assert abs((body == OP_LOAD).mean() - 0.25) < 0.01
    written = set(b.dst[b.dst >= 0].tolist())
    read = set(b.src1[b.src1 >= 0].tolist()) | set(b.src2[b.src2 >= 0].tolist()) | set(b.areg[b.areg >= 0].tolist())
    assert not written & read
    assert (b.size == 4).all() and (np.diff(b.pc[:50].astype(np.int64)) == 4).all()


def test_chase_addresses_are_distinct_and_page_grouped():
    a = MB.chase_addresses(3000, 64 << 20, 128, 4096, seed=1)
    assert len(np.unique(a)) == 3000
    assert (a % 128 == 0).all()
    pages = a // 4096
    assert (np.diff(pages)[np.diff(pages) != 0].size + 1) == len(np.unique(pages))   # each page visited once
    b = MB.pointer_chase(1000, 64 << 20, 128, 4096, seed=1)
    loads = b.op == OP_LOAD
    assert (b.areg[loads] == b.dst[loads]).all()


def test_loop_and_random_branch_outcomes():
    b = MB.loop_branch(3000, 100, body=4)
    cond = b.op == OP_BRANCH
    assert abs(b.taken[cond].mean() - 0.99) < 1e-9
    r = MB.random_branch(5000, 0.5, seed=2)
    cond = r.op == OP_BRANCH
    assert abs(r.taken[cond].mean() - 0.5) < 0.03
    # when taken, the skipped ALU op is absent: the next instruction is the branch target
    idx = np.flatnonzero(cond & (r.taken == 1))
    idx = idx[idx + 1 < len(r)]
    assert (r.pc[idx + 1] == r.target[idx]).all()


def test_agi_stream_distance():
    b = MB.agi_stream(1000, 3)
    loads = np.flatnonzero(b.op == OP_LOAD)
    for k in loads[:20]:
        producer = k - 4
        assert b.dst[producer] == b.areg[k]
        assert all(b.dst[j] != b.areg[k] for j in range(producer + 1, k))


def test_random_program_contract_and_determinism():
    a = MB.random_program(20000, 5, "x86_64")
    b = MB.random_program(20000, 5, "x86_64")
    a.validate()
    assert all((getattr(a, f) == getattr(b, f)).all() for f in ("pc", "op", "mem_addr", "taken"))
    ctrl = np.isin(a.op, CONTROL_OPS)
    # a taken transfer's target is the next instruction's address (the walk follows the program)
    t = np.flatnonzero(ctrl & (a.taken == 1))
    t = t[t + 1 < len(a)]
    t = t[a.op[t] != OP_RET]
    assert (a.pc[t + 1] == a.target[t]).all()
    # static code: one pc, one operation
    pcs, first = np.unique(a.pc, return_index=True)
    assert (a.op == a.op[first][np.searchsorted(pcs, a.pc)]).all()
    assert 0.05 < ctrl.mean() < 0.3
    assert (a.op[(a.op == OP_CALL) | (a.op == OP_RET)] >= 0).all()
    c = MB.random_program(20000, 6, "x86_64")
    assert not (c.pc == a.pc).all()


def test_chase_longer_than_its_footprint_goes_round_the_same_cycle():
    # 4 pages of 32 addresses each = 128 distinct; 300 loads go round the cycle again in the same order
    a = MB.chase_addresses(300, 4 * 4096, 128, 4096, seed=2)
    assert len(a) == 300 and len(np.unique(a)) == 128
    assert (a[128:256] == a[:128]).all() and (a[256:] == a[:44]).all()
    b = MB.pointer_chase(300, 4 * 4096, 128, 4096, seed=2)
    assert (b.op == OP_LOAD).sum() >= 300


def test_chase_layout_has_room_for_every_load():
    from whatif.scenarios.checks import core as checks_core

    p = checks_core._platform("mpc7447a")
    footprint, stride, page = checks_core.chase_layout(p, 20_000)
    assert footprint // stride >= 20_000 and footprint % page == 0
