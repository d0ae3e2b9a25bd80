/* SPDX-License-Identifier: GPL-2.0 */
/* tandem: the RPC client (tandem_rpc.c), as the rest of the driver sees it. */
#ifndef TANDEM_RPC_H
#define TANDEM_RPC_H

#include <linux/device.h>

struct tandem_rpc;

struct tandem_rpc *tandem_rpc_probe(struct device *dev, void *shm,
				    size_t shm_size, u32 counter_hz, int irq);
void tandem_rpc_remove(struct tandem_rpc *r);

extern const struct attribute_group tandem_rpc_group;

#endif /* TANDEM_RPC_H */
