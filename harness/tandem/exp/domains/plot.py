"""The `domains` plots: response by environment and load, and the worst
case against memory-loaded cores beside the paper's (its fig. 5-8)."""

from __future__ import annotations

from pathlib import Path

from tandem.exp.common import num, summary_list
from tandem.exp.domains.report import board_series
from tandem.exp.domains.rows import find_row
from tandem.exp.domains.spec import ENVS, INFO_CORES, LOADS, PAPER_TARGET_US, PAPER_WORST_VS_LOADED
from tandem.platform.timing import Timing


def plot(run_dir: Path, summary: dict[str, object]) -> list[Path]:
    """Fig. 5-8 of the paper, from our data."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summary_list(summary)
    timing = summary["timing"]
    envs = [e for e in ENVS if any(r["env"] == e for r in rows)]
    written: list[Path] = []

    main = [(load, 0 if load == "none" else INFO_CORES) for load in LOADS]
    main = [
        (ld, k) for ld, k in main if any(r["load"] == ld and r["loaded_cores"] == k for r in rows)
    ]
    fig, axes = plt.subplots(1, len(main), figsize=(4.2 * len(main), 4), squeeze=False)
    for ax, (load, k) in zip(axes[0], main, strict=True):
        xs, mins, avgs, maxs = [], [], [], []
        for i, env in enumerate(envs):
            r = find_row(rows, env, load, k)
            if r is None:
                continue
            xs.append(i)
            mins.append(num(r, "min_us"))
            avgs.append(num(r, "avg_us"))
            maxs.append(num(r, "max_us"))
        w = 0.27
        ax.bar([x - w for x in xs], mins, w, label="min")
        ax.bar(xs, avgs, w, label="avg")
        ax.bar([x + w for x in xs], maxs, w, label="max")
        ax.axhline(PAPER_TARGET_US, color="grey", ls="--", lw=1, label="paper's 50 µs target")
        ax.set_xticks(range(len(envs)), envs)
        ax.set_yscale("log")
        ax.set_title(f"load: {load}" + (f" ({k} cores)" if k else ""))
        ax.set_ylabel("interrupt response (µs)")
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"domains: response by environment and load ({timing} timing, QEMU)")
    fig.tight_layout()
    path = run_dir / "response_by_load.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    clock = summary.get("board_clock_mhz")
    board = {env: board_series(summary, env) for env in envs}
    if any(ys is not None for ys in board.values()):
        # The modelled board's time, as the paper's figure: the median over
        # boots of each boot's worst case, ours x 1000 / the board's MHz.
        for env, ys in board.items():
            if ys is not None:
                ax.plot(range(4), ys, marker="o", label=f"{env} (ours, median of boots)")
        unit = f"board µs: ours x 1000 / {clock}"
    else:
        for env in envs:
            pts = sorted(
                (int(num(r, "loaded_cores")), num(r, "max_us"))
                for r in rows
                if r["env"] == env and r["load"] in ("none", "memory")
            )
            if pts:
                xs, ys_ = [p[0] for p in pts], [p[1] for p in pts]
                ax.plot(xs, ys_, marker="o", label=f"{env} (ours)")
        unit = "µs"
    for env, worst in PAPER_WORST_VS_LOADED.items():
        ax.plot(range(4), worst, ls="--", marker="x", alpha=0.6, label=f"{env} (paper, ARM11 hw)")
    ax.set_xlabel("memory-loaded cores")
    ax.set_ylabel(f"worst-case response ({unit})")
    ax.set_xticks(range(4))
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    memmodel = Timing.of_summary(summary).memmodel
    model = f", memory model {memmodel}" if memmodel else ""
    ax.set_title(f"worst case vs loaded cores ({timing} timing{model}, QEMU)")
    fig.tight_layout()
    path = run_dir / "worst_vs_loaded_cores.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)
    return written
