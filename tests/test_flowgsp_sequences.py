"""GSP candidate generation: join (with the one-item special case), contiguous prune, trie flattening."""

from hypothesis import given, settings, strategies as st

from whatif.models.flowgsp.reference import reference_next_generation
from whatif.models.flowgsp.sequences import (contiguous_subsequences, drop_first, drop_last, first_generation,
                                      format_sequence, join, next_generation)

A, B, C, D = 0, 1, 2, 3


def test_suffix_and_prefix_drop_items_not_elements():
    assert drop_first(((A, B), (C,))) == ((B,), (C,))     # thesis §3.4.3
    assert drop_last(((A, B), (C,))) == ((A, B),)
    assert drop_first(((A,), (B, C))) == ((B, C),)


def test_join_examples_of_the_thesis():
    assert join(((A, B), (C,)), ((B,), (C,), (D,))) == [((A, B), (C,), (D,))]
    assert join(((A, B), (C,)), ((B,), (C, D))) == [((A, B), (C, D))]
    assert join(((A, B), (C,)), ((A, B), (D,))) == []       # suffix <(B),(C)> != prefix <(A,B)>
    assert join(((A,), (B,)), ((B, C),)) == [((A,), (B, C))]


def test_one_item_special_case():
    assert sorted(join(((A,),), ((B,),))) == [((A,), (B,)), ((A, B),)]
    assert join(((A,),), ((A,),)) == [((A,), (A,))]
    assert join(((B,),), ((A,),)) == [((B,), (A,))]
    assert next_generation(first_generation(2)) == [((A,), (A,)), ((A,), (B,)), ((A, B),), ((B,), (A,)), ((B,), (B,))]


def test_contiguous_subsequences():
    assert sorted(contiguous_subsequences(((A,), (B,), (C,)))) == [((A,), (B,)), ((B,), (C,))]
    assert sorted(contiguous_subsequences(((A,), (B, C), (D,)))) == sorted(
        [((B, C), (D,)), ((A,), (B, C)), ((A,), (C,), (D,)), ((A,), (B,), (D,))])


def test_prune_drops_candidates_with_a_missing_contiguous_subsequence():
    assert next_generation([((A,), (B,)), ((B,), (C,))]) == [((A,), (B,), (C,))]
    assert next_generation([((A,), (B,), (C,)), ((B,), (C,), (D,))]) == [((A,), (B,), (C,), (D,))]
    # <(A),(B,C),(D)> needs its contiguous sub-sequences <(A),(C),(D)> and <(A),(B),(D)> as well
    joined = [((A,), (B, C)), ((B, C), (D,))]
    assert next_generation(joined) == []
    assert next_generation(joined + [((A,), (C,), (D,))]) == []
    assert next_generation(joined + [((A,), (C,), (D,)), ((A,), (B,), (D,))]) == [((A,), (B, C), (D,))]


sequences = st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=2).map(lambda e: tuple(sorted(set(e)))),
                     min_size=1, max_size=3).map(tuple)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(st.lists(sequences, min_size=1, max_size=25), st.integers(1, 4))
def test_next_generation_matches_the_pairwise_reference(seqs, n):
    same = [s for s in seqs if sum(map(len, s)) == n] or [((A,),)]
    n_items = sum(map(len, same[0]))
    kept = sorted({s for s in same if sum(map(len, s)) == n_items})
    assert next_generation(kept) == reference_next_generation(kept)


def test_format_sequence():
    assert format_sequence((("A",), ("B", "C"))) == "<(A), (B, C)>"
