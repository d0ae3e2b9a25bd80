// SPDX-License-Identifier: GPL-2.0
/*
 * tandem-lat: the RTOS's timer-interrupt latency histograms (compare value to
 * the handler's third instruction, one bucket per counter tick), read from
 * the shared region through the tandem driver's debugfs. With -d, the RTOS's
 * dispatch-latency histograms instead (activation request to the task's
 * first instruction, one bucket per tick, counted on the core it starts on).
 *
 *   tandem-lat [-d] save FILE snapshot every core's histogram
 *   tandem-lat [-d] report A B [CORE]
 *                             what happened between two snapshots, as JSON;
 *                             the histogram and totals for every core, or
 *                             for CORE alone
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tandem_abi.h"

#define REGION "/sys/kernel/debug/tandem/region"
#define BUCKETS TANDEM_LATENCY_BUCKETS

struct snapshot {
	uint32_t cores;
	uint32_t counter_hz;
	uint32_t kind; /* 0: interrupt latency, 1: dispatch latency */
	uint32_t hist[TANDEM_SHM_MAX_CORES][BUCKETS];
};

/* Which histograms: set by -d. */
static uint32_t kind;
static long hist_offset = TANDEM_LATENCY_OFFSET;
static long hist_stride = TANDEM_LATENCY_STRIDE;
static int buckets = TANDEM_LATENCY_BUCKETS;

static int read_at(FILE *f, long offset, void *buf, size_t len)
{
	if (fseek(f, offset, SEEK_SET) || fread(buf, 1, len, f) != len)
		return -1;
	return 0;
}

static int take(struct snapshot *s)
{
	FILE *f = fopen(REGION, "rb");
	int ret = 0;

	if (!f) {
		fprintf(stderr, "tandem-lat: %s: %s (driver loaded? root?)\n", REGION,
			strerror(errno));
		return -1;
	}
	memset(s, 0, sizeof(*s));
	if (read_at(f, TANDEM_SHM_OFF_CORE_COUNT, &s->cores, 4) ||
	    read_at(f, TANDEM_SHM_OFF_COUNTER_HZ, &s->counter_hz, 4) ||
	    s->cores > TANDEM_SHM_MAX_CORES || !s->counter_hz)
		ret = -1;
	for (uint32_t c = 0; !ret && c < s->cores; c++)
		ret = read_at(f, hist_offset + (long)c * hist_stride, s->hist[c],
			      (size_t)buckets * 4);
	s->kind = kind;
	fclose(f);
	if (ret)
		fprintf(stderr, "tandem-lat: cannot read the histograms from %s\n", REGION);
	return ret;
}

static int load(const char *path, struct snapshot *s)
{
	FILE *f = fopen(path, "rb");
	size_t got;

	if (!f) {
		fprintf(stderr, "tandem-lat: %s: %s\n", path, strerror(errno));
		return -1;
	}
	got = fread(s, 1, sizeof(*s), f);
	fclose(f);
	if (got != sizeof(*s) || s->cores > TANDEM_SHM_MAX_CORES || !s->counter_hz ||
	    s->kind != kind) {
		fprintf(stderr, "tandem-lat: %s is not a snapshot\n", path);
		return -1;
	}
	return 0;
}

static int save(const char *path)
{
	static struct snapshot s;
	FILE *f;

	if (take(&s))
		return 1;
	f = fopen(path, "wb");
	if (!f || fwrite(&s, 1, sizeof(s), f) != sizeof(s)) {
		fprintf(stderr, "tandem-lat: %s: %s\n", path, strerror(errno));
		return 1;
	}
	return fclose(f) ? 1 : 0;
}

static int report(const char *before, const char *after, long only)
{
	static struct snapshot a, b;
	static uint64_t total[BUCKETS];
	uint64_t samples = 0, sum = 0;
	double ns;
	int min = -1, max = -1, first = 1;

	if (load(before, &a) || load(after, &b))
		return 1;
	if (a.cores != b.cores || a.counter_hz != b.counter_hz) {
		fprintf(stderr, "tandem-lat: snapshots of different machines\n");
		return 1;
	}
	if (only >= (long)b.cores) {
		fprintf(stderr, "tandem-lat: no core %ld (the machine has %u)\n", only, b.cores);
		return 1;
	}
	ns = 1e9 / b.counter_hz;
	printf("{\"tick_ns\": %.3f, \"cores\": [", ns);
	for (uint32_t c = 0; c < b.cores; c++) {
		uint64_t n = 0, s = 0;
		int cmax = -1;

		for (int i = 0; i < buckets; i++) {
			uint32_t d = b.hist[c][i] - a.hist[c][i];

			if (!d)
				continue;
			n += d;
			s += (uint64_t)d * i;
			if (only < 0 || only == (long)c)
				total[i] += d;
			cmax = i;
		}
		printf("%s{\"core\": %u, \"samples\": %llu, \"avg_ns\": %.1f, \"max_ns\": %.1f}",
		       c ? ", " : "", c, (unsigned long long)n, n ? ns * s / n : 0.0,
		       cmax < 0 ? 0.0 : ns * cmax);
	}
	printf("], \"histogram\": [");
	for (int i = 0; i < buckets; i++) {
		if (!total[i])
			continue;
		if (min < 0)
			min = i;
		max = i;
		samples += total[i];
		sum += total[i] * i;
		printf("%s[%.1f, %llu]", first ? "" : ", ", ns * i,
		       (unsigned long long)total[i]);
		first = 0;
	}
	printf("], \"samples\": %llu, \"min_ns\": %.1f, \"avg_ns\": %.1f, \"max_ns\": %.1f, \"overflow\": %llu}\n",
	       (unsigned long long)samples, min < 0 ? 0.0 : ns * min,
	       samples ? ns * sum / samples : 0.0, max < 0 ? 0.0 : ns * max,
	       (unsigned long long)total[buckets - 1]);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "-d")) {
		kind = 1;
		hist_offset = TANDEM_DISPATCH_OFFSET;
		hist_stride = TANDEM_DISPATCH_STRIDE;
		buckets = TANDEM_DISPATCH_BUCKETS;
		argc--;
		argv++;
	}
	if (argc == 3 && !strcmp(argv[1], "save"))
		return save(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "report"))
		return report(argv[2], argv[3], -1);
	if (argc == 5 && !strcmp(argv[1], "report")) {
		char *end;
		long core = strtol(argv[4], &end, 10);

		if (*argv[4] && !*end && core >= 0 && core < TANDEM_SHM_MAX_CORES)
			return report(argv[2], argv[3], core);
		fprintf(stderr, "tandem-lat: CORE must be 0..%d, got '%s'\n",
			TANDEM_SHM_MAX_CORES - 1, argv[4]);
		return 2;
	}
	fprintf(stderr,
		"usage: tandem-lat [-d] save FILE | tandem-lat [-d] report BEFORE AFTER [CORE]\n");
	return 2;
}
