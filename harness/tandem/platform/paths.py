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
KERNEL = BUILD / "linux" / "arch" / "arm64" / "boot" / "Image"
# Diagnosis kernels (not Tandem's; Makefile): Linux's PSCI checker at boot.
PSCI_KERNEL = BUILD / "linux-psci" / "arch" / "arm64" / "boot" / "Image"
INITRAMFS = BUILD / "rootfs" / "initramfs.cpio"
# Tandem's QEMU: a link into the build cache (scripts/build-qemu.sh).
QEMU_INSTALL = BUILD / "qemu" / "install"


def missing_artifacts() -> list[Path]:
    """Build outputs a boot needs that do not exist yet."""
    return [p for p in (FIRMWARE, KERNEL, INITRAMFS) if not p.exists()]
