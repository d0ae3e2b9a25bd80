// SPDX-License-Identifier: GPL-2.0
/*
 * tandem-rpc: calls into the Tandem RTOS through /dev/tandem-rpc.
 *
 *   tandem-rpc call [-c CH] [-m MODE] [-t MS] [-a MS] [-u] [-U S] [-R] send|echo|stall LEN
 *   tandem-rpc bench [-c CH] [-m MODE] [-n N] [-C CPU] [-d US] LEN...
 *   tandem-rpc pair [-c CH] [-m MODE] [-n N] [-w ITERS] [-C CPU] LEN
 *   tandem-rpc stress [-j CLIENTS] [-n CALLS] [-k CHANNELS] [-s MAXLEN]
 *
 * MODE is busy, block or auto (default). call prints one line and exits 0
 * on success, else 1 with the error's name; bench prints one line per call
 * ("rt LEN MODE ROUND_TRIP_NS SERVER_NS NOTIFY_NS": see tandem_rpc_uapi.h),
 * pausing US microseconds before each (-d); pair runs LEN-byte calls beside an independent
 * CPU-bound process on the same CPU and prints the time until both are done
 * (paper 002's metric); stress runs concurrent echo clients on several
 * channels and checks every answer is the client's own data.
 *
 * call -U S (tests; root): the call's data is a userfaultfd page nobody
 * serves for S seconds (then zeros), so the driver's copy of the caller's
 * data waits in a page fault that long. call -R (tests): the data is
 * read-only, so an echo's answer cannot be written back (EFAULT).
 */
#define _GNU_SOURCE
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "tandem_rpc.h"

static const char * const mode_names[] = { "auto", "busy", "block" };

static void die_usage(void)
{
	fprintf(stderr,
		"usage: tandem-rpc call [-c CH] [-m MODE] [-t MS] [-a MS] [-u] [-U S] [-R] send|echo|stall LEN\n"
		"       tandem-rpc bench [-c CH] [-m MODE] [-n N] [-C CPU] [-d US] LEN...\n"
		"       tandem-rpc pair [-c CH] [-m MODE] [-n N] [-w ITERS] [-C CPU] LEN\n"
		"       tandem-rpc stress [-j CLIENTS] [-n CALLS] [-k CHANNELS] [-s MAXLEN]\n"
		"MODE: busy, block or auto\n");
	exit(2);
}

static long long to_number(const char *s)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 0);
	if (errno || !*s || *end) {
		fprintf(stderr, "tandem-rpc: '%s' is not a number\n", s);
		exit(2);
	}
	return v;
}

static unsigned int mode_of(const char *s)
{
	unsigned int i;

	for (i = 0; i < 3; i++)
		if (!strcmp(s, mode_names[i]))
			return i;
	fprintf(stderr, "tandem-rpc: mode '%s': busy, block or auto\n", s);
	exit(2);
}

static int open_or_die(void)
{
	int fd = tandem_rpc_open();

	if (fd < 0) {
		perror("tandem-rpc: " TANDEM_RPC_DEVICE);
		exit(1);
	}
	return fd;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void fill(unsigned char *buf, size_t len, unsigned int seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = x >> 24;
	}
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		perror("tandem-rpc: sched_setaffinity");
		exit(1);
	}
}

struct opts {
	unsigned int channel, mode, timeout, arg, flags, calls, clients, channels;
	long long iters, maxlen, pause_us, uffd_s;
	int cpu, read_only;
};

static int parse(int argc, char **argv, struct opts *o)
{
	int i = 2;

	while (i < argc && argv[i][0] == '-' && argv[i][1] && !argv[i][2]) {
		char f = argv[i][1];

		if (f == 'u') {
			o->flags |= TANDEM_RPC_F_UNCHECKED;
			i++;
			continue;
		}
		if (f == 'R') {
			o->read_only = 1;
			i++;
			continue;
		}
		if (i + 1 >= argc)
			die_usage();
		if (f == 'm') {
			o->mode = mode_of(argv[i + 1]);
		} else {
			long long v = to_number(argv[i + 1]);

			switch (f) {
			case 'c':
				o->channel = v;
				break;
			case 't':
				o->timeout = v;
				break;
			case 'a':
				o->arg = v;
				break;
			case 'n':
				o->calls = v;
				break;
			case 'j':
				o->clients = v;
				break;
			case 'k':
				o->channels = v;
				break;
			case 's':
				o->maxlen = v;
				break;
			case 'w':
				o->iters = v;
				break;
			case 'C':
				o->cpu = v;
				break;
			case 'd':
				if (v < 0 || v > 1000000)
					die_usage();
				o->pause_us = v;
				break;
			case 'U':
				if (v < 1 || v > 3600)
					die_usage();
				o->uffd_s = v;
				break;
			default:
				die_usage();
			}
		}
		i += 2;
	}
	return i;
}

struct uffd_hold {
	int fd;
	unsigned int seconds;
};

/* Lets the faults wait, then closes the userfaultfd: they get zero pages. */
static void *uffd_release_later(void *arg)
{
	struct uffd_hold *h = arg;

	sleep(h->seconds);
	fprintf(stderr, "tandem-rpc: releasing the userfaultfd after %u s\n", h->seconds);
	close(h->fd);
	return NULL;
}

/*
 * A buffer of len bytes whose pages are missing and registered with a
 * userfaultfd that serves nothing: any access waits in the fault until a
 * thread closes the userfaultfd, `seconds` from now.
 */
static unsigned char *uffd_buffer(size_t len, unsigned int seconds)
{
	static struct uffd_hold hold;
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;
	size_t size = (len + 4095) & ~(size_t)4095;
	pthread_t thread;
	void *buf;
	int fd;

	fd = syscall(SYS_userfaultfd, O_CLOEXEC);
	if (fd < 0 || ioctl(fd, UFFDIO_API, &api)) {
		perror("tandem-rpc: userfaultfd");
		exit(1);
	}
	buf = mmap(NULL, size ? size : 4096, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		perror("tandem-rpc: mmap");
		exit(1);
	}
	memset(&reg, 0, sizeof(reg));
	reg.range.start = (uintptr_t)buf;
	reg.range.len = size ? size : 4096;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(fd, UFFDIO_REGISTER, &reg)) {
		perror("tandem-rpc: UFFDIO_REGISTER");
		exit(1);
	}
	hold.fd = fd;
	hold.seconds = seconds;
	if (pthread_create(&thread, NULL, uffd_release_later, &hold)) {
		fprintf(stderr, "tandem-rpc: cannot start a thread\n");
		exit(1);
	}
	pthread_detach(thread);
	return buf;
}

static int cmd_call(int argc, char **argv, struct opts *o)
{
	struct tandem_rpc_call c;
	unsigned char *buf;
	long long len;
	int i = parse(argc, argv, o), fd, ret;

	if (argc - i != 2)
		die_usage();
	len = to_number(argv[i + 1]);
	memset(&c, 0, sizeof(c));
	if (!strcmp(argv[i], "send"))
		c.op = TANDEM_RPC_SEND;
	else if (!strcmp(argv[i], "echo"))
		c.op = TANDEM_RPC_ECHO;
	else if (!strcmp(argv[i], "stall"))
		c.op = TANDEM_RPC_STALL;
	else
		die_usage();
	size_t used = len > 0 && len < TANDEM_RPC_MAX_DATA ? len : (len > 0 ? TANDEM_RPC_MAX_DATA : 0);
	uint32_t want;

	buf = calloc(1, TANDEM_RPC_MAX_DATA);
	if (!buf)
		return 1;
	if (o->uffd_s) {
		/* The data comes as zero pages once the fault is released. */
		want = tandem_rpc_checksum(buf, used);
		buf = uffd_buffer(used, o->uffd_s);
	} else {
		fill(buf, used, o->channel + 1);
		want = tandem_rpc_checksum(buf, used);
	}
	if (o->read_only) {
		void *ro = mmap(NULL, TANDEM_RPC_MAX_DATA, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (ro == MAP_FAILED) {
			perror("tandem-rpc: mmap");
			return 1;
		}
		memcpy(ro, buf, used);
		if (mprotect(ro, TANDEM_RPC_MAX_DATA, PROT_READ)) {
			perror("tandem-rpc: mprotect");
			return 1;
		}
		buf = ro;
	}

	fd = open_or_die();
	c.channel = o->channel;
	c.data = (uintptr_t)buf;
	c.len = len;
	c.mode = o->mode;
	c.arg = o->arg;
	c.timeout_ms = o->timeout;
	c.flags = o->flags;
	ret = tandem_rpc_call(fd, &c);
	if (ret) {
		printf("error %s (%d) status %d\n", strerrorname_np(-ret), -ret, c.status);
		return 1;
	}
	const char *match = c.op == TANDEM_RPC_STALL ? "n/a" :
			    c.checksum == want ? "match" : "MISMATCH";
	unsigned char *sent = malloc(used ? used : 1);

	if (c.op == TANDEM_RPC_ECHO && sent) {
		if (o->uffd_s)
			memset(sent, 0, used);
		else
			fill(sent, used, o->channel + 1);
		if (memcmp(sent, buf, used))
			match = "ECHO-MISMATCH";
	}
	free(sent);
	printf("ok mode %s core %u seq %llu len %u round_trip_ns %llu server_ns %llu checksum %s\n",
	       mode_names[c.mode], c.core, (unsigned long long)c.seq, c.answer_len,
	       (unsigned long long)c.round_trip_ns, (unsigned long long)c.server_ns, match);
	return strcmp(match, "match") && strcmp(match, "n/a") ? 1 : 0;
}

static int cmd_bench(int argc, char **argv, struct opts *o)
{
	unsigned char *buf = calloc(1, TANDEM_RPC_MAX_DATA);
	int i = parse(argc, argv, o), fd = open_or_die();
	struct tandem_rpc_call c;

	if (i >= argc || !buf)
		die_usage();
	pin(o->cpu);
	for (; i < argc; i++) {
		long long len = to_number(argv[i]);

		for (unsigned int n = 0; n < o->calls + 1; n++) {
			/* Let the server go idle again, so the doorbell wakes it. */
			if (o->pause_us)
				usleep(o->pause_us);
			memset(&c, 0, sizeof(c));
			c.timeout_ms = o->timeout;
			int ret = tandem_rpc_send_buf(fd, o->channel, buf, len, o->mode, &c);

			if (ret) {
				printf("error %s (%d) len %lld\n", strerrorname_np(-ret), -ret, len);
				return 1;
			}
			/* The first call of each size warms caches and paths. */
			if (n)
				printf("rt %lld %s %llu %llu %llu\n", len, mode_names[c.mode],
				       (unsigned long long)c.round_trip_ns,
				       (unsigned long long)c.server_ns,
				       (unsigned long long)c.notify_ns);
		}
	}
	return 0;
}

static void spin_work(long long iters)
{
	unsigned long long acc = 0;

	/* The empty asm keeps the compiler from folding the loop away. */
	for (long long k = 0; k < iters; k++) {
		acc += k;
		__asm__ __volatile__("" : "+r"(acc));
	}
}

static int cmd_pair(int argc, char **argv, struct opts *o)
{
	int i = parse(argc, argv, o), status, fd;
	unsigned char *buf = calloc(1, TANDEM_RPC_MAX_DATA);
	struct tandem_rpc_call c;
	double start, rpc_done, all_done;
	long long len;
	pid_t child;

	if (argc - i != 1 || !buf)
		die_usage();
	len = to_number(argv[i]);
	memset(&c, 0, sizeof(c));
	c.mode = o->mode;
	fd = open_or_die();
	pin(o->cpu);
	start = now_ms();
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		spin_work(o->iters);
		_exit(0);
	}
	for (unsigned int n = 0; n < o->calls; n++) {
		memset(&c, 0, sizeof(c));
		c.timeout_ms = o->timeout;
		int ret = tandem_rpc_send_buf(fd, o->channel, buf, len, o->mode, &c);

		if (ret) {
			printf("error %s (%d)\n", strerrorname_np(-ret), -ret);
			kill(child, SIGKILL);
			waitpid(child, &status, 0);
			return 1;
		}
	}
	rpc_done = now_ms();
	waitpid(child, &status, 0);
	all_done = now_ms();
	printf("pair %lld %s %.3f %.3f\n", len, mode_names[c.mode], all_done - start,
	       rpc_done - start);
	return 0;
}

/* One stress client: echo calls on its channel, every answer checked. */
static int stress_client(unsigned int id, struct opts *o)
{
	unsigned char *out = malloc(o->maxlen + 1), *in = malloc(o->maxlen + 1);
	unsigned int channel = id % o->channels, bad = 0;
	int fd = open_or_die();
	struct tandem_rpc_call c;

	if (!out || !in)
		return 1;
	for (unsigned int n = 0; n < o->calls; n++) {
		size_t len = (id * 7919u + n * 104729u) % (o->maxlen + 1);

		fill(out, len, id * 65536 + n);
		memcpy(in, out, len);
		memset(&c, 0, sizeof(c));
		c.channel = channel;
		c.op = TANDEM_RPC_ECHO;
		c.data = (uintptr_t)in;
		c.len = len;
		c.mode = (id + n) % 3;
		c.timeout_ms = 10000;
		int ret = tandem_rpc_call(fd, &c);

		if (ret) {
			printf("client %u call %u: %s\n", id, n, strerrorname_np(-ret));
			bad++;
		} else if (c.checksum != tandem_rpc_checksum(out, len) ||
			   c.answer_len != len || memcmp(in, out, len)) {
			printf("client %u call %u: answer is not its own data\n", id, n);
			bad++;
		}
	}
	return bad ? 1 : 0;
}

static int cmd_stress(int argc, char **argv, struct opts *o)
{
	unsigned int failed = 0, j;
	int status;

	if (parse(argc, argv, o) != argc || !o->clients || !o->channels ||
	    o->maxlen < 0 || o->maxlen > TANDEM_RPC_MAX_DATA)
		die_usage();
	for (j = 0; j < o->clients; j++) {
		pid_t p = fork();

		if (p < 0)
			return 1;
		if (p == 0)
			_exit(stress_client(j, o));
	}
	for (j = 0; j < o->clients; j++)
		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			failed++;
	printf("stress clients %u calls %u channels %u failed_clients %u\n",
	       o->clients, o->calls, o->channels, failed);
	return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct opts o = {
		.calls = 10, .clients = 8, .channels = TANDEM_RPC_CHANNELS,
		.maxlen = 4096, .iters = 1000000, .cpu = -1,
	};

	if (argc < 2)
		die_usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[1], "call"))
		return cmd_call(argc, argv, &o);
	if (!strcmp(argv[1], "bench"))
		return cmd_bench(argc, argv, &o);
	if (!strcmp(argv[1], "pair"))
		return cmd_pair(argc, argv, &o);
	if (!strcmp(argv[1], "stress"))
		return cmd_stress(argc, argv, &o);
	die_usage();
	return 2;
}
