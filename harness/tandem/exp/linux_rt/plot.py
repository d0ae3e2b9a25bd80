"""The `linux-rt` plots: cyclictest's distributions, the worst case against
the number of cores beside the paper's (its fig. 1-3), and a timeline of the
cell with the most tail samples: free memory and the late samples."""

from __future__ import annotations

import csv
import statistics
from io import TextIOWrapper
from pathlib import Path

from tandem.exp.common import summary_list
from tandem.exp.linux_rt.analysis import TAIL_US
from tandem.exp.linux_rt.orderings import core_counts, find, rep_max
from tandem.exp.linux_rt.spec import PAPER
from tandem.results import open_raw


def plot(run_dir: Path, summary: dict[str, object]) -> list[Path]:
    """Fig. 1-3 of the paper, from our data, and the timeline."""
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
        ax.set_ylabel("samples (repetitions merged)")
        ax.set_title(f"affinity {'on' if aff else 'off'}, I/O load {'on' if io else 'off'}")
        ax.legend(fontsize=8)
    fig.suptitle(f"linux-rt: cyclictest distributions ({timing} timing, QEMU)")
    fig.tight_layout()
    p1 = run_dir / "distributions.png"
    fig.savefig(p1, dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for aff, io in combos:
        pts = [
            (c, rep_max(r)) for c in core_counts(rows) if (r := find(rows, c, aff, io)) is not None
        ]
        meds = [statistics.median(v) for _, v in pts]
        ax.errorbar(
            [c for c, _ in pts],
            meds,
            yerr=[
                [m - min(v) for m, (_, v) in zip(meds, pts, strict=True)],
                [max(v) - m for m, (_, v) in zip(meds, pts, strict=True)],
            ],
            marker="o",
            capsize=3,
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
    ax.set_ylabel("worst-case latency (µs): median, range over repetitions")
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    ax.set_title(f"linux-rt: worst case vs cores ({timing} timing, QEMU)")
    fig.tight_layout()
    p2 = run_dir / "worst_vs_cores.png"
    fig.savefig(p2, dpi=110)
    plt.close(fig)
    out = [p1, p2]
    p3 = _timeline(run_dir, plt)
    if p3 is not None:
        out.append(p3)
    return out


def _timeline(run_dir: Path, plt: object) -> Path | None:
    """Free memory and the tail samples of the boot cell with the most
    tail samples, against the time since its loads started."""
    # Streamed: only the rows plotted are kept.
    with open_raw(run_dir, "tail.csv") as tail_csv, open_raw(run_dir, "memory.csv") as memory_csv:
        if tail_csv is None or memory_csv is None:
            return None
        # A boot cell: cores, Linux seed (0 in runs from before the CSVs
        # had one), repetition, cell.
        late: dict[tuple[str, str, str, str], list[tuple[float, int]]] = {}
        for rec in csv.DictReader(TextIOWrapper(tail_csv, encoding="utf-8", newline="")):
            key = (rec["cores"], rec.get("seed", "0"), rec["rep"], rec["cell"])
            late.setdefault(key, []).append((float(rec["time_s"]), int(rec["latency_us"])))
        if not late:
            return None
        key = max(late, key=lambda k: (len(late[k]), k))
        mem = []
        for rec in csv.DictReader(TextIOWrapper(memory_csv, encoding="utf-8", newline="")):
            here = (rec["cores"], rec.get("seed", "0"), rec["rep"], rec["cell"])
            if here == key and int(rec["loops"]) >= 0:
                mem.append((float(rec["time_s"]), int(rec["memfree_kib"]) / 1024))
    import matplotlib.pyplot as pyplot

    assert plt is pyplot
    fig, ax = pyplot.subplots(figsize=(7, 4))
    ax.plot([t for t, _ in mem], [m for _, m in mem], color="tab:blue", label="MemFree")
    ax.set_xlabel("s since the loads started")
    ax.set_ylabel("MemFree (MiB)", color="tab:blue")
    ax2 = ax.twinx()
    ax2.plot(
        [t for t, _ in late[key]],
        [us for _, us in late[key]],
        "o",
        color="tab:red",
        ms=3,
        label=f"samples >= {TAIL_US} µs",
    )
    ax2.set_ylabel(f"cyclictest samples >= {TAIL_US} µs (µs)", color="tab:red")
    cores, seed, rep, cell = key
    seeded = "" if seed == "0" else f"Linux seed {seed}, "
    ax.set_title(f"linux-rt: {cores} core(s), {cell}, {seeded}repetition {rep}")
    fig.tight_layout()
    p = run_dir / "timeline.png"
    fig.savefig(p, dpi=110)
    pyplot.close(fig)
    return p
