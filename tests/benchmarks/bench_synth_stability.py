"""How much a program changes when its description changes a little (issue 15, item 1).

    python tests/benchmarks/bench_synth_stability.py [--workloads 456.hmmer,401.bzip2] [--isa x86_64] [--seed 1]
                                                    [--platform harpertown]

Per workload: the static program of its description and of the description with one parameter moved as the
planted families of ``whatif validate`` moved them until 2026-11-29 (a mix share x1.01 or x0.99 with ``other``
taking up the difference, the branch bias's miss share x1.02 or x0.98, every stream footprint x1.02; they now
move the footprints only, because the other changes build other code), and, weighted by the
instructions' expected dynamic share (``StaticProgram.weight``), how much of the program changed:

``structure``, ``lengths``, ``class``, ``stream`` and ``dataflow`` as :mod:`simulator.synth.compare` defines
them.

With ``--platform NAME`` it also runs every program as the planted-families check did until 2026-11-29 (6 M
instructions from cold, without the check's warm-up since; seed 002's sampling, program and run seed of the
check) and prints what the change did to the behaviour:
the CPI against the unchanged description's and the Spearman rho of the stall signature with its
signature (over the whole CINT2006 set: ~2 s per run on an idle core).

Anchor: the moved share itself (``moved``: the change of the mix share as a share of the instructions,
e.g. 0.41 % for a load share of 0.41 x 1.01).  A description changed that little should give a program
changed about that much; more than that is a cascade.

Per workload it also prints how closely the unchanged description's program realises its stream weights
(``simulator.synth.compare.stream_shares``: each phase's loads and stores per stream, by expected dynamic
weight): the largest ratio, either way, between realised and described share.  Anchor: 1x.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from whatif.models.similarity import SimilarityWarning  # noqa: E402
from whatif.models.similarity.rank import similarity_matrix, spearman_embedding  # noqa: E402
from whatif.models.similarity.signatures import signatures_from_time_series  # noqa: E402
from whatif.scenarios.checks import similarity_sim as families  # noqa: E402
from whatif.scenarios.measure import SimulateSpec  # noqa: E402
from whatif.simulator.collect import simulate_one  # noqa: E402
from whatif.simulator.isa import isa_for  # noqa: E402
from whatif.simulator.platform import load_platform  # noqa: E402
from whatif.simulator.synth.compare import program_change, stream_shares  # noqa: E402
from whatif.simulator.synth.program import build_program  # noqa: E402
from whatif.simulator.workload import Branches, load_workload, workload_from_dict, workload_names  # noqa: E402


def variants(name: str) -> list[tuple[str, dict, float]]:
    """(label, description, moved share of the instructions) for each one-parameter change."""
    out = []
    base = load_workload(name).spec.model_dump(exclude_unset=True)
    for key in ("load", "store", "branch"):
        for f in (0.99, 1.01):
            d = load_workload(name).spec.model_dump(exclude_unset=True)
            d["mix"][key] = round(d["mix"][key] * f, 4)
            d["mix"]["other"] = round(1.0 - sum(d["mix"][k] for k in ("load", "store", "branch", "fp")), 4)
            out.append((f"{key} x{f}", d, abs(d["mix"][key] - base["mix"][key])))
    for f in (0.98, 1.02):
        d = load_workload(name).spec.model_dump(exclude_unset=True)
        br = d.setdefault("branches", {})
        br["bias"] = 1.0 - (1.0 - br.get("bias", Branches().bias)) * f
        out.append((f"bias miss x{f}", d, 0.0))
    d = load_workload(name).spec.model_dump(exclude_unset=True)
    for stream in d.get("streams", {}).values():
        stream["footprint_kb"] = stream["footprint_kb"] * 1.02
    out.append(("footprints x1.02", d, 0.0))
    return out


def behaviour(platform, docs: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """CPI of each description's program as the planted-families check runs it, and the Spearman rho of
    each one's stall signature with the first one's."""
    size = families.SIZES[False]
    spec = SimulateSpec(instructions=size["instructions"], sampling=[10, 5, 3], time_scale=size["time_scale"])
    parts, cpi = [], []
    for i, doc in enumerate(docs):
        out = simulate_one(platform, workload_from_dict(doc, name=f"v{i}"), spec.collect_spec(),
                           program_seed=families.SEED, replicate_seed=families.SEED)
        cpi.append(out["cpi"])
        ts = out["timeseries"].copy()
        ts.insert(0, "platform", platform.name)
        ts.insert(0, "workload", f"v{i}")
        parts.append(ts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SimilarityWarning)
        sig = signatures_from_time_series(pd.concat(parts, ignore_index=True)).platforms[platform.name]
    order = [sig.applications.index(f"v{i}") for i in range(len(docs))]
    rho = similarity_matrix(spearman_embedding(sig.values[order]))[0]
    return np.array(cpi), rho


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default=None, help="comma-separated names (default: CINT2006)")
    ap.add_argument("--isa", default="x86_64")
    ap.add_argument("--seed", type=int, default=1, help="program seed (the layout: it does not change the source)")
    ap.add_argument("--platform", default=None, help="also run the programs on this platform (CPI, signature rho)")
    args = ap.parse_args()
    names = args.workloads.split(",") if args.workloads else [n for n in workload_names() if n.startswith("cint2006/")]
    isa = isa_for(args.isa)
    platform = load_platform(args.platform) if args.platform else None
    print(f"{args.isa}, program seed {args.seed}; shares of the dynamic weight changed "
          f"(structure; instructions gained or lost in blocks; then, of the instructions matched by their place "
          f"in the source, class / stream / dataflow), beside the moved share"
          + (f"; on {platform.name}: CPI change and signature rho against the unchanged description" if platform else ""))
    print(f"{'workload':18s} {'change':18s} {'moved':>7s} {'structure':>10s} {'lengths':>8s} {'class':>7s} {'stream':>7s} {'dataflow':>9s}"
          + (f" {'CPI':>7s} {'rho':>5s}" if platform else ""))
    worst, shifts, rhos, ratios = [], [], [], []
    for name in names:
        t0 = time.perf_counter()
        base = build_program(load_workload(name).spec, isa, args.seed, name)
        changes = variants(name)
        if platform is not None:
            cpi, rho = behaviour(platform, [load_workload(name).spec.model_dump(exclude_unset=True)]
                                 + [doc for _, doc, _ in changes])
        for j, (label, doc, moved) in enumerate(changes):
            prog = build_program(workload_from_dict(doc, name="variant").spec, isa, args.seed, name)
            c = program_change(base, prog)
            worst.append(max(c.values()))
            row = (f"{name.split('/')[-1]:18s} {label:18s} {moved:7.2%} {c['structure']:10.2%} {c['lengths']:8.2%} {c['class']:7.2%} "
                   f"{c['stream']:7.2%} {c['dataflow']:9.2%}")
            if platform is not None:
                shifts.append(abs(cpi[j + 1] / cpi[0] - 1))
                rhos.append(rho[j + 1])
                row += f" {cpi[j + 1] / cpi[0] - 1:+7.2%} {rho[j + 1]:5.2f}"
            print(row, flush=True)
        ratio, r = max((max(r.realised / r.described, r.described / r.realised) if r.realised > 0 else np.inf, r)
                       for r in stream_shares(base) if r.described > 0)
        ratios.append(ratio)
        print(f"{'':18s} ({time.perf_counter() - t0:.1f} s; stream shares realised within {ratio:.2f}x of the "
              f"description, the furthest phase {r.phase}'s {r.kind}s to {r.stream}: {r.realised:.2%} for "
              f"{r.described:.2%})")
    print(f"median over the changes of the largest changed share: {np.median(worst):.2%}; "
          f"largest: {max(worst):.2%} [anchor: the moved share, at most {0.01 * 0.45:.2%}]")
    print(f"stream shares of the unchanged descriptions: realised within {np.median(ratios):.2f}x of the description "
          f"at the median, {max(ratios):.2f}x at the worst [anchor: 1x, the description's own weights]")
    if platform is not None:
        print(f"behaviour on {platform.name}: |CPI change| median {np.median(shifts):.2%}, largest {max(shifts):.2%}; "
              f"signature rho median {np.median(rhos):.2f}, below 0.8 in {sum(r < 0.8 - 1e-9 for r in rhos)} of "
              f"{len(rhos)} changes [anchor: the families check cuts the MST below rho 0.5 and wants ARI >= 0.9]")

if __name__ == "__main__":
    main()
