"""Reading the `boot` experiment's boots: each boot's host wall times from
its unit record (exp/units.py writes them from run_exec's clock), and the
run's medians and extremes."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tandem.errors import TandemError


@dataclass(frozen=True)
class BootSample:
    """One boot: host seconds to the first shell command, and from the
    commands' end to QEMU's exit; the host that booted it and its load
    average just before."""

    run: int
    boot_s: float
    poweroff_s: float
    host: str
    host_loadavg_before: float


def _number(host: Mapping[str, object], key: str, where: str) -> float:
    value = host.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TandemError(f"{where}: its record has no '{key}' of the host")
    return float(value)


def sample(run: int, record: Mapping[str, object], where: str) -> BootSample:
    """Boot `run`'s times from its unit record; a boot whose QEMU did not
    exit cleanly is an error (as the bench always refused it)."""
    status = record.get("qemu_status")
    if status != 0:
        raise TandemError(f"{where}: QEMU exited with status {status}, not 0")
    host = record.get("host")
    if not isinstance(host, Mapping):
        raise TandemError(f"{where}: its record says nothing of the host")
    return BootSample(
        run=run,
        # To the millisecond, as the bench always kept them.
        boot_s=round(_number(host, "boot_s", where), 3),
        poweroff_s=round(_number(host, "poweroff_s", where), 3),
        host=str(host.get("name", "?")),
        host_loadavg_before=_number(host, "loadavg_before", where),
    )


def times(samples: Sequence[BootSample]) -> dict[str, object]:
    """The summary's figures: the boot's median and range, and the
    power-off's median and worst."""
    if not samples:
        raise TandemError("boot: no boot to summarize")
    boots = [s.boot_s for s in samples]
    offs = [s.poweroff_s for s in samples]
    return {
        "boot_median_s": round(statistics.median(boots), 3),
        "boot_min_s": min(boots),
        "boot_max_s": max(boots),
        "poweroff_median_s": round(statistics.median(offs), 3),
        "poweroff_max_s": max(offs),
    }
