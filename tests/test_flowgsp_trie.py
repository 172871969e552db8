"""Candidate tries: shared prefixes, children indexed by their smallest attribute, depth-1 index."""

import numpy as np

from whatif.models.flowgsp.trie import build_trie

A, B, C, D = 0, 1, 2, 3


def test_trie_shares_prefixes_and_indexes_children():
    cands = [((A,), (B,)), ((A,), (C,)), ((A,), (B, C)), ((B,), (A,)), ((A, B),)]
    trie = build_trie(cands, 4)
    # nodes: <(A)>, <(A),(B)>, <(A),(C)>, <(A),(B,C)>, <(B)>, <(B),(A)>, <(A,B)>
    assert trie.n_nodes == 7 and trie.max_depth == 2
    root_a = 0
    kids = trie.child_ids[trie.child_ptr[root_a]:trie.child_ptr[root_a + 1]]
    assert sorted(trie.node_cand[kids].tolist()) == [0, 1, 2]
    assert trie.child_min[trie.child_ptr[root_a]:trie.child_ptr[root_a + 1]].tolist() == [B, B, C]
    assert trie.node_internal.tolist() == [True, False, False, False, True, False, False]
    # depth-1 nodes holding attribute A: <(A)> and <(A,B)>
    assert sorted(trie.d1_ids[trie.d1_ptr[A]:trie.d1_ptr[A + 1]].tolist()) == [0, 6]
    assert np.all(trie.node_words[6] == np.uint64(0b11))


def test_many_attributes_and_empty_trie():
    trie = build_trie([((3,), (130,)), ((3,), (70, 130))], 131)
    assert trie.node_words.shape == (3, 3)
    assert trie.node_words[2].tolist() == [0, 1 << 6, 1 << 2]
    empty = build_trie([], 4)
    assert empty.n_nodes == 0 and empty.max_depth == 0 and empty.d1_ptr.tolist() == [0] * 5
