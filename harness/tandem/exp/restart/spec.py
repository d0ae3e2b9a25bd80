"""The `restart` experiment's name, scenario keys, the restart methods in
turn, the lines timed on the host, and the target."""

from __future__ import annotations

import re

from tandem.exp.scenario import Key
from tandem.platform.configs import available
from tandem.platform.dtb import LINUX_IDLE

NAME = "restart"

# `reps` must be 1: one boot restarts Linux `count` times (more restarts:
# a larger count).
SCHEMA = {
    "count": Key(int, "restarts of Linux in the one boot", minimum=1, maximum=1000),
    # Milliseconds, not seconds: scenario keys are whole numbers; the script
    # sleeps count / 1000 s, written as the bench wrote its 0.3.
    "load_ms": Key(int, "ms of hackbench before each restart request", minimum=1, maximum=60_000),
    "config": Key(str, "platform configuration (configs/NAME.toml)", choices=tuple(available())),
    "smp": Key(int, "cores", minimum=1, maximum=8),
    "linux_idle": Key(str, "how Linux idles (docs/linux.md)", choices=LINUX_IDLE),
}

# The one boot's label in raw/.
LABEL = "restart"

METHODS = ("reboot -f", "echo b > /proc/sysrq-trigger", "echo c > /proc/sysrq-trigger")
# The commands' marks: each Linux's generation (and uptime) at its first
# command, and the request just before it restarts.
MARK = re.compile(r"^@@(GEN|REQUEST) (\d+)(?: ([0-9.]+))?@@$")
# A new Linux's first console line.
BOOTING = re.compile(r"^\[\s*[0-9.]+\] Booting Linux on physical CPU")
# The lines the host times (Boot.host_lines): the marks and the first line.
TIMED = re.compile(f"{MARK.pattern}|{BOOTING.pattern}")
# The monitor's lines, with their counter-time stamps.
SECURE = re.compile(r"^\[\s*(\d+\.\d+)\] monitor/\d+: (Linux asked to restart|Linux restarts)")

# The acceptance's target: a restart's median host wall time below it.
TARGET_HOST_S = 1.5

# The summary's words for what is timed (as the bench wrote them before it
# was an experiment).
CLOCK = (
    "restart: host wall time from the guest's line just before the request to the "
    "next Linux's first command, split at its first console line (stop, boot); "
    "monitor: counter time from the monitor seeing the request to its restart of "
    "Linux (all cores stopped, images copied); linux_uptime_s: the new Linux's "
    "/proc/uptime at its first command"
)


def timeout_s(count: int) -> float:
    """Host seconds before the boot is given up (as the bench allowed)."""
    return 120 + 60 * count


def load_s(load_ms: int) -> float:
    """The load's seconds, as the script and the summary write them."""
    return load_ms / 1000
