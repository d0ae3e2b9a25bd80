"""The `lhp` experiment's name, scenario keys, dispatch policies, benchmarks
and parts, and the paper's figures and the acceptance's limits."""

from __future__ import annotations

from tandem.exp.scenario import Key
from tandem.platform.timing import MODES

NAME = "lhp"
# static: on the handler's core; migrate: paper 000's rule (a core where
# Linux holds no spin lock); migrate-strict: also not where it spins for one.
POLICIES = ("static", "migrate", "migrate-strict")
BENCHES = ("hackbench", "sysbench")
PARTS = ("e1", "e2", "e3", "patch")

SCHEMA = {
    "parts": Key(
        list, "which parts to run (e.g. only e2 on a quiet host)", item=str, choices=PARTS
    ),
    "smp": Key(int, "E2: cores (keep <= host cores in host timing)", minimum=2, maximum=8),
    "sweep_timing": Key(str, "E1 and E3: timing mode", choices=MODES),
    "sweep_smp": Key(int, "E1 and E3: cores", minimum=2, maximum=8),
    "sweep_reps": Key(int, "E1: repetitions", minimum=1, maximum=100),
    "sweep_phase_us": Key(
        int,
        "E1: repetition r first sleeps (r - 1) times this long, so that repetitions "
        "start at different phases of the RTOS period (virtual timing repeats a boot exactly)",
        minimum=0,
        maximum=1_000_000,
    ),
    "rtos_core": Key(int, "core of the RTOS's cyclic handler", minimum=0, maximum=7),
    "periods_us": Key(list, "E1: RTOS periods", item=int, minimum=100, maximum=1_000_000),
    "load_pct": Key(int, "E1: RTOS load, % of each period", minimum=1, maximum=90),
    "policies": Key(list, "dispatch policies compared", item=str, choices=POLICIES),
    "hackbench_groups": Key(int, "hackbench -g", minimum=1, maximum=64),
    "hackbench_loops": Key(int, "hackbench -l", minimum=1, maximum=100_000),
    "bench_period_us": Key(int, "E2/E3: RTOS period", minimum=100, maximum=1_000_000),
    "bench_work_us": Key(int, "E2/E3: RTOS work per period", minimum=1, maximum=999_999),
    "benches": Key(list, "E2: benchmarks", item=str, choices=BENCHES),
    "sysbench_threads": Key(int, "sysbench mutex --threads", minimum=1, maximum=64),
    "sysbench_locks": Key(
        int, "sysbench mutex --mutex-locks per thread", minimum=100, maximum=10_000_000
    ),
    "overhead_seconds": Key(int, "E3: seconds measured per policy", minimum=1, maximum=600),
    "patch_timing": Key(str, "lock-state patch cost: timing mode", choices=MODES),
    "patch_smp": Key(int, "lock-state patch cost: cores", minimum=1, maximum=8),
    "patch_boots": Key(
        int,
        "lock-state patch cost: boots per setting (off and on alternate)",
        minimum=1,
        maximum=100,
    ),
    "patch_runs": Key(
        int,
        "lock-state patch cost: hackbench runs per boot (after one warm-up)",
        minimum=1,
        maximum=100,
    ),
}

# Paper 000 (Cortex-A9 MPCore, real hardware): the worst-case dispatch
# overhead, and what the acceptance asks of us.
PAPER_OVERHEAD_US = {"static": 14, "migrate": 21}
OVERHEAD_GROWTH_LIMIT_US = 10
# What the lock-state patch may cost on hackbench (the acceptance).
PATCH_COST_LIMIT_PCT = 2
