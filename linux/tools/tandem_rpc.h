/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The Tandem RPC user library (header only): paper 002's send_buf over
 * /dev/tandem-rpc, an echo call, and the checksum the RTOS answers with.
 */
#ifndef TANDEM_RPC_LIB_H
#define TANDEM_RPC_LIB_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "tandem_abi.h"
#include "tandem_rpc_uapi.h"

#define TANDEM_RPC_DEVICE "/dev/tandem-rpc"

/* Opens the device: a file descriptor, or -1 with errno set. */
static inline int tandem_rpc_open(void)
{
	return open(TANDEM_RPC_DEVICE, O_RDWR | O_CLOEXEC);
}

/*
 * One call. Fills *c's outputs; returns 0, or -errno: ENODEV (no RPC server
 * configured), ECHRNG (no such channel), EINVAL (negative length, bad mode
 * or argument), EMSGSIZE (more than TANDEM_RPC_MAX_DATA bytes), ETIMEDOUT
 * (no answer in time), EBUSY (the channel's previous call is still with the
 * RTOS), EINTR (a signal), EOPNOTSUPP (unknown operation), EACCES (a test
 * operation this boot does not serve), EIO (the firmware refused the
 * doorbell).
 */
static inline int tandem_rpc_call(int fd, struct tandem_rpc_call *c)
{
	return ioctl(fd, TANDEM_RPC_IOC_CALL, c) ? -errno : 0;
}

/* send_buf(channel, data, len, mode): copy len bytes into the RTOS. */
static inline int tandem_rpc_send_buf(int fd, unsigned int channel,
				      const void *data, int64_t len,
				      unsigned int mode,
				      struct tandem_rpc_call *out)
{
	struct tandem_rpc_call c;

	memset(&c, 0, sizeof(c));
	c.channel = channel;
	c.op = TANDEM_RPC_SEND;
	c.data = (uintptr_t)data;
	c.len = len;
	c.mode = mode;
	if (out) {
		c.timeout_ms = out->timeout_ms;
		c.flags = out->flags;
	}
	int ret = tandem_rpc_call(fd, &c);

	if (out)
		*out = c;
	return ret;
}

/* The RTOS's checksum of len bytes (tandem_abi::rpc::checksum). */
static inline uint32_t tandem_rpc_checksum(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = ((uint64_t)TANDEM_RPC_CHECKSUM_SEED ^ (uint64_t)len) *
		     (uint64_t)TANDEM_RPC_CHECKSUM_PRIME;

	for (size_t i = 0; i < len; i += 8) {
		uint64_t w = 0;
		size_t n = len - i < 8 ? len - i : 8;

		memcpy(&w, p + i, n);
		h = (h ^ w) * (uint64_t)TANDEM_RPC_CHECKSUM_PRIME;
	}
	return (uint32_t)(h ^ (h >> 32));
}

#endif /* TANDEM_RPC_LIB_H */
