"""The `domains` summary's rows: one per (environment, load, loaded cores),
made from the merged measurements and found again by cell."""

from __future__ import annotations

from collections.abc import Sequence

from tandem.exp.common import latency_columns
from tandem.instruments.measure import Latency


def summary_row(
    env: str,
    load: str,
    k: int,
    lat: Latency,
    reps: Sequence[Latency],
    seeds: Sequence[int] | None = None,
) -> dict[str, object]:
    """One cell's row: its measurements merged over the boots, and each
    boot's worst case and average with its Linux seed (`seeds`)."""
    return {
        "env": env,
        "load": load,
        "loaded_cores": k,
        **latency_columns(lat, reps, seeds),
        "instrument": lat.instrument,
        "resolution_us": lat.resolution_us,
    }


# summary.csv's columns.
COLUMNS = (
    "env",
    "load",
    "loaded_cores",
    "samples",
    "min_us",
    "avg_us",
    "max_us",
    "p99_us",
    "instrument",
)


def find_row(
    rows: list[dict[str, object]], env: str, load: str, k: int
) -> dict[str, object] | None:
    """The row of one cell, or None if the run did not measure it."""
    for r in rows:
        if r["env"] == env and r["load"] == load and r["loaded_cores"] == k:
            return r
    return None
