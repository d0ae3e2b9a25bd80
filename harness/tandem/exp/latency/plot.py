"""The `latency` experiment's plot: each phase's latency histogram."""

from __future__ import annotations

import csv
from pathlib import Path

from tandem.exp.latency.spec import PHASES
from tandem.platform.timing import Timing

HISTOGRAMS = "histograms.csv"


def read_histograms(run_dir: Path) -> dict[str, list[tuple[float, int]]]:
    """histograms.csv by phase: (latency in ns, count) per bucket."""
    out: dict[str, list[tuple[float, int]]] = {load: [] for load in PHASES}
    with (run_dir / HISTOGRAMS).open(newline="") as f:
        for row in csv.DictReader(f):
            out.setdefault(row["load"], []).append((float(row["latency_ns"]), int(row["count"])))
    return out


def plot(run_dir: Path, summary: dict[str, object]) -> None:
    """latency.png: samples per latency bucket, Linux idle and Linux busy,
    on a log scale (the worst cases are single samples)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    histograms = read_histograms(run_dir)
    fig, ax = plt.subplots(figsize=(7.0, 4.0))
    labels = {"idle": "Linux idle", "hackbench": "Linux running hackbench"}
    for load, buckets in histograms.items():
        if not buckets:
            continue
        xs = [ns / 1000 for ns, _ in buckets]
        ys = [count for _, count in buckets]
        ax.plot(xs, ys, marker="o", linestyle="", label=labels.get(load, load))
    ax.set_yscale("log")
    ax.set_xlabel("latency (us): timer compare value to the RTOS's handler")
    ax.set_ylabel("samples")
    timing = Timing.of_summary(summary).label()
    ax.set_title(f"RTOS timer-interrupt latency, {summary['smp']} cores, {timing}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(run_dir / "latency.png", dpi=110)
    plt.close(fig)
