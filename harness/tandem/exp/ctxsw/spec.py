"""The `ctxsw` experiment's name, scenario keys, TLB modes, and the paper's
times it is set beside."""

from __future__ import annotations

from tandem.exp.scenario import Key
from tandem.platform.configs import MAX_PAGES, TLB_MODES
from tandem.platform.timing import MODES as TIMING_MODES

NAME = "ctxsw"
MODES = tuple(TLB_MODES)
# A cell without a memory model (`profiles`).
NO_MODEL = "none"

SCHEMA = {
    "timings": Key(list, "timing modes measured", item=str, choices=TIMING_MODES),
    "modes": Key(list, "TLB modes compared", item=str, choices=MODES),
    "pages": Key(
        list, "pages each task writes between hand-offs", item=int, minimum=0, maximum=MAX_PAGES
    ),
    "profiles": Key(
        list,
        "memory models each per-core-timing cell boots with: none (QEMU alone) or a memory "
        "profile (harness/memmodel/profiles); other timings boot without one",
        item=str,
    ),
    "switches": Key(int, "hand-offs per boot", minimum=2, maximum=100_000_000),
    "smp": Key(int, "cores (the tasks run on the last)", minimum=1, maximum=8),
    "host_reps": Key(int, "boots per cell in host timing", minimum=1, maximum=100),
    "path_switches": Key(
        int, "hand-offs in the boot that counts the path from QEMU's log", minimum=2, maximum=10_000
    ),
}

# Paper 004 (xv6 on ARM926EJ-S under QEMU RealView): 100 context switches.
PAPER = {"without FCSE (TLB flush)": 7.5, "with FCSE": 7.43}
