// SPDX-License-Identifier: MIT
/*
 * gaps: a user program of your own, run in Tandem's Linux (docs/harness.md,
 * "Your own programs in the guest"). It spins on one CPU for a while,
 * reading the generic counter, and reports the gaps in its own run: the
 * times something else had the core. On a core the RTOS shares, those are
 * mostly the RTOS's jobs, which preempt Linux whatever it does.
 *
 *   aarch64-linux-gnu-gcc -static -O2 -o gaps docs/examples/gaps.c
 *   ./tandem exec --workload 1:1000:300 --add gaps -- './gaps 1 0.5'
 *
 * Usage: gaps CPU SECONDS [MIN_US]: gaps of at least MIN_US (default 5) on
 * CPU over SECONDS; prints how many, their total and the longest.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static inline uint64_t counter(void)
{
	uint64_t v;

	asm volatile("isb; mrs %0, cntvct_el0" : "=r"(v));
	return v;
}

static inline uint64_t counter_hz(void)
{
	uint64_t v;

	asm volatile("mrs %0, cntfrq_el0" : "=r"(v));
	return v;
}

int main(int argc, char **argv)
{
	uint64_t hz = counter_hz(), start, end, last, now, gap, min_gap;
	uint64_t count = 0, total = 0, longest = 0;
	cpu_set_t cpus;
	int cpu;

	if (argc < 3) {
		fprintf(stderr, "usage: gaps CPU SECONDS [MIN_US]\n");
		return 2;
	}
	cpu = atoi(argv[1]);
	CPU_ZERO(&cpus);
	CPU_SET(cpu, &cpus);
	if (sched_setaffinity(0, sizeof(cpus), &cpus)) {
		perror("gaps: sched_setaffinity");
		return 1;
	}
	min_gap = (uint64_t)((argc > 3 ? atof(argv[3]) : 5.0) * hz / 1e6);
	start = last = counter();
	end = start + (uint64_t)(atof(argv[2]) * hz);
	while ((now = counter()) < end) {
		gap = now - last;
		if (gap >= min_gap) {
			count++;
			total += gap;
			if (gap > longest)
				longest = gap;
		}
		last = now;
	}
	printf("cpu %d: %.3f s, %llu gaps of %.1f us or more, %.1f %% of the time, longest %.1f us\n",
	       cpu, (double)(now - start) / hz, (unsigned long long)count,
	       (double)min_gap * 1e6 / hz, 100.0 * total / (now - start),
	       (double)longest * 1e6 / hz);
	return 0;
}
