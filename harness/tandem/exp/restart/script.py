"""What the `restart` boot runs: each Linux prints its generation first,
then (all but the last) runs hackbench, prints the request just before it
restarts, and restarts by the next method in turn; the last waits for the
RTOS's next status line (one a second), so that its totals cover every
restart."""

from __future__ import annotations

from tandem.exp.restart.spec import METHODS

SCRIPT = """\
g=$(cat /sys/bus/platform/devices/tandem/linux_generation)
echo "@@GEN $g $(cut -d ' ' -f 1 /proc/uptime)@@"
if [ "$g" -le {count} ]; then
    hackbench -g 2 -l 1000000 > /dev/null 2>&1 &
    sleep {load_s}
    echo "@@REQUEST $g@@"
    case $(( (g - 1) % 3 )) in
    0) {m0} ;;
    1) {m1} ;;
    2) {m2} ;;
    esac
    sleep 100
else
    sleep 1.2
fi
"""


def script(count: int, load_s: float) -> str:
    """The guest script: restart `count` times, then end."""
    return SCRIPT.format(count=count, load_s=load_s, m0=METHODS[0], m1=METHODS[1], m2=METHODS[2])
