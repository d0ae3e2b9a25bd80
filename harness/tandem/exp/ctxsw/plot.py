"""The `ctxsw` plot: time per hand-off against pages touched, one panel per
timing mode."""

from __future__ import annotations

from pathlib import Path

from tandem.exp.common import num, summary_list
from tandem.exp.ctxsw.spec import MODES
from tandem.platform.timing import MODES as TIMING_MODES


def plot(run_dir: Path, summary: dict[str, object]) -> None:
    """Per-switch time by pages touched, one panel per timing mode."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summary_list(summary)
    timings = sorted({str(r["timing"]) for r in rows}, key=TIMING_MODES.index)
    fig, axes = plt.subplots(1, len(timings), figsize=(5.2 * len(timings), 4.0), squeeze=False)
    for ax, timing in zip(axes[0], timings, strict=True):
        sub = [r for r in rows if r["timing"] == timing]
        pages = sorted({int(num(r, "pages")) for r in sub})
        width = 0.8 / max(1, len(MODES))
        for i, mode in enumerate(MODES):
            ys = []
            for p in pages:
                match = [r for r in sub if r["mode"] == mode and num(r, "pages") == p]
                ys.append(num(match[0], "per_switch_ns") / 1000 if match else 0.0)
            xs = [j + (i - (len(MODES) - 1) / 2) * width for j in range(len(pages))]
            ax.bar(xs, ys, width, label=mode)
        ax.set_xticks(range(len(pages)), [str(p) for p in pages])
        ax.set_xlabel("pages written per task between hand-offs")
        ax.set_ylabel("µs per hand-off")
        ax.set_title(f"{timing} timing")
        ax.legend()
    fig.suptitle("sys_chg hand-off between protected tasks (QEMU, not hardware)")
    fig.tight_layout()
    fig.savefig(run_dir / "per_switch.png", dpi=110)
    plt.close(fig)
