"""Probes of `lhp`: a few boots made to answer one question a run raised
(results/lhp/probe-*/README.md says what was asked and what the data shows).

`threshold` (results/lhp/probe-20261126-threshold): what sets Linux alone's
longest spin wait, E1's threshold of "long". Linux alone (`linux-only`),
per-core timing, Q = 1000 ns, 4 cores, spinlocks counting their waits
(`tandem_spinstat=on`); hackbench at E1's size again and again, each CPU's
longest wait read after each run with its lock, the waiter's interrupts and
stack. Boots: the per-CPU page-list high mark at its default and at its
smallest, alternating; then RCU callbacks in softirq (the default) and in
kthreads, `reps` runs each, for 20 and 40 runs.

    cd harness && ../.venv/bin/python -m tandem.exp.lhp.probes threshold OUT_DIR
    cd harness && ../.venv/bin/python -m tandem.exp.lhp.probes summarize LOG...
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tandem.exp.lhp.parse import LONGEST_HEAD
from tandem.exp.lhp.script import SPINSTAT
from tandem.platform.board import load_board
from tandem.platform.boot import run_exec
from tandem.platform.boot_options import BootOptions
from tandem.platform.configs import load_config
from tandem.platform.timing import PERCORE, Timing

# Where Linux's patch 0004 keeps each CPU's longest spin wait since reset.
LONGEST_FILE = "/sys/kernel/debug/tandem_spin_longest"
# E1's hackbench size.
HACKBENCH = "hackbench -g 8 -l 100"


def pcp_script() -> str:
    """4 rounds, each a hackbench run with the default per-CPU page-list
    high mark and one with the smallest (high_fraction 100000)."""
    return (
        f"L={LONGEST_FILE}\n"
        "mount -t debugfs none /sys/kernel/debug 2>/dev/null\n"
        "for rep in 1 2 3 4; do\n"
        "  for frac in 0 100000; do\n"
        "    sysctl -q -w vm.percpu_pagelist_high_fraction=$frac || exit 1\n"
        "    echo \"@@PCP frac=$frac rep=$rep $(grep -E '^ +(high|batch):' /proc/zoneinfo"
        " | awk '{print $2}' | sort -u | tr '\\n' ' ')\"\n"
        "    echo 1 > $L || exit 1\n"
        f"    {HACKBENCH} >/dev/null || exit 1\n"
        '    echo "@@LONGEST frac=$frac rep=$rep"; cat $L\n'
        "  done\n"
        "done\n"
    )


def rcu_script(reps: int) -> str:
    """`reps` hackbench runs, each CPU's longest wait after each."""
    return (
        f"L={LONGEST_FILE}\n"
        f"for rep in $(seq 1 {reps}); do\n"
        "  echo 1 > $L || exit 1\n"
        f"  {HACKBENCH} >/dev/null || exit 1\n"
        '  echo "@@LONGEST rep=$rep"; cat $L || exit 1\n'
        "done\n"
    )


@dataclass(frozen=True)
class ProbeBoot:
    """One boot of a probe: the console log it writes, its title line, the
    boot arguments beyond the spin-wait counting, and its script."""

    log: str
    title: str
    bootargs: str
    script: str


def threshold_boots() -> list[ProbeBoot]:
    """The threshold probe's boots, in the order it ran them (its console
    logs hold one title line per boot: `=== ...`)."""
    boots = [
        ProbeBoot(
            "pcp.console.log",
            "pcp high mark: default, then vm.percpu_pagelist_high_fraction=100000",
            "",
            pcp_script(),
        )
    ]
    for reps in (20, 40):
        for args in ("", "rcutree.use_softirq=0"):
            boots.append(
                ProbeBoot(
                    f"rcu-{reps}.console.log",
                    f"bootargs: {SPINSTAT} {args}",
                    args,
                    rcu_script(reps),
                )
            )
    return boots


def run_threshold(out: Path) -> list[Path]:
    """Boots the threshold probe; appends each boot's output, after its
    title line, to OUT/<log>. Returns the logs written."""
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for boot in threshold_boots():
        options = BootOptions(
            config=load_config("linux-only"),
            timing=Timing(PERCORE, 1000),
            smp=4,
            extra_bootargs=f"{SPINSTAT} {boot.bootargs}".strip(),
        )
        result = run_exec(options, "cat /proc/cmdline\n" + boot.script, timeout_s=3600)
        log = out / boot.log
        with log.open("a") as f:
            f.write(f"=== {boot.title}\n")
            f.write("\n".join(result.lines) + "\n")
        if log not in written:
            written.append(log)
    return written


def longest_by_waiter(lines: Sequence[str], tick_us: float) -> dict[str, dict[str, list[float]]]:
    """Each CPU's longest wait per run in a probe's console log, by boot
    (its `=== ` title line) and by the function that waited: the waits in µs."""
    boot = "(one boot)"
    waits: dict[str, dict[str, list[float]]] = {}
    for i, line in enumerate(lines):
        if line.startswith("=== "):
            boot = line[4:]
        elif (m := LONGEST_HEAD.match(line.strip())) and i + 2 < len(lines):
            waiter = lines[i + 2].strip().split("+")[0]
            waits.setdefault(boot, {}).setdefault(waiter, []).append(int(m.group(2)) * tick_us)
    return waits


def summary_lines(name: str, waits: dict[str, dict[str, list[float]]]) -> list[str]:
    """Per boot: how many longest waits, and per waiter their count and
    the five longest (µs), longest waiter first."""
    out = []
    for boot, by_waiter in waits.items():
        out.append(f"{name}: {boot}: {sum(len(v) for v in by_waiter.values())} longest waits")
        for waiter, us in sorted(by_waiter.items(), key=lambda kv: -max(kv[1])):
            top = ", ".join(f"{u:.1f}" for u in sorted(us)[-5:])
            out.append(f"  {waiter}: {len(us)}, longest {top}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tandem.exp.lhp.probes", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("threshold", help="boot the threshold probe, console logs into OUT")
    run.add_argument("out", type=Path)
    summ = sub.add_parser("summarize", help="each log's longest waits by waiter")
    summ.add_argument("logs", nargs="+", type=Path)
    args = parser.parse_args(argv)
    if args.command == "threshold":
        for log in run_threshold(args.out):
            print(log)
        return 0
    tick_us = 1e6 / load_board().counter_hz
    for log in args.logs:
        lines = log.read_text(encoding="utf-8").splitlines()
        print("\n".join(summary_lines(str(log), longest_by_waiter(lines, tick_us))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
