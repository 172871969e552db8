"""The corpus: one :class:`Case` per bad input -- a command line, the files it needs in the working
directory, and fragments that its one error line must hold (the file, line, field or option, and what is
wrong).  Grouped by command and file format; ids are unique and say what is broken."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from . import fixtures as fx
from .fixtures import edit


@dataclass(frozen=True)
class Symlink:
    """A symbolic link to ``target`` (which may not exist), among a case's files."""
    target: str


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]
    expect: tuple[str, ...]
    files: tuple[tuple[str, str | bytes | Symlink], ...] = ()


CASES: list[Case] = []


def case(id: str, argv: str | list[str], *expect: str, files: dict[str, str | bytes | Symlink] | None = None) -> None:
    CASES.append(Case(id, tuple(shlex.split(argv) if isinstance(argv, str) else argv), expect,
                      tuple((files or {}).items())))


# ======================================================================================== usage errors
case("usage-unknown-command", "frobnicate", "No such command 'frobnicate'")
case("usage-unknown-trace-subcommand", "trace squash x", "trace", "No such command 'squash'")
case("usage-unknown-hbench-subcommand", "hbench guess", "hbench", "No such command 'guess'")
case("usage-unknown-global-option", "--colour run", "No such option: --colour")
for cmd, missing in [("list", "what"), ("show", "what"), ("show platform", "name"), ("cachesim", "trace"),
                     ("trace synth", "out"), ("trace convert", "src"), ("trace convert a.lackey", "out"),
                     ("trace info", "src"), ("run", "scenario"), ("regress", "data"), ("similarity", "table"),
                     ("mine", "profile")]:
    case(f"usage-{cmd.replace(' ', '-').replace('.', '')}-missing-argument", cmd, f"Missing argument '{missing}'")
for cmd, option in [("cachesim t.lackey", "--platform"), ("simulate -w 429.mcf", "--platform"),
                    ("simulate -p nehalem", "--workload"), ("profile -w websphere/was --out o", "--platform"),
                    ("profile -p z10 -w websphere/was", "--out"), ("hbench predict --app a.csv", "--system"),
                    ("hbench predict --system s.csv", "--app"), ("hbench os-vector", "--platform"),
                    ("regress t.csv", "--response"), ("gc", "--workload")]:
    case(f"usage-{cmd.split()[0]}-{cmd.split()[1] if cmd.startswith('hbench') else ''}missing-{option[2:]}",
         cmd, f"Missing option '{option}'")
for cmd, option, value, what in [
        ("simulate -p nehalem -w 429.mcf", "-n", "1e6", "--instructions"),
        ("simulate -p nehalem -w 429.mcf", "-n", "many", "--instructions"),
        ("simulate -p nehalem -w 429.mcf", "--warmup", "1.5", "--warmup"),
        ("simulate -p nehalem -w 429.mcf", "--time-scale", "fast", "--time-scale"),
        ("profile -p z10 -w websphere/was --out o", "--sample-every", "often", "--sample-every"),
        ("trace synth t.wtr", "--accesses", "1e6", "--accesses"),
        ("trace synth t.wtr", "--instructions-per-access", "one", "--instructions-per-access"),
        ("regress t.csv -r cycles", "--order", "two", "--order"),
        ("regress t.csv -r cycles", "--folds", "2.5", "--folds"),
        ("regress t.csv -r cycles", "--redundancy", "high", "--redundancy"),
        ("similarity t.csv", "--threshold", "half", "--threshold"),
        ("mine g.json", "--gap", "-x", "--gap"),
        ("mine g.json", "--window", "1.5", "--window"),
        ("mine g.json", "--generations", "ten", "--generations"),
        ("mine g.json", "--min-support", "1%", "--min-support"),
        ("mine g.json", "--workers", "all", "--workers"),
        ("mine g.json", "--top", "x", "--top"),
        ("gc -w specjvm98/javac", "--heap-mb", "64MB", "--heap-mb"),
        ("gc -w specjvm98/javac", "--scale", "1/8", "--scale"),
        ("gc -w specjvm98/javac", "--max-heap-mb", "lots", "--max-heap-mb")]:
    case(f"usage-{cmd.split()[0]}-{what[2:]}-{value}", f"{cmd} {option} {value}", f"Invalid value for '{what}'")
for cmd in ["trace synth t.wtr", "simulate -p nehalem -w 429.mcf", "profile -p z10 -w websphere/was --out o",
            "hbench os-vector -p mpc7447a", "run s.toml", "regress t.csv -r cycles", "similarity t.csv",
            "gc -w specjvm98/javac"]:
    case(f"usage-{cmd.split()[0]}{'-' + cmd.split()[1] if cmd.split()[0] in ('trace', 'hbench') else ''}-seed-negative",
         f"{cmd} --seed -1", "--seed", "greater than or equal to 0")
case("usage-run-seed-not-a-number", "run s.toml --seed seven", "Invalid value for '--seed'")
for cmd in ["list platforms", "show platform mpc7447a", "run s.toml", "mine g.json", "gc -w specjvm98/javac",
            "trace info t.lackey", "regress t.csv -r cycles", "validate"]:
    case(f"usage-{cmd.split()[0]}-unknown-option", f"{cmd} --frobnicate", "No such option: --frobnicate")
case("usage-run-out-without-value", "run s.toml --out", "Option '--out' requires an argument")
case("usage-show-set-without-value", "show platform mpc7447a --set", "Option '--set' requires an argument")
case("usage-list-extra-argument", "list platforms workloads", "unexpected extra argument")
case("usage-validate-only-without-value", "validate --only", "Option '--only' requires an argument")

# ======================================================================================== list / show / validate
case("list-unknown-kind", "list bananas", "bananas")
case("show-unknown-kind", "show bananas mpc7447a", "bananas")
case("show-unknown-platform", "show platform pentium4", "unknown platform 'pentium4'", "mpc7447a")
case("show-platform-missing-file", "show platform nope.toml", "nope.toml", "no such file")
case("show-platform-directory", "show platform dir.toml", "dir.toml", "is a directory", files={"dir.toml/x": ""})
case("show-unknown-workload", "show workload nosuch", "unknown workload 'nosuch'", "cint2006/429.mcf")
case("show-workload-missing-file", "show workload none.toml:x", "none.toml", "no such file")
case("show-workload-invalid-file", "show workload w.toml:x", "w.toml", "invalid TOML", files={"w.toml": "x[[\n"})
case("show-workload-unknown-isa", "show workload mcf --isa arm", "--isa", "unknown ISA 'arm'", "x86_64")
case("show-workload-with-set", "show workload mcf --set mix.load=0.3", "--set", "platforms")
case("validate-unknown-check", "validate --only 'no such check'", "unknown check")
for key_value, fragment in [
        ("nosuch.key=1", "unknown platform key 'nosuch.key'"), ("l2.sise_kb=1024", "did you mean caches.L2.size_kb"),
        ("assoc=4", "did you mean"), ("caches=1", "names a table"), ("l2=1", "names a table"),
        ("l2.size_kb=1000", "power of two"), ("l2.associativity=0", "associativity"),
        ("l1d.line_bytes=48", "power of two"), ("l1d.size_kb=0.01", "does not divide"),
        ("l2.replacement=clock", "unknown replacement"), ("l2.size_kb=nan", "finite"),
        ("clock_ghz=inf", "finite"), ("clock_ghz=-inf", "finite"), ("clock_ghz=0", "clock_ghz"),
        ("clock_ghz=fast", "clock_ghz"), ("core.issue_width=-1", "issue_width"), ("noequals", "expected KEY=VALUE"),
        ("=1", "empty key"), ("l2.size_kb=[1,2]", "size_kb"), ("memory.bandwidth_gb_s=inf", "finite"),
        ("core.rob_entries=1.5", "rob_entries"), ("l2.latency_cycles=-3", "latency_cycles"),
        ("dtlb.entries=0", "entries"), ("l2.next_level=L9", "L9")]:
    slug = key_value.replace("=", "-").replace(".", "-").replace("[", "").replace("]", "").replace(",", "-") or "x"
    case(f"show-set-{slug}", ["show", "platform", "mpc7447a", "--set", key_value], fragment)

# platform files given by path
PLATFORM_EDITS = [
    ("syntax", ("clock_ghz = 1.5", "clock_ghz = "), "invalid TOML"),
    ("schema-version", ("schema_version = 1", "schema_version = 9"), "schema_version"),
    ("unknown-field", ("clock_ghz = 1.5", "clock_ghz = 1.5\ncolour = \"blue\""), "colour"),
    ("clock-nan", ("clock_ghz = 1.5", "clock_ghz = nan"), "clock_ghz"),
    ("clock-negative", ("clock_ghz = 1.5", "clock_ghz = -1.5"), "clock_ghz"),
    ("clock-string", ("clock_ghz = 1.5", "clock_ghz = \"fast\""), "clock_ghz"),
    ("isa-unknown", ("isa = \"powerpc32\"", "isa = \"vax\""), "isa"),
    ("missing-name", ("name = \"mpc7447a\"\n", ""), "name"),
    ("l1-size-zero", ("size_kb = 32", "size_kb = 0"), "size_kb"),
    ("l1-assoc-string", ("associativity = 8", "associativity = \"eight\""), "associativity"),
    ("replacement-unknown", ("replacement = \"plru\"", "replacement = \"mru2\""), "replacement"),
    ("next-level-unknown", ("next_level = \"L2\"", "next_level = \"L7\""), "L7"),
    ("core-kind-unknown", ("kind = \"out_of_order\"", "kind = \"quantum\""), "kind"),
    ("unit-latency-inf", ("latency = 23", "latency = inf"), "latency"),
]
for slug, change, fragment in PLATFORM_EDITS:
    case(f"platform-file-{slug}", "show platform p.toml", "p.toml", fragment, files={"p.toml": edit(fx.PLATFORM, change)})
case("platform-file-not-utf8", "show platform p.toml", "p.toml", "UTF-8", files={"p.toml": b"name = \"\xff\xfe\"\n"})
case("platform-file-empty", "show platform p.toml", "p.toml", files={"p.toml": ""})

# ======================================================================================== run: every scenario problem
def scenario(id: str, base: str, changes: list[tuple[str, str]], *expect: str, args: str = "",
             files: dict[str, str | bytes] | None = None) -> None:
    case(f"run-{id}", f"run s.toml --out out {args}".strip(), "s.toml", *expect,
         files={"s.toml": edit(base, *changes), **(files or {})})


case("run-missing-file", "run none.toml", "none.toml", "no such file")
case("run-directory", "run sdir", "sdir", "is a directory", files={"sdir/a.toml": fx.CACHESIM})
case("run-empty-file", "run s.toml --out out", "s.toml", "required field is missing", files={"s.toml": ""})
case("run-not-utf8", "run s.toml --out out", "s.toml", "UTF-8", files={"s.toml": b"name = \"\xff\"\n"})
case("run-binary-garbage", "run s.toml --out out", "s.toml", files={"s.toml": bytes(range(256))})
for id, changes, *fragments in [
        ("invalid-toml", [("name = \"tiny\"", "name = ")], "invalid TOML"),
        ("duplicate-key", [("seed = 7", "seed = 7\nseed = 8")], "invalid TOML"),
        ("schema-version", [("schema_version = 1", "schema_version = 2")], "schema_version 2"),
        ("schema-version-string", [("schema_version = 1", "schema_version = \"one\"")], "schema_version"),
        ("name-missing", [("name = \"tiny\"\n", "")], "name"),
        ("name-empty", [("name = \"tiny\"", "name = \"\"")], "name"),
        ("name-with-slash", [("name = \"tiny\"", "name = \"a/b\"")], "plain file name"),
        ("name-dotdot", [("name = \"tiny\"", "name = \"..\"")], "plain file name"),
        ("name-hidden", [("name = \"tiny\"", "name = \".tiny\"")], "plain file name"),
        ("study-missing", [("study = \"cachesim\"\n", "")], "study"),
        ("study-unknown", [("study = \"cachesim\"", "study = \"cachesimm\"")], "unknown study kind", "cachesim"),
        ("unknown-field", [("seed = 7", "seed = 7\ncolour = \"blue\"")], "colour", "unknown field"),
        ("seed-negative", [("seed = 7", "seed = -1")], "seed"),
        ("seed-float", [("seed = 7", "seed = 7.5")], "seed"),
        ("seed-string", [("seed = 7", "seed = \"seven\"")], "seed"),
        ("platforms-empty", [("platforms = [\"mpc7447a\"]", "platforms = []")], "platforms"),
        ("platforms-unknown", [("platforms = [\"mpc7447a\"]", "platforms = [\"pentium9\"]")],
         "platforms[0]", "unknown platform 'pentium9'"),
        ("platforms-second-unknown", [("platforms = [\"mpc7447a\"]", "platforms = [\"mpc7447a\", \"p9\"]")],
         "platforms[1]", "unknown platform 'p9'"),
        ("platforms-not-a-list", [("platforms = [\"mpc7447a\"]", "platforms = \"mpc7447a\"")], "platforms"),
        ("replicates-zero", [("seed = 7", "seed = 7\nreplicates = 0")], "replicates"),
        ("replicates-trillion", [("seed = 7", "seed = 7\nreplicates = 1_000_000_000_000")],
         "2,000,000,000,000 runs", "the limit is 100,000"),
        ("binaries-zero", [("seed = 7", "seed = 7\nbinaries = 0")], "binaries"),
        ("binaries-too-many", [("seed = 7", "seed = 7\nbinaries = 60_000")], "120,000 runs", "limit"),
        ("sweep-empty-list", [("[variants.baseline]", "[sweep]\n\"l2.size_kb\" = []\n\n[variants.baseline]")],
         "sweep.l2.size_kb", "at least one value"),
        ("sweep-huge", [("[variants.baseline]", "[sweep]\n" + "\n".join(f"\"k{i}\" = [{', '.join(map(str, range(10)))}]"
                                                                         for i in range(20)) + "\n\n[variants.baseline]")],
         "runs", "the limit is 100,000"),
        ("sweep-unknown-key", [("[variants.baseline]", "[sweep]\n\"l2.sise_kb\" = [512]\n\n[variants.baseline]")],
         "sweep", "l2.sise_kb"),
        ("sweep-bad-value", [("[variants.baseline]", "[sweep]\n\"l2.size_kb\" = [1000]\n\n[variants.baseline]")],
         "sweep", "power of two"),
        ("sweep-not-a-list", [("[variants.baseline]", "[sweep]\n\"l2.size_kb\" = 512\n\n[variants.baseline]")], "sweep"),
        ("sweep-nan", [("[variants.baseline]", "[sweep]\n\"clock_ghz\" = [1.0, nan]\n\n[variants.baseline]")],
         "sweep.clock_ghz[1]", "finite"),
        ("variants-empty", [("[variants.baseline]\n\n[variants.big]\n\"l2.size_kb\" = 1024\n", "[variants]\n")],
         "variants", "at least one variant"),
        ("variant-unknown-key", [("\"l2.size_kb\" = 1024", "\"l2.sise_kb\" = 1024")], "variants.big", "did you mean"),
        ("variant-bad-value", [("\"l2.size_kb\" = 1024", "\"l2.size_kb\" = 1000")],
         "variants.big", "with override l2.size_kb=1000", "power of two"),
        ("variant-nan", [("\"l2.size_kb\" = 1024", "\"l2.size_kb\" = nan")], "variants.big.l2.size_kb", "finite"),
        ("variant-table-key", [("\"l2.size_kb\" = 1024", "\"caches\" = 1")], "variants.big", "names a table"),
        ("variant-not-a-table", [("[variants.big]\n\"l2.size_kb\" = 1024", "[variants]\nbig = 3")], "variants"),
        ("variant-string-size", [("\"l2.size_kb\" = 1024", "\"l2.size_kb\" = \"big\"")], "variants.big", "size_kb"),
        ("trace-missing", [("[trace]\nsynthetic = \"mixed\"\naccesses = 20000\ninstructions_per_access = 0.5\n", "")],
         "trace", "needs a [trace] table"),
        ("trace-two-sources", [("[trace]", "[trace]\nfile = \"x.lackey\"")], "exactly one of"),
        ("trace-no-source", [("synthetic = \"mixed\"\n", "")], "exactly one of"),
        ("trace-accesses-zero", [("accesses = 20000", "accesses = 0")], "trace", "accesses"),
        ("trace-accesses-huge", [("accesses = 20000", "accesses = 1_000_000_000_000")],
         "trace", "records", "the limit is 200,000,000"),
        ("trace-ipa-huge", [("instructions_per_access = 0.5", "instructions_per_access = 1e300")],
         "trace", "the limit is 200,000,000"),
        ("trace-ipa-nan", [("instructions_per_access = 0.5", "instructions_per_access = nan")],
         "trace.instructions_per_access", "finite"),
        ("trace-ipa-negative", [("instructions_per_access = 0.5", "instructions_per_access = -1")],
         "instructions_per_access"),
        ("trace-code-kb-zero", [("instructions_per_access = 0.5", "instructions_per_access = 0.5\ncode_kb = 0")], "code_kb"),
        ("trace-unknown-field", [("accesses = 20000", "accesses = 20000\nstride = 8")], "trace", "stride"),
        ("trace-synthetic-unknown", [("synthetic = \"mixed\"", "synthetic = \"zipf\"")], "trace", "synthetic"),
        ("trace-custom-without-streams", [("synthetic = \"mixed\"", "synthetic = \"custom\"")], "trace.streams"),
        ("trace-stream-kind-unknown", [("synthetic = \"mixed\"", "synthetic = \"custom\"\n[[trace.streams]]\n"
                                        "kind = \"spiral\"\nweight = 1\nfootprint_kb = 64\n[trace.x]\n")], "kind"),
        ("trace-stream-weight-zero", [("[variants.baseline]", "[[trace.streams]]\nkind = \"random\"\nweight = 0\n"
                                       "footprint_kb = 64\n\n[variants.baseline]"),
                                      ("synthetic = \"mixed\"", "synthetic = \"custom\"")], "weight"),
        ("trace-file-missing", [("synthetic = \"mixed\"", "file = \"none.lackey\"")], "none.lackey", "no such file"),
        ("trace-file-format-unknown", [("synthetic = \"mixed\"", "file = \"t.lackey\"\nformat = \"pin\"")], "format"),
]:
    scenario(f"cachesim-{id}", fx.CACHESIM, changes, *fragments)

# run: command-line options
for id, args, *fragments in [
        ("set-unknown-key", "--set nosuch.key=1", "--set", "unknown platform key 'nosuch.key'", "keys are dotted paths"),
        ("set-bad-value", "--set l2.size_kb=1000", "--set", "with --set l2.size_kb=1000", "power of two"),
        ("set-no-equals", "--set l2.size_kb", "--set", "expected KEY=VALUE"),
        ("set-nan", "--set clock_ghz=nan", "--set", "finite")]:
    scenario(f"option-{id}", fx.CACHESIM, [], *fragments, args=args)
for id, address, fragment in [("not-an-address", "not-an-address", "tcp://host:8786"),
                              ("no-port", "tcp://somewhere", "port"), ("unknown-scheme", "foo://bar:1", "scheme")]:
    case(f"run-option-cluster-{id}", ["run", "s.toml", "--out", "out", "--cluster", address],
         f"--cluster {address}", fragment, files={"s.toml": fx.CACHESIM})
for id, out, files, *fragments in [
        ("out-existing-file", "f.txt", {"f.txt": "mine"}, "--out f.txt", "existing file"),
        ("out-below-a-file", "s.toml/sub", {}, "--out s.toml/sub", "is a file, not a directory"),
        ("out-proc", "/proc/whatif-corpus", {}, "--out /proc/whatif-corpus", "cannot create a directory in /proc"),
        ("out-sys", "/sys/whatif-corpus/x", {}, "--out /sys/whatif-corpus/x", "cannot create a directory in /sys"),
        ("out-cwd", ".", {}, "--out .", "working directory"),
        ("out-parent", "..", {}, "--out ..", "working directory or one of its parents"),
        ("out-foreign-dir", "mine", {"mine/notes.txt": "x"}, "--out mine", "not a whatif results directory"),
        ("out-dangling-symlink", "link", {"link": Symlink("nowhere")}, "--out link", "symbolic link"),
        ("out-symlink-to-dir", "link", {"link": Symlink("d"), "d/x.txt": "x"}, "--out link", "symbolic link")]:
    case(f"run-option-{id}", ["run", "s.toml", "--out", out], *fragments, files={"s.toml": fx.CACHESIM, **files})
case("run-default-out-is-a-file", "run s.toml", "results/tiny", "existing file",
     files={"s.toml": fx.CACHESIM, "results/tiny": "not a directory"})

# other study kinds
for id, changes, *fragments in [
        ("workloads-missing", [("workloads = [\"429.mcf\"]\n", "")], "workloads", "at least one workload"),
        ("workload-unknown", [("\"429.mcf\"", "\"999.nope\"")], "workloads", "999.nope"),
        ("workloads-not-a-list", [("workloads = [\"429.mcf\"]", "workloads = \"429.mcf\"")], "workloads"),
        ("sampling-nan", [("sampling = [10, 5, 3]", "sampling = [nan, 5, 3]")], "simulate.sampling[0]", "finite"),
        ("sampling-inf", [("sampling = [10, 5, 3]", "sampling = [10, inf, 3]")], "simulate.sampling[1]", "finite"),
        ("sampling-two-values", [("sampling = [10, 5, 3]", "sampling = [10, 5]")], "sampling", "s_d, s_p, s_i"),
        ("sampling-interval-longer", [("sampling = [10, 5, 3]", "sampling = [10, 5, 6]")], "sampling", "longer"),
        ("sampling-negative-delay", [("sampling = [10, 5, 3]", "sampling = [-1, 5, 3]")], "sampling", "s_d"),
        ("sampling-zero-period", [("sampling = [10, 5, 3]", "sampling = [10, 0, 3]")], "sampling", "positive"),
        ("sampling-strings", [("sampling = [10, 5, 3]", "sampling = [\"a\", \"b\", \"c\"]")], "sampling"),
        ("sampling-too-few-instructions", [("instructions = 100_000", "instructions = 1000")], "simulate", "too few"),
        ("time-scale-zero", [("time_scale = 1e-5", "time_scale = 0")], "time_scale"),
        ("time-scale-inf", [("time_scale = 1e-5", "time_scale = inf")], "time_scale", "finite"),
        ("time-scale-overflows", [("time_scale = 1e-5", "time_scale = 1e308")], "sampling x time_scale", "finite"),
        ("pmu-unknown", [("pmu = \"ideal\"", "pmu = \"virtual\"")], "pmu"),
        ("instructions-zero", [("instructions = 100_000", "instructions = 0")], "instructions"),
        ("warmup-negative", [("pmu = \"ideal\"", "pmu = \"ideal\"\nwarmup = -1")], "warmup"),
        ("simulate-unknown-field", [("pmu = \"ideal\"", "pmu = \"ideal\"\ncolour = 1")], "colour"),
        ("simulate-table-wrong-type", [("[simulate]\ninstructions = 100_000", "simulate = 3\n[x]\ninstructions = 1")],
         "simulate")]:
    scenario(f"simulate-{id}", fx.SIMULATE, changes, *fragments)
for id, changes, *fragments in [
        ("heap-factors-inf", [("heap_factors = [1.0, 1.5,", "heap_factors = [1.0, inf,")],
         "regression.heap_factors[1]", "finite"),
        ("heap-factors-empty", [("heap_factors = [1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 5.5, 6.0]",
                                 "heap_factors = []")], "heap_factors"),
        ("heap-factors-zero", [("heap_factors = [1.0, 1.5,", "heap_factors = [0.0, 1.5,")], "heap_factors", "> 0"),
        ("heap-factors-too-many", [("heap_factors = [1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 5.5, 6.0]",
                                    "heap_factors = [" + ", ".join(f"{1 + i / 100:.2f}" for i in range(800)) + "]")],
         "regression.heap_factors", "the limit is 100,000"),
        ("collector-unknown", [("collector = \"mark-sweep\"", "collector = \"g1\"")], "collector", "g1"),
        ("response-not-an-event", [("response = \"cycles\"", "response = \"joules\"")], "regression.response", "joules"),
        ("predictor-not-an-event", [("response = \"cycles\"", "response = \"cycles\"\npredictors = [\"dl1_miss\", \"x\"]")],
         "regression.predictors", "'x'"),
        ("keep-not-an-event", [("keep_predictors = [\"l2_dmiss\"", "keep_predictors = [\"nope\"")],
         "regression.keep_predictors", "nope"),
        ("order-three", [("exclude =", "order = 3\nexclude =")], "order"),
        ("folds-one", [("folds = 10", "folds = 1")], "folds"),
        ("prune-unknown", [("prune = \"bic\"", "prune = \"aic\"")], "prune"),
        ("bic-unknown", [("bic = \"seed\"", "bic = \"other\"")], "bic"),
        ("redundancy-cut-above-one", [("redundancy_cut = 0.8", "redundancy_cut = 1.5")], "redundancy_cut"),
        ("heap-scale-zero", [("heap_scale = 0.03125", "heap_scale = 0")], "heap_scale"),
        ("instructions-tiny", [("instructions = 300_000", "instructions = 10")], "instructions"),
        ("workload-unknown", [("\"specjvm98/compress\"", "\"specjvm98/zip\"")], "workloads", "zip"),
        ("unknown-field", [("folds = 10", "folds = 10\nlasso = true")], "lasso"),
        ("too-few-rows", [("replicates = 5", "replicates = 1"),
                          ("heap_factors = [1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 5.5, 6.0]", "heap_factors = [1.0]")],
         "coefficients")]:
    scenario(f"regression-{id}", fx.REGRESSION, changes, *fragments)
for id, changes, *fragments in [
        ("threshold-two", [("threshold = 0.5", "threshold = 2.0")], "similarity", "threshold"),
        ("method-unknown", [("method = \"spearman\"", "method = \"pearson\"")], "similarity", "method"),
        ("stop-rule-unknown", [("stop_rule = \"graph\"", "stop_rule = \"tree\"")], "similarity", "stop_rule"),
        ("kmeans-one", [("kmeans = [3, 5]", "kmeans = [1]")], "similarity", "kmeans"),
        ("reference-unknown", [("reference = \"yahoo_y/Y\"", "reference = \"nobody\"")], "reference", "nobody"),
        ("min-intervals-zero", [("min_intervals = 20", "min_intervals = 0")], "min_intervals"),
        ("no-sampling", [("sampling = [10, 5, 3]", "")], "simulate.sampling", "sampling engine"),
        ("unknown-field", [("min_intervals = 20", "min_intervals = 20\nlinkage = \"ward\"")], "linkage")]:
    scenario(f"similarity-{id}", fx.SIMILARITY, changes, *fragments)
for id, changes, *fragments in [
        ("application-unknown", [("\"specjvm98/compress\", \"specjvm98/jess\"", "\"specjvm98/gzip\", \"specjvm98/jess\"")],
         "gzip"),
        ("scale-zero", [("scale = 0.125", "scale = 0")], "scale"),
        ("scale-above-one", [("scale = 0.125", "scale = 8")], "scale"),
        ("collector-unknown", [("collector = \"mark-sweep\"", "collector = \"zgc\"")], "zgc"),
        ("distribution-unknown", [("distribution = \"pooled\"", "distribution = \"mixed\"")], "distribution"),
        ("goal-negative", [("goal_pct = 5.0", "goal_pct = -5.0")], "goal_pct"),
        ("sweep-one-factor", [("factors = [0.03, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0]", "factors = [1.0]")],
         "factors"),
        ("sweep-factor-nan", [("factors = [0.03,", "factors = [nan,")], "factors[0]", "finite"),
        ("unknown-field", [("goal_pct = 5.0", "goal_pct = 5.0\nfast = true")], "fast")]:
    scenario(f"hbench-gc-{id}", fx.HBENCH_GC, changes, *fragments)
for id, changes, *fragments in [
        ("clients-billion", [("clients = 200 ", "clients = 1_000_000_000 ")], "hbench-os", "clients",
         "less than or equal to 100000"),
        ("clients-zero", [("clients = 200 ", "clients = 0 ")], "clients"),
        ("requests-zero", [("requests = 3000", "requests = 0")], "requests"),
        ("requests-huge", [("requests = 3000", "requests = 1_000_000_000")], "requests"),
        ("line-speed-reversed", [("line_kbit_s = [80000, 100000]", "line_kbit_s = [100000, 80000]")], "line_kbit_s"),
        ("dynamic-share-one", [("dynamic_shares = [0.05, 0.15, 0.30]", "dynamic_shares = [0.05, 1.0]")],
         "dynamic_shares"),
        ("speedup-platform-unknown", [("speedup_platforms = [\"mpc7447a\", \"harpertown\"]",
                                       "speedup_platforms = [\"mpc7447a\", \"p4\"]")], "speedup_platforms", "p4"),
        ("one-platform", [("platforms = [\"mpc7447a\", \"harpertown\", \"nehalem\", \"westmere\", \"z10\"]",
                           "platforms = [\"mpc7447a\"]"),
                          ("speedup_platforms = [\"mpc7447a\", \"harpertown\"]", "speedup_platforms = [\"mpc7447a\"]")],
         "platforms", "at least two platforms"),
        ("user-over-s1-negative", [("user_over_s1 = [0.11, 0.18]", "user_over_s1 = [-0.11]")], "user_over_s1")]:
    scenario(f"hbench-os-{id}", fx.HBENCH_OS, changes, *fragments)
JVMS = "jvms = [\"jdk122-classic\", \"msjvm-sdk32\", \"jdk122-interp\", \"jdk121-prod\"]"
for id, changes, *fragments in [
        ("jvm-unknown", [(JVMS, JVMS.replace("msjvm-sdk32", "kaffe"))], "hbench-java.jvms", "kaffe"),
        ("jvm-twice", [(JVMS, JVMS.replace("msjvm-sdk32", "jdk122-classic"))], "jvms", "twice"),
        ("application-unknown", [("\"Mercator\", \"db\"]", "\"Mercator\", \"Eclipse\"]")],
         "hbench-java.applications", "Eclipse"),
        ("no-applications", [("applications = [\"WebL\", \"Cloudscape\", \"Mercator\", \"db\"]",
                              "applications = []")], "applications"),
        ("specjvm98-unknown", [("\"mtrt\", \"jack\"]", "\"mtrt\", \"raytrace\"]")], "hbench-java.specjvm98",
         "raytrace"),
        ("reference-unknown", [("reference = \"jdk122-classic@mpc7447a\"", "reference = \"jdk122-classic@z10\"")],
         "hbench-java.reference", "jdk122-classic@z10"),
        ("scale-zero", [("scale = 0.1 ", "scale = 0 ")], "scale"),
        ("spec-scale-above-one", [("spec_scale = 0.01", "spec_scale = 2")], "spec_scale"),
        ("timer-resolution-negative", [("timer_resolution_us = 0.1", "timer_resolution_us = -0.1")],
         "timer_resolution_us"),
        ("transfer-units-zero", [("transfer_units = 8192", "transfer_units = 0")], "transfer_units"),
        ("class-bytes-tiny", [("class_bytes = 2048 ", "class_bytes = 8 ")], "class_bytes"),
        ("unknown-field", [("class_bytes = 2048 ", "class_bytes = 2048\nwarm = true ")], "warm")]:
    scenario(f"hbench-java-{id}", fx.HBENCH_JAVA, changes, *fragments)
for id, changes, *fragments in [
        ("clients-billion", [("clients = [50, 200, 400, 600, 800]", "clients = [50, 1_000_000_000]")],
         "capacity", "clients", "less than or equal to 100000"),
        ("clients-decreasing", [("clients = [50, 200, 400, 600, 800]", "clients = [800, 50]")], "clients", "increase"),
        ("clients-one-load", [("clients = [50, 200, 400, 600, 800]", "clients = [50]")], "clients"),
        ("workers-too-many", [("worker_counts = [64, 128, 256, 400]", "worker_counts = [64, 100000]")],
         "worker_counts"),
        ("objective-zero", [("p95_objective_s = 1.5", "p95_objective_s = 0")], "p95_objective_s"),
        ("objective-nan", [("p95_objective_s = 1.5", "p95_objective_s = nan")], "p95_objective_s", "finite"),
        ("what-if-platform-unknown", [("platform = \"harpertown\"", "platform = \"cray1\"")], "cray1"),
        ("what-if-set-unknown-key", [("set = { \"l2.size_kb\" = 1024 }", "set = { \"l2.sise_kb\" = 1024 }")],
         "l2.sise_kb"),
        ("what-if-unknown-field", [("name = \"fastcgi\"", "name = \"fastcgi\"\ncost = 3")], "cost"),
        ("mix-unknown-request", [("mix = { static = 0.85, cgi = 0.15 }", "mix = { static = 0.85, php = 0.15 }")],
         "php")]:
    scenario(f"capacity-{id}", fx.CAPACITY, changes, *fragments)
for id, changes, *fragments in [
        ("instructions-zero", [("instructions = 20_000_000", "instructions = 0")], "instructions"),
        ("sample-every-zero", [("sample_every = 1024", "sample_every = 0")], "sample_every"),
        ("min-support-above-one", [("min_support = 0.01", "min_support = 1.5")], "min_support"),
        ("gap-negative", [("gap = 0 ", "gap = -1 ")], "gap"),
        ("generations-zero", [("generations = 10", "generations = 0")], "generations"),
        ("workload-unknown", [("workloads = [\"websphere/was\"]", "workloads = [\"websphere/liberty\"]")], "liberty"),
        ("variant-unknown-key", [("\"memory.code_page_kb\" = 1024", "\"memory.code_page\" = 1024")], "memory.code_page"),
        ("unknown-field", [("prologue_bytes = 48", "prologue_bytes = 48\nepilogue_bytes = 4")], "epilogue_bytes")]:
    scenario(f"flowgsp-{id}", fx.FLOWGSP, changes, *fragments)

# ======================================================================================== simulate
SIM = "simulate -p nehalem -w 429.mcf"
for id, args, *fragments in [
        ("platform-unknown", "simulate -p pentium9 -w 429.mcf", "unknown platform 'pentium9'"),
        ("platform-directory", "simulate -p pdir -w 429.mcf", "pdir", "is a directory"),
        ("workload-unknown", "simulate -p nehalem -w 999.nope", "999.nope"),
        ("workload-file-missing", "simulate -p nehalem -w none.toml:x", "none.toml", "no such file"),
        ("workload-file-invalid", "simulate -p nehalem -w w.toml:x", "w.toml", "invalid TOML"),
        ("sampling-nan", f"{SIM} --sampling nan,5,3", "--sampling nan,5,3", "s_d", "finite"),
        ("sampling-inf", f"{SIM} --sampling 10,inf,3", "--sampling 10,inf,3", "s_p", "finite"),
        ("sampling-two-values", f"{SIM} --sampling 10,5", "--sampling", "SD,SP,SI"),
        ("sampling-words", f"{SIM} --sampling a,b,c", "--sampling", "SD,SP,SI"),
        ("sampling-empty-field", f"{SIM} --sampling 10,,3", "--sampling", "SD,SP,SI"),
        ("sampling-interval-longer", f"{SIM} --sampling 10,5,6", "--sampling", "longer than the period"),
        ("sampling-negative-delay", f"{SIM} --sampling -1,5,3", "--sampling", "s_d must be >= 0"),
        ("sampling-zero-period", f"{SIM} --sampling 10,0,3", "--sampling", "positive"),
        ("time-scale-zero", f"{SIM} --time-scale 0", "--time-scale", "greater than 0"),
        ("time-scale-negative", f"{SIM} --time-scale -1e-5", "--time-scale", "greater than 0"),
        ("time-scale-nan", f"{SIM} --time-scale nan", "--time-scale", "finite"),
        ("time-scale-inf", f"{SIM} --time-scale inf", "--time-scale", "finite"),
        ("time-scale-overflows-sampling", f"{SIM} --sampling 10,5,3 --time-scale 1e308", "time_scale", "finite"),
        ("pmu-unknown", f"{SIM} --pmu virtual", "--pmu", "'ideal' or 'physical'"),
        ("instructions-zero", f"{SIM} -n 0", "--instructions", "greater than 0"),
        ("instructions-negative", f"{SIM} -n -5", "--instructions", "greater than 0"),
        ("warmup-negative", f"{SIM} --warmup -1", "--warmup", "greater than or equal to 0"),
        ("set-unknown-key", f"{SIM} --set l2.sise_kb=256", "l2.sise_kb", "did you mean"),
        ("set-bad-value", f"{SIM} --set l2.size_kb=300", "with --set l2.size_kb=300"),
        ("out-existing-file", f"{SIM} --out f.txt", "--out f.txt", "existing file"),
        ("out-proc", f"{SIM} --out /proc/whatif-corpus", "cannot create a directory in /proc"),
        ("out-below-a-file", f"{SIM} --out f.txt/sub", "is a file, not a directory"),
        ("out-foreign-dir", f"{SIM} --out mine", "not a whatif results directory")]:
    case(f"simulate-{id}", args, *fragments,
         files={"f.txt": "mine", "mine/notes.txt": "x", "pdir/a": "", "w.toml": "schema_version = \n"})

# ======================================================================================== profile
PROF = "profile -p z10 -w websphere/was"
for id, args, *fragments in [
        ("instructions-zero", f"{PROF} -n 0 --out o", "--instructions must be >= 1"),
        ("warmup-negative", f"{PROF} --warmup -3 --out o", "--warmup >= 0"),
        ("sample-every-zero", f"{PROF} --sample-every 0 --out o", "--sample-every", ">= 1"),
        ("platform-unknown", "profile -p z99 -w websphere/was --out o", "unknown platform 'z99'"),
        ("workload-unknown", "profile -p z10 -w websphere/tomcat --out o", "websphere/tomcat"),
        ("set-unknown-key", f"{PROF} --set nosuch=1 --out o", "unknown platform key 'nosuch'"),
        ("out-existing-file", f"{PROF} --out f.txt", "--out f.txt", "existing file"),
        ("out-cwd", f"{PROF} --out .", "working directory"),
        ("out-proc", f"{PROF} --out /proc/whatif-corpus", "cannot create a directory in /proc")]:
    case(f"profile-{id}", args, *fragments, files={"f.txt": "mine"})

# ======================================================================================== hbench
VEC = {"sys.csv": fx.SYSTEM_CSV, "app.csv": fx.APP_CSV, "v.toml": fx.VECTORS_TOML}
PRED = "hbench predict --system sys.csv --app app.csv"
for id, args, files, *fragments in [
        ("system-missing", "hbench predict --system none.csv --app app.csv", {}, "none.csv", "no such file"),
        ("system-directory", "hbench predict --system sdir --app app.csv", {"sdir/x": ""}, "sdir", "is a directory"),
        ("app-missing", "hbench predict --system sys.csv --app none.csv", {}, "none.csv", "no such file"),
        ("system-no-primitive-column", "hbench predict --system s2.csv --app app.csv",
         {"s2.csv": "name,A\nfile_read,1\n"}, "s2.csv", "primitive"),
        ("system-only-primitive", "hbench predict --system s2.csv --app app.csv",
         {"s2.csv": "primitive\nfile_read\n"}, "s2.csv", "no system columns"),
        ("system-duplicate-header", "hbench predict --system s2.csv --app app.csv",
         {"s2.csv": "primitive,A,A\nfile_read,1,2\n"}, "s2.csv", "column 'A' appears twice"),
        ("system-extra-field", "hbench predict --system s2.csv --app app.csv",
         {"s2.csv": "primitive,A\nfile_read,1,2\n"}, "s2.csv line 2", "3 fields"),
        ("system-empty", "hbench predict --system s2.csv --app app.csv", {"s2.csv": ""}, "s2.csv"),
        ("system-negative-cost", "hbench predict --system s2.csv --app app.csv",
         {"s2.csv": "primitive,A,B\nfile_read,-1,2\ntcp_connect,1,1\n"}, "cost"),
        ("system-text-cost", "hbench predict --system s2.csv --app app.csv",
         {"s2.csv": "primitive,A,B\nfile_read,x,2\ntcp_connect,1,1\n"}, "'x'"),
        ("app-negative-count", "hbench predict --system sys.csv --app a2.csv",
         {"a2.csv": "primitive,static\nfile_read,-4\ntcp_connect,2\n"}, "count"),
        ("app-no-common-primitive", "hbench predict --system sys.csv --app a2.csv",
         {"a2.csv": "primitive,static\nfile_write,4\n"}, "no primitive in common"),
        ("app-unknown-primitive", "hbench predict --system sys.csv --app a2.csv",
         {"a2.csv": "primitive,static\nfile_read,4\nfile_write,4\n"}, "file_write"),
        ("toml-schema-version", "hbench predict --system v2.toml --app app.csv",
         {"v2.toml": edit(fx.VECTORS_TOML, ("schema_version = 1", "schema_version = 7"))}, "v2.toml", "schema_version"),
        ("toml-unknown-table", "hbench predict --system v2.toml --app app.csv",
         {"v2.toml": fx.VECTORS_TOML + "[costs]\nx = 1\n"}, "v2.toml", "costs", "unknown table"),
        ("toml-invalid", "hbench predict --system v2.toml --app app.csv", {"v2.toml": "[systems\n"}, "v2.toml",
         "invalid TOML"),
        ("toml-system-not-a-table", "hbench predict --system v2.toml --app app.csv",
         {"v2.toml": "schema_version = 1\nsystems = { A = 3 }\n"}, "systems.A"),
        ("toml-function-lengths", "hbench predict --system v2.toml --app app.csv",
         {"v2.toml": fx.VECTORS_TOML + "[functions.A.file_read]\nsizes = [1, 2]\ncosts = [1.0]\n"}, "functions.A.file_read"),
        ("reference-unknown", f"{PRED} --reference C", {}, "'C'"),
        ("what-if-no-factor", f"{PRED} --what-if file_read=0.5", {}, "--what-if", "PRIMITIVE=x<factor>"),
        ("what-if-not-a-number", f"{PRED} --what-if file_read=xhalf", {}, "--what-if"),
        ("what-if-negative", f"{PRED} --what-if file_read=x-2", {}, "--what-if", ">= 0"),
        ("what-if-unknown-primitive", f"{PRED} --what-if file_write=x0.5", {}, "file_write"),
        ("count-no-value", f"{PRED} --count file_read", {}, "--count", "PRIMITIVE=<count>"),
        ("count-negative", f"{PRED} --count file_read=-3", {}, "--count", ">= 0"),
        ("count-nan", f"{PRED} --count file_read=nan", {}, "--count"),
        ("out-existing-file", f"{PRED} --out f.txt", {"f.txt": "x"}, "--out f.txt", "existing file"),
        ("os-vector-platform-unknown", "hbench os-vector -p vax780", {}, "unknown platform 'vax780'"),
        ("os-vector-set-unknown", "hbench os-vector -p mpc7447a --set l9.size_kb=1", {}, "l9.size_kb"),
        ("os-vector-primitive-unknown", "hbench os-vector -p mpc7447a --primitive teleport", {}, "--primitive",
         "unknown primitive 'teleport'"),
        ("os-vector-out-file", "hbench os-vector -p mpc7447a --out f.txt", {"f.txt": "x"}, "existing file")]:
    case(f"hbench-{id}", args, *fragments, files={**VEC, **files})

# ======================================================================================== regress (counter totals)
def totals(*changes: tuple[str, str]) -> str:
    return edit(fx.TOTALS, *changes)


TOTALS_HEADER = "workload,heap_kb,replicate,cycles,l1_miss,l2_miss,branches"
TOTALS_LINE_3 = fx.TOTALS.splitlines()[2]
for id, args, table, *fragments in [
        ("missing-file", "regress none.csv -r cycles", None, "none.csv", "no such file"),
        ("directory", "regress tdir -r cycles", None, "tdir", "is a directory"),
        ("unknown-suffix", "regress t.txt -r cycles", None, "t.txt", "unknown table format"),
        ("empty-file", "regress t.csv -r cycles", "", "t.csv", "cannot read table"),
        ("header-only", "regress t.csv -r cycles", TOTALS_HEADER + "\n", "t.csv", "no rows"),
        ("duplicate-header", "regress t.csv -r cycles",
         totals((TOTALS_HEADER, TOTALS_HEADER.replace("l2_miss", "l1_miss"))), "column 'l1_miss' appears twice"),
        ("duplicate-header-a-a-cycles", "regress t.csv -r cycles", "a,a,cycles\n1,2,3\n2,3,5\n3,5,8\n4,4,9\n",
         "column 'a' appears twice"),
        ("unnamed-column", "regress t.csv -r cycles", totals((TOTALS_HEADER, "," + TOTALS_HEADER)).replace(
            "\nw", "\n0,w"), "column 1 has no name"),
        ("extra-field-first-row", "regress t.csv -r cycles", totals((TOTALS_HEADER + "\n", TOTALS_HEADER + "\n9,")),
         "t.csv line 2", "8 fields, but the header has 7"),
        ("extra-field-later-row", "regress t.csv -r cycles", totals((TOTALS_LINE_3, TOTALS_LINE_3 + ",5")),
         "t.csv line 3", "8 fields"),
        ("response-missing", "regress t.csv -r joules", fx.TOTALS, "response column 'joules' not found"),
        ("response-text-cell", "regress t.csv -r cycles", totals((TOTALS_LINE_3, TOTALS_LINE_3.replace(
            TOTALS_LINE_3.split(",")[3], "lots", 1))), "response column 'cycles'", "non-numeric", "'lots'", "line 3"),
        ("response-empty-cell", "regress t.csv -r cycles", totals((TOTALS_LINE_3, ",".join(
            TOTALS_LINE_3.split(",")[:3] + [""] + TOTALS_LINE_3.split(",")[4:]))), "cycles", "missing", "line 3"),
        ("response-inf", "regress t.csv -r cycles", totals((TOTALS_LINE_3, ",".join(
            TOTALS_LINE_3.split(",")[:3] + ["inf"] + TOTALS_LINE_3.split(",")[4:]))), "cycles", "infinite"),
        ("response-constant", "regress t.csv -r replicate2", "a,b,replicate2\n1,2,3\n2,3,3\n3,5,3\n4,4,3\n",
         "response column 'replicate2' is constant"),
        ("predictor-text-cell", "regress t.csv -r cycles", totals((TOTALS_LINE_3, ",".join(
            TOTALS_LINE_3.split(",")[:4] + ["x"] + TOTALS_LINE_3.split(",")[5:]))), "predictor column 'l1_miss'", "'x'"),
        ("predictor-unknown", "regress t.csv -r cycles --predictors l1_miss,l3_miss", fx.TOTALS,
         "predictor column 'l3_miss' not found"),
        ("predictor-twice", "regress t.csv -r cycles --predictors l1_miss,l1_miss", fx.TOTALS, "more than once"),
        ("response-as-predictor", "regress t.csv -r cycles --predictors l1_miss,cycles", fx.TOTALS,
         "cannot also be a predictor"),
        ("two-rows", "regress t.csv -r cycles", "\n".join(fx.TOTALS.splitlines()[:3]) + "\n", "at least 3"),
        ("only-identifying-columns", "regress t.csv -r cycles", "workload,heap_kb,cycles\nw,1,2\nw,2,3\nv,3,5\n",
         "no numeric predictor columns"),
        ("every-predictor-constant", "regress t.csv -r cycles", "a,b,cycles\n1,2,3\n1,2,5\n1,2,8\n1,2,9\n",
         "every predictor is constant"),
        ("order-zero", "regress t.csv -r cycles --order 0", fx.TOTALS, "order"),
        ("order-four", "regress t.csv -r cycles --order 4", fx.TOTALS, "order"),
        ("folds-one", "regress t.csv -r cycles --folds 1", fx.TOTALS, "folds"),
        ("prune-unknown", "regress t.csv -r cycles --prune aic", fx.TOTALS, "prune"),
        ("bic-unknown", "regress t.csv -r cycles --bic akaike", fx.TOTALS, "bic"),
        ("redundancy-zero", "regress t.csv -r cycles --redundancy 0", fx.TOTALS, "redundancy"),
        ("redundancy-above-one", "regress t.csv -r cycles --redundancy 1.5", fx.TOTALS, "redundancy"),
        ("redundancy-nan", "regress t.csv -r cycles --redundancy nan", fx.TOTALS, "redundancy"),
        ("exclude-unknown-term", "regress t.csv -r cycles --exclude l1_miss*l9_miss", fx.TOTALS, "l9_miss"),
        ("exclude-not-a-pair", "regress t.csv -r cycles --exclude l1_miss", fx.TOTALS, "l1_miss"),
        ("keep-unknown", "regress t.csv -r cycles --redundancy 0.8 --keep l9_miss", fx.TOTALS, "l9_miss"),
        ("parquet-garbage", "regress t.parquet -r cycles", None, "t.parquet", "cannot read table"),
        ("csv-gz-garbage", "regress t.csv.gz -r cycles", None, "t.csv.gz", "cannot read table"),
        ("out-existing-file", "regress t.csv -r cycles --out f.txt", fx.TOTALS, "--out f.txt", "existing file"),
        ("out-proc", "regress t.csv -r cycles --out /proc/whatif-corpus", fx.TOTALS, "cannot create a directory")]:
    files = {"tdir/a.csv": "", "t.txt": fx.TOTALS, "t.parquet": b"PAR1 not really", "t.csv.gz": b"\x1f\x8b garbage",
             "f.txt": "x"}
    if table is not None:
        files["t.csv"] = table
    case(f"regress-{id}", args, *fragments, files=files)

# ======================================================================================== similarity
TS_LINES = fx.TIME_SERIES.splitlines()


def series(line: int, column: int, value: str) -> str:
    """The time series with the cell at file line ``line`` (1 = header), column ``column`` replaced."""
    rows = [r.split(",") for r in TS_LINES]
    rows[line - 1][column] = value
    return "\n".join(",".join(r) for r in rows) + "\n"


SIG_LINES = fx.SIGNATURES.splitlines()
for id, args, table, *fragments in [
        ("t-start-text", "similarity t.csv", series(4, 2, "abc"), "t.csv line 4", "'t_start'", "'abc'"),
        ("t-start-inf", "similarity t.csv", series(5, 2, "inf"), "t.csv line 5", "'t_start'"),
        ("extra-field-first-row", "similarity t.csv", fx.TIME_SERIES.replace("\na,p1,0,", "\na,p1,0,9,", 1),
         "t.csv line 2", "10 fields, but the header has 9"),
        ("extra-field-every-row", "similarity t.csv",
         TS_LINES[0] + "\n" + "\n".join(r + ",1" for r in TS_LINES[1:]) + "\n", "t.csv line 2", "10 fields"),
        ("extra-field-later-row", "similarity t.csv", fx.TIME_SERIES.replace("\nb,p1,2,", "\nb,p1,2,7,", 1),
         "t.csv line 9", "10 fields"),
        ("duplicate-header", "similarity t.csv", fx.TIME_SERIES.replace("C_stall", "B_stall", 1),
         "column 'B_stall' appears twice"),
        ("duplicate-header-after-strip", "similarity t.csv", fx.TIME_SERIES.replace(",C_stall", ", B_stall", 1),
         "'B_stall' appears twice"),
        ("unnamed-column", "similarity t.csv",
         "," + TS_LINES[0] + "\n" + "\n".join(f"{i},{r}" for i, r in enumerate(TS_LINES[1:])) + "\n",
         "column 1 has no name"),
        ("stall-text-cell", "similarity t.csv", series(6, 7, "x"), "t.csv line 6", "stall column 'B_stall'", "'x'"),
        ("stall-negative", "similarity t.csv", series(6, 6, "-5"), "t.csv line 6", "A_stall", "non-negative"),
        ("stall-nan-cell", "similarity t.csv", series(6, 6, "nan"), "t.csv line 6", "A_stall"),
        ("stall-empty-cell", "similarity t.csv", series(3, 8, ""), "t.csv line 3", "missing value", "C_stall"),
        ("cycles-zero", "similarity t.csv", series(3, 4, "0"), "t.csv line 3", "'cycles'", "positive"),
        ("cycles-text", "similarity t.csv", series(3, 4, "many"), "t.csv line 3", "'cycles'", "'many'"),
        ("instructions-negative", "similarity t.csv", series(7, 5, "-800"), "t.csv line 7", "'instructions'"),
        ("application-empty", "similarity t.csv", series(4, 0, ""), "t.csv line 4", "'application' is empty"),
        ("platform-empty", "similarity t.csv", series(4, 1, ""), "t.csv line 4", "'platform' is empty"),
        ("no-application-column", "similarity t.csv", fx.TIME_SERIES.replace("application,", "app,", 1),
         "no application column"),
        ("no-cycles-column", "similarity t.csv", fx.TIME_SERIES.replace(",cycles,", ",clocks,", 1), "no cycles column"),
        ("one-stall-column", "similarity t.csv --stalls A_stall", fx.TIME_SERIES, "at least 2 stall columns"),
        ("stall-unknown", "similarity t.csv --stalls A_stall,D_stall", fx.TIME_SERIES, "stall column 'D_stall' not found"),
        ("stall-listed-twice", "similarity t.csv --stalls A_stall,A_stall", fx.TIME_SERIES, "listed twice"),
        ("cycles-option-unknown", "similarity t.csv --cycles clk", fx.TIME_SERIES, "cycles column 'clk' not found"),
        ("instructions-option-unknown", "similarity t.csv --instructions ins", fx.TIME_SERIES,
         "instructions column 'ins' not found"),
        ("too-few-intervals", "similarity t.csv", "\n".join(TS_LINES[:3] + TS_LINES[6:]) + "\n", "sampling interval",
         "at least 3"),
        ("one-application", "similarity t.csv", "\n".join(TS_LINES[:6]) + "\n", "at least 2"),
        ("header-only", "similarity t.csv", TS_LINES[0] + "\n", "no rows"),
        ("empty-file", "similarity t.csv", "", "t.csv", "cannot read"),
        ("platform-unknown", "similarity t.csv -p p9", fx.TIME_SERIES, "platform 'p9' not in the table"),
        ("threshold-zero", "similarity t.csv -g 0", fx.TIME_SERIES, "threshold"),
        ("threshold-two", "similarity t.csv -g 2", fx.TIME_SERIES, "threshold"),
        ("threshold-nan", "similarity t.csv -g nan", fx.TIME_SERIES, "threshold"),
        ("method-unknown", "similarity t.csv --method pearson", fx.TIME_SERIES, "method"),
        ("stop-rule-unknown", "similarity t.csv --stop-rule tree", fx.TIME_SERIES, "stop_rule"),
        ("kmeans-one", "similarity t.csv --kmeans 1", fx.TIME_SERIES, "--kmeans"),
        ("kmeans-words", "similarity t.csv --kmeans three", fx.TIME_SERIES, "--kmeans"),
        ("on-constant-unknown", "similarity t.csv --on-constant ignore", fx.TIME_SERIES, "on_constant"),
        ("reference-unknown", "similarity t.csv --reference zz --kmeans ''", fx.TIME_SERIES, "zz"),
        ("run-times-missing", "similarity t.csv --run-times none.csv", fx.TIME_SERIES, "none.csv", "no such file"),
        ("run-times-no-column", "similarity t.csv --run-times rt.csv", fx.TIME_SERIES, "rt.csv", "run_time"),
        ("run-times-negative", "similarity t.csv --run-times rt2.csv", fx.TIME_SERIES, "rt2.csv line 3", "run_time"),
        ("unknown-suffix", "similarity t.tsv", None, "t.tsv", "unknown table format"),
        ("directory", "similarity tdir.csv", None, "tdir.csv", "is a directory"),
        ("missing-file", "similarity none.csv", None, "none.csv", "no such file"),
        ("parquet-garbage", "similarity t.parquet", None, "t.parquet", "cannot read parquet table"),
        ("out-existing-file", "similarity t.csv --out f.txt", fx.TIME_SERIES, "--out f.txt", "existing file"),
        ("signatures-duplicate-label", "similarity s.csv --signatures", None, "s.csv line 4",
         "application 'a' appears twice"),
        ("signatures-out-of-range", "similarity s2.csv --signatures", None, "s2.csv line 3", "[-1, 1]", "1.5"),
        ("signatures-text-cell", "similarity s3.csv --signatures", None, "s3.csv line 3", "'B_stall'", "'x'"),
        ("signatures-nan-cell", "similarity s4.csv --signatures", None, "s4.csv", "application 'a' has no 'A_stall'"),
        ("signatures-extra-field", "similarity s5.csv --signatures", None, "s5.csv line 4", "6 fields"),
        ("signatures-one-stall", "similarity s.csv --signatures --stalls A_stall", None, "at least 2 stall columns")]:
    files = {"rt.csv": "application,platform,seconds\na,p1,1\n", "t.tsv": fx.TIME_SERIES, "tdir.csv/x": "",
             "t.parquet": b"PAR1\x00\x00garbage", "f.txt": "x",
             "rt2.csv": fx.RUN_TIMES.replace("b,p1,12", "b,p1,-12"),
             "s.csv": fx.SIGNATURES.replace("c,p1,", "a,p1,", 1),
             "s2.csv": fx.SIGNATURES.replace("0.2,0.1,0.5", "0.2,1.5,0.5"),
             "s3.csv": fx.SIGNATURES.replace("0.2,0.1,0.5", "0.2,x,0.5"),
             "s4.csv": fx.SIGNATURES.replace("0.1,0.2,0.3", "nan,0.2,0.3"),
             "s5.csv": fx.SIGNATURES.replace("0.5,-0.2,0.1", "0.5,-0.2,0.1,0.7")}
    if table is not None:
        files["t.csv"] = table
    case(f"similarity-{id}", args, *fragments, files=files)

# ======================================================================================== mine (EFG JSON, SQLite profiles)
def vertex(m: int, v: int, **changes):
    return lambda doc: doc["methods"][m]["vertices"][v].update(changes)


def edge(m: int, e: int, value):
    return lambda doc: doc["methods"][m]["edges"].__setitem__(e, value)


def freq(m: int, e: int, value):
    return lambda doc: doc["methods"][m]["edges"][e].__setitem__(2, value)


BIG = 10 ** 23
for id, change, *fragments in [
        ("vertex-id-1e23", vertex(0, 0, id=BIG), "methods[0].vertices[0].id", "64-bit integer"),
        ("weight-1e23", vertex(0, 1, weight=BIG), "methods[0].vertices[1].weight", "below 2**63"),
        ("frequency-1e23", freq(0, 0, BIG), "methods[0].edges[0]", "frequency", "below 2**63"),
        ("weight-400-digits", vertex(1, 0, weight=10 ** 400), "methods[1].vertices[0].weight", "characters)"),
        ("weights-overflow-sum", lambda d: [v.update(weight=1.5e308) for v in d["methods"][0]["vertices"]],
         "vertex weights sum to more than a float64 holds"),
        ("weight-negative", vertex(0, 0, weight=-2), "methods[0].vertices[0].weight", "non-negative", "-2"),
        ("weight-string", vertex(0, 0, weight="12"), "methods[0].vertices[0].weight", "'12'"),
        ("weight-true", vertex(0, 0, weight=True), "methods[0].vertices[0].weight", "True"),
        ("weight-null", vertex(0, 0, weight=None), "methods[0].vertices[0].weight", "None"),
        ("vertex-id-float", vertex(0, 0, id=0.5), "methods[0].vertices[0].id", "0.5"),
        ("vertex-id-string", vertex(0, 0, id="0"), "methods[0].vertices[0].id", "'0'"),
        ("vertex-id-missing", lambda d: d["methods"][0]["vertices"][0].pop("id"), "methods[0].vertices[0].id", "None"),
        ("vertex-id-duplicate", vertex(0, 1, id=0), "methods[0].vertices[1].id", "duplicate vertex id 0"),
        ("vertex-not-an-object", lambda d: d["methods"][0]["vertices"].__setitem__(0, [0, 1]),
         "methods[0].vertices[0]", "must be an object"),
        ("attributes-not-a-list", vertex(0, 0, attributes="Icachemiss"), "methods[0].vertices[0].attributes"),
        ("attribute-empty-string", vertex(0, 0, attributes=[""]), "methods[0].vertices[0].attributes"),
        ("attribute-number", vertex(0, 0, attributes=[3]), "methods[0].vertices[0].attributes"),
        ("edge-two-items", edge(0, 0, [0, 1]), "methods[0].edges[0]", "[src_id, dst_id, frequency]"),
        ("edge-object", edge(0, 0, {"src": 0}), "methods[0].edges[0]"),
        ("edge-unknown-vertex", edge(0, 0, [0, 9, 1.0]), "methods[0].edges[0]", "unknown vertex 9"),
        ("edge-source-1e23", edge(0, 0, [BIG, 1, 1.0]), "methods[0].edges[0]", "source id", "64-bit"),
        ("edge-source-string", edge(0, 0, ["0", 1, 1.0]), "methods[0].edges[0]", "source id"),
        ("frequency-negative", freq(0, 1, -5), "methods[0].edges[1]", "frequency", "-5"),
        ("frequency-string", freq(0, 1, "5"), "methods[0].edges[1]", "frequency", "'5'"),
        ("frequency-null", freq(0, 1, None), "methods[0].edges[1]", "frequency"),
        ("all-weights-zero", lambda d: [v.update(weight=0) for m in d["methods"] for v in m["vertices"]],
         "all vertex weights are zero"),
        ("all-frequencies-zero", lambda d: [e.__setitem__(2, 0) for m in d["methods"] for e in m["edges"]],
         "all edge frequencies are zero"),
        ("no-edges", lambda d: [m.update(edges=[]) for m in d["methods"]], "no edges"),
        ("method-name-number", lambda d: d["methods"][1].update(name=7), "methods[1].name", "7"),
        ("method-not-an-object", lambda d: d["methods"].__setitem__(0, "A.run()V"), "methods[0]", "must be an object"),
        ("method-vertices-missing", lambda d: d["methods"][0].pop("vertices"), "methods[0]", "'vertices' must be a list"),
        ("method-edges-object", lambda d: d["methods"][0].update(edges={}), "methods[0]", "'edges' must be a list"),
        ("methods-not-a-list", lambda d: d.update(methods={"A": 1}), "'methods' must be a list"),
        ("methods-missing", lambda d: d.pop("methods"), "expected a JSON object with a 'methods' list")]:
    case(f"mine-json-{id}", "mine g.json", "g.json", *fragments, files={"g.json": fx.efg_edited(change)})
for id, text, *fragments in [
        ("malformed", "{\"methods\": [", "malformed JSON at line 1"),
        ("trailing-comma", "{\"methods\": [],}", "malformed JSON"),
        ("top-level-list", "[]", "expected a JSON object"),
        ("top-level-number", "3", "expected a JSON object"),
        ("empty-file", "", "malformed JSON"),
        ("nan-weight-token", fx.efg_text().replace("\"weight\": 12", "\"weight\": NaN"), "weight", "nan"),
        ("infinity-frequency-token", fx.efg_text().replace("250.0", "Infinity"), "frequency", "inf")]:
    case(f"mine-json-{id}", "mine g.json", "g.json", *fragments, files={"g.json": text})
case("mine-json-not-utf8", "mine g.json", "g.json", "not UTF-8", files={"g.json": b"\xff\xfe{}"})
case("mine-missing-file", "mine none.json", "none.json", "no such file")
case("mine-directory", "mine gdir", "gdir", "is a directory", files={"gdir/x": ""})
case("mine-sqlite-not-sqlite", "mine p.sqlite", "p.sqlite", "not a SQLite database", files={"p.sqlite": "hello\n"})
case("mine-sqlite-json-inside", "mine p.sqlite", "p.sqlite", "not a SQLite database",
     files={"p.sqlite": fx.efg_text()})
case("mine-db-not-sqlite", "mine p.db", "p.db", "not a SQLite database", files={"p.db": b"\x00\x01garbage"})
case("mine-sqlite-no-tables", "mine p.sqlite", "p.sqlite", "lacks table(s)",
     files={"p.sqlite": fx.sqlite_bytes("CREATE TABLE Foo (x INTEGER)")})
case("mine-sqlite-truncated", "mine p.sqlite", "p.sqlite",
     files={"p.sqlite": fx.sqlite_bytes("CREATE TABLE Foo (x INTEGER)")[:100]})
for id, option, *fragments in [
        ("gap-negative", "--gap -1", "--gap"), ("window-negative", "--window -2", "--window"),
        ("generations-zero", "--generations 0", "--generations"), ("min-support-above-one", "--min-support 2", "--min-support"),
        ("min-support-nan", "--min-support nan", "--min-support"),
        ("min-diff-support-negative", "--min-diff-support -0.1", "--min-diff-support"),
        ("workers-zero", "--workers 0", "--workers"), ("cluster-not-an-address", "--cluster nowhere", "--cluster"),
        ("top-zero", "--top 0", "--top must be an integer >= 1"),
        ("out-existing-file", "--out f.txt", "--out f.txt", "existing file"),
        ("out-proc", "--out /proc/whatif-corpus", "cannot create a directory")]:
    case(f"mine-option-{id}", f"mine g.json {option}", *fragments, files={"g.json": fx.efg_text(), "f.txt": "x"})

# ======================================================================================== gc
GC = "gc -w specjvm98/javac"
for id, args, *fragments in [
        ("workload-unknown", "gc -w specjvm98/kaffe", "specjvm98/kaffe", "known"),
        ("workload-suite-unknown", "gc -w specjvm2008/javac", "specjvm2008", "suites"),
        ("workload-file-missing", "gc -w none.toml:x", "none.toml", "no such file"),
        ("heap-zero", f"{GC} --heap-mb 0", "--heap-mb must be > 0, got 0"),
        ("heap-negative", f"{GC} --heap-mb -64", "--heap-mb must be > 0"),
        ("heap-nan", f"{GC} --heap-mb nan", "--heap-mb must be > 0, got nan"),
        ("heap-inf", f"{GC} --heap-mb inf", "--heap-mb must be a finite number"),
        ("heap-above-address-map", f"{GC} --heap-mb 1e9", "heaps above 1024 MB"),
        ("heap-below-one-object", f"{GC} --heap-mb 1e-9", "smaller than one object"),
        ("scale-zero", f"{GC} --scale 0", "--scale must be in (0, 1]"),
        ("scale-above-one", f"{GC} --scale 2", "--scale must be in (0, 1]"),
        ("scale-nan", f"{GC} --scale nan", "--scale must be in (0, 1]"),
        ("growth-unknown", f"{GC} --growth doubling", "--growth must be fixed or expand"),
        ("growth-expand-without-max", f"{GC} --growth expand", "--growth expand needs --max-heap-mb"),
        ("max-heap-with-fixed", f"{GC} --max-heap-mb 128", "--max-heap-mb applies to --growth expand only"),
        ("max-heap-nan", f"{GC} --growth expand --max-heap-mb nan", "--max-heap-mb must be a finite number"),
        ("max-heap-below-heap", f"{GC} --heap-mb 64 --growth expand --max-heap-mb 32", "max_heap_bytes"),
        ("expand-with-copying", f"{GC} --collector copying --growth expand --max-heap-mb 128", "mark-sweep collector only"),
        ("collector-unknown", f"{GC} --collector g1", "unknown collector 'g1'", "mark-sweep"),
        ("platform-unknown", f"{GC} -p alpha21264", "unknown platform 'alpha21264'"),
        ("out-existing-file", f"{GC} --out f.txt", "--out f.txt", "existing file"),
        ("out-proc", f"{GC} --out /proc/whatif-corpus", "cannot create a directory in /proc"),
        ("out-cwd", f"{GC} --out .", "working directory")]:
    case(f"gc-{id}", args, *fragments, files={"f.txt": "x"})

# ======================================================================================== cachesim and traces
LACKEY = "==1== Lackey\nI  04016b0,3\n L 1ffefffd78,8\n S 1ffefffd70,8\n"
for id, args, files, *fragments in [
        ("cachesim-missing-trace", "cachesim none.lackey -p mpc7447a", {}, "none.lackey", "no such file"),
        ("cachesim-platform-unknown", "cachesim t.lackey -p pentium4", {}, "unknown platform 'pentium4'"),
        ("cachesim-set-unknown-key", "cachesim t.lackey -p mpc7447a --set l2.sise_kb=1024", {}, "l2.sise_kb",
         "did you mean"),
        ("cachesim-set-bad-value", "cachesim t.lackey -p mpc7447a --set l2.associativity=0", {}, "associativity"),
        ("cachesim-set-nan", "cachesim t.lackey -p mpc7447a --set l2.size_kb=nan", {}, "finite"),
        ("cachesim-bad-line", "cachesim b.lackey -p mpc7447a", {"b.lackey": LACKEY.replace(" S 1ffefffd70,8",
                                                                                          " S 1ffefffd70;8")},
         "b.lackey:4:"),
        ("cachesim-format-unknown", "cachesim t.lackey -p mpc7447a --format pin", {}, "pin"),
        ("trace-info-missing", "trace info none.wtr", {}, "none.wtr", "no such file"),
        ("trace-convert-to-directory", "trace convert t.lackey .", {}, "is a directory"),
        ("trace-convert-missing-input", "trace convert none.lackey o.wtr", {}, "none.lackey", "no such file"),
        ("trace-convert-over-foreign-file", "trace convert t.lackey f.txt", {"f.txt": "x"}, "f.txt",
         "not written by whatif")]:
    case(f"trace-{id}", args, *fragments, files={"t.lackey": LACKEY, **files})

# an unknown platform names the scenario field, whatever the study kind
for kind, base, platforms in [("simulate", fx.SIMULATE, "platforms = [\"nehalem\"]"),
                              ("regression", fx.REGRESSION, "platforms = [\"mpc7447a\"]"),
                              ("similarity", fx.SIMILARITY, "platforms = [\"harpertown\", \"nehalem\", \"westmere\"]"),
                              ("hbench-gc", fx.HBENCH_GC, "platforms = [\"mpc7447a\"]"),
                              ("hbench-os", fx.HBENCH_OS,
                               "platforms = [\"mpc7447a\", \"harpertown\", \"nehalem\", \"westmere\", \"z10\"]"),
                              ("capacity", fx.CAPACITY, "platforms = [\"mpc7447a\"]"),
                              ("hbench-java", fx.HBENCH_JAVA, "platforms = [\"mpc7447a\", \"harpertown\", \"westmere\"]"),
                              ("flowgsp", fx.FLOWGSP, "platforms = [\"z10\"]")]:
    last = len(platforms.split(",")) - 1
    scenario(f"{kind}-platforms-unknown", base,
             [(platforms, platforms.rsplit("\"", 2)[0] + "\"pentium9\"]")], f"platforms[{last}]",
             "unknown platform 'pentium9'")
