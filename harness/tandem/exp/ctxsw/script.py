"""What each `ctxsw` boot runs in Linux: wait until the RTOS's hand-off
record in the shared region says done, then print it."""

from __future__ import annotations

RESULT = "@@CTXSW@@"
# abi/src/shm.rs: CTXSW_OFFSET and the record's states.
RECORD_OFFSET = 0x10_8000
DONE = 2
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
