"""A stand-in for QEMU behind `exp.units.boot` (its `run_exec`), shared by
the experiments' host tests: it feeds a made-up console to the commands'
reader and the echo as run_exec does, writes the console and secure logs,
and returns the ExecResult a real boot would."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from tandem.platform.boot import ExecResult
from tandem.platform.boot_options import BootOptions
from tandem.platform.commands_output import CommandsOutput

# What a test checks of each boot's options, script, timeout and `panics`.
Check = Callable[[BootOptions, str, float, bool], None]


def fake_run_exec(
    log_dir: Path,
    console: Sequence[tuple[float, str]],
    check: Check,
    secure: str = "",
    now: list[float] | None = None,
) -> Callable[..., ExecResult]:
    """run_exec's stand-in: `console` as (host seconds after QEMU's start,
    line); with `now`, the host's clock is set to 1000 s plus each line's
    seconds as it is read (hostmarks read it). Each boot's logs are named
    by its core count, so boots side by side keep their own."""

    def run_exec(
        options: BootOptions,
        script: str,
        timeout_s: float,
        echo: Callable[[str], None],
        panics: bool,
        cancel: object,
        spawned: Callable[[int], None],
    ) -> ExecResult:
        check(options, script, timeout_s, panics)
        if now is not None:
            now[0] = 1000.0
        spawned(4321)
        reader = CommandsOutput(panics=panics, stop_at_end=True)
        for t, line in console:
            if now is not None:
                now[0] = 1000.0 + t
            for out in reader.feed(line):
                echo(out)
        log = log_dir / f"console{options.smp}.log"
        secure_log = log_dir / f"secure{options.smp}.log"
        log.write_text("".join(f"{line}\n" for _, line in console))
        secure_log.write_text(secure)
        assert reader.status is not None
        return ExecResult(
            reader.status, "", log, secure_log, 0, 4.0, 0.5, reader.reboots, reader.lines
        )

    return run_exec
