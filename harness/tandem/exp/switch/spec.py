"""The `switch` experiment's name, scenario keys, and what its one boot
counts."""

from __future__ import annotations

from tandem.exp.scenario import Key
from tandem.platform.configs import available

NAME = "switch"

SCHEMA = {
    "config": Key(str, "platform configuration (configs/NAME.toml)", choices=tuple(available())),
    "smp": Key(
        int, "cores (1: no other vCPU's instructions inside a switch)", minimum=1, maximum=8
    ),
    "idle_ms": Key(int, "milliseconds Linux idles while QEMU logs", minimum=100, maximum=3_600_000),
}

# The two directions, as the summary names them, and where each starts
# and ends (instructions/switchcost.py pairs them).
DIRECTIONS = {
    "linux_to_rtos": "monitor FIQ vector to the RTOS's IRQ vector",
    "rtos_to_linux": "RTOS YIELD smc to the monitor's eret into Linux",
}
UNIT = "instructions (virtual timing: 1 instruction = 1 ns)"
# Linux idles with WFI: the Linux -> RTOS path counted is the FIQ vector's
# (an RTOS interrupt finding Linux running or in its WFI). Idling through
# CPU_SUSPEND, an idle core's switch starts from the monitor's own wait in
# Linux's place instead, which switchcost does not pair, and only a busy
# core's would be counted.
LINUX_IDLE = "wfi"
# QEMU's execution log, in the boot's log directory.
EXEC_LOG = "exec.log"
# The one boot's label in raw/.
LABEL = "switch"
# Host seconds before the boot is given up.
TIMEOUT_S = 600
