"""The record of the RTOS's `ctxsw` application (protected tasks handing
off, paper 004) as Linux sees it: the guest script that waits for it in
the shared region and prints it, its parsing, and the time per hand-off
by the board's counter. A measuring primitive: the ctxsw experiment
(exp/ctxsw) and `bench memory` both read hand-offs with it."""

from __future__ import annotations

import struct

from tandem.errors import TandemError
from tandem.platform.abi_generated import CTXSW_DONE, CTXSW_OFFSET

RESULT = "@@CTXSW@@"
# abi/src/shm.rs, through the generated module: where the record lies and
# its "done" state.
RECORD_OFFSET = CTXSW_OFFSET
DONE = CTXSW_DONE
REGION = "/sys/kernel/debug/tandem/region"


def guest_script(wait_s: int = 600) -> str:
    """Waits until the RTOS's record says done, then prints it (8 hex words)."""
    block = RECORD_OFFSET // 4096
    return f"""
ctxsw_record() {{
    dd if={REGION} bs=4096 skip={block} count=1 2>/dev/null |
        od -A n -t x8 -N 64 | tr -s ' \\n' '  '
}}
n=0
while :; do
    set -- $(ctxsw_record)
    [ "$(( 0x$1 & 0xffffffff ))" -eq {DONE} ] && break
    n=$((n + 1))
    if [ $n -ge {wait_s} ]; then echo "ctxsw record not done: $*"; exit 1; fi
    sleep 1
done
echo "{RESULT} $(ctxsw_record)"
"""


def parse_record(lines: list[str], where: str) -> dict[str, int]:
    """The record the script printed, as named fields."""
    for line in lines:
        if line.startswith(RESULT):
            words = line[len(RESULT) :].split()
            if len(words) != 8:
                raise TandemError(f"{where}: record of {len(words)} words, want 8: {line!r}")
            try:
                raw = struct.pack("<8Q", *(int(w, 16) for w in words))
            except ValueError:
                raise TandemError(f"{where}: not a record: {line!r}") from None
            (
                state,
                mode,
                pages,
                batch,
                switches,
                ticks,
                best,
                faults,
                fault_task,
                fault_address,
                fault_esr,
            ) = struct.unpack("<IIIIQQQIIQQ", raw)
            if state != DONE or batch == 0 or switches < 2:
                raise TandemError(f"{where}: unfinished or malformed record: {line!r}")
            return {
                "mode": mode,
                "pages": pages,
                "batch": batch,
                "switches": switches,
                "ticks": ticks,
                "best_batch_ticks": best,
                "faults": faults,
                "fault_task": fault_task,
                "fault_address": fault_address,
                "fault_esr": fault_esr,
            }
    raise TandemError(f"{where}: no {RESULT} line in the output")


def per_switch(record: dict[str, int], counter_hz: int) -> tuple[float, float]:
    """Mean ns per hand-off over the whole run, and in the best batch."""
    ns_per_tick = 1e9 / counter_hz
    mean = record["ticks"] * ns_per_tick / (record["switches"] - 1)
    best = record["best_batch_ticks"] * ns_per_tick / record["batch"]
    return mean, best
