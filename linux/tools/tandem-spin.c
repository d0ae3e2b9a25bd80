// SPDX-License-Identifier: GPL-2.0
/*
 * tandem-spin: Linux's spin-wait histograms (how long contended raw spinlock
 * and rwlock acquisitions spun, in buckets of 1 << TANDEM_SPIN_SHIFT counter
 * ticks; the last bucket counts everything longer), read from the shared
 * region through the tandem driver's debugfs. The kernel counts them when
 * booted with tandem_spinstat=on.
 *
 *   tandem-spin save FILE     snapshot every core's histogram
 *   tandem-spin report A B    what happened between two snapshots, all
 *                             cores together, as one JSON line
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tandem_abi.h"

#define REGION "/sys/kernel/debug/tandem/region"
#define BUCKETS TANDEM_SPIN_BUCKETS

struct snapshot {
	uint32_t cores;
	uint32_t counter_hz;
	uint32_t hist[TANDEM_SHM_MAX_CORES][BUCKETS];
};

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
		fprintf(stderr, "tandem-spin: %s: %s (driver loaded? root?)\n", REGION,
			strerror(errno));
		return -1;
	}
	memset(s, 0, sizeof(*s));
	if (read_at(f, TANDEM_SHM_OFF_CORE_COUNT, &s->cores, 4) ||
	    read_at(f, TANDEM_SHM_OFF_COUNTER_HZ, &s->counter_hz, 4) ||
	    s->cores > TANDEM_SHM_MAX_CORES || !s->counter_hz)
		ret = -1;
	for (uint32_t c = 0; !ret && c < s->cores; c++)
		ret = read_at(f, TANDEM_SPIN_OFFSET + (long)c * TANDEM_SPIN_STRIDE,
			      s->hist[c], BUCKETS * 4);
	fclose(f);
	if (ret)
		fprintf(stderr, "tandem-spin: cannot read the histograms from %s\n", REGION);
	return ret;
}

static int load(const char *path, struct snapshot *s)
{
	FILE *f = fopen(path, "rb");
	size_t got;

	if (!f) {
		fprintf(stderr, "tandem-spin: %s: %s\n", path, strerror(errno));
		return -1;
	}
	got = fread(s, 1, sizeof(*s), f);
	fclose(f);
	if (got != sizeof(*s) || s->cores > TANDEM_SHM_MAX_CORES || !s->counter_hz) {
		fprintf(stderr, "tandem-spin: %s is not a snapshot\n", path);
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
		fprintf(stderr, "tandem-spin: %s: %s\n", path, strerror(errno));
		return 1;
	}
	return fclose(f) ? 1 : 0;
}

static int report(const char *before, const char *after)
{
	static struct snapshot a, b;
	static uint64_t total[BUCKETS];
	uint64_t samples = 0;
	double bucket_us;
	int max = -1, first = 1;

	if (load(before, &a) || load(after, &b))
		return 1;
	if (a.cores != b.cores || a.counter_hz != b.counter_hz) {
		fprintf(stderr, "tandem-spin: snapshots of different machines\n");
		return 1;
	}
	for (uint32_t c = 0; c < b.cores; c++)
		for (int i = 0; i < BUCKETS; i++)
			total[i] += (uint32_t)(b.hist[c][i] - a.hist[c][i]);
	bucket_us = 1e6 * (1u << TANDEM_SPIN_SHIFT) / b.counter_hz;
	printf("{\"bucket_us\": %.3f, \"histogram\": [", bucket_us);
	for (int i = 0; i < BUCKETS; i++) {
		if (!total[i])
			continue;
		max = i;
		samples += total[i];
		printf("%s[%.3f, %llu]", first ? "" : ", ", bucket_us * i,
		       (unsigned long long)total[i]);
		first = 0;
	}
	/* max_us: the lower edge of the highest bucket with a count. */
	printf("], \"samples\": %llu, \"max_us\": %.3f, \"overflow\": %llu}\n",
	       (unsigned long long)samples, max < 0 ? 0.0 : bucket_us * max,
	       (unsigned long long)total[BUCKETS - 1]);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "save"))
		return save(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "report"))
		return report(argv[2], argv[3]);
	fprintf(stderr, "usage: tandem-spin save FILE | tandem-spin report BEFORE AFTER\n");
	return 2;
}
