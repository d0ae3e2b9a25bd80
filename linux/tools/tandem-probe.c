// SPDX-License-Identifier: GPL-2.0
/*
 * tandem-probe: what the emulated machine's timing does between two cores,
 * measured with the generic counter from two threads pinned to two CPUs
 * (`./tandem bench fidelity`).
 *
 *   tandem-probe overlap [-a CPU] [-b CPU] [-n ROUNDS] [-k ITERS]
 *       CPU b times a loop of known length between two counter reads while
 *       CPU a spins: prints "overlap INSNS NS" per round (INSNS: the
 *       instructions between the reads; NS: what the counter says).
 *   tandem-probe handoff [-a CPU] [-b CPU] [-n ROUNDS] [-s SEED] [-g NS]
 *       CPU a stamps the counter and stores the stamp in a flag that CPU b
 *       spins on (cpu_relax(), as kernel spin-waits do): prints "handoff
 *       NS" per round, from a's stamp to b's first read after seeing it
 *       (negative if b's counter was behind a's: on hardware, never).
 *       Rounds start after a pseudo-random wait of 1 to 64 us (SEED).
 *       A round in which b stopped spinning after a's stamp (its counter
 *       jumped by more than NS, default 2000, between two reads: an interrupt, the
 *       RTOS's turn on the core, or QEMU running another vCPU), or a
 *       between its stamp and the store, prints "handoff NS interrupted":
 *       its time is not the machine's hand-off.
 *
 * The counter ticks at CNTFRQ_EL0; times are printed in ns, rounded down
 * to the tick, once every round is done (printing would disturb them).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The measured loop: SUBS and B.NE per iteration. */
#define LOOP_INSNS_PER_ITER 2
/*
 * From the first counter read to the second, outside the loop: the first
 * MRS, the MOV of the count, the second ISB and MRS (the first ISB comes
 * before the first read and is not counted).
 */
#define LOOP_INSNS_FIXED 4

struct opts {
	int cpu_a, cpu_b;
	long rounds, iters;
	unsigned long seed;
	/*
	 * A jump of a core's counter between two reads longer than this means
	 * it did not run (one iteration of the spin loop is a few
	 * instructions). In per-core timing a core behind the others may
	 * also jump by up to the quantum when its clock is caught up, which
	 * is the hand-off being measured: the bench sets this above it.
	 */
	long gap_ns;
};

static uint64_t counter_hz;
/* Each round's result, in ns. */
static int64_t *results;

static inline uint64_t counter(void)
{
	uint64_t v;

	asm volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
	return v;
}

static inline void cpu_relax(void)
{
	asm volatile("yield" : : : "memory");
}

/* Counter ticks to ns; negative when the later read gave the lower count. */
static int64_t ticks_to_ns(int64_t ticks)
{
	return ticks * 1000000000ll / (int64_t)counter_hz;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		fprintf(stderr, "tandem-probe: cannot run on CPU %d: %s\n", cpu, strerror(errno));
		exit(1);
	}
}

static void die_usage(void)
{
	fprintf(stderr,
		"usage: tandem-probe overlap [-a CPU] [-b CPU] [-n ROUNDS] [-k ITERS]\n"
		"       tandem-probe handoff [-a CPU] [-b CPU] [-n ROUNDS] [-s SEED] [-g NS]\n");
	exit(2);
}

static long number(const char *s, long min, long max, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || !*s || *end || v < min || v > max) {
		fprintf(stderr, "tandem-probe: %s '%s': want %ld..%ld\n", what, s, min, max);
		exit(2);
	}
	return v;
}

/* --- overlap ------------------------------------------------------------- */

static int spin_stop;
static int spinning;

static void *spinner(void *arg)
{
	const struct opts *o = arg;
	unsigned long n = 0;

	pin(o->cpu_a);
	__atomic_store_n(&spinning, 1, __ATOMIC_RELEASE);
	/* Plain work, no cpu_relax(): a core busy with something else. */
	while (!__atomic_load_n(&spin_stop, __ATOMIC_RELAXED))
		n++;
	return (void *)n;
}

static uint64_t timed_loop(long iters)
{
	uint64_t t0, t1;
	long n = iters;

	asm volatile("isb\n\t"
		     "mrs %[t0], cntvct_el0\n\t"
		     "mov %[n], %[iters]\n"
		     "1:\tsubs %[n], %[n], #1\n\t"
		     "b.ne 1b\n\t"
		     "isb\n\t"
		     "mrs %[t1], cntvct_el0"
		     : [t0] "=&r"(t0), [t1] "=&r"(t1), [n] "+&r"(n)
		     : [iters] "r"(iters)
		     : "cc", "memory");
	return t1 - t0;
}

static int run_overlap(const struct opts *o)
{
	pthread_t a;
	long r;

	if (pthread_create(&a, NULL, spinner, (void *)o)) {
		fprintf(stderr, "tandem-probe: cannot start the spinning thread\n");
		return 1;
	}
	pin(o->cpu_b);
	while (!__atomic_load_n(&spinning, __ATOMIC_ACQUIRE))
		cpu_relax();
	for (r = 0; r < o->rounds; r++)
		results[r] = ticks_to_ns((int64_t)timed_loop(o->iters));
	__atomic_store_n(&spin_stop, 1, __ATOMIC_RELAXED);
	pthread_join(a, NULL);
	for (r = 0; r < o->rounds; r++)
		printf("overlap %ld %lld\n", o->iters * LOOP_INSNS_PER_ITER + LOOP_INSNS_FIXED,
		       (long long)results[r]);
	return 0;
}

/* --- handoff ------------------------------------------------------------- */

/* Written by a (a stamp, never 0), cleared by b once it has read it. */
static uint64_t flag;
/*
 * Rounds in which b was interrupted after a's stamp, and in which a was
 * between taking its stamp and storing it (each thread writes its own).
 */
static char *interrupted, *stamp_late;

static void *waiter(void *arg)
{
	const struct opts *o = arg;
	long r;

	pin(o->cpu_b);
	for (r = 0; r < o->rounds; r++) {
		uint64_t stamp, seen, last = counter(), now, gap_end = 0;

		while (!(stamp = __atomic_load_n(&flag, __ATOMIC_ACQUIRE))) {
			now = counter();
			if (ticks_to_ns((int64_t)(now - last)) > o->gap_ns)
				gap_end = now;
			last = now;
			cpu_relax();
		}
		seen = counter();
		if (ticks_to_ns((int64_t)(seen - last)) > o->gap_ns)
			gap_end = seen;
		results[r] = ticks_to_ns((int64_t)(seen - stamp));
		/* A gap that ended before the stamp did not delay this round. */
		interrupted[r] = gap_end > stamp;
		__atomic_store_n(&flag, 0, __ATOMIC_RELEASE);
	}
	return NULL;
}

static int run_handoff(const struct opts *o)
{
	unsigned long state = o->seed;
	pthread_t b;
	long r;

	if (pthread_create(&b, NULL, waiter, (void *)o)) {
		fprintf(stderr, "tandem-probe: cannot start the waiting thread\n");
		return 1;
	}
	pin(o->cpu_a);
	for (r = 0; r < o->rounds; r++) {
		uint64_t until, stamp;

		/* Wait until b has taken the last stamp, then 1..64 us more. */
		while (__atomic_load_n(&flag, __ATOMIC_ACQUIRE))
			cpu_relax();
		state = state * 6364136223846793005ul + 1442695040888963407ul;
		until = counter() + ((state >> 33) % 64 + 1) * counter_hz / 1000000;
		while (counter() < until)
			;
		stamp = counter();
		__atomic_store_n(&flag, stamp, __ATOMIC_RELEASE);
		stamp_late[r] = ticks_to_ns((int64_t)(counter() - stamp)) > o->gap_ns;
	}
	pthread_join(b, NULL);
	for (r = 0; r < o->rounds; r++)
		printf("handoff %lld%s\n", (long long)results[r],
		       interrupted[r] || stamp_late[r] ? " interrupted" : "");
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { .cpu_a = 1, .cpu_b = 2, .rounds = 200, .iters = 50000, .seed = 1,
			  .gap_ns = 2000 };
	const char *cmd;
	int c;

	if (argc < 2)
		die_usage();
	cmd = argv[1];
	optind = 2;
	while ((c = getopt(argc, argv, "a:b:n:k:s:g:")) != -1) {
		switch (c) {
		case 'a':
			o.cpu_a = number(optarg, 0, CPU_SETSIZE - 1, "CPU");
			break;
		case 'b':
			o.cpu_b = number(optarg, 0, CPU_SETSIZE - 1, "CPU");
			break;
		case 'n':
			o.rounds = number(optarg, 1, 1000000, "rounds");
			break;
		case 'k':
			o.iters = number(optarg, 1, 1000000000, "iterations");
			break;
		case 's':
			o.seed = number(optarg, 0, 0x7fffffff, "seed");
			break;
		case 'g':
			o.gap_ns = number(optarg, 1, 1000000000, "gap");
			break;
		default:
			die_usage();
		}
	}
	if (optind != argc || o.cpu_a == o.cpu_b)
		die_usage();
	asm volatile("mrs %0, cntfrq_el0" : "=r"(counter_hz));
	if (!counter_hz) {
		fprintf(stderr, "tandem-probe: CNTFRQ_EL0 is 0\n");
		return 1;
	}
	results = calloc(o.rounds, sizeof(*results));
	interrupted = calloc(o.rounds, sizeof(*interrupted));
	stamp_late = calloc(o.rounds, sizeof(*stamp_late));
	if (!results || !interrupted || !stamp_late) {
		fprintf(stderr, "tandem-probe: out of memory\n");
		return 1;
	}
	if (!strcmp(cmd, "overlap"))
		return run_overlap(&o);
	if (!strcmp(cmd, "handoff"))
		return run_handoff(&o);
	die_usage();
	return 2;
}
