"""Paper 003 (domains): its claims, tested on the latest full run of
`domains`."""

from __future__ import annotations

from pathlib import Path

from tandem.claims import (
    NEEDS_MODEL,
    NOT_REPRODUCED,
    NOT_RUN,
    REPRODUCED,
    Claim,
    latest_full,
    not_run,
)
from tandem.exp.common import finished_runs, num, summary_list
from tandem.platform.paths import RESULTS
from tandem.platform.timing import modes_words


def claims(root: Path = RESULTS) -> list[Claim]:
    """Paper 003's claims on the latest full run under `root`."""
    paper = "003"
    paper_claims = [
        (
            "HeteroOS's worst case is below SMP's and Affinity's under every load",
            "only HeteroOS met 50 µs under every load",
        ),
        ("HeteroOS answers within 5 µs with no load", "6 µs (ARM11 MPCore, 210 MHz)"),
        (
            "The worst case grows with the number of memory-loaded cores",
            "SMP 54 / 120 / 165 / 202 µs, HeteroOS 6 / 11 / 15 / 19 µs for 0-3 cores",
        ),
        (
            "HeteroOS's worst case is below DualUnix's under every load",
            "DualUnix over 100 µs, HeteroOS 6-19 µs",
        ),
        (
            "DualUnix's average under scheduling load is below Affinity's",
            "fig. 9: two kernels share no kernel data or critical sections",
        ),
    ]
    found = latest_full(
        finished_runs("domains", root), lambda s: bool(summary_list(s, required=False))
    )
    if not found:
        return [not_run(paper, c, f) for c, f in paper_claims]
    run_id, s = found
    rows = summary_list(s, required=False)

    def worst(env: str, load: str, cores: int | None = None) -> float | None:
        for r in rows:
            if (
                r["env"] == env
                and r["load"] == load
                and (cores is None or int(num(r, "loaded_cores")) == cores)
            ):
                return num(r, "max_us")
        return None

    loads = sorted({str(r["load"]) for r in rows if num(r, "loaded_cores") in (0, 3)})
    parts, below = [], True
    for load in loads:
        h, smp, aff = worst("heteroos", load), worst("smp", load), worst("affinity", load)
        if h is None:
            continue
        parts.append(
            f"{load}: heteroos {h:.2f}, smp {smp if smp is None else f'{smp:.1f}'}, "
            f"affinity {aff if aff is None else f'{aff:.1f}'} µs"
        )
        below = below and all(x is None or h < x for x in (smp, aff))
    out = [
        Claim(
            paper,
            paper_claims[0][0],
            paper_claims[0][1],
            "; ".join(parts) + f" ({modes_words(s)})",
            run_id,
            REPRODUCED if parts and below else NOT_REPRODUCED,
        )
    ]
    idle = worst("heteroos", "none")
    out.append(
        Claim(
            paper,
            paper_claims[1][0],
            paper_claims[1][1],
            f"{idle:.2f} µs" if idle is not None else "-",
            run_id,
            REPRODUCED if idle is not None and idle <= 5 else NOT_REPRODUCED,
        )
    )
    series = []
    for env in ("smp", "heteroos"):
        pts = sorted(
            (int(num(r, "loaded_cores")), num(r, "max_us"))
            for r in rows
            if r["env"] == env and r["load"] == "memory"
        )
        if pts:
            series.append(f"{env} " + " / ".join(f"{w:.1f}" for _, w in pts))
    out.append(
        Claim(
            paper,
            paper_claims[2][0],
            paper_claims[2][1],
            ("; ".join(series) + " µs. ") if series else "",
            run_id,
            NEEDS_MODEL,
        )
    )
    dual_parts, dual_below = [], True
    for load in loads:
        h, d = worst("heteroos", load), worst("dualunix", load)
        if h is None or d is None:
            continue
        dual_parts.append(f"{load}: heteroos {h:.2f}, dualunix {d:.1f} µs")
        dual_below = dual_below and h < d
    out.append(
        Claim(
            paper,
            paper_claims[3][0],
            paper_claims[3][1],
            "; ".join(dual_parts) + f" ({modes_words(s)})" if dual_parts else "-",
            run_id,
            REPRODUCED
            if dual_parts and dual_below
            else NOT_RUN
            if not dual_parts
            else NOT_REPRODUCED,
        )
    )

    def average(env: str) -> float | None:
        for r in rows:
            if r["env"] == env and r["load"] == "scheduling" and "avg_us" in r:
                return num(r, "avg_us")
        return None

    d_avg, a_avg = average("dualunix"), average("affinity")
    out.append(
        Claim(
            paper,
            paper_claims[4][0],
            paper_claims[4][1],
            f"dualunix {d_avg:.2f}, affinity {a_avg:.2f} µs ({modes_words(s)})"
            if d_avg is not None and a_avg is not None
            else "-",
            run_id,
            NOT_RUN
            if d_avg is None or a_avg is None
            else REPRODUCED
            if d_avg < a_avg
            else NOT_REPRODUCED,
        )
    )
    return out
