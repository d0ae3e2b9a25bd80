echo @@CAPACITY@@ $(cat /sys/devices/system/cpu/cpu[0-9]*/cpu_capacity)
grep '^cpu[0-9]' /proc/stat > /tmp/stat.a
hackbench -g 4 -l 50 || exit 1
sysbench cpu --threads=4 --events=1000 --time=0 run || exit 1
grep '^cpu[0-9]' /proc/stat > /tmp/stat.b
echo @@STAT@@; cat /tmp/stat.a; echo @@STAT@@; cat /tmp/stat.b
