"""The `switch` experiment's report.md: instructions per world switch each
way, and the median switch's instructions per function."""

from __future__ import annotations

from pathlib import Path

from tandem.exp.common import read_summary, run_id
from tandem.exp.switch.spec import DIRECTIONS, NAME
from tandem.platform.timing import Timing

WORDS = {"linux_to_rtos": "Linux → RTOS", "rtos_to_linux": "RTOS → Linux"}


def report(run_dir: Path, command: str) -> str:
    """report.md, from the run's summary."""
    summary = read_summary(run_dir, NAME)
    timing = Timing.of_summary(summary)
    lines = [
        "# World switch: instructions each way",
        "",
        f"Run `{run_id(run_dir)}`: configuration `{summary['config']}`, {summary['smp']} "
        f"core(s), {timing.words()}, board `{summary['board']}`, Linux idling with "
        f"`{summary['linux_idle']}` for {summary['idle_ms']} ms. Reproduce: `{command}`.",
        "",
        "Counted from QEMU's execution log of the monitor's and the RTOS's code "
        "(`-d in_asm,exec,nochain`), with the firmware's symbols; unit: "
        f"{summary['unit']}.",
        "",
        "| direction | from, to | switches | median | min | max |",
        "|---|---|---|---|---|---|",
    ]
    for direction, span in DIRECTIONS.items():
        d = summary[direction]
        assert isinstance(d, dict)
        lines.append(
            f"| {WORDS[direction]} | {span} | {d['samples']} | {d['median_instructions']} | "
            f"{d['min_instructions']} | {d['max_instructions']} |"
        )
    for direction in DIRECTIONS:
        d = summary[direction]
        assert isinstance(d, dict)
        path = d["median_path"]
        assert isinstance(path, dict)
        lines += [
            "",
            f"{WORDS[direction]}, the median switch's instructions per function:",
            "",
            "| function | instructions |",
            "|---|---|",
            *(f"| `{name}` | {n} |" for name, n in path.items()),
        ]
    lines += ["", "What QEMU can show: " + timing.caveats(), ""]
    return "\n".join(lines)
