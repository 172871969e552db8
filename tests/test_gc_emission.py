"""The collector's instruction streams: contract, dependences, chunking, and their cost shape."""

from __future__ import annotations

import numpy as np
import pytest

from whatif.simulator.gc import kernel_alloc as KA
from whatif.simulator.gc.config import heap_config
from whatif.simulator.gc.heap import Heap
from whatif.simulator.gc.layout import HEAP_BASE, PC_MARK, PC_SWEEP, R_HDR, R_POS, ROOT_BASE
from whatif.simulator.gc.state import IMMORTAL
from whatif.simulator.isa import FIELDS, OP_ALU, OP_BRANCH, OP_LOAD, InstrBlock

KB = 1024


def lists_heap(n_lists=8, length=200, payload=28, buffer=1 << 15):
    h = Heap(heap_config(heap_bytes=512 * KB), buffer_instructions=buffer)
    KA.build_lists(h.H, n_lists, length, payload, IMMORTAL)
    return h


def stream(heap, **kw):
    blocks = []
    heap.collect("explicit", sink=lambda b: blocks.append(InstrBlock(*(a.copy() for a in b.arrays()))), **kw)
    return InstrBlock(*(np.concatenate([getattr(b, f) for b in blocks]) for f, _ in FIELDS))


def test_stream_follows_the_contract_and_counts_the_work():
    h = lists_heap()
    s = stream(h, compaction=False)
    s.validate()
    n = 8 * 200
    mark_headers = np.count_nonzero((s.pc == PC_MARK + 32) & (s.op == OP_LOAD))
    sweep_headers = np.count_nonzero((s.pc == PC_SWEEP) & (s.op == OP_LOAD))
    assert mark_headers == n + 1                               # every list object and the array
    assert sweep_headers == n + 1 + 1                          # ... plus the free chunk at the top
    assert np.all(s.mem_addr[s.op == OP_LOAD] >= ROOT_BASE) and np.all(s.pc >= 0x0F00_0000)


def test_sweep_header_loads_form_a_dependence_chain():
    s = stream(lists_heap(), compaction=False)
    idx = np.nonzero((s.pc == PC_SWEEP) & (s.op == OP_LOAD))[0]
    for a, b in zip(idx[:-1], idx[1:]):
        assert s.areg[b] == R_POS
        between = np.arange(a + 1, b)
        writers = between[(s.dst[between] == R_POS)]
        assert len(writers) == 1                                       # pos = pos + size(header)
        w = writers[0]
        assert s.op[w] == OP_ALU and R_HDR in (s.src1[w], s.src2[w])
    addrs = s.mem_addr[idx].astype(np.int64) - HEAP_BASE
    assert np.all(np.diff(addrs) > 0)                                  # in address order


@pytest.mark.parametrize("buffer", [256, 4096])
def test_chunking_does_not_change_the_stream(buffer):
    big = stream(lists_heap(buffer=1 << 16), compaction=True)
    small = stream(lists_heap(buffer=buffer), compaction=True)
    for f, _ in FIELDS:
        assert np.array_equal(getattr(big, f), getattr(small, f)), f


def test_functional_result_does_not_depend_on_emission():
    a, b = lists_heap(), lists_heap()
    ca = a.collect("explicit")
    cb = b.collect("explicit", sink=lambda blk: None)
    assert (ca.live_objects, ca.dead_objects, ca.free_bytes_after) == (cb.live_objects, cb.dead_objects,
                                                                       cb.free_bytes_after)
    assert ca.instructions == 0 and cb.instructions > 0


def test_huge_objects_grow_the_buffer_when_copied():
    h = Heap(heap_config(collector="copying", heap_bytes=1024 * KB), buffer_instructions=1024)
    arr = KA.alloc_raw(h.H, 64 * KB, 0)
    KA.add_root(h.H, arr, IMMORTAL)
    c = h.collect("explicit", sink=lambda blk: None)
    assert c.copied_bytes == (64 * KB + 4 + 7) // 8 * 8 and c.instructions > 4 * 8 * KB


def test_the_instruction_writer_compiles_once_whatever_constants_its_callers_name():
    """The writers hand every field to ``layout.ins`` as a run-time value of one type: the registers and ops
    they name, passed on as constants, compiled a copy of it per combination (59 in the mark-sweep step)."""
    from numba import njit

    from whatif.simulator.gc import layout as L

    @njit
    def writes(B, pc, addr):
        n = L.alu(B, 0, True, pc, L.R_CNT, L.R_POS, -1)
        n = L.load(B, n, True, pc + 4, L.R_HDR, L.R_OBJ, addr, 4)
        n = L.store(B, n, False, pc + 8, L.R_TMP, L.R_SP, addr + 8, 4)       # not emitted
        return L.branch(B, n, True, pc + 12, L.R_TST, True, pc)

    block = InstrBlock.empty(4)
    assert writes(block.arrays(), 0x0F00_0000, HEAP_BASE) == 3
    assert list(block.op[:3]) == [OP_ALU, OP_LOAD, OP_BRANCH] and block.op[3] == 0
    assert list(block.pc[:3]) == [0x0F00_0000, 0x0F00_0004, 0x0F00_000C]
    assert (block.dst[0], block.src1[0], block.src2[0]) == (L.R_CNT, L.R_POS, -1)
    assert (block.mem_addr[1], block.areg[1], block.taken[2], block.target[2]) == (HEAP_BASE, L.R_OBJ, 1, 0x0F00_0000)
    assert len(L.ins.signatures) == 1
