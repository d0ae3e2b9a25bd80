"""The paper's three orderings, tested on a `linux-rt` summary's rows, for
the report and for `tandem exp claims` alike.

A cell's worst case is the median of its repetitions' worst cases; an
ordering holds only beyond the spread: every repetition of one cell on the
right side of every repetition of the other."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

Row = dict[str, object]


@dataclass(frozen=True)
class Check:
    """One ordering on our data: what, whether it holds, and the numbers."""

    what: str
    holds: bool
    detail: str


def _number(v: object) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise ValueError(f"expected a number, got {v!r}")
    return float(v)


def rep_max(row: Row) -> list[float]:
    """Each repetition's worst case (runs before repetitions: the one)."""
    reps = row.get("rep_max_us")
    if isinstance(reps, list) and reps:
        return [_number(x) for x in reps]
    return [_number(row["max_us"])]


def find(rows: Sequence[Row], cores: int, affinity: bool, io: bool) -> Row | None:
    for r in rows:
        if (r["cores"], r["affinity"], r["io_load"]) == (cores, affinity, io):
            return r
    return None


def spread(values: Sequence[float]) -> str:
    """ "54 (32-96)": median and range, µs."""
    med = statistics.median(values)
    if len(values) == 1:
        return f"{med:.0f}"
    return f"{med:.0f} ({min(values):.0f}-{max(values):.0f})"


def _cores(n: int) -> str:
    return f"{n} core" if n == 1 else f"{n} cores"


def core_counts(rows: Sequence[Row]) -> list[int]:
    return sorted({int(_number(r["cores"])) for r in rows})


def grows_with_cores(rows: Sequence[Row]) -> Check | None:
    """Affinity off, no I/O: the median worst case never falls from one core
    count to the next, and the most cores' lowest repetition is above the
    fewest cores' highest."""
    base = [(c, rep_max(r)) for c in core_counts(rows) if (r := find(rows, c, False, False))]
    if len(base) < 2:
        return None
    medians = [statistics.median(v) for _, v in base]
    rising = all(b >= a for a, b in itertools.pairwise(medians))
    holds = rising and min(base[-1][1]) > max(base[0][1])
    return Check(
        "the worst case grows with cores (affinity off, no I/O)",
        holds,
        ", ".join(f"{c}: {spread(v)}" for c, v in base) + " µs",
    )


def affinity_lowers(rows: Sequence[Row]) -> list[Check]:
    """Per core count: every repetition with affinity below every one without."""
    out = []
    for c in core_counts(rows):
        off, on = find(rows, c, False, False), find(rows, c, True, False)
        if off is None or on is None:
            continue
        a, b = rep_max(off), rep_max(on)
        out.append(
            Check(
                f"{_cores(c)}: affinity lowers the worst case",
                max(b) < min(a),
                f"{spread(a)} -> {spread(b)} µs",
            )
        )
    return out


def io_raises(rows: Sequence[Row]) -> list[Check]:
    """Per core count: every repetition with I/O load above every one without."""
    out = []
    for c in core_counts(rows):
        quiet, io = find(rows, c, False, False), find(rows, c, False, True)
        if quiet is None or io is None:
            continue
        a, b = rep_max(quiet), rep_max(io)
        out.append(
            Check(
                f"{_cores(c)}: disk I/O load raises the worst case",
                min(b) > max(a),
                f"{spread(a)} -> {spread(b)} µs",
            )
        )
    return out
