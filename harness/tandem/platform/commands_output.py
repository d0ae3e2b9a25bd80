"""What the commands `exec` runs print on a Linux console: their output
between the markers the initramfs's rcS prints, their exit status, the
restarts and panics in between; read live from QEMU (boot.run_exec) or
from a saved console log, with the same rules."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

BEGIN = "@@TANDEM-EXEC-BEGIN@@"
END = re.compile(r"@@TANDEM-EXEC-END status=(\d+)@@")
RESTART = re.compile(r"^\[\s*\d+\.\d+\] reboot: Restarting system$")
# Linux's panic message, and how many console lines after it to report.
PANIC = "Kernel panic - not syncing"
PANIC_LINES = 30
# How run_exec writes console logs (and read_console_log reads them).
CONSOLE_ENCODING = "utf-8"


def _drop_restart_chatter(lines: list[str]) -> list[str]:
    """`lines` without what follows the kernel's last restart message."""
    for i in range(len(lines) - 1, -1, -1):
        if RESTART.match(lines[i]):
            return lines[:i]
    return lines


def script_output(lines: list[str]) -> tuple[int | None, list[str]]:
    """The exit status and output lines of the commands in a console log
    (None: they did not finish), after the last time they started (a
    restart runs them again)."""
    status: int | None = None
    output: list[str] = []
    inside = False
    for line in lines:
        if line.endswith(BEGIN):
            output, status, inside = [], None, True
            continue
        if inside:
            m = END.search(line)
            if m:
                if line[: m.start()]:
                    output.append(line[: m.start()])
                status = int(m.group(1))
                inside = False
            else:
                output.append(line)
    return status, output


@dataclass
class CommandsOutput:
    """The commands' output in a console, read line by line: `run_exec`
    reads QEMU's live, `read_console_log` a saved console log, with the same
    rules, so a run's raw console logs give back exactly what its boots
    printed (what `tandem exp merge` and a new parse read).

    Output starts after BEGIN and ends at END (with the status); a BEGIN
    while inside means the commands rebooted the machine and run again (their
    output kept, the restart's chatter dropped). A Linux panic ends the
    reading after PANIC_LINES lines, unless `panics` (the commands panic
    Linux on purpose)."""

    panics: bool = False
    # Stop at END: QEMU runs on after Linux's power-off (the RTOS, or other
    # partitions), so nothing after it is the commands'.
    stop_at_end: bool = False
    lines: list[str] = field(default_factory=list)
    status: int | None = None
    inside: bool = False
    begins: int = 0
    ends: int = 0
    reboots: int = 0
    panic: list[str] = field(default_factory=list)
    # Nothing more to read (the end, or a panic's last line).
    done: bool = False

    def feed(self, line: str) -> list[str]:
        """Reads one console line; returns the output lines it adds."""
        if self.panic or (PANIC in line and not self.panics):
            # Linux will not finish the commands: report the panic now, not
            # after the timeout.
            self.panic.append(line)
            if len(self.panic) >= PANIC_LINES or "---[ end Kernel panic" in line:
                self.done = True
            return []
        if line.endswith(BEGIN):
            if self.inside:
                # The commands rebooted the machine and now run again: keep
                # their output, drop the restart and boot chatter.
                self.reboots += 1
                self.lines = _drop_restart_chatter(self.lines)
            self.begins += 1
            self.inside = True
            return []
        if not self.inside:
            return []
        m = END.search(line)
        if m is None:
            self.lines.append(line)
            return [line]
        before = line[: m.start()]
        self.status = int(m.group(1))
        self.ends += 1
        self.inside = False
        self.done = self.stop_at_end
        if before:
            self.lines.append(before)
            return [before]
        return []


def read_console_log(data: bytes, panics: bool = False) -> CommandsOutput:
    """What the commands printed, from a console log `run_exec` wrote (every
    line it read, and none after it stopped reading); `panics` as
    run_exec's (the commands panicked Linux on purpose)."""
    out = CommandsOutput(panics=panics)
    # Split at newlines only: a line may hold a carriage return or other
    # characters that str.splitlines would split at.
    lines = data.decode(CONSOLE_ENCODING, errors="replace").split("\n")
    if lines[-1] == "":
        lines.pop()
    for line in lines:
        out.feed(line)
    return out
