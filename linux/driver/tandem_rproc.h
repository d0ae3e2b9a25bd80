/* SPDX-License-Identifier: GPL-2.0 */
/* tandem: RPMsg with the RTOS (tandem_rproc.c), as the rest of the driver sees it. */
#ifndef TANDEM_RPROC_H
#define TANDEM_RPROC_H

#include <linux/device.h>
#include <linux/interrupt.h>

struct rproc;

/*
 * Exported by the remoteproc core (remoteproc_virtio.c) for its platform
 * drivers, but declared only in its private remoteproc_internal.h in 6.1,
 * which a module built outside the tree cannot include.
 */
irqreturn_t rproc_vq_interrupt(struct rproc *rproc, int notifyid);

struct tandem_rproc;

struct tandem_rproc *tandem_rproc_probe(struct device *dev, void *shm, phys_addr_t base,
					size_t shm_size, int irq);
void tandem_rproc_remove(struct tandem_rproc *tr);

extern const struct attribute_group tandem_rproc_group;

#endif /* TANDEM_RPROC_H */
