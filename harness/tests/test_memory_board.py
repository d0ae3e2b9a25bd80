"""`bench memory` on another board than QEMU's virt: its numbers in ns come
from that board's counter, not virt's (issue 48: the EVK's 8 MHz counter
read at virt's 62.5 MHz made its hand-offs 7.8 times too long)."""

from __future__ import annotations

import pytest
from test_ctxsw import record_line

from tandem.instruments import memory
from tandem.platform.board import load_board
from tandem.platform.boot_options import BootOptions

# 20 000 ticks over 1 000 hand-offs (999 intervals).
TICKS, SWITCHES = 20_000, 1_000


@pytest.mark.parametrize(
    "board, counter_hz", [("qemu-virt", 62_500_000), ("imx8mp-evk", 8_000_000)]
)
def test_hand_offs_are_timed_with_the_boards_counter(board: str, counter_hz: int) -> None:
    lines = ["noise", record_line(ticks=TICKS, switches=SWITCHES)]
    result = memory.handoffs(BootOptions(board=load_board(board)), "asid", None, lines, None)
    assert result.per_switch_ns == pytest.approx(
        TICKS * 1e9 / counter_hz / (SWITCHES - 1), abs=0.01
    )
