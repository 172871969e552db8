"""The execution flow graph (EFG) of seed 001 §3.1: vertices with weights and attribute sets, edges with
frequencies, one single-entry single-exit region per method (§4.5).

Vertices of all methods are stored in one array, method after method; edges never leave their method.
Attributes are small integers indexing :attr:`EFG.attribute_names`.  Normalisation is over the whole graph:

* ``F(e) = frequency(e) / sum of all edge frequencies``
* ``W(v) = weight(v) / sum of all vertex weights``
* ``S_f(v) = sum of F over the in-edges of v``; a vertex without in-edges (a method entry) uses the sum
  over its out-edges (flow conservation with a virtual entry edge).

Duplicate edges (the same ordered pair of vertices listed twice) are merged by adding their frequencies:
a walk is a sequence of vertices, so two parallel edges are one step of flow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from whatif.models.errors import ModelInputError

#: Vertices per work chunk (chunks are whole methods; the split depends on the graph only, never on the
#: number of workers, so that every executor sums the same partial results in the same order).
CHUNK_VERTICES = 4096


@dataclass(frozen=True)
class GraphChunk:
    """The arrays one worker needs to count supports in a range of whole methods (local vertex numbers).

    ``attr_words[v, w]`` is the attribute bitset of vertex ``v`` (bit ``a & 63`` of word ``a >> 6``);
    ``vattr_ptr``/``vattr_ids`` lists the same attributes (CSR).
    """

    indptr: np.ndarray
    indices: np.ndarray
    edge_f: np.ndarray
    vertex_w: np.ndarray
    vertex_sf: np.ndarray
    attr_words: np.ndarray
    vattr_ptr: np.ndarray
    vattr_ids: np.ndarray

    @property
    def n_vertices(self) -> int:
        return len(self.indptr) - 1


@dataclass(frozen=True, eq=False)
class EFG:
    """An execution flow graph.  Build it with :meth:`from_methods` (validates) or a reader.

    Raw (un-normalised) weights and frequencies are kept; normalised quantities are cached properties.
    """

    attribute_names: tuple[str, ...]
    method_names: tuple[str, ...]
    method_ptr: np.ndarray      # int64[n_methods + 1]: vertices of method m are method_ptr[m]:method_ptr[m+1]
    vertex_ids: np.ndarray      # int64[n]: the id of each vertex within its method
    weight: np.ndarray          # float64[n]: raw vertex weights (sampling ticks)
    attr_ptr: np.ndarray        # int64[n + 1]: attributes of v are attr_ids[attr_ptr[v]:attr_ptr[v+1]]
    attr_ids: np.ndarray        # int32: ascending and distinct per vertex
    edge_src: np.ndarray        # int64[m]: global vertex index, sorted by (src, dst), no duplicates
    edge_dst: np.ndarray        # int64[m]
    edge_freq: np.ndarray       # float64[m]: raw edge frequencies
    source: str = "<memory>"

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_methods(cls, methods: Sequence[Mapping[str, Any]], source: str = "<memory>",
                     attribute_names: Sequence[str] | None = None) -> "EFG":
        """Build and validate an EFG from the interchange structure
        ``[{"name": str, "vertices": [{"id", "weight", "attributes"}], "edges": [[src, dst, freq]]}]``.

        Attribute ids are assigned in sorted name order unless ``attribute_names`` fixes them.
        Errors name ``source`` and the position (``methods[i].edges[j]``) of the offending item.
        """
        if not isinstance(methods, (list, tuple)):
            raise ModelInputError(f"{source}: 'methods' must be a list of methods")
        names: list[str] = []
        vids: list[int] = []
        weights: list[float] = []
        vattrs: list[list[str]] = []
        src: list[int] = []
        dst: list[int] = []
        freq: list[float] = []
        mptr = [0]
        for mi, meth in enumerate(methods):
            where = f"{source}: methods[{mi}]"
            if not isinstance(meth, Mapping):
                raise ModelInputError(f"{where}: must be an object with 'name', 'vertices' and 'edges'")
            for key in ("vertices", "edges"):
                if not isinstance(meth.get(key), list):
                    raise ModelInputError(f"{where}: '{key}' must be a list")
            name = meth.get("name", f"method{mi}")
            if not isinstance(name, str):
                raise ModelInputError(f"{where}.name: must be a string, got {name!r}")
            base = mptr[-1]
            local: dict[int, int] = {}
            for vi, vert in enumerate(meth["vertices"]):
                vwhere = f"{where}.vertices[{vi}]"
                if not isinstance(vert, Mapping):
                    raise ModelInputError(f"{vwhere}: must be an object with 'id', 'weight' and 'attributes'")
                vid = vert.get("id")
                if not _is_int(vid):
                    raise ModelInputError(f"{vwhere}.id: must be a 64-bit integer, got {_brief(vid)}")
                if vid in local:
                    raise ModelInputError(f"{vwhere}.id: duplicate vertex id {vid} in method {_brief(name)}")
                w = vert.get("weight", 0)
                if not _is_finite_number(w) or w < 0:
                    raise ModelInputError(f"{vwhere}.weight: must be a non-negative number, got {_brief(w)}"
                                      f"{_why_not(w)}")
                attrs = vert.get("attributes", [])
                if not isinstance(attrs, list) or not all(isinstance(a, str) and a for a in attrs):
                    raise ModelInputError(f"{vwhere}.attributes: must be a list of non-empty strings, got {_brief(attrs)}")
                local[int(vid)] = base + len(local)
                vids.append(int(vid))
                weights.append(float(w))
                vattrs.append(attrs)
            for ei, edge in enumerate(meth["edges"]):
                ewhere = f"{where}.edges[{ei}]"
                if not isinstance(edge, (list, tuple)) or len(edge) != 3:
                    raise ModelInputError(f"{ewhere}: must be [src_id, dst_id, frequency], got {_brief(edge)}")
                s, d, f = edge
                for role, vid in (("source", s), ("target", d)):
                    if not _is_int(vid):
                        raise ModelInputError(f"{ewhere}: {role} id must be a 64-bit integer, got {_brief(vid)}")
                    if vid not in local:
                        raise ModelInputError(f"{ewhere}: edge to unknown vertex {vid} ({role}) in method {name!r}")
                if not _is_finite_number(f) or f < 0:
                    raise ModelInputError(f"{ewhere}: frequency must be a non-negative number, got "
                                      f"{_brief(f)}{_why_not(f)}")
                src.append(local[s])
                dst.append(local[d])
                freq.append(float(f))
            names.append(name)
            mptr.append(base + len(local))
        present = sorted({a for attrs in vattrs for a in attrs})
        if attribute_names is None:
            attribute_names = present
        index = {a: i for i, a in enumerate(attribute_names)}
        missing = [a for a in present if a not in index]
        if missing:
            raise ModelInputError(f"{source}: attribute {missing[0]!r} is not among the declared attribute names")
        attr_ptr = np.zeros(len(vattrs) + 1, dtype=np.int64)
        attr_ptr[1:] = np.cumsum([len(set(a)) for a in vattrs])
        attr_ids = np.fromiter((index[a] for attrs in vattrs for a in sorted(set(attrs), key=index.__getitem__)),
                               dtype=np.int32, count=int(attr_ptr[-1]))
        return cls.from_arrays(attribute_names=tuple(attribute_names), method_names=tuple(names),
                               method_ptr=np.asarray(mptr, dtype=np.int64),
                               vertex_ids=np.asarray(vids, dtype=np.int64), weight=np.asarray(weights, dtype=float),
                               attr_ptr=attr_ptr, attr_ids=attr_ids, edge_src=np.asarray(src, dtype=np.int64),
                               edge_dst=np.asarray(dst, dtype=np.int64), edge_freq=np.asarray(freq, dtype=float),
                               source=source)

    @classmethod
    def from_arrays(cls, *, attribute_names: Sequence[str], method_names: Sequence[str], method_ptr, vertex_ids,
                    weight, attr_ptr, attr_ids, edge_src, edge_dst, edge_freq, source: str = "<memory>") -> "EFG":
        """Build from arrays (global vertex indices): merges duplicate edges, checks the whole-graph rules."""
        method_ptr = np.asarray(method_ptr, dtype=np.int64)
        n = int(method_ptr[-1]) if len(method_ptr) else 0
        weight = np.asarray(weight, dtype=float)
        edge_src = np.asarray(edge_src, dtype=np.int64)
        edge_dst = np.asarray(edge_dst, dtype=np.int64)
        edge_freq = np.asarray(edge_freq, dtype=float)
        if len(weight) != n or len(vertex_ids) != n or len(attr_ptr) != n + 1:
            raise ModelInputError(f"{source}: vertex arrays disagree in length")
        if np.any(~np.isfinite(weight)) or np.any(weight < 0):
            bad = int(np.flatnonzero(~(weight >= 0) | ~np.isfinite(weight))[0])
            raise ModelInputError(f"{source}: vertex {_describe(method_names, method_ptr, vertex_ids, bad)} "
                                  f"has weight {float(weight[bad])}; weights must be non-negative numbers")
        if np.any(~np.isfinite(edge_freq)) or np.any(edge_freq < 0):
            bad = int(np.flatnonzero(~(edge_freq >= 0) | ~np.isfinite(edge_freq))[0])
            raise ModelInputError(f"{source}: edge {bad} has frequency {float(edge_freq[bad])}; "
                                  "frequencies must be non-negative numbers")
        if len(edge_src) and (edge_src.min() < 0 or edge_dst.min() < 0 or max(edge_src.max(), edge_dst.max()) >= n):
            raise ModelInputError(f"{source}: an edge refers to an unknown vertex")
        if len(edge_src):
            msrc = np.searchsorted(method_ptr, edge_src, side="right")
            mdst = np.searchsorted(method_ptr, edge_dst, side="right")
            if np.any(msrc != mdst):
                bad = int(np.flatnonzero(msrc != mdst)[0])
                raise ModelInputError(f"{source}: edge {bad} leaves its method "
                                      f"({_describe(method_names, method_ptr, vertex_ids, int(edge_src[bad]))} -> "
                                      f"{_describe(method_names, method_ptr, vertex_ids, int(edge_dst[bad]))})")
        if len(edge_src) == 0:
            raise ModelInputError(f"{source}: the graph has no edges; FlowGSP needs edge frequencies")
        with np.errstate(over="ignore"):
            totals = {"edge frequencies": edge_freq.sum(), "vertex weights": weight.sum()}
        for what, values in (("edge frequencies", edge_freq), ("vertex weights", weight)):
            if not totals[what] > 0:
                raise ModelInputError(f"{source}: all {what} are zero; they cannot be normalised")
            if not np.isfinite(totals[what]):
                raise ModelInputError(f"{source}: the {what} sum to more than a float64 holds "
                                      f"(largest {float(values.max()):g}); they cannot be normalised")
        # merge duplicate (src, dst) pairs, sort by (src, dst)
        key = edge_src * max(n, 1) + edge_dst
        uniq, inverse = np.unique(key, return_inverse=True)
        merged = np.zeros(len(uniq))
        np.add.at(merged, inverse, edge_freq)
        return cls(attribute_names=tuple(attribute_names), method_names=tuple(method_names), method_ptr=method_ptr,
                   vertex_ids=np.asarray(vertex_ids, dtype=np.int64), weight=weight,
                   attr_ptr=np.asarray(attr_ptr, dtype=np.int64), attr_ids=np.asarray(attr_ids, dtype=np.int32),
                   edge_src=uniq // max(n, 1), edge_dst=uniq % max(n, 1), edge_freq=merged, source=source)

    # ------------------------------------------------------------------ sizes
    @property
    def n_vertices(self) -> int:
        return len(self.weight)

    @property
    def n_edges(self) -> int:
        return len(self.edge_src)

    @property
    def n_methods(self) -> int:
        return len(self.method_names)

    @property
    def n_attributes(self) -> int:
        return len(self.attribute_names)

    def vertex_attributes(self, v: int) -> tuple[str, ...]:
        return tuple(self.attribute_names[a] for a in self.attr_ids[self.attr_ptr[v]:self.attr_ptr[v + 1]])

    def describe(self) -> dict[str, Any]:
        """Sizes and attribute statistics (for summaries and manifests)."""
        counts = np.bincount(self.attr_ids, minlength=self.n_attributes) if self.n_attributes else np.zeros(0)
        return {"methods": self.n_methods, "vertices": self.n_vertices, "edges": self.n_edges,
                "attributes": self.n_attributes,
                "attributes_per_vertex": float(len(self.attr_ids) / max(self.n_vertices, 1)),
                "most_common_attributes": [(self.attribute_names[i], int(counts[i]))
                                           for i in np.argsort(-counts, kind="stable")[:5]]}

    # ------------------------------------------------------------------ normalised quantities
    @cached_property
    def W(self) -> np.ndarray:
        """Normalised vertex weights (sum 1)."""
        return self.weight / self.weight.sum()

    @cached_property
    def F(self) -> np.ndarray:
        """Normalised edge frequencies (sum 1), aligned with ``edge_src``/``edge_dst``."""
        return self.edge_freq / self.edge_freq.sum()

    @cached_property
    def Sf_vertex(self) -> np.ndarray:
        """S_f(v): sum of F over in-edges; over out-edges for a vertex without in-edges."""
        n = self.n_vertices
        f_in = np.bincount(self.edge_dst, weights=self.F, minlength=n)
        f_out = np.bincount(self.edge_src, weights=self.F, minlength=n)
        has_in = np.bincount(self.edge_dst, minlength=n) > 0
        return np.where(has_in, f_in, f_out)

    @cached_property
    def indptr(self) -> np.ndarray:
        """CSR row pointer over ``edge_src`` (edges are sorted by source)."""
        ptr = np.zeros(self.n_vertices + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.edge_src, minlength=self.n_vertices), out=ptr[1:])
        return ptr

    @cached_property
    def attr_words(self) -> np.ndarray:
        """Attribute bitsets, uint64[n_vertices, ceil(n_attributes / 64)]."""
        nw = max(1, (self.n_attributes + 63) // 64)
        words = np.zeros((self.n_vertices, nw), dtype=np.uint64)
        owner = np.repeat(np.arange(self.n_vertices), np.diff(self.attr_ptr))
        a = self.attr_ids.astype(np.int64)
        np.bitwise_or.at(words, (owner, a >> 6), np.left_shift(np.uint64(1), (a & 63).astype(np.uint64)))
        return words

    # ------------------------------------------------------------------ work division
    def chunk_bounds(self, target_vertices: int = CHUNK_VERTICES) -> list[tuple[int, int]]:
        """Ranges of whole methods holding about ``target_vertices`` vertices each (graph-determined)."""
        bounds: list[tuple[int, int]] = []
        lo = 0
        for m in range(self.n_methods):
            hi = int(self.method_ptr[m + 1])
            if hi - lo >= target_vertices:
                bounds.append((lo, hi))
                lo = hi
        if lo < self.n_vertices or not bounds:
            bounds.append((lo, self.n_vertices))
        return bounds

    def chunk(self, lo: int, hi: int) -> GraphChunk:
        """The arrays of vertices ``lo:hi`` (whole methods), renumbered from zero."""
        e_lo, e_hi = int(self.indptr[lo]), int(self.indptr[hi])
        attr_words = np.ascontiguousarray(self.attr_words[lo:hi])
        a_lo = int(self.attr_ptr[lo])
        return GraphChunk(indptr=self.indptr[lo:hi + 1] - e_lo, indices=self.edge_dst[e_lo:e_hi] - lo,
                          edge_f=self.F[e_lo:e_hi].copy(), vertex_w=self.W[lo:hi].copy(),
                          vertex_sf=self.Sf_vertex[lo:hi].copy(), attr_words=attr_words,
                          vattr_ptr=self.attr_ptr[lo:hi + 1] - a_lo,
                          vattr_ids=self.attr_ids[a_lo:int(self.attr_ptr[hi])].astype(np.int64))

    def chunks(self, target_vertices: int = CHUNK_VERTICES) -> list[GraphChunk]:
        return [self.chunk(lo, hi) for lo, hi in self.chunk_bounds(target_vertices)]

    # ------------------------------------------------------------------ interchange
    def to_methods(self) -> list[dict[str, Any]]:
        """The interchange structure (inverse of :meth:`from_methods`)."""
        out = []
        for m, name in enumerate(self.method_names):
            lo, hi = int(self.method_ptr[m]), int(self.method_ptr[m + 1])
            verts = [{"id": int(self.vertex_ids[v]), "weight": _plain(self.weight[v]),
                      "attributes": list(self.vertex_attributes(v))} for v in range(lo, hi)]
            e_lo, e_hi = int(self.indptr[lo]), int(self.indptr[hi])
            edges = [[int(self.vertex_ids[self.edge_src[e]]), int(self.vertex_ids[self.edge_dst[e]]),
                      _plain(self.edge_freq[e])] for e in range(e_lo, e_hi)]
            out.append({"name": name, "vertices": verts, "edges": edges})
        return out

    def with_extra_attributes(self, extra: Mapping[int, Iterable[str]]) -> "EFG":
        """A copy in which vertex ``v`` (global index) also holds the attributes ``extra[v]``."""
        names = list(self.attribute_names)
        index = {a: i for i, a in enumerate(names)}
        for a in sorted({a for attrs in extra.values() for a in attrs} - set(index)):
            index[a] = len(names)
            names.append(a)
        lists = [list(self.attr_ids[self.attr_ptr[v]:self.attr_ptr[v + 1]]) for v in range(self.n_vertices)]
        for v, attrs in extra.items():
            lists[v] = sorted(set(lists[v]) | {index[a] for a in attrs})
        attr_ptr = np.zeros(self.n_vertices + 1, dtype=np.int64)
        attr_ptr[1:] = np.cumsum([len(x) for x in lists])
        attr_ids = np.fromiter((a for x in lists for a in x), dtype=np.int32, count=int(attr_ptr[-1]))
        return EFG.from_arrays(attribute_names=names, method_names=self.method_names, method_ptr=self.method_ptr,
                               vertex_ids=self.vertex_ids, weight=self.weight, attr_ptr=attr_ptr, attr_ids=attr_ids,
                               edge_src=self.edge_src, edge_dst=self.edge_dst, edge_freq=self.edge_freq,
                               source=self.source)


_INT64 = np.iinfo(np.int64)


def _why_not(x: object) -> str:
    """Why a non-negative value is still refused (for messages)."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool) and x > 0:
        return " (an integer count must be below 2**63)"
    return ""


def _brief(x: object, limit: int = 60) -> str:
    """``repr(x)`` for a message, a huge one shortened (a JSON integer may have thousands of digits)."""
    text = repr(x.item() if isinstance(x, np.generic) else x)
    return text if len(text) <= limit else f"{text[:limit - 12]}... ({len(text)} characters)"


def _is_int(x: object) -> bool:
    """An integer that fits the int64 arrays (JSON integers are unbounded)."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool) and _INT64.min <= x <= _INT64.max


def _is_finite_number(x: object) -> bool:
    """A finite float, or an integer count that fits 64 bits (JSON integers are unbounded)."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return _is_int(x)
    if not isinstance(x, (float, np.floating)):
        return False
    try:
        return math.isfinite(float(x))
    except OverflowError:
        return False


def _plain(x: float) -> float | int:
    return int(x) if float(x).is_integer() else float(x)


def _describe(method_names, method_ptr, vertex_ids, v: int) -> str:
    m = int(np.searchsorted(method_ptr, v, side="right")) - 1
    return f"{int(vertex_ids[v])} of method {method_names[m]!r}"
