"""Host CPU time of a running process (tandem.platform.host_cpu)."""

from __future__ import annotations

import os
import time

import pytest

from tandem.errors import TandemError
from tandem.platform.host_cpu import user_cpu_s, user_ticks

# A real line's shape, its command name holding a space and a ')'.
STAT = (
    "4242 (qemu-system) x) S 1 4242 4242 0 -1 4194560 1200 0 0 0 "
    "5321 17 0 0 20 0 9 0 100 1000000 500 18446744073709551615"
)


def test_user_ticks_are_field_14_after_a_name_with_spaces_and_parentheses() -> None:
    assert user_ticks(STAT) == 5321


def test_a_line_that_is_not_a_stat_line_is_refused() -> None:
    with pytest.raises(TandemError, match="not a /proc/<pid>/stat line"):
        user_ticks("4242 (qemu) S 1 2")


def test_a_running_process_user_time_grows_with_its_work() -> None:
    before = user_cpu_s(os.getpid())
    assert before is not None
    # Arithmetic, not clock reads (a CPU-time clock read is a system call).
    end = time.process_time() + 0.3
    while time.process_time() < end:
        sum(i * i for i in range(20_000))
    after = user_cpu_s(os.getpid())
    assert after is not None and after - before >= 0.1


def test_an_exited_process_has_no_time() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    assert user_cpu_s(pid) is None
