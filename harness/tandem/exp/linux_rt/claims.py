"""Paper 001 (Linux on multicore): its claims, tested on the latest full
run of `linux-rt`."""

from __future__ import annotations

from pathlib import Path

from tandem.claims import (
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    latest_full,
    not_run,
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
