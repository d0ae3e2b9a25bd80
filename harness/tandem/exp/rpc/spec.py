"""The `rpc` experiment's name, scenario keys, wait modes, and the paper's
task-pair times and threshold."""

from __future__ import annotations

from tandem.exp.scenario import Key

NAME = "rpc"
MODES = ("busy", "block", "auto")
MAX_DATA = 65536

SCHEMA = {
    "smp": Key(int, "cores", minimum=2, maximum=4),
    "server_core": Key(int, "the RTOS core serving the calls", minimum=0, maximum=3),
    "client_cpu": Key(int, "the Linux CPU the client (and the CPU-bound task) runs on", minimum=0),
    "sizes": Key(list, "bytes per call", item=int, minimum=0, maximum=MAX_DATA),
    "modes": Key(list, "wait modes", item=str, choices=MODES),
    "calls": Key(int, "latency calls per size and mode", minimum=1, maximum=10_000),
    "pair_calls": Key(int, "calls of the RPC task in one task-pair run", minimum=1, maximum=10_000),
    "pair_work": Key(
        int, "loop iterations of the CPU-bound task", minimum=1000, maximum=1_000_000_000
    ),
    "pair_runs": Key(int, "task-pair runs per size and mode", minimum=1, maximum=100),
}

# Paper 002, Table 1 (MP T-Kernel on an NE1 board, hardware): task-pair
# completion time in ms, and its threshold.
PAPER_BUSY_MS = {1: 0.442, 10: 0.428, 100: 0.420, 1000: 0.660, 10000: 3.16, 50000: 14.5}
PAPER_BLOCK_MS = {1: 0.618, 10: 0.660, 100: 0.656, 1000: 0.668, 10000: 2.52, 50000: 10.2}
PAPER_X_OPT_BYTES = 1700
