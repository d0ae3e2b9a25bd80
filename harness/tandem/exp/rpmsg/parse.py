"""Reading the `rpmsg` experiment's boot: the bench's round-trip samples
by series and size, and each size's row of quantiles."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from tandem.errors import TandemError
from tandem.exp.rpmsg.spec import SERIES


def parse(lines: Sequence[str]) -> dict[str, dict[int, list[int]]]:
    """Samples (ns) by series and size, from the bench's `rt` lines."""
    out: dict[str, dict[int, list[int]]] = {s: {} for s in SERIES}
    for line in lines:
        parts = line.split()
        if len(parts) < 4 or parts[0] != "rt":
            continue
        size = int(parts[2])
        if parts[1] == "rpmsg":
            out["rpmsg"].setdefault(size, []).append(int(parts[3]))
        elif parts[1] == "rpc-block" and len(parts) == 5:
            out["rpc-block"].setdefault(size, []).append(int(parts[3]))
            out["rpc-block-driver"].setdefault(size, []).append(int(parts[4]))
        else:
            raise TandemError(f"rpmsg: a line it cannot read: {line!r}")
    return out


def quantile(values: list[int], q: float) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))])


def rows(samples: dict[str, dict[int, list[int]]], sizes: Sequence[int]) -> list[dict[str, object]]:
    """One row per size: each series' median, p10, p90, p99, max (ns)."""
    out: list[dict[str, object]] = []
    for size in sizes:
        row: dict[str, object] = {"bytes": size}
        for s in SERIES:
            v = samples[s].get(size)
            if not v:
                raise TandemError(f"rpmsg: no {s} samples at {size} bytes")
            key = s.replace("-", "_")
            row[f"{key}_median_ns"] = statistics.median(v)
            row[f"{key}_p10_ns"] = quantile(v, 0.10)
            row[f"{key}_p90_ns"] = quantile(v, 0.90)
            row[f"{key}_p99_ns"] = quantile(v, 0.99)
            row[f"{key}_max_ns"] = max(v)
            row[f"{key}_samples"] = len(v)
        rpc = float(str(row["rpc_block_median_ns"]))
        row["rpmsg_over_rpc_block"] = round(float(str(row["rpmsg_median_ns"])) / rpc, 3)
        out.append(row)
    return out
