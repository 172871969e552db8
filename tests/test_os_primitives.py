"""Operating-system primitives as instruction streams on the processor models, the kernel that runs them,
and the lmbench-style microbenchmarks that turn them into a system vector."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.isa import FIELDS, FLAG_SERIALIZING, OP_BRANCH, OP_LOAD, OP_STORE, isa_for
from whatif.simulator.os.kernel import Kernel
from whatif.simulator.os.microbench import (FILE_PAGES, USER_BUFFER, MicrobenchSettings, lines_in_prices, measure,
                                            system_vector)
from whatif.simulator.os.primitives import OsCode, load_primitives, primitive_names, scaled_primitives
from whatif.simulator.platform import load_platform
from osref import ReferenceOsCode

SEED_PRIMITIVES = {"other", "file_write", "signal_handler_install", "fcntl", "stat", "open_close", "mmap",
                   "mmap_read", "file_read", "pipe_read", "socket_rw", "tcp_transfer", "tcp_latency", "tcp_connect",
                   "stream_connect", "proc_simple"}


def test_every_primitive_of_the_seed_tables_is_described():
    assert set(primitive_names()) == SEED_PRIMITIVES
    specs = load_primitives()
    assert {n for n, s in specs.items() if s.unit == "byte"} == {"mmap_read", "file_read", "pipe_read",
                                                                   "socket_rw", "tcp_transfer"}
    assert specs["proc_simple"].tlb_flush and specs["proc_simple"].page_table_entries > 0


def test_a_call_is_a_kernel_path_with_traps():
    code = OsCode(isa_for("x86_64"))
    b = code.block("stat")
    spec = code.spec("stat")
    assert len(b) == spec.path_instructions
    assert b.flags[0] & FLAG_SERIALIZING and b.flags[-1] & FLAG_SERIALIZING
    assert (b.pc == code.block("stat").pc).all()                       # the same code path every call
    mem = (b.op == OP_LOAD) | (b.op == OP_STORE)
    assert len(np.unique(b.mem_addr[mem] // 64)) <= spec.data_kb * 1024 // 64
    b.validate()


def test_copy_loops_move_the_bytes_from_source_to_destination():
    code = OsCode(isa_for("x86_64"))
    size = 4096
    b = code.block("file_read", size, src=0x10000000, dst=0x20000000)
    spec = code.spec("file_read")
    loads = b.mem_addr[(b.op == OP_LOAD) & (b.mem_addr >= 0x10000000) & (b.mem_addr < 0x10001000)]
    stores = b.mem_addr[(b.op == OP_STORE) & (b.mem_addr >= 0x20000000) & (b.mem_addr < 0x20001000)]
    assert sorted(loads.tolist()) == list(range(0x10000000, 0x10001000, 8))
    assert sorted(stores.tolist()) == list(range(0x20000000, 0x20001000, 8))
    pb = spec.per_byte
    loop = size // pb.bytes_per_iteration * pb.instructions_per_iteration
    assert len(b) == spec.path_instructions + loop + spec.per_unit.instructions
    taken = np.flatnonzero(b.taken)
    assert len(taken) == size // 8 - 1 and (b.op[taken] == OP_BRANCH).all()     # the loop branch, not the exit


ISAS = ("x86_64", "z/Architecture", "powerpc32")
WHAT_IFS = ({}, {"file_read": 0.25, "stat": 1.5, "tcp_transfer": 2.0})


def assert_same_block(a, b):
    for name, dtype in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == np.dtype(dtype) and y.dtype == np.dtype(dtype), name
        np.testing.assert_array_equal(x, y, err_msg=name)


@settings(max_examples=60, deadline=None)
@given(isa=st.sampled_from(ISAS), what_if=st.sampled_from(WHAT_IFS), name=st.sampled_from(sorted(SEED_PRIMITIVES)),
       size=st.one_of(st.integers(0, 64), st.integers(0, 300_000)), src=st.integers(0, 1 << 40),
       dst=st.integers(0, 1 << 40))
def test_blocks_equal_the_part_by_part_reference(isa, what_if, name, size, src, dst):
    """The cached-prefix, template-built blocks are the reference's, instruction for instruction, for any
    call (and again for a second call, which reuses the caches)."""
    prims = scaled_primitives(what_if)
    fast, ref = OsCode(isa_for(isa), prims), ReferenceOsCode(isa_for(isa), prims)
    try:
        expected = ref.block(name, size, src, dst)
    except SimulatorInputError as exc:                  # a call without instructions: the same refusal
        with pytest.raises(SimulatorInputError, match=f"^{re.escape(str(exc))}$"):
            fast.block(name, size, src, dst)
    else:
        for _ in range(2):
            assert_same_block(fast.block(name, size, src, dst), expected)
    assert_same_block(fast.user_block(3, src % 5000, 1 + size % 5000, 0.5 + dst % 64),
                      ref.user_block(3, src % 5000, 1 + size % 5000, 0.5 + dst % 64))


@settings(max_examples=40, deadline=None)
@given(platform=st.sampled_from(["mpc7447a", "z10", "nehalem"]),
       calls=st.lists(st.tuples(st.sampled_from(sorted(SEED_PRIMITIVES)), st.sampled_from([0, 1, 100, 4096, 70_000]),
                                st.integers(0, 1 << 40), st.one_of(st.just(0), st.integers(1, 1 << 40))),
                      min_size=1, max_size=8))
def test_a_kernels_blocks_are_the_codes_blocks_moved_to_each_calls_buffers(platform, calls):
    """The kernel moves a (primitive, size)'s layout to each call's source and destination once the size
    recurs: every block is OsCode.block's for that call, field for field, with the same refusal for a call
    without instructions (each call twice, at other buffers too, so that layouts are made and used)."""
    p = load_platform(platform)
    kernel, code = Kernel(p), OsCode(isa_for(p.isa))
    for name, size, src, dst in calls + [(n, s, src + 4160, dst and dst + 12_352) for n, s, src, dst in calls]:
        try:
            expected = code.block(name, size, src, dst)
        except SimulatorInputError as exc:
            with pytest.raises(SimulatorInputError, match=f"^{re.escape(str(exc))}$"):
                kernel.block(name, size, src, dst)
        else:
            assert_same_block(kernel.block(name, size, src, dst), expected)


def test_unknown_primitive_is_named():
    with pytest.raises(SimulatorInputError, match="unknown primitive 'fork'; known: other"):
        OsCode(isa_for("x86_64")).block("fork")


def test_per_byte_cost_is_linear_in_the_size_when_warm():
    k = Kernel(load_platform("nehalem"))
    cyc = {}
    for size in (16384, 32768):
        for _ in range(3):
            cyc[size] = k.call("file_read", size, 0x10000000, 0x20000000)
    path = k.call("file_read", 8, 0x10000000, 0x20000000)
    assert cyc[32768] - path == pytest.approx(2 * (cyc[16384] - path), rel=0.1)


def test_a_call_costs_more_on_cold_caches():
    k = Kernel(load_platform("mpc7447a"))
    cold = k.call("stat")
    warm = min(k.call("stat") for _ in range(3))
    assert cold > 2 * warm


def test_exec_flushes_the_tlbs():
    k = Kernel(load_platform("nehalem"))
    k.call("stat")
    misses = k.core.memory.counters()["tlbs"]["DTLB"]["misses"]
    k.call("stat")
    assert k.core.memory.counters()["tlbs"]["DTLB"]["misses"] == misses          # warm: no new misses
    k.call("proc_simple")
    before = k.core.memory.counters()["tlbs"]["DTLB"]["misses"]
    k.call("stat")
    assert k.core.memory.counters()["tlbs"]["DTLB"]["misses"] > before           # the flush: stat misses again


def test_costs_differ_between_platforms_for_mechanical_reasons():
    """The same stream: a faster clock and a larger cache help the big copy; the 7447A's hashed page
    table makes exec's TLB refill dear."""
    cost = {}
    for name in ("mpc7447a", "nehalem"):
        k = Kernel(load_platform(name))
        for _ in range(2):
            cost[name] = (k.seconds(k.call("tcp_transfer", 65536, 0x10000000, 0x20000000)),
                          k.seconds(k.call("proc_simple")))
    assert cost["nehalem"][0] < cost["mpc7447a"][0] and cost["nehalem"][1] < cost["mpc7447a"][1]


# ---- microbenchmarks -----------------------------------------------------------------------------------
def test_the_iteration_count_follows_the_timer_resolution():
    p = load_platform("nehalem")
    fine = measure(Kernel(p), "other", MicrobenchSettings(timer_resolution_s=1e-8, min_ticks=100, repetitions=3))
    coarse = measure(Kernel(p), "other", MicrobenchSettings(timer_resolution_s=1e-6, min_ticks=100, repetitions=3))
    assert coarse["iterations"] > 50 * fine["iterations"]
    assert coarse["cost"] == pytest.approx(fine["cost"], rel=0.05)
    # one call takes about the cost: iterations x cost spans the required ticks
    assert coarse["iterations"] * coarse["cost"] * 1e-6 >= 100 * 1e-6


def test_system_vector_table():
    v = system_vector(load_platform("nehalem"), ["other", "file_read", "stat"],
                      MicrobenchSettings(repetitions=3, min_ticks=20))
    assert list(v.columns[:4]) == ["system", "primitive", "unit", "cost"]
    by = v.set_index("primitive")
    assert by.loc["file_read", "unit"] == "us/byte" and by.loc["stat", "unit"] == "us"
    assert 0 < by.loc["other", "cost"] < by.loc["stat", "cost"]
    with pytest.raises(SimulatorInputError, match="'trim' parameter of MicrobenchSettings"):
        system_vector(load_platform("nehalem"), ["other"], MicrobenchSettings(trim=1.0))


def test_os_vector_command_writes_a_system_vector_predict_reads(tmp_path):
    import json

    from test_cli import assert_one_line_error, invoke

    out = tmp_path / "vec"
    result = invoke("hbench", "os-vector", "-p", "z10", "--primitive", "other", "--primitive", "stat",
                    "--out", out, "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [r["primitive"] for r in doc["vector"]] == ["other", "stat"]
    (tmp_path / "app.csv").write_text("primitive,lookup\nother,3\nstat,2\n")
    predicted = invoke("hbench", "predict", "--system", out / "system_vector.csv", "--app", tmp_path / "app.csv",
                       "--json")
    assert predicted.exit_code == 0, predicted.output
    cost = {r["primitive"]: r["cost"] for r in doc["vector"]}
    assert json.loads(predicted.stdout)["predictions"][0]["predicted"] == pytest.approx(3 * cost["other"] +
                                                                                       2 * cost["stat"])
    assert_one_line_error(invoke("hbench", "os-vector", "-p", "z10", "--primitive", "fork"), "unknown primitive 'fork'")


def test_the_level_prices_predict_a_fully_cold_call():
    """The hybrid's system side: the lines each loop's warm calls bring into each cache depth, their page
    walks, and the prices of those from calls after flushes to each depth (TLBs warm) and of the TLBs
    alone.  Additive prices must predict a state they were not solved on -- a call after every cache and
    every TLB was flushed -- from the warm cost and that call's extra lines.  Memory time off (instant
    prefetches, no channel queue) and no L2 streamer: additivity assumes a line costs its price whatever else
    is in flight, and a streamer's prefetches depend on the order of the misses, not on their number."""
    settings = MicrobenchSettings(repetitions=3, min_ticks=20)
    for name in ("nehalem", "z10"):
        for prim in ("stat", "tcp_transfer"):
            ideal = ["memory.prefetch_arrival=instant", "memory.queueing=none"]
            if name == "nehalem":
                ideal.append("caches.L2.prefetchers=['adjacent_line']")
            kernel = Kernel(load_platform(name, ideal))
            row = measure(kernel, prim, settings)
            memory = kernel.core.memory
            names = memory.lines_in_names()
            size = settings.transfer_bytes if row["unit"] == "us/byte" else 0
            warm = np.array([row[f"lines_{e}"] for e in names]) * (size or 1)
            price = np.array([row[f"price_{e}"] for e in names])
            assert (warm >= 0).all() and (price >= 0).all() and price[-2] > 0, (name, prim)
            memory.flush_caches()
            c0, l0 = kernel.core.cycles, memory.lines_in()
            kernel.call(prim, size, FILE_PAGES, USER_BUFFER)
            cold_us = kernel.seconds(kernel.core.cycles - c0) * 1e6
            predicted = row["per_call_us"] + float((memory.lines_in() - l0 - warm) @ price)
            assert predicted == pytest.approx(cold_us, rel=0.05), (name, prim)


class _LevelledMemory:
    """A memory whose call brings in, after a flush to depth d, ``lost[k]`` more lines at every depth k <= d
    (the TLB flush: ``lost_walks`` walks), each at a known price: the triangular solve must give the
    prices back exactly."""

    def __init__(self, prices, lost, lost_walks, warm):
        self.prices, self.lost, self.lost_walks, self.warm = np.asarray(prices, float), lost, lost_walks, warm
        self.lines = np.zeros(len(prices))
        self.cycles = 0.0
        self.cold_to, self.tlb_cold = -1, False

    def flush_caches(self, depth, tlbs=True):
        self.cold_to, self.tlb_cold = depth, tlbs

    def flush_tlbs(self):
        self.tlb_cold = True

    def lines_in(self):
        return self.lines.copy()

    def op(self):
        extra = np.array(self.warm, float)
        extra[:self.cold_to + 1] += self.lost[:self.cold_to + 1]
        extra[-1] += self.lost_walks if self.tlb_cold else 0
        self.lines += extra
        self.cycles += 100 + float(extra @ self.prices)
        self.cold_to, self.tlb_cold = -1, False


def test_level_prices_are_solved_depth_by_depth():
    prices = [2.0, 11.0, 170.0, 30.0]                # lines into L1, L2, L3; walks (cycles)
    mem = _LevelledMemory(prices, lost=[40, 25, 9], lost_walks=6, warm=[5, 1, 0, 0])
    warm_us = 100 + 5 * 2.0 + 11.0                  # a warm call: its own lines at their prices
    got = lines_in_prices(mem, mem.op, lambda: mem.cycles, lambda c: c * 1e-6, warm_us,
                            np.array([5.0, 1.0, 0.0, 0.0]))
    assert got == pytest.approx(prices, rel=1e-12)
    # a depth the call never loses anything at costs nothing, and prices never go negative
    mem = _LevelledMemory([2.0, 11.0, 170.0, 30.0], lost=[40, 0, 9], lost_walks=0, warm=[0, 0, 0, 0])
    got = lines_in_prices(mem, mem.op, lambda: mem.cycles, lambda c: c * 1e-6, 100.0, np.zeros(4))
    assert got == pytest.approx([2.0, 0.0, 170.0, 0.0], rel=1e-12)
