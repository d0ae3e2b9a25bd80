// SPDX-License-Identifier: GPL-2.0
/*
 * tandem-membench: memory microbenchmarks that check Tandem's memory model
 * (harness/memmodel) against its own profile (`./tandem bench memory`).
 *
 *   tandem-membench chase [-c CPU] [-l LINE] [-n LOADS] BYTES...
 *       A pointer chase on CPU (default 0) through BYTES of memory, one
 *       pointer per LINE bytes (default 64), pages in a pseudo-random
 *       order and the lines of each page in a pseudo-random order (one TLB
 *       refill per page visited), no load within four lines of the two
 *       before it (a prefetcher would follow them): one line per size,
 *       "chase bytes=B loads=N ns=T".
 *   tandem-membench contend [-l LINE] [-n LOADS] [-s STREAM] BYTES K
 *       The same chase on CPU 0 through BYTES while CPUs 1..K each read
 *       their own STREAM bytes (default 8 MiB) one word per line, in
 *       order, round and round: "contend streams=K bytes=B loads=N ns=T".
 *   tandem-membench tlb [-c CPU] [-n LOADS] PAGES...
 *       One load per page from PAGES pages, in order, round and round; the
 *       pages are one physical page mapped PAGES times (a file in /tmp),
 *       so every load hits the same cached line and only the TLBs see
 *       PAGES pages: "tlb pages=P loads=N ns=T".
 *   tandem-membench read [-l LINE] BYTES
 *       A load, not a measurement: reads its own BYTES (a K or M suffix
 *       allowed) one word per LINE bytes, in order, round and round, until
 *       it is killed; no writes once its pages are in (paper 003's
 *       information domain, which reads at the maximum rate through a
 *       buffer far larger than the L1). Prints nothing.
 *   tandem-membench window open|close
 *       Opens (closes) a window of the memory model's counters on every
 *       core at once, at this core's time: a script brackets a phase of
 *       its benchmark, as the loads around a real-time core it cannot run
 *       on. Prints nothing.
 *
 * Every measurement runs its whole loop once untimed first (page faults,
 * first misses), then times LOADS loads (default 1000000, rounded up to
 * whole passes) between two counter reads; ns is what the counter says,
 * rounded down to its tick. The loops keep everything in registers: their
 * only data accesses are the measured loads. The pseudo-random orders are
 * the same in every run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096ul
#define DEFAULT_LOADS 1000000l
#define DEFAULT_STREAM (8ul << 20)
#define MAX_CPUS 64
/* Lines either way a Cortex-A53's data prefetcher follows (its TRM). */
#define PREFETCH_REACH 4ul

struct opts {
	int cpu;
	unsigned long line;
	long loads;
	unsigned long stream;
};

static uint64_t counter_hz;

/*
 * The memory model's window marker (docs/harness.md): with --memmodel, the
 * model keeps this core's counters from window_open() to window_close()
 * and memmodel.json lists each window. Unallocated hints: no-ops on
 * hardware and in QEMU without the model.
 */
static inline void window_open(void)
{
	asm volatile("hint #112" : : : "memory");
}

static inline void window_close(void)
{
	asm volatile("hint #113" : : : "memory");
}

static inline uint64_t counter(void)
{
	uint64_t v;

	asm volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
	return v;
}

static uint64_t ticks_to_ns(uint64_t ticks)
{
	return ticks * 1000000000ull / counter_hz;
}

static void die(const char *what)
{
	fprintf(stderr, "tandem-membench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void show_usage(void)
{
	fprintf(stderr,
		"usage: tandem-membench chase [-c CPU] [-l LINE] [-n LOADS] BYTES...\n"
		"       tandem-membench contend [-l LINE] [-n LOADS] [-s STREAM] BYTES K\n"
		"       tandem-membench tlb [-c CPU] [-n LOADS] PAGES...\n"
		"       tandem-membench read [-l LINE] BYTES\n"
		"       tandem-membench window open|close\n");
	exit(2);
}

static unsigned long parse_number(const char *text)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(text, &end, 0);
	if (errno || end == text || *end || v == 0) {
		fprintf(stderr, "tandem-membench: bad number '%s'\n", text);
		exit(2);
	}
	return v;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
}

/* xorshift64: the same pseudo-random order in every run. */
static uint64_t next_random(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*state = x;
	return x;
}

static void shuffle(unsigned long *v, unsigned long n, uint64_t *state)
{
	unsigned long i, j, t;

	for (i = n; i > 1; i--) {
		j = next_random(state) % i;
		t = v[i - 1];
		v[i - 1] = v[j];
		v[j] = t;
	}
}

/*
 * A Cortex-A53's prefetcher follows misses to lines at most four apart
 * (two to neighbouring lines start it), in two streams at once: a chase
 * that steps that near the line before or the one before that would
 * measure the prefetcher, not the latency. Reorders @v so that each entry
 * is more than @near from the two before it wherever a later entry allows
 * it (only the last few may stay near).
 */
static bool far_from(unsigned long a, unsigned long b, unsigned long near)
{
	return (a > b ? a - b : b - a) > near;
}

static void spread(unsigned long *v, unsigned long n, unsigned long near)
{
	unsigned long i, j, t;

	for (i = 1; i < n; i++) {
		for (j = i; j < n; j++) {
			if (far_from(v[j], v[i - 1], near) &&
			    (i < 2 || far_from(v[j], v[i - 2], near)))
				break;
		}
		if (j == n)
			break;
		t = v[i];
		v[i] = v[j];
		v[j] = t;
	}
}

static unsigned long *identity(unsigned long n)
{
	unsigned long *v = malloc(n * sizeof(*v));
	unsigned long i;

	if (!v)
		die("malloc");
	for (i = 0; i < n; i++)
		v[i] = i;
	return v;
}

/*
 * A cycle of pointers through @bytes of fresh memory, one per @line bytes:
 * the pages in a pseudo-random order, each page's lines in another, no
 * line within PREFETCH_REACH lines of the two before it.
 */
static void **make_chase(unsigned long bytes, unsigned long line,
			 char **mapped)
{
	unsigned long pages = (bytes + PAGE - 1) / PAGE;
	unsigned long per_page = PAGE / line;
	unsigned long lines = bytes / line;
	unsigned long *page_order = identity(pages);
	unsigned long *line_order = identity(per_page);
	uint64_t state = 0x9e3779b97f4a7c15ull;
	char *memory;
	void **first = NULL, **prev = NULL;
	unsigned long p, l, n = 0;

	memory = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (memory == MAP_FAILED)
		die("mmap");
	shuffle(page_order, pages, &state);
	for (p = 0; p < pages && n < lines; p++) {
		shuffle(line_order, per_page, &state);
		spread(line_order, per_page, PREFETCH_REACH);
		for (l = 0; l < per_page && n < lines; l++, n++) {
			void **slot = (void **)(memory + page_order[p] * PAGE +
						line_order[l] * line);

			if (prev)
				*prev = slot;
			else
				first = slot;
			prev = slot;
		}
	}
	*prev = first;
	*mapped = memory;
	free(page_order);
	free(line_order);
	return first;
}

/* Follows the chain @loads times (a multiple of 8); returns where it ended. */
static void **follow(void **p, long loads)
{
	for (; loads > 0; loads -= 8) {
		p = *p;
		p = *p;
		p = *p;
		p = *p;
		p = *p;
		p = *p;
		p = *p;
		p = *p;
	}
	asm volatile("" : : "r"(p) : "memory");
	return p;
}

static long round_up(long loads, long pass)
{
	long n = (loads + pass - 1) / pass * pass;

	return (n + 7) / 8 * 8;
}

/* Times @loads loads of the chase through @bytes; returns ns. */
static uint64_t time_chase(unsigned long bytes, unsigned long line,
			   long *loads)
{
	char *memory;
	void **p = make_chase(bytes, line, &memory);
	long pass = bytes / line;
	uint64_t t0, t1;

	*loads = round_up(*loads, pass);
	p = follow(p, round_up(pass, pass));
	window_open();
	t0 = counter();
	p = follow(p, *loads);
	t1 = counter();
	window_close();
	munmap(memory, (bytes + PAGE - 1) / PAGE * PAGE);
	return ticks_to_ns(t1 - t0);
}

static int run_chase(struct opts *o, int argc, char **argv)
{
	int i;

	pin(o->cpu);
	for (i = 0; i < argc; i++) {
		unsigned long bytes = parse_number(argv[i]);
		long loads = o->loads;
		uint64_t ns;

		if (bytes < o->line) {
			fprintf(stderr, "tandem-membench: %lu bytes hold no line\n", bytes);
			return 2;
		}
		ns = time_chase(bytes, o->line, &loads);
		printf("chase bytes=%lu loads=%ld ns=%llu\n", bytes, loads,
		       (unsigned long long)ns);
	}
	return 0;
}

struct streamer {
	pthread_t thread;
	int cpu;
	unsigned long bytes, line;
	int *stop;
	int started;
};

static void *stream(void *arg)
{
	struct streamer *s = arg;
	char *memory;
	unsigned long off;
	uint64_t sum = 0;

	pin(s->cpu);
	memory = mmap(NULL, s->bytes, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (memory == MAP_FAILED)
		die("mmap");
	/* Fault the pages in, so the stream only reads. */
	for (off = 0; off < s->bytes; off += PAGE)
		memory[off] = 1;
	__atomic_store_n(&s->started, 1, __ATOMIC_RELEASE);
	window_open();
	while (!__atomic_load_n(s->stop, __ATOMIC_RELAXED)) {
		for (off = 0; off < s->bytes; off += s->line)
			sum += __atomic_load_n(&memory[off], __ATOMIC_RELAXED);
	}
	window_close();
	return (void *)(uintptr_t)sum;
}

static int run_contend(struct opts *o, int argc, char **argv)
{
	static struct streamer streamers[MAX_CPUS];
	int stop = 0;
	unsigned long bytes;
	long k, i, loads = o->loads;
	uint64_t ns;

	if (argc != 2)
		show_usage();
	bytes = parse_number(argv[0]);
	k = strtol(argv[1], NULL, 0);
	if (k < 0 || k >= MAX_CPUS || k >= sysconf(_SC_NPROCESSORS_ONLN)) {
		fprintf(stderr, "tandem-membench: %ld streams need %ld CPUs\n",
			k, k + 1);
		return 2;
	}
	pin(0);
	for (i = 0; i < k; i++) {
		struct streamer *s = &streamers[i];

		s->cpu = i + 1;
		s->bytes = o->stream;
		s->line = o->line;
		s->stop = &stop;
		errno = pthread_create(&s->thread, NULL, stream, s);
		if (errno)
			die("pthread_create");
	}
	for (i = 0; i < k; i++)
		while (!__atomic_load_n(&streamers[i].started, __ATOMIC_ACQUIRE))
			sched_yield();
	ns = time_chase(bytes, o->line, &loads);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < k; i++)
		pthread_join(streamers[i].thread, NULL);
	printf("contend streams=%ld bytes=%lu loads=%ld ns=%llu\n", k, bytes,
	       loads, (unsigned long long)ns);
	return 0;
}

/* A byte count with an optional K or M suffix (as stress-ng's sizes). */
static unsigned long parse_size(const char *text)
{
	char *end;
	unsigned long v, unit = 1;

	errno = 0;
	v = strtoul(text, &end, 0);
	if (*end == 'K' || *end == 'k')
		unit = 1ul << 10;
	else if (*end == 'M' || *end == 'm')
		unit = 1ul << 20;
	if (unit != 1)
		end++;
	if (errno || end == text || *end || v == 0 || v > (1ul << 40) / unit) {
		fprintf(stderr, "tandem-membench: bad size '%s'\n", text);
		exit(2);
	}
	return v * unit;
}

static int run_read(struct opts *o, int argc, char **argv)
{
	char *memory;
	unsigned long bytes, off;
	uint64_t sum = 0;

	if (argc != 1)
		show_usage();
	bytes = parse_size(argv[0]);
	memory = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (memory == MAP_FAILED)
		die("mmap");
	/* Fault the pages in (each its own), so that the loop only reads. */
	for (off = 0; off < bytes; off += PAGE)
		memory[off] = 1;
	/* Atomic loads: the compiler keeps every one of them. */
	for (;;)
		for (off = 0; off < bytes; off += o->line)
			sum += __atomic_load_n(&memory[off], __ATOMIC_RELAXED);
	return (int)sum;
}

/* @pages views of one physical page, side by side; NULL on failure. */
static char *map_views(unsigned long pages)
{
	char path[] = "/tmp/tandem-membench-XXXXXX";
	char *base;
	unsigned long i;
	int fd = mkstemp(path);

	if (fd < 0)
		die("mkstemp");
	unlink(path);
	if (ftruncate(fd, PAGE))
		die("ftruncate");
	base = mmap(NULL, pages * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	if (base == MAP_FAILED)
		die("mmap");
	for (i = 0; i < pages; i++)
		if (mmap(base + i * PAGE, PAGE, PROT_READ,
			 MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
			die("mmap view");
	close(fd);
	return base;
}

/* One load from each of @pages pages, @rounds times; returns the sum. */
static uint64_t visit(const char *base, unsigned long pages, long rounds)
{
	uint64_t sum = 0;
	unsigned long i;

	for (; rounds > 0; rounds--)
		for (i = 0; i < pages; i++)
			sum += __atomic_load_n((const uint64_t *)(base + i * PAGE),
					       __ATOMIC_RELAXED);
	return sum;
}

static int run_tlb(struct opts *o, int argc, char **argv)
{
	int i;

	pin(o->cpu);
	for (i = 0; i < argc; i++) {
		unsigned long pages = parse_number(argv[i]);
		long rounds = (o->loads + pages - 1) / pages;
		char *base = map_views(pages);
		uint64_t t0, t1, sum;

		sum = visit(base, pages, 1);
		window_open();
		t0 = counter();
		sum += visit(base, pages, rounds);
		t1 = counter();
		window_close();
		asm volatile("" : : "r"(sum));
		munmap(base, pages * PAGE);
		printf("tlb pages=%lu loads=%ld ns=%llu\n", pages,
		       rounds * (long)pages,
		       (unsigned long long)ticks_to_ns(t1 - t0));
	}
	return 0;
}

/* The same on every core at once (hint #114 opens, hint #115 closes). */
static int run_window(int argc, char **argv)
{
	if (argc != 1)
		show_usage();
	if (!strcmp(argv[0], "open"))
		asm volatile("hint #114" : : : "memory");
	else if (!strcmp(argv[0], "close"))
		asm volatile("hint #115" : : : "memory");
	else
		show_usage();
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {
		.cpu = 0, .line = 64, .loads = DEFAULT_LOADS,
		.stream = DEFAULT_STREAM,
	};
	const char *what;
	int c;

	if (argc < 2)
		show_usage();
	what = argv[1];
	argv++;
	argc--;
	while ((c = getopt(argc, argv, "c:l:n:s:")) != -1) {
		switch (c) {
		case 'c':
			o.cpu = (int)strtol(optarg, NULL, 0);
			break;
		case 'l':
			o.line = parse_number(optarg);
			break;
		case 'n':
			o.loads = (long)parse_number(optarg);
			break;
		case 's':
			o.stream = parse_number(optarg);
			break;
		default:
			show_usage();
		}
	}
	if (o.line < sizeof(void *) || PAGE % o.line || (o.line & (o.line - 1)))
		show_usage();
	asm volatile("mrs %0, cntfrq_el0" : "=r"(counter_hz));
	setvbuf(stdout, NULL, _IOLBF, 0);
	argc -= optind;
	argv += optind;
	if (argc < 1)
		show_usage();
	if (!strcmp(what, "chase"))
		return run_chase(&o, argc, argv);
	if (!strcmp(what, "contend"))
		return run_contend(&o, argc, argv);
	if (!strcmp(what, "tlb"))
		return run_tlb(&o, argc, argv);
	if (!strcmp(what, "read"))
		return run_read(&o, argc, argv);
	if (!strcmp(what, "window"))
		return run_window(argc, argv);
	show_usage();
	return 2;
}
