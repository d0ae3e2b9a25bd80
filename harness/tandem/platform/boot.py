"""Booting Tandem on QEMU: start QEMU on a boot's prepared inputs
(platform/boot_inputs.py), with the Linux console on this terminal (`run`)
or read line by line (`exec`: platform/commands_output.py), until the
commands end, the timeout or a panic; then what they printed.

The options: platform/boot_options.py. Timing modes: platform/timing.py
(docs/design.md, "Time and measurement").
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tandem.errors import TandemError
from tandem.platform import gdb, qemu_command
from tandem.platform.boot_inputs import DISK_NAME, FLASH_NAME, Prepared, prepare
from tandem.platform.boot_options import BootOptions
from tandem.platform.commands_output import CONSOLE_ENCODING, CommandsOutput, script_output

# Seconds QEMU may take to exit once the commands are done (poweroff).
POWEROFF_GRACE_S = 10.0


def _announce_gdb(options: BootOptions, prepared: Prepared) -> None:
    if options.gdb:
        print(
            f"tandem: QEMU waits for gdb on {gdb.socket_path(prepared.run_dir)} "
            "(every core stopped; only you can connect); "
            f"`./tandem gdb` in another terminal, or gdb-multiarch -x "
            f"{prepared.run_dir / gdb.SCRIPT}",
            file=sys.stderr,
            flush=True,
        )


REFUSAL = "cannot start:"


def monitor_refusal(secure_log: Path) -> str | None:
    """Why the monitor or the RTOS refused to start the machine, if one did
    (both log "cannot start: ..." and power off)."""
    try:
        text = secure_log.read_text(errors="replace")
    except FileNotFoundError:
        return None
    for line in text.splitlines():
        if REFUSAL in line:
            return line[line.index(REFUSAL) :]
    return None


def run_interactive(options: BootOptions) -> int:
    """Boots with the Linux console on this terminal; returns QEMU's status."""
    prepared = prepare(options)
    off = options.linux_off or options.config.linux_off
    print(f"tandem: secure console (monitor/RTOS) -> {prepared.secure_log}", file=sys.stderr)
    for name, log in prepared.consoles.items():
        print(f"tandem: partition {name}'s console -> {log}", file=sys.stderr)
    if off == "machine-off":
        quit_how = "`poweroff` or Ctrl-A X ends it"
    else:
        quit_how = (
            "Ctrl-A X ends it (`poweroff` stops Linux alone and the RTOS runs on; "
            "`reboot` restarts Linux alone)"
        )
    print(f"tandem: Linux console follows; {quit_how}", file=sys.stderr)
    _announce_gdb(options, prepared)
    proc = qemu_command.spawn(prepared.argv)
    try:
        status = proc.wait()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        (prepared.run_dir / FLASH_NAME).unlink(missing_ok=True)
        prepared.release()
    refusal = monitor_refusal(prepared.secure_log)
    if refusal:
        print(f"tandem: Tandem refused to start: {refusal}", file=sys.stderr)
        return 1
    return status


# The monitor's line when Linux's power-off leaves the RTOS running (for a
# partition: "Linux (partition B) asked to power off").
LINUX_STOPPED = re.compile(r"Linux( \(partition [A-Z]\))? asked to power off")


def wait_for_secure(secure_log: Path, text: str | re.Pattern[str], timeout_s: float) -> str:
    """Waits until the secure console (monitor, RTOS) shows `text`; returns
    the secure log so far."""
    deadline = time.monotonic() + timeout_s
    while True:
        log = secure_log.read_text(errors="replace")
        found = text.search(log) is not None if isinstance(text, re.Pattern) else text in log
        if found:
            return log
        if time.monotonic() > deadline:
            raise TandemError(
                f"secure console: no {text!r} within {timeout_s:.0f} s (log: {secure_log})"
            )
        time.sleep(0.1)


@dataclass
class ExecResult:
    """What a `tandem exec` boot produced."""

    status: int
    output: str
    console_log: Path
    secure_log: Path
    qemu_status: int
    # Host seconds from QEMU start to the first command running in Linux.
    boot_s: float
    # Host seconds from the end of the commands to QEMU exiting.
    poweroff_s: float
    # Times the commands rebooted the machine.
    reboots: int = 0
    lines: list[str] = field(default_factory=list)
    # With partitions: the other partitions' commands (partition_scripts).
    partitions: dict[str, PartitionResult] = field(default_factory=dict)
    # The host's clocks at lines the commands marked, as JSON, by mark: not
    # run_exec's (it leaves this empty) but its caller's, which watched the
    # lines (exp/units.py for a unit with Boot.host_marks).
    host_marks: dict[str, dict[str, float | None]] = field(default_factory=dict)
    # The host's wall clock at given console lines, with each line, as JSON
    # (exp/units.py for a unit with Boot.host_lines; run_exec leaves it empty).
    host_lines: list[dict[str, float | str]] = field(default_factory=list)


@dataclass
class PartitionResult:
    """What another partition's commands produced (its console log)."""

    status: int
    lines: list[str]
    console_log: Path


def _wait_for_partitions(
    consoles: dict[str, Path], names: list[str], proc: subprocess.Popen[bytes]
) -> dict[str, PartitionResult]:
    """Waits (until QEMU ends, or the boot's timer kills it) for the other
    partitions' commands to finish; their results."""
    done: dict[str, PartitionResult] = {}
    while len(done) < len(names):
        for name in names:
            if name in done:
                continue
            log = consoles[name]
            text = log.read_text(errors="replace") if log.exists() else ""
            status, lines = script_output([line.rstrip("\r") for line in text.splitlines()])
            if status is not None:
                done[name] = PartitionResult(status, lines, log)
        if len(done) < len(names):
            if proc.poll() is not None:
                break
            time.sleep(0.2)
    return done


def run_exec(
    options: BootOptions,
    script: str,
    timeout_s: float = 600.0,
    echo: Callable[[str], None] | None = None,
    panics: bool = False,
    cancel: threading.Event | None = None,
    spawned: Callable[[int], None] | None = None,
) -> ExecResult:
    """Boots, runs `script` as root in Linux once it is up, powers off.

    Command output (only that) is passed to `echo` line by line as it arrives;
    everything the console printed is saved to the console log. A Linux
    panic ends the boot at once with an error quoting it, unless `panics`
    (the commands panic Linux on purpose: the monitor restarts it, and the
    commands run again, as after a reboot). Setting `cancel` (from another
    thread: boots side by side, one failed or Ctrl-C) ends the boot with an
    error. `spawned` is told QEMU's process id as it starts (to read its
    host CPU time while it runs: `host_cpu`)."""
    prepared = prepare(options, exec_script=script)
    _announce_gdb(options, prepared)
    others = [name for name, _ in options.partition_scripts]
    partition_results: dict[str, PartitionResult] = {}
    start = time.monotonic()
    proc = qemu_command.spawn(
        prepared.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    if spawned is not None:
        spawned(proc.pid)
    timed_out = threading.Event()
    cancelled = threading.Event()
    finished = threading.Event()

    def watch() -> None:
        # QEMU killed at the timeout or when `cancel` is set; reading its
        # output then ends.
        deadline = start + timeout_s
        while not finished.wait(0.1):
            if cancel is not None and cancel.is_set():
                cancelled.set()
            elif time.monotonic() > deadline:
                timed_out.set()
            else:
                continue
            proc.kill()
            return

    watcher = threading.Thread(target=watch, name="run_exec watch", daemon=True)
    watcher.start()
    reader = CommandsOutput(
        panics=panics, stop_at_end=options.linux_off == "rtos-runs-on" or bool(others)
    )
    boot_s = end_s = 0.0
    assert proc.stdout is not None
    try:
        with prepared.console_log.open("w", encoding=CONSOLE_ENCODING) as log:
            for raw in proc.stdout:
                line = raw.decode(errors="replace").rstrip("\r\n")
                log.write(line + "\n")
                begins, ends = reader.begins, reader.ends
                new = reader.feed(line)
                if reader.begins > begins:
                    boot_s = boot_s or time.monotonic() - start
                if reader.ends > ends:
                    end_s = time.monotonic()
                if echo:
                    for out in new:
                        echo(out)
                if reader.done:
                    break
        status = reader.status
        if reader.panic:
            proc.kill()
            proc.wait()
            raise TandemError(
                "Linux panicked:\n"
                + "\n".join(reader.panic)
                + f"\n(console: {prepared.console_log}, secure: {prepared.secure_log})"
            )
        if cancelled.is_set():
            raise TandemError(f"stopped (console: {prepared.console_log})")
        if others and status is not None:
            # The other partitions' commands run on: wait for them, then end
            # QEMU (every partition's power-off stopped it alone).
            partition_results = _wait_for_partitions(prepared.consoles, others, proc)
            proc.kill()
        elif options.linux_off == "rtos-runs-on" and status is not None:
            # Linux's power-off leaves the machine running (the RTOS runs
            # on): wait for the monitor to say Linux stopped, then end QEMU.
            wait_for_secure(prepared.secure_log, LINUX_STOPPED, POWEROFF_GRACE_S)
            proc.kill()
        try:
            qemu_status = proc.wait(timeout=POWEROFF_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise TandemError(
                f"Linux did not power off within {POWEROFF_GRACE_S:.0f} s of the commands "
                f"ending (console: {prepared.console_log}, secure: {prepared.secure_log})"
            ) from None
    finally:
        finished.set()
        if proc.poll() is None:
            # Interrupted (Ctrl-C, SIGTERM, an error above): QEMU must not
            # outlive the harness and run on, unseen, for minutes.
            proc.kill()
            proc.wait()
        # The per-boot flash holds copies of the firmware, kernel and
        # initramfs plus the script: not worth keeping (exec.sh, the DTB
        # and the blobs beside the logs say what was in it).
        (prepared.run_dir / FLASH_NAME).unlink(missing_ok=True)
        (prepared.run_dir / DISK_NAME).unlink(missing_ok=True)
        prepared.release()
    if timed_out.is_set():
        raise TandemError(
            f"timed out after {timeout_s:.0f} s (console: {prepared.console_log}, "
            f"secure: {prepared.secure_log})"
        )
    refusal = monitor_refusal(prepared.secure_log)
    if refusal:
        raise TandemError(
            f"Tandem refused to start: {refusal} (secure: {prepared.secure_log}; "
            "run `make build` if the firmware and the harness disagree)"
        )
    if status is None:
        tail = "\n".join(prepared.console_log.read_text().splitlines()[-15:])
        raise TandemError(
            f"QEMU exited ({qemu_status}) before the commands finished; console tail:\n{tail}\n"
            f"(console: {prepared.console_log}, secure: {prepared.secure_log})"
        )
    for name in others:
        if name not in partition_results:
            other_log = prepared.consoles[name]
            text = other_log.read_text(errors="replace") if other_log.exists() else ""
            tail = "\n".join(text.splitlines()[-15:])
            raise TandemError(
                f"partition {name}'s commands did not finish; its console's tail:\n{tail}\n"
                f"(console: {other_log}, secure: {prepared.secure_log})"
            )
    return ExecResult(
        status=status,
        output="\n".join(reader.lines),
        console_log=prepared.console_log,
        secure_log=prepared.secure_log,
        qemu_status=qemu_status,
        boot_s=boot_s,
        poweroff_s=time.monotonic() - end_s,
        reboots=reader.reboots,
        lines=reader.lines,
        partitions=partition_results,
    )
