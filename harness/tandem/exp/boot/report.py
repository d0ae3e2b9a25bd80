"""The `boot` experiment's report.md: the host's wall time to Linux's
first command and to QEMU's exit, boot by boot, with the clock and the
host named."""

from __future__ import annotations

from pathlib import Path

from tandem.exp.boot.spec import NAME
from tandem.exp.common import read_summary, run_id, summary_list


def _host_words(summary: dict[str, object]) -> str:
    """The host that booted, as the run's provenance names it, or each
    host where shards ran on several."""
    hosts = summary.get("hosts")
    if isinstance(hosts, list) and len(hosts) > 1:
        return (
            f"Hosts: {', '.join(map(str, hosts))} (shards on several machines: each "
            "boot's host is in the table below; their times are not one host's)."
        )
    provenance = summary.get("provenance")
    host = provenance.get("host") if isinstance(provenance, dict) else None
    if not isinstance(host, dict):
        return "Host: not recorded."
    return (
        f"Host: {host.get('name', '?')}, {host.get('cpu', '?')} ({host.get('cpus', '?')} "
        f"cores), {host.get('os', '?')}."
    )


def report(run_dir: Path, command: str) -> str:
    """report.md, from the run's summary."""
    summary = read_summary(run_dir, NAME)
    rows = summary_list(summary)
    lines = [
        "# Boot time: the host's wall time to Linux's first command",
        "",
        f"Run `{run_id(run_dir)}`: configuration `{summary['config']}`, {summary['smp']} cores, "
        f"{summary['timing_described']}, board `{summary['board']}`, Linux idling with "
        f"`{summary['linux_idle']}`; {summary['runs']} boots, one after another. "
        f"Reproduce: `{command}`.",
        "",
        "Clock: the host's wall time (the harness's monotonic clock, read as QEMU's console "
        "arrives), from QEMU's start to the first command running in Linux's shell (rcS "
        "done, the tandem driver loaded), and from the commands' end to QEMU's exit "
        "(Linux's power-off). It measures this host as much as Tandem: another host, "
        "another timing mode or other work on this host gives other times. The boots ran "
        "one at a time: boots side by side would share the host's cores, so this "
        "experiment refuses `--jobs` above 1.",
        "",
        _host_words(summary),
        "",
        "| | median | min | max |",
        "|---|---|---|---|",
        f"| QEMU's start to the first command | {summary['boot_median_s']} s | "
        f"{summary['boot_min_s']} s | {summary['boot_max_s']} s |",
        f"| the commands' end to QEMU's exit | {summary['poweroff_median_s']} s | | "
        f"{summary['poweroff_max_s']} s |",
        "",
        "| boot | to the first command (s) | to QEMU's exit (s) | host | host's load average "
        "before |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['run']} | {row['boot_s']} | {row['poweroff_s']} | {row['host']} | "
            f"{row['host_loadavg_before']} |"
        )
    lines.append("")
    return "\n".join(lines)
