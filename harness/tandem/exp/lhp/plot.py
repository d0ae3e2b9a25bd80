"""The `lhp` plots: long spin waits against the RTOS period (E1), benchmark
times (E2), and the dispatch overhead and path counts (E3); the paper's
fig. 4-6 from our data."""

from __future__ import annotations

import csv
from pathlib import Path
from types import ModuleType

from tandem.exp.common import num, summary_list
from tandem.exp.lhp.spec import POLICIES


def plot(run_dir: Path, summary: dict[str, object]) -> None:
    """Fig. 4-6 of the paper from our data."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    timing = summary["timing"]
    sweep = summary_list(summary, "period_sweep")
    bench = summary_list(summary, "bench")
    if sweep:
        _plot_e1(plt, run_dir, sweep, str(summary["sweep_timing"]))
    if bench:
        _plot_e2(plt, run_dir, bench, str(timing))
    overhead = summary_list(summary, "overhead")
    if overhead:
        split = all("handoffs" in r for r in overhead)
        _plot_e3(plt, run_dir, str(summary["sweep_timing"]), split)


def _plot_e1(plt: ModuleType, run_dir: Path, sweep: list[dict[str, object]], timing: str) -> None:
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for policy in POLICIES:
        pts = sorted(
            (num(r, "period_us"), num(r, "long_spin_waits")) for r in sweep if r["policy"] == policy
        )
        if pts:
            ax.plot([p[0] / 1000 for p in pts], [p[1] for p in pts], marker="o", label=policy)
    ax.set_xscale("log")
    ax.set_xlabel("RTOS period (ms), load 50 %")
    ax.set_ylabel("long spin waits (during hackbench)")
    ax.set_title(f"lhp E1: long spin waits vs RTOS period ({timing} timing, QEMU)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(run_dir / "e1_long_spin_waits.png", dpi=110)
    plt.close(fig)


def _plot_e2(plt: ModuleType, run_dir: Path, bench: list[dict[str, object]], timing: str) -> None:
    names = sorted({str(r["bench"]) for r in bench})
    fig, axes = plt.subplots(
        1, max(1, len(names)), figsize=(5 * max(1, len(names)), 4), squeeze=False
    )
    for ax, name in zip(axes[0], names, strict=False):
        rows = [r for r in bench if r["bench"] == name]
        labels = [str(r["policy"]) for r in rows]
        data = [[float(x) for x in r["runs_s"]] for r in rows]  # type: ignore[attr-defined]
        ax.boxplot(data, tick_labels=labels)
        ax.set_ylabel("seconds")
        ax.set_title(name)
        ax.tick_params(axis="x", labelrotation=20)
    fig.suptitle(f"lhp E2: benchmark times ({timing} timing, QEMU)")
    fig.tight_layout()
    fig.savefig(run_dir / "e2_bench.png", dpi=110)
    plt.close(fig)


def _policy_histograms(path: Path, value: str, count: str) -> dict[str, dict[float, int]]:
    """A CSV of `policy,<value>,<count>` rows as policy -> value -> count."""
    hist: dict[str, dict[float, int]] = {}
    with path.open() as f:
        for rec in csv.DictReader(f):
            hist.setdefault(rec["policy"], {})[float(rec[value])] = int(rec[count])
    return hist


def _plot_e3(plt: ModuleType, run_dir: Path, timing: str, split: bool) -> None:
    counted = run_dir / "path_histograms.csv"
    if counted.exists():
        _plot_e3_counts(plt, run_dir, counted, timing)
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    hist = _policy_histograms(run_dir / "dispatch_histograms.csv", "latency_us", "count")
    for policy, h in hist.items():
        xs = sorted(h)
        ax.step(xs, [h[x] for x in xs], where="post", label=policy)
    ax.set_yscale("log")
    ax.set_xlabel(
        "activation request to the task's first instruction"
        + (", less the hand-off wait (µs)" if split else " (µs)")
    )
    ax.set_ylabel("dispatches")
    ax.set_title(f"lhp E3: RTOS dispatch overhead ({timing} timing, QEMU)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(run_dir / "e3_overhead.png", dpi=110)
    plt.close(fig)


def _plot_e3_counts(plt: ModuleType, run_dir: Path, counted: Path, timing: str) -> None:
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    hist = _policy_histograms(counted, "instructions", "paths")
    for policy, h in hist.items():
        xs = sorted(h)
        ax.plot([x / 1000 for x in xs], [h[x] for x in xs], "o", ms=3, label=policy)
    ax.set_yscale("log")
    ax.set_xlabel("dispatch path in its cores' own instructions (µs at 1 ns each)")
    ax.set_ylabel("dispatches")
    ax.set_title(f"lhp E3: RTOS dispatch path, per-core counts ({timing} timing, QEMU)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(run_dir / "e3_path_counts.png", dpi=110)
    plt.close(fig)
