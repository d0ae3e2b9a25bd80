"""A running process's CPU time on the host, read from /proc.

The memory model's cost is judged in host user CPU time, not wall time:
wall-time ratios move by 10-15 % with the host's other load, while the CPU
time QEMU itself used moves far less. Reading /proc/<pid>/stat while QEMU
runs gives its time at any moment a benchmark marks (the boot's end, a
workload's start and end), which a wait4 at exit could not.
"""

from __future__ import annotations

import os
from pathlib import Path

from tandem.errors import TandemError

# Field 14 of /proc/<pid>/stat, counted from the field after the command
# name: "state" is field 3.
_UTIME_AFTER_NAME = 14 - 3


def user_ticks(stat: str) -> int:
    """User-mode clock ticks of all the process's threads, from the text of
    /proc/<pid>/stat (proc(5)). The command name, field 2, is in
    parentheses and may hold spaces or parentheses itself: the fields
    start after the last ')'."""
    close = stat.rfind(")")
    fields = stat[close + 1 :].split() if close >= 0 else []
    if len(fields) <= _UTIME_AFTER_NAME or not fields[_UTIME_AFTER_NAME].isdigit():
        raise TandemError(f"not a /proc/<pid>/stat line: {stat[:120]!r}")
    return int(fields[_UTIME_AFTER_NAME])


def user_cpu_s(pid: int) -> float | None:
    """Seconds of user CPU time process `pid` (all its threads) has used so
    far; None once it has exited and been reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return user_ticks(stat) / os.sysconf("SC_CLK_TCK")
