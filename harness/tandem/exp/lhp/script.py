"""What each `lhp` boot runs: Linux's boot arguments, the RTOS's periodic
task, and the guest scripts of E1 (spin waits around hackbench), E2
(benchmark times), E3 (dispatch overhead) and the lock-state patch's cost."""

from __future__ import annotations

from tandem.exp.scenario import Scenario
from tandem.platform.configs import Workload

LOCKSTATE = "tandem_lockstate=on"
SPINSTAT = "tandem_spinstat=on"

# Markers the scripts print: SPIN_RESULT and DISPATCH_RESULT on the line
# before a JSON report (parse.json_after), HANDOFF_RESULT at the start of
# the line of hand-off counts (parse.handoff_waits).
SPIN_RESULT = "@@SPIN@@"
# Before and after E1's hackbench: per core, the periodic task's starts and
# how many preempted Linux holding or spinning for a lock (parse.preemptions).
PREEMPT_BEFORE = "@@PREEMPT-A@@"
PREEMPT_AFTER = "@@PREEMPT-B@@"
# Around E1's hackbench: each CPU's longest spin wait, which lock, the
# interrupts it took while spinning and its stack (linux/patches/0004;
# parse.longest_waits).
LONGEST = "/sys/kernel/debug/tandem_spin_longest"
LONGEST_BEGIN = "@@LONGEST@@"
LONGEST_END = "@@LONGEST-END@@"
DISPATCH_RESULT = "@@DISPATCH@@"
HANDOFF_RESULT = "@@HANDOFF@@"
CORES_SYSFS = "/sys/bus/platform/devices/tandem/core[0-9]*"


def hackbench_command(s: Scenario) -> str:
    """hackbench as the scenario sizes it."""
    return f"hackbench -g {s.integer('hackbench_groups')} -l {s.integer('hackbench_loops')}"


def sysbench_command(s: Scenario) -> str:
    """sysbench's mutex test as the scenario sizes it."""
    return (
        f"sysbench mutex --threads={s.integer('sysbench_threads')} "
        f"--mutex-locks={s.integer('sysbench_locks')} --mutex-num=64 run"
    )


def periodic_task(s: Scenario, period_us: int, work_us: int, policy: str) -> Workload:
    """The RTOS's periodic task: released on `rtos_core`, dispatched by `policy`."""
    return Workload(
        core=s.integer("rtos_core"), period_us=period_us, work_us=work_us, dispatch=policy
    )


def _preemptions(marker: str) -> str:
    return (
        f"echo {marker} $(for c in {CORES_SYSFS}; do cat $c/dispatch_starts "
        "$c/dispatch_preempted_holding $c/dispatch_preempted_waiting; done)\n"
    )


def spin_script(s: Scenario, rep: int) -> str:
    """E1: Linux's spin-wait histogram around one hackbench run, repetition
    `rep` starting at its own phase of the RTOS period, and what the RTOS's
    jobs preempted meanwhile (each job counts in its core's record as it
    starts)."""
    phase_s = (rep - 1) * s.integer("sweep_phase_us") / 1e6
    return (
        (f"sleep {phase_s:.6f}\n" if phase_s else "")
        + _preemptions(PREEMPT_BEFORE)
        + "tandem-spin save /tmp/spin.a || exit 1\n"
        f"echo 1 > {LONGEST} || exit 1\n"
        f"{hackbench_command(s)} >/dev/null || exit 1\n"
        "tandem-spin save /tmp/spin.b || exit 1\n"
        f"echo {LONGEST_BEGIN}; cat {LONGEST} || exit 1; echo {LONGEST_END}\n"
        + _preemptions(PREEMPT_AFTER)
        + f"echo {SPIN_RESULT}\n"
        "tandem-spin report /tmp/spin.a /tmp/spin.b || exit 1\n"
    )


def e2_modes(policies: list[str]) -> list[tuple[str, str, bool, str | None]]:
    """E2's modes, (name, platform config, lock state on, dispatch policy or
    None): Linux alone without and with the lock-state patch, then the RTOS
    with each policy compared."""
    return [
        ("linux-alone", "linux-only", False, None),
        ("linux-alone+lockstate", "linux-only", True, None),
        *((policy, "tandem", True, policy) for policy in policies),
    ]


def bench_script(s: Scenario) -> str:
    """E2: each of the scenario's benchmarks once."""
    benches = s.texts("benches")
    script = ""
    if "hackbench" in benches:
        script += f"{hackbench_command(s)} || exit 1\n"
    if "sysbench" in benches:
        script += f"{sysbench_command(s)} || exit 1\n"
    return script


def patch_script(s: Scenario) -> str:
    """The lock-state patch's cost: hackbench once to warm up, then `patch_runs` times."""
    runs = s.integer("patch_runs")
    return f"{hackbench_command(s)} >/dev/null || exit 1\n" + (
        f"for i in $(seq {runs}); do {hackbench_command(s)} || exit 1; done\n"
    )


def dispatch_script(s: Scenario) -> str:
    """E3: the RTOS's dispatch histogram over `overhead_seconds` while hackbench
    runs in a loop, then the core records' hand-off counts."""
    seconds = s.integer("overhead_seconds")
    return (
        f"( while :; do {hackbench_command(s)} >/dev/null; done ) &\n"
        "sleep 0.2\n"
        "tandem-lat -d save /tmp/d.a || exit 1\n"
        f"sleep {seconds}\n"
        "tandem-lat -d save /tmp/d.b || exit 1\n"
        "kill %1\n"
        f"echo {DISPATCH_RESULT}\n"
        "tandem-lat -d report /tmp/d.a /tmp/d.b || exit 1\n"
        # The RTOS refreshes the core records once a second.
        "sleep 1.2\n"
        f"echo {HANDOFF_RESULT} $(for c in {CORES_SYSFS}; do cat $c/dispatch_handoffs "
        "$c/dispatch_handoff_wait_max_ticks $c/dispatch_handoff_wait_sum_ticks "
        "$c/deadline_misses; done)\n"
    )
