"""The `memory` experiment's name, scenario keys, the sizes and page counts
its microbenchmarks visit, and the tolerances of its checks (fixed before
any run: docs/harness.md, "The memory model")."""

from __future__ import annotations

from tandem.exp.scenario import Key

NAME = "memory"

SCHEMA = {
    "profiles": Key(
        list, "memory profiles checked (each against a boot without a model)", item=str
    ),
    "loads": Key(int, "chase loads per size", minimum=1, maximum=100_000_000),
    "tlb_loads": Key(int, "loads per TLB sweep point", minimum=1, maximum=100_000_000),
    "switches": Key(int, "ctxsw hand-offs per boot", minimum=2, maximum=100_000_000),
}

KIB, MIB = 1024, 1024 * 1024
CHASE_SIZES = (
    4 * KIB,
    8 * KIB,
    16 * KIB,
    24 * KIB,
    32 * KIB,
    48 * KIB,
    64 * KIB,
    128 * KIB,
    256 * KIB,
    384 * KIB,
    512 * KIB,
    768 * KIB,
    1 * MIB,
    2 * MIB,
    4 * MIB,
    8 * MIB,
)
# A size well inside each level (physically indexed caches and random page
# placement: an L2-sized chase would meet set conflicts before L2 is full).
L1_SIZE, L2_SIZE, DRAM_SIZE = 16 * KIB, 128 * KIB, 8 * MIB
STREAMS = (0, 1, 2, 3)
CTXSW_PAGES = 64
# The ctxsw boots' memory models: without one and with `a53`.
CTXSW_MODELS: tuple[str | None, ...] = (None, "a53")
CTXSW_MODES = ("asid", "flush")
# The acceptance's tolerances (exp/memory/__init__.py's docstring).
PLATEAU_TOLERANCE = 0.10
CONTENTION_TOLERANCE = 0.10
FLAT_TOLERANCE = 0.01
KNEE_TOLERANCE = 2
CTXSW_TOLERANCE = 0.20
