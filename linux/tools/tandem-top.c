// SPDX-License-Identifier: GPL-2.0
/*
 * tandem-top: the RTOS's statistics per core, from the tandem driver's sysfs.
 *
 *   tandem-top            every second, rates over the last second
 *   tandem-top -n COUNT   COUNT reports, then exit
 *   tandem-top -d SECONDS interval between reports
 *   tandem-top -1         once: totals since the machine booted (the RTOS's
 *                         count across restarts of Linux)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tandem_abi.h"

#define SYSFS "/sys/bus/platform/devices/tandem"
#define MAX_CORES TANDEM_MAX_CORES

struct core_sample {
	int present;
	char policy[16];
	unsigned long long busy_us, releases, misses, to_rtos, to_linux;
};

static int read_value(int core, const char *name, char *buf, size_t len)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), SYSFS "/core%d/%s", core, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(buf, len, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static unsigned long long read_ull(int core, const char *name)
{
	char buf[32];

	if (read_value(core, name, buf, sizeof(buf)))
		return 0;
	return strtoull(buf, NULL, 10);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sample(struct core_sample *s)
{
	for (int c = 0; c < MAX_CORES; c++) {
		s[c].present = !read_value(c, "policy", s[c].policy, sizeof(s[c].policy));
		if (!s[c].present)
			continue;
		s[c].busy_us = read_ull(c, "rtos_busy_us");
		s[c].releases = read_ull(c, "rtos_releases");
		s[c].misses = read_ull(c, "deadline_misses");
		s[c].to_rtos = read_ull(c, "switches_to_rtos");
		s[c].to_linux = read_ull(c, "switches_to_linux");
	}
}

static void report(const struct core_sample *a, const struct core_sample *b,
		   double seconds, int totals)
{
	printf("core policy  rtos-load %8s %8s %10s %10s\n",
	       totals ? "jobs" : "jobs/s", "missed",
	       totals ? "to-rtos" : "to-rtos/s", totals ? "to-linux" : "to-linux/s");
	for (int c = 0; c < MAX_CORES; c++) {
		double div = totals ? 1 : seconds;

		if (!b[c].present)
			continue;
		printf("%4d %-7s %8.1f%% %8.0f %8llu %10.0f %10.0f\n", c, b[c].policy,
		       100.0 * (b[c].busy_us - a[c].busy_us) / (seconds * 1e6),
		       (b[c].releases - a[c].releases) / div, b[c].misses,
		       (b[c].to_rtos - a[c].to_rtos) / div,
		       (b[c].to_linux - a[c].to_linux) / div);
	}
	fflush(stdout);
}

/*
 * Seconds since the machine started: the RTOS's totals count from then, and
 * Linux's own uptime restarts with each Linux (the monitor restarts Linux
 * alone). The generic counter starts with the machine; EL0 may read it.
 */
static double machine_uptime_s(void)
{
	unsigned long long count, hz;

	asm volatile("isb; mrs %0, cntvct_el0" : "=r"(count));
	asm volatile("mrs %0, cntfrq_el0" : "=r"(hz));
	return hz ? (double)count / hz : 0;
}

/* The header line: which Linux this is. */
static void print_generation(void)
{
	char buf[32];
	FILE *f = fopen(SYSFS "/linux_generation", "r");
	unsigned long generation;

	if (!f)
		return;
	if (fgets(buf, sizeof(buf), f)) {
		generation = strtoul(buf, NULL, 10);
		printf("Linux generation %lu (%lu restarts while the RTOS ran on)\n",
		       generation, generation ? generation - 1 : 0);
	}
	fclose(f);
}

int main(int argc, char **argv)
{
	struct core_sample prev[MAX_CORES] = { 0 }, cur[MAX_CORES];
	int opt, once = 0, count = -1;
	double interval = 1.0, t0, t1;

	while ((opt = getopt(argc, argv, "1n:d:h")) != -1) {
		switch (opt) {
		case '1':
			once = 1;
			break;
		case 'n':
			count = atoi(optarg);
			break;
		case 'd':
			interval = atof(optarg);
			break;
		default:
			fprintf(stderr, "usage: tandem-top [-1] [-n COUNT] [-d SECONDS]\n");
			return 2;
		}
	}
	if (interval <= 0 || count == 0) {
		fprintf(stderr, "tandem-top: -d must be > 0 and -n >= 1\n");
		return 2;
	}
	if (access(SYSFS "/core0/policy", R_OK)) {
		fprintf(stderr, "tandem-top: %s: %s (tandem driver loaded?)\n", SYSFS,
			strerror(errno));
		return 1;
	}
	print_generation();
	if (once) {
		sample(cur);
		report(prev, cur, machine_uptime_s(), 1);
		return 0;
	}
	sample(prev);
	t0 = now_s();
	for (int i = 0; count < 0 || i < count; i++) {
		usleep((useconds_t)(interval * 1e6));
		sample(cur);
		t1 = now_s();
		report(prev, cur, t1 - t0, 0);
		memcpy(prev, cur, sizeof(cur));
		t0 = t1;
	}
	return 0;
}
