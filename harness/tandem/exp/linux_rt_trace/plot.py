"""The `linux-rt-trace` experiment's plot: each window's longest section
over the boot's uptime, per core count, those on cyclictest's CPU marked."""

from __future__ import annotations

from pathlib import Path

from tandem.exp.linux_rt_trace.report import boots_of
from tandem.exp.linux_rt_trace.spec import PLOT


def plot(run_dir: Path, summary: dict[str, object]) -> None:
    """sections.png, from the summary's windows."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    boots = boots_of(summary)
    fig = Figure(figsize=(9.0, 1.0 + 2.2 * len(boots)))
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(boots), 1, squeeze=False, sharex=True)
    for ax, b in zip(axes[:, 0], boots, strict=True):
        for here, style, label in (
            (False, dict(color="tab:grey", marker="."), "on another CPU"),
            (True, dict(color="tab:red", marker="o"), "on cyclictest's CPU"),
        ):
            mine = [w for w in b.windows if (w.cpu == w.cyclictest_cpu) == here]
            ax.scatter(
                [w.uptime_s for w in mine],
                [w.latency_us for w in mine],
                s=10,
                label=label,
                **style,
            )
        ax.set_ylabel("longest section (µs)")
        ax.set_title(f"{b.cores} core(s): cyclictest max {b.cyclictest_us['max']:g} µs", fontsize=9)
        ax.legend(fontsize=7, loc="upper left")
    axes[-1, 0].set_xlabel("Linux's uptime at the window's end (s)")
    fig.tight_layout()
    fig.savefig(run_dir / PLOT, dpi=110)
