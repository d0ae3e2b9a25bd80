"""The secure flash a boot starts from: the firmware (monitor, RTOS image
and the normal world's EL2 layer), the boot configuration page (policies,
then the workload blob), the partition table's page (configurations with
partitions) and Linux's images (a `LinuxImages` header per Linux, then
kernel, device tree and initramfs), laid out as the board says
(`boards/*.toml` [boot]). QEMU loads it with `-bios`; the monitor copies
Linux's images to normal RAM at cold boot and before every restart of
Linux, so Linux, which cannot write secure flash, always starts from these
(docs/monitor.md, "Restarting Linux"). Partitions share the kernel's and
the initramfs's bytes in flash: each header points at the same ones, with
its own load addresses."""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tandem.errors import TandemError
from tandem.platform import abi_generated as abi
from tandem.platform.board import Board

# Images start on page boundaries after the headers.
ALIGN = 0x1000
# Bytes between one Linux's header and the next.
HEADER_STRIDE = 0x100


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


def header_offset(index: int) -> int:
    """Where the `index`th Linux's images header lies, in bytes after the
    board's linux_images."""
    return index * HEADER_STRIDE


def write(
    board: Board,
    firmware: bytes,
    boot_config: bytes,
    workload: bytes,
    images: Iterable[Image] | Iterable[tuple[Image, Image, Image]],
    out: Path,
    partitions: bytes = b"",
) -> Path:
    """Writes the flash file `out` (sparse where nothing lies) and returns it.

    `images` is one Linux's kernel, device tree and initramfs, or a triple
    of them per Linux (partitions; an image whose chunks are the same
    object as another's is stored once). `partitions` is the partition
    table (configs.PlatformConfig.partition_table), empty without."""
    given = list(images)
    sets: list[tuple[Image, Image, Image]] = (
        [tuple(given)]  # type: ignore[list-item]
        if given and isinstance(given[0], Image)
        else given  # type: ignore[assignment]
    )
    base = board.secure_flash.base
    room = board.boot_config - base
    if len(firmware) > room:
        raise TandemError(
            f"firmware is {len(firmware)} bytes; the board leaves {room} before the boot "
            f"configuration at {board.boot_config:#x}"
        )
    if len(boot_config) > abi.WORKLOAD_OFFSET or len(workload) > abi.WORKLOAD_SIZE:
        raise TandemError("boot configuration or workload blob larger than the ABI allows")
    if len(partitions) > ALIGN:
        raise TandemError("partition table larger than its page")
    if not sets or len(sets) * HEADER_STRIDE > ALIGN:
        raise TandemError(f"1..{ALIGN // HEADER_STRIDE} sets of Linux images, got {len(sets)}")
    # Each distinct image once, after the headers' page.
    placed: dict[int, int] = {}
    blobs: list[tuple[int, Image]] = []
    offset = ALIGN
    for image in (i for s in sets for i in s):
        if id(image.chunks) not in placed:
            placed[id(image.chunks)] = offset
            blobs.append((offset, image))
            offset = _align(offset + image.size)
    flash_room = board.secure_flash.end - board.linux_images
    if offset > flash_room:
        raise TandemError(
            f"Linux's images need {offset / 2**20:.1f} MiB of secure flash; the board leaves "
            f"{flash_room / 2**20:.1f} MiB after {board.linux_images:#x} "
            f"({', '.join(f'{i.name} {i.size / 2**20:.1f} MiB' for _, i in blobs)})"
        )
    headers = []
    for n, (kernel, dtb, initrd) in enumerate(sets):
        at = header_offset(n)
        header = struct.pack("<QII", abi.LINUX_IMAGES_MAGIC, abi.LINUX_IMAGES_VERSION, 0)
        for image in (kernel, dtb, initrd):
            header += struct.pack("<QQQ", placed[id(image.chunks)] - at, image.size, image.load)
        assert len(header) == abi.LINUX_IMAGES_HEADER_SIZE <= HEADER_STRIDE
        headers.append((at, header))
    with out.open("wb") as f:
        f.write(firmware)
        f.seek(board.boot_config - base)
        f.write(boot_config)
        f.seek(board.boot_config - base + abi.WORKLOAD_OFFSET)
        f.write(workload)
        if partitions:
            f.seek(board.boot_config - base + abi.PARTITIONS_OFFSET)
            f.write(partitions)
        for at, header in headers:
            f.seek(board.linux_images - base + at)
            f.write(header)
        for at, image in blobs:
            f.seek(board.linux_images - base + at)
            for chunk in image.chunks:
                f.write(chunk)
    return out
