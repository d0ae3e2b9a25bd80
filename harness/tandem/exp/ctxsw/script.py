"""What each `ctxsw` boot runs in Linux: wait until the RTOS's hand-off
record in the shared region says done, then print it."""

from __future__ import annotations

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
