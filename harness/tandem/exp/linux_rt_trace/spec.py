"""The `linux-rt-trace` experiment's name, scenario keys, the tracing
kernel it boots and the tracer's window."""

from __future__ import annotations

from tandem.exp.scenario import Key
from tandem.platform.paths import BUILD

NAME = "linux-rt-trace"

SCHEMA = {
    "cores": Key(list, "core counts, one boot each", item=int, choices=(1, 2, 3, 4, 5, 6, 7, 8)),
    "samples": Key(int, "cyclictest loops (1 ms period)", minimum=16, maximum=100_000),
    "io_load": Key(bool, "also linux-rt's disk I/O load"),
    "settle_ms": Key(int, "ms the load runs before measuring starts", minimum=0, maximum=10_000),
}

# `make trace-kernel`'s image: Tandem's kernel with the preemptirqsoff tracer.
TRACE_KERNEL = BUILD / "linux-trace" / "arch" / "arm64" / "boot" / "Image"
# The tracer's maximum is printed and restarted this often.
WINDOW_US = 200_000
# Stack frames kept per section (the innermost first).
FRAMES = 12
# The disk linux-rt's I/O load writes to.
DISK_MIB = 512
PLOT = "sections.png"


def label(cores: int) -> str:
    """A boot's label in raw/."""
    return f"cores{cores}"
