"""What each `linux-rt` boot runs: the cells of one core count, and the
guest script that measures them all in one boot.

Two parts. `cells`: the paper's grid (affinity off / on, disk I/O off / on).
`cause`: cells (affinity off, no I/O) where each CPU's page-list high mark
(`pcp->high`: how many free pages a CPU keeps before it returns a batch to
the zone, with interrupts off; Linux 6.1 divides it among the online CPUs)
is set as the kernel sets it by default on another number of CPUs. Every
cell also records cyclictest's per-sample series, a memory timeline and
kernel counters, to find what the worst samples coincide with.
"""

from __future__ import annotations

from dataclasses import dataclass

from tandem.exp.linux_rt.spec import PERIOD_US
from tandem.exp.scenario import Scenario
from tandem.instruments.measure import script_header

# Each cell's counters, before and after cyclictest (loads running), the
# page lists' high mark and batch of the zone with the most memory (CPU 0),
# and the CPUs the measuring shell, so the loads, may run on. Busybox awk.
COUNTERS = r"""
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
"""


@dataclass(frozen=True)
class Cell:
    """One measurement in a boot: a cell of the paper's grid (`part`
    "cells"), or a cause cell (affinity off, no I/O) whose page-list high
    mark is the kernel's default on `pcp_cpus` CPUs."""

    part: str
    affinity: bool
    io: bool
    pcp_cpus: int = 0

    @property
    def pid(self) -> str:
        if self.part == "cells":
            return f"aff{int(self.affinity)}-io{int(self.io)}"
        return f"pcp{self.pcp_cpus}"


def cells(s: Scenario, cores: int) -> list[tuple[bool, bool]]:
    """(affinity, io_load) of the paper's grid measured with `cores` cores,
    affinity off first (the isolated core's partition stays until the end).
    Not on one core: affinity (the only core cannot be set apart); unless
    `affinity_with_io`: both at once (the paper has no such figure)."""
    return [
        (aff, io)
        for aff in sorted(s.flags("affinity"))
        for io in s.flags("io_load")
        if not (aff and cores == 1) and not (aff and io and not s.values["affinity_with_io"])
    ]


def cause_cells(s: Scenario, cores: int) -> list[Cell]:
    """The cause part's cells with `cores` cores: one core with the high
    mark of each other core count, more cores with the high mark of one."""
    if "cause" not in s.texts("parts"):
        return []
    if cores == 1:
        return [Cell("cause", False, False, pcp_cpus=n) for n in s.integers("cores") if n != 1]
    return [Cell("cause", False, False, pcp_cpus=1)]


def boot_cells(s: Scenario, cores: int) -> list[Cell]:
    """Every cell of the boot with `cores` cores, in order: the cause cells
    before any partition is made (affinity on)."""
    grid = []
    if "cells" in s.texts("parts"):
        grid = [Cell("cells", aff, io) for aff, io in cells(s, cores)]
    plain = [c for c in grid if not c.affinity]
    return plain + cause_cells(s, cores) + [c for c in grid if c.affinity]


def phase_id(affinity: bool, io: bool) -> str:
    return Cell("cells", affinity, io).pid


def guest_script(s: Scenario, cores: int) -> str:
    """The guest script for one core count: every cell in one boot."""
    lines = [
        script_header(
            PERIOD_US, s.text("memory_bytes"), 0, s.text("hdd_bytes"), s.integer("settle_ms")
        )
        + COUNTERS
    ]
    todo = boot_cells(s, cores)
    last = cores - 1
    others = "0" if last == 1 else f"0-{last - 1}"
    if any(c.io for c in todo):
        lines.append("disk_setup")
    isolated = False
    samples = s.integer("samples")
    for c in todo:
        if c.affinity and not isolated:
            lines.append(f"isolate_core {last}")
            isolated = True
        if not c.affinity:
            lines.append("all_cores")
        if c.pcp_cpus:
            lines.append(f"pcp_high {c.pcp_cpus}")
        where = others if c.affinity else "any"
        lines.append(f"load_start kernel {cores} {where}")
        if c.io:
            lines.append(f"load_start io {cores} {where}")
        lines.append("memory_timeline_start")
        pin = str(last) if c.affinity else "any"
        lines.append(
            f"measure_cyclictest {c.pid} {samples} {pin} {'yes' if c.affinity else 'no'} yes"
        )
        lines.append(f"memory_timeline_stop {c.pid}")
        if c.pcp_cpus:
            lines.append("pcp_high 0")
    return "\n".join(lines) + "\n"
