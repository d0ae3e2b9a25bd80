"""Driving the Linux console of a booted Tandem like a person at the terminal:
send a line, wait for text. Used by tests of the interactive boot."""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from types import TracebackType

from tandem.errors import TandemError
from tandem.platform import qemu_command
from tandem.platform.boot import wait_for_secure
from tandem.platform.boot_inputs import FLASH_NAME, prepare
from tandem.platform.boot_options import BootOptions

PROMPT = re.compile(r"tandem:[^\n#]*# ")
# busybox's line editor asks the "terminal" where its cursor is.
ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Console:
    """An interactive boot (`tandem run`) with its console on pipes."""

    def __init__(self, options: BootOptions) -> None:
        prepared = prepare(options)
        self.secure_log = prepared.secure_log
        self._flash = prepared.run_dir / FLASH_NAME
        self.started = time.monotonic()
        self.proc = qemu_command.spawn(
            prepared.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self._text = ""
        self._seen = 0
        self._lock = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while chunk := os.read(fd, 4096):
            with self._lock:
                self._text += ESCAPE.sub("", chunk.decode(errors="replace").replace("\r", ""))
                self._lock.notify_all()
        with self._lock:
            self._lock.notify_all()

    @property
    def transcript(self) -> str:
        """Everything the console printed so far."""
        with self._lock:
            return self._text

    def expect(self, pattern: str | re.Pattern[str], timeout_s: float = 60.0) -> re.Match[str]:
        """Waits for `pattern` in output not yet consumed; consumes up to its end."""
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while True:
                m = regex.search(self._text, self._seen)
                if m:
                    self._seen = m.end()
                    return m
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    tail = self._text[-2000:]
                    raise TandemError(
                        f"console: no {regex.pattern!r} within {timeout_s} s:\n{tail}"
                    )
                self._lock.wait(min(left, 0.5))

    def send(self, line: str) -> None:
        """Types a line."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def command(self, line: str, timeout_s: float = 60.0) -> str:
        """Runs a shell command at the prompt and returns what it printed."""
        self.send(line)
        self.expect(re.escape(line) + r"\n", timeout_s)
        start = self._seen
        m = self.expect(PROMPT, timeout_s)
        return self.transcript[start : m.start()]

    def wait_exit(self, timeout_s: float) -> int:
        """QEMU's exit status, waiting at most `timeout_s`."""
        return self.proc.wait(timeout=timeout_s)

    def close(self) -> None:
        """Stops QEMU if it still runs."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._flash.unlink(missing_ok=True)

    def secure_expect(self, text: str, timeout_s: float = 30.0) -> str:
        """Waits until the secure console (monitor, RTOS) shows `text`;
        returns the secure log so far."""
        return wait_for_secure(self.secure_log, text, timeout_s)

    def __enter__(self) -> Console:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
