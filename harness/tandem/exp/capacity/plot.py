"""The `capacity` plot: benchmark time per RTOS load, one bar per mode
(the paper's fig. 7)."""

from __future__ import annotations

from pathlib import Path

from tandem.exp.common import num, summary_list
from tandem.platform import capacity
from tandem.platform.timing import Timing


def plot(run_dir: Path, summary: dict[str, object]) -> None:
    """Like the paper's fig. 7: benchmark time per RTOS load, one bar per mode,
    whiskers from the fastest to the slowest run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summary_list(summary)
    benches = sorted({str(r["bench"]) for r in rows})
    load_cells: list[object] = []
    modes: list[str] = []
    for r in rows:
        if r["rtos_load"] not in load_cells:
            load_cells.append(r["rtos_load"])
        if r["mode"] not in modes:
            modes.append(str(r["mode"]))
    fig, axes = plt.subplots(1, len(benches), figsize=(6 * len(benches), 4.2), squeeze=False)
    # The modes in their usual order, whichever cell ran first.
    modes.sort(key=lambda m: capacity.MODES.index(m) if m in capacity.MODES else len(modes))
    width = 0.8 / max(1, len(modes))
    for ax, bench in zip(axes[0], benches, strict=True):
        for i, mode in enumerate(modes):
            xs, ys, lo, hi = [], [], [], []
            for x, load in enumerate(load_cells):
                found = [
                    r
                    for r in rows
                    if (r["rtos_load"], r["mode"], r["bench"]) == (load, mode, bench)
                ]
                if not found:
                    continue
                r = found[0]
                values = [float(v) * 1000 for v in r["runs_s"]]  # type: ignore[attr-defined]
                med = num(r, "median_s") * 1000
                xs.append(x + (i - (len(modes) - 1) / 2) * width)
                ys.append(med)
                lo.append(med - min(values))
                hi.append(max(values) - med)
            ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=mode)
        ax.set_xticks(range(len(load_cells)))
        ax.set_xticklabels([f"{v} %" if isinstance(v, int) else "changing" for v in load_cells])
        ax.set_xlabel(f"RTOS load on core {summary['rtos_core']}")
        ax.set_ylabel("ms (median; whiskers: fastest to slowest run)")
        ax.set_title(bench)
        ax.legend()
    timing = Timing.of_summary(summary).label()
    fig.suptitle(f"capacity: Linux benchmark time vs RTOS load ({timing}, QEMU)")
    fig.tight_layout()
    fig.savefig(run_dir / "capacity.png", dpi=110)
    plt.close(fig)
