"""The `rpc` summary's rows: one per (bytes, mode), and a mode's values by size."""

from __future__ import annotations

from tandem.exp.common import num

# summary.csv's columns.
COLUMNS = (
    "bytes",
    "mode",
    "median_ms",
    "auto_used",
    "latency_median_us",
    "server_median_us",
)


def by_size(rows: list[dict[str, object]], mode: str, key: str) -> dict[int, float]:
    """One mode's `key` by the calls' size in bytes."""
    return {int(num(r, "bytes")): num(r, key) for r in rows if r["mode"] == mode}
