"""The `latency` experiment's name, scenario keys, and what its one boot
measures."""

from __future__ import annotations

from tandem.exp.scenario import Key
from tandem.platform.configs import available
from tandem.platform.dtb import LINUX_IDLE

NAME = "latency"

SCHEMA = {
    "config": Key(str, "platform configuration (configs/NAME.toml)", choices=tuple(available())),
    "smp": Key(int, "cores", minimum=1, maximum=8),
    "linux_idle": Key(str, "how Linux idles (docs/linux.md)", choices=LINUX_IDLE),
    "idle_seconds": Key(int, "seconds of the phase with Linux idle", minimum=1, maximum=3600),
    "hackbench_loops": Key(
        int, "hackbench -l of the phase with Linux busy", minimum=1, maximum=1_000_000
    ),
    "min_samples": Key(
        int, "samples each phase must have, else the run fails", minimum=0, maximum=100_000_000
    ),
}

# The two phases of the one boot, in its order.
PHASES = ("idle", "hackbench")
MEASURED = "secure timer compare value to the 3rd instruction of the RTOS IRQ handler"
# The RTOS's histogram buckets per core (tandem-lat): a latency beyond the
# last one is counted, not placed.
HISTOGRAM_BUCKETS = 16384
# The one boot's label in raw/.
LABEL = "latency"
# Host seconds before the boot is given up.
TIMEOUT_S = 1200
