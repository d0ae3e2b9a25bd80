"""A hostile or broken Linux cannot delay the RTOS (issue 21): Linux attacks
the RTOS's time from three cores at once, and the RTOS's cyclic jobs and the
timer latency of the attacked core are checked. Per-core timing, so the
cores really run at once and a delay is the system's, not QEMU's turns.

One boot, three phases of the same length: Linux quiet, a doorbell flood, an
SMC storm. `TANDEM_ATTACK_S` sets each phase's seconds (default 2 for
`make test`; the issue's acceptance runs 10)."""

from __future__ import annotations

import json
import os

import pytest

from tandem.platform import rtos_status
from tandem.platform.boot import BootOptions, run_exec

# The RTOS core under attack: the RTOS alone runs there (config heteroos,
# Linux on cores 0-2), so between its jobs the core waits in the monitor;
# it serves every RPC channel.
TARGET = 3
RPC_NOTIFY = 0xC200_0002
# PSCI AFFINITY_INFO (64-bit) of core 0: answered under the monitor's PSCI lock.
AFFINITY_INFO = 0xC400_0004
ATTACK_S = int(os.environ.get("TANDEM_ATTACK_S", "2"))
ATTACKS = {
    # RPC_NOTIFY as fast as three cores can issue it: the monitor rings the
    # server core's doorbell for each, with nothing for the server to do.
    "flood": f"tandem-smc repeat {ATTACK_S} {RPC_NOTIFY:#x} 0",
    # A PSCI call that takes the monitor's lock, which an idle RTOS core's
    # look loop took on every pass before issue 21.
    "storm": f"tandem-smc repeat {ATTACK_S} {AFFINITY_INFO:#x} 0 0",
}


def script() -> str:
    """Timer-latency snapshots of TARGET around each phase; each attack runs
    on cores 0, 1 and 2 at once."""
    out = ["set -e", "tandem-lat save /tmp/quiet", f"sleep {ATTACK_S}", "tandem-lat save /tmp/q1"]
    last = "q1"
    for name, command in ATTACKS.items():
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


@pytest.mark.qemu
def test_floods_and_storms_from_three_cores_do_not_cost_the_rtos_a_release() -> None:
    options = BootOptions(timing="percore", config="heteroos", rpc_cores=(TARGET,))
    r = run_exec(options, script(), timeout_s=300 + 60 * ATTACK_S)
    assert r.status == 0, r.console_log
    tagged: dict[str, list[str]] = {}
    for line in r.lines:
        tag, sep, rest = line.partition(": ")
        if sep:
            tagged.setdefault(tag, []).append(rest)
    # Every call answered, each the same as the first.
    for name in ATTACKS:
        calls = tagged[f"{name}-calls"]
        assert len(calls) == 3 and all("0 answers differed" in c for c in calls), calls
    # No release missed or lost on any core, across the whole boot.
    rtos_status.check_ran_on(rtos_status.last(r.secure_log.read_text()))
    lat = {name: json.loads(tagged[name][0]) for name in ("quiet", *ATTACKS)}
    quiet = float(lat["quiet"]["max_ns"])
    for name in ATTACKS:
        worst, hist = lat[name]["max_ns"], lat[name]["histogram"]
        print(f"{name}: worst {worst} ns (quiet {quiet} ns), histogram {hist}")
        assert int(lat[name]["samples"]) >= 1000 * ATTACK_S - 10, name
    # The storm leaves the timer latency within twice its quiet worst. The
    # flood does not, and is only reported (docs/security.md): QEMU delivers
    # the timer of a vCPU that others keep interrupting up to about 2 Q late,
    # and one doorbell round (about 208 instructions the timer cannot
    # preempt) is already more than the quiet worst of 80.
    assert float(lat["storm"]["max_ns"]) <= 2 * quiet, lat["storm"]
