"""What the `latency` experiment's boot runs: the RTOS's latency
histograms saved with `tandem-lat` around a phase of Linux idle and one of
hackbench on every core, with the world switches and Linux's standby
entries counted around each."""

from __future__ import annotations

# @@COUNT lines: parse.read_counts reads them.
SCRIPT = """
set -e
# @@COUNT PHASE core N TO_RTOS TO_LINUX: the monitor's world switches on
# each core; @@COUNT PHASE cpu N ENTRIES: Linux's entries into its standby
# idle state (CPU_SUSPEND) on each of its CPUs.
counts() {{
	for d in /sys/bus/platform/devices/tandem/core[0-9]*; do
		echo "@@COUNT $1 core ${{d##*core}} $(cat $d/switches_to_rtos) $(cat $d/switches_to_linux)"
	done
	for d in /sys/devices/system/cpu/cpu[0-9]*; do
		f=$d/cpuidle/state1/usage
		[ -r $f ] && echo "@@COUNT $1 cpu ${{d##*cpu}} $(cat $f)"
	done
	true
}}
counts start
tandem-lat save /tmp/lat0
sleep {idle_s}
tandem-lat save /tmp/lat1
counts idle
hackbench -g 8 -l {loops} > /dev/null
tandem-lat save /tmp/lat2
counts hackbench
tandem-lat report /tmp/lat0 /tmp/lat1
tandem-lat report /tmp/lat1 /tmp/lat2
"""


def script(idle_seconds: int, hackbench_loops: int) -> str:
    """The guest script: its last two lines are the phases' reports."""
    return SCRIPT.format(idle_s=idle_seconds, loops=hackbench_loops)
