"""The `restart` experiment's plot: each restart's host time, stop and
boot stacked, by method. Drawn as `bench restart` drew it before it was an
experiment, so that its kept runs' restart.png redraw byte for byte."""

from __future__ import annotations

from pathlib import Path

from tandem.exp.common import summary_list
from tandem.exp.restart.spec import METHODS, TARGET_HOST_S


def plot(run_dir: Path, summary: dict[str, object]) -> None:
    """restart.png, from the summary's restarts."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summary_list(summary, "restarts")
    fig, ax = plt.subplots(figsize=(8.0, 4.0))
    xs = [int(str(r["generation"])) - 1 for r in rows]
    stop = [float(str(r["host_stop_s"])) for r in rows]
    boot = [float(str(r["host_boot_s"])) for r in rows]
    colours = {m: c for m, c in zip(METHODS, ("tab:blue", "tab:orange", "tab:red"), strict=True)}
    for method, colour in colours.items():
        idx = [i for i, r in enumerate(rows) if r["method"] == method]
        ax.bar([xs[i] for i in idx], [stop[i] for i in idx], color=colour, alpha=0.5)
        ax.bar(
            [xs[i] for i in idx],
            [boot[i] for i in idx],
            bottom=[stop[i] for i in idx],
            color=colour,
            label=f"{method} (light: stop, dark: boot)",
        )
    ax.axhline(
        TARGET_HOST_S, color="grey", linestyle="--", linewidth=1, label=f"target {TARGET_HOST_S} s"
    )
    ax.set_xlabel("restart")
    ax.set_ylabel("host wall time (s)")
    ax.set_title("Restarting Linux: request to first command")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(run_dir / "restart.png", dpi=110)
    plt.close(fig)
