"""Each CPU's longest spin wait per hackbench run in this probe's console
logs, grouped by the function that waited: count and the five longest (µs).
Usage: python3 summarize.py LOG..."""

from __future__ import annotations

import re
import sys

TICK_US = 0.016  # the virt board's 62.5 MHz counter
HEAD = re.compile(r"^cpu\d+ ticks (\d+) lock \S+ irqs \d+$")


def summarize(path: str) -> None:
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    boot = "(one boot)"
    waits: dict[str, dict[str, list[float]]] = {}
    for i, line in enumerate(lines):
        if line.startswith("=== "):
            boot = line[4:]
        elif m := HEAD.match(line):
            waiter = lines[i + 2].strip().split("+")[0]
            wait_us = int(m.group(1)) * TICK_US
            waits.setdefault(boot, {}).setdefault(waiter, []).append(wait_us)
    for boot, by_waiter in waits.items():
        print(
            f"{path}: {boot}: {sum(len(v) for v in by_waiter.values())} longest waits"
        )
        for waiter, us in sorted(by_waiter.items(), key=lambda kv: -max(kv[1])):
            top = ", ".join(f"{u:.1f}" for u in sorted(us)[-5:])
            print(f"  {waiter}: {len(us)}, longest {top}")


if __name__ == "__main__":
    for log in sys.argv[1:]:
        summarize(log)
