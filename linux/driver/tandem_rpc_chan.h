/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tandem: the client's account of one RPC channel, as rules without
 * hardware, so that a host program can test them
 * (tandem_rpc_chan_test.c) against the driver's own code.
 *
 * A call publishes a request (its sequence number, written last), rings
 * the doorbell, and waits for the answer carrying that number. What the
 * driver must know between calls is whether the last request published
 * may still be read or answered by the server: then the channel's data
 * area must not be written. It may, from the moment its sequence number
 * is in the region until its answer is seen, whatever became of its
 * doorbell: the server looks at every channel of its core whenever any of
 * them rings, so a request whose own doorbell was refused is answered when
 * another channel's call rings. So a refused doorbell leaves the request
 * outstanding, and the next call rings for it again and waits for its
 * answer before it writes anything (a call whose doorbell is still refused
 * fails without writing): the channel is neither rewritten under the
 * server nor wedged once the doorbell works.
 */
#ifndef TANDEM_RPC_CHAN_H
#define TANDEM_RPC_CHAN_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdbool.h>
#endif

struct rpc_chan_state {
	unsigned int seq;	/* of the last request published */
	bool outstanding;	/* its answer has not been seen */
	bool rung;		/* the firmware accepted its doorbell */
};

/* What a new call must do first. */
enum rpc_chan_step {
	RPC_CHAN_PUBLISH,	/* nothing outstanding: write the request */
	RPC_CHAN_RING,		/* ring for the last request, then wait for it */
	RPC_CHAN_WAIT,		/* wait for the last request's answer */
};

static inline enum rpc_chan_step rpc_chan_next(const struct rpc_chan_state *s)
{
	if (!s->outstanding)
		return RPC_CHAN_PUBLISH;
	return s->rung ? RPC_CHAN_WAIT : RPC_CHAN_RING;
}

/* A request is about to be published: its sequence number. */
static inline unsigned int rpc_chan_publish(struct rpc_chan_state *s)
{
	s->seq++;
	s->outstanding = true;
	s->rung = false;
	return s->seq;
}

/* The doorbell for the last request was accepted, or refused. */
static inline void rpc_chan_rang(struct rpc_chan_state *s, bool accepted)
{
	s->rung = accepted;
}

/* The server's response carries `answered`: true if it is the last request's. */
static inline bool rpc_chan_seen(struct rpc_chan_state *s, unsigned int answered)
{
	if (answered != s->seq)
		return false;
	s->outstanding = false;
	return true;
}

#endif /* TANDEM_RPC_CHAN_H */
