"""The `boot` experiment's name, scenario keys, and the clock it reads."""

from __future__ import annotations

from tandem.exp.scenario import Key
from tandem.platform.configs import available
from tandem.platform.dtb import LINUX_IDLE

NAME = "boot"

# `reps` (a key every scenario has) is the number of boots timed: `bench
# boot --runs N`.
SCHEMA = {
    "config": Key(str, "platform configuration (configs/NAME.toml)", choices=tuple(available())),
    "smp": Key(int, "cores", minimum=1, maximum=8),
    "linux_idle": Key(str, "how Linux idles (docs/linux.md)", choices=LINUX_IDLE),
}

# The summary's words for what is timed (as the bench wrote them before it
# was an experiment).
CLOCK = "host wall time (QEMU start to the first command in Linux)"
# Host seconds before a boot is given up.
TIMEOUT_S = 120
