"""Probes of `capacity`: a few boots made to answer one question a run
raised (results/capacity/probe-*/README.md says what was asked and what the
data shows).

`placement` (results/capacity/probe-20261126-135810): where hackbench's
tasks run and how long Linux's spinlocks spin in each capacity mode at 80 %
RTOS load. One boot per cell, per-core timing, Q = 1000 ns, 4 cores, the
RTOS's task on core 1 (1 ms period), spin waits counted
(`tandem_spinstat=on`, the `lhp` experiment's instrument), and a shell loop
copying /proc/[0-9]*/stat every 0.1 s while hackbench runs.

    cd harness && ../.venv/bin/python -m tandem.exp.capacity.probes placement OUT_LOG
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from tandem.exp.lhp.script import SPINSTAT
from tandem.platform.boot import run_exec
from tandem.platform.boot_options import BootOptions
from tandem.platform.configs import Workload
from tandem.platform.timing import PERCORE, Timing

# (RTOS load in %, capacity mode), in the order the probe ran them.
PLACEMENT_CELLS = ((0, "none"), (80, "none"), (80, "static"), (80, "steal"), (80, "both"))


def placement_script() -> str:
    """hackbench as in run 20261126-121542 with /proc/stat around it, the
    spin counters saved before and after, and the runnable hackbench tasks
    per core sampled from /proc/PID/stat meanwhile."""
    return (
        "snap() { echo \"@@SNAP@@ $1\"; grep '^cpu[0-9]' /proc/stat; }\n"
        "tandem-spin save /tmp/a || exit 1\n"
        "snap hackbench\n"
        "( sleep 0.2; i=0; while [ $i -lt 10 ]; do cat /proc/[0-9]*/stat > /tmp/ps.$i "
        "2>/dev/null; i=$((i+1)); sleep 0.1; done ) &\n"
        "hackbench -g 4 -l 800 || exit 1\n"
        "snap hackbench\n"
        "tandem-spin save /tmp/b || exit 1\n"
        "echo @@SPIN@@ $(tandem-spin report /tmp/a /tmp/b)\n"
        "wait\n"
        'for f in /tmp/ps.*; do echo "@@PS@@ $f $(awk \'$2=="(hackbench)" && $3=="R" '
        "{n[$39]++} END {print n[0]+0, n[1]+0, n[2]+0, n[3]+0}' $f)\"; done\n"
    )


def placement_options(load_pct: int, mode: str) -> BootOptions:
    """One cell's boot: the RTOS's task on core 1 taking `load_pct` % of
    each 1 ms, Linux told of it by capacity mode `mode`."""
    return BootOptions(
        timing=Timing(PERCORE, 1000),
        smp=4,
        workload=Workload(core=1, period_us=1000, work_us=load_pct * 10),
        capacity=mode,
        extra_bootargs=SPINSTAT,
    )


def run_placement(out: Path) -> None:
    """Boots every cell; writes each one's title line and output to `out`."""
    with out.open("w") as f:
        for load, mode in PLACEMENT_CELLS:
            result = run_exec(placement_options(load, mode), placement_script(), timeout_s=3600)
            f.write(f"=== {load} {mode}\n" + "\n".join(result.lines) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tandem.exp.capacity.probes", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("placement", help="boot the placement probe's cells into OUT_LOG")
    run.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    run_placement(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
