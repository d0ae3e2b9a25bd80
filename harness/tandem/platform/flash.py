"""The secure flash a boot starts from: the firmware (monitor and RTOS
image), the boot configuration page (policies, then the workload blob) and
Linux's images (a `LinuxImages` header, then kernel, device tree and
initramfs), laid out as the board says (`boards/*.toml` [boot]). QEMU
loads it with `-bios`; the monitor copies Linux's images to normal RAM at
cold boot and before every restart of Linux, so Linux, which cannot write
secure flash, always starts from these (docs/monitor.md, "Restarting
Linux")."""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tandem.errors import TandemError
from tandem.platform import abi_generated as abi
from tandem.platform.board import Board

# Images start on page boundaries after the header.
ALIGN = 0x1000


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


@dataclass(frozen=True)
class Image:
    """One of Linux's images: its bytes (as chunks, so the initramfs need
    not be joined in memory) and where in normal RAM it goes."""

    name: str
    chunks: tuple[bytes, ...]
    load: int

    @property
    def size(self) -> int:
        return sum(len(c) for c in self.chunks)


def write(
    board: Board,
    firmware: bytes,
    boot_config: bytes,
    workload: bytes,
    images: Iterable[Image],
    out: Path,
) -> Path:
    """Writes the flash file `out` (sparse where nothing lies) and returns it."""
    kernel, dtb, initrd = images
    base = board.secure_flash.base
    room = board.boot_config - base
    if len(firmware) > room:
        raise TandemError(
            f"firmware is {len(firmware)} bytes; the board leaves {room} before the boot "
            f"configuration at {board.boot_config:#x}"
        )
    if len(boot_config) > abi.WORKLOAD_OFFSET or len(workload) > abi.WORKLOAD_SIZE:
        raise TandemError("boot configuration or workload blob larger than the ABI allows")
    offset = _align(abi.LINUX_IMAGES_HEADER_SIZE)
    parts = []
    for image in (kernel, dtb, initrd):
        parts.append((offset, image.size, image.load))
        offset = _align(offset + image.size)
    flash_room = board.secure_flash.end - board.linux_images
    if offset > flash_room:
        raise TandemError(
            f"Linux's images need {offset / 2**20:.1f} MiB of secure flash; the board leaves "
            f"{flash_room / 2**20:.1f} MiB after {board.linux_images:#x} "
            f"({', '.join(f'{i.name} {i.size / 2**20:.1f} MiB' for i in (kernel, dtb, initrd))})"
        )
    header = struct.pack("<QII", abi.LINUX_IMAGES_MAGIC, abi.LINUX_IMAGES_VERSION, 0)
    for part in parts:
        header += struct.pack("<QQQ", *part)
    assert len(header) == abi.LINUX_IMAGES_HEADER_SIZE
    with out.open("wb") as f:
        f.write(firmware)
        f.seek(board.boot_config - base)
        f.write(boot_config)
        f.seek(board.boot_config - base + abi.WORKLOAD_OFFSET)
        f.write(workload)
        f.seek(board.linux_images - base)
        f.write(header)
        for image, (at, _, _) in zip((kernel, dtb, initrd), parts, strict=True):
            f.seek(board.linux_images - base + at)
            for chunk in image.chunks:
                f.write(chunk)
    return out
