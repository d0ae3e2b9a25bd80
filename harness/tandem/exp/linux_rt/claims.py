"""Paper 001 (Linux on multicore): its claims, tested on the latest full
run of `linux-rt`.

Runs that declare issue 49's statistics (tandem/stats.py) are judged by the
paired tests in `_preregistered`, fixed before those runs: their rows carry
`run_seeds` beside `rep_max_us`, each boot's Linux seed, and cells pair by
seed and repetition. No memory profile is the paper's 8-core Xeon: the
re-measurement runs as before (no memory model) plus one `a53` sensitivity
run, and the claims are judged on the run without a model."""

from __future__ import annotations

from pathlib import Path

from tandem import stats
from tandem.claims import (
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    Summary,
    latest_full,
    not_run,
    verdict,
)
from tandem.exp.common import finished_runs, num, summary_list
from tandem.exp.linux_rt import orderings
from tandem.platform.paths import RESULTS
from tandem.platform.timing import modes_words


def claims(root: Path = RESULTS) -> list[Claim]:
    """Paper 001's claims: each ordering beyond the spread of the
    repetitions' worst cases (orderings.py, which the report uses too)."""

    paper = "001"
    found = latest_full(
        finished_runs("linux-rt", root), lambda s: bool(summary_list(s, required=False))
    )
    paper_claims = [
        ("The worst case grows with the number of cores", "90 / 540 / 600 µs on 1 / 4 / 8 cores"),
        ("CPU affinity lowers the worst case", "4 cores 540 -> 90 µs, 8 cores 600 -> 140 µs"),
        ("Disk I/O load raises the worst case", "720 / 1 350 / 3 440 µs on 1 / 4 / 8 cores"),
    ]
    if not found:
        return [not_run(paper, c, f) for c, f in paper_claims]
    run_id, s = found
    if stats.preregistered(s):
        return _preregistered(run_id, s, paper_claims)
    rows = summary_list(s, required=False)
    n = int(num(s, "reps", default=1))
    reps = (
        f"median (range) of {n} repetitions, {modes_words(s)}"
        if n > 1
        else f"one repetition, {modes_words(s)}"
    )
    grows = orderings.grows_with_cores(rows)
    # The cause part: one core with the page-list high mark of more cores.
    pcp = sorted(
        (int(num(r, "pcp_as_cores")), orderings.spread(orderings.rep_max(r)))
        for r in summary_list(s, "cause", required=False)
        if num(r, "cores") == 1 and not r.get("pcp_default")
    )
    cause = (
        "; one core with the interrupts-off page-freeing batch (pcp high mark) of "
        + " / ".join(str(c) for c, _ in pcp)
        + " cores: "
        + " / ".join(w for _, w in pcp)
        + " µs"
        if pcp
        else ""
    )
    out = [
        Claim(
            paper,
            paper_claims[0][0],
            paper_claims[0][1],
            f"cores: {grows.detail}{cause}; {reps}" if grows else "-",
            run_id,
            REPRODUCED if grows and grows.holds else NOT_REPRODUCED,
        )
    ]
    for (claim, figure), checks in (
        (paper_claims[1], orderings.affinity_lowers(rows)),
        (paper_claims[2], orderings.io_raises(rows)),
    ):
        out.append(
            Claim(
                paper,
                claim,
                figure,
                "; ".join(f"{c.what.split(':')[0]} {c.detail}" for c in checks) + f"; {reps}",
                run_id,
                REPRODUCED if checks and all(c.holds for c in checks) else NOT_REPRODUCED,
            )
        )
    return out


def _preregistered(run_id: str, s: Summary, paper_claims: list[tuple[str, str]]) -> list[Claim]:
    """Issue 49's tests, fixed before its runs: each boot's worst case,
    paired by Linux seed and repetition, each comparison's 95 % interval
    beyond 0 over at least 20 pairs and 5 seeds."""
    paper = "001"
    modes = modes_words(s)
    rows = summary_list(s, required=False)

    def cell(cores: int, affinity: bool, io: bool) -> dict[int, list[float]] | None:
        row = orderings.find(rows, cores, affinity, io)
        return stats.by_seed(row, "rep_max_us") if row else None

    counts = orderings.core_counts(rows)
    base = {c: x for c in counts if (x := cell(c, False, False)) is not None}
    out: list[Claim] = []
    if len(base) >= 2:
        # Grows: the most cores' worst above the fewest's beyond the
        # interval, and no step between neighbouring core counts falling
        # beyond its interval.
        first, last = min(base), max(base)
        overall = stats.paired_test(stats.differences(base[first], base[last]), stats.ABOVE)
        steps = {
            (a, b): stats.paired_test(stats.differences(base[a], base[b]), stats.BELOW)
            for a, b in zip(sorted(base), sorted(base)[1:], strict=False)
        }
        falls = [f"{a} -> {b}" for (a, b), t in steps.items() if t.holds]
        out.append(
            Claim(
                paper,
                paper_claims[0][0],
                paper_claims[0][1],
                f"{last} cores minus {first}: {overall.words(' µs', 1)}; "
                + (f"falls beyond the interval at {', '.join(falls)}; " if falls else "")
                + "steps: "
                + "; ".join(
                    f"{a} -> {b}: mean {t.pooled.mean:+.1f} µs "
                    f"({t.pooled.low:+.1f} to {t.pooled.high:+.1f})"
                    for (a, b), t in steps.items()
                )
                + f" ({modes})",
                run_id,
                verdict(overall.holds and not falls),
            )
        )
    else:
        out.append(not_run(paper, *paper_claims[0]))
    for (claim, figure), other, side in (
        (paper_claims[1], (True, False), stats.BELOW),
        (paper_claims[2], (False, True), stats.ABOVE),
    ):
        tests = {
            c: stats.paired_test(stats.differences(base[c], x), side)
            for c in base
            if (x := cell(c, *other)) is not None
        }
        if not tests:
            out.append(not_run(paper, claim, figure))
            continue
        out.append(
            Claim(
                paper,
                claim,
                figure,
                "; ".join(f"{c} cores: {t.words(' µs', 1)}" for c, t in tests.items())
                + f" ({modes})",
                run_id,
                verdict(all(t.holds for t in tests.values())),
            )
        )
    return out
