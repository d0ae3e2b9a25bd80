"""The RTOS status-line parser: what the restart bench and the QEMU tests
rely on to say the RTOS ran on."""

from __future__ import annotations

import pytest

from tandem.errors import TandemError
from tandem.platform import rtos_status

LOG = """\
[    0.100] monitor/0: Tandem monitor
[    1.000] rtos/0: 1 s | core0: 1000 jobs, 0 missed | core1: 999 jobs, 0 missed
[    2.000] rtos/0: 2 s | core0: 2000 jobs, 0 missed | core1: 2001 jobs, 2 missed
"""


def test_every_line_in_order_and_the_last() -> None:
    lines = rtos_status.parse(LOG)
    assert [s.seconds for s in lines] == [1, 2]
    assert lines[0].cores == {0: (1000, 0), 1: (999, 0)}
    assert rtos_status.last(LOG).missed == 2


def test_a_log_without_status_is_an_error() -> None:
    with pytest.raises(TandemError, match="no RTOS status line"):
        rtos_status.last("[ 0.1] monitor/0: Tandem monitor\n")


def test_ran_on_fails_on_a_miss_and_on_lost_releases() -> None:
    rtos_status.check_ran_on(rtos_status.parse(LOG)[0])
    with pytest.raises(TandemError, match="core 1 missed 2"):
        rtos_status.check_ran_on(rtos_status.last(LOG))
    lost = rtos_status.RtosStatus(2, {0: (1990, 0)})
    with pytest.raises(TandemError, match="1990 jobs in 2 s"):
        rtos_status.check_ran_on(lost)


def test_a_line_still_being_written_is_not_read() -> None:
    """A test reads the secure log while QEMU writes it: a status line cut
    after core1 (no newline yet) is not the RTOS's last status (make test,
    29 Nov: test_rtos_keeps_its_deadlines_after_linux_panics read cores
    [0, 1] of a 4-core line)."""
    partial = LOG + "[    3.000] rtos/0: 3 s | core0: 3000 jobs, 0 missed | core1: 30"
    assert [s.seconds for s in rtos_status.parse(partial)] == [1, 2]
    assert rtos_status.last(partial).seconds == 2
