"""Where things are: the repository, its build outputs and logs."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
BUILD = ROOT / "build"
LOGS = BUILD / "logs"
RESULTS = ROOT / "results"
BOARDS = ROOT / "boards"
CONFIGS = ROOT / "configs"
EXPERIMENTS = ROOT / "experiments"

FIRMWARE = BUILD / "firmware" / "tandem-firmware.bin"
# Linux's device trees built from Debian's kernel source (boards' [linux] dtb).
KERNEL_DTS = BUILD / "linux" / "arch" / "arm64" / "boot" / "dts"
KERNEL = BUILD / "linux" / "arch" / "arm64" / "boot" / "Image"
# Diagnosis kernels (not Tandem's; Makefile): Linux's PSCI checker at boot.
PSCI_KERNEL = BUILD / "linux-psci" / "arch" / "arm64" / "boot" / "Image"
INITRAMFS = BUILD / "rootfs" / "initramfs.cpio"
# Tandem's QEMU: a link into the build cache (scripts/build-qemu.sh).
QEMU_INSTALL = BUILD / "qemu" / "install"


def firmware(board: str = "qemu-virt") -> Path:
    """The secure flash image built for `board` (Makefile: every board but
    qemu-virt under build/boards/NAME/)."""
    if board == "qemu-virt":
        return FIRMWARE
    return BUILD / "boards" / board / "tandem-firmware.bin"


def firmware_elf(board: str, image: str) -> Path:
    """The ELF of one of `board`'s firmware images (`tandem-monitor`,
    `tandem-rtos`, `tandem-hyp`), beside its flash image (Makefile): its
    symbols, at the board's addresses."""
    return firmware(board).parent / f"{image}.elf"


def missing_artifacts(board: str = "qemu-virt") -> list[Path]:
    """Build outputs a boot needs that do not exist yet."""
    return [p for p in (firmware(board), KERNEL, INITRAMFS) if not p.exists()]
