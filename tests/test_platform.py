"""Platform description files: every shipped file loads and says what the seeds say; bad files fail clearly."""

import pytest

from whatif.simulator.errors import SimulatorInputError
from whatif.simulator.platform import PLATFORM_DIR, load_platform, platform_names

SEED000_EVENTS = ["cycles", "instd", "inst", "br_mpred", "ld", "st", "fpu", "br", "other", "dtlb_miss",
                  "itlb_miss", "il1_miss", "dl1_miss", "l2_hits", "l2_miss", "l2_dmiss", "l2_imiss",
                  "prefetch_req", "prefetch_full"]


def test_the_five_target_platforms_ship_and_load():
    assert set(platform_names()) >= {"mpc7447a", "z10", "harpertown", "nehalem", "westmere"}
    for name in platform_names():
        p = load_platform(name)
        assert p.name == name
        assert p.tlb_chain("data") and p.tlb_chain("instruction")


def test_every_value_in_a_platform_file_names_its_source():
    for path in PLATFORM_DIR.glob("*.toml"):
        section = ""
        for no, line in enumerate(path.read_text().splitlines(), 1):
            text = line.split("#")[0].strip()
            if text.startswith("["):
                section = text
            if section == "[pmu.sources]":     # formulas over the model's counters, documented as a table
                continue
            if not text or text.startswith("[") or text.startswith("#") or "=" not in text:
                continue
            key = text.split("=")[0].strip()
            if key in ("schema_version", "name", "description", "vendor", "model", "isa", "events"):
                continue
            assert "#" in line, f"{path.name}:{no}: {key} has no source comment"


def test_mpc7447a_is_seed000_table_one_and_two():
    p = load_platform("mpc7447a")
    assert p.clock_ghz == 1.5
    assert p.pmu.physical_counters == 6 and p.pmu.events == SEED000_EVENTS
    l1d, l2 = p.caches["L1D"], p.caches["L2"]
    assert (l1d.size_kb, l1d.associativity, l1d.line_bytes, l1d.replacement) == (32, 8, 32, "plru")
    assert (l2.size_kb, l2.associativity, l2.line_bytes, l2.sector_bytes) == (512, 8, 64, 32)
    assert (l2.latency_cycles, p.memory.latency_cycles) == (9, 172)
    assert (p.tlbs["DTLB"].entries, p.tlbs["DTLB"].associativity) == (128, 2)
    assert (p.branch_predictor.bht_entries, p.branch_predictor.btb_entries, p.branch_predictor.ras_entries) \
        == (2048, 128, 8)


def test_xeons_are_seed002_table_two_and_four():
    h, n, w = (load_platform(x) for x in ("harpertown", "nehalem", "westmere"))
    assert (h.clock_ghz, n.clock_ghz, w.clock_ghz) == (2.5, 2.26, 3.33)
    assert h.caches["L2"].size_kb == 6144 and "L3" not in h.caches
    assert (n.caches["L3"].size_kb, w.caches["L3"].size_kb) == (8192, 12288)
    assert "RESOURCE_STALLS.LD_ST" in h.pmu.events and "RESOURCE_STALLS.BR_MISS_CLEAR" in h.pmu.events
    for p in (n, w):
        assert {"RESOURCE_STALLS.LOAD", "RESOURCE_STALLS.STORE"} <= set(p.pmu.events)
    for p in (h, n, w):
        assert {"RAT_STALLS.ANY", "RESOURCE_STALLS.ROB_FULL", "RESOURCE_STALLS.RS_FULL", "INST_RETIRED.ANY",
                "CPU_CLK_UNHALTED.REF"} <= set(p.pmu.events)


def test_only_the_p6_family_xeons_have_limited_register_read_ports():
    ports = {name: load_platform(name).core.register_read_ports
             for name in ("harpertown", "nehalem", "westmere", "mpc7447a", "z10")}
    assert ports == {"harpertown": 3, "nehalem": 3, "westmere": 3, "mpc7447a": 0, "z10": 0}


def test_register_read_ports_are_refused_on_an_in_order_core():
    with pytest.raises(SimulatorInputError, match="register_read_ports applies to out-of-order cores.*got 3"):
        load_platform("z10", ["core.register_read_ports=3"])


def test_z10_is_in_order_with_agi_and_pairs():
    p = load_platform("z10")
    assert p.core.kind == "in_order" and p.core.group_size == 2 and p.core.agi_penalty > 0
    assert 1024 in p.memory.large_page_kb


def write_variant(tmp_path, old, new):
    text = (PLATFORM_DIR / "mpc7447a.toml").read_text()
    assert old in text
    path = tmp_path / "p.toml"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize("old, new, fragment", [
    ("schema_version = 1", "schema_version = 2", "schema_version 2 is not supported"),
    ('next_level = "L2"', 'next_level = "L3"', "names no cache level"),
    ("associativity = 8                  # [S000] 8-way", "associativity = 0", "associativity"),
    ('replacement = "lru"                # [S000] Table I', 'replacement = "mru"                # [S000] Table I',
     "unknown replacement"),
    ("sector_bytes = 32", "sector_bytes = 48", "sector_bytes"),
    ('cache_level = "L1D"', 'cache_level = "L9"', "page_walk.cache_level"),
    ("clock_ghz = 1.5", "clock_ghz = -1.5", "clock_ghz"),
    ('kind = "bimodal"', 'kind = "perceptron"', "branch_predictor.kind"),
    ('isa = "powerpc32"', 'isa = "powerpc64"', "isa: .*unknown ISA 'powerpc64'; known: powerpc32"),
    ("rename_registers = 16", "register_read_ports = 2\nrename_registers = 16",
     "register_read_ports must be 0 .unlimited. or at least 3.*got 2"),
])
def test_bad_platform_file_errors_name_file_and_field(tmp_path, old, new, fragment):
    path = write_variant(tmp_path, old, new)
    with pytest.raises(SimulatorInputError, match=fragment) as info:
        load_platform(path)
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)


def test_unsupported_page_size_is_explained():
    with pytest.raises(SimulatorInputError, match="page_kb"):
        load_platform("mpc7447a", ["memory.page_kb=2048"])


def test_every_pmu_event_has_a_source_formula():
    for name in platform_names():
        pmu = load_platform(name).pmu
        assert set(pmu.sources) == set(pmu.events), name


def test_show_platform_refuses_an_unknown_isa(tmp_path):
    from test_cli import assert_one_line_error, invoke

    path = write_variant(tmp_path, 'isa = "powerpc32"', 'isa = "arm64"')
    assert_one_line_error(invoke("show", "platform", path), "unknown ISA 'arm64'")
