"""The `fidelity` experiment's plot: (b), the cross-core interrupt, against
the quantum, with virtual timing's for reference."""

from __future__ import annotations

from pathlib import Path

from tandem.exp.common import summary_list
from tandem.exp.fidelity.rows import Row, judged


def plot(out: Path, summary: dict[str, object]) -> None:
    """fidelity.png: (b)'s worst and median per quantum, idle and busy
    receiver, and the limit path + Q."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summary_list(summary)
    percore = sorted(judged(rows), key=lambda r: int(str(r["quantum_ns"])))
    virtual = [r for r in rows if r["timing"] == "virtual"]
    fig, ax = plt.subplots(figsize=(7.0, 4.2))

    def us(r: Row, probe: str, key: str) -> float | None:
        d = r[probe]
        assert isinstance(d, dict)
        return None if d[key] is None else float(d[key]) / 1000

    def series(rows: list[Row], probe: str, key: str) -> list[float]:
        return [v for r in rows if (v := us(r, probe, key)) is not None]

    for probe, colour in (("notify_idle", "tab:blue"), ("notify_busy", "tab:red")):
        have = [r for r in percore if us(r, probe, "max_ns") is not None]
        qs = [int(str(r["quantum_ns"])) / 1000 for r in have]
        name = probe.replace("notify_", "receiver ")
        ax.plot(qs, series(have, probe, "max_ns"), "o-", color=colour, label=f"{name}: worst")
        ax.plot(
            qs,
            series(have, probe, "median_ns"),
            "s--",
            color=colour,
            alpha=0.6,
            label=f"{name}: median",
        )
        for r in virtual:
            v = us(r, probe, "max_ns")
            if v is not None:
                ax.axhline(v, color=colour, linestyle=":", label=f"{name}: worst in virtual timing")
    have = [r for r in percore if us(r, "notify_idle", "max_ns") is not None]
    if have:
        idle0 = us(have[0], "notify_idle", "max_ns")
        assert idle0 is not None
        qs = [int(str(r["quantum_ns"])) / 1000 for r in percore]
        ax.plot(qs, [idle0 + q for q in qs], color="grey", linewidth=1, label="path + Q")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("quantum Q (µs)")
    ax.set_ylabel("Linux's stamp to the RTOS's, across cores (µs)")
    ax.set_title("(b) cross-core interrupt (RPC doorbell SGI) against the quantum")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "fidelity.png", dpi=110)
    plt.close(fig)
