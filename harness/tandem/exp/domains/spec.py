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
# What runs on a memory-loaded core, and its kind in the guest scripts'
# load_start (tandem/instruments/measure.py).
MEMORY_LOADS = ("reads", "memrate")
MEMORY_LOAD_KINDS = {"reads": "reads", "memrate": "memory"}


@dataclass(frozen=True)
class Env:
    """One way of sharing the chip."""

    name: str
    config: str  # platform configuration (configs/)
    instrument: str  # "rtos" or "cyclictest"
    isolate: bool  # cyclictest in a cpuset partition of its own
    pin_load: bool  # load on cores 0..k-1 (else wherever Linux puts it)
    about: str
    # With partitions: the partition measuring on core 3, and the one
    # running the loads (told by the measuring one over the shared
    # region's mailbox page).
    measure_in: str | None = None
    load_in: str | None = None


ENVS = {
    "smp": Env("smp", "linux-only", "cyclictest", False, False, "one Linux, no separation"),
    "affinity": Env(
        "affinity", "linux-only", "cyclictest", True, True, "one Linux, core 3 in its own cpuset"
    ),
    "dualunix": Env(
        "dualunix",
        "dualunix",
        "cyclictest",
        False,
        True,
        "two Linux: B alone on core 3, the loads in A on cores 0-2",
        measure_in="B",
        load_in="A",
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
    "memory_load": Key(
        str,
        "what a memory-loaded core runs: reads (tandem-membench read: reads alone, as "
        "the paper's load) or memrate (stress-ng's, which also writes; runs before 30 Nov)",
        choices=MEMORY_LOADS,
    ),
    "scheduling_threads": Key(int, "threads handing the mutex round", minimum=2, maximum=64),
    "rtos_task_set": Key(
        str, "what the RTOS runs: the demo's 1 ms job on each RTOS core", choices=("demo",)
    ),
    "linux_latency_ns": Key(
        bool,
        "where only Linux runs, cyclictest in ns (--nsecs: the counter's resolution, 16 ns "
        "on virt) rather than whole µs (runs before 2 Dec)",
    ),
    "windows": Key(
        bool,
        "with a memory model: each RTOS phase a window of the model's counters on every "
        "core (memmodel.json kept; the report gives core 3's bus traffic per phase)",
    ),
}

# Paper 003's worst cases (µs) against memory-loaded cores 0..3 (ARM11 MPCore
# at 210 MHz, real hardware), and its 50 µs target.
PAPER_WORST_VS_LOADED = {"smp": [54, 120, 165, 202], "heteroos": [6, 11, 15, 19]}
PAPER_TARGET_US = 50
# What the paper says of each environment where its text gives no number
# (its fig. 5 and 6 are not in the text): worst case under every load, and
# its qualitative table (reliability / responsiveness / productivity: good,
# fair, poor for the paper's circle, triangle and cross).
PAPER_FINDINGS = {
    "smp": ("54 µs unloaded, 202 µs with 3 memory-loaded cores", "-"),
    "affinity": ("over 100 µs; separates the scheduling load only", "poor / fair / good"),
    "dualunix": (
        "over 100 µs; separates the scheduling load only (better average than "
        "affinity), memory load like SMP",
        "good / fair / good",
    ),
    "heteroos": ("the only one within 50 µs under every load (6-19 µs)", "good / good / fair"),
    "tandem": ("- (not in the paper)", "-"),
}
