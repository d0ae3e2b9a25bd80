"""The RTOS's once-a-second status lines on the secure console
(`rtos/0: 12 s | core0: 12000 jobs, 0 missed ... | core1: ...`), parsed in
one place for the benches and the tests that check the RTOS ran on."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tandem.errors import TandemError

_STATUS = re.compile(r"rtos/\d+: (\d+) s \|(.*)")
_CORE = re.compile(r"core(\d+): (\d+) jobs, (\d+) missed")


@dataclass(frozen=True)
class RtosStatus:
    """One status line: the RTOS's uptime in whole seconds and, per core,
    the demo's cyclic jobs released and the releases missed so far."""

    seconds: int
    cores: dict[int, tuple[int, int]]

    @property
    def missed(self) -> int:
        return sum(missed for _, missed in self.cores.values())


def parse(secure_log: str) -> list[RtosStatus]:
    """Every complete status line of a secure console log, in order."""
    out = []
    lines = secure_log.splitlines()
    if lines and not secure_log.endswith("\n"):
        # Callers read the log while QEMU writes it, a byte at a time as the
        # RTOS prints: a last line without its newline may be cut short
        # (a status with some of its cores).
        lines.pop()
    for line in lines:
        m = _STATUS.search(line)
        if m:
            cores = {int(c): (int(j), int(x)) for c, j, x in _CORE.findall(m.group(2))}
            out.append(RtosStatus(int(m.group(1)), cores))
    return out


def last(secure_log: str) -> RtosStatus:
    """The latest status line; a clear error if the RTOS printed none."""
    lines = parse(secure_log)
    if not lines:
        raise TandemError("no RTOS status line on the secure console")
    return lines[-1]


def check_ran_on(status: RtosStatus, period_ms: int = 1, slack: int = 3) -> None:
    """Raises unless no release was missed on any core and none was lost:
    the demo's jobs number uptime / period per core, within `slack`."""
    want = status.seconds * 1000 // period_ms
    for core, (jobs, missed) in sorted(status.cores.items()):
        if missed:
            raise TandemError(f"RTOS core {core} missed {missed} releases")
        if abs(jobs - want) > slack:
            raise TandemError(
                f"RTOS core {core}: {jobs} jobs in {status.seconds} s, want {want} +- {slack}"
            )
