"""The `linux-rt` plots: cyclictest's distributions and the worst case
against the number of cores, beside the paper's (its fig. 1-3)."""

from __future__ import annotations

from pathlib import Path

from tandem.exp.common import num, summary_list
from tandem.exp.linux_rt.spec import PAPER


def plot(run_dir: Path, summary: dict[str, object]) -> list[Path]:
    """Fig. 1-3 of the paper, from our data: distributions and worst cases."""
    import csv

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summary_list(summary)
    timing = summary["timing"]
    hist: dict[tuple[int, bool, bool], dict[float, int]] = {}
    with (run_dir / "histograms.csv").open() as f:
        for rec in csv.DictReader(f):
            key = (int(rec["cores"]), rec["affinity"] == "True", rec["io_load"] == "True")
            hist.setdefault(key, {})[float(rec["latency_us"])] = int(rec["count"])
    combos = sorted({(bool(r["affinity"]), bool(r["io_load"])) for r in rows})
    fig, axes = plt.subplots(1, len(combos), figsize=(4.5 * len(combos), 4), squeeze=False)
    for ax, (aff, io) in zip(axes[0], combos, strict=True):
        for (cores, a, i), h in sorted(hist.items()):
            if (a, i) != (aff, io):
                continue
            xs = sorted(h)
            ax.step(xs, [h[x] for x in xs], where="post", label=f"{cores} core(s)")
        ax.set_yscale("log")
        ax.set_xlabel("wake-up latency (µs)")
        ax.set_ylabel("samples")
        ax.set_title(f"affinity {'on' if aff else 'off'}, I/O load {'on' if io else 'off'}")
        ax.legend(fontsize=8)
    fig.suptitle(f"linux-rt: cyclictest distributions ({timing} timing, QEMU)")
    fig.tight_layout()
    p1 = run_dir / "distributions.png"
    fig.savefig(p1, dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for aff, io in combos:
        pts = sorted(
            (int(num(r, "cores")), num(r, "max_us"))
            for r in rows
            if r["affinity"] == aff and r["io_load"] == io
        )
        ax.plot(
            [p[0] for p in pts],
            [p[1] for p in pts],
            marker="o",
            label=f"ours: affinity {'on' if aff else 'off'}, I/O {'on' if io else 'off'}",
        )
    for label, paper_key in (
        ("paper", "worst_by_cores"),
        ("paper, affinity", "affinity_worst_by_cores"),
        ("paper, I/O", "io_worst_by_cores"),
    ):
        pts2 = sorted(PAPER[paper_key].items())
        ax.plot(
            [p[0] for p in pts2],
            [p[1] for p in pts2],
            ls="--",
            marker="x",
            alpha=0.6,
            label=f"{label} (Xeon hw)",
        )
    ax.set_xlabel("cores")
    ax.set_ylabel("worst-case latency (µs)")
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    ax.set_title(f"linux-rt: worst case vs cores ({timing} timing, QEMU)")
    fig.tight_layout()
    p2 = run_dir / "worst_vs_cores.png"
    fig.savefig(p2, dpi=110)
    plt.close(fig)
    return [p1, p2]
