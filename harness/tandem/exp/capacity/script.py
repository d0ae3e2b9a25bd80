"""What each `capacity` boot runs: the RTOS task of one load cell, and the
guest script (Linux's capacities, the benchmarks, /proc/stat around them)."""

from __future__ import annotations

from tandem.exp.capacity.spec import CHANGING
from tandem.exp.scenario import Scenario
from tandem.platform.configs import Workload

STAT_MARK = "@@STAT@@"


def loads(s: Scenario) -> list[int | str]:
    """The load cells: each constant load in %, then `changing` if asked for."""
    out: list[int | str] = list(s.integers("loads_pct"))
    if s.values["changing"]:
        out.append(CHANGING)
    return out


def workload(s: Scenario, load: int | str) -> Workload:
    """The RTOS task for one load cell."""
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


def guest_script(s: Scenario) -> str:
    """One boot: Linux's view of its capacities, the benchmarks, and /proc/stat
    around them (for the steal and irq time Linux saw)."""
    benches = s.texts("benches")
    lines = [
        "echo @@CAPACITY@@ $(cat /sys/devices/system/cpu/cpu[0-9]*/cpu_capacity)",
        "grep '^cpu[0-9]' /proc/stat > /tmp/stat.a",
    ]
    if "hackbench" in benches:
        lines.append(
            f"hackbench -g {s.integer('hackbench_groups')} "
            f"-l {s.integer('hackbench_loops')} || exit 1"
        )
    if "sysbench-cpu" in benches:
        lines.append(
            f"sysbench cpu --threads={s.integer('sysbench_threads')} "
            f"--events={s.integer('sysbench_events')} --time=0 run || exit 1"
        )
    lines += [
        "grep '^cpu[0-9]' /proc/stat > /tmp/stat.b",
        f"echo {STAT_MARK}; cat /tmp/stat.a; echo {STAT_MARK}; cat /tmp/stat.b",
    ]
    return "\n".join(lines) + "\n"
