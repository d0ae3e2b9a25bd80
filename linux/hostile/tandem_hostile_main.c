// SPDX-License-Identifier: GPL-2.0
/*
 * tandem_hostile: what a compromised Linux kernel can do to the secure
 * side, as a module, so that tests can do it on purpose (docs/security.md,
 * harness/tests/test_hostile.py). Not loaded unless a test asks; it only
 * attacks, it serves nothing.
 *
 * debugfs, under /sys/kernel/debug/tandem-hostile/:
 *
 *   cpu_off_entry    read: the physical address of a page of code that
 *                    calls PSCI CPU_OFF (a CPU_ON entry point that turns
 *                    its core straight off again: tandem-smc cpu-on-loop)
 *   trap_group0      write "SECONDS": on the writing CPU, read the GIC's
 *                    ICC_IAR0_EL1 (Group 0, the monitor's: it traps to EL3)
 *                    in a loop for that long, taking the Undefined
 *                    Instruction exception the monitor answers with on a
 *                    vector table of our own, as a hostile kernel would;
 *                    read: "accesses A undefined U ns N" of the reading
 *                    CPU's last run (pin both with taskset)
 *   pend_spi         write "INTID CORE": route the SPI INTID to CORE, enable
 *                    and pend it at the distributor, and never take it (an
 *                    interrupt parked on a core Linux does not run on)
 *   cpu_on_reset     write "MPIDR ENTRY DELAY_US": PSCI CPU_ON of that core
 *                    at ENTRY, then, DELAY_US later, SYSTEM_RESET: a CPU_ON
 *                    racing the monitor's restart of this Linux
 *   dma_read         write "PHYS FILL_KIB": read FILL_KIB from 1 MiB into
 *                    /dev/vda and wait for it (on a throttled disk this
 *                    fills the throttle's bucket), then start a read of the
 *                    disk's first page into the page at PHYS and return
 *                    without waiting: a DMA still in flight when this Linux
 *                    reboots, aimed at what the next one's images will be
 */

#include <linux/arm-smccc.h>
#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/gfp.h>
#include <linux/io.h>
#include <linux/irqflags.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/of.h>
#include <linux/of_address.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/uaccess.h>
#include <asm/cacheflush.h>

#include "tandem_hostile.h"

/* PSCI function IDs. */
#define PSCI_CPU_OFF 0x84000002u
#define PSCI_CPU_ON_64 0xc4000003u
#define PSCI_SYSTEM_RESET 0x84000009u
/* Group 0 accesses per stretch with interrupts masked (then a reschedule). */
#define TRAP_CHUNK 64
#define GICD_ISENABLER 0x100
#define GICD_ISPENDR 0x200
#define GICD_IROUTER 0x6000

/* One CPU's last run of trapped accesses. */
struct trap_run {
	u64 accesses;
	u64 undefined;
	u64 ns;
};

static struct dentry *dir;
static unsigned long cpu_off_page;
/* The disk dma_read reads, open until the module goes. */
static struct block_device *dma_disk;
static DEFINE_PER_CPU(struct trap_run, trap_runs);


/* TRAP_CHUNK reads of ICC_IAR0_EL1 on our vector table; returns UNDEFs. */
static u64 trap_chunk(void)
{
	u64 undefined;

	asm volatile("mrs x15, vbar_el1\n"
		     "msr vbar_el1, %1\n"
		     "isb\n"
		     "mov x17, #0\n"
		     "mov x14, %2\n"
		     "1: mrs x13, S3_0_C12_C8_0\n"	/* ICC_IAR0_EL1 */
		     "subs x14, x14, #1\n"
		     "b.ne 1b\n"
		     "msr vbar_el1, x15\n"
		     "isb\n"
		     "mov %0, x17\n"
		     : "=r" (undefined)
		     : "r" (tandem_hostile_vectors), "r" ((u64)TRAP_CHUNK)
		     : "x13", "x14", "x15", "x16", "x17", "cc", "memory");
	return undefined;
}

static ssize_t trap_group0_write(struct file *file, const char __user *ubuf,
				 size_t len, loff_t *ppos)
{
	u64 start, end, accesses = 0, undefined = 0;
	struct trap_run *run;
	unsigned int seconds;
	unsigned long flags;
	int ret;

	ret = kstrtouint_from_user(ubuf, len, 0, &seconds);
	if (ret)
		return ret;
	if (seconds > 600)
		return -EINVAL;
	start = ktime_get_ns();
	end = start + (u64)seconds * NSEC_PER_SEC;
	while (ktime_get_ns() < end) {
		local_irq_save(flags);
		undefined += trap_chunk();
		local_irq_restore(flags);
		accesses += TRAP_CHUNK;
		cond_resched();
	}
	run = get_cpu_ptr(&trap_runs);
	run->accesses = accesses;
	run->undefined = undefined;
	run->ns = ktime_get_ns() - start;
	put_cpu_ptr(&trap_runs);
	return len;
}

static ssize_t trap_group0_read(struct file *file, char __user *ubuf,
				size_t len, loff_t *ppos)
{
	struct trap_run run;
	char buf[96];
	int n;

	run = *get_cpu_ptr(&trap_runs);
	put_cpu_ptr(&trap_runs);
	n = scnprintf(buf, sizeof(buf), "accesses %llu undefined %llu ns %llu\n",
		      run.accesses, run.undefined, run.ns);
	return simple_read_from_buffer(ubuf, len, ppos, buf, n);
}

static const struct file_operations trap_group0_fops = {
	.owner = THIS_MODULE,
	.write = trap_group0_write,
	.read = trap_group0_read,
	.llseek = default_llseek,
};

static ssize_t cpu_off_entry_read(struct file *file, char __user *ubuf,
				  size_t len, loff_t *ppos)
{
	char buf[32];
	int n = scnprintf(buf, sizeof(buf), "%#llx\n",
			  (u64)virt_to_phys((void *)cpu_off_page));

	return simple_read_from_buffer(ubuf, len, ppos, buf, n);
}

static const struct file_operations cpu_off_entry_fops = {
	.owner = THIS_MODULE,
	.read = cpu_off_entry_read,
	.llseek = default_llseek,
};

/*
 * The GIC's distributor, the first region of the device tree's GICv3 node
 * (whichever board: virt's at 0x0800_0000, the i.MX 8M Plus's at
 * 0x3880_0000).
 */
static void __iomem *map_gicd(void)
{
	struct device_node *gic = of_find_compatible_node(NULL, NULL, "arm,gic-v3");
	void __iomem *gicd;

	if (!gic)
		return NULL;
	gicd = of_iomap(gic, 0);
	of_node_put(gic);
	return gicd;
}

static ssize_t pend_spi_write(struct file *file, const char __user *ubuf,
			      size_t len, loff_t *ppos)
{
	unsigned int intid, core;
	void __iomem *gicd;
	char buf[32];

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	if (sscanf(buf, "%u %u", &intid, &core) != 2 || intid < 32 ||
	    intid >= 1020 || core > 0xff)
		return -EINVAL;
	gicd = map_gicd();
	if (!gicd)
		return -ENODEV;
	writeq_relaxed(core, gicd + GICD_IROUTER + 8 * intid);
	writel_relaxed(BIT(intid % 32), gicd + GICD_ISENABLER + 4 * (intid / 32));
	writel(BIT(intid % 32), gicd + GICD_ISPENDR + 4 * (intid / 32));
	iounmap(gicd);
	return len;
}

static const struct file_operations pend_spi_fops = {
	.owner = THIS_MODULE,
	.write = pend_spi_write,
	.llseek = default_llseek,
};

static ssize_t cpu_on_reset_write(struct file *file, const char __user *ubuf,
				  size_t len, loff_t *ppos)
{
	unsigned long long mpidr, entry;
	struct arm_smccc_res res;
	unsigned int delay_us;
	char buf[64];

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	if (sscanf(buf, "%llx %llx %u", &mpidr, &entry, &delay_us) != 3 ||
	    delay_us > 1000000)
		return -EINVAL;
	arm_smccc_smc(PSCI_CPU_ON_64, mpidr, entry, 0, 0, 0, 0, 0, &res);
	pr_info("tandem_hostile: CPU_ON(%#llx, %#llx) = %ld, reset in %u us\n",
		mpidr, entry, (long)res.a0, delay_us);
	udelay(delay_us);
	arm_smccc_smc(PSCI_SYSTEM_RESET, 0, 0, 0, 0, 0, 0, 0, &res);
	return -EIO;	/* SYSTEM_RESET returned: the monitor refused it */
}

static const struct file_operations cpu_on_reset_fops = {
	.owner = THIS_MODULE,
	.write = cpu_on_reset_write,
	.llseek = default_llseek,
};

static void dma_read_done(struct bio *bio)
{
	pr_info("tandem_hostile: dma_read landed (status %d)\n", bio->bi_status);
	bio_put(bio);
}

static ssize_t dma_read_write(struct file *file, const char __user *ubuf,
			      size_t len, loff_t *ppos)
{
	unsigned long long phys;
	unsigned int fill_kib, order;
	struct page *fill;
	struct bio *bio;
	char buf[64];
	int ret;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	if (sscanf(buf, "%llx %u", &phys, &fill_kib) != 2 || offset_in_page(phys) ||
	    !pfn_valid(PHYS_PFN(phys)) || !fill_kib || fill_kib > 1024)
		return -EINVAL;
	if (!dma_disk) {
		struct block_device *disk = blkdev_get_by_path("/dev/vda", FMODE_READ, NULL);

		if (IS_ERR(disk))
			return PTR_ERR(disk);
		dma_disk = disk;
	}
	order = get_order(fill_kib * 1024);
	fill = alloc_pages(GFP_KERNEL, order);
	if (!fill)
		return -ENOMEM;
	bio = bio_alloc(dma_disk, 1, REQ_OP_READ, GFP_KERNEL);
	bio->bi_iter.bi_sector = 2048;
	if (bio_add_page(bio, fill, fill_kib * 1024, 0) != fill_kib * 1024)
		ret = -EIO;
	else
		ret = submit_bio_wait(bio);
	bio_put(bio);
	__free_pages(fill, order);
	if (ret)
		return ret;
	bio = bio_alloc(dma_disk, 1, REQ_OP_READ, GFP_KERNEL);
	bio->bi_iter.bi_sector = 0;
	if (bio_add_page(bio, pfn_to_page(PHYS_PFN(phys)), PAGE_SIZE, 0) != PAGE_SIZE) {
		bio_put(bio);
		return -EIO;
	}
	bio->bi_end_io = dma_read_done;
	submit_bio(bio);
	pr_info("tandem_hostile: dma_read of /dev/vda into %#llx started\n", phys);
	return len;
}

static const struct file_operations dma_read_fops = {
	.owner = THIS_MODULE,
	.write = dma_read_write,
	.llseek = default_llseek,
};

/* The CPU_OFF entry: x0 = CPU_OFF, smc #0; should it return, stay. */
static void write_cpu_off_code(u32 *code)
{
	code[0] = 0x52800000 | ((PSCI_CPU_OFF & 0xffff) << 5);		/* movz w0, #lo */
	code[1] = 0x72a00000 | ((PSCI_CPU_OFF >> 16) << 5);		/* movk w0, #hi, lsl 16 */
	code[2] = 0xd4000003;						/* smc #0 */
	code[3] = 0x14000000;						/* b . */
}

/*
 * Clean [start, end) to the point of coherency: a core entered through
 * CPU_ON runs it with its MMU and caches off (the kernel's own routine for
 * this is not exported to modules).
 */
static void clean_to_poc(unsigned long start, unsigned long end)
{
	u64 ctr = read_sysreg(ctr_el0);
	unsigned long line = 4ul << ((ctr >> 16) & 0xf);	/* DminLine */
	unsigned long at;

	for (at = start & ~(line - 1); at < end; at += line)
		asm volatile("dc cvac, %0" : : "r" (at) : "memory");
	dsb(sy);
}

static int __init tandem_hostile_init(void)
{
	cpu_off_page = get_zeroed_page(GFP_KERNEL);
	if (!cpu_off_page)
		return -ENOMEM;
	write_cpu_off_code((u32 *)cpu_off_page);
	caches_clean_inval_pou(cpu_off_page, cpu_off_page + PAGE_SIZE);
	clean_to_poc(cpu_off_page, cpu_off_page + PAGE_SIZE);

	dir = debugfs_create_dir("tandem-hostile", NULL);
	debugfs_create_file("cpu_off_entry", 0400, dir, NULL, &cpu_off_entry_fops);
	debugfs_create_file("trap_group0", 0600, dir, NULL, &trap_group0_fops);
	debugfs_create_file("pend_spi", 0200, dir, NULL, &pend_spi_fops);
	debugfs_create_file("cpu_on_reset", 0200, dir, NULL, &cpu_on_reset_fops);
	debugfs_create_file("dma_read", 0200, dir, NULL, &dma_read_fops);
	pr_info("tandem_hostile: loaded (a test module that attacks the secure side)\n");
	return 0;
}

static void __exit tandem_hostile_exit(void)
{
	debugfs_remove_recursive(dir);
	if (dma_disk)
		blkdev_put(dma_disk, FMODE_READ);
	free_page(cpu_off_page);
}

module_init(tandem_hostile_init);
module_exit(tandem_hostile_exit);
MODULE_DESCRIPTION("Tandem's hostile-Linux test module");
MODULE_LICENSE("GPL");
