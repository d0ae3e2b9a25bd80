"""The `domains` experiment's name, scenario keys, the environments and loads
it compares, and the paper's worst cases and target."""

from __future__ import annotations

from dataclasses import dataclass

from tandem.exp.scenario import Key

NAME = "domains"
MEASURED_CORE = 3
INFO_CORES = 3  # cores 0-2 carry the information domain's load
PERIOD_US = 1000  # the RTOS demo's cyclic period; cyclictest uses the same
LOADS = ("none", "memory", "scheduling")


@dataclass(frozen=True)
class Env:
    """One way of sharing the chip."""

    name: str
    config: str  # platform configuration (configs/)
    instrument: str  # "rtos" or "cyclictest"
    isolate: bool  # cyclictest in a cpuset partition of its own
    pin_load: bool  # load on cores 0..k-1 (else wherever Linux puts it)
    about: str


ENVS = {
    "smp": Env("smp", "linux-only", "cyclictest", False, False, "one Linux, no separation"),
    "affinity": Env(
        "affinity", "linux-only", "cyclictest", True, True, "one Linux, core 3 in its own cpuset"
    ),
    "heteroos": Env("heteroos", "heteroos", "rtos", False, True, "RTOS on core 3, Linux on 0-2"),
    "tandem": Env(
        "tandem", "tandem", "rtos", False, True, "RTOS first on every core, Linux in the gaps"
    ),
}

SCHEMA = {
    "settle_ms": Key(int, "ms a load runs before measuring starts", minimum=0, maximum=10_000),
    "samples": Key(
        int, "timer interrupts measured per phase (1 ms period)", minimum=16, maximum=100_000
    ),
    "envs": Key(list, "environments to run", item=str, choices=tuple(ENVS)),
    "loads": Key(list, "information-domain loads", item=str, choices=LOADS),
    "loaded_cores": Key(
        list, "memory-loaded core counts for the worst-case sweep", item=int, minimum=0, maximum=3
    ),
    "memory_bytes": Key(
        str,
        "memrate buffer per worker (stress-ng size; far above the 32 KiB L1)",
        choices=("256K", "1M", "4M", "16M"),
    ),
    "scheduling_threads": Key(int, "threads handing the mutex round", minimum=2, maximum=64),
    "rtos_task_set": Key(
        str, "what the RTOS runs: the demo's 1 ms job on each RTOS core", choices=("demo",)
    ),
}

# Paper 003's worst cases (µs) against memory-loaded cores 0..3 (ARM11 MPCore
# at 210 MHz, real hardware), and its 50 µs target.
PAPER_WORST_VS_LOADED = {"smp": [54, 120, 165, 202], "heteroos": [6, 11, 15, 19]}
PAPER_TARGET_US = 50
