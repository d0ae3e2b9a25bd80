PERIOD_US=1000
MEMORY_BYTES=4M
SETTLE_S=0.3
SCHED_THREADS=50
HDD_BYTES=0

set -u
LOADS=""
fail() { echo "@@FAIL $*@@"; exit 1; }
# load_start KIND WORKERS CPUS: KIND memory|scheduling|kernel|io; CPUS a
# taskset list or "any".
load_start() {
	pin=""
	[ "$3" = any ] || pin="--taskset $3"
	case $1 in
	memory) stress-ng --memrate "$2" --memrate-bytes "$MEMORY_BYTES" $pin -q >/dev/null 2>&1 & ;;
	scheduling) stress-ng --mutex 1 --mutex-procs "$SCHED_THREADS" $pin -q >/dev/null 2>&1 & ;;
	# --timer-freq: stress-ng's default of 1 MHz per worker would leave no
	# time for anything else; 10 kHz is a busy but sane timer load.
	kernel) stress-ng --shm "$2" --switch "$2" --timer "$2" --timer-freq 10000 \
		--memrate "$2" --memrate-bytes "$MEMORY_BYTES" $pin -q >/dev/null 2>&1 & ;;
	# --hdd-opts fsync: a hdd worker unlinks its file as soon as it has
	# opened it, so without a sync its dirty pages are dropped at close and
	# never reach the disk (linux-rt run 20261126-154326: 0 sectors).
	io) stress-ng --hdd "$2" --hdd-bytes "$HDD_BYTES" --hdd-opts fsync \
		--temp-path /mnt/disk $pin -q >/dev/null 2>&1 & ;;
	*) fail "unknown load $1" ;;
	esac
	LOADS="$LOADS $!"
}
load_stop() {
	[ -n "$LOADS" ] && kill $LOADS 2>/dev/null
	for p in $LOADS; do wait "$p" 2>/dev/null; done
	LOADS=""
	# stress-ng's workers outlive a killed parent for a moment
	while pidof stress-ng >/dev/null; do killall -q stress-ng; sleep 0.1; done
}
disk_setup() {
	mke2fs -q /dev/vda >/dev/null 2>&1 || fail "mke2fs /dev/vda"
	mkdir -p /mnt/disk && mount -t ext2 /dev/vda /mnt/disk || fail "mount /dev/vda"
}
# isolate_core CORE: a cpuset partition holding CORE alone, so that nothing
# else is scheduled there; cyclictest is then started inside it.
isolate_core() {
	echo +cpuset > /sys/fs/cgroup/cgroup.subtree_control || fail "cpuset controller"
	mkdir -p /sys/fs/cgroup/rt
	echo "$1" > /sys/fs/cgroup/rt/cpuset.cpus || fail "cpuset.cpus $1"
	echo root > /sys/fs/cgroup/rt/cpuset.cpus.partition
	[ "$(cat /sys/fs/cgroup/rt/cpuset.cpus.partition)" = root ] || fail "cpuset partition"
}
# measure_rtos ID SAMPLES CORE: the RTOS's latency on CORE over SAMPLES
# periods. Stops the loads before reporting: under load, working through the
# results would cost many times as long.
measure_rtos() {
	echo "@@PHASE $1@@"
	sleep "$SETTLE_S"
	tandem-lat save /tmp/lat.a || fail "tandem-lat save"
	sleep "$(awk "BEGIN { print $2 * $PERIOD_US / 1000000 }")"
	tandem-lat save /tmp/lat.b || fail "tandem-lat save"
	load_stop
	echo "@@RESULT $1 rtos@@"
	tandem-lat report /tmp/lat.a /tmp/lat.b "$3" || fail "tandem-lat report"
}
# Called with the phase's ID right before cyclictest starts and right after
# it ends (the loads still running); an experiment's script may redefine them
# to record what the kernel did meanwhile.
cell_before() { :; }
cell_after() { :; }
# measure_cyclictest ID SAMPLES CORE|any ISOLATED(yes|no) [SERIES(yes|no)];
# stops the loads before reporting, as measure_rtos. SERIES yes: also every
# sample's latency in loop order (cyclictest -v, kept in memory by cyclictest
# and written to tmpfs), as @@SERIES ID@@ and one JSON list.
measure_cyclictest() {
	echo "@@PHASE $1@@"
	sleep "$SETTLE_S"
	pin=""
	[ "$3" = any ] || pin="-a $3"
	verbose=""
	[ "${5:-no}" = yes ] && verbose="-v"
	cmd="cyclictest -m -p 99 -i $PERIOD_US -l $2 -t 1 $pin -q $verbose"
	cmd="$cmd -h 10000 --histfile=/tmp/ct.hist"
	cell_before "$1"
	if [ "$4" = yes ]; then
		sh -c "echo \$\$ > /sys/fs/cgroup/rt/cgroup.procs && exec $cmd" >/tmp/ct.out 2>&1
	else
		$cmd >/tmp/ct.out 2>&1
	fi || fail "cyclictest"
	cell_after "$1"
	load_stop
	echo "@@RESULT $1 cyclictest@@"
	# cyclictest pads with zeros; busybox awk reads 0-led numbers as octal
	awk '
		function dec(s) { sub(/^0+/, "", s); return s == "" ? 0 : s + 0 }
		/^# Min Latencies:/ { min = dec($4) }
		/^# Avg Latencies:/ { avg = dec($4) }
		/^# Max Latencies:/ { max = dec($4) }
		/^# Histogram Overflows:/ { over = dec($4) }
		/^[0-9]/ && dec($2) > 0 {
			h = h sep "[" dec($1) ", " dec($2) "]"; sep = ", "; n += dec($2)
		}
		END {
			printf "{\"min_us\": %d, \"avg_us\": %d, \"max_us\": %d, ", min, avg, max
			printf "\"overflow\": %d, \"in_histogram\": %d, ", over, n
			printf "\"histogram\": [%s]}\n", h
		}
	' /tmp/ct.hist
	if [ -n "$verbose" ]; then
		echo "@@SERIES $1@@"
		# -v lines: "thread: loop: latency"
		awk -F: '
			NF == 3 && $1 + 0 == 0 && $2 ~ /^ *[0-9]+$/ { s = s sep ($3 + 0); sep = ", " }
			END { print "[" s "]" }
		' /tmp/ct.out
	fi
}

devmem 0x7fffe00c 32 0
seen=0
while true; do
	seq=$(($(devmem 0x7fffe000 32)))
	if [ "$seq" -eq "$seen" ]; then
		usleep 10000
		continue
	fi
	seen=$seq
	kind=$(($(devmem 0x7fffe004 32)))
	workers=$(($(devmem 0x7fffe008 32)))
	case $kind in
	0) load_stop ;;
	1)
		core=0
		while [ "$core" -lt "$workers" ]; do
			load_start memory 1 "$core"
			core=$((core + 1))
		done ;;
	2) load_start scheduling 1 0-2 ;;
	3) load_stop; break ;;
	esac
	running=$(pidof stress-ng | wc -w)
	echo "load agent: command $seq (load $kind x$workers): $running stress-ng processes"
	devmem 0x7fffe00c 32 "$seq"
done
echo "load agent: done after $seen commands"
