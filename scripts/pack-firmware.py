#!/usr/bin/env python3
"""Packs the secure flash image: the monitor at the start of flash, the RTOS
image at the flash address the board gives it (boards/NAME.toml, boot.rtos_image)."""

import sys
import tomllib
from pathlib import Path


def main() -> int:
    if len(sys.argv) != 5:
        print("usage: pack-firmware.py BOARD.toml MONITOR.bin RTOS.bin OUT.bin", file=sys.stderr)
        return 2
    board = tomllib.loads(Path(sys.argv[1]).read_text())
    flash = board["memory"]["secure_flash"]
    offset = board["boot"]["rtos_image"] - flash["base"]
    monitor = Path(sys.argv[2]).read_bytes()
    rtos = Path(sys.argv[3]).read_bytes()
    if len(monitor) > offset:
        print(f"pack-firmware: monitor is {len(monitor)} bytes, more than the {offset} before the RTOS", file=sys.stderr)
        return 1
    image = monitor + b"\0" * (offset - len(monitor)) + rtos
    if len(image) > flash["size"]:
        print(f"pack-firmware: {len(image)} bytes do not fit in {flash['size']} of flash", file=sys.stderr)
        return 1
    out = Path(sys.argv[4])
    if not out.exists() or out.read_bytes() != image:
        out.write_bytes(image)
        print(f"  FW      {out} (monitor {len(monitor)} B, RTOS {len(rtos)} B at {offset:#x})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
