// SPDX-License-Identifier: GPL-2.0
/*
 * tandem: Linux's side of the Tandem dual-OS platform.
 *
 * Maps the region shared with the secure world (a no-map reserved-memory
 * region named by the "tandem,tandem" device-tree node), checks its header
 * against the firmware's own account of it (SiP SHM_INFO), and shows the
 * header in sysfs. For tests, a root-only debugfs file issues raw SMCs.
 *
 * It also tells the kernel's lock-state hooks (CONFIG_TANDEM_LOCKSTATE, see
 * linux/patches) where each CPU's lock-state words and spin-wait histogram
 * are in the mapping, and starts them (they publish only if the kernel was
 * booted with tandem_lockstate=on or tandem_spinstat=on).
 *
 * With partitions (Tandem's EL2 layer, docs/hyp.md) this Linux's stage 2
 * maps only its own part of the region: the header (read-only), its own
 * cores' parts, the RPC channels and the context-switch record, the
 * mailbox. Touching any other page is a stage-2 fault the layer hands back
 * as an external abort, an oops. The device tree's "tandem,cores" names
 * the cores whose parts this Linux may use (without it: every core, a
 * Linux alone on the machine); the driver touches nothing else
 * (tandem_mapped()).
 *
 * The RPC client, /dev/tandem-rpc, is in tandem_rpc.c; RPMsg with the
 * RTOS (a remoteproc in attach mode for the stock virtio-rpmsg) in
 * tandem_rproc.c.
 */

#include <linux/arm-smccc.h>
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/io.h>
#include <linux/kernel.h>
#include <linux/kobject.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/of.h>
#include <linux/of_reserved_mem.h>
#include <linux/platform_device.h>
#include <linux/slab.h>
#include <linux/tandem_lockstate.h>
#include <linux/uaccess.h>

#include "tandem_abi.h"
#include "tandem_rpc.h"
#include "tandem_rproc.h"

struct tandem;

/* One /sys/.../tandem/coreN directory: a core's record in the region. */
struct tandem_core {
	struct kobject kobj;
	struct tandem *t;
	unsigned int index;
};

struct tandem {
	struct device *dev;
	void *shm;
	phys_addr_t shm_base;
	size_t shm_size;
	struct dentry *debugfs;
	u32 counter_hz;
	unsigned int core_count;
	unsigned int records_offset;	/* validated at probe, never re-read */
	u32 own_cores;			/* bit per core: "tandem,cores" */
	struct tandem_core *cores[TANDEM_SHM_MAX_CORES];
	bool lockstate_started;
	struct tandem_rpc *rpc;
	struct tandem_rproc *rproc;
};

static u32 shm_read32(struct tandem *t, unsigned int offset)
{
	return le32_to_cpu(READ_ONCE(*(__le32 *)(t->shm + offset)));
}

/* Mirrors tandem_abi::shm::Header::validate: say exactly what is wrong. */
static int tandem_check_header(struct tandem *t)
{
	u32 magic = shm_read32(t, TANDEM_SHM_OFF_MAGIC);
	u32 version = shm_read32(t, TANDEM_SHM_OFF_ABI_VERSION);
	u32 region = shm_read32(t, TANDEM_SHM_OFF_REGION_SIZE);
	u32 header = shm_read32(t, TANDEM_SHM_OFF_HEADER_SIZE);
	u32 count = shm_read32(t, TANDEM_SHM_OFF_CORE_COUNT);
	u32 rec_size = shm_read32(t, TANDEM_SHM_OFF_CORE_RECORD_SIZE);
	u32 rec_off = shm_read32(t, TANDEM_SHM_OFF_CORE_RECORDS_OFFSET);
	u32 stride = shm_read32(t, TANDEM_SHM_OFF_CORE_RECORD_STRIDE);

	if (magic != TANDEM_SHM_MAGIC) {
		dev_err(t->dev, "shared region: bad magic %#x (firmware did not set it up)\n",
			magic);
		return -ENODEV;
	}
	if (version >> 16 != TANDEM_ABI_VERSION >> 16) {
		dev_err(t->dev, "shared region: ABI %#x, driver speaks %#x\n",
			version, TANDEM_ABI_VERSION);
		return -EPROTO;
	}
	/* The records where the layout says: the pages this Linux may touch. */
	if (region != t->shm_size || region < TANDEM_SHM_LAYOUT_BYTES ||
	    header != TANDEM_SHM_HEADER_SIZE ||
	    rec_size != TANDEM_SHM_CORE_RECORD_SIZE ||
	    rec_off != TANDEM_SHM_CORE_RECORDS_OFFSET ||
	    stride != TANDEM_SHM_CORE_RECORD_STRIDE ||
	    count > TANDEM_SHM_MAX_CORES) {
		dev_err(t->dev, "shared region: inconsistent layout (size %u, header %u, %u records of %u every %u at %u)\n",
			region, header, count, rec_size, stride, rec_off);
		return -EINVAL;
	}
	t->counter_hz = shm_read32(t, TANDEM_SHM_OFF_COUNTER_HZ);
	if (!t->counter_hz) {
		dev_err(t->dev, "shared region: counter frequency is 0\n");
		return -EINVAL;
	}
	t->core_count = count;
	t->records_offset = rec_off;
	return 0;
}

#define TANDEM_HEADER_ATTR(name, offset, fmt)				\
static ssize_t name##_show(struct device *dev,				\
			   struct device_attribute *attr, char *buf)	\
{									\
	struct tandem *t = dev_get_drvdata(dev);			\
									\
	return sysfs_emit(buf, fmt "\n", shm_read32(t, offset));	\
}									\
static DEVICE_ATTR_RO(name)

TANDEM_HEADER_ATTR(magic, TANDEM_SHM_OFF_MAGIC, "%#x");
TANDEM_HEADER_ATTR(abi_version, TANDEM_SHM_OFF_ABI_VERSION, "%#x");
TANDEM_HEADER_ATTR(region_size, TANDEM_SHM_OFF_REGION_SIZE, "%u");
TANDEM_HEADER_ATTR(core_count, TANDEM_SHM_OFF_CORE_COUNT, "%u");
TANDEM_HEADER_ATTR(boot_count, TANDEM_SHM_OFF_BOOT_COUNT, "%u");
TANDEM_HEADER_ATTR(linux_generation, TANDEM_SHM_OFF_LINUX_GENERATION, "%u");

/* The cores whose parts of the region this Linux uses ("tandem,cores"). */
static ssize_t region_cores_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	struct tandem *t = dev_get_drvdata(dev);
	unsigned long own = t->own_cores;

	return sysfs_emit(buf, "%*pbl\n", TANDEM_SHM_MAX_CORES, &own);
}
static DEVICE_ATTR_RO(region_cores);

static ssize_t region_base_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	struct tandem *t = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%pa\n", &t->shm_base);
}
static DEVICE_ATTR_RO(region_base);

static ssize_t lockstate_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n", tandem_lockstate_publishing() ? "on" : "off");
}
static DEVICE_ATTR_RO(lockstate);

static ssize_t spinstat_show(struct device *dev,
			     struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n", tandem_spinstat_counting() ? "on" : "off");
}
static DEVICE_ATTR_RO(spinstat);

static struct attribute *tandem_attrs[] = {
	&dev_attr_magic.attr,
	&dev_attr_abi_version.attr,
	&dev_attr_region_size.attr,
	&dev_attr_core_count.attr,
	&dev_attr_boot_count.attr,
	&dev_attr_linux_generation.attr,
	&dev_attr_region_base.attr,
	&dev_attr_region_cores.attr,
	&dev_attr_lockstate.attr,
	&dev_attr_spinstat.attr,
	NULL,
};
ATTRIBUTE_GROUPS(tandem);

/*
 * Offset of a field of core's record, from the layout validated at probe:
 * the header in the region may change since (anything in Linux that can
 * write the region can scribble on it), the bounds checked then may not.
 */
static unsigned int core_field(struct tandem *t, unsigned int core,
			       unsigned int field)
{
	return t->records_offset + core * TANDEM_SHM_CORE_RECORD_STRIDE + field;
}

/* Whether core's parts of the region are this Linux's to use. */
static bool tandem_owns(struct tandem *t, unsigned int core)
{
	return core < t->core_count && (t->own_cores & BIT(core));
}

/* Each kind of part every core has, on pages of that core alone. */
static const struct {
	u32 offset, stride;
} tandem_per_core[] = {
	{ TANDEM_SHM_CORE_RECORDS_OFFSET, TANDEM_SHM_CORE_RECORD_STRIDE },
	{ TANDEM_TRACE_OFFSET, TANDEM_TRACE_RING_STRIDE },
	{ TANDEM_LATENCY_OFFSET, TANDEM_LATENCY_STRIDE },
	{ TANDEM_SPIN_OFFSET, TANDEM_SPIN_STRIDE },
	{ TANDEM_DISPATCH_OFFSET, TANDEM_DISPATCH_STRIDE },
	{ TANDEM_STEAL_OFFSET, TANDEM_STEAL_STRIDE },
};

/*
 * Whether this Linux may touch the region's byte at off (mirrors
 * tandem_abi::layout::owner and the EL2 layer's map of a partition with
 * Tandem's driver): the header, its own cores' parts, the RPC channels and
 * context-switch record, the mailbox; never the monitor's stub.
 */
static bool tandem_mapped(struct tandem *t, size_t off)
{
	unsigned int i;

	if (off < TANDEM_SHM_HEADER_BYTES)
		return true;
	for (i = 0; i < ARRAY_SIZE(tandem_per_core); i++) {
		size_t first = tandem_per_core[i].offset;
		size_t stride = tandem_per_core[i].stride;

		if (off >= first && off < first + TANDEM_SHM_MAX_CORES * stride)
			return tandem_owns(t, (off - first) / stride);
	}
	if (off >= TANDEM_SHM_TANDEM_PARTS_OFFSET &&
	    off < TANDEM_SHM_TANDEM_PARTS_OFFSET + TANDEM_SHM_TANDEM_PARTS_BYTES)
		return true;
	return off >= TANDEM_SHM_PARTITION_MAILBOX_OFFSET &&
	       off < TANDEM_SHM_PARTITION_MAILBOX_OFFSET + TANDEM_SHM_PAGE;
}

static u64 core_read64(struct tandem_core *c, unsigned int field)
{
	struct tandem *t = c->t;
	unsigned int off = core_field(t, c->index, field);

	return le64_to_cpu(READ_ONCE(*(__le64 *)(t->shm + off)));
}

#define TANDEM_CORE_ATTR(name, field)					\
static ssize_t name##_show(struct kobject *kobj,			\
			   struct kobj_attribute *attr, char *buf)	\
{									\
	struct tandem_core *c = container_of(kobj, struct tandem_core, kobj); \
									\
	return sysfs_emit(buf, "%llu\n", core_read64(c, field));	\
}									\
static struct kobj_attribute core_attr_##name = __ATTR_RO(name)

TANDEM_CORE_ATTR(rtos_releases, TANDEM_CORE_OFF_RTOS_RELEASES);
TANDEM_CORE_ATTR(deadline_misses, TANDEM_CORE_OFF_DEADLINE_MISSES);
TANDEM_CORE_ATTR(switches_to_rtos, TANDEM_CORE_OFF_SWITCHES_TO_RTOS);
TANDEM_CORE_ATTR(switches_to_linux, TANDEM_CORE_OFF_SWITCHES_TO_LINUX);

/* A u32 field of the core's record (Linux's lock words, RTOS counts). */
#define TANDEM_CORE_ATTR32(name, field)					\
static ssize_t name##_show(struct kobject *kobj,			\
			   struct kobj_attribute *attr, char *buf)	\
{									\
	struct tandem_core *c = container_of(kobj, struct tandem_core, kobj); \
									\
	return sysfs_emit(buf, "%u\n",					\
			  shm_read32(c->t, core_field(c->t, c->index, field))); \
}									\
static struct kobj_attribute core_attr_##name = __ATTR_RO(name)

TANDEM_CORE_ATTR32(linux_lock_held, TANDEM_CORE_OFF_LINUX_LOCK_HELD);
TANDEM_CORE_ATTR32(linux_lock_waiting, TANDEM_CORE_OFF_LINUX_LOCK_WAITING);
/* Cross-core dispatches of the RTOS's periodic task (counter ticks). */
TANDEM_CORE_ATTR32(dispatch_handoffs, TANDEM_CORE_OFF_DISPATCH_HANDOFFS);
TANDEM_CORE_ATTR32(dispatch_handoff_wait_max_ticks,
		   TANDEM_CORE_OFF_DISPATCH_HANDOFF_WAIT_MAX);
TANDEM_CORE_ATTR32(dispatch_handoff_wait_sum_ticks,
		   TANDEM_CORE_OFF_DISPATCH_HANDOFF_WAIT_SUM);
/* Jobs of that task started here, and what Linux held when they did. */
TANDEM_CORE_ATTR32(dispatch_starts, TANDEM_CORE_OFF_DISPATCH_STARTS);
TANDEM_CORE_ATTR32(dispatch_preempted_holding,
		   TANDEM_CORE_OFF_DISPATCH_PREEMPTED_HOLDING);
TANDEM_CORE_ATTR32(dispatch_preempted_waiting,
		   TANDEM_CORE_OFF_DISPATCH_PREEMPTED_WAITING);
/* What the monitor refused, counted instead of logged (docs/security.md). */
TANDEM_CORE_ATTR32(refused_traps, TANDEM_CORE_OFF_MONITOR_REFUSED_TRAPS);
TANDEM_CORE_ATTR32(idle_wakeups, TANDEM_CORE_OFF_MONITOR_IDLE_WAKEUPS);
TANDEM_CORE_ATTR32(cpu_offs, TANDEM_CORE_OFF_MONITOR_CPU_OFFS);

/* RTOS busy time, converted from counter ticks to microseconds. */
static ssize_t rtos_busy_us_show(struct kobject *kobj,
				 struct kobj_attribute *attr, char *buf)
{
	struct tandem_core *c = container_of(kobj, struct tandem_core, kobj);
	u64 ticks = core_read64(c, TANDEM_CORE_OFF_RTOS_BUSY);

	return sysfs_emit(buf, "%llu\n",
			  mul_u64_u32_div(ticks, 1000000, c->t->counter_hz));
}
static struct kobj_attribute core_attr_rtos_busy_us = __ATTR_RO(rtos_busy_us);

static ssize_t policy_show(struct kobject *kobj, struct kobj_attribute *attr,
			   char *buf)
{
	static const char * const names[] = { "shared", "rtos", "linux" };
	struct tandem_core *c = container_of(kobj, struct tandem_core, kobj);
	struct tandem *t = c->t;
	unsigned int off = core_field(t, c->index, TANDEM_CORE_OFF_POLICY);
	u32 policy = shm_read32(t, off);

	if (policy >= ARRAY_SIZE(names))
		return sysfs_emit(buf, "invalid (%u)\n", policy);
	return sysfs_emit(buf, "%s\n", names[policy]);
}
static struct kobj_attribute core_attr_policy = __ATTR_RO(policy);

static struct attribute *tandem_core_attrs[] = {
	&core_attr_policy.attr,
	&core_attr_rtos_busy_us.attr,
	&core_attr_rtos_releases.attr,
	&core_attr_deadline_misses.attr,
	&core_attr_switches_to_rtos.attr,
	&core_attr_switches_to_linux.attr,
	&core_attr_linux_lock_held.attr,
	&core_attr_linux_lock_waiting.attr,
	&core_attr_dispatch_handoffs.attr,
	&core_attr_dispatch_handoff_wait_max_ticks.attr,
	&core_attr_dispatch_handoff_wait_sum_ticks.attr,
	&core_attr_dispatch_starts.attr,
	&core_attr_dispatch_preempted_holding.attr,
	&core_attr_dispatch_preempted_waiting.attr,
	&core_attr_refused_traps.attr,
	&core_attr_idle_wakeups.attr,
	&core_attr_cpu_offs.attr,
	NULL,
};
ATTRIBUTE_GROUPS(tandem_core);

static void tandem_core_release(struct kobject *kobj)
{
	kfree(container_of(kobj, struct tandem_core, kobj));
}

static const struct kobj_type tandem_core_ktype = {
	.release = tandem_core_release,
	.sysfs_ops = &kobj_sysfs_ops,
	.default_groups = tandem_core_groups,
};

static void tandem_remove_cores(struct tandem *t)
{
	unsigned int i;

	for (i = 0; i < t->core_count; i++) {
		if (t->cores[i])
			kobject_put(&t->cores[i]->kobj);
		t->cores[i] = NULL;
	}
}

static int tandem_add_cores(struct tandem *t)
{
	unsigned int i;
	int ret;

	for (i = 0; i < t->core_count; i++) {
		struct tandem_core *c;

		if (!tandem_owns(t, i))
			continue;
		c = kzalloc(sizeof(*c), GFP_KERNEL);
		if (!c) {
			tandem_remove_cores(t);
			return -ENOMEM;
		}
		c->t = t;
		c->index = i;
		ret = kobject_init_and_add(&c->kobj, &tandem_core_ktype,
					   &t->dev->kobj, "core%u", i);
		if (ret) {
			kobject_put(&c->kobj);
			tandem_remove_cores(t);
			return ret;
		}
		t->cores[i] = c;
	}
	return 0;
}

/*
 * Hand the kernel's lock-state hooks, per possible CPU, the addresses of its
 * core's two lock-state words and spin-wait histogram, then start them. A
 * CPU's core is its MPIDR Aff0, not its Linux number.
 */
static void tandem_lockstate_attach(struct tandem *t)
{
	bool hists = (u64)TANDEM_SPIN_OFFSET +
		     (u64)t->core_count * TANDEM_SPIN_STRIDE <= t->shm_size;
	unsigned int cpu, core;
	int ret;

	for_each_possible_cpu(cpu) {
		u32 *held = NULL, *waiting = NULL, *hist = NULL;

		core = tandem_lockstate_core(cpu);
		if (tandem_owns(t, core)) {
			held = t->shm + core_field(t, core, TANDEM_CORE_OFF_LINUX_LOCK_HELD);
			waiting = t->shm + core_field(t, core, TANDEM_CORE_OFF_LINUX_LOCK_WAITING);
			if (hists)
				hist = t->shm + TANDEM_SPIN_OFFSET +
				       core * TANDEM_SPIN_STRIDE;
		} else {
			dev_warn(t->dev, "CPU %u is core %u, not one of the region's %u records this Linux uses\n",
				 cpu, core, t->core_count);
		}
		ret = tandem_lockstate_set_cpu(cpu, held, waiting, hist);
		if (ret) {
			dev_err(t->dev, "lock state: cannot attach CPU %u (%d)\n", cpu, ret);
			tandem_lockstate_stop();
			return;
		}
	}
	ret = tandem_lockstate_start(TANDEM_SPIN_BUCKETS, TANDEM_SPIN_SHIFT);
	if (ret) {
		dev_err(t->dev, "lock state: cannot start the hooks (%d)\n", ret);
		tandem_lockstate_stop();
		return;
	}
	t->lockstate_started = true;
	dev_info(t->dev, "lock state publishing %s, spin-wait statistics %s\n",
		 tandem_lockstate_publishing() ? "on" : "off",
		 tandem_spinstat_counting() ? "on" : "off");
}

/*
 * debugfs "smc": write "FID [ARG1 .. ARG7]" (any base strtoull accepts), read
 * back "X0 X1 X2 X3" in hex. Results are kept per open file, so concurrent
 * users do not see each other's answers.
 */
struct smc_session {
	struct mutex lock;
	struct arm_smccc_res res;
	bool valid;
};

static int smc_open(struct inode *inode, struct file *file)
{
	struct smc_session *s;

	if (!capable(CAP_SYS_RAWIO))
		return -EPERM;
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	mutex_init(&s->lock);
	file->private_data = s;
	return nonseekable_open(inode, file);
}

static int smc_release(struct inode *inode, struct file *file)
{
	kfree(file->private_data);
	return 0;
}

static ssize_t smc_write(struct file *file, const char __user *ubuf,
			 size_t len, loff_t *ppos)
{
	struct smc_session *s = file->private_data;
	unsigned long a[8] = { 0 };
	char buf[256], *cur, *tok;
	int n = 0, ret;

	if (len >= sizeof(buf))
		return -E2BIG;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	cur = strim(buf);
	while ((tok = strsep(&cur, " \t")) != NULL) {
		if (!*tok)
			continue;
		if (n == ARRAY_SIZE(a))
			return -E2BIG;
		ret = kstrtoul(tok, 0, &a[n]);
		if (ret)
			return ret;
		n++;
	}
	if (n == 0)
		return -EINVAL;
	mutex_lock(&s->lock);
	arm_smccc_smc(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], &s->res);
	s->valid = true;
	mutex_unlock(&s->lock);
	return len;
}

static ssize_t smc_read(struct file *file, char __user *ubuf, size_t len,
			loff_t *ppos)
{
	struct smc_session *s = file->private_data;
	char buf[96];
	int n;

	mutex_lock(&s->lock);
	if (!s->valid) {
		mutex_unlock(&s->lock);
		return -ENODATA;
	}
	n = scnprintf(buf, sizeof(buf), "%#lx %#lx %#lx %#lx\n", s->res.a0,
		      s->res.a1, s->res.a2, s->res.a3);
	s->valid = false;
	mutex_unlock(&s->lock);
	if (len < n)
		return -EINVAL;
	if (copy_to_user(ubuf, buf, n))
		return -EFAULT;
	return n;
}

static const struct file_operations smc_fops = {
	.owner = THIS_MODULE,
	.open = smc_open,
	.release = smc_release,
	.write = smc_write,
	.read = smc_read,
	.llseek = no_llseek,
};

/*
 * debugfs "region": the shared region, read-only, for tools that read the
 * RTOS's histograms and the world-switch trace rings; the pages this Linux
 * may not touch (tandem_mapped) read as zeros, at their offsets.
 */
static ssize_t region_read(struct file *file, char __user *ubuf, size_t len,
			   loff_t *ppos)
{
	struct tandem *t = file->private_data;
	loff_t pos = *ppos;
	size_t done = 0;

	if (pos < 0)
		return -EINVAL;
	if (pos >= t->shm_size)
		return 0;
	len = min_t(size_t, len, t->shm_size - pos);
	while (done < len) {
		size_t off = pos + done;
		size_t n = min_t(size_t, len - done,
				 TANDEM_SHM_PAGE - off % TANDEM_SHM_PAGE);
		unsigned long left;

		if (tandem_mapped(t, off))
			left = copy_to_user(ubuf + done, t->shm + off, n);
		else
			left = clear_user(ubuf + done, n);
		done += n - left;
		if (left)
			break;
	}
	if (!done && len)
		return -EFAULT;
	*ppos = pos + done;
	return done;
}

/* "tandem,cores": the cores whose parts of the region this Linux may use. */
static int tandem_read_cores(struct tandem *t)
{
	struct device_node *np = t->dev->of_node;
	int i, n = of_property_count_u32_elems(np, "tandem,cores");
	u32 core;

	if (n == -EINVAL) {
		/* No such property: a Linux alone on the machine, every core. */
		t->own_cores = GENMASK(TANDEM_SHM_MAX_CORES - 1, 0);
		return 0;
	}
	if (n <= 0) {
		dev_err(t->dev, "tandem,cores: not a list of core numbers (%d)\n", n);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		if (of_property_read_u32_index(np, "tandem,cores", i, &core) ||
		    core >= TANDEM_SHM_MAX_CORES) {
			dev_err(t->dev, "tandem,cores: entry %d is no core 0..%d\n", i,
				TANDEM_SHM_MAX_CORES - 1);
			return -EINVAL;
		}
		t->own_cores |= BIT(core);
	}
	return 0;
}

static const struct file_operations region_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = region_read,
	.llseek = default_llseek,
};

/* The RPC client; without it the rest of the driver still works. */
static void tandem_rpc_attach(struct tandem *t, struct platform_device *pdev)
{
	struct tandem_rpc *rpc;
	int irq, ret;

	irq = platform_get_irq(pdev, 0);
	if (irq < 0) {
		dev_warn(t->dev, "no doorbell interrupt (%d): no RPC\n", irq);
		return;
	}
	rpc = tandem_rpc_probe(t->dev, t->shm, t->shm_size, t->counter_hz, irq);
	if (IS_ERR(rpc)) {
		dev_warn(t->dev, "no RPC (%ld)\n", PTR_ERR(rpc));
		return;
	}
	ret = devm_device_add_group(t->dev, &tandem_rpc_group);
	if (ret)
		dev_warn(t->dev, "RPC attributes missing (%d)\n", ret);
	t->rpc = rpc;
}

/* RPMsg, if the RTOS publishes its resource table; the rest works without. */
static void tandem_rproc_start(struct tandem *t, struct platform_device *pdev)
{
	struct tandem_rproc *tr;
	int irq, ret;

	irq = platform_get_irq(pdev, 0);
	if (irq < 0)
		return;
	tr = tandem_rproc_probe(t->dev, t->shm, t->shm_base, t->shm_size, irq);
	if (IS_ERR(tr))
		return;
	ret = devm_device_add_group(t->dev, &tandem_rproc_group);
	if (ret)
		dev_warn(t->dev, "RPMsg attributes missing (%d)\n", ret);
	t->rproc = tr;
}

static int tandem_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct reserved_mem *rmem;
	struct device_node *np;
	struct arm_smccc_res res;
	struct tandem *t;
	int ret;

	t = devm_kzalloc(dev, sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	t->dev = dev;

	np = of_parse_phandle(dev->of_node, "memory-region", 0);
	if (!np) {
		dev_err(dev, "no memory-region in the device tree node\n");
		return -EINVAL;
	}
	rmem = of_reserved_mem_lookup(np);
	of_node_put(np);
	if (!rmem) {
		dev_err(dev, "memory-region is not a reserved-memory region\n");
		return -EINVAL;
	}
	t->shm_base = rmem->base;
	t->shm_size = rmem->size;
	ret = tandem_read_cores(t);
	if (ret)
		return ret;

	arm_smccc_smc(TANDEM_SMC_SHM_INFO, 0, 0, 0, 0, 0, 0, 0, &res);
	if ((long)res.a0 != TANDEM_SMC_SUCCESS) {
		dev_err(dev, "firmware does not answer SHM_INFO (%ld): not running under Tandem?\n",
			(long)res.a0);
		return -ENODEV;
	}
	if (res.a1 != t->shm_base || res.a2 != t->shm_size) {
		dev_err(dev, "device tree says region %pa+%zx, firmware says %#lx+%#lx\n",
			&t->shm_base, t->shm_size, res.a1, res.a2);
		return -EINVAL;
	}

	t->shm = devm_memremap(dev, t->shm_base, t->shm_size, MEMREMAP_WB);
	if (IS_ERR(t->shm))
		return PTR_ERR(t->shm);
	ret = tandem_check_header(t);
	if (ret)
		return ret;

	platform_set_drvdata(pdev, t);
	ret = tandem_add_cores(t);
	if (ret)
		return ret;
	t->debugfs = debugfs_create_dir("tandem", NULL);
	debugfs_create_file("smc", 0600, t->debugfs, t, &smc_fops);
	debugfs_create_file("region", 0400, t->debugfs, t, &region_fops);
	tandem_lockstate_attach(t);
	tandem_rpc_attach(t, pdev);
	tandem_rproc_start(t, pdev);
	dev_info(dev, "shared region %pa+%#zx, ABI %#x, boot %u\n", &t->shm_base,
		 t->shm_size, shm_read32(t, TANDEM_SHM_OFF_ABI_VERSION),
		 shm_read32(t, TANDEM_SHM_OFF_BOOT_COUNT));
	return 0;
}

static int tandem_remove(struct platform_device *pdev)
{
	struct tandem *t = platform_get_drvdata(pdev);

	/* Before devm unmaps the region: no CPU writes to it after this. */
	if (t->lockstate_started)
		tandem_lockstate_stop();
	if (t->rproc)
		tandem_rproc_remove(t->rproc);
	if (t->rpc)
		tandem_rpc_remove(t->rpc);
	debugfs_remove_recursive(t->debugfs);
	tandem_remove_cores(t);
	return 0;
}

static const struct of_device_id tandem_of_match[] = {
	{ .compatible = "tandem,tandem" },
	{ }
};
MODULE_DEVICE_TABLE(of, tandem_of_match);

static struct platform_driver tandem_driver = {
	.probe = tandem_probe,
	.remove = tandem_remove,
	.driver = {
		.name = "tandem",
		.of_match_table = tandem_of_match,
		.dev_groups = tandem_groups,
	},
};
module_platform_driver(tandem_driver);

MODULE_DESCRIPTION("Tandem dual-OS platform: shared region and firmware calls");
MODULE_LICENSE("GPL");
