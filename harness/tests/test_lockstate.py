"""Linux's lock-state publishing and spin-wait statistics (paper 000, LHP):
the kernel patches in linux/patches, switched on by boot parameters, and the
driver's view of them (needs `make build`)."""

from __future__ import annotations

import json
import re

import pytest

from tandem.platform.boot import ExecResult, run_exec
from tandem.platform.boot_options import BootOptions

pytestmark = pytest.mark.qemu

DEV = "/sys/bus/platform/devices/tandem"
ON = "tandem_lockstate=on tandem_spinstat=on"

# Saves the spin histograms around hackbench, takes CPU 3 offline and back
# (its idle task runs first when it returns, before any task switch there),
# then reads every core's lock-state words three times while Linux idles.
HACKBENCH_SCRIPT = f"""
set -e
cd {DEV}
echo "lockstate $(cat lockstate) spinstat $(cat spinstat)"
dmesg | grep -o 'lock state publishing .*'
tandem-spin save /tmp/before
hackbench -g 4 -l 100 >/dev/null
echo 0 > /sys/devices/system/cpu/cpu3/online
hackbench -g 2 -l 20 >/dev/null
echo 1 > /sys/devices/system/cpu/cpu3/online
test "$(cat /sys/devices/system/cpu/online)" = 0-3
sleep 1
tandem-spin save /tmp/after
tandem-spin report /tmp/before /tmp/after
for i in 1 2 3; do
    for c in core?; do
        echo "$c $(cat $c/linux_lock_held) $(cat $c/linux_lock_waiting)"
    done
    sleep 0.2
done
"""

WORDS = re.compile(r"^(core\d) (\d+) (\d+)$", re.M)


def run(script: str, bootargs: str = "", timeout_s: float = 300) -> ExecResult:
    result = run_exec(BootOptions(extra_bootargs=bootargs), script, timeout_s=timeout_s)
    assert result.qemu_status == 0, f"QEMU exited {result.qemu_status} ({result.console_log})"
    assert result.status == 0, result.output
    return result


def idle_words(output: str) -> dict[str, tuple[int, int]]:
    """Per core, the smallest held and waiting counts of the idle reads: a
    lock left counted (an unbalanced hook) keeps even the smallest above 0."""
    words: dict[str, tuple[int, int]] = {}
    for core, held, waiting in WORDS.findall(output):
        old = words.get(core, (1 << 32, 1 << 32))
        words[core] = (min(old[0], int(held)), min(old[1], int(waiting)))
    return words


def spin_report(output: str) -> dict[str, object]:
    line = next(line for line in output.splitlines() if line.startswith('{"bucket_us"'))
    report: dict[str, object] = json.loads(line)
    return report


def test_lock_state_is_balanced_and_spin_waits_are_counted() -> None:
    r = run(HACKBENCH_SCRIPT, ON)
    assert "lockstate on spinstat on" in r.output
    assert "lock state publishing on, spin-wait statistics on" in r.output
    assert idle_words(r.output) == {f"core{i}": (0, 0) for i in range(4)}, r.output
    spin = spin_report(r.output)
    assert spin["bucket_us"] == pytest.approx(1.024)
    samples = spin["samples"]
    assert isinstance(samples, int) and samples > 0, spin
    histogram = spin["histogram"]
    assert isinstance(histogram, list)
    assert sum(count for _, count in histogram) == samples


def test_off_by_default() -> None:
    r = run(HACKBENCH_SCRIPT)
    assert "lockstate off spinstat off" in r.output
    assert "lock state publishing off, spin-wait statistics off" in r.output
    assert idle_words(r.output) == {f"core{i}": (0, 0) for i in range(4)}, r.output
    spin = spin_report(r.output)
    assert spin["samples"] == 0 and spin["histogram"] == [], spin


def test_held_count_is_seen_while_other_cores_take_locks() -> None:
    """CPU 0 samples the other cores' held words (shell builtins, no fork)
    while hackbench runs on cores 1-3; with the hooks working some samples
    catch a lock held. Without the boot parameter the words stay 0."""
    script = f"""
taskset -p 1 $$ >/dev/null
cd {DEV}
taskset e hackbench -g 4 -l 80 >/dev/null &
bench=$!
n=0; busy=0; waiting=0
while kill -0 $bench 2>/dev/null; do
    for c in 1 2 3; do
        read h < core$c/linux_lock_held
        read w < core$c/linux_lock_waiting
        n=$((n + 1))
        if [ "$h" -gt 0 ]; then busy=$((busy + 1)); fi
        if [ "$w" -gt 0 ]; then waiting=$((waiting + 1)); fi
    done
done
wait $bench
echo "samples $n held $busy waiting $waiting"
"""
    counts = re.compile(r"^samples (\d+) held (\d+) waiting (\d+)$", re.M)
    on = counts.search(run(script, "tandem_lockstate=on").output)
    off = counts.search(run(script).output)
    assert on and off
    n, held, _ = (int(v) for v in on.groups())
    assert n >= 300, "too few samples to judge"
    assert held > 0, f"no held lock seen in {n} samples"
    assert off.groups()[1:] == ("0", "0"), off.group(0)
