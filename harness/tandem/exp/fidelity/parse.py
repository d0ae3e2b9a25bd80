"""Reading a `fidelity` boot: the probes' samples from its output, what it
cost the host from its record, and its row of the summary."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tandem.errors import TandemError
from tandem.exp.fidelity.spec import MARK, PROBES, Cell
from tandem.instruments.hostmarks import Reading, between


@dataclass
class Samples:
    """What one boot measured in the guest: each probe's samples (ns), the
    overlap loop's length in instructions, RPC calls the server had started
    before the doorbell (no notify sample)."""

    probes: dict[str, list[int]] = field(default_factory=dict)
    overlap_insns: int = 0
    server_first: int = 0
    # hackbench's own "Time:" (guest time, s); None if it printed none.
    hackbench_guest_s: float | None = None
    # Hand-off rounds a core was interrupted in (the RTOS's turn, an IRQ,
    # QEMU running another vCPU): their times, not among the samples.
    handoff_interrupted: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class HostCost:
    """What one boot cost the host (e): wall seconds of the boot (QEMU's
    start to the first command) and of hackbench, and QEMU's user CPU
    seconds to the first probe and over hackbench (None where /proc could
    not say). A boot replayed or without readings: 0 s, and no CPU time."""

    boot_s: float = 0.0
    hackbench_s: float = 0.0
    boot_user_s: float | None = None
    hackbench_user_s: float | None = None

    @classmethod
    def of(cls, boot_s: float | None, marks: Mapping[str, Reading]) -> HostCost:
        """From the unit's record: its boot seconds and its marks' readings."""
        # The boot's CPU time: to the first probe's mark.
        first = marks.get("overlap")
        hackbench = between(marks, "hackbench", "end")
        return cls(
            boot_s=round(boot_s or 0.0, 3),
            hackbench_s=0.0 if hackbench is None else round(hackbench.wall_s, 3),
            boot_user_s=(
                None if first is None or first.user_cpu_s is None else round(first.user_cpu_s, 2)
            ),
            hackbench_user_s=(
                None
                if hackbench is None or hackbench.user_cpu_s is None
                else round(hackbench.user_cpu_s, 2)
            ),
        )


def parse(lines: Sequence[str], where: str) -> Samples:
    """The probes' samples from one boot's output."""
    out = Samples(probes={p: [] for p in PROBES})
    probe = ""
    for line in lines:
        f = line.split()
        if not f:
            continue
        try:
            if f[0] == MARK:
                probe = f[1]
            elif f[0] == "overlap" and probe == "overlap" and len(f) == 3:
                out.overlap_insns = int(f[1])
                out.probes["overlap"].append(int(f[2]))
            elif f[0] == "handoff" and probe == "handoff" and len(f) == 2:
                out.probes["handoff"].append(int(f[1]))
            elif f[0] == "handoff" and probe == "handoff" and f[2:] == ["interrupted"]:
                # A round a core did not spin through (tandem-probe.c): kept
                # apart, its time is the interruption's.
                out.handoff_interrupted.append(int(f[1]))
            elif f[0] == "rt" and probe.startswith("notify") and len(f) == 6:
                # 0: the server, still looking for work after the last call,
                # found this one before the doorbell rang.
                if int(f[5]) == 0:
                    out.server_first += 1
                else:
                    out.probes[probe].append(int(f[5]))
            elif f[0] == "Time:" and probe == "hackbench" and len(f) == 2:
                out.hackbench_guest_s = float(f[1])
            elif f[0] == "error":
                raise TandemError(f"{where}: a probe failed: {line}")
        except ValueError as e:
            raise TandemError(f"{where}: cannot read '{line}': {e}") from None
    if not out.probes["overlap"]:
        raise TandemError(f"{where}: no overlap samples")
    # In virtual timing CPU 2 sees the flag only after a turn of another
    # vCPU, so every round may be flagged interrupted: rounds are required,
    # uninterrupted ones are not (the report shows their count).
    if not out.probes["handoff"] and not out.handoff_interrupted:
        raise TandemError(f"{where}: no handoff rounds")
    if not out.probes["notify_idle"] and not out.probes["notify_busy"] and not out.server_first:
        raise TandemError(f"{where}: no RPC calls measured")
    return out


def stats(values: list[int]) -> dict[str, float | None]:
    """min / median / max (ns; None without samples) and the count."""
    if not values:
        return {"samples": 0, "min_ns": None, "median_ns": None, "max_ns": None}
    return {
        "samples": len(values),
        "min_ns": min(values),
        "median_ns": statistics.median(values),
        "max_ns": max(values),
    }


def row(cell: Cell, s: Samples, cost: HostCost, comparison: str | None) -> dict[str, object]:
    """One boot's row of the summary (`comparison`: what it was booted
    without, for a boot only compared with)."""
    out: dict[str, object] = {
        "timing": cell.timing,
        "quantum_ns": cell.quantum_ns,
        "rep": cell.rep,
        "causal": cell.causal if cell.timing == "percore" else None,
        "memmodel": cell.memmodel,
        "boot_s": cost.boot_s,
        "hackbench_s": cost.hackbench_s,
        "hackbench_guest_s": s.hackbench_guest_s,
        "boot_user_s": cost.boot_user_s,
        "hackbench_user_s": cost.hackbench_user_s,
        "overlap_insns": s.overlap_insns,
        "notify_server_first": s.server_first,
    }
    for p in PROBES:
        out[p] = stats(s.probes[p])
    handoff = s.probes["handoff"]
    out["handoff_early"] = sum(1 for v in handoff if v < 0)
    out["handoff_interrupted"] = len(s.handoff_interrupted)
    over = out["overlap"]
    assert isinstance(over, dict)
    out["overlap_median_error_ns"] = over["median_ns"] - s.overlap_insns
    if comparison is not None:
        out["comparison"] = comparison
    return out
