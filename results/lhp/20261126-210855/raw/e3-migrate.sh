( while :; do hackbench -g 8 -l 100 >/dev/null; done ) &
sleep 0.2
tandem-lat -d save /tmp/d.a || exit 1
sleep 2
tandem-lat -d save /tmp/d.b || exit 1
kill %1
echo @@DISPATCH@@
tandem-lat -d report /tmp/d.a /tmp/d.b || exit 1
sleep 1.2
echo @@HANDOFF@@ $(for c in /sys/bus/platform/devices/tandem/core[0-9]*; do cat $c/dispatch_handoffs $c/dispatch_handoff_wait_max_ticks $c/dispatch_handoff_wait_sum_ticks $c/deadline_misses; done)
