sleep 0.000137
echo @@PREEMPT-A@@ $(for c in /sys/bus/platform/devices/tandem/core[0-9]*; do cat $c/dispatch_starts $c/dispatch_preempted_holding $c/dispatch_preempted_waiting; done)
tandem-spin save /tmp/spin.a || exit 1
echo 1 > /sys/kernel/debug/tandem_spin_longest || exit 1
hackbench -g 8 -l 100 >/dev/null || exit 1
tandem-spin save /tmp/spin.b || exit 1
echo @@LONGEST@@; cat /sys/kernel/debug/tandem_spin_longest || exit 1; echo @@LONGEST-END@@
echo @@PREEMPT-B@@ $(for c in /sys/bus/platform/devices/tandem/core[0-9]*; do cat $c/dispatch_starts $c/dispatch_preempted_holding $c/dispatch_preempted_waiting; done)
echo @@SPIN@@
tandem-spin report /tmp/spin.a /tmp/spin.b || exit 1
