"""The `rpmsg` experiment's plot: round trip by message size per series."""

from __future__ import annotations

from pathlib import Path

from tandem.exp.common import summary_list


def plot(out: Path, summary: dict[str, object]) -> None:
    """rpmsg.png: each series' median round trip by size, p10 to p90."""
    table = summary_list(summary)
    path = out / "rpmsg.png"
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.0, 4.0))
    xs = [int(str(r["bytes"])) for r in table]
    labels = {
        "rpmsg": "RPMsg (/dev/rpmsgN, tandem-echo)",
        "rpc_block": "/dev/tandem-rpc, block",
        "rpc_block_driver": "/dev/tandem-rpc, block (driver's)",
    }
    for key, label in labels.items():
        med = [float(str(r[f"{key}_median_ns"])) / 1000 for r in table]
        lo = [m - float(str(r[f"{key}_p10_ns"])) / 1000 for m, r in zip(med, table, strict=True)]
        hi = [float(str(r[f"{key}_p90_ns"])) / 1000 - m for m, r in zip(med, table, strict=True)]
        ax.errorbar(xs, med, yerr=[lo, hi], marker="o", capsize=3, label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message bytes")
    ax.set_ylabel("round trip (us), median, p10-p90")
    ax.set_ylim(bottom=0)
    ax.set_title("Echo round trip: RPMsg vs tandem-rpc block mode")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
