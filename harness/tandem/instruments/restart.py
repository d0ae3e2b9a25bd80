"""`tandem bench restart`: restarts Linux again and again under load, in
turn with `reboot -f`, the `b` (reboot) and the `c` (crash: a panic) sysrq,
while the RTOS's cyclic jobs run on every core; measures how long each
restart takes and what the RTOS lost meanwhile (docs/monitor.md,
"Restarting Linux")."""

from __future__ import annotations

import json
import re
import statistics
import sys
import time
from pathlib import Path

from tandem.errors import TandemError
from tandem.platform import rtos_status
from tandem.platform.boot import BootOptions, describe_timing, run_exec
from tandem.platform.paths import RESULTS
from tandem.results import mark_latest, new_run_dir

METHODS = ("reboot -f", "echo b > /proc/sysrq-trigger", "echo c > /proc/sysrq-trigger")
# Each Linux prints its generation first, then (all but the last) the
# request just before it restarts.
SCRIPT = """\
g=$(cat /sys/bus/platform/devices/tandem/linux_generation)
echo "@@GEN $g@@"
if [ "$g" -le {count} ]; then
    hackbench -g 2 -l 1000000 > /dev/null 2>&1 &
    sleep {load_s}
    echo "@@REQUEST $g@@"
    case $(( (g - 1) % 3 )) in
    0) {m0} ;;
    1) {m1} ;;
    2) {m2} ;;
    esac
    sleep 100
fi
"""
MARK = re.compile(r"^@@(GEN|REQUEST) (\d+)@@$")
# The monitor's lines, with their counter-time stamps.
SECURE = re.compile(r"^\[\s*(\d+\.\d+)\] monitor/\d+: (Linux asked to restart|Linux restarts)")


def script(count: int, load_s: float) -> str:
    """The guest script: restart `count` times, then end."""
    return SCRIPT.format(count=count, load_s=load_s, m0=METHODS[0], m1=METHODS[1], m2=METHODS[2])


def monitor_gaps_ms(secure_log: str) -> list[float]:
    """Counter time from each restart request the monitor saw to its
    restart of Linux, ms."""
    asked: float | None = None
    out = []
    for line in secure_log.splitlines():
        m = SECURE.match(line)
        if not m:
            continue
        if m.group(2) == "Linux asked to restart":
            asked = float(m.group(1))
        elif asked is not None:
            out.append((float(m.group(1)) - asked) * 1000)
            asked = None
    return out


def restart(
    options: BootOptions, count: int, load_s: float = 0.3, out_root: Path = RESULTS
) -> Path:
    """Restarts Linux `count` times in one boot; writes results/restart/<run>/."""
    if count < 1:
        raise TandemError("bench restart: --count must be at least 1")
    requested: dict[int, float] = {}
    started: dict[int, float] = {}

    def echo(line: str) -> None:
        m = MARK.match(line.strip())
        if not m:
            return
        kind, generation = m.group(1), int(m.group(2))
        (requested if kind == "REQUEST" else started)[generation] = time.monotonic()
        if kind == "GEN" and generation > 1:
            print(f"bench restart: Linux {generation} of {count + 1} up", file=sys.stderr)

    print(
        f"bench restart: {count} restarts of Linux in one boot ({describe_timing(options)})",
        file=sys.stderr,
    )
    result = run_exec(
        options, script(count, load_s), timeout_s=120 + 60 * count, echo=echo, panics=True
    )
    gens = sorted(started)
    if gens != list(range(1, count + 2)):
        raise TandemError(
            f"bench restart: Linux generations {gens}, want 1..{count + 1} "
            f"(console: {result.console_log})"
        )
    restarts = [
        {
            "generation": g + 1,
            "method": METHODS[(g - 1) % 3],
            "host_s": round(started[g + 1] - requested[g], 3),
        }
        for g in range(1, count + 1)
    ]
    secure = result.secure_log.read_text(errors="replace")
    gaps = monitor_gaps_ms(secure)
    status = rtos_status.last(secure)
    seconds, cores = status.seconds, status.cores
    host = [float(str(r["host_s"])) for r in restarts]
    summary: dict[str, object] = {
        "benchmark": "restart",
        "timing": options.timing,
        "quantum_ns": options.quantum_ns if options.timing == "percore" else None,
        "smp": options.smp,
        "config": options.config,
        "count": count,
        "load": "hackbench -g 2, from 0.3 s before each request",
        "clock": (
            "restart: host wall time from the guest's line just before the request to the "
            "next Linux's first command; monitor: counter time from the monitor seeing the "
            "request to its restart of Linux (all cores stopped, images copied)"
        ),
        "restart_median_s": round(statistics.median(host), 3),
        "restart_max_s": max(host),
        "monitor_median_ms": round(statistics.median(gaps), 3) if gaps else None,
        "monitor_max_ms": round(max(gaps), 3) if gaps else None,
        "rtos_seconds": seconds,
        "rtos_jobs_expected_per_core": 1000 * seconds,
        "rtos_jobs": {str(c): j for c, (j, _) in cores.items()},
        "rtos_missed": {str(c): x for c, (_, x) in cores.items()},
        "restarts": restarts,
    }
    out = new_run_dir(out_root / "restart")
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "secure.log").write_text(secure)
    mark_latest(out)
    missed = status.missed
    print(
        f"restart: median {summary['restart_median_s']} s, max {summary['restart_max_s']} s "
        f"(host wall time); monitor {summary['monitor_median_ms']} ms median; RTOS: "
        f"{missed} releases missed, jobs per core {sorted(j for j, _ in cores.values())} "
        f"in {seconds} s"
    )
    print(f"results: {out}")
    return out
