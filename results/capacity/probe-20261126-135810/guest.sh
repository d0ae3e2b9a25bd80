snap() { echo "@@SNAP@@ $1"; grep '^cpu[0-9]' /proc/stat; }
tandem-spin save /tmp/a || exit 1
snap hackbench
( sleep 0.2; i=0; while [ $i -lt 10 ]; do cat /proc/[0-9]*/stat > /tmp/ps.$i 2>/dev/null; i=$((i+1)); sleep 0.1; done ) &
hackbench -g 4 -l 800 || exit 1
snap hackbench
tandem-spin save /tmp/b || exit 1
echo @@SPIN@@ $(tandem-spin report /tmp/a /tmp/b)
wait
for f in /tmp/ps.*; do echo "@@PS@@ $f $(awk '$2=="(hackbench)" && $3=="R" {n[$39]++} END {print n[0]+0, n[1]+0, n[2]+0, n[3]+0}' $f)"; done
