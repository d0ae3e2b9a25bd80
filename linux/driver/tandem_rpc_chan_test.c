// SPDX-License-Identifier: GPL-2.0
/*
 * Host test of the RPC channel's rules (tandem_rpc_chan.h), built and run
 * by harness/tests/test_driver_rules.py with the host's compiler: a client
 * that follows the driver's steps (tandem_rpc.c, rpc_call) against a model
 * of the RTOS's server, with doorbells refused, answers late, callers that
 * give up, and other channels of the same server core ringing it. Checks
 * that the client never writes a request while the server may still read
 * or answer the last one (the data area would be rewritten under it), and
 * that the channel is never wedged: with the doorbell back and the server
 * answering, the next call succeeds.
 *
 * Exit status 0 when every check holds; otherwise the first failure and the
 * seed that found it are printed.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tandem_rpc_chan.h"

#define fallthrough __attribute__((__fallthrough__))

/* The server's side of one channel (rtos/apps/rpc_server: serve()). */
struct server {
	unsigned int published;	/* Request.seq as the region holds it */
	unsigned int answered;	/* Response.seq: the last it answered */
	int rung;		/* a doorbell for its core is pending */
};

static unsigned long long rng;

static unsigned int draw(unsigned int n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng % n;
}

/* The server looks when rung: it answers whatever Request.seq says now. */
static void server_runs(struct server *s)
{
	if (s->rung && s->published != s->answered)
		s->answered = s->published;
	s->rung = 0;
}

enum outcome { OK, EIO_, EBUSY_, ETIMEDOUT_ };

static const char *failure;

/*
 * One call, in the driver's steps; `refuse` is the chance in 8 that a
 * doorbell is refused, `slow` that the server does not run before the
 * caller gives up.
 */
static enum outcome call(struct rpc_chan_state *c, struct server *s,
			 unsigned int refuse, unsigned int slow)
{
	unsigned int seq;
	int accepted;

	switch (rpc_chan_next(c)) {
	case RPC_CHAN_RING:
		accepted = draw(8) >= refuse;
		s->rung |= accepted;
		rpc_chan_rang(c, accepted);
		if (!accepted)
			return EIO_;
		fallthrough;
	case RPC_CHAN_WAIT:
		if (draw(8) >= slow)
			server_runs(s);
		if (!rpc_chan_seen(c, s->answered))
			return EBUSY_;
		break;
	case RPC_CHAN_PUBLISH:
		break;
	}
	/* Writing the data and a new request: nothing may be in flight. */
	if (s->published != s->answered && !failure)
		failure = "a request was written while the last one could still be answered";
	seq = rpc_chan_publish(c);
	s->published = seq;
	accepted = draw(8) >= refuse;
	s->rung |= accepted;
	rpc_chan_rang(c, accepted);
	if (!accepted)
		return EIO_;
	if (draw(8) >= slow)
		server_runs(s);
	if (s->answered != seq)
		return ETIMEDOUT_;
	rpc_chan_seen(c, seq);
	return OK;
}

int main(void)
{
	unsigned long long seed;

	for (seed = 1; seed <= 20000; seed++) {
		struct rpc_chan_state c = { 0 };
		struct server s = { 0 };
		unsigned int n, refuse, slow;

		rng = seed * 0x9E3779B97F4A7C15ull;
		refuse = draw(8);
		slow = draw(8);
		for (n = 0; n < 64 && !failure; n++) {
			/* Another channel of the same server core rings it. */
			if (draw(4) == 0) {
				s.rung = 1;
				server_runs(&s);
			}
			call(&c, &s, refuse, slow);
		}
		/* The doorbell works again and the server answers: two calls
		 * at most (one may find the last request's answer) succeed.
		 */
		if (!failure && call(&c, &s, 0, 0) != OK && call(&c, &s, 0, 0) != OK)
			failure = "the channel is wedged: a working server does not answer";
		if (failure) {
			printf("FAIL (seed %llu, refused %u/8, slow %u/8): %s\n", seed, refuse,
			       slow, failure);
			return 1;
		}
	}
	printf("ok: 20000 histories of 64 calls\n");
	return 0;
}
