"""Latency measurements inside a booted Tandem, for the experiments.

The harness writes one shell script per boot from the pieces here; the script
starts and stops loads and measures, and prints each result as a marker line
followed by one JSON line. Two instruments:

- `rtos`: the RTOS's own timer-interrupt latency histograms (compare value to
  the handler, one bucket per 16 ns counter tick), snapshotted by `tandem-lat`
  before and after a phase; the measured core's difference is the result.
- `cyclictest`: where only Linux runs, rt-tests' cyclictest, one SCHED_FIFO 99
  thread waking every period (1 µs histogram buckets; exact min/max, the
  average to 0.01 µs). Read through its own JSON (`--json`, rt-tests 2.4):
  the histogram (non-empty buckets), cycles, min, max and average; what
  lies beyond the histogram's range is cycles less the histogram's count.
  With `CYCLICTEST_NS=yes` it measures in ns (`--nsecs`): the same
  wake-ups read at the counter's resolution (16 ns on virt). Its histogram
  would then have a bucket per ns, which cyclictest writes out line by
  line at its end (a million lines for 1 ms), so it keeps every sample
  instead (`-v`) and the histogram is made from them here
  (`cyclictest-ns`).
  Runs kept from before (their console logs print `@@RESULT ID
  cyclictest@@` and a summary an awk script scraped from the histogram
  file, whose average cyclictest truncates to whole µs) read as they did.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from tandem.errors import TandemError

PHASE = re.compile(r"^@@PHASE (\S+)@@$")
RESULT = re.compile(r"^@@RESULT (\S+) (rtos|cyclictest|cyclictest-json|cyclictest-ns)@@$")
# Histogram range of cyclictest, µs: anything later is counted as overflow.
CYCLICTEST_HIST_US = 10000
# The samples cyclictest -v keeps (rt-tests' VALBUF_SIZE): a longer run's
# series would wrap, so one in ns (every sample kept) is at most this long.
CYCLICTEST_SERIES_MAX = 16384
# Default settling time after a load starts, before measuring (virtual ms in
# virtual timing: short, because with four busy vCPUs in one host thread
# every virtual second costs tens of host seconds).
SETTLE_MS = 300

# The shell functions every experiment script starts with.
PRELUDE = rf"""
set -u
LOADS=""
fail() {{ echo "@@FAIL $*@@"; exit 1; }}
# load_start KIND WORKERS CPUS: KIND memory|reads|scheduling|kernel|io;
# CPUS a taskset list or "any". memory: stress-ng's memrate (reads and
# writes); reads: tandem-membench read, reads alone (paper 003's load).
load_start() {{
	pin=""
	[ "$3" = any ] || pin="--taskset $3"
	case $1 in
	reads)
		n=0
		while [ "$n" -lt "$2" ]; do
			if [ "$3" = any ]; then tandem-membench read "$MEMORY_BYTES" &
			else taskset -c "$3" tandem-membench read "$MEMORY_BYTES" & fi
			LOADS="$LOADS $!"
			n=$((n + 1))
		done
		return 0 ;;
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
}}
load_stop() {{
	[ -n "$LOADS" ] && kill $LOADS 2>/dev/null
	for p in $LOADS; do wait "$p" 2>/dev/null; done
	LOADS=""
	# stress-ng's workers outlive a killed parent for a moment
	while pidof stress-ng >/dev/null; do killall -q stress-ng; sleep 0.1; done
}}
disk_setup() {{
	mke2fs -q /dev/vda >/dev/null 2>&1 || fail "mke2fs /dev/vda"
	mkdir -p /mnt/disk && mount -t ext2 /dev/vda /mnt/disk || fail "mount /dev/vda"
}}
# isolate_core CORE: a cpuset partition holding CORE alone, so that nothing
# else is scheduled there; cyclictest is then started inside it.
isolate_core() {{
	echo +cpuset > /sys/fs/cgroup/cgroup.subtree_control || fail "cpuset controller"
	mkdir -p /sys/fs/cgroup/rt
	echo "$1" > /sys/fs/cgroup/rt/cpuset.cpus || fail "cpuset.cpus $1"
	echo root > /sys/fs/cgroup/rt/cpuset.cpus.partition
	[ "$(cat /sys/fs/cgroup/rt/cpuset.cpus.partition)" = root ] || fail "cpuset partition"
}}
# measure_rtos ID SAMPLES CORE: the RTOS's latency on CORE over SAMPLES
# periods. Stops the loads before reporting: under load, working through the
# results would cost many times as long.
measure_rtos() {{
	echo "@@PHASE $1@@"
	sleep "$SETTLE_S"
	tandem-lat save /tmp/lat.a || fail "tandem-lat save"
	cell_before "$1"
	sleep "$(awk "BEGIN {{ print $2 * $PERIOD_US / 1000000 }}")"
	cell_after "$1"
	tandem-lat save /tmp/lat.b || fail "tandem-lat save"
	load_stop
	echo "@@RESULT $1 rtos@@"
	tandem-lat report /tmp/lat.a /tmp/lat.b "$3" || fail "tandem-lat report"
}}
# Called with the phase's ID right before cyclictest starts and right after
# it ends, or around measure_rtos's interval (the loads still running); an
# experiment's script may redefine them to record what the kernel or the
# memory model did meanwhile.
cell_before() {{ :; }}
cell_after() {{ :; }}
# measure_cyclictest ID SAMPLES CORE|any ISOLATED(yes|no) [SERIES(yes|no)];
# stops the loads before reporting, as measure_rtos. SERIES yes: also every
# sample's latency in loop order (cyclictest -v, kept in memory by cyclictest
# and written to tmpfs), as @@SERIES ID@@ and one JSON list, in cyclictest's
# unit. CYCLICTEST_NS=yes: in ns (--nsecs), every sample kept (-v) and no
# histogram; the result is one line {{"json": cyclictest's, "series": [...]}}.
measure_cyclictest() {{
	echo "@@PHASE $1@@"
	sleep "$SETTLE_S"
	pin=""
	[ "$3" = any ] || pin="-a $3"
	verbose=""
	[ "${{5:-no}}" = yes ] && verbose="-v"
	cmd="cyclictest -m -p 99 -i $PERIOD_US -l $2 -t 1 $pin -q"
	if [ "$CYCLICTEST_NS" = yes ]; then
		max={CYCLICTEST_SERIES_MAX}
		[ "$2" -le "$max" ] || fail "cyclictest keeps $max samples"
		cmd="$cmd -v --nsecs --json=/tmp/ct.json"
	else
		cmd="$cmd $verbose -h {CYCLICTEST_HIST_US} --histfile=/tmp/ct.hist --json=/tmp/ct.json"
	fi
	cell_before "$1"
	if [ "$4" = yes ]; then
		sh -c "echo \$\$ > /sys/fs/cgroup/rt/cgroup.procs && exec $cmd" >/tmp/ct.out 2>&1
	else
		$cmd >/tmp/ct.out 2>&1
	fi || fail "cyclictest"
	cell_after "$1"
	load_stop
	# -v lines: "thread: loop: latency"
	series() {{
		awk -F: '
			NF == 3 && $1 + 0 == 0 && $2 ~ /^ *[0-9]+$/ {{ s = s sep ($3 + 0); sep = ", " }}
			END {{ print "[" s "]" }}
		' /tmp/ct.out
	}}
	if [ "$CYCLICTEST_NS" = yes ]; then
		echo "@@RESULT $1 cyclictest-ns@@"
		echo "{{\"json\": $(tr -d '\n' < /tmp/ct.json), \"series\": $(series)}}"
	else
		echo "@@RESULT $1 cyclictest-json@@"
		# cyclictest's own JSON, on one line
		tr -d '\n' < /tmp/ct.json
		echo
	fi
	if [ -n "$verbose" ]; then
		echo "@@SERIES $1@@"
		series
	fi
}}
"""


def script_header(
    period_us: int,
    memory_bytes: str,
    sched_threads: int,
    hdd_bytes: str,
    settle_ms: int = SETTLE_MS,
    cyclictest_ns: bool = False,
) -> str:
    """The variables PRELUDE's functions read, then PRELUDE.
    `cyclictest_ns`: cyclictest measures in ns (`--nsecs`)."""
    return (
        f"PERIOD_US={period_us}\nMEMORY_BYTES={memory_bytes}\n"
        f"SETTLE_S={settle_ms / 1000:g}\n"
        f"SCHED_THREADS={sched_threads}\nHDD_BYTES={hdd_bytes}\n"
        f"CYCLICTEST_NS={'yes' if cyclictest_ns else 'no'}\n" + PRELUDE
    )


@dataclass
class Latency:
    """One measured distribution: a histogram (bucket start in µs -> count)
    at the instrument's resolution, with exact extremes where it gives them."""

    instrument: str
    resolution_us: float
    histogram: dict[float, int]
    min_us: float
    max_us: float
    sum_us: float  # of all samples (avg = sum / samples)
    samples: int
    # Samples beyond the histogram's range (counted in samples, max_us exact).
    overflow: int = 0

    @property
    def avg_us(self) -> float:
        return self.sum_us / self.samples if self.samples else 0.0

    def percentile(self, p: float) -> float:
        """The latency below which `p` % of the samples lie (bucket start);
        max_us when it falls among the overflow."""
        if not self.samples:
            return 0.0
        want = self.samples * p / 100
        seen = 0
        for us in sorted(self.histogram):
            seen += self.histogram[us]
            if seen >= want:
                return us
        return self.max_us

    def merge(self, other: Latency) -> Latency:
        """Both measurements as one (repetitions of one cell)."""
        if other.instrument != self.instrument:
            raise ValueError("cannot merge measurements of different instruments")
        hist = dict(self.histogram)
        for us, n in other.histogram.items():
            hist[us] = hist.get(us, 0) + n
        return Latency(
            self.instrument,
            self.resolution_us,
            hist,
            min(self.min_us, other.min_us),
            max(self.max_us, other.max_us),
            self.sum_us + other.sum_us,
            self.samples + other.samples,
            self.overflow + other.overflow,
        )


def merged(measurements: list[Latency]) -> Latency:
    """Repetitions of one cell as one measurement."""
    out = measurements[0]
    for extra in measurements[1:]:
        out = out.merge(extra)
    return out


def _number(obj: dict[str, object], key: str, where: str) -> float:
    value = obj.get(key)
    if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
        raise TandemError(f"{where}: '{key}' missing or not a number")
    return float(value)


def _pairs(obj: dict[str, object], where: str) -> list[tuple[float, int]]:
    raw = obj.get("histogram")
    if not isinstance(raw, list):
        raise TandemError(f"{where}: no histogram")
    pairs: list[tuple[float, int]] = []
    for item in raw:
        if (
            not isinstance(item, list)
            or len(item) != 2
            or not all(isinstance(x, int | float) for x in item)
            or item[1] < 0
        ):
            raise TandemError(f"{where}: bad histogram entry {item!r}")
        pairs.append((float(item[0]), int(item[1])))
    return pairs


def from_rtos(obj: dict[str, object], where: str) -> Latency:
    """A `tandem-lat report A B CORE` line (ns, 16 ns buckets)."""
    tick_ns = _number(obj, "tick_ns", where)
    pairs = _pairs(obj, where)
    samples = int(_number(obj, "samples", where))
    if sum(n for _, n in pairs) != samples:
        raise TandemError(f"{where}: histogram does not add up to {samples} samples")
    hist = {round(ns / 1000, 4): n for ns, n in pairs}
    return Latency(
        "rtos",
        tick_ns / 1000,
        hist,
        _number(obj, "min_ns", where) / 1000,
        _number(obj, "max_ns", where) / 1000,
        sum(us * n for us, n in hist.items()),
        samples,
        int(_number(obj, "overflow", where)),
    )


def from_cyclictest(obj: dict[str, object], where: str) -> Latency:
    """Our awk summary of cyclictest's histogram file (µs buckets)."""
    pairs = _pairs(obj, where)
    in_hist = int(_number(obj, "in_histogram", where))
    overflow = int(_number(obj, "overflow", where))
    if sum(n for _, n in pairs) != in_hist:
        raise TandemError(f"{where}: histogram does not add up")
    samples = in_hist + overflow
    avg = _number(obj, "avg_us", where)
    return Latency(
        "cyclictest",
        1.0,
        {us: n for us, n in pairs},
        _number(obj, "min_us", where),
        _number(obj, "max_us", where),
        avg * samples,
        samples,
        overflow,
    )


def _cyclictest_thread(obj: dict[str, object], where: str) -> dict[str, object]:
    """The one thread's statistics in cyclictest's `--json` file."""
    threads = obj.get("thread")
    if not isinstance(threads, dict) or list(threads) != ["0"]:
        raise TandemError(f"{where}: expected cyclictest's one thread, got {threads!r:.80}")
    thread = threads["0"]
    if not isinstance(thread, dict):
        raise TandemError(f"{where}: thread 0 is not an object")
    return thread


def from_cyclictest_ns(obj: dict[str, object], where: str) -> Latency:
    """cyclictest in ns (`--nsecs -v`): `json` its `--json` file (cycles,
    min, max, average in ns; no histogram) and `series` every sample in ns,
    from which the histogram is made (bucket = the sample, in µs to 0.001).
    The two must agree: a sample for each cycle, the same extremes."""
    ct = obj.get("json")
    series = obj.get("series")
    if not isinstance(ct, dict):
        raise TandemError(f"{where}: no cyclictest JSON")
    if ct.get("resolution_in_ns") != 1:
        raise TandemError(f"{where}: cyclictest measured in µs; ns (--nsecs) expected")
    thread = _cyclictest_thread(ct, where)
    if not isinstance(series, list) or not all(
        isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in series
    ):
        raise TandemError(f"{where}: series is not a list of ns ({series!s:.80})")
    cycles = int(_number(thread, "cycles", where))
    if len(series) != cycles or not series:
        raise TandemError(f"{where}: {len(series)} samples in the series of {cycles} cycles")
    low, high = _number(thread, "min", where), _number(thread, "max", where)
    if (min(series), max(series)) != (low, high):
        raise TandemError(
            f"{where}: the series spans {min(series)}-{max(series)} ns, cyclictest {low}-{high}"
        )
    hist: dict[float, int] = {}
    for ns in series:
        hist[ns / 1000] = hist.get(ns / 1000, 0) + 1
    return Latency(
        "cyclictest", 0.001, hist, low / 1000, high / 1000, sum(series) / 1000, cycles, 0
    )


def from_cyclictest_json(obj: dict[str, object], where: str) -> Latency:
    """cyclictest's `--json` file (one thread, µs): its thread's
    histogram (bucket -> count, empty buckets left out), cycles, min, max
    and average; the samples beyond the histogram are the cycles it does
    not count. In ns it is read with its samples (`from_cyclictest_ns`)."""
    thread = _cyclictest_thread(obj, where)
    if obj.get("resolution_in_ns", 0) != 0:
        raise TandemError(f"{where}: cyclictest measured in ns (--nsecs); µs expected")
    raw = thread.get("histogram")
    if not isinstance(raw, dict):
        raise TandemError(f"{where}: no histogram (cyclictest without -h?)")
    hist: dict[float, int] = {}
    for bucket, count in raw.items():
        if not bucket.isdigit() or not isinstance(count, int) or count < 0:
            raise TandemError(f"{where}: bad histogram entry {bucket!r}: {count!r}")
        hist[float(bucket)] = count
    cycles = int(_number(thread, "cycles", where))
    in_hist = sum(hist.values())
    if in_hist > cycles:
        raise TandemError(f"{where}: histogram counts {in_hist} of {cycles} cycles")
    avg = _number(thread, "avg", where)
    return Latency(
        "cyclictest",
        1.0,
        hist,
        _number(thread, "min", where),
        _number(thread, "max", where),
        avg * cycles,
        cycles,
        cycles - in_hist,
    )


def marked_json(lines: Iterable[str], marker: str, where: str) -> dict[str, object]:
    """Phase id -> the JSON value on the line after each `@@MARKER ID@@`
    (what an experiment's script adds beside the measurements)."""
    head = re.compile(rf"^@@{re.escape(marker)} (\S+)@@$")
    out: dict[str, object] = {}
    pending: str | None = None
    for line in lines:
        line = line.strip()
        m = head.match(line)
        if m:
            pending = m.group(1)
            continue
        if pending is not None:
            try:
                out[pending] = json.loads(line)
            except json.JSONDecodeError as e:
                raise TandemError(f"{where}: {marker} of phase {pending}: bad JSON ({e})") from None
            pending = None
    if pending is not None:
        raise TandemError(f"{where}: {marker} of phase {pending} printed nothing")
    return out


def parse_results(lines: Iterable[str], where: str) -> dict[str, Latency]:
    """Phase id -> measurement, from a boot's command output."""
    out: dict[str, Latency] = {}
    pending: tuple[str, str] | None = None
    for line in lines:
        line = line.strip()
        if line.startswith("@@FAIL"):
            raise TandemError(f"{where}: the guest script failed: {line.strip('@')}")
        m = RESULT.match(line)
        if m:
            pending = (m.group(1), m.group(2))
            continue
        if pending is not None and line.startswith("{"):
            phase, instrument = pending
            pending = None
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise TandemError(f"{where}: phase {phase}: bad JSON ({e})") from None
            if not isinstance(obj, dict):
                raise TandemError(f"{where}: phase {phase}: not a JSON object")
            parse = {
                "rtos": from_rtos,
                "cyclictest": from_cyclictest,
                "cyclictest-json": from_cyclictest_json,
                "cyclictest-ns": from_cyclictest_ns,
            }[instrument]
            out[phase] = parse(obj, f"{where}: phase {phase}")
    if pending is not None:
        raise TandemError(f"{where}: phase {pending[0]} printed no result")
    return out
