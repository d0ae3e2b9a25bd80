"""The `memory` experiment's plots: the chase's plateaus, contention on the
shared bus, and the TLB sweep, each against the profile's figures."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from tandem.exp.memory.spec import KIB

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def plot(out: Path, summary: Mapping[str, object]) -> None:
    """plateaus.png, contention.png, tlb.png."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    profiles = summary["profiles"]
    assert isinstance(profiles, dict)
    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    for name, p in profiles.items():
        stall = p["chase_stall_ns"]
        xs = [int(k) / KIB for k in stall]
        line = ax.plot(xs, list(stall.values()), "o-", label=f"{name}: measured")[0]
        for pl in p["plateaus"]:
            ax.axhline(pl["expected_ns"], color=line.get_color(), linestyle=":", linewidth=1)
    ax.set_xscale("log", base=2)
    _save(
        fig,
        ax,
        out / "plateaus.png",
        "chase size (KiB)",
        "stall per load (ns), model minus no model",
        "Pointer chase: plateaus (dotted: the profile's latencies)",
    )

    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    baseline = summary["baseline"]
    assert isinstance(baseline, dict)
    for name, p in [*profiles.items(), ("no model", {"contention": baseline["contention"]})]:
        lat = p["contention"]["latency_ns"]
        ax.plot([int(k) for k in lat], list(lat.values()), "o-", label=name)
        if "profile" in p:
            base0 = lat["0"]
            service = p["profile"]["bus_service_ns"]
            ax.plot(
                [int(k) for k in lat],
                [base0 + int(k) * service for k in lat],
                ":",
                color="grey",
                linewidth=1,
            )
    _save(
        fig,
        ax,
        out / "contention.png",
        "other cores streaming through DRAM",
        "core 0's chase, ns per load",
        "Contention on the shared bus (dotted: + one bus service time per core)",
    )

    fig, ax = plt.subplots(figsize=(7.0, 4.2))
    for name, p in profiles.items():
        stall = p["tlb_stall_ns"]
        line = ax.plot([int(k) for k in stall], list(stall.values()), "o-", label=name)[0]
        k = p["tlb_knees"]
        for entries in (k["micro_entries"], k["main_entries"]):
            ax.axvline(entries, color=line.get_color(), linestyle=":", linewidth=1)
    ax.set_xscale("log", base=2)
    _save(
        fig,
        ax,
        out / "tlb.png",
        "pages visited, one load each (one physical page)",
        "stall per load (ns)",
        "TLB reach (dotted: the profile's micro and main TLB sizes)",
    )


def _save(fig: Figure, ax: Axes, path: Path, xlabel: str, ylabel: str, title: str) -> None:
    """Labels a plot, writes it to `path` and closes it."""
    import matplotlib.pyplot as plt

    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
