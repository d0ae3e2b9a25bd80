// SPDX-License-Identifier: GPL-2.0
/*
 * tandem: synchronous RPC from Linux into the Tandem RTOS (paper 002).
 *
 * /dev/tandem-rpc takes one ioctl, TANDEM_RPC_IOC_CALL: the data is copied
 * into the channel's area of the shared region, the request is written with
 * a new sequence number last, and the doorbell rung (SiP RPC_NOTIFY); the
 * RTOS's server copies the data into its own memory and answers. The caller
 * waits busy (spinning politely), block (asleep until the completion SPI) or
 * auto: busy below x_opt bytes, block from there, with x_opt from paper
 * 002's model, x_opt = V_server * (2 T_ctx + T_c_hdr - T_s2), whose
 * parameters are measured when the driver loads (and again on demand).
 *
 * One call per channel at a time (a mutex). A call whose caller gave up
 * (timeout, signal) may still be in the server, and so may one whose
 * doorbell the firmware refused (the server looks at every channel of its
 * core when any rings): the next call on that channel first rings for it
 * again if need be and waits for its answer, so an echo can never
 * overwrite the next call's data (tandem_rpc_chan.h).
 *
 * A call copies the caller's data into the channel, and an echo's answer
 * back, holding the channel and the instance, so it never waits there in
 * a user page fault (a userfaultfd page nobody serves could hold it, and
 * an unbind behind it, for ever): it copies with page faults disabled,
 * and when a page is not there it lets both go, faults the caller's
 * buffer in, and makes the call again from the start (nothing was
 * published); an echo's answer that cannot be copied back at once is kept
 * in kernel memory and copied after. The common case costs what a plain
 * copy does.
 *
 * Unbinding the driver while calls are in flight: the instance is
 * reference-counted (the device's reference, one per open file, one per
 * sysfs access), so it outlives the device as long as anyone holds it.
 * Calls run inside `users` (read); unbinding marks the instance dead, wakes
 * every sleeper, and takes `users` for writing, so it returns only when no
 * call touches the shared region any more, before that region is unmapped.
 * A call that finds the instance dead, at its start or after a wait, fails
 * with -ENODEV.
 */

#include <linux/arm-smccc.h>
#include <linux/delay.h>
#include <linux/interrupt.h>
#include <linux/jiffies.h>
#include <linux/kref.h>
#include <linux/math64.h>
#include <linux/miscdevice.h>
#include <linux/mutex.h>
#include <linux/pagemap.h>
#include <linux/rwsem.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/tandem_lockstate.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include <linux/wait.h>
#include <clocksource/arm_arch_timer.h>

#include "tandem_abi.h"
#include "tandem_rpc.h"
#include "tandem_rpc_chan.h"
#include "tandem_rpc_uapi.h"

#define RPC_DEFAULT_TIMEOUT_MS	1000
#define RPC_MAX_TIMEOUT_MS	60000
/*
 * Calibration: calls per measurement, the two sizes whose server times give
 * the server's speed (both above the 256 bytes the RTOS answers in its
 * interrupt handler, so both take the server task's path, where the
 * crossover lies; far apart, so the copy dominates the difference), and the
 * size of the block calls that measure the interrupt and the context switch.
 */
#define CAL_REPS		15
#define CAL_SMALL		4096
#define CAL_LARGE		TANDEM_RPC_MAX_DATA
#define CAL_BLOCK		64

struct tandem_rpc_chan {
	struct mutex lock;
	wait_queue_head_t wq;
	void *base;		/* request, response, then data */
	struct rpc_chan_state st;	/* the last request (tandem_rpc_chan.h) */
};

struct tandem_rpc {
	struct device *dev;
	struct miscdevice misc;
	struct tandem_rpc_chan chan[TANDEM_RPC_CHANNELS];
	u32 counter_hz;
	bool available;		/* the firmware serves RPC here */
	atomic64_t last_irq;	/* counter at the last completion interrupt */
	struct mutex model_lock;
	/* Model parameters (ns), server speed (bytes per ms) and threshold. */
	u64 t_ctx_ns, t_c_hdr_ns, t_s2_ns, v_server;
	u32 x_opt;
	atomic64_t calls[3];	/* by the mode used */
	int irq;		/* the completion interrupt */
	struct kref ref;
	struct rw_semaphore users;	/* calls (read), unbinding (write) */
	bool dead;		/* unbound: calls fail with -ENODEV */
};

/* One device: the sysfs attributes find it here (NULL once unbound). */
static struct tandem_rpc *rpc_instance;
static DEFINE_SPINLOCK(rpc_instance_lock);

static void rpc_release(struct kref *ref)
{
	kfree(container_of(ref, struct tandem_rpc, ref));
}

/* The instance with a reference, for a sysfs access; NULL once unbound. */
static struct tandem_rpc *rpc_get(void)
{
	struct tandem_rpc *r;

	spin_lock(&rpc_instance_lock);
	r = rpc_instance;
	if (r)
		kref_get(&r->ref);
	spin_unlock(&rpc_instance_lock);
	return r;
}

static void rpc_put(struct tandem_rpc *r)
{
	kref_put(&r->ref, rpc_release);
}

/* Starts a use of the shared region; false once the device is unbound. */
static bool rpc_enter(struct tandem_rpc *r)
{
	down_read(&r->users);
	if (READ_ONCE(r->dead)) {
		up_read(&r->users);
		return false;
	}
	return true;
}

static void rpc_leave(struct tandem_rpc *r)
{
	up_read(&r->users);
}

/*
 * rpc_call's answer when the caller's buffer has a page that is not there:
 * fault it in without the locks and call again (never returned to user).
 */
#define RPC_FAULT_IN	1

/* Where a call's data comes from, and what it measured. */
struct rpc_req {
	u32 channel, op, len, copy, arg, mode;
	void __user *udata;	/* the caller's copy bytes; NULL: send what the area holds */
	unsigned long deadline;
	/* out */
	s32 status;
	u32 checksum, answer_len, core, seq;
	/* An echo's answer the call could not copy back at once: its tail. */
	void *echo_rest;
	u32 echo_at, echo_left;
	u64 sent, done_at, started_at, irq, seen;
};

static u64 rpc_counter(void)
{
	return arch_timer_read_counter();
}

static u64 rpc_ns(struct tandem_rpc *r, u64 ticks)
{
	return mul_u64_u32_div(ticks, NSEC_PER_SEC, r->counter_hz);
}

static u32 rpc_read32(struct tandem_rpc_chan *ch, unsigned int off)
{
	return le32_to_cpu(READ_ONCE(*(__le32 *)(ch->base + off)));
}

static u64 rpc_read64(struct tandem_rpc_chan *ch, unsigned int off)
{
	return le64_to_cpu(READ_ONCE(*(__le64 *)(ch->base + off)));
}

static void rpc_write32(struct tandem_rpc_chan *ch, unsigned int off, u32 v)
{
	WRITE_ONCE(*(__le32 *)(ch->base + off), cpu_to_le32(v));
}

static bool rpc_answered(struct tandem_rpc_chan *ch, u32 seq)
{
	return rpc_read32(ch, TANDEM_RPC_RESP_SEQ) == seq;
}

static irqreturn_t rpc_irq(int irq, void *arg)
{
	struct tandem_rpc *r = arg;
	unsigned int i;

	atomic64_set(&r->last_irq, rpc_counter());
	for (i = 0; i < TANDEM_RPC_CHANNELS; i++)
		wake_up(&r->chan[i].wq);
	return IRQ_HANDLED;
}

/* Spin on the answer, giving the CPU away whenever the scheduler wants it. */
static int rpc_wait_busy(struct tandem_rpc *r, struct tandem_rpc_chan *ch,
			 u32 seq, unsigned long deadline)
{
	while (!rpc_answered(ch, seq)) {
		if (READ_ONCE(r->dead))
			return -ENODEV;
		if (signal_pending(current))
			return -EINTR;
		if (time_after(jiffies, deadline))
			return -ETIMEDOUT;
		cond_resched();
		cpu_relax();
	}
	return 0;
}

/* Sleep until the completion interrupt shows the answer, or an unbind. */
static int rpc_wait_block(struct tandem_rpc *r, struct tandem_rpc_chan *ch,
			  u32 seq, unsigned long deadline)
{
	long left = (long)(deadline - jiffies);
	long ret;

	if (left <= 0)
		return rpc_answered(ch, seq) ? 0 : -ETIMEDOUT;
	ret = wait_event_interruptible_timeout(ch->wq,
					       rpc_answered(ch, seq) || READ_ONCE(r->dead),
					       left);
	if (ret < 0)
		return -EINTR;
	if (READ_ONCE(r->dead))
		return -ENODEV;
	if (ret == 0 && !rpc_answered(ch, seq))
		return -ETIMEDOUT;
	return 0;
}

/* Rings channel's server; false (logged) if the firmware refuses. */
static bool rpc_ring(struct tandem_rpc *r, unsigned int channel)
{
	struct arm_smccc_res res;

	arm_smccc_smc(TANDEM_SMC_RPC_NOTIFY, channel, 0, 0, 0, 0, 0, 0, &res);
	if ((long)res.a0 == TANDEM_SMC_SUCCESS)
		return true;
	dev_warn_ratelimited(r->dev, "RPC_NOTIFY(%u) refused: %ld\n", channel,
			     (long)res.a0);
	return false;
}

/* The previous call's answer (it may not ask for an interrupt): poll. */
static int rpc_wait_previous(struct tandem_rpc *r, struct tandem_rpc_chan *ch,
			     unsigned long deadline)
{
	while (!rpc_chan_seen(&ch->st, rpc_read32(ch, TANDEM_RPC_RESP_SEQ))) {
		if (READ_ONCE(r->dead))
			return -ENODEV;
		if (signal_pending(current))
			return -EINTR;
		if (time_after(jiffies, deadline))
			return -EBUSY;
		usleep_range(50, 100);
	}
	return 0;
}

static int rpc_status_errno(s32 status)
{
	switch (status) {
	case TANDEM_RPC_STATUS_OK:
		return 0;
	case TANDEM_RPC_STATUS_BAD_LENGTH:
		return -EMSGSIZE;
	case TANDEM_RPC_STATUS_BAD_OP:
		return -EOPNOTSUPP;
	case TANDEM_RPC_STATUS_BAD_ARG:
		return -EINVAL;
	case TANDEM_RPC_STATUS_DISABLED:
		return -EACCES;
	default:
		return -EPROTO;
	}
}

/* One call on a checked request. */
static int rpc_call(struct tandem_rpc *r, struct rpc_req *q)
{
	struct tandem_rpc_chan *ch = &r->chan[q->channel];
	unsigned long flags;
	bool rung;
	u32 seq;
	int ret;

	if (mutex_lock_interruptible(&ch->lock))
		return -EINTR;
	if (READ_ONCE(r->dead)) {
		ret = -ENODEV;
		goto out;
	}
	switch (rpc_chan_next(&ch->st)) {
	case RPC_CHAN_RING:
		rung = rpc_ring(r, q->channel);
		rpc_chan_rang(&ch->st, rung);
		if (!rung) {
			ret = -EIO;
			goto out;
		}
		fallthrough;
	case RPC_CHAN_WAIT:
		ret = rpc_wait_previous(r, ch, q->deadline);
		if (ret)
			goto out;
		break;
	case RPC_CHAN_PUBLISH:
		break;
	}
	if (q->udata && q->copy) {
		unsigned long left;

		pagefault_disable();
		left = __copy_from_user_inatomic(ch->base + TANDEM_RPC_CONTROL_SIZE,
						 q->udata, q->copy);
		pagefault_enable();
		/* Nothing published yet: the call can be made again. */
		if (left) {
			ret = RPC_FAULT_IN;
			goto out;
		}
	}
	rpc_write32(ch, TANDEM_RPC_REQ_OP, q->op);
	rpc_write32(ch, TANDEM_RPC_REQ_LEN, q->len);
	rpc_write32(ch, TANDEM_RPC_REQ_FLAGS,
		    q->mode == TANDEM_RPC_MODE_BLOCK ? TANDEM_RPC_FLAG_NOTIFY : 0);
	rpc_write32(ch, TANDEM_RPC_REQ_ARG, q->arg);
	seq = rpc_chan_publish(&ch->st);
	/* The data and the request before the sequence number that publishes them. */
	wmb();
	rpc_write32(ch, TANDEM_RPC_REQ_SEQ, seq);
	/*
	 * The stamp and the doorbell back to back: preempted or interrupted
	 * between them (the mutex allows both), notify_ns would count Linux's
	 * own detour as the RTOS's response (220 us once, under hackbench).
	 */
	local_irq_save(flags);
	q->sent = rpc_counter();
	/* Refused, the request stays outstanding: the next call rings again. */
	rung = rpc_ring(r, q->channel);
	local_irq_restore(flags);
	rpc_chan_rang(&ch->st, rung);
	if (!rung) {
		ret = -EIO;
		goto out;
	}
	if (q->mode == TANDEM_RPC_MODE_BLOCK)
		ret = rpc_wait_block(r, ch, seq, q->deadline);
	else
		ret = rpc_wait_busy(r, ch, seq, q->deadline);
	q->seen = rpc_counter();
	if (ret)
		goto out;
	rpc_chan_seen(&ch->st, seq);
	/* The answer's fields were written before its sequence number. */
	rmb();
	q->irq = atomic64_read(&r->last_irq);
	q->status = (s32)rpc_read32(ch, TANDEM_RPC_RESP_STATUS);
	q->checksum = rpc_read32(ch, TANDEM_RPC_RESP_CHECKSUM);
	q->answer_len = rpc_read32(ch, TANDEM_RPC_RESP_LEN);
	q->core = rpc_read32(ch, TANDEM_RPC_RESP_CORE);
	q->started_at = rpc_read64(ch, TANDEM_RPC_RESP_STARTED_AT);
	q->done_at = rpc_read64(ch, TANDEM_RPC_RESP_DONE_AT);
	atomic64_inc(&r->calls[q->mode]);
	ret = 0;
	if (q->op == TANDEM_RPC_ECHO && q->status == TANDEM_RPC_STATUS_OK && q->udata) {
		u32 n = min(q->answer_len, q->copy);
		unsigned long left;

		pagefault_disable();
		left = __copy_to_user_inatomic(q->udata, ch->base + TANDEM_RPC_CONTROL_SIZE, n);
		pagefault_enable();
		if (left) {
			/* The answer is taken: keep the rest for after the locks. */
			q->echo_rest = kvmalloc(left, GFP_KERNEL);
			if (!q->echo_rest) {
				ret = -ENOMEM;
				goto out;
			}
			q->echo_at = n - left;
			q->echo_left = left;
			memcpy(q->echo_rest, ch->base + TANDEM_RPC_CONTROL_SIZE + q->echo_at, left);
		}
	}
out:
	q->seq = ch->st.seq;
	mutex_unlock(&ch->lock);
	return ret;
}

static u64 rpc_median(u64 *v, unsigned int n)
{
	unsigned int i, j;

	/* Insertion sort: n is a handful. */
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && v[j - 1] > v[j]; j--)
			swap(v[j - 1], v[j]);
	return v[n / 2];
}

static int rpc_cal_call(struct tandem_rpc *r, u32 len, u32 mode,
			struct rpc_req *q)
{
	*q = (struct rpc_req) {
		.channel = 0, .op = TANDEM_RPC_SEND, .len = len, .mode = mode,
		.deadline = jiffies + msecs_to_jiffies(RPC_DEFAULT_TIMEOUT_MS),
	};
	return rpc_call(r, q);
}

/* One busy calibration call: its round trip and the server's own time (ns). */
static int rpc_cal_busy(struct tandem_rpc *r, u32 len, u64 *rt, u64 *server)
{
	struct rpc_req q;
	int ret;

	ret = rpc_cal_call(r, len, TANDEM_RPC_MODE_BUSY, &q);
	if (ret)
		return ret;
	ret = rpc_status_errno(q.status);
	if (ret)
		return ret;
	/* The server's interval lies inside the round trip (one counter). */
	if (q.done_at <= q.started_at || q.started_at < q.sent || q.seen < q.done_at)
		return -EAGAIN;
	*rt = rpc_ns(r, q.seen - q.sent);
	*server = rpc_ns(r, q.done_at - q.started_at);
	return 0;
}

/* Samples of one calibration (too many for the stack). */
struct rpc_cal {
	u64 waited[2 * CAL_REPS];	/* busy round trip - server's time */
	u64 server[2][CAL_REPS];	/* server's own time, CAL_SMALL, CAL_LARGE */
	u64 hdr[CAL_REPS], ctx[CAL_REPS];
};

/*
 * Measures the model's parameters on channel 0 and sets x_opt. Every busy
 * round trip also carries the doorbell's and the answer's latency, which
 * in QEMU's host timing varies by hundreds of microseconds from call to
 * call, more than the copy of 64 KiB takes; so the copy is timed by the
 * server itself (its own counter stamps in the answer), never by the
 * difference of two round trips:
 * - V_server (bytes per time): the size difference over the difference of
 *   the server's own times (medians) for CAL_SMALL and CAL_LARGE bytes;
 *   the server's fixed part (reading the request, writing the answer) is
 *   what that line leaves at 0 bytes;
 * - T_s2, the fixed part of waiting busy (T_s2 + x / V_server): the median
 *   over the busy calls of each round trip less that call's copy (the
 *   server's own time less its fixed part);
 * - block calls give T_c_hdr, from the server's answer to the completion
 *   interrupt's handler, and T_ctx, from the handler to the caller running
 *   again (one switch; blocking costs two), medians: the client's cost of
 *   blocking is 2 T_ctx + T_c_hdr.
 * Busy is cheaper below x_opt = V_server * (2 T_ctx + T_c_hdr - T_s2), and
 * never if blocking costs less than T_s2 (x_opt 0, logged as such).
 * A block call whose answer was there before the caller slept (no
 * interrupt after the answer), or a busy call whose stamps are out of
 * order, says nothing and is repeated. A parameter that comes out zero or
 * a server time that does not grow with the size is an error (logged; the
 * previous model stays), never a model of zeros.
 */
static long rpc_calibrate_here(void *arg)
{
	u64 rt, sv_small, sv_large, fixed, v, t_s2, t_c_hdr, t_ctx, t_block, x;
	struct tandem_rpc *r = arg;
	unsigned int i, k, tries = 0;
	struct rpc_cal *c;
	struct rpc_req q;
	long ret;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	for (i = 0; i < CAL_REPS; i++) {
		for (k = 0; k < 2; k++) {
			do {
				ret = rpc_cal_busy(r, k ? CAL_LARGE : CAL_SMALL,
						   &rt, &c->server[k][i]);
			} while (ret == -EAGAIN && ++tries <= 4 * CAL_REPS);
			if (ret)
				goto out;
			c->waited[k * CAL_REPS + i] = rt - c->server[k][i];
		}
		ret = rpc_cal_call(r, CAL_BLOCK, TANDEM_RPC_MODE_BLOCK, &q);
		if (ret)
			goto out;
		if (q.irq < q.done_at || q.seen < q.irq) {
			ret = -EAGAIN;
			if (++tries > 4 * CAL_REPS)
				goto out;
			i--;
			continue;
		}
		c->hdr[i] = rpc_ns(r, q.irq - q.done_at);
		c->ctx[i] = rpc_ns(r, q.seen - q.irq);
	}
	sv_small = rpc_median(c->server[0], CAL_REPS);
	sv_large = rpc_median(c->server[1], CAL_REPS);
	if (sv_large <= sv_small) {
		dev_warn(r->dev, "RPC calibration: the server's time does not grow with the size (%u bytes %llu ns, %u bytes %llu ns)\n",
			 CAL_SMALL, sv_small, CAL_LARGE, sv_large);
		ret = -ERANGE;
		goto out;
	}
	/* bytes per ms */
	v = div64_u64((u64)(CAL_LARGE - CAL_SMALL) * NSEC_PER_MSEC, sv_large - sv_small);
	fixed = sv_small - min(sv_small, div64_u64((u64)CAL_SMALL * NSEC_PER_MSEC, v));
	t_s2 = rpc_median(c->waited, 2 * CAL_REPS) + fixed;
	t_c_hdr = rpc_median(c->hdr, CAL_REPS);
	t_ctx = rpc_median(c->ctx, CAL_REPS);
	if (!v || !t_s2 || !t_c_hdr || !t_ctx) {
		dev_warn(r->dev, "RPC calibration: a parameter is zero (T_ctx %llu ns, T_c_hdr %llu ns, T_s2 %llu ns, V_server %llu B/ms)\n",
			 t_ctx, t_c_hdr, t_s2, v);
		ret = -ERANGE;
		goto out;
	}
	t_block = 2 * t_ctx + t_c_hdr;
	x = t_block > t_s2 ? div64_u64((t_block - t_s2) * v, NSEC_PER_MSEC) : 0;
	x = min_t(u64, x, TANDEM_RPC_MAX_DATA + 1);
	mutex_lock(&r->model_lock);
	r->v_server = v;
	r->t_s2_ns = t_s2;
	r->t_c_hdr_ns = t_c_hdr;
	r->t_ctx_ns = t_ctx;
	r->x_opt = x;
	mutex_unlock(&r->model_lock);
	dev_info(r->dev, "RPC model (CPU %d): T_ctx %llu ns, T_c_hdr %llu ns, T_s2 %llu ns, V_server %llu B/ms: x_opt %llu bytes%s\n",
		 raw_smp_processor_id(), t_ctx, t_c_hdr, t_s2, v, x,
		 t_block > t_s2 ? "" : " (blocking costs less than T_s2: auto always blocks)");
	ret = 0;
out:
	if (ret == -EAGAIN)
		dev_warn(r->dev, "RPC calibration: %u calls with stamps out of order, giving up\n",
			 tries);
	kfree(c);
	return ret;
}

/*
 * Calibrates on a CPU other than channel 0's server core, where a client
 * really waits (on the server's own core the RTOS answers before the
 * doorbell call returns, and no wait mode costs anything).
 */
static int rpc_calibrate(struct tandem_rpc *r)
{
	unsigned int cpu, server;
	struct rpc_req q;
	int ret;

	ret = rpc_cal_call(r, CAL_BLOCK, TANDEM_RPC_MODE_BUSY, &q);
	if (ret)
		return ret;
	server = q.core;
	for_each_online_cpu(cpu)
		if (tandem_lockstate_core(cpu) != server)
			return work_on_cpu(cpu, rpc_calibrate_here, r);
	return rpc_calibrate_here(r);
}

static long rpc_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct tandem_rpc *r = container_of(file->private_data, struct tandem_rpc, misc);
	struct tandem_rpc_call __user *uc = (void __user *)arg;
	struct tandem_rpc_call c;
	struct rpc_req q = { 0 };
	u32 timeout;
	int ret;

	if (cmd != TANDEM_RPC_IOC_CALL)
		return -ENOTTY;
	if (copy_from_user(&c, uc, sizeof(c)))
		return -EFAULT;
	if (!r->available)
		return -ENODEV;
	if (c.channel >= TANDEM_RPC_CHANNELS)
		return -ECHRNG;
	if (c.mode > TANDEM_RPC_MODE_BLOCK || (c.flags & ~TANDEM_RPC_F_UNCHECKED))
		return -EINVAL;
	if (c.op < TANDEM_RPC_SEND || c.op > TANDEM_RPC_STALL)
		return -EOPNOTSUPP;
	q.channel = c.channel;
	q.op = c.op;
	q.arg = c.arg;
	if (c.flags & TANDEM_RPC_F_UNCHECKED) {
		if (!capable(CAP_SYS_RAWIO))
			return -EPERM;
		/* The RTOS sees the low 32 bits, as a careless client would write them. */
		q.len = (u32)c.len;
		q.copy = c.len < 0 ? 0 : min_t(u64, c.len, TANDEM_RPC_MAX_DATA);
	} else {
		if (c.len < 0)
			return -EINVAL;
		if (c.len > TANDEM_RPC_MAX_DATA)
			return -EMSGSIZE;
		if (c.op == TANDEM_RPC_STALL && c.arg > TANDEM_RPC_MAX_STALL_MS)
			return -EINVAL;
		q.len = c.len;
		q.copy = c.len;
	}
	if (c.op == TANDEM_RPC_STALL)
		q.copy = 0;
	timeout = c.timeout_ms ? min_t(u32, c.timeout_ms, RPC_MAX_TIMEOUT_MS) :
		  RPC_DEFAULT_TIMEOUT_MS;
	q.deadline = jiffies + msecs_to_jiffies(timeout);
	q.mode = c.mode;
	if (q.mode == TANDEM_RPC_MODE_AUTO)
		q.mode = q.len < READ_ONCE(r->x_opt) ? TANDEM_RPC_MODE_BUSY :
			 TANDEM_RPC_MODE_BLOCK;
	q.udata = u64_to_user_ptr(c.data);
	/* The copies under the locks are the unchecked (inatomic) kind. */
	if (q.copy && !access_ok(q.udata, q.copy))
		return -EFAULT;
	for (;;) {
		if (!rpc_enter(r))
			return -ENODEV;
		ret = rpc_call(r, &q);
		rpc_leave(r);
		if (ret != RPC_FAULT_IN)
			break;
		/* Neither the channel nor the instance held: this may wait. */
		if (fault_in_readable(q.udata, q.copy))
			return signal_pending(current) ? -EINTR : -EFAULT;
		/* Pages taken away again each time: the caller's own doing. */
		if (signal_pending(current))
			return -EINTR;
		if (time_after(jiffies, q.deadline))
			return -ETIMEDOUT;
	}
	if (q.echo_left) {
		if (copy_to_user(q.udata + q.echo_at, q.echo_rest, q.echo_left))
			ret = -EFAULT;
		kvfree(q.echo_rest);
	}
	c.mode = q.mode;
	c.status = q.status;
	c.checksum = q.checksum;
	c.answer_len = q.answer_len;
	c.core = q.core;
	c.seq = q.seq;
	c.round_trip_ns = q.seen > q.sent ? rpc_ns(r, q.seen - q.sent) : 0;
	c.server_ns = q.done_at > q.started_at ? rpc_ns(r, q.done_at - q.started_at) : 0;
	c.notify_ns = q.started_at > q.sent ? rpc_ns(r, q.started_at - q.sent) : 0;
	if (copy_to_user(uc, &c, sizeof(c)))
		return -EFAULT;
	return ret ? ret : rpc_status_errno(q.status);
}

/* An open file keeps the instance (not the device) alive. */
static int rpc_open(struct inode *inode, struct file *file)
{
	struct tandem_rpc *r = container_of(file->private_data, struct tandem_rpc, misc);

	kref_get(&r->ref);
	return 0;
}

static int rpc_release_file(struct inode *inode, struct file *file)
{
	rpc_put(container_of(file->private_data, struct tandem_rpc, misc));
	return 0;
}

static const struct file_operations rpc_fops = {
	.owner = THIS_MODULE,
	.open = rpc_open,
	.release = rpc_release_file,
	.unlocked_ioctl = rpc_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = no_llseek,
};

#define RPC_MODEL_ATTR(name, field, fmt)				\
static ssize_t name##_show(struct device *dev,				\
			   struct device_attribute *attr, char *buf)	\
{									\
	struct tandem_rpc *r = rpc_get();				\
	ssize_t n;							\
									\
	if (!r)								\
		return -ENODEV;						\
	mutex_lock(&r->model_lock);					\
	n = sysfs_emit(buf, fmt "\n", r->field);			\
	mutex_unlock(&r->model_lock);					\
	rpc_put(r);							\
	return n;							\
}									\
static DEVICE_ATTR_RO(name)

RPC_MODEL_ATTR(rpc_t_ctx_ns, t_ctx_ns, "%llu");
RPC_MODEL_ATTR(rpc_t_c_hdr_ns, t_c_hdr_ns, "%llu");
RPC_MODEL_ATTR(rpc_t_s2_ns, t_s2_ns, "%llu");
RPC_MODEL_ATTR(rpc_v_server_bytes_per_ms, v_server, "%llu");

static ssize_t rpc_x_opt_show(struct device *dev, struct device_attribute *attr,
			      char *buf)
{
	struct tandem_rpc *r = rpc_get();
	ssize_t n;

	if (!r)
		return -ENODEV;
	n = sysfs_emit(buf, "%u\n", READ_ONCE(r->x_opt));
	rpc_put(r);
	return n;
}

/* Root may set the threshold by hand (the model's answer is what it holds). */
static ssize_t rpc_x_opt_store(struct device *dev, struct device_attribute *attr,
			       const char *buf, size_t len)
{
	struct tandem_rpc *r;
	u32 v;
	int ret;

	ret = kstrtou32(buf, 0, &v);
	if (ret)
		return ret;
	if (v > TANDEM_RPC_MAX_DATA + 1)
		return -ERANGE;
	r = rpc_get();
	if (!r)
		return -ENODEV;
	WRITE_ONCE(r->x_opt, v);
	rpc_put(r);
	return len;
}
static DEVICE_ATTR_RW(rpc_x_opt);

/* Writing anything measures the model again. */
static ssize_t rpc_calibrate_store(struct device *dev,
				   struct device_attribute *attr,
				   const char *buf, size_t len)
{
	struct tandem_rpc *r = rpc_get();
	int ret = -ENODEV;

	if (!r)
		return -ENODEV;
	if (r->available && rpc_enter(r)) {
		ret = rpc_calibrate(r);
		rpc_leave(r);
	}
	rpc_put(r);
	return ret ? ret : len;
}
static DEVICE_ATTR_WO(rpc_calibrate);

static ssize_t rpc_calls_show(struct device *dev, struct device_attribute *attr,
			      char *buf)
{
	struct tandem_rpc *r = rpc_get();
	ssize_t n;

	if (!r)
		return -ENODEV;
	n = sysfs_emit(buf, "busy %lld block %lld\n",
		       atomic64_read(&r->calls[TANDEM_RPC_MODE_BUSY]),
		       atomic64_read(&r->calls[TANDEM_RPC_MODE_BLOCK]));
	rpc_put(r);
	return n;
}
static DEVICE_ATTR_RO(rpc_calls);

static struct attribute *rpc_attrs[] = {
	&dev_attr_rpc_t_ctx_ns.attr,
	&dev_attr_rpc_t_c_hdr_ns.attr,
	&dev_attr_rpc_t_s2_ns.attr,
	&dev_attr_rpc_v_server_bytes_per_ms.attr,
	&dev_attr_rpc_x_opt.attr,
	&dev_attr_rpc_calibrate.attr,
	&dev_attr_rpc_calls.attr,
	NULL,
};

const struct attribute_group tandem_rpc_group = {
	.attrs = rpc_attrs,
};

struct tandem_rpc *tandem_rpc_probe(struct device *dev, void *shm,
				    size_t shm_size, u32 counter_hz, int irq)
{
	struct arm_smccc_res res;
	struct tandem_rpc *r;
	unsigned int i;
	int ret;

	if ((u64)TANDEM_RPC_OFFSET + (u64)TANDEM_RPC_CHANNELS * TANDEM_RPC_CHANNEL_SIZE >
	    shm_size) {
		dev_err(dev, "RPC: shared region too small for the channels\n");
		return ERR_PTR(-EINVAL);
	}
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return ERR_PTR(-ENOMEM);
	kref_init(&r->ref);
	init_rwsem(&r->users);
	r->dev = dev;
	r->irq = irq;
	r->counter_hz = counter_hz;
	mutex_init(&r->model_lock);
	for (i = 0; i < TANDEM_RPC_CHANNELS; i++) {
		struct tandem_rpc_chan *ch = &r->chan[i];

		mutex_init(&ch->lock);
		init_waitqueue_head(&ch->wq);
		ch->base = shm + TANDEM_RPC_OFFSET + i * TANDEM_RPC_CHANNEL_SIZE;
		/*
		 * Carry on from whatever the region holds (a driver reload); a
		 * request left unanswered is rung for again (st.rung false).
		 */
		ch->st.seq = rpc_read32(ch, TANDEM_RPC_REQ_SEQ);
		ch->st.outstanding = !rpc_answered(ch, ch->st.seq);
	}
	/* Shared with RPMsg's answers (tandem_rproc.c): the same SPI. */
	ret = devm_request_irq(dev, irq, rpc_irq, IRQF_SHARED, "tandem-rpc", r);
	if (ret) {
		dev_err(dev, "RPC: cannot take the doorbell interrupt %d (%d)\n", irq, ret);
		kfree(r);
		return ERR_PTR(ret);
	}
	/* Channel 0 exists if there is any server: ask the firmware. */
	arm_smccc_smc(TANDEM_SMC_RPC_NOTIFY, 0, 0, 0, 0, 0, 0, 0, &res);
	r->available = (long)res.a0 == TANDEM_SMC_SUCCESS;
	r->misc.minor = MISC_DYNAMIC_MINOR;
	r->misc.name = "tandem-rpc";
	r->misc.fops = &rpc_fops;
	r->misc.parent = dev;
	ret = misc_register(&r->misc);
	if (ret) {
		dev_err(dev, "RPC: cannot register /dev/tandem-rpc (%d)\n", ret);
		devm_free_irq(dev, irq, r);
		kfree(r);
		return ERR_PTR(ret);
	}
	spin_lock(&rpc_instance_lock);
	rpc_instance = r;
	spin_unlock(&rpc_instance_lock);
	if (!r->available) {
		dev_info(dev, "RPC: no server in this configuration (%ld)\n", (long)res.a0);
		return r;
	}
	ret = rpc_calibrate(r);
	if (ret)
		dev_warn(dev, "RPC: calibration failed (%d); auto mode always blocks\n", ret);
	return r;
}

/*
 * Unbinding: no new users, every sleeper woken, and back only when no call
 * touches the shared region any more; the instance itself goes when its
 * last open file does.
 */
void tandem_rpc_remove(struct tandem_rpc *r)
{
	unsigned int i;

	spin_lock(&rpc_instance_lock);
	rpc_instance = NULL;
	spin_unlock(&rpc_instance_lock);
	misc_deregister(&r->misc);
	WRITE_ONCE(r->dead, true);
	for (i = 0; i < TANDEM_RPC_CHANNELS; i++)
		wake_up_all(&r->chan[i].wq);
	down_write(&r->users);
	up_write(&r->users);
	/* The handler uses the instance: it goes first. */
	devm_free_irq(r->dev, r->irq, r);
	rpc_put(r);
}
