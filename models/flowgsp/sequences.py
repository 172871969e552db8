"""Candidate sequences and their generation: the GSP join and prune steps (seed 001 §3.4.1, §3.4.3).

A sequence is a tuple of elements; an element is a non-empty tuple of attribute ids in ascending order,
e.g. ``((0,), (1, 4))`` for ⟨(A), (B, E)⟩.  Its *items* are its attributes in order, element after
element; generation ``n`` holds the sequences of ``n`` items.

* ``suffix(s)`` drops the first item, ``prefix(s)`` the last item (an element left empty disappears).
* ``s1`` joins ``s2`` when ``suffix(s1) == prefix(s2)``; the result is ``s1`` extended with the last item
  of ``s2``, as a new element if that item was an element of its own in ``s2``, else added to the last
  element of ``s1``.  Special case for one-item sequences: ⟨(A)⟩ with ⟨(B)⟩ gives ⟨(A),(B)⟩ and, for
  A < B, ⟨(A,B)⟩; ⟨(A)⟩ with itself gives ⟨(A),(A)⟩.
* Prune (GSP with a maximum-gap constraint): a candidate is dropped unless every *contiguous*
  sub-sequence with one item fewer is in the kept set of the previous generation — the sub-sequences
  obtained by dropping an item from the first element, from the last element, or from any element
  with at least two items.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

Seq = tuple[tuple[int, ...], ...]


def n_items(seq: Seq) -> int:
    return sum(len(e) for e in seq)


def items(seq: Seq) -> list[int]:
    return [a for e in seq for a in e]


def drop_first(seq: Seq) -> Seq:
    """The suffix: ``seq`` without its first item."""
    head = seq[0][1:]
    return ((head,) if head else ()) + tuple(seq[1:])


def drop_last(seq: Seq) -> Seq:
    """The prefix: ``seq`` without its last item."""
    tail = seq[-1][:-1]
    return tuple(seq[:-1]) + ((tail,) if tail else ())


def first_generation(n_attributes: int) -> list[Seq]:
    """G_1: one candidate per attribute."""
    return [((a,),) for a in range(n_attributes)]


def contiguous_subsequences(seq: Seq) -> list[Seq]:
    """The contiguous sub-sequences of ``seq`` with one item fewer (GSP, maximum-gap case)."""
    out: list[Seq] = []
    k = len(seq)
    for i, element in enumerate(seq):
        if i not in (0, k - 1) and len(element) < 2:
            continue
        for j in range(len(element)):
            rest = element[:j] + element[j + 1:]
            out.append(tuple(seq[:i]) + ((rest,) if rest else ()) + tuple(seq[i + 1:]))
    return out


def join(s1: Seq, s2: Seq) -> list[Seq]:
    """The candidates from joining ``s1`` with ``s2`` (empty when they are not compatible)."""
    if n_items(s1) == 1 and n_items(s2) == 1:
        a, b = s1[0][0], s2[0][0]
        out = [((a,), (b,))]
        if a < b:
            out.append(((a, b),))
        return out
    if drop_first(s1) != drop_last(s2):
        return []
    last = s2[-1][-1]
    if len(s2[-1]) == 1:
        return [tuple(s1) + ((last,),)]
    return [tuple(s1[:-1]) + (tuple(sorted(s1[-1] + (last,))),)]


def next_generation(kept: Iterable[Seq]) -> list[Seq]:
    """G_{n+1} from the kept sequences of G_n: GSP join, then prune; sorted and without duplicates."""
    kept = sorted(set(kept))
    if not kept:
        return []
    kept_set = set(kept)
    out: set[Seq] = set()
    if n_items(kept[0]) == 1:
        singles = [s[0][0] for s in kept]
        for a in singles:
            for b in singles:
                out.update(join(((a,),), ((b,),)))
        return sorted(out)  # every one-item sub-sequence is kept by construction
    by_prefix: dict[Seq, list[Seq]] = {}
    for s2 in kept:
        by_prefix.setdefault(drop_last(s2), []).append(s2)
    for s1 in kept:
        for s2 in by_prefix.get(drop_first(s1), ()):
            for cand in join(s1, s2):
                if cand not in out and all(sub in kept_set for sub in contiguous_subsequences(cand)):
                    out.add(cand)
    return sorted(out)


@dataclass(frozen=True)
class CandidateBatch:
    """Candidates flattened for the counting kernel.

    Candidate ``c`` has items ``item_attr[cand_ptr[c]:cand_ptr[c+1]]`` and ``item_elem`` gives the
    element index of each item within its candidate.
    """

    cand_ptr: np.ndarray
    item_attr: np.ndarray
    item_elem: np.ndarray

    @property
    def n_candidates(self) -> int:
        return len(self.cand_ptr) - 1


def encode(cands: Sequence[Seq]) -> CandidateBatch:
    ptr = np.zeros(len(cands) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([n_items(s) for s in cands])
    attrs = np.fromiter((a for s in cands for e in s for a in e), dtype=np.int64, count=int(ptr[-1]))
    elems = np.fromiter((i for s in cands for i, e in enumerate(s) for _ in e), dtype=np.int64, count=int(ptr[-1]))
    return CandidateBatch(cand_ptr=ptr, item_attr=attrs, item_elem=elems)


def format_sequence(seq: Sequence[Sequence[str]]) -> str:
    """⟨(A), (B, C)⟩ written with ASCII brackets: ``<(A), (B, C)>``."""
    return "<" + ", ".join("(" + ", ".join(e) + ")" for e in seq) + ">"
