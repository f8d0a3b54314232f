// SPDX-License-Identifier: GPL-2.0
/* TCP Vegas as a BPF struct_ops congestion control, "tcp_vegas_bpf" (Klemm 2004 runs TCP Vegas;
 * this kernel is built without CONFIG_TCP_CONG_VEGAS). A line-by-line port of
 * net/ipv4/tcp_vegas.c (Brakmo & Peterson 1995, as implemented by Linux): once per RTT,
 * diff = cwnd * (rtt - baseRTT) / baseRTT is the estimated number of packets queued in the
 * network; cwnd grows by one if diff < alpha, shrinks by one if diff > beta; in slow start,
 * leave slow start when diff > gamma. Linux's module defaults alpha=2, beta=4, gamma=1.
 * Registered per run as `vegas_<runid>` (nodes/tcpctl/kernel.py patches the name); select per flow
 * with `iperf3 -C vegas_<runid>` (setsockopt TCP_CONGESTION); scenario `cc: vegas` does that.
 */
#include "common.bpf.h"

char _license[] SEC("license") = "GPL";

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;
extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;

const volatile __u32 alpha = 2;
const volatile __u32 beta = 4;
const volatile __u32 gamma = 1;

#define TCP_CA_Open 0
#define TCP_CA_CWR 2
#define TCP_CA_Recovery 3
#define TCP_INFINITE_SSTHRESH 0x7fffffff

struct vegas {
	__u32 beg_snd_nxt;  /* right edge during last RTT */
	__u32 beg_snd_una;  /* left edge  during last RTT */
	__u32 beg_snd_cwnd; /* saves the size of the cwnd */
	__u8 doing_vegas_now; /* if true, do vegas for this RTT */
	__u16 cntRTT;       /* # of RTTs measured within last RTT */
	__u32 minRTT;       /* min of RTTs measured within last RTT (in usec) */
	__u32 baseRTT;      /* the min of all Vegas RTT measurements seen (in usec) */
};

static __always_inline struct vegas *vegas_of(struct sock *sk)
{
	return (struct vegas *)icsk_of(sk)->icsk_ca_priv;
}

static __always_inline int in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

static __always_inline __u32 current_ssthresh(struct sock *sk)
{
	const struct tcp_sock *tp = tp_of(sk);
	__u8 ca_state = icsk_of(sk)->icsk_ca_state;

	if ((1 << ca_state) & ((1 << TCP_CA_CWR) | (1 << TCP_CA_Recovery)))
		return tp->snd_ssthresh;
	{
		__u32 a = tp->snd_ssthresh, b = (tp->snd_cwnd >> 1) + (tp->snd_cwnd >> 2);
		return a > b ? a : b;
	}
}

static __always_inline void vegas_enable(struct sock *sk)
{
	const struct tcp_sock *tp = tp_of(sk);
	struct vegas *vegas = vegas_of(sk);

	vegas->doing_vegas_now = 1;
	vegas->beg_snd_nxt = tp->snd_nxt;
	vegas->cntRTT = 0;
	vegas->minRTT = 0x7fffffff;
}

static __always_inline void vegas_init(struct sock *sk)
{
	vegas_of(sk)->baseRTT = 0x7fffffff;
	vegas_enable(sk);
}

SEC("struct_ops/vegas_init")
void BPF_PROG(vegas_init_op, struct sock *sk)
{
	vegas_init(sk);
}

SEC("struct_ops/vegas_pkts_acked")
void BPF_PROG(vegas_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct vegas *vegas = vegas_of(sk);
	__u32 vrtt;

	cc_repair(sk); /* every ACK (tcp_clean_rtx_queue), also in recovery; cong_avoid comes after */
	if (sample->rtt_us < 0)
		return;
	/* Never allow zero rtt or baseRTT */
	vrtt = sample->rtt_us + 1;
	if (vrtt < vegas->baseRTT)
		vegas->baseRTT = vrtt;
	if (vrtt < vegas->minRTT)
		vegas->minRTT = vrtt;
	vegas->cntRTT++;
}

SEC("struct_ops/vegas_state")
void BPF_PROG(vegas_state, struct sock *sk, __u8 ca_state)
{
	cc_repair(sk); /* right after .ssthresh when entering recovery or loss, before PRR uses it */
	if (ca_state == TCP_CA_Open)
		vegas_enable(sk);
	else
		vegas_of(sk)->doing_vegas_now = 0;
}

SEC("struct_ops/vegas_cwnd_event")
void BPF_PROG(vegas_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	if (event == CA_EVENT_CWND_RESTART || event == CA_EVENT_TX_START)
		vegas_init(sk);
}

SEC("struct_ops/vegas_cong_avoid")
void BPF_PROG(vegas_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tp_of(sk);
	struct vegas *vegas = vegas_of(sk);

	if (!vegas->doing_vegas_now) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}
	if (after32(ack, vegas->beg_snd_nxt)) {
		/* Do the Vegas once-per-RTT cwnd adjustment. */
		vegas->beg_snd_nxt = tp->snd_nxt;
		if (vegas->cntRTT <= 2) {
			/* Not enough RTT samples for a Vegas decision: Reno. */
			tcp_reno_cong_avoid(sk, ack, acked);
		} else {
			__u32 rtt = vegas->minRTT, diff, cwnd = tp->snd_cwnd;
			__u64 target_cwnd = (__u64)cwnd * vegas->baseRTT / rtt;

			diff = cwnd * (rtt - vegas->baseRTT) / vegas->baseRTT;
			if (diff > gamma && in_slow_start(tp)) {
				/* Going too fast: switch to congestion avoidance. */
				__u32 t = (__u32)target_cwnd + 1;
				tp->snd_cwnd = cwnd < t ? cwnd : t;
				tp->snd_ssthresh = tp->snd_ssthresh < tp->snd_cwnd ? tp->snd_ssthresh
										    : tp->snd_cwnd;
			} else if (in_slow_start(tp)) {
				tcp_slow_start(tp, acked);
			} else {
				if (diff > beta) {
					tp->snd_cwnd = cwnd - 1;
					tp->snd_ssthresh = tp->snd_ssthresh < tp->snd_cwnd ? tp->snd_ssthresh
											    : tp->snd_cwnd;
				} else if (diff < alpha) {
					tp->snd_cwnd = cwnd + 1;
				}
			}
			if (tp->snd_cwnd < 2)
				tp->snd_cwnd = 2;
			else if (tp->snd_cwnd > tp->snd_cwnd_clamp)
				tp->snd_cwnd = tp->snd_cwnd_clamp;
			tp->snd_ssthresh = current_ssthresh(sk);
		}
		vegas->cntRTT = 0;
		vegas->minRTT = 0x7fffffff;
	} else if (in_slow_start(tp)) {
		tcp_slow_start(tp, acked);
	}
}

SEC("struct_ops/vegas_ssthresh")
__u32 BPF_PROG(vegas_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops/vegas_undo_cwnd")
__u32 BPF_PROG(vegas_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops vegas = {
	.init = (void *)vegas_init_op,
	.ssthresh = (void *)vegas_ssthresh,
	.cong_avoid = (void *)vegas_cong_avoid,
	.set_state = (void *)vegas_state,
	.cwnd_event = (void *)vegas_cwnd_event,
	.pkts_acked = (void *)vegas_pkts_acked,
	.undo_cwnd = (void *)vegas_undo_cwnd,
	.name = "tcp_vegas_bpf",
	/* may be a network namespace's default (net.ipv4.tcp_congestion_control in a station) */
	.flags = TCP_CONG_NON_RESTRICTED,
};
