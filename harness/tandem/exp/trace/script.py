"""What the `trace` boot runs: Linux's load, then tandem-trace's dump of the
monitor's world-switch rings while it runs; with `linux_sched`, Linux's own
tracer's sched_switch events over the window too, between marker lines."""

from __future__ import annotations

from tandem.exp.trace.spec import SCHED_BUFFER_KB, SCHED_MARGIN_US, SETTLE_MS

SCRIPT = """
set -e
{start}
usleep {sleep_us}
tandem-trace > /tmp/trace.txt
{stop}
cat /tmp/trace.txt
"""
# With linux_sched: Linux's tracer records sched_switch, on its raw
# clock, from just before the window to the end of the dump; then the
# clock samples, each CPU's core, the tracer's output in text and raw form.
TRACEFS = "/sys/kernel/tracing"
SCHED_SCRIPT = r"""
set -e
T={tracefs}
[ -d $T/events ] || mount -t tracefs tracefs $T
echo 0 > $T/tracing_on
echo mono_raw > $T/trace_clock
echo {buffer_kb} > $T/buffer_size_kb
echo > $T/trace
echo 1 > $T/events/sched/sched_switch/enable
{start}
usleep {settle_us}
echo 1 > $T/tracing_on
usleep {window_us}
tandem-trace --clock > /tmp/trace.txt
tandem-trace clock 64 > /tmp/clock.txt
echo 0 > $T/tracing_on
{stop}
cat /tmp/trace.txt
echo "{sched}"
cat /tmp/clock.txt
for c in /sys/devices/system/cpu/cpu[0-9]*; do
	echo "${{c##*/}} $(od -An -tx1 $c/of_node/reg)"
done
# Only the events from {margin_us} µs before the window to as long after
# its end (the tracer ran from the settle's end to after the dump, and a
# busy Linux wakes the shell late), and the clock marker: the raw clock
# at the dump's time (`# now`, before the rings were read), in µs, gives
# the bounds.
at=$(awk '/^# clock / {{ print int($4 / 1000); exit }}' /tmp/trace.txt)
since=$((at - {window_us} - {margin_us}))
until=$((at + {margin_us}))
echo "{text}"
grep -v '^#' $T/trace | awk -v t="$since" -v u="$until" '
	/LOST|tandem_clock_marker/ {{ print; next }}
	{{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9][0-9][0-9][0-9][0-9][0-9]:$/) {{
		split($i, a, /[.:]/); us = a[1] * 1000000 + a[2]
		if (us >= t && us <= u) print
		break
	}} }}' || true
echo 1 > $T/options/raw
echo "{raw}"
# A time rounds to the µs in the text above: the same events by ns here.
grep -v '^#' $T/trace | awk -v t="$since" -v u="$until" '
	/LOST|tandem_clock_marker/ {{ print; next }}
	$3 >= t * 1000 - 500 && $3 < u * 1000 + 500' || true
echo 0 > $T/options/raw
echo "{end}"
"""
SCHED_MARK = "@@TANDEM-SCHED@@"
TEXT_MARK = "@@TANDEM-SCHED-TEXT@@"
RAW_MARK = "@@TANDEM-SCHED-RAW@@"
END_MARK = "@@TANDEM-SCHED-END@@"
LOAD_COMMANDS = {
    "none": ("", ""),
    "hackbench": (
        "hackbench -g 4 -l 1000000 > /dev/null 2>&1 &\nload=$!",
        "kill $load 2> /dev/null || true",
    ),
}


def script(window_us: int, load: str, linux_sched: bool) -> str:
    """The guest script for a window of `window_us` under `load`."""
    start, stop = LOAD_COMMANDS[load]
    if not linux_sched:
        return SCRIPT.format(start=start, sleep_us=SETTLE_MS * 1000 + window_us, stop=stop)
    return SCHED_SCRIPT.format(
        tracefs=TRACEFS,
        buffer_kb=SCHED_BUFFER_KB,
        start=start,
        stop=stop,
        settle_us=SETTLE_MS * 1000,
        window_us=window_us,
        margin_us=SCHED_MARGIN_US,
        sched=SCHED_MARK,
        text=TEXT_MARK,
        raw=RAW_MARK,
        end=END_MARK,
    )
