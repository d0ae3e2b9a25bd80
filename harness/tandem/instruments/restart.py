"""`tandem bench restart`: restarts Linux again and again under load, in
turn with `reboot -f`, the `b` (reboot) and the `c` (crash: a panic) sysrq,
while the RTOS's cyclic jobs run on every core; measures how long each
restart takes, in two phases, and what the RTOS lost meanwhile
(docs/monitor.md, "Restarting Linux").

Phases of one restart, in host wall time (what the acceptance asks) and in
guest time (what the machine did):
- stop: from the guest's line just before the request to the new Linux's
  first console line; Linux shutting down (for `reboot -f`), the monitor
  stopping it on every core and copying its images (guest: the monitor's
  counter time from the request to the restart);
- boot: from that line to the new Linux's first command (guest: Linux's
  uptime then).

Results: results/restart/<run-id>/ (summary.json, restarts.csv, report.md,
restart.png, the secure console's log).
"""

from __future__ import annotations

import csv
import json
import re
import statistics
import sys
import time
from pathlib import Path

from tandem import provenance
from tandem.errors import TandemError
from tandem.platform import rtos_status
from tandem.platform.boot import run_exec
from tandem.platform.boot_options import BootOptions
from tandem.platform.paths import RESULTS
from tandem.results import mark_latest, new_run_dir, write_atomic

METHODS = ("reboot -f", "echo b > /proc/sysrq-trigger", "echo c > /proc/sysrq-trigger")
# Each Linux prints its generation first, then (all but the last) the
# request just before it restarts; the last waits for the RTOS's next
# status line (one a second), so that its totals cover every restart.
SCRIPT = """\
g=$(cat /sys/bus/platform/devices/tandem/linux_generation)
echo "@@GEN $g $(cut -d ' ' -f 1 /proc/uptime)@@"
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
else
    sleep 1.2
fi
"""
MARK = re.compile(r"^@@(GEN|REQUEST) (\d+)(?: ([0-9.]+))?@@$")
# A new Linux's first console line.
BOOTING = re.compile(r"^\[\s*[0-9.]+\] Booting Linux on physical CPU")
# The monitor's lines, with their counter-time stamps.
SECURE = re.compile(r"^\[\s*(\d+\.\d+)\] monitor/\d+: (Linux asked to restart|Linux restarts)")


def script(count: int, load_s: float) -> str:
    """The guest script: restart `count` times, then end."""
    return SCRIPT.format(count=count, load_s=load_s, m0=METHODS[0], m1=METHODS[1], m2=METHODS[2])


def monitor_gaps_ms(secure_log: str) -> list[float]:
    """Counter time from each restart request the monitor saw to its
    restart of Linux, ms. The monitor writes these lines out after the
    fact, each core's in turn (docs/monitor.md, "The log"), so they are put
    back in the order of their time stamps first."""
    marks = sorted(
        (float(m.group(1)), m.group(2))
        for m in map(SECURE.match, secure_log.splitlines())
        if m is not None
    )
    asked: float | None = None
    out = []
    for at, what in marks:
        if what == "Linux asked to restart":
            asked = at
        elif asked is not None:
            out.append((at - asked) * 1000)
            asked = None
    return out


class Clock:
    """Host wall time of the marks on Linux's console, as they arrive."""

    def __init__(self) -> None:
        self.requested: dict[int, float] = {}
        self.booting: dict[int, float] = {}
        self.started: dict[int, float] = {}
        self.uptime_s: dict[int, float] = {}
        self._last_request = 0

    def line(self, line: str, now: float) -> int | None:
        """Notes one console line seen at `now`; the generation of a Linux
        that just ran its first command, else None."""
        text = line.strip()
        if BOOTING.match(text) and self._last_request:
            self.booting[self._last_request + 1] = now
            return None
        m = MARK.match(text)
        if not m:
            return None
        generation = int(m.group(2))
        if m.group(1) == "REQUEST":
            self.requested[generation] = now
            self._last_request = generation
            return None
        self.started[generation] = now
        if m.group(3) is not None:
            self.uptime_s[generation] = float(m.group(3))
        return generation


def restarts(clock: Clock, count: int, monitor_ms: list[float]) -> list[dict[str, object]]:
    """One row per restart: its method, host time in total and per phase,
    and the guest's own time for each phase."""
    rows: list[dict[str, object]] = []
    for g in range(1, count + 1):
        new = g + 1
        booting = clock.booting.get(new)
        if booting is None:
            raise TandemError(f"bench restart: no boot line seen for Linux {new}")
        rows.append(
            {
                "generation": new,
                "method": METHODS[(g - 1) % 3],
                "host_s": round(clock.started[new] - clock.requested[g], 3),
                "host_stop_s": round(booting - clock.requested[g], 3),
                "host_boot_s": round(clock.started[new] - booting, 3),
                "monitor_ms": round(monitor_ms[g - 1], 3) if g <= len(monitor_ms) else None,
                "linux_uptime_s": clock.uptime_s.get(new),
            }
        )
    return rows


def _stats(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 3), "max": round(max(values), 3)}


def phase_stats(rows: list[dict[str, object]]) -> dict[str, dict[str, float]]:
    """Median and max of each measured column over all restarts."""
    out: dict[str, dict[str, float]] = {}
    for key in ("host_s", "host_stop_s", "host_boot_s", "monitor_ms", "linux_uptime_s"):
        values = [float(str(r[key])) for r in rows if r[key] is not None]
        if values:
            out[key] = _stats(values)
    return out


def report(summary: dict[str, object]) -> str:
    """report.md: the phases, per method, against the target."""
    rows = summary["restarts"]
    assert isinstance(rows, list)
    stats = summary["phases"]
    assert isinstance(stats, dict)
    count = summary["count"]
    target = summary["target_host_s"]
    median = float(summary["restart_median_s"])  # type: ignore[arg-type]
    lines = [
        "# Restarting Linux while the RTOS runs on",
        "",
        f"{count} restarts of Linux in one boot ({summary['timing_described']}), config "
        f"`{summary['config']}`, {summary['smp']} cores; load: {summary['load']}. "
        "Reproduce: `./tandem bench restart --count "
        f"{count}"
        + ("" if summary["timing"] == "percore" else f" --timing {summary['timing']}")
        + "`.",
        "",
        f"- Linux reached a shell after **{count} of {count}** restarts.",
        f"- The RTOS: {summary['rtos_missed_total']} releases missed; jobs per core "
        f"{summary['rtos_jobs']} in {summary['rtos_seconds']} s of its uptime (expected "
        f"{summary['rtos_jobs_expected_per_core']} each, period 1 ms).",
        f"- Restart, host wall time: median **{median} s**, max {summary['restart_max_s']} s; "
        f"target < {target} s: **{'met' if median < float(str(target)) else 'not met'}**.",
        "",
        "## Phases",
        "",
        "| phase | host wall time, median (max) | guest time, median (max) |",
        "|---|---|---|",
    ]

    def cell(key: str, unit: str) -> str:
        st = stats.get(key)
        return "n/a" if st is None else f"{st['median']} {unit} ({st['max']} {unit})"

    lines += [
        "| stop: request to the new Linux's first line (Linux shuts down, the monitor stops "
        "it on every core and copies its images) | "
        f"{cell('host_stop_s', 's')} | monitor: {cell('monitor_ms', 'ms')} |",
        "| boot: first line to first command | "
        f"{cell('host_boot_s', 's')} | Linux's uptime: {cell('linux_uptime_s', 's')} |",
        f"| whole restart | {cell('host_s', 's')} | |",
        "",
        "## By method",
        "",
        "| method | restarts | host median (s) | stop median (s) | boot median (s) |",
        "|---|---|---|---|---|",
    ]
    for method in METHODS:
        mine = [r for r in rows if r["method"] == method]
        if not mine:
            continue

        def med(key: str, mine: list[dict[str, object]] = mine) -> float:
            return round(statistics.median(float(str(r[key])) for r in mine), 3)

        lines.append(
            f"| `{method}` | {len(mine)} | {med('host_s')} | {med('host_stop_s')} | "
            f"{med('host_boot_s')} |"
        )
    lines += [
        "",
        "## Reading it",
        "",
        "Host wall time is what QEMU takes to emulate each phase, not what the machine "
        "would take: in the deterministic timing modes every core's instructions run on one "
        "host thread, and Linux's boot runs its code once, so most of it is QEMU translating "
        "it. Guest time is the machine's own. Per restart: `restarts.csv`; plot: "
        "`restart.png`.",
        "",
    ]
    return "\n".join(lines)


def plot(rows: list[dict[str, object]], path: Path) -> None:
    """Each restart's host time, stop and boot stacked, by method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.0, 4.0))
    xs = [int(str(r["generation"])) - 1 for r in rows]
    stop = [float(str(r["host_stop_s"])) for r in rows]
    boot = [float(str(r["host_boot_s"])) for r in rows]
    colours = {m: c for m, c in zip(METHODS, ("tab:blue", "tab:orange", "tab:red"), strict=True)}
    for method, colour in colours.items():
        idx = [i for i, r in enumerate(rows) if r["method"] == method]
        ax.bar([xs[i] for i in idx], [stop[i] for i in idx], color=colour, alpha=0.5)
        ax.bar(
            [xs[i] for i in idx],
            [boot[i] for i in idx],
            bottom=[stop[i] for i in idx],
            color=colour,
            label=f"{method} (light: stop, dark: boot)",
        )
    ax.axhline(1.5, color="grey", linestyle="--", linewidth=1, label="target 1.5 s")
    ax.set_xlabel("restart")
    ax.set_ylabel("host wall time (s)")
    ax.set_title("Restarting Linux: request to first command")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


TARGET_HOST_S = 1.5


def restart(
    options: BootOptions, count: int, load_s: float = 0.3, out_root: Path = RESULTS
) -> Path:
    """Restarts Linux `count` times in one boot; writes results/restart/<run>/."""
    if count < 1:
        raise TandemError("bench restart: --count must be at least 1")
    clock = Clock()
    # Taken before the boot, as `tandem exp run` does.
    stamp = provenance.collect([options])

    def echo(line: str) -> None:
        generation = clock.line(line, time.monotonic())
        if generation is not None and generation > 1:
            print(f"bench restart: Linux {generation} of {count + 1} up", file=sys.stderr)

    print(
        f"bench restart: {count} restarts of Linux in one boot ({options.timing.words()})",
        file=sys.stderr,
    )
    result = run_exec(
        options, script(count, load_s), timeout_s=120 + 60 * count, echo=echo, panics=True
    )
    gens = sorted(clock.started)
    if gens != list(range(1, count + 2)):
        raise TandemError(
            f"bench restart: Linux generations {gens}, want 1..{count + 1} "
            f"(console: {result.console_log})"
        )
    secure = result.secure_log.read_text(errors="replace")
    rows = restarts(clock, count, monitor_gaps_ms(secure))
    status = rtos_status.last(secure)
    seconds, cores = status.seconds, status.cores
    host = [float(str(r["host_s"])) for r in rows]
    summary: dict[str, object] = {
        "benchmark": "restart",
        "timing": options.timing.mode,
        "timing_described": options.timing.words(),
        "quantum_ns": options.timing.quantum,
        "smp": options.smp,
        "config": options.config.name,
        "count": count,
        "load": f"hackbench -g 2, from {load_s} s before each request",
        "clock": (
            "restart: host wall time from the guest's line just before the request to the "
            "next Linux's first command, split at its first console line (stop, boot); "
            "monitor: counter time from the monitor seeing the request to its restart of "
            "Linux (all cores stopped, images copied); linux_uptime_s: the new Linux's "
            "/proc/uptime at its first command"
        ),
        "target_host_s": TARGET_HOST_S,
        "restart_median_s": round(statistics.median(host), 3),
        "restart_max_s": max(host),
        "phases": phase_stats(rows),
        "rtos_seconds": seconds,
        "rtos_jobs_expected_per_core": 1000 * seconds,
        "rtos_jobs": {str(c): j for c, (j, _) in cores.items()},
        "rtos_missed": {str(c): x for c, (_, x) in cores.items()},
        "rtos_missed_total": status.missed,
        "provenance": stamp,
        "restarts": rows,
    }
    out = new_run_dir(out_root / "restart")
    write_atomic(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    with (out / "restarts.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    (out / "secure.log").write_text(secure)
    plot(rows, out / "restart.png")
    write_atomic(out / "report.md", report(summary))
    mark_latest(out)
    print(
        f"restart: median {summary['restart_median_s']} s, max {summary['restart_max_s']} s "
        f"(host wall time; stop {summary['phases']['host_stop_s']['median']} s, boot "  # type: ignore[index]
        f"{summary['phases']['host_boot_s']['median']} s); RTOS: {status.missed} releases "  # type: ignore[index]
        f"missed, jobs per core {sorted(j for j, _ in cores.values())} in {seconds} s"
    )
    print(f"results: {out}")
    return out
