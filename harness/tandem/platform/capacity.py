"""Capacity-aware Linux (paper 000 §4): how much of each core the RTOS leaves
Linux, told to Linux statically through the device tree, dynamically through
the monitor's Arm PV time (stolen time), or both.

Modes (`BootOptions.capacity`, `--capacity`):

- `none`: Linux sees equal cores and no steal (the default: every other
  experiment boots as before).
- `static`: each Linux core's `capacity-dmips-mhz` in the device tree is
  (1 - U) x 1024, U being the RTOS workload's declared utilisation on that
  core; Linux shows it in /sys/devices/system/cpu/cpu*/cpu_capacity.
- `steal`: the monitor offers PV time and accounts stolen time; Linux shows
  it as steal in /proc/stat and its scheduler takes it off the core's capacity.
- `both`: the two together.

Steal off is the monitor answering NOT_SUPPORTED, not Linux's `no-steal-acc`:
that parameter only keeps steal out of the run-queue clock, and /proc/stat
would still count it.
"""

from __future__ import annotations

from tandem.errors import TandemError
from tandem.platform.configs import Workload

MODES = ("none", "static", "steal", "both")
# Linux's full capacity (SCHED_CAPACITY_SCALE).
SCALE = 1024


def check(mode: str) -> None:
    """Refuses a mode that does not exist."""
    if mode not in MODES:
        raise TandemError(f"--capacity must be one of {', '.join(MODES)}, got '{mode}'")


def uses_static(mode: str) -> bool:
    """Whether the device tree carries per-core capacities."""
    return mode in ("static", "both")


def uses_steal(mode: str) -> bool:
    """Whether the monitor offers PV time (stolen-time accounting)."""
    return mode in ("steal", "both")


def utilisation(workload: Workload | None, core: int) -> float:
    """The RTOS's declared utilisation C/T on `core`.

    The periodic workload declares its work and period; with an alternating
    load the larger work counts (a static capacity must hold in either
    phase). The demo declares its job as a loop count, not a time, and
    measures about 0.7 % of a core (docs/rtos.md), so it counts as 0.
    """
    if workload is None or workload.core != core:
        return 0.0
    return max(workload.work_us, workload.alt_work_us) / workload.period_us


def static_capacities(workload: Workload | None, cores: list[int]) -> dict[int, int]:
    """`capacity-dmips-mhz` for each of Linux's `cores`: (1 - U) x 1024,
    at least 1 (a zero capacity would make Linux divide by it). Linux scales
    the values so that the largest becomes 1024."""
    return {c: max(1, round((1.0 - utilisation(workload, c)) * SCALE)) for c in cores}
