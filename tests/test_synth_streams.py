"""Stream address machinery and calibration helpers: bijections, popularity tables, the weighted
deal of classes, expected trip counts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from whatif.simulator.synth.assign import systematic_deal, weighted_classes
from whatif.simulator.synth.streams import (alias_table, build_streams, next_u64, perm_walk, random_rank, zipf_table,
                                     zipf_weights)
from whatif.simulator.synth.structure import mean_floor
from whatif.simulator.workload import Stream


@given(st.integers(1, 5000), st.integers(0, 2 ** 63 - 1))
@settings(max_examples=40, deadline=None)
def test_perm_walk_is_a_bijection(n, salt):
    bits = int(np.ceil(np.log2(n))) if n > 1 else 0
    image = [perm_walk(np.int64(x), np.int64(n), np.int64(bits), np.uint64(salt)) for x in range(n)]
    assert sorted(image) == list(range(n))


def test_alias_table_reproduces_the_distribution():
    p = np.random.default_rng(0).random(50)
    p /= p.sum()
    prob, alias = alias_table(p)
    m = len(p)
    got = prob / m
    np.add.at(got, alias, (1 - prob) / m)
    assert np.allclose(got, p)


def test_zipf_weights_match_the_discrete_sums():
    lo, hi = np.array([0, 5, 100]), np.array([1, 6, 200])
    exact = np.array([sum((k + 1.0) ** -1.2 for k in range(a, b)) for a, b in zip(lo, hi)])
    assert np.allclose(zipf_weights(lo, hi, 1.2), exact, rtol=2e-3)


@pytest.mark.parametrize("skew", [0.6, 1.0, 1.4])
def test_random_ranks_follow_zipf(skew):
    n = 100_000
    lo, width, prob, alias = zipf_table(n, skew)
    assert lo[0] == 0 and (lo[1:] == lo[:-1] + width[:-1]).all() and lo[-1] + width[-1] == n
    rng = np.array([12345], dtype=np.uint64)
    draws = np.array([random_rank(np.int64(n), np.int64(0), np.int64(len(lo)), lo, width, prob, alias, rng)
                      for _ in range(200_000)])
    k = np.arange(n)
    p = (k + 1.0) ** -skew
    p /= p.sum()
    for r in (0, 1, 9):
        assert abs((draws == r).mean() - p[r]) < 4 * np.sqrt(p[r] / 200_000) + 1e-3
    assert abs((draws < 1000).mean() - p[:1000].sum()) < 0.01
    assert abs((draws >= 50_000).mean() - p[50_000:].sum()) < 0.01


def test_uniform_ranks():
    rng = np.array([7], dtype=np.uint64)
    z = np.zeros(0, np.int64)
    draws = np.array([random_rank(np.int64(10), np.int64(-1), np.int64(0), z, z, np.zeros(0), z, rng)
                      for _ in range(20_000)])
    assert set(draws) == set(range(10))
    assert np.abs(np.bincount(draws) / 20_000 - 0.1).max() < 0.015


def test_splitmix_is_deterministic_and_spread():
    a = np.array([1], dtype=np.uint64)
    b = np.array([1], dtype=np.uint64)
    xs = [int(next_u64(a)) for _ in range(1000)]
    assert xs == [int(next_u64(b)) for _ in range(1000)]
    bits = np.array([[(x >> i) & 1 for i in range(64)] for x in xs])
    assert np.abs(bits.mean(axis=0) - 0.5).max() < 0.08


def test_regions_do_not_overlap():
    streams = {"a": Stream(kind="sequential", footprint_kb=100), "b": Stream(kind="chase", footprint_kb=3000),
               "c": Stream(kind="random", footprint_kb=1, skew=1.0)}
    t = build_streams(streams, np.random.default_rng(0))
    ends = t.base + t.size.astype(np.uint64)
    assert (t.base[1:] >= ends[:-1] + np.uint64(1 << 21)).all()
    assert (t.base % np.uint64(1 << 21) == 0).all()
    assert t.zoff[2] == 0 and t.zoff[0] == -1


@given(st.lists(st.floats(0.01, 100.0), min_size=1, max_size=200),
       st.lists(st.floats(0.01, 1.0), min_size=2, max_size=6), st.integers(0, 2 ** 32))
@settings(max_examples=50, deadline=None)
def test_a_systematic_deal_keeps_each_class_within_one_item_of_its_share(weights, shares, seed):
    w = np.array(weights)
    q = np.array(shares) / sum(shares)
    cls = systematic_deal(w, np.random.default_rng(seed).random(len(w)), q)
    got = np.bincount(cls, weights=w, minlength=len(q))
    assert (np.abs(got - q * w.sum()) <= w.max() + 1e-9).all()


@given(st.lists(st.floats(0.0, 100.0), min_size=1, max_size=200),
       st.lists(st.sampled_from([0.0, 0.05, 0.2, 0.5, 1.0]), min_size=2, max_size=6), st.integers(0, 2 ** 32))
@settings(max_examples=80, deadline=None)
def test_weighted_classes_meet_the_shares_as_closely_as_the_heaviest_item_allows(weights, shares, seed):
    """A class is never more than one item over its weighted share (each tier fills what the heavier
    ones left short), so all of them are within (classes - 1) items; a class of share 0 gets nothing, also
    among the unreached items (weight 0)."""
    if sum(shares) == 0:
        shares = [1.0] + shares[1:]
    w = np.array(weights)
    q = np.array(shares) / sum(shares)
    cls = weighted_classes(w, np.random.default_rng(seed).random(len(w)), q)
    assert (q[cls] > 0).all()
    if w.sum() > 0:
        got = np.bincount(cls, weights=w, minlength=len(q))
        heaviest = w.max()
        assert (got - q * w.sum() <= heaviest * (1 + 1e-9)).all()
        assert (q * w.sum() - got <= (len(q) - 1) * heaviest * (1 + 1e-9)).all()


@given(st.lists(st.floats(0.01, 100.0), min_size=1, max_size=60), st.floats(1.01, 20.0),
       st.lists(st.sampled_from([0.001, 0.01, 0.05, 0.2, 0.5, 1.0]), min_size=2, max_size=6), st.integers(0, 2 ** 32))
@settings(max_examples=80, deadline=None)
def test_weighted_classes_never_give_a_rare_class_a_hot_item(light, hot_factor, shares, seed):
    """An item heavier than twice a class's whole share goes to the class lacking the most: an item of more
    than half the weight lands in the largest class or one whose share is at least half its weight, not in
    a rare class whose share the systematic deal's rounding happened to reach (gobmk's one hot load bound to
    its 0.22 % hash stream realised 8.8 times that share)."""
    w = np.array(light + [hot_factor * sum(light)])
    q = np.array(shares) / sum(shares)
    cls = weighted_classes(w, np.random.default_rng(seed).random(len(w)), q)
    c = cls[-1]
    assert q[c] == q.max() or 2.0 * q[c] * w.sum() >= w[-1]


def test_a_rare_class_takes_no_hot_item_whatever_the_keys():
    """A hot loop's twelve loads (4.2-6 % of the weight each, one tier; more than twice the rare share) among
    light ones, and a stream of 2 %: over 1000 keyings the rare stream never takes a hot load, and realises at
    most twice its share and one light item.  (The systematic deal alone gives it a hot load whenever a hot
    item's midpoint falls in its stretch: in 330 of these keyings.)"""
    rng = np.random.default_rng(11)
    hot = rng.uniform(4.2, 6.0, 12)
    w = np.concatenate([hot, rng.pareto(2.0, 300) + 0.05])
    w[12:] *= (100.0 - hot.sum()) / w[12:].sum()
    q = np.array([0.38, 0.02, 0.6])
    for _ in range(1000):
        cls = weighted_classes(w, rng.random(len(w)), q)
        assert (cls[:12] != 1).all()
        assert w[cls == 1].sum() <= 2.0 * q[1] * w.sum() + w[12:].max()


def test_weighted_classes_re_deal_few_items_when_a_share_moves_a_little():
    """Many light items and a few heavy ones (a hot loop): a share 1 % higher re-deals 0.6 % of the weight
    here (the item-by-item quota rule this replaced re-dealt 56 % of it, 64 % of the items)."""
    rng = np.random.default_rng(3)
    w = np.concatenate([np.full(20, 50.0), rng.pareto(2.0, 3000)])
    key = rng.random(len(w))
    q = np.array([0.41, 0.17, 0.02, 0.40])
    moved = q * np.array([1.01, 1.0, 1.0, 1.0])
    a, b = weighted_classes(w, key, q), weighted_classes(w, key, moved / moved.sum())
    assert w[a != b].sum() / w.sum() < 0.03


@given(st.floats(0.5, 200.0), st.floats(0.0, 200.0))
@settings(max_examples=60, deadline=None)
def test_mean_floor_closed_form(lo, width):
    u = (np.arange(20_000) + 0.5) / 20_000
    brute = np.maximum(1.0, np.floor(lo + width * u)).mean()
    assert abs(float(mean_floor(np.array([lo]), np.array([width]))[0]) - brute) < 2e-3 * max(1.0, width)
