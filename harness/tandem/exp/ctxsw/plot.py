"""The `ctxsw` plot: time per hand-off against pages touched, one panel per
timing mode."""

from __future__ import annotations

from pathlib import Path

from tandem.exp.common import num, summary_list
from tandem.exp.ctxsw.spec import MODES, NO_MODEL
from tandem.platform.timing import MODES as TIMING_MODES


def plot(run_dir: Path, summary: dict[str, object]) -> None:
    """Per-switch time by pages touched, one panel per timing mode."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summary_list(summary)
    # A panel per timing mode and, in runs with memory profiles, per profile.
    panels = sorted(
        {(str(r["timing"]), str(r.get("profile", NO_MODEL))) for r in rows},
        key=lambda p: (TIMING_MODES.index(p[0]), p[1] != NO_MODEL, p[1]),
    )
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.0), squeeze=False)
    for ax, (timing, profile) in zip(axes[0], panels, strict=True):
        sub = [r for r in rows if r["timing"] == timing and r.get("profile", NO_MODEL) == profile]
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
        ax.set_title(f"{timing} timing" + ("" if profile == NO_MODEL else f", model {profile}"))
        ax.legend()
    fig.suptitle("sys_chg hand-off between protected tasks (QEMU, not hardware)")
    fig.tight_layout()
    fig.savefig(run_dir / "per_switch.png", dpi=110)
    plt.close(fig)
