"""The `linux-rt` experiment's name, scenario keys, timer period, and the
paper's worst cases it is compared with."""

from __future__ import annotations

from tandem.exp.scenario import Key

NAME = "linux-rt"
PERIOD_US = 1000
PARTS = ("cells", "cause")

SCHEMA = {
    "settle_ms": Key(int, "ms a load runs before measuring starts", minimum=0, maximum=10_000),
    "samples": Key(int, "cyclictest loops per cell (1 ms period)", minimum=16, maximum=100_000),
    "cores": Key(list, "core counts", item=int, choices=(1, 2, 3, 4, 5, 6, 7, 8)),
    "affinity": Key(
        list, "cyclictest in a cpuset of its own, or not", item=bool, choices=(False, True)
    ),
    "io_load": Key(list, "disk I/O load on or off", item=bool, choices=(False, True)),
    "memory_bytes": Key(str, "memrate buffer per worker", choices=("256K", "1M", "4M", "16M")),
    "hdd_bytes": Key(
        str, "bytes each hdd worker writes before starting over", choices=("8M", "16M", "32M")
    ),
    "disk_mib": Key(int, "size of the virtio-blk disk", minimum=64, maximum=4096),
    "affinity_with_io": Key(
        bool, "also measure affinity and I/O load at once (not a figure of the paper)"
    ),
    "parts": Key(
        list,
        "cells: the paper's grid; cause: the page-list high mark of other core counts",
        item=str,
        choices=PARTS,
    ),
}

# Paper 001's worst cases (µs), Xeon 8 cores, Linux 2.6.34 PREEMPT, real hardware.
PAPER = {
    "worst_by_cores": {1: 90, 4: 540, 8: 600},
    "affinity_worst_by_cores": {4: 90, 8: 140},
    "io_worst_by_cores": {1: 720, 4: 1350, 8: 3440},
}
