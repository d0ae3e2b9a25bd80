echo @@CAPACITY@@ $(cat /sys/devices/system/cpu/cpu[0-9]*/cpu_capacity)
snap() { echo @@SNAP@@ $1; grep '^cpu[0-9]' /proc/stat; }
snap hackbench
hackbench -g 4 -l 800 || exit 1
snap hackbench
snap sysbench-cpu
sysbench cpu --threads=4 --events=1000 --time=0 run || exit 1
snap sysbench-cpu
for c in /sys/bus/platform/devices/tandem/core[0-9]*; do echo @@RTOS@@ ${c##*core} $(cat $c/rtos_releases) $(cat $c/deadline_misses) $(cat $c/rtos_busy_us); done
