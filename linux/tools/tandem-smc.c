// SPDX-License-Identifier: GPL-2.0
/*
 * tandem-smc: issue raw SMCs through the tandem driver's debugfs file.
 *
 *   tandem-smc call FID [ARG1 .. ARG7]   print x0..x3 of one call (and, for
 *                                        an SMC64 general query, refused, a
 *                                        hint at its SMC32 form)
 *   tandem-smc uid                       the SiP range's Call UID, Revision
 *                                        and Call Count queries (SMCCC): the
 *                                        firmware's UUID, "(Tandem)" if it
 *                                        is Tandem's, and its revision
 *   tandem-smc fuzz COUNT [SEED]         random calls; every one must return,
 *                                        unknown IDs with NOT_SUPPORTED (-1)
 *   tandem-smc repeat SECONDS FID [ARG1 .. ARG7]
 *                                        the same call as fast as it goes for
 *                                        SECONDS (a flood, or a storm of SMCs
 *                                        against the RTOS's time); every
 *                                        answer must equal the first
 *   tandem-smc scribble-rpc SECONDS CH   rewrite channel CH's request (via
 *                                        /dev/mem) while the RTOS's server
 *                                        reads it; every answer must be one
 *                                        the server can give
 *   tandem-smc cpu-on-loop SECONDS MPIDR ENTRY
 *                                        PSCI CPU_ON of the core MPIDR names
 *                                        at ENTRY, again and again for
 *                                        SECONDS (with an ENTRY that turns
 *                                        the core off again, the monitor
 *                                        rings that core's doorbell for every
 *                                        call it accepts); counts the answers
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
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "tandem_abi.h"

#define SMC_FILE "/sys/kernel/debug/tandem/smc"
#define REGION_BASE_FILE "/sys/bus/platform/devices/tandem/region_base"

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

/*
 * A function number: mostly low ones, where services put their calls, and
 * one in four among SMCCC's general queries (0xff00..0xff0f).
 */
static uint32_t random_number(uint64_t *seed)
{
	if (xorshift(seed) % 4 == 0)
		return 0xff00u | ((uint32_t)xorshift(seed) & 0xfu);
	return (uint32_t)xorshift(seed) & 0xffu;
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
				      ((uint32_t)xorshift(&seed) & 0x40000000u) |
				      random_number(&seed);
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

/* The shared region's physical base, as the driver found it. */
static int region_base(uint64_t *base)
{
	FILE *f = fopen(REGION_BASE_FILE, "r");
	int ok;

	if (!f) {
		fprintf(stderr, "tandem-smc: open %s: %s\n", REGION_BASE_FILE, strerror(errno));
		return -1;
	}
	ok = fscanf(f, "%" SCNx64, base) == 1;
	fclose(f);
	if (!ok)
		fprintf(stderr, "tandem-smc: %s: not an address\n", REGION_BASE_FILE);
	return ok ? 0 : -1;
}

/* A field of the channel: read and written whole, once per access. */
#define GET(ch, off, type) __atomic_load_n((type *)((ch) + (off)), __ATOMIC_RELAXED)
#define PUT(ch, off, type, v) __atomic_store_n((type *)((ch) + (off)), (v), __ATOMIC_RELAXED)

/*
 * One value of each request field the race draws from: sizes the server
 * accepts and sizes it must refuse, operations it knows and junk, stall
 * arguments of at most a millisecond or far too long (a valid long stall
 * would only make the server wait, by design).
 */
static void scribble_request(uint8_t *ch, uint64_t *seed)
{
	static const uint32_t ops[] = {
		TANDEM_RPC_OP_SEND, TANDEM_RPC_OP_ECHO, TANDEM_RPC_OP_STALL, 0, 4, 0xffffffffu,
	};
	static const uint32_t lens[] = {
		0, 1, 8, 63, 4096, TANDEM_RPC_MAX_DATA, TANDEM_RPC_MAX_DATA + 1, 0x7fffffffu,
		0xffffffffu,
	};
	static const uint64_t args[] = { 0, 1, TANDEM_RPC_MAX_STALL_MS + 1, UINT64_MAX };
	uint64_t r = xorshift(seed);

	PUT(ch, TANDEM_RPC_REQ_OP, uint32_t, ops[r % ARRAY_SIZE(ops)]);
	PUT(ch, TANDEM_RPC_REQ_LEN, uint32_t, lens[(r >> 8) % ARRAY_SIZE(lens)]);
	PUT(ch, TANDEM_RPC_REQ_ARG, uint64_t, args[(r >> 16) % ARRAY_SIZE(args)]);
	PUT(ch, TANDEM_RPC_CONTROL_SIZE + 8 * ((r >> 24) % (TANDEM_RPC_MAX_DATA / 8)),
	    uint64_t, r);
}

/*
 * A Linux that rewrites its RPC requests while the RTOS reads them: each
 * round writes a new sequence number, rings the channel's server and, until
 * the answer for that number comes, keeps rewriting the operation, length,
 * argument and data. The server reads each field once and uses only its
 * copy, so every answer must be one it can give (OK with at most
 * RPC_MAX_DATA bytes, or a refusal), and each must come within a second.
 * The sequence numbers used are far from the driver's, whose next call on
 * the channel then still differs from the last one answered.
 */
static int run_scribble(int fd, double seconds, long channel)
{
	long rounds = 0, ok = 0, refused = 0, failures = 0;
	double end = now_s() + seconds;
	uint64_t base, seed = 0x5c81bb1e, a[2] = { TANDEM_SMC_RPC_NOTIFY, channel }, r[4];
	uint8_t *ch;
	uint32_t seq;
	void *map;
	int mem;

	if (channel < 0 || channel >= TANDEM_RPC_CHANNELS) {
		fprintf(stderr, "tandem-smc: channel %ld: not 0..%d\n", channel,
			TANDEM_RPC_CHANNELS - 1);
		return 2;
	}
	if (region_base(&base))
		return 2;
	mem = open("/dev/mem", O_RDWR | O_SYNC);
	if (mem < 0) {
		fprintf(stderr, "tandem-smc: open /dev/mem: %s\n", strerror(errno));
		return 2;
	}
	map = mmap(NULL, TANDEM_RPC_CHANNEL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, mem,
		   base + TANDEM_RPC_OFFSET + channel * TANDEM_RPC_CHANNEL_SIZE);
	close(mem);
	if (map == MAP_FAILED) {
		fprintf(stderr, "tandem-smc: mmap of channel %ld: %s\n", channel, strerror(errno));
		return 2;
	}
	ch = map;
	seq = GET(ch, TANDEM_RPC_REQ_SEQ, uint32_t) + 0x40000000u;
	while (now_s() < end) {
		double deadline = now_s() + 1.0;
		uint32_t status, len;

		seq++;
		scribble_request(ch, &seed);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		PUT(ch, TANDEM_RPC_REQ_SEQ, uint32_t, seq);
		if (issue_smc(fd, a, 2, r))
			return 2;
		while (GET(ch, TANDEM_RPC_RESP_SEQ, uint32_t) != seq && now_s() < deadline)
			scribble_request(ch, &seed);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		rounds++;
		if (GET(ch, TANDEM_RPC_RESP_SEQ, uint32_t) != seq) {
			failures++;
			fprintf(stderr, "scribble: request %#x not answered within 1 s\n", seq);
			continue;
		}
		status = GET(ch, TANDEM_RPC_RESP_STATUS, uint32_t);
		len = GET(ch, TANDEM_RPC_RESP_LEN, uint32_t);
		if (status == TANDEM_RPC_STATUS_OK && len <= TANDEM_RPC_MAX_DATA) {
			ok++;
		} else if ((int32_t)status == TANDEM_RPC_STATUS_BAD_LENGTH ||
			   (int32_t)status == TANDEM_RPC_STATUS_BAD_OP ||
			   (int32_t)status == TANDEM_RPC_STATUS_BAD_ARG ||
			   (int32_t)status == TANDEM_RPC_STATUS_DISABLED) {
			refused++;
		} else {
			failures++;
			fprintf(stderr, "scribble: request %#x answered status %d, %u bytes\n",
				seq, (int32_t)status, len);
		}
	}
	munmap(map, TANDEM_RPC_CHANNEL_SIZE);
	printf("scribble: %ld requests rewritten while read in %.1f s, %ld served, %ld refused, %ld failures\n",
	       rounds, seconds, ok, refused, failures);
	return failures ? 1 : 0;
}

/*
 * CPU_ON of one core, again and again: accepted while the core is off,
 * ALREADY_ON or ON_PENDING while it comes up and goes off again (its entry
 * calls CPU_OFF), INTERNAL_FAILURE while the monitor stops this Linux.
 * Anything else (a refused address or target) is a failure.
 */
static int run_cpu_on_loop(int fd, double seconds, uint64_t mpidr, uint64_t entry)
{
	uint64_t a[4] = { TANDEM_PSCI_CPU_ON_64, mpidr, entry, 0 }, r[4];
	long calls = 0, accepted = 0, busy = 0, stopping = 0, failures = 0;
	double end = now_s() + seconds;

	while (now_s() < end) {
		if (issue_smc(fd, a, 4, r))
			return 2;
		calls++;
		switch ((int64_t)r[0]) {
		case TANDEM_SMC_SUCCESS:
			accepted++;
			break;
		case TANDEM_SMC_ALREADY_ON:
		case TANDEM_SMC_ON_PENDING:
			busy++;
			break;
		case TANDEM_SMC_INTERNAL_FAILURE:
			stopping++;
			break;
		default:
			if (!failures++)
				fprintf(stderr, "cpu-on-loop: CPU_ON(%#" PRIx64 ", %#" PRIx64 ") answered %" PRId64 "\n",
					mpidr, entry, (int64_t)r[0]);
		}
	}
	printf("cpu-on-loop: %ld calls in %.1f s, %ld accepted, %ld on or pending, %ld while stopping, %ld failures\n",
	       calls, seconds, accepted, busy, stopping, failures);
	return failures ? 1 : 0;
}

static void print_usage(void)
{
	fprintf(stderr,
		"usage: tandem-smc call FID [ARG1 .. ARG7]\n"
		"       tandem-smc uid\n"
		"       tandem-smc fuzz COUNT [SEED]\n"
		"       tandem-smc repeat SECONDS FID [ARG1 .. ARG7]\n"
		"       tandem-smc scribble-rpc SECONDS CH\n"
		"       tandem-smc cpu-on-loop SECONDS MPIDR ENTRY\n");
	exit(2);
}

/*
 * SMCCC's general queries of the SiP range. The UID comes back in w0..w3,
 * four bytes of the UUID each, little-endian; it is printed in the usual
 * text form.
 */
#define SMCCC_FAST_CALL 0x80000000u
#define SMCCC_SMC64 0x40000000u

/*
 * A fast call's SMC64 ID with a general query's function number
 * (0xff00..0xffff): SMCCC defines Call Count, Call UID and Revision as
 * SMC32 calls only, so the monitor refuses these like any unknown ID.
 */
static int smc64_general_query(uint64_t fid)
{
	return fid <= UINT32_MAX && (fid & (SMCCC_FAST_CALL | SMCCC_SMC64)) ==
	       (SMCCC_FAST_CALL | SMCCC_SMC64) && (fid & 0xff00u) == 0xff00u;
}

static int run_uid(int fd)
{
	static const uint32_t tandem[4] = {
		TANDEM_SIP_UID_0, TANDEM_SIP_UID_1, TANDEM_SIP_UID_2, TANDEM_SIP_UID_3,
	};
	uint64_t a[1] = { TANDEM_SMC_SIP_CALL_UID }, r[4], rev[4], count[4];
	uint8_t uuid[16];
	int ours = 1;

	if (issue_smc(fd, a, 1, r))
		return 2;
	if ((int64_t)r[0] == TANDEM_SMC_NOT_SUPPORTED) {
		printf("no SiP UID (Call UID answered NOT_SUPPORTED)\n");
		return 1;
	}
	for (int i = 0; i < 4; i++) {
		for (int b = 0; b < 4; b++)
			uuid[4 * i + b] = (uint8_t)(r[i] >> (8 * b));
		ours &= (uint32_t)r[i] == tandem[i];
	}
	a[0] = TANDEM_SMC_SIP_REVISION;
	if (issue_smc(fd, a, 1, rev))
		return 2;
	a[0] = TANDEM_SMC_SIP_CALL_COUNT;
	if (issue_smc(fd, a, 1, count))
		return 2;
	for (int i = 0; i < 16; i++)
		printf("%02x%s", uuid[i], i == 3 || i == 5 || i == 7 || i == 9 ? "-" : "");
	printf(" %s revision %" PRId64 ".%" PRId64 " calls %" PRId64 "\n",
	       ours ? "(Tandem)" : "(not Tandem)", (int64_t)rev[0], (int64_t)rev[1],
	       (int64_t)count[0]);
	return 0;
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

	if (argc < 3 && !(argc == 2 && !strcmp(argv[1], "uid")))
		print_usage();
	fd = open(SMC_FILE, O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "tandem-smc: open %s: %s (driver loaded? root?)\n",
			SMC_FILE, strerror(errno));
		return 2;
	}
	if (!strcmp(argv[1], "uid"))
		return run_uid(fd);
	if (!strcmp(argv[1], "call")) {
		int n = parse_call(argc - 2, argv + 2, a);

		if (n < 0 || issue_smc(fd, a, n, r))
			return 2;
		printf("%" PRId64 " %#" PRIx64 " %#" PRIx64 " %#" PRIx64 "\n",
		       (int64_t)r[0], r[1], r[2], r[3]);
		if ((int64_t)r[0] == TANDEM_SMC_NOT_SUPPORTED && smc64_general_query(a[0])) {
			fflush(stdout);
			fprintf(stderr,
				"tandem-smc: %#" PRIx64 " is the SMC64 form of an SMCCC general query; SMCCC defines them as SMC32: %#" PRIx64 " (or tandem-smc uid)\n",
				a[0], a[0] & ~SMCCC_SMC64);
		}
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
	if (!strcmp(argv[1], "scribble-rpc")) {
		char *end;
		double seconds = strtod(argv[2], &end);

		if (*end || !(seconds > 0) || argc != 4)
			print_usage();
		return run_scribble(fd, seconds, strtol(argv[3], NULL, 0));
	}
	if (!strcmp(argv[1], "cpu-on-loop")) {
		char *end;
		double seconds = strtod(argv[2], &end);

		if (*end || !(seconds > 0) || argc != 5 || parse_call(2, argv + 3, a) < 0)
			print_usage();
		return run_cpu_on_loop(fd, seconds, a[0], a[1]);
	}
	print_usage();
	return 2;
}
