"""Two builds of one commit give one kernel: Linux's banner (build time,
user, host, count) is pinned by the Makefile. Unpinned, Linux mixed the
banner into its random pool at boot, so two clones of one commit booted
into different runs (paper 003's first look: SMP's medians 638 / 509 / 417
against 650 / 624 / 831 µs from another clone's build)."""

from __future__ import annotations

import re

import pytest

from tandem.platform.paths import KERNEL

# Needs the built kernel (`make build`), as the QEMU tests do.
pytestmark = pytest.mark.qemu


def test_the_kernels_banner_names_no_build_time_user_or_host() -> None:
    # The Image holds the banner twice: a placeholder without the count and
    # time (init/version.o) and the one Linux prints (version-timestamp.o).
    banners = re.findall(rb"Linux version [^\n\0]+", KERNEL.read_bytes())
    assert banners, f"no banner in {KERNEL}"
    for banner in (b.decode() for b in banners):
        assert "(tandem@tandem)" in banner, banner
    pinned = "#1 SMP PREEMPT Thu Jan 1 00:00:00 UTC 1970"
    assert any(b.decode().endswith(pinned) for b in banners), banners
