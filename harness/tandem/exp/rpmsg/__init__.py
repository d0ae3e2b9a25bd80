"""Experiment `rpmsg` (`tandem bench rpmsg`): round-trip latency of RPMsg
(Linux's stock virtio-rpmsg through /dev/rpmsgN to the RTOS's tandem-echo
service) by message size, beside /dev/tandem-rpc's block mode echoing the
same bytes (docs/rpc.md, "RPMsg or /dev/tandem-rpc").

One boot: `tandem-rpmsg bench` on CPU 0 makes, per size, N echoes over an
RPMsg endpoint and N block-mode RPC echoes, each timed in user space around
the call (CLOCK_MONOTONIC: write to read for RPMsg, the ioctl for RPC), and
the RPC driver's own round trip (doorbell to answer) besides. The RTOS
serves both on the same core, the lowest RPC core (core 3 of 4 by default).

Results: results/rpmsg/<run-id>/ (summary.json, summary.csv, report.md,
rpmsg.png, raw.tar.xz with the console logs).
"""

from __future__ import annotations

from pathlib import Path

from tandem.claims import Claim
from tandem.errors import TandemError
from tandem.exp.common import Boot, boot_options, one_seed, summary_head, write_summary
from tandem.exp.rpmsg.parse import parse, rows
from tandem.exp.rpmsg.plot import plot
from tandem.exp.rpmsg.report import report
from tandem.exp.rpmsg.script import script
from tandem.exp.rpmsg.spec import CLIENT_CPU, LABEL, NAME, SCHEMA
from tandem.exp.scenario import Scenario
from tandem.exp.units import Measured
from tandem.platform import rtos_status

# The Experiment interface (tandem.exp.REGISTRY).
__all__ = ["NAME", "SCHEMA", "claims", "plot", "report", "summarize", "units"]


def claims(root: Path) -> list[Claim]:
    """RPMsg against RPC's block mode is Tandem's own question, no paper's."""
    return []


def units(s: Scenario) -> list[Boot]:
    """The one boot (configuration `tandem`)."""
    if s.integer("reps") != 1:
        raise TandemError(f"{NAME}: one boot measures every size; reps must be 1")
    sizes, calls = s.integers("sizes"), s.integer("calls")
    return [
        Boot(
            LABEL,
            boot_options(
                s,
                s.text("timing"),
                smp=s.integer("smp"),
                linux_seed=one_seed(s, "one boot measures every size"),
            ),
            script(sizes, calls),
            timeout_s=300 + calls * len(sizes),
            about=f"{calls} echoes per size and kind",
            keep_secure_log=True,
        )
    ]


def summarize(s: Scenario, out: Path, measured: Measured) -> dict[str, object]:
    (boot,) = units(s)
    table = rows(parse(measured.lines(LABEL)), s.integers("sizes"))
    secure = measured.text(LABEL, "secure.log")
    status = rtos_status.last(secure)
    server = [line for line in secure.splitlines() if "rpmsg: serving" in line]
    summary: dict[str, object] = summary_head(s, boot.options) | {
        "smp": boot.options.smp,
        "config": boot.options.config.name,
        "calls": s.integer("calls"),
        "client_cpu": CLIENT_CPU,
        "server_core": server[0].rsplit("core ", 1)[-1] if server else "?",
        "clock": (
            "rpmsg: CLOCK_MONOTONIC from write() to the answer's read() on /dev/rpmsgN; "
            "rpc_block: around TANDEM_RPC_IOC_CALL (echo, block mode); rpc_block_driver: "
            "the driver's round_trip_ns (doorbell to answer seen)"
        ),
        "rows": table,
        "rtos_missed_total": status.missed,
    }
    write_summary(out, summary, list(table[0]))
    return summary
