"""The `rpmsg` experiment's report.md: round trips by size, RPMsg beside
/dev/tandem-rpc's block mode, and where RPMsg's extra time goes."""

from __future__ import annotations

from pathlib import Path

from tandem.exp.common import read_summary, run_id
from tandem.exp.rpmsg.spec import CLIENT_CPU, NAME


def report(run_dir: Path, command: str) -> str:
    """report.md, from the run's summary."""
    summary = read_summary(run_dir, NAME)
    table = summary["rows"]
    assert isinstance(table, list)
    lines = [
        "# RPMsg against /dev/tandem-rpc (block mode): round trips by size",
        "",
        f"{summary['timing_described']}, {summary['smp']} cores, config {summary['config']}; "
        f"the client on CPU {CLIENT_CPU}, the RTOS serving both on core "
        f"{summary['server_core']}; {summary['calls']} calls per size and kind after a "
        "warm-up. QEMU, not hardware: every instruction costs 1 ns, no caches.",
        f"Run `{run_id(run_dir)}`; reproduce: `{command}`.",
        "",
        "Round trip from user space (CLOCK_MONOTONIC around the call): RPMsg's "
        "`write()` to `read()` on /dev/rpmsgN (the tandem-echo service), RPC's "
        "`TANDEM_RPC_IOC_CALL` (echo, block mode); and RPC's own (the driver's "
        "doorbell to answer). Medians, p90 in brackets, in microseconds:",
        "",
        "| bytes | RPMsg | RPC block | RPC block, driver | RPMsg / RPC block |",
        "|---|---|---|---|---|",
    ]

    def us(row: dict[str, object], key: str) -> str:
        med = float(str(row[f"{key}_median_ns"])) / 1000
        p90 = float(str(row[f"{key}_p90_ns"])) / 1000
        return f"{med:.2f} ({p90:.2f})"

    for row in table:
        assert isinstance(row, dict)
        lines.append(
            f"| {row['bytes']} | {us(row, 'rpmsg')} | {us(row, 'rpc_block')} | "
            f"{us(row, 'rpc_block_driver')} | {row['rpmsg_over_rpc_block']} |"
        )
    lines += [
        "",
        f"RTOS during the run: {summary['rtos_missed_total']} releases missed.",
        "",
        "Where RPMsg's time goes that RPC's block mode does not spend: the message "
        "is copied into a kernel buffer and an skb, virtio-rpmsg's send path takes its "
        "locks and fills a descriptor, the RTOS's carrier task (priority 11, woken by the "
        "doorbell's top half) copies the message and its answer through a vring each way, "
        "and on Linux's side the answer is taken in a work item (the virtqueue callbacks "
        "sleep), queued on the endpoint and read by a second system call. RPC's block "
        "mode copies once into a fixed channel, and calls of up to 256 bytes are answered "
        "in the RTOS's interrupt handler.",
        "",
    ]
    return "\n".join(lines)
