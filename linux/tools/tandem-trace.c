// SPDX-License-Identifier: GPL-2.0
/*
 * tandem-trace: every core's world-switch trace ring, read from the shared
 * region through the tandem driver's debugfs, as text for the harness:
 *
 *   # counter_hz H cores C
 *   # now TICKS                 the counter just before any ring was read
 *   # read TICKS                the counter once every ring had been read
 *   # core N written W          switches the monitor recorded on core N by now
 *   N TICKS EVENT               1: to the RTOS, 2: to Linux, 3: to idle
 *
 * Each core's entries follow its "# core" line, oldest first. Only entries
 * the monitor cannot have overwritten while we copied them are printed, and
 * only those up to "# now": every ring was read after it, so each holds every
 * switch up to then, however long the reading took (a reader preempted by a
 * loaded Linux between rings, or between the last ring and a counter read
 * after it, once cut a core's newest switches from a window that ended
 * after them). "# read" says how long reading took.
 *
 * tandem-trace --clock prints, after "# now", eight "# clock" samples (below),
 * taken with "# now": where Linux's raw clock was when the reading began.
 *
 * tandem-trace clock [N] relates Linux's raw monotonic clock (the clock
 * Linux's tracer stamps its events with, `trace_clock` mono_raw) to the
 * counter: N times (default 16) it reads the counter, the clock and the
 * counter again, and prints
 *
 *   # clock BEFORE RAW_NS AFTER   the clock read between the two counter reads
 *   # clock-marker BEFORE AFTER   ... and the same around a trace_marker write
 *
 * The marker ("tandem_clock_marker BEFORE", if the tracer is mounted at
 * /sys/kernel/tracing) lets the harness check its conversion against an
 * event the tracer itself stamped.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tandem_abi.h"

#define REGION "/sys/kernel/debug/tandem/region"

/* Far beyond the 1024 the monitor uses; bounds what a bad header makes us allocate. */
#define MAX_ENTRIES (1u << 16)

struct trace_entry {
	uint64_t time;
	uint64_t event;
};

struct ring {
	uint64_t written;
	uint64_t first;		/* index of the oldest trustworthy entry */
	struct trace_entry *entries;	/* entries[i]: index first + i */
};

struct layout {
	uint32_t cores;
	uint32_t counter_hz;
	uint32_t trace_offset;
	uint32_t ring_size;
	uint32_t entries;
};

static int read_at(int fd, off_t offset, void *buf, size_t len)
{
	ssize_t got = pread(fd, buf, len, offset);

	if (got < 0) {
		fprintf(stderr, "tandem-trace: %s: %s\n", REGION, strerror(errno));
		return -1;
	}
	if ((size_t)got != len) {
		fprintf(stderr, "tandem-trace: %s ends before offset %#llx\n", REGION,
			(unsigned long long)offset + len);
		return -1;
	}
	return 0;
}

static uint32_t field32(const uint8_t *header, int offset)
{
	uint32_t v;

	memcpy(&v, header + offset, sizeof(v));
	return v;
}

/*
 * Linux can write to the region too (a bug, a bad module), so nothing in it
 * is trusted: a bad header is reported, never followed out of bounds.
 */
static int read_layout(int fd, struct layout *l)
{
	uint8_t h[TANDEM_SHM_HEADER_SIZE];
	uint32_t magic, version, region, header;
	uint64_t end;

	if (read_at(fd, 0, h, sizeof(h)))
		return -1;
	magic = field32(h, TANDEM_SHM_OFF_MAGIC);
	version = field32(h, TANDEM_SHM_OFF_ABI_VERSION);
	region = field32(h, TANDEM_SHM_OFF_REGION_SIZE);
	header = field32(h, TANDEM_SHM_OFF_HEADER_SIZE);
	l->cores = field32(h, TANDEM_SHM_OFF_CORE_COUNT);
	l->counter_hz = field32(h, TANDEM_SHM_OFF_COUNTER_HZ);
	l->trace_offset = field32(h, TANDEM_SHM_OFF_TRACE_OFFSET);
	l->ring_size = field32(h, TANDEM_SHM_OFF_TRACE_RING_SIZE);
	l->entries = field32(h, TANDEM_SHM_OFF_TRACE_ENTRIES);

	if (magic != TANDEM_SHM_MAGIC) {
		fprintf(stderr, "tandem-trace: bad magic %#x in the region\n", magic);
		return -1;
	}
	if (version >> 16 != TANDEM_ABI_VERSION >> 16) {
		fprintf(stderr, "tandem-trace: region has ABI %#x, this tool speaks %#x\n",
			version, TANDEM_ABI_VERSION);
		return -1;
	}
	if (header != TANDEM_SHM_HEADER_SIZE || !l->counter_hz) {
		fprintf(stderr, "tandem-trace: bad header (size %u, counter %u Hz)\n",
			header, l->counter_hz);
		return -1;
	}
	if (!l->cores || l->cores > TANDEM_SHM_MAX_CORES) {
		fprintf(stderr, "tandem-trace: %u cores in the header (1..%d allowed)\n",
			l->cores, TANDEM_SHM_MAX_CORES);
		return -1;
	}
	end = (uint64_t)l->trace_offset + (uint64_t)l->cores * l->ring_size;
	/* The writer indexes the ring modulo its size: a power of two. */
	if (!l->entries || l->entries > MAX_ENTRIES || (l->entries & (l->entries - 1)) ||
	    l->ring_size < TANDEM_TRACE_RING_HEADER + l->entries * sizeof(struct trace_entry) ||
	    l->ring_size % TANDEM_SHM_PAGE ||
	    l->trace_offset < header || end > region) {
		fprintf(stderr, "tandem-trace: bad trace layout (%u rings of %u entries, %u bytes each at %#x, region %u bytes)\n",
			l->cores, l->entries, l->ring_size, l->trace_offset, region);
		return -1;
	}
	return 0;
}

/*
 * The monitor writes entry n, then sets written = n + 1, without waiting for
 * readers. Entries below `written` as read before the copy were complete;
 * while we copied, the writer may have been in slot `written` as read after
 * the copy, which overwrote the oldest entry: everything older than that
 * slot's previous occupant is safe.
 */
static int read_ring(int fd, const struct layout *l, uint32_t core, struct ring *r)
{
	off_t base = l->trace_offset + (off_t)core * l->ring_size;
	size_t bytes = (size_t)l->entries * sizeof(struct trace_entry);
	struct trace_entry *copy = malloc(bytes);
	uint64_t before, after, n;
	int tries = 0;

	if (!copy) {
		fprintf(stderr, "tandem-trace: out of memory\n");
		return -1;
	}
	/* A copy the writer lapped holds nothing usable; it is rare, so retry. */
	do {
		if (read_at(fd, base, &before, sizeof(before)) ||
		    read_at(fd, base + TANDEM_TRACE_RING_HEADER, copy, bytes) ||
		    read_at(fd, base, &after, sizeof(after))) {
			free(copy);
			return -1;
		}
		if (after < before) {
			fprintf(stderr, "tandem-trace: core %u: written went back from %llu to %llu\n",
				core, (unsigned long long)before, (unsigned long long)after);
			free(copy);
			return -1;
		}
		r->first = after >= l->entries - 1 ? after - (l->entries - 1) : 0;
	} while (before && r->first >= before && ++tries < 3);
	r->written = before;
	if (r->first > before)
		r->first = before;
	/* + 1: malloc(0) may return NULL, which is not a failure here. */
	r->entries = malloc((before - r->first) * sizeof(struct trace_entry) + 1);
	if (!r->entries) {
		fprintf(stderr, "tandem-trace: out of memory\n");
		free(copy);
		return -1;
	}
	for (n = r->first; n < before; n++) {
		const struct trace_entry *e = &copy[n & (l->entries - 1)];

		if (e->event != TANDEM_TRACE_TO_RTOS && e->event != TANDEM_TRACE_TO_LINUX &&
		    e->event != TANDEM_TRACE_TO_IDLE) {
			fprintf(stderr, "tandem-trace: core %u, entry %llu: unknown event %llu\n",
				core, (unsigned long long)n, (unsigned long long)e->event);
			free(copy);
			return -1;
		}
		if (n > r->first && e->time < r->entries[n - r->first - 1].time) {
			fprintf(stderr, "tandem-trace: core %u, entry %llu: time %llu before the previous entry's\n",
				core, (unsigned long long)n, (unsigned long long)e->time);
			free(copy);
			return -1;
		}
		r->entries[n - r->first] = *e;
	}
	free(copy);
	return 0;
}

/*
 * Linux's virtual counter: without EL2 (our QEMU machine) it is the physical
 * counter the monitor stamps entries with, and EL0 may read it.
 */
static uint64_t counter_now(void)
{
	uint64_t t;

	asm volatile("isb\n\tmrs %0, cntvct_el0" : "=r" (t) : : "memory");
	return t;
}

#define MARKER "/sys/kernel/tracing/trace_marker"

struct clock_sample {
	uint64_t before, raw_ns, after;
};

/* The counter, Linux's raw clock, the counter again. */
static int clock_sample(struct clock_sample *s)
{
	struct timespec t;

	s->before = counter_now();
	if (clock_gettime(CLOCK_MONOTONIC_RAW, &t)) {
		perror("tandem-trace: clock_gettime");
		return 1;
	}
	s->after = counter_now();
	s->raw_ns = (uint64_t)t.tv_sec * 1000000000ull + t.tv_nsec;
	return 0;
}

static void print_clock_sample(const struct clock_sample *s)
{
	printf("# clock %llu %llu %llu\n", (unsigned long long)s->before,
	       (unsigned long long)s->raw_ns, (unsigned long long)s->after);
}

static int clock_samples(long n, int marker)
{
	struct clock_sample s;
	uint64_t before, after;
	char text[64];
	int fd, len;

	for (long i = 0; i < n; i++) {
		if (clock_sample(&s))
			return 1;
		print_clock_sample(&s);
	}
	if (!marker)
		return 0;
	fd = open(MARKER, O_WRONLY);
	if (fd < 0)
		return 0;
	before = counter_now();
	len = snprintf(text, sizeof(text), "tandem_clock_marker %llu\n",
		       (unsigned long long)before);
	if (write(fd, text, len) != len) {
		perror("tandem-trace: " MARKER);
		close(fd);
		return 1;
	}
	after = counter_now();
	close(fd);
	printf("# clock-marker %llu %llu\n", (unsigned long long)before,
	       (unsigned long long)after);
	return 0;
}

/* Clock samples taken with "# now" (tandem-trace --clock). */
#define NOW_CLOCK_SAMPLES 8

int main(int argc, char **argv)
{
	static struct ring rings[TANDEM_SHM_MAX_CORES];
	struct clock_sample clock[NOW_CLOCK_SAMPLES];
	struct layout l;
	uint64_t now, read;
	uint32_t c;
	int fd, with_clock, i;

	if (argc >= 2 && argc <= 3 && !strcmp(argv[1], "clock")) {
		long n = argc == 3 ? strtol(argv[2], NULL, 0) : 16;

		if (n < 1 || n > 100000) {
			fprintf(stderr, "tandem-trace: clock: N must be 1..100000\n");
			return 2;
		}
		return clock_samples(n, 1);
	}
	with_clock = argc == 2 && !strcmp(argv[1], "--clock");
	if (argc != 1 && !with_clock) {
		fprintf(stderr, "usage: tandem-trace [--clock] (every core's world-switch trace)\n"
			"       tandem-trace clock [N] (Linux's raw clock against the counter)\n");
		return 2;
	}
	fd = open(REGION, O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "tandem-trace: %s: %s (driver loaded? root?)\n", REGION,
			strerror(errno));
		return 1;
	}
	if (read_layout(fd, &l)) {
		close(fd);
		return 1;
	}
	/*
	 * The dump's time, before the first ring is read: each ring then holds
	 * every switch up to it, whenever the reading below is preempted.
	 */
	now = counter_now();
	for (i = 0; with_clock && i < NOW_CLOCK_SAMPLES; i++) {
		if (clock_sample(&clock[i])) {
			close(fd);
			return 1;
		}
	}
	for (c = 0; c < l.cores; c++) {
		if (read_ring(fd, &l, c, &rings[c])) {
			close(fd);
			return 1;
		}
	}
	read = counter_now();
	close(fd);

	printf("# counter_hz %u cores %u\n", l.counter_hz, l.cores);
	printf("# now %llu\n", (unsigned long long)now);
	printf("# read %llu\n", (unsigned long long)read);
	for (i = 0; with_clock && i < NOW_CLOCK_SAMPLES; i++)
		print_clock_sample(&clock[i]);
	for (c = 0; c < l.cores; c++) {
		const struct ring *r = &rings[c];
		uint64_t n, kept = r->written - r->first;

		/* The switches made after "# now", while the rings were read. */
		while (kept && r->entries[kept - 1].time > now)
			kept--;
		if (!kept && r->first) {
			/* Lapped since "# now": its world then is lost. */
			fprintf(stderr, "tandem-trace: core %u's ring was overwritten after now (%llu); run again\n",
				c, (unsigned long long)now);
			return 1;
		}
		printf("# core %u written %llu\n", c, (unsigned long long)(r->first + kept));
		for (n = 0; n < kept; n++)
			printf("%u %llu %llu\n", c, (unsigned long long)r->entries[n].time,
			       (unsigned long long)r->entries[n].event);
	}
	return fflush(stdout) ? 1 : 0;
}
