"""What the `rpmsg` experiment's boot runs: `tandem-rpmsg bench` on the
client CPU, then a wait for the RTOS's next status line."""

from __future__ import annotations

from collections.abc import Sequence

from tandem.exp.rpmsg.spec import CLIENT_CPU


def script(sizes: Sequence[int], calls: int) -> str:
    return (
        f"tandem-rpmsg bench -n {calls} -C {CLIENT_CPU} {' '.join(map(str, sizes))}\n"
        # The RTOS's next status line covers the run.
        "sleep 1.1\n"
    )
