"""The `rpmsg` experiment's name, scenario keys, and the series its one
boot measures."""

from __future__ import annotations

from tandem.exp.scenario import Key
from tandem.platform import abi_generated as abi

NAME = "rpmsg"

SCHEMA = {
    "smp": Key(int, "cores (the RTOS serves on the lowest RPC core)", minimum=2, maximum=8),
    "sizes": Key(list, "message bytes", item=int, minimum=1, maximum=abi.RPMSG_MAX_PAYLOAD),
    "calls": Key(int, "calls per size and kind", minimum=1, maximum=100_000),
}

# The three series, as `tandem-rpmsg bench` prints them.
SERIES = ("rpmsg", "rpc-block", "rpc-block-driver")
CLIENT_CPU = 0
# The one boot's label in raw/.
LABEL = "rpmsg"
