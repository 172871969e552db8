"""FlowGSP speed benchmark (issue 6).  Run from the repository root:

    python tests/benchmarks/bench_flowgsp.py            # all cases
    python tests/benchmarks/bench_flowgsp.py --case websphere-g0w0

Cases, each in a fresh process (so that its peak resident memory is its own):

* ``websphere-g0w0`` / ``websphere-g1w1``: a synthetic WebSphere-scale EFG (1,400 methods, ~103,000
  instruction vertices, ~30,000 basic blocks, ~43,000 inter-block edges, ~1.4 attributes per vertex from
  40 kinds) mined with n_gen = 10 and thresholds 0.01 on 2 worker threads; targets 60 s and 5 min.
  The thesis needed 30,717 s (1 thread) and 6,726 s (8 threads) for g = w = 0, 22,314 s for g = w = 1.
* ``dense-g0w0``: a stress variant with four times as many hardware-event attributes (~2.3 per vertex),
  g = w = 0 (with g = w = 1 its candidate generations grow past a million: GSP's thresholds, not the
  counting, are then the limit — the thesis too advises raising the threshold for larger gaps/windows).
* ``mine-out``: ``whatif mine`` of a 50-method synthetic profile (g = w = 1) as a user runs it, process
  start to exit, without and with ``--out`` (Parquet tables, results.json, figures, report.html); median
  of three runs each.  Goal (issue 16): ``--out`` adds at most 20 %, and results.json stays under 1 MB.
* ``reference-ratio``: the slow reference implementation and the fast one, side by side in one process,
  on a graph the reference mines in about a minute (g = w = 1, n_gen = 3); the kept sequences must agree.

Numba's compiled code is loaded (or compiled, on the very first run) before timing; the load time is
reported separately.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

WORKERS = 2


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _warm_up() -> float:
    from whatif.models.flowgsp import FlowGSP
    from whatif.models.flowgsp.synthetic import synthetic_efg

    t = time.perf_counter()
    FlowGSP(gap=1, window=1, n_generations=2, workers=1).fit(synthetic_efg(n_methods=2, seed=0))
    return time.perf_counter() - t


def case_websphere(gap: int, window: int, event_scale: float = 1.0) -> dict:
    from whatif.models.flowgsp import FlowGSP
    from whatif.models.flowgsp.profile_db import efg_from_tables
    from whatif.models.flowgsp.synthetic import WEBSPHERE_METHODS, profile_shape, synthetic_profile

    warm = _warm_up()
    t = time.perf_counter()
    tables = synthetic_profile(n_methods=WEBSPHERE_METHODS, seed=0, event_scale=event_scale)
    efg = efg_from_tables(tables, source="synthetic websphere")
    t_graph = time.perf_counter() - t
    rss_graph = _peak_rss_mb()
    t = time.perf_counter()
    res = FlowGSP(gap=gap, window=window, n_generations=10, min_support=0.01, min_diff_support=0.01,
                  workers=WORKERS).fit(efg)
    t_mine = time.perf_counter() - t
    return {"case": f"websphere-g{gap}w{window}", "event_scale": event_scale, "shape": profile_shape(tables), "graph": efg.describe(),
            "numba_load_s": warm, "graph_build_s": t_graph, "mine_s": t_mine, "workers": WORKERS,
            "peak_rss_mb": _peak_rss_mb(), "rss_after_graph_mb": rss_graph, "kept": len(res.sequences),
            "generations": [g.as_dict() for g in res.generations],
            "top": [s.text for s in res.sequences[:5]]}


def case_reference_ratio() -> dict:
    from whatif.models.flowgsp import FlowGSP
    from whatif.models.flowgsp.synthetic import synthetic_efg
    from whatif.models.flowgsp.reference import reference_mine

    warm = _warm_up()
    efg = synthetic_efg(n_methods=3, seed=1)
    params = dict(gap=1, window=1, n_generations=3, min_support=0.01, min_diff_support=0.01)
    fast_times = []
    for workers in (1, WORKERS):
        t = time.perf_counter()
        res = FlowGSP(workers=workers, **params).fit(efg)
        fast_times.append(time.perf_counter() - t)
    t = time.perf_counter()
    ref = reference_mine(efg, params["gap"], params["window"], params["n_generations"], params["min_support"],
                         params["min_diff_support"])
    t_ref = time.perf_counter() - t
    names = efg.attribute_names
    fast = {tuple(tuple(names.index(a) for a in e) for e in s.elements): (s.sf, s.sw) for s in res.sequences}
    agree = set(fast) == set(ref) and all(abs(fast[k][0] - v[0]) <= 1e-9 * max(1.0, abs(v[0])) and
                                          abs(fast[k][1] - v[1]) <= 1e-9 * max(1.0, abs(v[1]))
                                          for k, v in ref.items())
    return {"case": "reference-ratio", "vertices": efg.n_vertices, "edges": efg.n_edges, "numba_load_s": warm,
            "reference_s": t_ref, "fast_1_worker_s": fast_times[0], f"fast_{WORKERS}_workers_s": fast_times[1],
            "ratio_1_worker": t_ref / fast_times[0], "candidates": res.n_candidates, "kept": len(ref),
            "agree": agree, "peak_rss_mb": _peak_rss_mb()}


def case_mine_out(runs: int = 3) -> dict:
    import shutil
    import statistics
    import tempfile

    from whatif.models.flowgsp.formats import to_json_text
    from whatif.models.flowgsp.synthetic import synthetic_efg

    with tempfile.TemporaryDirectory(prefix="whatif-bench-") as tmp:
        profile = Path(tmp) / "websphere50.json"
        profile.write_text(to_json_text(synthetic_efg(n_methods=50, seed=0)))
        out = Path(tmp) / "results"
        cmd = [sys.executable, "-m", "whatif.cli", "mine", str(profile), "--gap", "1", "--window", "1"]
        subprocess.run(cmd, capture_output=True, check=True)            # numba's cache, the page cache
        plain, written = [], []
        for _ in range(runs):
            t = time.perf_counter()
            subprocess.run(cmd, capture_output=True, check=True)
            plain.append(time.perf_counter() - t)
            shutil.rmtree(out, ignore_errors=True)
            t = time.perf_counter()
            subprocess.run(cmd + ["--out", str(out)], capture_output=True, check=True)
            written.append(time.perf_counter() - t)
        results_json = (out / "results.json").stat().st_size
        files = sum(f.stat().st_size for f in out.iterdir())
        kept = json.loads((out / "results.json").read_text())["sequences_kept"]
    a, b = statistics.median(plain), statistics.median(written)
    return {"case": "mine-out", "plain_s": a, "out_s": b, "overhead_pct": 100.0 * (b - a) / a,
            "results_json_bytes": results_json, "directory_bytes": files, "kept": kept, "runs": runs}


CASES = {"websphere-g0w0": lambda: case_websphere(0, 0), "websphere-g1w1": lambda: case_websphere(1, 1),
         "dense-g0w0": lambda: case_websphere(0, 0, event_scale=4.0), "reference-ratio": case_reference_ratio,
         "mine-out": case_mine_out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=sorted(CASES), help="run one case in this process and print its JSON")
    args = ap.parse_args()
    if args.case:
        print(json.dumps(CASES[args.case]()))
        return
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for name in CASES:
        out = subprocess.run([sys.executable, __file__, "--case", name], capture_output=True, text=True, env=env,
                             cwd=ROOT, check=True)
        doc = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"== {name}")
        if "event_scale" in doc:
            s, g = doc["shape"], doc["graph"]
            print(f"   graph: {s['instructions']:,} instruction vertices, {s['basic_blocks']:,} basic blocks, "
                  f"{s['inter_block_edges']:,} inter-block edges, {s['methods']:,} methods, "
                  f"{g['attributes']} attribute kinds, {g['attributes_per_vertex']:.2f} attributes/vertex "
                  f"(event_scale {doc['event_scale']:g}; built in {doc['graph_build_s']:.1f} s)")
            print(f"   mined in {doc['mine_s']:.1f} s on {doc['workers']} workers "
                  f"(numba load {doc['numba_load_s']:.1f} s); peak RSS {doc['peak_rss_mb']:.0f} MB "
                  f"({doc['rss_after_graph_mb']:.0f} MB after building the graph); {doc['kept']:,} sequences kept")
            for gen in doc["generations"]:
                print(f"     gen {gen['n']:>2}: {gen['candidates']:>7,} candidates {gen['kept']:>7,} kept "
                      f"{gen['seconds']:8.2f} s")
            print(f"   top: {', '.join(doc['top'][:3])}")
        elif doc["case"] == "mine-out":
            print(f"   whatif mine (50 methods, g = w = 1, {doc['kept']:,} sequences kept): {doc['plain_s']:.2f} s; "
                  f"with --out {doc['out_s']:.2f} s: {doc['overhead_pct']:+.0f} % (goal <= +20 %); "
                  f"results.json {doc['results_json_bytes'] / 1e3:.0f} KB (goal < 1 MB), directory "
                  f"{doc['directory_bytes'] / 1e6:.1f} MB; median of {doc['runs']} runs each, process start to exit")
        else:
            print(f"   graph: {doc['vertices']} vertices, {doc['edges']} edges; g=w=1, n_gen=3, "
                  f"{doc['candidates']:,} candidates, {doc['kept']:,} kept")
            print(f"   reference {doc['reference_s']:.1f} s, fast {doc['fast_1_worker_s']:.3f} s (1 worker), "
                  f"{doc[f'fast_{WORKERS}_workers_s']:.3f} s ({WORKERS} workers): "
                  f"{doc['ratio_1_worker']:.0f}x; results agree: {doc['agree']}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
