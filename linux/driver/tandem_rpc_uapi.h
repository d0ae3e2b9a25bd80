/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * /dev/tandem-rpc: synchronous calls from Linux into the Tandem RTOS
 * (paper 002's send_buf). Shared by the driver and the user library.
 */
#ifndef TANDEM_RPC_UAPI_H
#define TANDEM_RPC_UAPI_H

#include <linux/types.h>
#include <linux/ioctl.h>

/* How the caller waits for the answer. */
#define TANDEM_RPC_MODE_AUTO	0	/* busy below x_opt bytes, else block */
#define TANDEM_RPC_MODE_BUSY	1	/* spin (politely) on the answer */
#define TANDEM_RPC_MODE_BLOCK	2	/* sleep until the completion interrupt */

/* Operations (the values of tandem_abi.h's TANDEM_RPC_OP_*). */
#define TANDEM_RPC_SEND		1	/* copy the data into the RTOS */
#define TANDEM_RPC_ECHO		2	/* ... and back into data */
#define TANDEM_RPC_STALL	3	/* the server waits arg ms (tests) */

/*
 * Flag: hand len to the RTOS without the driver's check (the RTOS must
 * refuse it). Needs CAP_SYS_RAWIO; for tests of the RTOS's own checks.
 */
#define TANDEM_RPC_F_UNCHECKED	1

struct tandem_rpc_call {
	/* in */
	__u32 channel;
	__u32 op;
	__u64 data;		/* user pointer to len bytes (ECHO: answer too) */
	__s64 len;		/* 0 .. TANDEM_RPC_MAX_DATA */
	__u32 mode;		/* TANDEM_RPC_MODE_*; out: the mode used */
	__u32 arg;		/* STALL: ms */
	__u32 timeout_ms;	/* 0: 1000 ms */
	__u32 flags;		/* TANDEM_RPC_F_* */
	/* out */
	__s32 status;		/* the RTOS's answer (TANDEM_RPC_STATUS_*) */
	__u32 checksum;		/* of the data as the RTOS copied it */
	__u32 answer_len;	/* bytes the RTOS took (ECHO: wrote back) */
	__u32 core;		/* the core that served the call */
	__u64 seq;		/* the call's sequence number on its channel */
	__u64 round_trip_ns;	/* from ringing the doorbell to seeing the answer */
	__u64 server_ns;	/* the server's own time on the call */
	/*
	 * From the caller's counter read before ringing the doorbell to the
	 * server's first (on another core: the doorbell's delivery and both
	 * paths); 0 if the server started first.
	 */
	__u64 notify_ns;
};

#define TANDEM_RPC_IOC_CALL	_IOWR('T', 0x40, struct tandem_rpc_call)

#endif /* TANDEM_RPC_UAPI_H */
