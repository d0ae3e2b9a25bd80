"""What each `capacity` boot runs: the RTOS task of one load cell, and the
guest script (Linux's capacities, each benchmark between two /proc/stat
snapshots, the RTOS's own counts at the end)."""

from __future__ import annotations

from tandem.exp.capacity.spec import CHANGING
from tandem.exp.scenario import Scenario
from tandem.platform.configs import Workload

SNAP_MARK = "@@SNAP@@"
RTOS_MARK = "@@RTOS@@"
CORES_SYSFS = "/sys/bus/platform/devices/tandem/core[0-9]*"


def cells(s: Scenario) -> list[tuple[int | str, str]]:
    """The (RTOS load, mode) cells of one repetition, in boot order: the
    baseline modes with no RTOS load, then every mode at each constant load,
    then every mode at the changing load if asked for."""
    modes = s.texts("modes")
    out: list[tuple[int | str, str]] = [(0, m) for m in s.texts("baseline_modes")]
    loads: list[int | str] = list(s.integers("loads_pct"))
    if s.values["changing"]:
        loads.append(CHANGING)
    out += [(load, mode) for load in loads for mode in modes]
    return out


def workload(s: Scenario, load: int | str) -> Workload:
    """The RTOS task for one load cell (at 0 % it is released every period
    and returns at once: the world switches stay, the load goes)."""
    period = s.integer("period_us")
    if load == CHANGING:
        return Workload(
            core=s.integer("rtos_core"),
            period_us=period,
            work_us=period * s.integer("changing_high_pct") // 100,
            alt_work_us=period * s.integer("changing_low_pct") // 100,
            alt_every_ms=s.integer("changing_every_ms"),
        )
    assert isinstance(load, int)
    return Workload(core=s.integer("rtos_core"), period_us=period, work_us=period * load // 100)


def bench_command(s: Scenario, bench: str) -> str:
    """The shell command of one benchmark."""
    if bench == "hackbench":
        return f"hackbench -g {s.integer('hackbench_groups')} -l {s.integer('hackbench_loops')}"
    return (
        f"sysbench cpu --threads={s.integer('sysbench_threads')} "
        f"--events={s.integer('sysbench_events')} --time=0 run"
    )


def guest_script(s: Scenario) -> str:
    """One boot: Linux's view of its capacities; each benchmark between two
    snapshots of /proc/stat's per-core lines (what Linux counted as busy,
    idle, irq and steal while it ran); the RTOS's releases, deadline misses
    and busy time per core at the end (it publishes them once a second)."""
    lines = [
        "echo @@CAPACITY@@ $(cat /sys/devices/system/cpu/cpu[0-9]*/cpu_capacity)",
        f"snap() {{ echo {SNAP_MARK} $1; grep '^cpu[0-9]' /proc/stat; }}",
    ]
    for bench in s.texts("benches"):
        lines += [
            f"snap {bench}",
            f"{bench_command(s, bench)} || exit 1",
            f"snap {bench}",
        ]
    lines.append(
        f"for c in {CORES_SYSFS}; do echo {RTOS_MARK} ${{c##*core}} $(cat $c/rtos_releases) "
        "$(cat $c/deadline_misses) $(cat $c/rtos_busy_us); done"
    )
    return "\n".join(lines) + "\n"
