#!/usr/bin/env python3
"""Packs the secure flash image: the monitor at the start of flash, the RTOS
image and the normal world's EL2 layer at the flash addresses the board gives
them (boards/NAME.toml, boot.rtos_image and boot.hyp_image)."""

import sys
import tomllib
from pathlib import Path


def main() -> int:
    if len(sys.argv) != 6:
        print(
            "usage: pack-firmware.py BOARD.toml MONITOR.bin RTOS.bin HYP.bin OUT.bin",
            file=sys.stderr,
        )
        return 2
    board = tomllib.loads(Path(sys.argv[1]).read_text())
    flash = board["memory"]["secure_flash"]
    rtos_at = board["boot"]["rtos_image"] - flash["base"]
    hyp_at = board["boot"]["hyp_image"] - flash["base"]
    end = board["boot"]["config"] - flash["base"]
    monitor = Path(sys.argv[2]).read_bytes()
    rtos = Path(sys.argv[3]).read_bytes()
    hyp = Path(sys.argv[4]).read_bytes()
    for name, blob, at, room in (
        ("monitor", monitor, 0, rtos_at),
        ("RTOS", rtos, rtos_at, hyp_at - rtos_at),
        ("EL2 layer", hyp, hyp_at, end - hyp_at),
    ):
        if len(blob) > room:
            print(
                f"pack-firmware: {name} is {len(blob)} bytes, more than the {room} at {at:#x}",
                file=sys.stderr,
            )
            return 1
    image = monitor.ljust(rtos_at, b"\0") + rtos.ljust(hyp_at - rtos_at, b"\0") + hyp
    out = Path(sys.argv[5])
    if not out.exists() or out.read_bytes() != image:
        out.write_bytes(image)
        print(
            f"  FW      {out} (monitor {len(monitor)} B, RTOS {len(rtos)} B at {rtos_at:#x}, "
            f"EL2 layer {len(hyp)} B at {hyp_at:#x})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
