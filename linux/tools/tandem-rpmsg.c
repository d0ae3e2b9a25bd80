// SPDX-License-Identifier: GPL-2.0
/*
 * tandem-rpmsg: talk to the RTOS's RPMsg services from user space, as any
 * RPMsg application would: /dev/rpmsg_ctrl0 makes an endpoint device bound
 * to a service's address (announced by the RTOS's name service: Linux
 * lists it in /sys/bus/rpmsg/devices), then write() sends and read()
 * receives on /dev/rpmsgN.
 *
 *   tandem-rpmsg echo [-s SERVICE] [-n N] [-l LEN]
 *                         N messages of LEN bytes; each answer must be the
 *                         message (exit 0 only then)
 *   tandem-rpmsg call [-s SERVICE] TEXT
 *                         one message, print the answer
 *   tandem-rpmsg bench [-n N] [-C CPU] [-s SERVICE] LEN...
 *                         per LEN, N timed echoes over RPMsg and N over
 *                         /dev/tandem-rpc in block mode, both timed here
 *                         (CLOCK_MONOTONIC around the calls): lines
 *                         "rt rpmsg LEN NS" and
 *                         "rt rpc-block LEN NS DRIVER_NS"
 *   tandem-rpmsg hostile CASE
 *                         (tests, root) break the rules in Linux's send
 *                         ring through /dev/mem and ring the RTOS: CASE is
 *                         index, head, outside, loop, next, indirect or
 *                         write; the RTOS must refuse the session
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/rpmsg.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "tandem_abi.h"
#include "tandem_rpc.h"

#define CTRL_DEVICE "/dev/rpmsg_ctrl0"
#define DEVICES "/sys/bus/rpmsg/devices"
#define ENDPOINTS "/sys/class/rpmsg"
#define SMC_FILE "/sys/kernel/debug/tandem/smc"
#define REGION_BASE_FILE "/sys/bus/platform/devices/tandem/region_base"
#define ANSWER_MS 2000

static int print_usage(void)
{
	fprintf(stderr,
		"usage: tandem-rpmsg echo [-s SERVICE] [-n N] [-l LEN]\n"
		"       tandem-rpmsg call [-s SERVICE] TEXT\n"
		"       tandem-rpmsg bench [-n N] [-C CPU] [-s SERVICE] LEN...\n"
		"       tandem-rpmsg hostile index|head|outside|loop|next|indirect|write\n");
	return 2;
}

/* The first line of a sysfs file, without its newline. */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* The address the RTOS announced SERVICE at. */
static int service_addr(const char *service, uint32_t *addr)
{
	DIR *d = opendir(DEVICES);
	struct dirent *e;
	char path[512], buf[64];
	int found = -1;

	if (!d) {
		fprintf(stderr, "tandem-rpmsg: %s: %s (no RPMsg)\n", DEVICES, strerror(errno));
		return -1;
	}
	while (found && (e = readdir(d))) {
		snprintf(path, sizeof(path), DEVICES "/%s/name", e->d_name);
		if (read_line(path, buf, sizeof(buf)) || strcmp(buf, service))
			continue;
		snprintf(path, sizeof(path), DEVICES "/%s/dst", e->d_name);
		if (!read_line(path, buf, sizeof(buf))) {
			*addr = (uint32_t)strtoul(buf, NULL, 0);
			found = 0;
		}
	}
	closedir(d);
	if (found)
		fprintf(stderr, "tandem-rpmsg: the RTOS announced no service '%s'\n", service);
	return found;
}

/* An endpoint device bound to dst: its open file, or -1. */
static int open_endpoint(uint32_t dst, char *dev, size_t devlen)
{
	struct rpmsg_endpoint_info info;
	char path[512], buf[64];
	struct dirent *e;
	int ctrl, fd = -1;
	DIR *d;

	memset(&info, 0, sizeof(info));
	snprintf(info.name, sizeof(info.name), "tandem-rpmsg-%d", (int)getpid());
	info.src = RPMSG_ADDR_ANY;
	info.dst = dst;
	ctrl = open(CTRL_DEVICE, O_RDWR | O_CLOEXEC);
	if (ctrl < 0) {
		fprintf(stderr, "tandem-rpmsg: %s: %s\n", CTRL_DEVICE, strerror(errno));
		return -1;
	}
	if (ioctl(ctrl, RPMSG_CREATE_EPT_IOCTL, &info)) {
		fprintf(stderr, "tandem-rpmsg: RPMSG_CREATE_EPT_IOCTL: %s\n", strerror(errno));
		close(ctrl);
		return -1;
	}
	close(ctrl);
	d = opendir(ENDPOINTS);
	while (d && fd < 0 && (e = readdir(d))) {
		if (strncmp(e->d_name, "rpmsg", 5) || !strncmp(e->d_name, "rpmsg_ctrl", 10))
			continue;
		snprintf(path, sizeof(path), ENDPOINTS "/%s/name", e->d_name);
		if (read_line(path, buf, sizeof(buf)) || strcmp(buf, info.name))
			continue;
		snprintf(dev, devlen, "/dev/%s", e->d_name);
		fd = open(dev, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			fprintf(stderr, "tandem-rpmsg: %s: %s\n", dev, strerror(errno));
	}
	if (d)
		closedir(d);
	if (fd < 0 && d)
		fprintf(stderr, "tandem-rpmsg: no endpoint device named %s\n", info.name);
	return fd;
}

/*
 * Removes the endpoint device after a session that worked. After a failure
 * (the device may be going away with its driver) only closes: in Linux
 * 6.1, RPMSG_DESTROY_EPT_IOCTL racing the control device's removal destroys
 * the endpoint device twice (an oops in rpmsg_ctrldev_remove).
 */
static void endpoint_close(int fd, int failed)
{
	if (!failed)
		ioctl(fd, RPMSG_DESTROY_EPT_IOCTL);
	close(fd);
}

/* Sends len bytes and reads the answer into ans: its length, or -1. */
static ssize_t round_trip(int fd, const void *msg, size_t len, void *ans, size_t anslen)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	if (write(fd, msg, len) != (ssize_t)len) {
		fprintf(stderr, "tandem-rpmsg: write of %zu bytes: %s\n", len, strerror(errno));
		return -1;
	}
	n = poll(&p, 1, ANSWER_MS);
	if (n <= 0) {
		fprintf(stderr, "tandem-rpmsg: no answer within %d ms\n", ANSWER_MS);
		return -1;
	}
	n = read(fd, ans, anslen);
	if (n < 0)
		fprintf(stderr, "tandem-rpmsg: read: %s\n", strerror(errno));
	return n;
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

struct opts {
	const char *service;
	long n, len, cpu;
};

static int parse(int argc, char **argv, struct opts *o)
{
	int c;

	o->service = "tandem-echo";
	o->n = 1;
	o->len = 64;
	o->cpu = -1;
	optind = 2;
	while ((c = getopt(argc, argv, "s:n:l:C:")) != -1) {
		switch (c) {
		case 's':
			o->service = optarg;
			break;
		case 'n':
			o->n = strtol(optarg, NULL, 0);
			break;
		case 'l':
			o->len = strtol(optarg, NULL, 0);
			break;
		case 'C':
			o->cpu = strtol(optarg, NULL, 0);
			break;
		default:
			return -1;
		}
	}
	if (o->n < 1 || o->len < 1 || o->len > TANDEM_RPMSG_MAX_PAYLOAD) {
		fprintf(stderr, "tandem-rpmsg: N >= 1, 1 <= LEN <= %d\n", TANDEM_RPMSG_MAX_PAYLOAD);
		return -1;
	}
	if (o->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(o->cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			fprintf(stderr, "tandem-rpmsg: CPU %ld: %s\n", o->cpu, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* An endpoint to the service: its file, or -1 (the reason printed). */
static int open_service(const char *service, char *dev, size_t devlen, uint32_t *addr)
{
	if (service_addr(service, addr))
		return -1;
	return open_endpoint(*addr, dev, devlen);
}

static int cmd_echo(int argc, char **argv)
{
	unsigned char msg[TANDEM_RPMSG_MAX_PAYLOAD], ans[TANDEM_RPMSG_MAX_PAYLOAD];
	struct opts o;
	char dev[300];
	uint32_t addr;
	long i, bad = 0;
	int fd;

	if (parse(argc, argv, &o))
		return print_usage();
	fd = open_service(o.service, dev, sizeof(dev), &addr);
	if (fd < 0)
		return 1;
	for (i = 0; i < o.n; i++) {
		ssize_t n;

		for (long j = 0; j < o.len; j++)
			msg[j] = (unsigned char)(i * 31 + j * 7);
		n = round_trip(fd, msg, o.len, ans, sizeof(ans));
		if (n < 0) {
			endpoint_close(fd, 1);
			return 1;
		}
		if (n != o.len || memcmp(msg, ans, o.len))
			bad++;
	}
	endpoint_close(fd, 0);
	if (bad) {
		printf("error %ld of %ld answers differ\n", bad, o.n);
		return 1;
	}
	printf("ok %ld echoes of %ld bytes from '%s' at %#x over %s\n", o.n, o.len, o.service,
	       addr, dev);
	return 0;
}

static int cmd_call(int argc, char **argv)
{
	char ans[TANDEM_RPMSG_MAX_PAYLOAD + 1], dev[300];
	struct opts o;
	uint32_t addr;
	ssize_t n;
	int fd;

	if (parse(argc, argv, &o) || optind != argc - 1)
		return print_usage();
	if (strlen(argv[optind]) > TANDEM_RPMSG_MAX_PAYLOAD) {
		fprintf(stderr, "tandem-rpmsg: at most %d bytes\n", TANDEM_RPMSG_MAX_PAYLOAD);
		return 2;
	}
	fd = open_service(o.service, dev, sizeof(dev), &addr);
	if (fd < 0)
		return 1;
	n = round_trip(fd, argv[optind], strlen(argv[optind]), ans, sizeof(ans) - 1);
	endpoint_close(fd, n < 0);
	if (n < 0)
		return 1;
	ans[n] = 0;
	printf("%s\n", ans);
	return 0;
}

/* One size: N echoes each way, timed around the calls. */
static int bench_size(int fd, int rpc, long len, long n)
{
	unsigned char msg[TANDEM_RPMSG_MAX_PAYLOAD], ans[TANDEM_RPMSG_MAX_PAYLOAD];
	struct tandem_rpc_call c;
	long i;

	for (long j = 0; j < len; j++)
		msg[j] = (unsigned char)(j * 13 + len);
	/* A warm-up call each way, not printed. */
	for (i = -1; i < n; i++) {
		uint64_t t0 = now_ns();
		ssize_t got = round_trip(fd, msg, len, ans, sizeof(ans));
		uint64_t t1 = now_ns();

		if (got != len || memcmp(msg, ans, len)) {
			fprintf(stderr, "tandem-rpmsg: bench: a wrong answer at %ld bytes\n", len);
			return -1;
		}
		if (i >= 0)
			printf("rt rpmsg %ld %" PRIu64 "\n", len, t1 - t0);
	}
	for (i = -1; i < n; i++) {
		uint64_t t0, t1;
		int ret;

		memset(&c, 0, sizeof(c));
		c.op = TANDEM_RPC_ECHO;
		c.data = (uintptr_t)msg;
		c.len = len;
		c.mode = TANDEM_RPC_MODE_BLOCK;
		t0 = now_ns();
		ret = tandem_rpc_call(rpc, &c);
		t1 = now_ns();
		if (ret || c.status) {
			fprintf(stderr, "tandem-rpmsg: bench: RPC call failed: %s, status %d\n",
				strerror(-ret), c.status);
			return -1;
		}
		if (i >= 0)
			printf("rt rpc-block %ld %" PRIu64 " %" PRIu64 "\n", len, t1 - t0,
			       (uint64_t)c.round_trip_ns);
	}
	return 0;
}

static int cmd_bench(int argc, char **argv)
{
	struct opts o;
	char dev[300];
	uint32_t addr;
	int fd, rpc, ret = 0;

	if (parse(argc, argv, &o) || optind == argc)
		return print_usage();
	rpc = tandem_rpc_open();
	if (rpc < 0) {
		fprintf(stderr, "tandem-rpmsg: %s: %s\n", TANDEM_RPC_DEVICE, strerror(errno));
		return 1;
	}
	fd = open_service(o.service, dev, sizeof(dev), &addr);
	if (fd < 0)
		return 1;
	for (int a = optind; a < argc && !ret; a++) {
		long len = strtol(argv[a], NULL, 0);

		if (len < 1 || len > TANDEM_RPMSG_MAX_PAYLOAD) {
			fprintf(stderr, "tandem-rpmsg: LEN %s: 1..%d\n", argv[a],
				TANDEM_RPMSG_MAX_PAYLOAD);
			ret = 2;
			break;
		}
		if (bench_size(fd, rpc, len, o.n))
			ret = 1;
	}
	endpoint_close(fd, ret);
	close(rpc);
	return ret;
}

/* Rings the RTOS through the driver's raw SMC file. */
static int ring_rtos(unsigned int what)
{
	char cmd[64];
	int fd = open(SMC_FILE, O_RDWR);
	int n;

	if (fd < 0) {
		fprintf(stderr, "tandem-rpmsg: %s: %s\n", SMC_FILE, strerror(errno));
		return -1;
	}
	n = snprintf(cmd, sizeof(cmd), "%#x %u", TANDEM_SMC_RPMSG_NOTIFY, what);
	if (write(fd, cmd, n) != n) {
		fprintf(stderr, "tandem-rpmsg: RPMSG_NOTIFY: %s\n", strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* Offsets in a vring of the ABI's size (Linux's vring layout). */
#define NUM TANDEM_RPMSG_VRING_NUM
#define AVAIL (16 * NUM)
#define USED (((AVAIL + 2 * (3 + NUM)) + TANDEM_RPMSG_VRING_ALIGN - 1) & \
	      ~(TANDEM_RPMSG_VRING_ALIGN - 1))

/* A field of the mapped ring, stored or loaded whole (Linux's side reads it). */
#define PUT(map, off, type, v) __atomic_store_n((type *)((map) + (off)), (v), __ATOMIC_RELAXED)
#define GET(map, off, type) __atomic_load_n((type *)((map) + (off)), __ATOMIC_RELAXED)

static int cmd_hostile(int argc, char **argv)
{
	/* The last descriptor (one Linux fills last), as a well-formed buffer. */
	const unsigned int d = 16 * (NUM - 1);
	uint64_t base, addr;
	uint16_t at, head = NUM - 1, flags = 0, next = 0;
	const char *what;
	char buf[64];
	uint8_t *map;
	int mem;

	if (argc != 3)
		return print_usage();
	what = argv[2];
	if (read_line(REGION_BASE_FILE, buf, sizeof(buf)))
		return 1;
	base = strtoull(buf, NULL, 0);
	addr = base + TANDEM_RPMSG_POOL_OFFSET + TANDEM_RPMSG_POOL_BYTES - TANDEM_RPMSG_BUFFER_SIZE;
	if (!strcmp(what, "index")) {
		/* set below: past the ring */
	} else if (!strcmp(what, "head")) {
		head = 0xffff;
	} else if (!strcmp(what, "outside")) {
		addr = 0x0e100000;	/* the RTOS's own RAM */
	} else if (!strcmp(what, "loop")) {
		flags = 1;	/* NEXT, to itself */
		next = NUM - 1;
	} else if (!strcmp(what, "next")) {
		flags = 1;
		next = 0xffff;
	} else if (!strcmp(what, "indirect")) {
		flags = 4;
	} else if (!strcmp(what, "write")) {
		flags = 2;	/* the device would write Linux's send buffer */
	} else {
		return print_usage();
	}
	mem = open("/dev/mem", O_RDWR | O_SYNC);
	if (mem < 0) {
		fprintf(stderr, "tandem-rpmsg: /dev/mem: %s\n", strerror(errno));
		return 1;
	}
	map = mmap(NULL, TANDEM_RPMSG_VRING_STRIDE, PROT_READ | PROT_WRITE, MAP_SHARED, mem,
		   base + TANDEM_RPMSG_VRING1_OFFSET);
	if (map == MAP_FAILED) {
		fprintf(stderr, "tandem-rpmsg: mmap: %s\n", strerror(errno));
		return 1;
	}
	at = GET(map, AVAIL + 2, uint16_t);
	PUT(map, d, uint64_t, addr);
	PUT(map, d + 8, uint32_t, 16);
	PUT(map, d + 12, uint16_t, flags);
	PUT(map, d + 14, uint16_t, next);
	PUT(map, AVAIL + 4 + 2 * (at % NUM), uint16_t, head);
	if (!strcmp(what, "index"))
		at += NUM + 44;
	/* The entry before the index that publishes it, as a driver does. */
	__sync_synchronize();
	PUT(map, AVAIL + 2, uint16_t, (uint16_t)(at + 1));
	__sync_synchronize();
	munmap(map, TANDEM_RPMSG_VRING_STRIDE);
	close(mem);
	if (ring_rtos(1))
		return 1;
	printf("hostile %s: send ring index %u\n", what, (unsigned int)(uint16_t)(at + 1));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return print_usage();
	if (!strcmp(argv[1], "echo"))
		return cmd_echo(argc, argv);
	if (!strcmp(argv[1], "call"))
		return cmd_call(argc, argv);
	if (!strcmp(argv[1], "bench"))
		return cmd_bench(argc, argv);
	if (!strcmp(argv[1], "hostile"))
		return cmd_hostile(argc, argv);
	return print_usage();
}
