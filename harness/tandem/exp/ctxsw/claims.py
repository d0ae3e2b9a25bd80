"""Paper 004 (context switches): its claims, tested on the latest full run
of `ctxsw`."""

from __future__ import annotations

from pathlib import Path

from tandem.claims import (
    NEEDS_MODEL,
    NOT_REPRODUCED,
    REPRODUCED,
    Claim,
    latest_full,
    not_run,
)
from tandem.exp.common import finished_runs, num, summary_list
from tandem.platform.paths import RESULTS


def claims(root: Path = RESULTS) -> list[Claim]:
    """Paper 004's claims on the latest full run under `root`."""
    paper = "004"
    claim = "Address-space tags (FCSE; ASIDs here) show no clear gain (5 % or more) on QEMU"
    figure = "100 switches: 7.5 s without FCSE, 7.43 s with (0.9 %)"
    found = latest_full(
        finished_runs("ctxsw", root), lambda s: bool(summary_list(s, required=False))
    )
    if not found:
        return [not_run(paper, claim, figure), not_run(paper, "ASIDs pay off on hardware", "-")]
    run_id, s = found
    rows = [
        r
        for r in summary_list(s, required=False)
        if num(r, "pages") == min(num(x, "pages") for x in summary_list(s, required=False))
    ]
    parts, gains = [], []
    for timing in sorted({str(r["timing"]) for r in rows}):
        by = {r["mode"]: num(r, "per_switch_ns") for r in rows if r["timing"] == timing}
        if "asid" in by and "flush" in by:
            gain = by["flush"] / by["asid"] - 1
            gains.append(gain)
            parts.append(
                f"{timing}: flush {by['flush']:.0f} ns, asid {by['asid']:.0f} ns ({gain:+.1%})"
            )
    return [
        Claim(
            paper,
            claim,
            figure,
            "; ".join(parts),
            run_id,
            REPRODUCED if gains and all(g < 0.05 for g in gains) else NOT_REPRODUCED,
        ),
        Claim(
            paper,
            "ASIDs save the TLB refills a switch costs on hardware",
            "(the paper's hypothesis)",
            "QEMU's TLB is not tagged: both modes flush",
            run_id,
            NEEDS_MODEL,
        ),
    ]
