"""What the `switch` experiment's boot runs: Linux idles while QEMU logs
every block the monitor and the RTOS execute (the RTOS's timer interrupts
switch worlds on every tick), and the code QEMU is told to log."""

from __future__ import annotations

from tandem.platform.board import Board


def script(idle_ms: int) -> str:
    """Whole seconds as the bench always slept them (`sleep 1`)."""
    return f"sleep {idle_ms / 1000:g}"


def logged_code(board: Board) -> str:
    """QEMU's address filter: the monitor runs from flash below the RTOS's
    image, the RTOS from its RAM."""
    return (
        f"{board.secure_flash.base:#x}..{board.rtos_image - 1:#x},"
        f"{board.rtos_ram.base:#x}..{board.rtos_ram.end - 1:#x}"
    )
