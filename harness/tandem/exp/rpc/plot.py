"""The `rpc` plot: task-pair time and call round trip against the size, per
mode, with the model's x_opt and the measured crossover."""

from __future__ import annotations

from pathlib import Path

from tandem.exp.common import summary_list
from tandem.exp.rpc.rows import by_size
from tandem.exp.rpc.spec import MODES


def plot(run_dir: Path, summary: dict[str, object]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summary_list(summary)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, key, label in (
        (axes[0], "median_ms", "task pair done (ms)"),
        (axes[1], "latency_median_us", "call round trip (µs)"),
    ):
        for mode in MODES:
            pts = sorted(by_size(rows, mode, key).items())
            if pts:
                ax.plot([max(p[0], 1) for p in pts], [p[1] for p in pts], marker="o", label=mode)
        x_opt = summary.get("x_opt_bytes")
        if isinstance(x_opt, int | float) and x_opt > 0:
            ax.axvline(max(x_opt, 1), ls="--", color="gray", label=f"x_opt (model) {x_opt} B")
        cross = summary.get("crossover_bytes" if key == "median_ms" else "latency_crossover_bytes")
        if isinstance(cross, int | float):
            ax.axvline(cross, ls=":", color="red", label=f"measured crossover {cross:.0f} B")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("bytes per call")
        ax.set_ylabel(label)
        ax.legend(fontsize=8)
    axes[0].set_title("paper's metric: RPC task + CPU-bound task")
    axes[1].set_title("plain call latency")
    fig.suptitle(f"rpc: busy / block / auto ({summary['timing']} timing, QEMU)")
    fig.tight_layout()
    path = run_dir / "rpc.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
