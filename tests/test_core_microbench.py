"""Microbenchmark streams: the structure each generator promises, and the random program's contract."""

from __future__ import annotations

import numpy as np
import pytest

from whatif.simulator.core import Core
from whatif.simulator.core import microbench as MB
from whatif.simulator.platform import load_platform
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


def test_register_reads_read_only_unwritten_registers():
    for reads in (1, 2, 3):
        b = MB.register_reads(3000, "x86_64", reads)
        b.validate()
        alu = np.flatnonzero(b.op == OP_ALU)
        srcs = np.stack([b.src1[alu], b.src2[alu], b.areg[alu]], axis=1)
        assert ((srcs >= 0).sum(axis=1) == reads).all()
        assert not set(b.dst[b.dst >= 0].tolist()) & set(srcs[srcs >= 0].tolist())
        nxt = srcs[1:]
        assert not any(set(a[a >= 0]) & set(c[c >= 0]) for a, c in zip(srcs[:-1], nxt))    # neighbours differ
    shared = MB.register_reads(3000, "x86_64", 2, spread=False)
    assert len(set(shared.src1[shared.op == OP_ALU].tolist())) == 1
    with pytest.raises(ValueError, match="reads must be 1, 2 or 3"):
        MB.register_reads(100, "x86_64", 4)


@pytest.mark.parametrize("ports, spread, cpi, late, rat", [
    (3, True, 1.0, (0.9, 1.01), True),     # 3 ports, 2 reads an op: one op a cycle
    (3, False, 1 / 3, (0, 0.01), False),   # every op reads the same register: one port read, the 3 ALUs bound
    (0, True, 1 / 3, (0, 0.01), False),    # unlimited: the 3 ALUs
    (4, True, 0.5, (0.4, 0.6), True),      # two ops a cycle
    (5, True, 0.5, (0.4, 0.6), True),      # a third op's two reads do not fit beside four
    (6, True, 1 / 3, (0.3, 0.37), True),   # three ops fit; the fourth op dispatch could rename waits, the ALUs bound
    (8, True, 1 / 3, (0, 0.01), False),    # four ops' reads fit: no port stalls at all
])
def test_register_read_ports_bound_the_rename_rate(ports, spread, cpi, late, rat):
    """Nehalem (dispatch 4, three ALUs), ops of two register reads: the read ports set the rename rate until
    the ALUs do; a port stall is counted whenever an op's reads do not fit beside its cycle's."""
    p = load_platform("nehalem", [f"core.register_read_ports={ports}"])
    core = Core(p, seed=1)
    block = MB.register_reads(30_000, p.isa, 2, spread=spread)
    core.run(block.slice(0, 10_000))                                 # warm caches and predictors
    c0 = core.counters(memory=False)
    core.run(block, start=10_000)
    c = {k: v - c0[k] for k, v in core.counters(memory=False).items()}
    assert c["cycles"] / c["instructions"] == pytest.approx(cpi, rel=0.02)
    assert late[0] <= c["rat_read_port_events"] / c["instructions"] < late[1]
    assert (c["stall_rat"] > 0) == rat


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


def test_prefetch_use_pairs_two_lines_and_chains_the_second_address():
    b = MB.prefetch_use(64, 5, 1 << 22, 64, 4096, seed=3)
    b.validate()
    loads = np.flatnonzero(b.op == OP_LOAD)
    first, second = loads[0::2], loads[1::2]
    assert len(first) == len(second) >= 64
    assert (b.mem_addr[second] == b.mem_addr[first] + 64).all() and (b.mem_addr[first] % 128 == 0).all()
    assert len(np.unique(b.mem_addr[first])) == len(first)              # no block is used twice
    assert (second - first == 6).all()                                    # 5 chain ops in between
    assert (b.areg[first] == 8).all() and (b.areg[second] == 10).all()
    chain = first[:, None] + np.arange(1, 6)
    assert (b.op[chain] == OP_ALU).all() and (b.src1[chain[:, 0]] == 8).all() and (b.src1[chain[:, 1:]] == 10).all()
    assert (b.dst[second + 1] == 8).all() and (b.src1[second + 1] == b.dst[second]).all()   # next pointer
    direct = MB.prefetch_use(16, 0, 1 << 22, 64, 4096, seed=3)
    loads = np.flatnonzero(direct.op == OP_LOAD)
    assert (direct.areg[loads] == 8).all()
    with pytest.raises(ValueError, match="gap must be >= 0"):
        MB.prefetch_use(16, -1, 1 << 22, 64, 4096, seed=3)
