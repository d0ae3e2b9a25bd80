"""A hostile or broken Linux cannot delay the RTOS (issue 21): Linux attacks
the RTOS's time from three cores at once, and the RTOS's cyclic jobs and the
timer latency of the attacked core are checked. Per-core timing, so the
cores really run at once and a delay is the system's, not QEMU's turns.

One boot, three phases: Linux quiet, a doorbell flood, an SMC storm.
`TANDEM_ATTACK_S` sets each phase's seconds (default 2 for `make test`; the
issue's acceptance runs 10), `TANDEM_QUIET_S` the quiet phase's alone
(default the same), `TANDEM_QUANTUM_NS` the per-core timing quantum
(default 1000).

Each test's body is a function of the board and its settings (`Settings`):
the tests here run them on virt with the settings above,
test_hostile_imx8mp.py on the i.MX 8M Plus EVK with shorter ones (issue
37)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import pytest

from tandem.platform import abi_generated as abi
from tandem.platform import rtos_status
from tandem.platform.apps import AppRun
from tandem.platform.board import DEFAULT_BOARD, load_board
from tandem.platform.boot import run_exec
from tandem.platform.boot_options import BootOptions
from tandem.platform.configs import Workload, load_config
from tandem.platform.timing import DEFAULT_QUANTUM_NS, Timing

# The RTOS core under attack: the RTOS alone runs there (config heteroos,
# Linux on cores 0-2), so between its jobs the core waits in the monitor;
# it serves every RPC channel.
TARGET = 3
RPC_NOTIFY = 0xC200_0002
# PSCI AFFINITY_INFO (64-bit) of core 0: answered under the monitor's PSCI lock.
AFFINITY_INFO = 0xC400_0004
ATTACK_S = int(os.environ.get("TANDEM_ATTACK_S", "2"))
QUIET_S = int(os.environ.get("TANDEM_QUIET_S", str(ATTACK_S)))
QUANTUM_NS = int(os.environ.get("TANDEM_QUANTUM_NS", str(DEFAULT_QUANTUM_NS)))
# The shared core's attacks: `TANDEM_SHARED_ATTACK_S` sets each phase's
# seconds (default 1 for `make test`; the acceptance runs 10).
SHARED_ATTACK_S = int(os.environ.get("TANDEM_SHARED_ATTACK_S", "1"))
# The concurrent fuzz: `TANDEM_FUZZ_CALLS` sets the calls in total (default
# 40 000 for `make test`; the acceptance runs 1 000 000).
FUZZ_CALLS = int(os.environ.get("TANDEM_FUZZ_CALLS", "40000"))
# Linux rewriting RPC requests while the RTOS's server reads them:
# `TANDEM_SCRIBBLE_S` seconds per scribbler (default 3).
SCRIBBLE_S = int(os.environ.get("TANDEM_SCRIBBLE_S", "3"))
# How many times a CPU_ON races a SYSTEM_RESET: `TANDEM_RACES` (default 12
# for `make test`; the acceptance runs 1 000).
RACES = int(os.environ.get("TANDEM_RACES", "12"))


@dataclass(frozen=True)
class Settings:
    """How long the attacks run: each phase's seconds (the RTOS-only core's
    attacks, Linux quiet, the shared core's attacks, the scribblers), the
    concurrent fuzz's calls in total, the CPU_ON / SYSTEM_RESET races, and
    the per-core timing quantum."""

    attack_s: int
    quiet_s: int
    shared_attack_s: int
    fuzz_calls: int
    races: int
    scribble_s: int
    quantum_ns: int = DEFAULT_QUANTUM_NS


# `make test`'s on virt (the environment's overrides above).
VIRT = Settings(ATTACK_S, QUIET_S, SHARED_ATTACK_S, FUZZ_CALLS, RACES, SCRIBBLE_S, QUANTUM_NS)


def attacks(seconds: int) -> dict[str, str]:
    """The attacks on the RTOS-only core, each `seconds` long."""
    return {
        # RPC_NOTIFY as fast as three cores can issue it: the monitor rings
        # the server core's doorbell for each, with nothing for the server
        # to do.
        "flood": f"tandem-smc repeat {seconds} {RPC_NOTIFY:#x} 0",
        # A PSCI call that takes the monitor's lock, which an idle RTOS
        # core's look loop took on every pass before issue 21.
        "storm": f"tandem-smc repeat {seconds} {AFFINITY_INFO:#x} 0 0",
    }


def script(s: Settings = VIRT) -> str:
    """Timer-latency snapshots of TARGET around each phase; each attack runs
    on cores 0, 1 and 2 at once."""
    out = ["set -e", "tandem-lat save /tmp/quiet", f"sleep {s.quiet_s}", "tandem-lat save /tmp/q1"]
    last = "q1"
    for name, command in attacks(s.attack_s).items():
        out += [
            f"for c in 0 1 2; do taskset -c $c {command} > /tmp/{name}$c & done",
            "wait",
            f"tandem-lat save /tmp/{name}",
            f'for c in 0 1 2; do echo "{name}-calls: $(cat /tmp/{name}$c)"; done',
            f'echo "{name}: $(tandem-lat report /tmp/{last} /tmp/{name} {TARGET})"',
        ]
        last = name
    out.append(f'echo "quiet: $(tandem-lat report /tmp/quiet /tmp/q1 {TARGET})"')
    return "\n".join(out) + "\n"


def percentile(histogram: list[list[float]], fraction: float) -> float:
    """The smallest latency (ns) at or below which `fraction` of the
    samples of a `tandem-lat report` histogram ([ns, count] pairs) lie."""
    total = sum(int(n) for _, n in histogram)
    seen = 0
    for ns, n in histogram:
        seen += int(n)
        if seen >= fraction * total:
            return float(ns)
    raise ValueError("an empty histogram")


def within_twice(ns: float, reference: float, tick_ns: float) -> bool:
    """Whether a latency read as `ns` may be within twice one read as
    `reference`, both read off a counter of `tick_ns` ticks: a reading is
    the latency rounded down to a tick, so the reference's latency is less
    than `reference + tick_ns`, and a latency below twice that reads at most
    `2 * reference + tick_ns` (16 ns on virt's 62.5 MHz counter, 125 ns on
    the EVK's 8 MHz one, where a quiet core's latency often reads 0)."""
    return ns <= 2 * reference + tick_ns


@pytest.mark.qemu
def test_floods_and_storms_from_three_cores_do_not_cost_the_rtos_a_release() -> None:
    floods_and_storms(DEFAULT_BOARD, VIRT)


def floods_and_storms(board: str, s: Settings) -> None:
    """test_floods_and_storms_from_three_cores_do_not_cost_the_rtos_a_release
    on `board`."""
    options = BootOptions(
        board=load_board(board),
        timing=Timing("percore", s.quantum_ns),
        config=load_config("heteroos"),
        rpc_cores=(TARGET,),
    )
    r = run_exec(options, script(s), timeout_s=600 + 60 * s.attack_s + 10 * s.quiet_s)
    assert r.status == 0, r.console_log
    tagged: dict[str, list[str]] = {}
    for line in r.lines:
        tag, sep, rest = line.partition(": ")
        if sep:
            tagged.setdefault(tag, []).append(rest)
    # Every call answered, each the same as the first.
    names = list(attacks(s.attack_s))
    for name in names:
        calls = tagged[f"{name}-calls"]
        assert len(calls) == 3 and all("0 answers differed" in c for c in calls), calls
    # No release missed or lost on any core, across the whole boot.
    rtos_status.check_ran_on(rtos_status.last(r.secure_log.read_text()))
    lat = {name: json.loads(tagged[name][0]) for name in ("quiet", *names)}
    quiet, tick = float(lat["quiet"]["max_ns"]), float(lat["quiet"]["tick_ns"])
    print(
        f"{board}, percore, Q = {s.quantum_ns} ns, quiet {s.quiet_s} s, "
        f"attacks {s.attack_s} s, core {TARGET}, a tick {tick} ns:"
    )
    for name in ("quiet", *names):
        worst, hist = lat[name]["max_ns"], lat[name]["histogram"]
        tail = ", ".join(f"p{100 * f:g} {percentile(hist, f):g}" for f in (0.5, 0.99, 0.999))
        print(f"{name}: {lat[name]['samples']} samples, worst {worst} ns, {tail} ns; {hist}")
        seconds = s.quiet_s if name == "quiet" else s.attack_s
        assert int(lat[name]["samples"]) >= 1000 * seconds - 10, name
    # The storm leaves the timer latency within twice its quiet worst.
    assert within_twice(float(lat["storm"]["max_ns"]), quiet, tick), lat["storm"]
    # So does the flood, up to its 99.9th percentile (before issue 21's
    # fixes: 528 ns at Q = 1 us, 10 s, against 80 quiet; docs/security.md).
    # Its single worst sample is not held to it: a release that falls into
    # one of the RTOS's own passes with IRQs masked (the demo's PING / PONG
    # hand-off, up to about 1 us) waits for it, with Linux idle too
    # (TANDEM_QUIET_S=120: 560 ns), and the flood moves those passes in
    # time, so which phase meets one is chance, not the flood's doing.
    flood = percentile(lat["flood"]["histogram"], 0.999)
    assert within_twice(flood, quiet, tick), (flood, lat["flood"])


# The same attacks on a core the RTOS shares with Linux (SafeG's arrangement,
# config `tandem`), and the ones only a shared core has: Linux's own calls
# and traps at EL3 on that core, and its CPU_ON / CPU_OFF. On the attacked
# core the RTOS runs a periodic task (900 us of every 1.3 ms, priority 3)
# beside the demo's 1 ms jobs (priority 4), so the demo's releases keep
# falling into the task's work: a timer interrupt hidden until the task
# ends (issue 31, hole 1) shows as a latency of hundreds of us.
# Settings.shared_attack_s: each phase's seconds.
SHARED = 3
PERIOD_US, WORK_US = 1300, 900
HOSTILE = "/sys/kernel/debug/tandem-hostile"
ONLINE = "/sys/devices/system/cpu/cpu{}/online"
CORE_RECORD = "/sys/bus/platform/devices/tandem/core{}/{}"
OTHERS = "0 1 2"


@dataclass(frozen=True)
class Phase:
    """Attacks run at once ((cores, command) each), and the phase whose
    timer latency on SHARED this one's is held to (within twice its p99.9);
    None for a phase that is itself a reference."""

    name: str
    attacks: tuple[tuple[str, str], ...]
    against: str | None
    offline: bool = False


def shared_phases(seconds: int) -> tuple[Phase, ...]:
    """The phases on the shared core, each `seconds` long."""
    flood = f"tandem-smc repeat {seconds} {RPC_NOTIFY:#x} 0"
    storm = f"tandem-smc repeat {seconds} {AFFINITY_INFO:#x} 0 0"
    traps = f"sh -c 'echo {seconds} > {HOSTILE}/trap_group0; cat {HOSTILE}/trap_group0'"
    cpu_on = f"tandem-smc cpu-on-loop {seconds} {SHARED} $entry"
    return (
        # The acceptance: each attack from the other three cores, against quiet.
        Phase("flood", ((OTHERS, flood),), "quiet"),
        Phase("storm", ((OTHERS, storm),), "quiet"),
        # The GIC's Group 0 registers, which trap to EL3 (hole 3), in a
        # kernel loop with interrupts masked (tandem_hostile).
        Phase("traps", ((OTHERS, traps),), "quiet"),
        # CPU_ON of the attacked core, offline in Linux, at an entry that
        # calls CPU_OFF: the monitor rings its doorbell for every accepted
        # call (hole 1).
        Phase("cpu-on", ((OTHERS, cpu_on),), "quiet", offline=True),
        # The attacked core's own Linux at EL3: each call or trap costs the
        # RTOS at most its own length there (the references), and no more
        # when the other cores do the same at once: no wait for the PSCI
        # lock (hole 6) or the console's (hole 3).
        Phase("own-calls", ((str(SHARED), storm),), None),
        Phase("own-calls-in-storm", ((str(SHARED), storm), (OTHERS, storm)), "own-calls"),
        Phase("own-traps", ((str(SHARED), traps),), None),
        Phase("own-traps-among-traps", ((str(SHARED), traps), (OTHERS, traps)), "own-traps"),
    )


def shared_script(s: Settings = VIRT) -> str:
    """Timer-latency snapshots of SHARED around each phase."""
    out = [
        "set -e",
        "insmod /lib/modules/tandem_hostile.ko",
        f"entry=$(cat {HOSTILE}/cpu_off_entry)",
        "tandem-lat save /tmp/quiet",
        f"sleep {s.quiet_s}",
        "tandem-lat save /tmp/q1",
        f'echo "quiet: $(tandem-lat report /tmp/quiet /tmp/q1 {SHARED})"',
    ]
    last = "q1"
    for phase in shared_phases(s.shared_attack_s):
        if phase.offline:
            out.append(f"echo 0 > {ONLINE.format(SHARED)}")
        for i, (cores, command) in enumerate(phase.attacks):
            log = f"/tmp/{phase.name}-{i}-$c"
            out.append(f"for c in {cores}; do taskset -c $c {command} > {log} & done")
        out += ["wait", f"tandem-lat save /tmp/{phase.name}"]
        for i, (cores, _) in enumerate(phase.attacks):
            log = f"/tmp/{phase.name}-{i}-$c"
            out.append(f'for c in {cores}; do echo "{phase.name}-calls: $(cat {log})"; done')
        out.append(
            f'echo "{phase.name}: $(tandem-lat report /tmp/{last} /tmp/{phase.name} {SHARED})"'
        )
        if phase.offline:
            out.append(f"echo 1 > {ONLINE.format(SHARED)}")
        last = phase.name
    refused = CORE_RECORD.format("$c", "refused_traps")
    out += [
        'echo "online: $(cat /sys/devices/system/cpu/online)"',
        f'for c in 0 1 2 3; do echo "refused$c: $(cat {refused})"; done',
        f'echo "cpu-offs: $(cat {CORE_RECORD.format(SHARED, "cpu_offs")})"',
        "sleep 1.2  # the RTOS's next status line covers all of it",
    ]
    return "\n".join(out) + "\n"


@pytest.mark.qemu
def test_attacks_on_a_core_the_rtos_shares_with_linux_cost_it_nothing() -> None:
    attacks_on_a_shared_core(DEFAULT_BOARD, VIRT)


def attacks_on_a_shared_core(board: str, s: Settings) -> None:
    """test_attacks_on_a_core_the_rtos_shares_with_linux_cost_it_nothing on
    `board`."""
    phases = shared_phases(s.shared_attack_s)
    options = BootOptions(
        board=load_board(board),
        timing=Timing("percore", s.quantum_ns),
        config=load_config("tandem"),
        rpc_cores=(SHARED,),
        apps=(AppRun.of("periodic", core=SHARED, period_us=PERIOD_US, work_us=WORK_US),),
    )
    # Generous: a 10 s acceptance run takes over 25 min of host time on a
    # busy 2-core machine.
    r = run_exec(
        options, shared_script(s), timeout_s=600 + 400 * s.shared_attack_s + 40 * s.quiet_s
    )
    assert r.status == 0, r.console_log
    tagged: dict[str, list[str]] = {}
    for line in r.lines:
        tag, sep, rest = line.partition(": ")
        if sep:
            tagged.setdefault(tag, []).append(rest)
    names = ("quiet", *(p.name for p in phases))
    lat = {name: json.loads(tagged[name][0]) for name in names}
    tick = float(lat["quiet"]["tick_ns"])
    print(
        f"{board}, percore, Q = {s.quantum_ns} ns, quiet {s.quiet_s} s, "
        f"phases {s.shared_attack_s} s, a tick {tick} ns:"
    )
    for name in names:
        worst, hist = lat[name]["max_ns"], lat[name]["histogram"]
        tail = ", ".join(f"p{100 * f:g} {percentile(hist, f):g}" for f in (0.5, 0.99, 0.999))
        print(f"{name}: {lat[name]['samples']} samples, worst {worst} ns, {tail} ns")
        seconds = s.quiet_s if name == "quiet" else s.shared_attack_s
        assert int(lat[name]["samples"]) >= 1000 * seconds - 10, name
    calls = [c for p in phases for c in tagged[f"{p.name}-calls"]]
    repeats = [c for c in calls if c.startswith("repeat: ")]
    assert repeats and all("0 answers differed" in c for c in repeats), repeats
    # Every trapped access was refused with an Undefined Instruction, each
    # counted by the monitor on its core, and none logged.
    undefined = 0
    for line in (c for c in calls if c.startswith("accesses ")):
        accesses, _, rest = line.removeprefix("accesses ").partition(" undefined ")
        assert int(accesses) > 0 and rest.split()[0] == accesses, line
        undefined += int(accesses)
    refused = sum(int(tagged[f"refused{c}"][0]) for c in range(4))
    assert undefined > 0 and refused == undefined, (refused, undefined)
    secure = r.secure_log.read_text()
    assert "unexpected trap" not in secure
    accepted = 0
    for line in (c for c in calls if c.startswith("cpu-on-loop: ")):
        assert line.endswith(" 0 failures"), line
        accepted += int(line.split(" accepted")[0].rsplit(" ", 1)[1])
    assert accepted > 0, "the core was turned on and off again"
    assert int(tagged["cpu-offs"][0]) >= accepted, "each started core turned itself off"
    assert tagged["online"] == ["0-3"]
    # No release missed or lost: the demo's 1 ms jobs on every core, and on
    # the attacked one the periodic task's too.
    status = rtos_status.last(secure)
    assert status.missed == 0, status
    for core, (jobs, _) in status.cores.items():
        want = status.seconds * 1000 + (status.seconds * 1_000_000 // PERIOD_US) * (core == SHARED)
        assert abs(jobs - want) <= 3, (core, jobs, want)
    for phase in phases:
        if phase.against is None:
            continue
        p999 = percentile(lat[phase.name]["histogram"], 0.999)
        reference = percentile(lat[phase.against]["histogram"], 0.999)
        assert within_twice(p999, reference, tick), (
            phase.name,
            p999,
            phase.against,
            reference,
            lat[phase.name],
        )


# The concurrent fuzz: SMC fuzzing on every core at once, while Linux takes
# cores 1-3 off and on again (PSCI CPU_OFF and CPU_ON) under it.
# Settings.fuzz_calls: the calls in total.
FUZZ_CORES = 4
# One round of hotplug: cores 1-3 offline and online again (PSCI CPU_OFF,
# CPU_ON), a line naming any core that failed.
_ONLINE = "/sys/devices/system/cpu/cpu$c/online"
HOTPLUG_ROUND = (
    f"for c in 1 2 3; do echo 0 > {_ONLINE} && echo 1 > {_ONLINE} "
    '|| echo "hotplug of $c failed"; done'
)


def fuzz_script(calls_per_core: int) -> str:
    """Fuzzers on every core and a hotplug loop, all at once; the hotplug
    loop runs for as long as any fuzzer does."""
    return f"""\
for c in $(seq 0 {FUZZ_CORES - 1}); do
    taskset -c $c tandem-smc fuzz {calls_per_core} $((0x5eed + c)) > /tmp/fuzz$c 2>/dev/null &
    pids="$pids $!"
done
running() {{ for p in $pids; do kill -0 $p 2>/dev/null && return 0; done; return 1; }}
rounds=0
while running; do
    {HOTPLUG_ROUND}
    rounds=$((rounds + 1))
done
wait
echo "hotplug: $rounds rounds"
for c in $(seq 0 {FUZZ_CORES - 1}); do echo "fuzz$c: $(cat /tmp/fuzz$c)"; done
echo "online: $(cat /sys/devices/system/cpu/online)"
sleep 1.2  # the RTOS's next status line (one a second) covers all of it
"""


@pytest.mark.qemu
def test_concurrent_fuzz_with_hotplug_answers_every_call_and_costs_the_rtos_nothing() -> None:
    concurrent_fuzz_with_hotplug(DEFAULT_BOARD, VIRT)


def concurrent_fuzz_with_hotplug(board: str, s: Settings) -> None:
    """test_concurrent_fuzz_with_hotplug_answers_every_call_and_costs_the_rtos_nothing
    on `board`."""
    per_core = s.fuzz_calls // FUZZ_CORES
    options = BootOptions(
        board=load_board(board),
        timing=Timing("percore"),
        config=load_config("tandem"),
        smp=FUZZ_CORES,
    )
    r = run_exec(options, fuzz_script(per_core), timeout_s=600 + s.fuzz_calls // 50)
    assert r.status == 0, r.console_log
    assert not any("hotplug of" in line for line in r.lines), r.console_log
    fuzz = [line for line in r.lines if line.startswith("fuzz") and ": fuzz: " in line]
    assert len(fuzz) == FUZZ_CORES, r.console_log
    for line in fuzz:
        assert f"{per_core} calls returned" in line and ", 0 failures" in line, line
    rounds = int(next(line for line in r.lines if line.startswith("hotplug: ")).split()[1])
    assert rounds >= 1, "the hotplug loop ran while the fuzzers did"
    assert f"online: 0-{FUZZ_CORES - 1}" in r.lines
    rtos_status.check_ran_on(rtos_status.last(r.secure_log.read_text()))
    print(f"{board}: {s.fuzz_calls} calls on {FUZZ_CORES} cores, {rounds} hotplug rounds")


def hotplug_under_load_script() -> str:
    """RPC stress clients, hackbench and the hotplug loop at once."""
    return f"""\
tandem-rpc stress -j 8 -n 60 -k 4 -s 8192 > /tmp/stress 2>&1 & stress=$!
hackbench -g 2 -l 150 > /dev/null 2>&1 & bench=$!
rounds=0
while kill -0 $stress 2>/dev/null || kill -0 $bench 2>/dev/null; do
    {HOTPLUG_ROUND}
    rounds=$((rounds + 1))
done
wait $stress; echo "stress: status $? $(tail -n 1 /tmp/stress)"
wait $bench; echo "hackbench: status $?"
echo "hotplug: $rounds rounds"
echo "steal: $(grep '^cpu ' /proc/stat | cut -d ' ' -f 10)"
echo "oops: $(dmesg | grep -c -e 'Unable to handle' -e 'Oops' -e 'BUG:' -e 'WARNING:')"
echo "online: $(cat /sys/devices/system/cpu/online)"
sleep 1.2
"""


@pytest.mark.qemu
def test_hotplug_under_rpc_steal_time_and_migrate_dispatch() -> None:
    """CPU_OFF / CPU_ON of cores 1-3 again and again while RPC clients
    stress four channels, Linux accounts stolen time and the RTOS's
    periodic task (300 us of every ms, released on core 1) is dispatched
    `migrate`, away from Linux's lock holders."""
    hotplug_under_rpc(DEFAULT_BOARD)


def hotplug_under_rpc(board: str) -> None:
    """test_hotplug_under_rpc_steal_time_and_migrate_dispatch on `board`."""
    options = BootOptions(
        board=load_board(board),
        timing=Timing("percore"),
        config=load_config("tandem"),
        capacity="steal",
        workload=Workload(core=1, period_us=1000, work_us=300, dispatch="migrate"),
        extra_bootargs="tandem_lockstate=on",
    )
    r = run_exec(options, hotplug_under_load_script(), timeout_s=900)
    assert r.status == 0, r.console_log
    tagged = dict(line.split(": ", 1) for line in r.lines if ": " in line)
    assert not any("hotplug of" in line for line in r.lines), r.console_log
    assert tagged["stress"].startswith("status 0"), tagged["stress"]
    assert tagged["hackbench"] == "status 0"
    assert int(tagged["hotplug"].split()[0]) >= 1
    assert int(tagged["steal"]) > 0, "Linux accounted stolen time"
    assert tagged["oops"] == "0", r.console_log
    assert tagged["online"] == "0-3"
    # The one periodic task: released every ms, never missed, none lost.
    status = rtos_status.last(r.secure_log.read_text())
    jobs = sum(j for j, _ in status.cores.values())
    assert status.missed == 0 and abs(jobs - 1000 * status.seconds) <= 3, status
    print(f"hotplug rounds {tagged['hotplug']}; stress: {tagged['stress']}; {jobs} jobs")


@pytest.mark.qemu
def test_requests_rewritten_while_the_server_reads_them_get_only_answers_it_can_give() -> None:
    requests_rewritten(DEFAULT_BOARD, VIRT)


def requests_rewritten(board: str, s: Settings) -> None:
    """test_requests_rewritten_while_the_server_reads_them_get_only_answers_it_can_give
    on `board`: Linux rewriting RPC requests while the RTOS's server reads
    them, Settings.scribble_s seconds per scribbler."""
    # Two Linux cores each rewrite one channel's request (operation, length
    # up to 0xffffffff, argument, data) through /dev/mem while the server on
    # core 3 reads it: had the server read a field twice (checked one
    # value, used another), a length it refused would reach its copy. Then
    # the driver's own calls on both channels must still be answered right.
    script = (
        f"for c in 0 1; do taskset -c $c tandem-smc scribble-rpc {s.scribble_s} $c"
        " > /tmp/scribble$c & done\n"
        "wait\n"
        'for c in 0 1; do echo "scribble$c: $(cat /tmp/scribble$c)"; done\n'
        'for c in 0 1; do echo "after$c: $(tandem-rpc call -c $c echo 4096)"; done\n'
        "sleep 1.2  # the RTOS's next status line covers all of it\n"
    )
    options = BootOptions(
        board=load_board(board),
        timing=Timing("percore"),
        config=load_config("heteroos"),
        rpc_cores=(TARGET,),
    )
    r = run_exec(options, script, timeout_s=600 + 60 * s.scribble_s)
    assert r.status == 0, r.console_log
    tagged = dict(line.split(": ", 1) for line in r.lines if ": " in line)
    for c in (0, 1):
        report = tagged[f"scribble{c}"]
        print(report)
        assert report.endswith(" 0 failures"), report
        served = int(report.split(" served")[0].rsplit(" ", 1)[1])
        refused = int(report.split(" refused")[0].rsplit(" ", 1)[1])
        # Both kinds of answer happened: the race reached the server's checks.
        assert served > 0 and refused > 0, report
        assert tagged[f"after{c}"].startswith("ok ") and "checksum match" in tagged[f"after{c}"]
    rtos_status.check_ran_on(rtos_status.last(r.secure_log.read_text()))


# A hostile Linux against the monitor's own steps: its restarts, the stub
# its cores start through, and interrupts parked where nobody takes them.
# Settings.races: how many times a CPU_ON races a SYSTEM_RESET.


def race_script(races: int) -> str:
    """Each Linux up to generation `races`: turn core 3 off, CPU_ON it at an
    entry that spins (an old Linux's core still booting) and reset the
    machine from the kernel, 0 to 950 us later. The RTOS keeps core 3 busy
    most of the time, so the CPU_ON is often still pending, not yet taken,
    when the reset comes. Every Linux first says which of its cores came up."""
    return f"""\
g=$(cat /sys/bus/platform/devices/tandem/linux_generation)
echo "@@GEN $g online $(cat /sys/devices/system/cpu/online)@@"
if [ "$g" -le {races} ]; then
    insmod /lib/modules/tandem_hostile.ko
    echo 0 > {ONLINE.format(3)}
    spin=$(( $(cat {HOSTILE}/cpu_off_entry) + 12 ))
    echo "3 $(printf '%x' $spin) $(( (g * 50) % 1000 ))" > {HOSTILE}/cpu_on_reset
    sleep 100
fi
sleep 1.2  # the RTOS's next status line covers the last restart
"""


@pytest.mark.qemu
def test_cpu_ons_racing_resets_leave_no_old_linux_and_every_restart_brings_up_every_core() -> None:
    cpu_ons_racing_resets(DEFAULT_BOARD, VIRT)


def cpu_ons_racing_resets(board: str, s: Settings) -> None:
    """test_cpu_ons_racing_resets_leave_no_old_linux_and_every_restart_brings_up_every_core
    on `board`."""
    options = BootOptions(
        board=load_board(board),
        timing=Timing("percore", s.quantum_ns),
        config=load_config("tandem"),
        apps=(AppRun.of("periodic", core=3, period_us=PERIOD_US, work_us=WORK_US),),
    )
    r = run_exec(options, race_script(s.races), timeout_s=600 + 20 * s.races)
    assert r.status == 0, r.console_log
    generations = [line.removeprefix("@@GEN ").removesuffix("@@").split() for line in r.lines]
    generations = [g for g in generations if len(g) == 3 and g[1] == "online"]
    assert [int(g[0]) for g in generations] == list(range(1, s.races + 2)), r.lines
    late = [g for g in generations if g[2] != "0-3"]
    assert not late, f"cores missing after a restart: {late}"
    secure = r.secure_log.read_text()
    assert secure.count("Tandem monitor") == 1, "the machine was not reset"
    status = rtos_status.last(secure)
    assert status.missed == 0, status
    print(f"{board}: {s.races} CPU_ONs raced SYSTEM_RESET; every restart came up on cores 0-3")


@pytest.mark.qemu
def test_a_stub_rewritten_before_a_reboot_is_written_again() -> None:
    stub_rewritten(DEFAULT_BOARD)


def stub_rewritten(board: str) -> None:
    """test_a_stub_rewritten_before_a_reboot_is_written_again on `board`."""
    # The stub Linux's cores start through lies in the shared region, which
    # Linux can write: its first word made `b .` before a reboot would hold
    # every core of the next Linux (hole 5). The monitor writes it again.
    at = load_board(board).shared.base + abi.SHM_LINUX_STUB_OFFSET
    script = (
        "g=$(cat /sys/bus/platform/devices/tandem/linux_generation)\n"
        'echo "generation $g cores $(nproc)"\n'
        'if [ "$g" = 1 ]; then\n'
        f"  devmem {at:#x} 32 0x14000000\n"
        f'  echo "stub now $(devmem {at:#x} 32)"\n'
        "  reboot -f\n"
        "  sleep 100\n"
        "fi\n"
    )
    r = run_exec(
        BootOptions(board=load_board(board), timing=Timing("percore")), script, timeout_s=600
    )
    assert "stub now 0x14000000" in r.lines, r.lines
    assert r.lines[-1] == "generation 2 cores 4", r.console_log


def idle_wakeups_script(core: int, offline: bool, spi: int) -> str:
    """Idle wake-ups of `core`'s monitor over 2 s, then again with an SPI
    routed to `core`, enabled and pended by Linux (that Linux does not run
    there: nobody will take it); `spi` its INTID."""
    wakeups = CORE_RECORD.format(core, "idle_wakeups")
    return f"""\
set -e
insmod /lib/modules/tandem_hostile.ko
{f"echo 0 > {ONLINE.format(core)}" if offline else ""}
tandem-lat save /tmp/a
a=$(cat {wakeups}); sleep 2; b=$(cat {wakeups})
tandem-lat save /tmp/b
echo {spi} {core} > {HOSTILE}/pend_spi
c=$(cat {wakeups}); sleep 2; d=$(cat {wakeups})
tandem-lat save /tmp/c
echo "quiet: $((b - a)) $(tandem-lat report /tmp/a /tmp/b {core})"
echo "parked: $((d - c)) $(tandem-lat report /tmp/b /tmp/c {core})"
{f"echo 1 > {ONLINE.format(core)}" if offline else ""}
echo "online: $(cat /sys/devices/system/cpu/online)"
"""


# On each board, the INTID of an SPI wired to no device: on virt SPI 250;
# on the i.MX 8M Plus SPI 155 (QEMU's model and the EVK's tree use none
# past 149 of its 160; Tandem's doorbell is 158).
PARKED_SPI = {"qemu-virt": 32 + 250, "imx8mp-evk": 32 + 155}
# Where an SPI is parked: (config, core, whether Linux turns the core off).
PARKED_ON = [("heteroos", 3, False), ("tandem", 2, True)]


@pytest.mark.qemu
@pytest.mark.parametrize(("config", "core", "offline"), PARKED_ON)
def test_an_interrupt_parked_on_a_core_without_linux_does_not_keep_it_awake(
    config: str, core: int, offline: bool
) -> None:
    interrupt_parked(DEFAULT_BOARD, config, core, offline)


def interrupt_parked(board: str, config: str, core: int, offline: bool) -> None:
    """test_an_interrupt_parked_on_a_core_without_linux_does_not_keep_it_awake
    on `board`."""
    # Linux routes an interrupt of its own to a core it does not run on
    # (the RTOS's alone, or one it turned off) and pends it: nobody takes
    # it. Before hole 7's fix the monitor's wait and the RTOS's idle check
    # both saw it for ever there: the core never slept again.
    r = run_exec(
        BootOptions(board=load_board(board), timing=Timing("percore"), config=load_config(config)),
        idle_wakeups_script(core, offline, PARKED_SPI[board]),
    )
    assert r.status == 0, r.console_log
    tagged = dict(line.split(": ", 1) for line in r.lines if ": " in line)
    quiet, parked = (int(tagged[k].split()[0]) for k in ("quiet", "parked"))
    lat = {k: json.loads(tagged[k].split(" ", 1)[1]) for k in ("quiet", "parked")}
    print(
        f"{board} {config} core {core}: idle wake-ups in 2 s quiet {quiet}, parked {parked}; "
        f"worst {lat['quiet']['max_ns']} / {lat['parked']['max_ns']} ns"
    )
    assert parked <= quiet + 10, (quiet, parked)
    assert tagged["online"] == ("0-2" if config == "heteroos" else "0-3")
    p999 = percentile(lat["parked"]["histogram"], 0.999)
    reference = percentile(lat["quiet"]["histogram"], 0.999)
    assert within_twice(p999, reference, float(lat["quiet"]["tick_ns"])), lat
