"""The statistics issue 49 fixed before its data (tandem/stats.py), on
made-up pairs: a paired bootstrap that fails with no difference and passes
with a clear one, seeds as a factor, and the same intervals on every run."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tandem import stats
from tandem.errors import TandemError


def _pairs(
    shift: float, seeds: int = 5, per_seed: int = 4, noise: float = 1.0
) -> dict[int, list[float]]:
    """Per seed, `per_seed` differences: `shift` plus noise (a fixed draw)."""
    rng = random.Random(7)
    return {s: [shift + rng.gauss(0, noise) for _ in range(per_seed)] for s in range(seeds)}


def test_no_difference_is_not_a_claim() -> None:
    test = stats.paired_test(_pairs(0.0), stats.ABOVE)
    assert test.enough
    assert test.pooled.low < 0 < test.pooled.high
    assert not test.holds
    assert not stats.paired_test(_pairs(0.0), stats.BELOW).holds


def test_a_clear_difference_is() -> None:
    up = stats.paired_test(_pairs(3.0), stats.ABOVE)
    assert up.holds and up.pooled.low > 0
    assert not stats.paired_test(_pairs(3.0), stats.BELOW).holds
    down = stats.paired_test(_pairs(-3.0), stats.BELOW)
    assert down.holds and down.pooled.high < 0


def test_a_threshold_other_than_zero() -> None:
    # A mean near 3: beyond 1, not beyond 3 or 5.
    assert stats.paired_test(_pairs(3.0), stats.ABOVE, 1.0).holds
    assert not stats.paired_test(_pairs(3.0), stats.ABOVE, 3.0).holds
    assert stats.paired_test(_pairs(3.0), stats.BELOW, 5.0).holds


def test_too_few_pairs_or_seeds_never_hold() -> None:
    few_pairs = stats.paired_test(_pairs(3.0, seeds=5, per_seed=3), stats.ABOVE)
    assert few_pairs.pairs == 15 and few_pairs.pooled.low > 0 and not few_pairs.holds
    few_seeds = stats.paired_test(_pairs(3.0, seeds=4, per_seed=10), stats.ABOVE)
    assert few_seeds.pairs == 40 and not few_seeds.holds
    assert "not judged" in few_seeds.words()


def test_a_difference_on_one_seed_only_is_not_pooled_and_is_named() -> None:
    # Seed 2 shows a large difference, the other four none at all: each
    # seed alone is tight, but resampling the seeds reaches 0.
    pairs = _pairs(0.0, noise=0.01)
    pairs[2] = [50.0 + x for x in pairs[2]]
    test = stats.paired_test(pairs, stats.ABOVE)
    assert test.seeds_holding() == [2]
    assert test.pooled.mean > 9
    assert not test.holds, test.pooled
    words = test.words(" µs")
    assert "holds on seed 2, not on seed 0, 1, 3, 4" in words
    assert "20 pairs over 5 seeds" in words and "10000 resamples" in words


def test_pooling_over_seeds_is_wider_than_over_pairs() -> None:
    # Seeds that shift the difference: the two-level interval is wider than
    # a one-level interval over all pairs pooled as if independent.
    pairs = {s: [1.0 + s + 0.01 * i for i in range(4)] for s in range(5)}
    flat = stats.one_level([d for ds in pairs.values() for d in ds])
    nested = stats.two_level(pairs)
    assert nested.high - nested.low > 1.5 * (flat.high - flat.low)
    assert nested.mean == pytest.approx(flat.mean)


def test_intervals_are_the_same_on_every_call_and_in_any_seed_order() -> None:
    pairs = _pairs(0.5)
    first = stats.paired_test(pairs, stats.ABOVE)
    reordered = {s: pairs[s] for s in reversed(list(pairs))}
    assert stats.paired_test(reordered, stats.ABOVE) == first
    random.seed(123)  # no global generator matters
    np.random.seed(123)
    assert stats.paired_test(pairs, stats.ABOVE) == first
    assert stats.one_level(pairs[0]) == stats.one_level(list(pairs[0]))


def test_the_interval_covers_a_known_mean() -> None:
    # 100 pairs of N(1, 1) on each of 5 seeds: the interval holds 1 and is
    # about the width the normal theory gives (2 x 1.96 / sqrt(500) ~ 0.18,
    # wider here for the seeds' draw).
    test = stats.paired_test(_pairs(1.0, per_seed=100), stats.ABOVE)
    assert test.pooled.low < 1.0 < test.pooled.high
    assert 0.05 < test.pooled.high - test.pooled.low < 0.5


def test_rows_pair_by_seed_and_repetition() -> None:
    a = {"runs_s": [1.0, 2.0, 3.0, 4.0, 9.0], "run_seeds": [0, 0, 1, 1, 2]}
    b = {"runs_s": [1.5, 2.5, 2.0, 3.0], "run_seeds": [0, 0, 1, 1]}
    diffs = stats.differences(stats.by_seed(a, "runs_s"), stats.by_seed(b, "runs_s"))
    assert diffs == {0: [0.5, 0.5], 1: [-1.0, -1.0]}
    rel = stats.differences(stats.by_seed(a, "runs_s"), stats.by_seed(b, "runs_s"), True)
    assert rel[0] == [0.5, 0.25]
    with pytest.raises(TandemError, match="not lists alike"):
        stats.by_seed({"runs_s": [1.0], "run_seeds": [0, 1]}, "runs_s")
    with pytest.raises(TandemError, match="against 0"):
        stats.differences({0: [0.0]}, {0: [1.0]}, relative=True)


def test_only_runs_that_declare_the_tests_get_them() -> None:
    assert stats.preregistered({"stats": stats.STATS_VERSION})
    assert not stats.preregistered({"quick": False})
    assert not stats.preregistered({"stats": "something else"})
