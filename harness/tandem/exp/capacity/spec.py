"""The `capacity` experiment's name, scenario keys, benchmarks, and the
paper's trend it is checked against."""

from __future__ import annotations

from tandem.exp.scenario import Key
from tandem.platform import capacity

NAME = "capacity"
BENCHES = ("hackbench", "sysbench-cpu")
CHANGING = "changing"

SCHEMA = {
    "smp": Key(int, "cores (keep <= host cores in host timing)", minimum=2, maximum=8),
    "rtos_core": Key(int, "the one core the RTOS loads", minimum=0, maximum=7),
    "period_us": Key(int, "RTOS task period", minimum=100, maximum=1_000_000),
    "loads_pct": Key(list, "constant RTOS loads, % of the period", item=int, minimum=1, maximum=95),
    "baseline_modes": Key(
        list,
        "modes also booted with no RTOS load (0 %), the reference; at 0 % static and both "
        "are none and steal",
        item=str,
        choices=capacity.MODES,
        non_empty=False,
    ),
    "changing": Key(bool, "also run the load that changes during the run"),
    "changing_low_pct": Key(int, "changing load: low phase, %", minimum=0, maximum=95),
    "changing_high_pct": Key(int, "changing load: high phase, %", minimum=0, maximum=95),
    "changing_every_ms": Key(int, "changing load: phase length", minimum=1, maximum=100_000),
    "modes": Key(list, "how Linux learns the RTOS's share", item=str, choices=capacity.MODES),
    "benches": Key(list, "benchmarks", item=str, choices=BENCHES),
    "hackbench_groups": Key(int, "hackbench -g", minimum=1, maximum=64),
    "hackbench_loops": Key(int, "hackbench -l", minimum=1, maximum=100_000),
    "sysbench_threads": Key(int, "sysbench cpu --threads", minimum=1, maximum=64),
    "sysbench_events": Key(int, "sysbench cpu --events", minimum=1, maximum=10_000_000),
}

# Paper 000 (R-Car H1, hardware): hackbench gains from the capacity change at
# 50 % and 80 % RTOS load on core 1, more at 80 %.
PAPER_TREND = "the gain over equal capacities grows with the RTOS's load (50 % -> 80 %)"
