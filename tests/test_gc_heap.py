"""The heap kernels against the slow references: live sets, free lists, histograms, moving collections."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from whatif.simulator.gc import kernel_alloc as KA
from whatif.simulator.gc import reference as R
from whatif.simulator.gc.behaviour import AllocationStream
from whatif.simulator.gc.config import heap_config
from whatif.simulator.gc.heap import Heap
from whatif.simulator.gc.state import A_DONE, A_FAIL, IMMORTAL, S_NF, S_NROOTS
from tests.gc_helpers import KB, behaviour, fill_until_failure, small_heap


def hist(c) -> tuple[Counter, Counter]:
    live = Counter({int(s): int(n) for s, n in zip(c.hist_payload, c.hist_live) if n})
    dead = Counter({int(s): int(n) for s, n in zip(c.hist_payload, c.hist_dead) if n})
    return live, dead


def walk_is_complete(heap) -> bool:
    blocks = heap.walk()
    return sum(size for _, size, _ in blocks) == heap.space_bytes and all(size > 0 for _, size, _ in blocks)


def test_allocation_bumps_objects_and_covers_the_heap():
    heap = small_heap(heap_kb=64)
    b = AllocationStream(behaviour(sizes=((20, 20, 1.0, 1),)), 4, seed=1, batch=100).next_batch()
    i, status = heap.allocate(b, 0, 100)
    assert (i, status) == (100, A_DONE)
    assert list(b.addr) == [24 * k for k in range(100)]          # 4 + 20 rounded up to 24, bump allocated
    KA.seal(heap.H)
    assert walk_is_complete(heap)
    assert heap.clock == 2400 and heap.objects == 100


def test_allocation_failure_reports_the_request():
    heap = small_heap(heap_kb=1)
    b = AllocationStream(behaviour(sizes=((100, 100, 1.0, 0),)), 4, seed=1, batch=50).next_batch()
    i, status = heap.allocate(b, 0, 50)
    assert status == A_FAIL and i == 1024 // 104
    assert heap.request_bytes == 104


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), cross=st.floats(0, 0.6), cluster=st.floats(1, 8),
       collections=st.integers(1, 4))
def test_mark_sweep_matches_reference(seed, cross, cluster, collections):
    heap = small_heap(heap_kb=192, compaction=False)
    stream = AllocationStream(behaviour(cross=cross, cluster=cluster), 4, seed=seed, batch=2000)
    for _ in range(collections):
        fill_until_failure(heap, stream)
        R.prepare(heap)
        exp = R.expected_sweep(heap)
        c = heap.collect("allocation", request=heap.request_bytes)
        assert (c.live_objects, c.dead_objects) == (exp["live_objects"], exp["dead_objects"])
        assert (c.live_bytes, c.dead_bytes) == (exp["live_bytes"], exp["dead_bytes"])
        assert hist(c) == (exp["hist_live"], exp["hist_dead"])
        nf = int(heap.H.S[S_NF])
        got = list(zip(heap.H.f_start[:nf].tolist(), heap.H.f_size[:nf].tolist()))
        assert got == exp["free_chunks"]
        assert c.swept_chunks == len(exp["free_chunks"])
        assert {off for off, _, oid in heap.walk() if oid >= 0} == exp["live"]
        assert walk_is_complete(heap)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_compaction_slides_live_objects_and_keeps_the_graph(seed):
    heap = small_heap(heap_kb=192, compaction=True)
    stream = AllocationStream(behaviour(), 4, seed=seed, batch=2000)
    fill_until_failure(heap, stream)
    R.prepare(heap)
    before = R.graph(heap)
    roots = R.root_ids(heap)
    live = R.reachable(heap)
    moved = 0
    dest = 0
    for off, size, oid in heap.walk():            # the sliding compaction's destination of each live object
        if oid >= 0 and off in live:
            moved += size if dest != off else 0
            dest += size
    c = heap.collect("explicit", compaction=True)
    assert c.compacted
    after = R.graph(heap)
    assert after == before and R.root_ids(heap) == roots
    blocks = heap.walk()
    objs = [b for b in blocks if b[2] >= 0]
    assert [b[0] for b in objs] == list(np.cumsum([0] + [b[1] for b in objs])[:-1])   # contiguous from 0
    assert blocks[-1][2] == -1 and len(blocks) == len(objs) + 1                         # one free chunk at the top
    assert c.copied_bytes == moved and 0 < moved <= c.live_bytes


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_copying_collector_keeps_the_graph_and_counts(seed):
    heap = small_heap(collector="copying", heap_kb=384)
    stream = AllocationStream(behaviour(), 4, seed=seed, batch=2000)
    for _ in range(2):
        fill_until_failure(heap, stream)
        R.prepare(heap)
        exp = R.expected_sweep(heap)
        before = R.graph(heap)
        c = heap.collect("allocation", request=heap.request_bytes)
        assert (c.live_objects, c.dead_objects) == (exp["live_objects"], exp["dead_objects"])
        assert c.copied_bytes == exp["live_bytes"] == c.live_bytes
        assert hist(c) == (exp["hist_live"], exp["hist_dead"])
        assert R.graph(heap) == before
        assert walk_is_complete(heap)


def test_explicit_collection_compacts_only_a_fragmented_heap():
    heap = small_heap(heap_kb=192)
    stream = AllocationStream(behaviour(), 4, seed=3, batch=2000)
    fill_until_failure(heap, stream)
    first = heap.collect("explicit")
    assert first.compacted                       # holes everywhere: the classic JVM's "unnecessary copying"
    again = heap.collect("explicit")
    assert not again.compacted and again.copied_bytes == 0       # already compact


def test_allocation_failure_compacts_when_the_request_fits_no_chunk():
    heap = small_heap(heap_kb=64)
    arr = KA.alloc_raw(heap.H, 4 * 64, 64)
    KA.add_root(heap.H, arr, IMMORTAL)
    for i in range(64):                         # 64 pinned 24-byte objects with 976-byte holes between them
        a = KA.alloc_raw(heap.H, 20, 0)
        KA.set_field(heap.H, arr, i, a)
        KA.alloc_raw(heap.H, 968, 0)
    c = heap.collect("allocation", request=8 * KB)
    assert c.compacted and c.largest_free_after >= 8 * KB and not c.out_of_memory


def test_out_of_memory_when_live_data_fills_the_heap():
    heap = small_heap(heap_kb=16)
    arr = KA.alloc_raw(heap.H, 400, 100)
    KA.add_root(heap.H, arr, IMMORTAL)
    for i in range(100):
        KA.set_field(heap.H, arr, i, KA.alloc_raw(heap.H, 140, 0))
    c = heap.collect("allocation", request=4096)
    assert c.out_of_memory and c.live_objects == 101


def test_a_fields_store_is_inlined_and_compiles_no_copy_per_constant_index():
    """The list builder stores fields 0 and 1 by constant index: ``set_field`` as a call compiled a copy per
    index; inlined, it compiles none, and the stores link what they name."""
    from numba import njit

    heap = small_heap(heap_kb=64)
    before = set(KA.set_field.signatures)

    @njit
    def chain(H, size, two, none):
        a, b, c = KA.alloc_raw(H, size, two), KA.alloc_raw(H, size, two), KA.alloc_raw(H, size, none)
        KA.set_field(H, a, 0, b)
        KA.set_field(H, a, 1, -1)
        KA.set_field(H, b, 1, c)
        return a

    KA.add_root(heap.H, chain(heap.H, np.int64(16), np.int64(2), np.int64(0)), IMMORTAL)
    KA.alloc_raw(heap.H, 16, 0)                               # unreachable
    assert set(KA.set_field.signatures) == before
    assert heap.collect("explicit").live_objects == 3


def test_expand_policy_grows_the_heap():
    heap = Heap(heap_config(heap_bytes=64 * KB, growth="expand", max_heap_bytes=1024 * KB, min_free_ratio=0.5))
    stream = AllocationStream(behaviour(immortal=0.3, phase=0.0, short=0.7), 4, seed=2, batch=1000)
    sizes = []
    for _ in range(3):
        fill_until_failure(heap, stream)
        c = heap.collect("allocation", request=heap.request_bytes)
        sizes.append(c.heap_after_bytes)
        assert c.free_bytes_after >= 0.5 * c.heap_after_bytes or c.heap_after_bytes == 1024 * KB
        KA.seal(heap.H)
        assert walk_is_complete(heap)
    assert sizes[-1] > 64 * KB and sizes == sorted(sizes)


def test_roots_expire_when_their_clusters_die():
    heap = small_heap(heap_kb=512)
    stream = AllocationStream(behaviour(immortal=0.0, phase=0.0, short=1.0, short_kb=4.0, initial_mb=0.0),
                              4, seed=1, batch=20000)
    b = stream.next_batch()
    heap.allocate(b, 0, 5000)
    live_roots = len(heap.roots())
    clusters = int(b.cstart[:5000].sum())
    assert live_roots < clusters / 4            # most 4 KB-lifetime clusters were dropped as allocation went on
    assert all(d > heap.clock for d, r in zip(heap.H.r_death[:int(heap.H.S[S_NROOTS])], heap.H.r_addr) if r)


def test_heap_config_rejects_a_heap_smaller_than_one_object():
    from whatif.simulator.errors import SimulatorInputError

    with pytest.raises(SimulatorInputError, match="smaller than one object"):
        heap_config(heap_bytes=4)
    with pytest.raises(SimulatorInputError, match="unknown collector 'generational'; known: mark-sweep, copying"):
        heap_config(collector="generational", heap_bytes=1 << 20)


def test_live_spacing_of_dense_lists_is_the_object_size():
    heap = small_heap(heap_kb=256)
    KA.build_lists(heap.H, 4, 100, 28, IMMORTAL)
    c = heap.collect("explicit")
    spacing = dict(zip(c.gap_payload.tolist(), c.hist_gap.tolist()))
    assert spacing[28] == 399                  # every list object but the first follows another at 32 bytes
    assert spacing[20] == 1                    # the first follows the 24-byte array (16 + header, aligned)
    assert spacing[max(spacing)] == 1 and max(spacing) == 65536     # the array: no live object before it
    assert sum(spacing.values()) == c.live_objects == 401
