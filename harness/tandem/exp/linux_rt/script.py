"""What each `linux-rt` boot runs: the cells of one core count, and the
guest script that measures them all in one boot."""

from __future__ import annotations

from tandem.exp.linux_rt.spec import PERIOD_US
from tandem.exp.scenario import Scenario
from tandem.instruments.measure import script_header


def cells(s: Scenario, cores: int) -> list[tuple[bool, bool]]:
    """(affinity, io_load) measured in the boot with `cores` cores."""
    return [
        (aff, io)
        for io in s.flags("io_load")
        for aff in s.flags("affinity")
        if not (aff and cores == 1)
    ]


def phase_id(affinity: bool, io: bool) -> str:
    return f"aff{int(affinity)}-io{int(io)}"


def guest_script(s: Scenario, cores: int) -> str:
    """The guest script for one core count: every cell in one boot."""
    lines = [
        script_header(
            PERIOD_US, s.text("memory_bytes"), 0, s.text("hdd_bytes"), s.integer("settle_ms")
        )
    ]
    todo = cells(s, cores)
    last = cores - 1
    others = "0" if last == 1 else f"0-{last - 1}"
    if any(io for _, io in todo):
        lines.append("disk_setup")
    if any(aff for aff, _ in todo):
        lines.append(f"isolate_core {last}")
    for aff, io in todo:
        where = others if aff else "any"
        lines.append(f"load_start kernel {cores} {where}")
        if io:
            lines.append(f"load_start io {cores} {where}")
        pin = str(last) if aff else "any"
        lines.append(
            f"measure_cyclictest {phase_id(aff, io)} {s.integer('samples')} {pin} "
            f"{'yes' if aff else 'no'}"
        )
    return "\n".join(lines) + "\n"
