"""What a `linux-rt-trace` boot runs: `linux-rt`'s kernel load (and
optionally its disk I/O load) with cyclictest, under Linux's
preemptirqsoff tracer, the longest section printed every window."""

from __future__ import annotations

from tandem.exp.linux_rt.spec import PERIOD_US
from tandem.exp.linux_rt_trace.spec import FRAMES, WINDOW_US
from tandem.instruments.measure import script_header

BODY = r"""
T=/sys/kernel/tracing
mount -t tracefs nodev $T 2>/dev/null
[ -w $T/current_tracer ] || fail "no tracefs: not the latency-tracing kernel?"
echo 0 > $T/options/function-trace || fail "function-trace option"
echo preemptirqsoff > $T/current_tracer || fail "preemptirqsoff tracer"
echo 1 > $T/tracing_on
load_start kernel {cores} any
{io}
sleep "$SETTLE_S"
echo 0 > $T/tracing_max_latency
cyclictest -m -p 99 -i $PERIOD_US -l {samples} -t 1 -q -h 10000 --histfile=/tmp/ct.hist \
	--json=/tmp/ct.json > /dev/null 2>&1 &
CT=$!
tid=""
while kill -0 $CT 2>/dev/null; do
	usleep {window_us}
	read up _ < /proc/uptime
	while read k v _; do case $k in MemFree:) f=$v ;; esac; done < /proc/meminfo
	# the CPU cyclictest's measuring thread last ran on (stat field 39)
	if [ -z "$tid" ]; then
		for d in /proc/$CT/task/*; do [ "${{d##*/}}" = "$CT" ] || tid=${{d##*/}}; done
	fi
	cpu=-1
	[ -n "$tid" ] && cpu=$(cut -d' ' -f39 /proc/$CT/task/$tid/stat 2>/dev/null || echo -1)
	echo "@@WINDOW $up $f $(cat $T/tracing_max_latency) $cpu@@"
	grep -E '^# latency:|task:|started at:|ended at:|^ => ' $T/trace | head -n {lines}
	echo 0 > $T/tracing_max_latency
done
wait $CT || fail cyclictest
echo 0 > $T/tracing_on
load_stop
echo "@@CYCLICTEST-JSON@@"
tr -d '\n' < /tmp/ct.json
echo
"""


def script(cores: int, samples: int, io: bool, settle_ms: int) -> str:
    """The guest script for one core count."""
    body = BODY.format(
        cores=cores,
        samples=samples,
        window_us=WINDOW_US,
        lines=4 + FRAMES,
        io=f"disk_setup\nload_start io {cores} any" if io else "",
    )
    return script_header(PERIOD_US, "4M", 0, "16M", settle_ms) + body
