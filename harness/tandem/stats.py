"""The statistics issue 49 fixes before its data: paired differences with a
bootstrap interval, over Linux's seeds.

A claim that one cell is faster, slower, higher or lower than another (or
"beyond the spread") is judged on pairs: two boots of the two cells with
the same Linux seed (the device tree's rng-seed and kaslr-seed,
tandem/platform/dtb.py) and the same repetition (the same start phase,
exp/common.rep_phase_us), run back to back. Each pair gives one difference;
the claim holds when the 95 % bootstrap interval of the differences' mean
lies on the claimed side of its threshold (0, or the claim's own bound),
and only with at least MIN_PAIRS pairs over at least MIN_SEEDS seeds.

Linux's randomness is a factor, not noise to average away: a seed moves a
whole boot (lhp's threshold read 81-348 µs over seeds,
results/lhp/probe-20261127-seeds/). So the pooled interval is a two-level
bootstrap: each resample draws the seeds with replacement, then each drawn
seed's pairs with replacement, and takes the mean of the seeds' means. A
difference that only one seed shows gets an interval that reaches 0. Each
seed is also judged on its own pairs (a one-level bootstrap) and the words
say on which seeds the claim holds and on which not.

Deterministic: every interval draws from its own generator, numpy's PCG64
seeded with SEED (numpy as harness/requirements.lock pins it), the seeds in
sorted order, so a report and the claims table regenerate the same
intervals. These constants are the pre-registration: changing one after a
run was judged by it changes that run's verdicts, which issue 49 forbids
(keep both verdicts in the report instead).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from tandem.errors import TandemError

# The version a run's summary declares (`"stats": STATS_VERSION`) to be
# judged by these tests; runs without it keep the tests they were judged by.
STATS_VERSION = "issue-49"
LEVEL = 0.95
RESAMPLES = 10_000
SEED = 49
MIN_PAIRS = 20
MIN_SEEDS = 5

ABOVE = "above"
BELOW = "below"

# Paired samples: per Linux seed, one difference per pair, in run order.
Pairs = Mapping[int, Sequence[float]]


@dataclass(frozen=True)
class Interval:
    """A mean and its bootstrap interval."""

    mean: float
    low: float
    high: float

    def beyond(self, threshold: float, side: str) -> bool:
        """Whether the whole interval lies `side` (ABOVE or BELOW) of
        `threshold`: a strict inequality, so a point interval on the
        threshold does not."""
        if side == ABOVE:
            return self.low > threshold
        if side == BELOW:
            return self.high < threshold
        raise TandemError(f"side {side!r} is neither {ABOVE!r} nor {BELOW!r}")


@dataclass(frozen=True)
class PairedTest:
    """A paired claim judged: the pooled interval over seeds, each seed's
    own, and whether the pooled one lies beyond the threshold."""

    pooled: Interval
    per_seed: dict[int, Interval]
    pairs: int
    threshold: float
    side: str

    @property
    def enough(self) -> bool:
        """At least MIN_PAIRS pairs over at least MIN_SEEDS seeds."""
        return self.pairs >= MIN_PAIRS and len(self.per_seed) >= MIN_SEEDS

    @property
    def holds(self) -> bool:
        """The claim's verdict: enough pairs and the pooled interval
        beyond the threshold."""
        return self.enough and self.pooled.beyond(self.threshold, self.side)

    def seeds_holding(self) -> list[int]:
        """The seeds on whose own pairs the interval lies beyond the
        threshold."""
        return [s for s, i in self.per_seed.items() if i.beyond(self.threshold, self.side)]

    def words(self, unit: str = "", digits: int = 2, percent: bool = False) -> str:
        """The test for the claims table: mean, interval, pairs, seeds,
        and which seeds hold (percent: fractions written as %)."""

        def f(x: float) -> str:
            if percent:
                return f"{100 * x:+.{digits}f} %"
            return f"{x:+.{digits}f}{unit}"

        p = self.pooled
        text = (
            f"mean {f(p.mean)}, 95 % interval {f(p.low)} to {f(p.high)} "
            f"({self.pairs} pairs over {len(self.per_seed)} seeds, {RESAMPLES} resamples)"
        )
        if not self.enough:
            text += f"; fewer than {MIN_PAIRS} pairs or {MIN_SEEDS} seeds: not judged"
        held = self.seeds_holding()
        missed = [s for s in self.per_seed if s not in held]
        if held and missed:
            text += (
                f"; holds on seed {', '.join(map(str, held))}, "
                f"not on seed {', '.join(map(str, missed))}"
            )
        elif self.per_seed:
            text += "; holds on every seed" if held else "; holds on no seed alone"
        return text


def _percentiles(values: np.ndarray) -> tuple[float, float]:
    ordered = np.sort(values)
    tail = (1 - LEVEL) / 2
    last = len(ordered) - 1
    return float(ordered[round(tail * last)]), float(ordered[round((1 - tail) * last)])


def _generator() -> np.random.Generator:
    """A fresh generator per interval: the same draws on every call."""
    return np.random.Generator(np.random.PCG64(SEED))


def one_level(differences: Sequence[float]) -> Interval:
    """The bootstrap interval of the mean of one seed's differences."""
    if not differences:
        raise TandemError("a bootstrap interval needs at least one pair")
    values = np.asarray(differences, dtype=float)
    n = len(values)
    means = values[_generator().integers(0, n, size=(RESAMPLES, n))].mean(axis=1)
    low, high = _percentiles(means)
    return Interval(float(values.mean()), low, high)


def two_level(pairs: Pairs) -> Interval:
    """The bootstrap interval of the mean over seeds of each seed's mean
    difference: seeds drawn with replacement, then each drawn seed's pairs."""
    seeds = sorted(s for s, d in pairs.items() if d)
    if not seeds:
        raise TandemError("a bootstrap interval needs at least one pair")
    by_seed = [np.asarray(pairs[s], dtype=float) for s in seeds]
    rng = _generator()
    drawn = rng.integers(0, len(by_seed), size=(RESAMPLES, len(by_seed)))
    slot_means = np.empty(drawn.shape)
    for j, values in enumerate(by_seed):
        slots = drawn == j
        picks = rng.integers(0, len(values), size=(int(slots.sum()), len(values)))
        slot_means[slots] = values[picks].mean(axis=1)
    low, high = _percentiles(slot_means.mean(axis=1))
    return Interval(float(np.mean([v.mean() for v in by_seed])), low, high)


def paired_test(pairs: Pairs, side: str, threshold: float = 0.0) -> PairedTest:
    """Judges paired differences (per seed): the claim holds when the
    pooled interval lies `side` of `threshold`."""
    kept = {s: list(pairs[s]) for s in sorted(pairs) if pairs[s]}
    if not kept:
        raise TandemError("a paired test needs at least one pair")
    return PairedTest(
        pooled=two_level(kept),
        per_seed={s: one_level(d) for s, d in kept.items()},
        pairs=sum(len(d) for d in kept.values()),
        threshold=threshold,
        side=side,
    )


def preregistered(summary: Mapping[str, object]) -> bool:
    """Whether a run's summary declares these tests (issue 49's runs), so
    its claims are judged by them; older runs keep their own tests."""
    return summary.get("stats") == STATS_VERSION


def by_seed(row: Mapping[str, object], key: str) -> dict[int, list[float]]:
    """A summary row's per-boot values `key` (a list, in run order) grouped
    by the Linux seed of each boot (`run_seeds`, as long): issue 49's rows
    carry both. Within a seed, the i-th value is repetition i."""
    values, seeds = row.get(key), row.get("run_seeds")
    if not isinstance(values, list) or not isinstance(seeds, list) or len(values) != len(seeds):
        raise TandemError(f"summary row {dict(row)!r}: '{key}' and 'run_seeds' not lists alike")
    out: dict[int, list[float]] = {}
    for value, seed in zip(values, seeds, strict=True):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TandemError(f"summary row {dict(row)!r}: '{key}' holds {value!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TandemError(f"summary row {dict(row)!r}: 'run_seeds' holds {seed!r}")
        out.setdefault(seed, []).append(float(value))
    return out


def pair_up(
    a: Mapping[int, Sequence[float]], b: Mapping[int, Sequence[float]]
) -> dict[int, list[tuple[float, float]]]:
    """Cells `a` and `b` (per seed, in repetition order) as pairs: the
    seeds both have, and within a seed the repetitions both have."""
    return {
        s: list(zip(a[s], b[s], strict=False)) for s in sorted(a.keys() & b.keys()) if a[s] and b[s]
    }


def differences(
    a: Mapping[int, Sequence[float]], b: Mapping[int, Sequence[float]], relative: bool = False
) -> dict[int, list[float]]:
    """Per seed, b - a for each pair (relative: b / a - 1)."""
    out: dict[int, list[float]] = {}
    for s, pairs in pair_up(a, b).items():
        if relative and any(x == 0 for x, _ in pairs):
            raise TandemError(f"seed {s}: a relative difference against 0")
        out[s] = [(y / x - 1) if relative else (y - x) for x, y in pairs]
    return out
