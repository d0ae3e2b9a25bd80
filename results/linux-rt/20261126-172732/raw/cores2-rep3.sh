PERIOD_US=1000
MEMORY_BYTES=4M
SETTLE_S=0.3
SCHED_THREADS=0
HDD_BYTES=16M

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

counters() {
	awk '
		FILENAME == "/proc/vmstat" && $1 ~ /^(pgfree|nr_dirtied|nr_written)$/ { v[$1] = $2 }
		FILENAME == "/proc/diskstats" && $3 == "vda" {
			v["vda_reads"] = $4; v["vda_writes"] = $8; v["vda_sectors_written"] = $10
		}
		FILENAME == "/proc/interrupts" && /virtio/ {
			for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) v["virtio_irqs"] += $i
		}
		FILENAME == "/proc/softirqs" && $1 == "BLOCK:" {
			for (i = 2; i <= NF; i++) v["block_softirqs"] += $i
		}
		END {
			n = split("pgfree nr_dirtied nr_written vda_reads vda_writes " \
				"vda_sectors_written virtio_irqs block_softirqs", k, " ")
			for (i = 1; i <= n; i++) print k[i], v[k[i]] + 0
		}
	' /proc/vmstat /proc/diskstats /proc/interrupts /proc/softirqs
}
# The page lists' high mark and batch on CPU 0 of the zone with the most memory.
pcp_now() {
	awk '
		$1 == "Node" { z++ }
		$1 == "managed" { m[z] = $2 }
		$1 == "high:" && !(z in h) { h[z] = $2 }
		$1 == "batch:" && !(z in b) { b[z] = $2 }
		END {
			for (i in m) if (m[i] > best) { best = m[i]; H = h[i]; B = b[i] }
			print H + 0, B + 0
		}
	' /proc/zoneinfo
}
allowed_cpus() { awk '$1 == "Cpus_allowed_list:" { print $2 }' /proc/self/status; }
cell_before() {
	counters > /tmp/cnt.a
	read T0 _ < /proc/uptime
}
# @@COUNTERS ID@@ and one JSON object: the counters' increase while
# cyclictest ran, the page lists' high mark and batch, the CPUs the loads may
# use, and when (uptime, s) the loads and cyclictest started and ended.
cell_after() {
	read T1 _ < /proc/uptime
	counters > /tmp/cnt.b
	set -- "$1" $(pcp_now)
	echo "@@COUNTERS $1@@"
	awk -v high="$2" -v batch="$3" -v t0="$T0" -v t1="$T1" -v load_t0="$LOAD_T0" \
		-v cpus="$(allowed_cpus)" '
		NR == FNR { a[$1] = $2; next }
		{ printf "%s\"%s\": %d", (n++ ? ", " : "{"), $1, $2 - a[$1] }
		END {
			printf ", \"pcp_high\": %d, \"pcp_batch\": %d, \"cpus\": \"%s\"", high, batch, cpus
			printf ", \"load_start_s\": %s, \"start_s\": %s, \"end_s\": %s}\n", load_t0, t0, t1
		}
	' /tmp/cnt.a /tmp/cnt.b
}
# pcp_high N: every CPU's page-list high mark as Linux sets it by default
# on N online CPUs (the zone's low watermark / N, at least 4 batches),
# through vm.percpu_pagelist_high_fraction (the zone's managed pages /
# fraction / CPUs online); 0: the kernel's own default for this machine.
pcp_high() {
	if [ "$1" = 0 ]; then
		echo 0 > /proc/sys/vm/percpu_pagelist_high_fraction || fail "pcp high default"
		return
	fi
	online=$(grep -c ^processor /proc/cpuinfo)
	frac=$(awk -v n="$1" -v online="$online" '
		$1 == "low" { low = $2 }
		$1 == "managed" && $2 > m { m = $2; l = low }
		END { print int(m * n / (l * online)) }
	' /proc/zoneinfo)
	[ "$frac" -ge 8 ] || fail "pcp high of $1 CPUs: fraction $frac below the kernel's 8"
	echo "$frac" > /proc/sys/vm/percpu_pagelist_high_fraction || fail "pcp high fraction $frac"
}
# The loads and an unpinned cyclictest may use every core (no partition).
all_cores() {
	[ "$(allowed_cpus)" = "$(cat /sys/devices/system/cpu/online)" ] ||
		fail "cores $(allowed_cpus) of $(cat /sys/devices/system/cpu/online) available"
}
# memory_timeline_start, right after the loads start (their start time), and
# memory_timeline_stop ID: every 20 ms the uptime (s), MemFree and Shmem
# (kB), and how many times cyclictest's measuring thread has gone to sleep
# (voluntary context switches: one per loop; -1 when it is not running), so
# each sample can be placed on the timeline; as @@MEMORY ID@@ and one JSON
# list. Shell builtins only (and usleep; pidof until cyclictest is found), so
# that the sampler itself allocates and frees little.
memory_timeline_start() {
	read LOAD_T0 _ < /proc/uptime
	(
		ct=""
		tid=""
		while :; do
			read up _ < /proc/uptime
			while read k v _; do
				case $k in MemFree:) f=$v ;; Shmem:) s=$v ;; esac
			done < /proc/meminfo
			[ -n "$ct" ] || ct=$(pidof cyclictest)
			if [ -n "$ct" ] && [ -z "$tid" ]; then
				for d in /proc/"$ct"/task/*; do
					[ "${d##*/}" = "$ct" ] || tid=${d##*/}
				done
			fi
			n=-1
			if [ -n "$tid" ] && [ -r "/proc/$ct/task/$tid/status" ]; then
				while read k v _; do
					case $k in voluntary_ctxt_switches:) n=$v ;; esac
				done < "/proc/$ct/task/$tid/status"
			fi
			echo "[$up, $f, $s, $n]"
			usleep 20000
		done
	) > /tmp/mem.txt 2>/dev/null &
	SAMPLER=$!
}
memory_timeline_stop() {
	kill "$SAMPLER"
	wait "$SAMPLER" 2>/dev/null
	echo "@@MEMORY $1@@"
	awk '/^\[[0-9.]+, [0-9]+, [0-9]+, -?[0-9]+\]$/ { s = s sep $0; sep = ", " }
		END { print "[" s "]" }' /tmp/mem.txt
}

disk_setup
all_cores
load_start kernel 2 any
memory_timeline_start
measure_cyclictest aff0-io0 4096 any no yes
memory_timeline_stop aff0-io0
all_cores
load_start kernel 2 any
load_start io 2 any
memory_timeline_start
measure_cyclictest aff0-io1 4096 any no yes
memory_timeline_stop aff0-io1
all_cores
pcp_high 1
load_start kernel 2 any
memory_timeline_start
measure_cyclictest pcp1 4096 any no yes
memory_timeline_stop pcp1
pcp_high 0
isolate_core 1
load_start kernel 2 0
memory_timeline_start
measure_cyclictest aff1-io0 4096 1 yes yes
memory_timeline_stop aff1-io0
