"""What each `lhp` boot runs: Linux's boot arguments, the RTOS's periodic
task, and the guest scripts of E1 (spin waits around hackbench), E2
(benchmark times), E3 (dispatch overhead) and the lock-state patch's cost."""

from __future__ import annotations

from tandem.exp.scenario import Scenario
from tandem.platform.configs import Workload

LOCKSTATE = "tandem_lockstate=on"
SPINSTAT = "tandem_spinstat=on"

# Printed before the JSON report that follows (parse.json_after) and before
# the hand-off counts (parse.handoff_waits).
SPIN_RESULT = "@@SPIN@@"
DISPATCH_RESULT = "@@DISPATCH@@"
HANDOFF_RESULT = "@@HANDOFF@@"
CORES_SYSFS = "/sys/bus/platform/devices/tandem/core[0-9]*"


def hackbench_command(s: Scenario) -> str:
    return f"hackbench -g {s.integer('hackbench_groups')} -l {s.integer('hackbench_loops')}"


def sysbench_command(s: Scenario) -> str:
    return (
        f"sysbench mutex --threads={s.integer('sysbench_threads')} "
        f"--mutex-locks={s.integer('sysbench_locks')} --mutex-num=64 run"
    )


def periodic_task(s: Scenario, period_us: int, work_us: int, policy: str) -> Workload:
    return Workload(
        core=s.integer("rtos_core"), period_us=period_us, work_us=work_us, dispatch=policy
    )


def spin_script(s: Scenario, rep: int) -> str:
    phase_s = (rep - 1) * s.integer("sweep_phase_us") / 1e6
    return (
        (f"sleep {phase_s:.6f}\n" if phase_s else "") + "tandem-spin save /tmp/spin.a || exit 1\n"
        f"{hackbench_command(s)} >/dev/null || exit 1\n"
        "tandem-spin save /tmp/spin.b || exit 1\n"
        f"echo {SPIN_RESULT}\n"
        "tandem-spin report /tmp/spin.a /tmp/spin.b || exit 1\n"
    )


# E2's modes: (name, platform config, lock state on, dispatch policy or None)
E2_MODES = (
    ("linux-alone", "linux-only", False, None),
    ("linux-alone+lockstate", "linux-only", True, None),
    ("static", "tandem", True, "static"),
    ("migrate", "tandem", True, "migrate"),
)
