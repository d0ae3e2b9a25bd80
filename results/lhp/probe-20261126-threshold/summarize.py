"""Each CPU's longest spin wait per hackbench run in this probe's console
logs, grouped by the function that waited: count and the five longest (µs).
Usage, from the repository's root: .venv/bin/python
results/lhp/probe-20261126-threshold/summarize.py LOG..."""

from __future__ import annotations

import sys
from pathlib import Path

# The harness's own parser of tandem_spin_longest and the board's counter.
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "harness"))
from tandem.exp.lhp.parse import LONGEST_HEAD
from tandem.platform.board import load_board


def summarize(path: str, tick_us: float) -> None:
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    boot = "(one boot)"
    waits: dict[str, dict[str, list[float]]] = {}
    for i, line in enumerate(lines):
        if line.startswith("=== "):
            boot = line[4:]
        elif m := LONGEST_HEAD.match(line.strip()):
            waiter = lines[i + 2].strip().split("+")[0]
            wait_us = int(m.group(2)) * tick_us
            waits.setdefault(boot, {}).setdefault(waiter, []).append(wait_us)
    for boot, by_waiter in waits.items():
        print(
            f"{path}: {boot}: {sum(len(v) for v in by_waiter.values())} longest waits"
        )
        for waiter, us in sorted(by_waiter.items(), key=lambda kv: -max(kv[1])):
            top = ", ".join(f"{u:.1f}" for u in sorted(us)[-5:])
            print(f"  {waiter}: {len(us)}, longest {top}")


if __name__ == "__main__":
    tick = 1e6 / load_board().counter_hz
    for log in sys.argv[1:]:
        summarize(log, tick)
