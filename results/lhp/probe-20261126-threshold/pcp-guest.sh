L=/sys/kernel/debug/tandem_spin_longest
mount -t debugfs none /sys/kernel/debug 2>/dev/null
for rep in 1 2 3 4; do
  for frac in 0 100000; do
    sysctl -q -w vm.percpu_pagelist_high_fraction=$frac || exit 1
    echo "@@PCP frac=$frac rep=$rep $(grep -E '^ +(high|batch):' /proc/zoneinfo | awk '{print $2}' | sort -u | tr '\n' ' ')"
    echo 1 > $L || exit 1
    hackbench -g 8 -l 100 >/dev/null || exit 1
    echo "@@LONGEST frac=$frac rep=$rep"; cat $L
  done
done
