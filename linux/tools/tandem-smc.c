// SPDX-License-Identifier: GPL-2.0
/*
 * tandem-smc: issue raw SMCs through the tandem driver's debugfs file.
 *
 *   tandem-smc call FID [ARG1 .. ARG7]   print x0..x3 of one call
 *   tandem-smc fuzz COUNT [SEED]         random calls; every one must return,
 *                                        unknown IDs with NOT_SUPPORTED (-1)
 *   tandem-smc repeat SECONDS FID [ARG1 .. ARG7]
 *                                        the same call as fast as it goes for
 *                                        SECONDS (a flood, or a storm of SMCs
 *                                        against the RTOS's time); every
 *                                        answer must equal the first
 *
 * The fuzzer never issues the calls that change power state (CPU_ON, CPU_OFF,
 * SYSTEM_OFF, SYSTEM_RESET): with random arguments they would start a core on
 * garbage or stop the machine, which tests nothing about robustness.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tandem_abi.h"

#define SMC_FILE "/sys/kernel/debug/tandem/smc"

static const uint32_t implemented[] = { TANDEM_SMC_IMPLEMENTED_IDS };
static const uint32_t power_changing[] = {
	TANDEM_PSCI_CPU_ON_32, TANDEM_PSCI_CPU_ON_64, TANDEM_PSCI_CPU_OFF,
	TANDEM_PSCI_SYSTEM_OFF, TANDEM_PSCI_SYSTEM_RESET,
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static int in_list(uint32_t fid, const uint32_t *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == fid)
			return 1;
	return 0;
}

static int issue_smc(int fd, const uint64_t *a, int nargs, uint64_t r[4])
{
	char buf[256];
	int len = 0;
	ssize_t got;

	for (int i = 0; i < nargs; i++)
		len += snprintf(buf + len, sizeof(buf) - len, "%#" PRIx64 " ", a[i]);
	if (write(fd, buf, len) != len) {
		fprintf(stderr, "tandem-smc: write %s: %s\n", SMC_FILE, strerror(errno));
		return -1;
	}
	got = read(fd, buf, sizeof(buf) - 1);
	if (got <= 0) {
		fprintf(stderr, "tandem-smc: read %s: %s\n", SMC_FILE,
			got ? strerror(errno) : "empty");
		return -1;
	}
	buf[got] = '\0';
	if (sscanf(buf, "%" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64,
		   &r[0], &r[1], &r[2], &r[3]) != 4) {
		fprintf(stderr, "tandem-smc: unexpected answer '%s'\n", buf);
		return -1;
	}
	return 0;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1DULL;
}

static int run_fuzz(int fd, long count, uint64_t seed)
{
	/* Owner ranges the monitor serves or must refuse cleanly. */
	static const uint32_t owners[] = { 0, 1, 2, 3, 4, 5, 6, 48, 50, 63 };
	long unknown = 0, known = 0, failures = 0;
	uint64_t a[8], r[4];

	for (long i = 0; i < count; i++) {
		uint32_t fid;

		do {
			if (i % 2 == 0)
				fid = (uint32_t)xorshift(&seed);
			else
				fid = 0x80000000u |
				      (owners[xorshift(&seed) % ARRAY_SIZE(owners)] << 24) |
				      ((uint32_t)xorshift(&seed) & 0x400000ffu);
		} while (in_list(fid, power_changing, ARRAY_SIZE(power_changing)));
		a[0] = fid;
		for (int j = 1; j < 8; j++)
			a[j] = xorshift(&seed);
		if (issue_smc(fd, a, 8, r))
			return 2;
		if (in_list(fid, implemented, ARRAY_SIZE(implemented))) {
			known++;
		} else {
			unknown++;
			if ((int64_t)r[0] != TANDEM_SMC_NOT_SUPPORTED) {
				failures++;
				fprintf(stderr, "fuzz: unknown fid %#x answered %" PRId64 "\n",
					fid, (int64_t)r[0]);
			}
		}
		if ((i + 1) % 2000 == 0)
			fprintf(stderr, "fuzz: %ld/%ld calls\n", i + 1, count);
	}
	printf("fuzz: %ld calls returned (%ld unknown, %ld implemented), %ld failures\n",
	       count, unknown, known, failures);
	return failures ? 1 : 0;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int run_repeat(int fd, double seconds, const uint64_t *a, int n)
{
	double end = now_s() + seconds;
	uint64_t first[4], r[4];
	long calls = 1, differ = 0;

	if (issue_smc(fd, a, n, first))
		return 2;
	while (now_s() < end) {
		if (issue_smc(fd, a, n, r))
			return 2;
		calls++;
		if (memcmp(r, first, sizeof(r)))
			differ++;
	}
	printf("repeat: %ld calls in %.1f s, x0 %" PRId64 ", %ld answers differed\n",
	       calls, seconds, (int64_t)first[0], differ);
	return differ ? 1 : 0;
}

static void print_usage(void)
{
	fprintf(stderr,
		"usage: tandem-smc call FID [ARG1 .. ARG7]\n"
		"       tandem-smc fuzz COUNT [SEED]\n"
		"       tandem-smc repeat SECONDS FID [ARG1 .. ARG7]\n");
	exit(2);
}

/* FID and its arguments from argv into a; returns how many, or -1. */
static int parse_call(int argc, char **argv, uint64_t a[8])
{
	if (argc < 1 || argc > 8)
		print_usage();
	for (int i = 0; i < argc; i++) {
		char *end;

		errno = 0;
		a[i] = strtoull(argv[i], &end, 0);
		if (errno || *end) {
			fprintf(stderr, "tandem-smc: bad number '%s'\n", argv[i]);
			return -1;
		}
	}
	return argc;
}

int main(int argc, char **argv)
{
	uint64_t a[8] = { 0 }, r[4];
	int fd;

	if (argc < 3)
		print_usage();
	fd = open(SMC_FILE, O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "tandem-smc: open %s: %s (driver loaded? root?)\n",
			SMC_FILE, strerror(errno));
		return 2;
	}
	if (!strcmp(argv[1], "call")) {
		int n = parse_call(argc - 2, argv + 2, a);

		if (n < 0 || issue_smc(fd, a, n, r))
			return 2;
		printf("%" PRId64 " %#" PRIx64 " %#" PRIx64 " %#" PRIx64 "\n",
		       (int64_t)r[0], r[1], r[2], r[3]);
		return 0;
	}
	if (!strcmp(argv[1], "fuzz")) {
		long count = strtol(argv[2], NULL, 0);
		uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 0) : 0x7a4d;

		if (count <= 0)
			print_usage();
		return run_fuzz(fd, count, seed ? seed : 1);
	}
	if (!strcmp(argv[1], "repeat")) {
		char *end;
		double seconds = strtod(argv[2], &end);
		int n;

		if (*end || !(seconds > 0) || argc < 4)
			print_usage();
		n = parse_call(argc - 3, argv + 3, a);
		return n < 0 ? 2 : run_repeat(fd, seconds, a, n);
	}
	print_usage();
	return 2;
}
