"""The reference implementation: slow, plain Python, written directly from the definitions.

It is the oracle the fast implementation is tested against (and the slow side of the speed benchmark),
so it shares nothing with the fast path but the input EFG's raw arrays: it normalises the weights
itself, enumerates walks explicitly, checks containment by trying every cut of a walk into windows and
gaps, and generates candidates by comparing every pair of kept sequences.

Definitions (issue 6, "Semantics"):

* ``F(e) = freq(e) / sum freq``, ``W(v) = weight(v) / sum weight``; ``S_f(v)`` = sum of F over in-edges,
  or over out-edges when v has no in-edge.
* A walk ``p`` contains ``S = <s_0..s_{k-1}>`` when it can be cut into k windows of 1..w_max+1
  consecutive vertices, window i covering s_i, consecutive windows separated by 0..g_max vertices, the
  first window starting at p[0], the last ending at p[-1]; the first window is left-tight.
* From each start vertex every walk that contains S and has no proper prefix containing S counts once,
  with ``S_f(p) = min(S_f(p[0]), F of p's edges)`` and ``S_w(p) = min W over p's vertices``.
"""

from __future__ import annotations

from typing import Sequence

from whatif.models.flowgsp.graph import EFG

Seq = tuple[tuple[int, ...], ...]


class ReferenceGraph:
    """The EFG as Python lists: successors with F, attribute sets, W and S_f per vertex."""

    def __init__(self, efg: EFG):
        n = efg.n_vertices
        total_w = float(sum(float(x) for x in efg.weight))
        total_f = float(sum(float(x) for x in efg.edge_freq))
        self.W = [float(x) / total_w for x in efg.weight]
        self.attrs = [frozenset(int(a) for a in efg.attr_ids[efg.attr_ptr[v]:efg.attr_ptr[v + 1]]) for v in range(n)]
        self.succ: list[list[tuple[int, float]]] = [[] for _ in range(n)]
        f_in = [0.0] * n
        f_out = [0.0] * n
        has_in = [False] * n
        for s, d, f in zip(efg.edge_src, efg.edge_dst, efg.edge_freq):
            F = float(f) / total_f
            self.succ[int(s)].append((int(d), F))
            f_out[int(s)] += F
            f_in[int(d)] += F
            has_in[int(d)] = True
        self.Sf = [f_in[v] if has_in[v] else f_out[v] for v in range(n)]
        self.n = n


def _left_tight(window: Sequence[frozenset], s0: frozenset) -> bool:
    found: set[int] = set()
    for j, a in enumerate(window):
        if j > 0 and found <= a:
            return False  # a later vertex holds every attribute of s_0 found before it
        found |= a & s0
    return True


def contains(walk: Sequence[frozenset], seq: Seq, gap: int, window: int) -> bool:
    """Does the walk (given by its vertices' attribute sets) contain the sequence?  Tries every cut."""
    sets = [frozenset(e) for e in seq]
    k, n = len(sets), len(walk)
    if n == 0 or not (walk[0] & sets[0]):
        return False

    def cut(i: int, start: int) -> bool:
        for length in range(1, window + 2):
            end = start + length
            if end > n:
                break
            covered = frozenset().union(*walk[start:end])
            if not sets[i] <= covered:
                continue
            if i == 0 and not _left_tight(walk[start:end], sets[0]):
                continue
            if i == k - 1:
                if end == n:
                    return True
                continue
            for g in range(gap + 1):
                if end + g < n and cut(i + 1, end + g):
                    return True
        return False

    return cut(0, 0)


def max_walk_length(seq: Seq, gap: int, window: int) -> int:
    k = len(seq)
    return k * (window + 1) + (k - 1) * gap


def sequence_support(graph: ReferenceGraph, seq: Seq, gap: int, window: int) -> tuple[float, float]:
    """(S_f, S_w) of one sequence: every walk of bounded length from every start vertex is enumerated."""
    limit = max_walk_length(seq, gap, window)
    sf = 0.0
    sw = 0.0
    for v in range(graph.n):
        # depth-first over all walks from v; a walk that contains S is counted and not extended, because
        # every extension has a proper prefix (this walk) containing S
        stack = [([v], graph.Sf[v], graph.W[v])]
        while stack:
            walk, f, w = stack.pop()
            if contains([graph.attrs[x] for x in walk], seq, gap, window):
                sf += f
                sw += w
                continue
            if len(walk) == limit:
                continue
            for x, F in graph.succ[walk[-1]]:
                stack.append((walk + [x], min(f, F), min(w, graph.W[x])))
    return sf, sw


# ---------------------------------------------------------------------------- candidate generation
def _suffix(seq: Seq) -> list[list[int]]:
    lists = [list(e) for e in seq]
    lists[0].pop(0)
    return [e for e in lists if e]


def _prefix(seq: Seq) -> list[list[int]]:
    lists = [list(e) for e in seq]
    lists[-1].pop()
    return [e for e in lists if e]


def _canon(lists: list[list[int]]) -> Seq:
    return tuple(tuple(sorted(e)) for e in lists if e)


def reference_next_generation(kept: list[Seq]) -> list[Seq]:
    """GSP join of every ordered pair of kept sequences, then the contiguous-subsequence prune."""
    out: set[Seq] = set()
    kept_set = set(kept)
    for s1 in kept:
        for s2 in kept:
            if sum(map(len, s1)) == 1:
                a, b = s1[0][0], s2[0][0]
                out.add(((a,), (b,)))
                if a != b:
                    out.add(((min(a, b), max(a, b)),))
                continue
            if _suffix(s1) != _prefix(s2):
                continue
            last = s2[-1][-1]
            lists = [list(e) for e in s1]
            if len(s2[-1]) == 1:
                lists.append([last])
            else:
                lists[-1].append(last)
            out.add(_canon(lists))
    if kept and sum(map(len, kept[0])) == 1:
        return sorted(out)
    pruned = []
    for cand in out:
        ok = True
        for i, element in enumerate(cand):
            if 0 < i < len(cand) - 1 and len(element) < 2:
                continue
            for a in element:
                sub = [list(e) for e in cand]
                sub[i].remove(a)
                if _canon(sub) not in kept_set:
                    ok = False
        if ok:
            pruned.append(cand)
    return sorted(pruned)


def reference_mine(efg: EFG, gap: int, window: int, n_generations: int, min_support: float,
                   min_diff_support: float) -> dict[Seq, tuple[float, float]]:
    """All kept sequences with their (S_f, S_w), generation by generation."""
    graph = ReferenceGraph(efg)
    kept_all: dict[Seq, tuple[float, float]] = {}
    cands: list[Seq] = [((a,),) for a in range(efg.n_attributes)]
    for n in range(1, n_generations + 1):
        if not cands:
            break
        kept: list[Seq] = []
        for seq in cands:
            sf, sw = sequence_support(graph, seq, gap, window)
            if max(sf, sw) >= min_support or abs(sf - sw) >= min_diff_support:
                kept.append(seq)
                kept_all[seq] = (sf, sw)
        if n < n_generations:
            cands = reference_next_generation(kept)
    return kept_all


def all_supports(efg: EFG, cands: list[Seq], gap: int, window: int) -> dict[Seq, tuple[float, float]]:
    graph = ReferenceGraph(efg)
    return {s: sequence_support(graph, s, gap, window) for s in cands}


__all__ = ["ReferenceGraph", "contains", "sequence_support", "reference_next_generation", "reference_mine",
           "all_supports"]
