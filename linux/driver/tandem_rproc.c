// SPDX-License-Identifier: GPL-2.0
/*
 * tandem: RPMsg with the RTOS, through Linux's own remoteproc and
 * virtio-rpmsg, unchanged.
 *
 * The RTOS runs before Linux and publishes a resource table in the shared
 * region (one vdev, rpmsg, with two vrings; tandem_abi.h's TANDEM_RPMSG_*).
 * This registers a remote processor in attach mode: the core reads that
 * table, finds the vrings and the buffer pool among the carveouts
 * registered here (both in the shared region, where the RTOS reads them),
 * and virtio-rpmsg runs over them. Doorbells: a kick is SiP RPMSG_NOTIFY,
 * which rings the RTOS's RPMsg core; the RTOS's answers come on the
 * doorbell SPI, which the RPC client takes too (a shared interrupt).
 *
 * Sessions: the RTOS keeps its own ring indexes, and every attach starts
 * from zeroed rings. So before the rings are set up, attach clears the
 * vdev's status, writes a new session number into the control words and
 * waits until the RTOS acknowledges it (it then has forgotten its
 * indexes); detach and stop start another, so the RTOS lets the rings go.
 * A Linux restarted by the monitor attaches the same way.
 */

#include <linux/arm-smccc.h>
#include <linux/delay.h>
#include <linux/device.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/jiffies.h>
#include <linux/remoteproc.h>
#include <linux/virtio_ids.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "tandem_abi.h"
#include "tandem_rproc.h"

/* How long attach waits for the RTOS to acknowledge a session. */
#define TANDEM_RPROC_ACK_MS	1000

/* The used ring of vring i, after its descriptors and aligned available ring. */
#define TANDEM_RPMSG_USED_OFFSET \
	ALIGN(16 * TANDEM_RPMSG_VRING_NUM + 2 * (3 + TANDEM_RPMSG_VRING_NUM), \
	      TANDEM_RPMSG_VRING_ALIGN)

struct tandem_rproc {
	struct device *dev;
	struct rproc *rproc;
	void *part;		/* the mapping of RPMsg's part of the region */
	phys_addr_t base;	/* the region's physical base */
	int irq;
	struct work_struct work;
	struct rproc_subdev subdev;	/* stops the work before the vrings go */
	bool subdev_added;	/* from a successful attach to the session's end */
	bool live;		/* the work may touch the virtqueues */
	u16 seen_used[2];	/* the used indexes the work last handled */
};

static struct tandem_rproc *rproc_instance;
static DEFINE_MUTEX(rproc_instance_lock);

static u32 part_read32(struct tandem_rproc *tr, unsigned int offset)
{
	return READ_ONCE(*(u32 *)(tr->part + offset));
}

static void part_write32(struct tandem_rproc *tr, unsigned int offset, u32 v)
{
	WRITE_ONCE(*(u32 *)(tr->part + offset), v);
}

/* The table's vdev entry (checked before any attach). */
static struct fw_rsc_vdev *rproc_vdev(struct tandem_rproc *tr)
{
	return tr->part + TANDEM_RPMSG_VDEV_ENTRY + sizeof(struct fw_rsc_hdr);
}

static u32 vring_offset(int i)
{
	return (i ? TANDEM_RPMSG_VRING1_OFFSET : TANDEM_RPMSG_VRING0_OFFSET) -
	       TANDEM_RPMSG_OFFSET;
}

static u16 used_index(struct tandem_rproc *tr, int i)
{
	return READ_ONCE(*(u16 *)(tr->part + vring_offset(i) +
				  TANDEM_RPMSG_USED_OFFSET + 2));
}

static void tandem_rproc_notify(struct tandem_rproc *tr, unsigned long what)
{
	struct arm_smccc_res res;

	arm_smccc_smc(TANDEM_SMC_RPMSG_NOTIFY, what, 0, 0, 0, 0, 0, 0, &res);
	if ((long)res.a0 != TANDEM_SMC_SUCCESS)
		dev_err_ratelimited(tr->dev, "RPMsg: the firmware refused RPMSG_NOTIFY(%lu): %ld\n",
				    what, (long)res.a0);
}

/*
 * The table as the RTOS published it: one rpmsg vdev whose two vrings lie
 * where the ABI puts them, with the ABI's size. Anything else is not ours
 * to attach to.
 */
static int tandem_rproc_check_table(struct tandem_rproc *tr)
{
	struct resource_table *table = tr->part;
	struct fw_rsc_hdr *hdr;
	struct fw_rsc_vdev *vdev;
	int i;

	if (table->ver != 1 || table->num != 1 ||
	    table->offset[0] != offsetof(struct resource_table, offset) + sizeof(u32)) {
		dev_info(tr->dev, "RPMsg: no resource table (version %u, %u entries): no RPMsg\n",
			 table->ver, table->num);
		return -ENODEV;
	}
	hdr = tr->part + table->offset[0];
	vdev = (void *)(hdr + 1);
	if (hdr->type != RSC_VDEV || vdev->id != VIRTIO_ID_RPMSG || vdev->num_of_vrings != 2 ||
	    vdev->config_len) {
		dev_err(tr->dev, "RPMsg: the table's entry is not an rpmsg vdev with two vrings\n");
		return -EINVAL;
	}
	for (i = 0; i < 2; i++) {
		struct fw_rsc_vdev_vring *r = &vdev->vring[i];
		u64 da = tr->base + TANDEM_RPMSG_OFFSET + vring_offset(i);

		if (r->da != da || r->num != TANDEM_RPMSG_VRING_NUM ||
		    r->align != TANDEM_RPMSG_VRING_ALIGN) {
			dev_err(tr->dev, "RPMsg: vring %d at %#x (%u, align %u), not %#llx (%u, %u)\n",
				i, r->da, r->num, r->align, da, TANDEM_RPMSG_VRING_NUM,
				TANDEM_RPMSG_VRING_ALIGN);
			return -EINVAL;
		}
	}
	return 0;
}

static struct resource_table *tandem_rproc_table(struct rproc *rproc, size_t *size)
{
	struct tandem_rproc *tr = rproc->priv;
	int ret = tandem_rproc_check_table(tr);

	if (ret)
		return ERR_PTR(ret);
	*size = TANDEM_RPMSG_TABLE_BYTES;
	return tr->part;
}

/* The vrings and the buffer pool, as carveouts the core finds by name. */
static int tandem_rproc_prepare(struct rproc *rproc)
{
	struct tandem_rproc *tr = rproc->priv;
	struct rproc_mem_entry *mem;
	phys_addr_t pa;
	int i;

	for (i = 0; i < 2; i++) {
		pa = tr->base + TANDEM_RPMSG_OFFSET + vring_offset(i);
		mem = rproc_mem_entry_init(tr->dev, tr->part + vring_offset(i), pa,
					   TANDEM_RPMSG_VRING_STRIDE, pa, NULL, NULL,
					   "vdev0vring%d", i);
		if (!mem)
			return -ENOMEM;
		rproc_add_carveout(rproc, mem);
	}
	/* No va: the core declares it as the vdev's DMA pool and maps it. */
	pa = tr->base + TANDEM_RPMSG_POOL_OFFSET;
	mem = rproc_mem_entry_init(tr->dev, NULL, pa, TANDEM_RPMSG_POOL_BYTES, pa,
				   NULL, NULL, "vdev0buffer");
	if (!mem)
		return -ENOMEM;
	rproc_add_carveout(rproc, mem);
	return 0;
}

/* Starts a session and waits for the RTOS to let the old one go. */
static int tandem_rproc_attach(struct rproc *rproc)
{
	struct tandem_rproc *tr = rproc->priv;
	struct fw_rsc_vdev *vdev = rproc_vdev(tr);
	unsigned long until = jiffies + msecs_to_jiffies(TANDEM_RPROC_ACK_MS);
	u32 session;

	WRITE_ONCE(vdev->status, 0);
	session = part_read32(tr, TANDEM_RPMSG_CONTROL_SESSION) + 1;
	/* The status before the session: the RTOS sees no stale DRIVER_OK. */
	wmb();
	part_write32(tr, TANDEM_RPMSG_CONTROL_SESSION, session);
	tandem_rproc_notify(tr, TANDEM_RPMSG_NOTIFY_CONTROL);
	while (part_read32(tr, TANDEM_RPMSG_CONTROL_ACK) != session) {
		if (time_after(jiffies, until)) {
			dev_err(tr->dev, "RPMsg: the RTOS did not acknowledge session %u (state %u)\n",
				session, part_read32(tr, TANDEM_RPMSG_CONTROL_STATE));
			return -ETIMEDOUT;
		}
		usleep_range(50, 100);
	}
	tr->seen_used[0] = 0;
	tr->seen_used[1] = 0;
	/*
	 * After the vdev's subdevice (added as the table was read), so
	 * started after it and stopped before it: no work runs once the
	 * vrings go.
	 */
	rproc_add_subdev(rproc, &tr->subdev);
	tr->subdev_added = true;
	dev_info(tr->dev, "RPMsg: session %u acknowledged\n", session);
	return 0;
}

/* Ends the session: the RTOS stops touching the rings. */
static int tandem_rproc_let_go(struct rproc *rproc)
{
	struct tandem_rproc *tr = rproc->priv;
	struct fw_rsc_vdev *vdev = rproc_vdev(tr);

	if (tr->subdev_added) {
		/* Stopped already, with the vdev's. */
		rproc_remove_subdev(rproc, &tr->subdev);
		tr->subdev_added = false;
	}
	WRITE_ONCE(vdev->status, 0);
	/* As in attach: the cleared status before the new session. */
	wmb();
	part_write32(tr, TANDEM_RPMSG_CONTROL_SESSION,
		     part_read32(tr, TANDEM_RPMSG_CONTROL_SESSION) + 1);
	tandem_rproc_notify(tr, TANDEM_RPMSG_NOTIFY_CONTROL);
	return 0;
}

static void tandem_rproc_kick(struct rproc *rproc, int vqid)
{
	tandem_rproc_notify(rproc->priv, vqid);
}

static const struct rproc_ops tandem_rproc_ops = {
	.prepare = tandem_rproc_prepare,
	.attach = tandem_rproc_attach,
	.detach = tandem_rproc_let_go,
	/* The RTOS cannot be stopped from here: stop only ends the session. */
	.stop = tandem_rproc_let_go,
	.kick = tandem_rproc_kick,
	.get_loaded_rsc_table = tandem_rproc_table,
};

/* Process context: the virtqueues' callbacks take mutexes. */
static void tandem_rproc_work(struct work_struct *work)
{
	struct tandem_rproc *tr = container_of(work, struct tandem_rproc, work);

	if (!READ_ONCE(tr->live))
		return;
	rproc_vq_interrupt(tr->rproc, 0);
	rproc_vq_interrupt(tr->rproc, 1);
}

/*
 * The doorbell SPI, shared with the RPC client's completions: work only if
 * a used index moved (an RPC answer costs two loads here).
 */
static irqreturn_t tandem_rproc_irq(int irq, void *arg)
{
	struct tandem_rproc *tr = arg;
	u16 used0 = used_index(tr, 0), used1 = used_index(tr, 1);

	if (!READ_ONCE(tr->live) ||
	    (used0 == tr->seen_used[0] && used1 == tr->seen_used[1]))
		return IRQ_NONE;
	tr->seen_used[0] = used0;
	tr->seen_used[1] = used1;
	queue_work(system_highpri_wq, &tr->work);
	return IRQ_HANDLED;
}

/* The work may run from the vdev's start to its stop (see attach). */
static int tandem_rproc_subdev_start(struct rproc_subdev *subdev)
{
	struct tandem_rproc *tr = container_of(subdev, struct tandem_rproc, subdev);

	WRITE_ONCE(tr->live, true);
	/* Anything the RTOS wrote before the interrupt could be taken. */
	queue_work(system_highpri_wq, &tr->work);
	return 0;
}

static void tandem_rproc_subdev_stop(struct rproc_subdev *subdev, bool crashed)
{
	struct tandem_rproc *tr = container_of(subdev, struct tandem_rproc, subdev);

	WRITE_ONCE(tr->live, false);
	cancel_work_sync(&tr->work);
}

/* The RTOS's counts, from the control words (RTOS-written; for tests). */
#define TANDEM_RPROC_ATTR(name, offset)					\
static ssize_t rpmsg_##name##_show(struct device *dev,			\
				   struct device_attribute *attr, char *buf)	\
{									\
	ssize_t n = -ENODEV;						\
									\
	mutex_lock(&rproc_instance_lock);				\
	if (rproc_instance)						\
		n = sysfs_emit(buf, "%u\n", part_read32(rproc_instance, offset)); \
	mutex_unlock(&rproc_instance_lock);				\
	return n;							\
}									\
static DEVICE_ATTR_RO(rpmsg_##name)

TANDEM_RPROC_ATTR(session, TANDEM_RPMSG_CONTROL_SESSION);
TANDEM_RPROC_ATTR(state, TANDEM_RPMSG_CONTROL_STATE);
TANDEM_RPROC_ATTR(fault, TANDEM_RPMSG_CONTROL_FAULT);
TANDEM_RPROC_ATTR(refused, TANDEM_RPMSG_CONTROL_REFUSED);
TANDEM_RPROC_ATTR(served, TANDEM_RPMSG_CONTROL_SERVED);
TANDEM_RPROC_ATTR(dropped, TANDEM_RPMSG_CONTROL_DROPPED);
TANDEM_RPROC_ATTR(sessions, TANDEM_RPMSG_CONTROL_SESSIONS);

static struct attribute *rproc_attrs[] = {
	&dev_attr_rpmsg_session.attr,
	&dev_attr_rpmsg_state.attr,
	&dev_attr_rpmsg_fault.attr,
	&dev_attr_rpmsg_refused.attr,
	&dev_attr_rpmsg_served.attr,
	&dev_attr_rpmsg_dropped.attr,
	&dev_attr_rpmsg_sessions.attr,
	NULL,
};

const struct attribute_group tandem_rproc_group = {
	.attrs = rproc_attrs,
};

struct tandem_rproc *tandem_rproc_probe(struct device *dev, void *shm, phys_addr_t base,
					size_t shm_size, int irq)
{
	struct tandem_rproc *tr;
	struct rproc *rproc;
	int ret;

	if (TANDEM_RPMSG_POOL_OFFSET + TANDEM_RPMSG_POOL_BYTES > shm_size) {
		dev_err(dev, "RPMsg: shared region too small\n");
		return ERR_PTR(-EINVAL);
	}
	rproc = rproc_alloc(dev, "tandem-rtos", &tandem_rproc_ops, NULL, sizeof(*tr));
	if (!rproc)
		return ERR_PTR(-ENOMEM);
	tr = rproc->priv;
	tr->dev = dev;
	tr->rproc = rproc;
	tr->part = shm + TANDEM_RPMSG_OFFSET;
	tr->base = base;
	tr->irq = irq;
	INIT_WORK(&tr->work, tandem_rproc_work);
	ret = tandem_rproc_check_table(tr);
	if (ret)
		goto free;
	ret = devm_request_irq(dev, irq, tandem_rproc_irq, IRQF_SHARED, "tandem-rpmsg", tr);
	if (ret) {
		dev_err(dev, "RPMsg: cannot share the doorbell interrupt %d (%d)\n", irq, ret);
		goto free;
	}
	tr->subdev.start = tandem_rproc_subdev_start;
	tr->subdev.stop = tandem_rproc_subdev_stop;
	/* The RTOS runs already: attach, never load or start it. */
	rproc->state = RPROC_DETACHED;
	ret = rproc_add(rproc);
	if (ret) {
		dev_err(dev, "RPMsg: cannot add the remote processor (%d)\n", ret);
		goto irq;
	}
	mutex_lock(&rproc_instance_lock);
	rproc_instance = tr;
	mutex_unlock(&rproc_instance_lock);
	return tr;
irq:
	devm_free_irq(dev, irq, tr);
free:
	rproc_free(rproc);
	return ERR_PTR(ret);
}

void tandem_rproc_remove(struct tandem_rproc *tr)
{
	struct rproc *rproc = tr->rproc;

	mutex_lock(&rproc_instance_lock);
	rproc_instance = NULL;
	mutex_unlock(&rproc_instance_lock);
	/* Stops the subdevices (the work, then virtio-rpmsg) and the session. */
	rproc_del(rproc);
	devm_free_irq(tr->dev, tr->irq, tr);
	cancel_work_sync(&tr->work);
	rproc_free(rproc);
}
