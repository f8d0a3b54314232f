// SPDX-License-Identifier: GPL-2.0
/* Kernel-side cross-layer control of Linux TCP (issue 5; docs/tcpctl.md, docs/fidelity.md).
 *
 * Two parts share the per-connection maps `tcpctl_ctl` (commands, written by the endpoint agent)
 * and `tcpctl_st` (state, written here):
 *
 *  - `tcpctl_sockops`, a cgroup sock_ops program: per connection of a registered network
 *    namespace it enables the RTO, RETRANS, STATE and RTT callbacks, keeps the srtt range, logs
 *    every RTO expiration, and applies the RTO policy by capping the next backoff with
 *    TCP_RTO_MAX_MS (Linux 6.15), which tcp_retransmit_timer() applies right after
 *    BPF_SOCK_OPS_RTO_CB:  icsk_rto = min(icsk_rto << 1, rto_max).
 *      * fixed_after_two (Dyer & Boppana): "after two consecutive timeouts, stop doubling the
 *        RTO until the retransmitted packet is acknowledged" -> at the 2nd expiration,
 *        rto_max = icsk_rto.
 *      * abra (Ghanem 2008 section 3): "RTO_new = backoff_new x RTO_current,
 *        backoff_new = 1 + (last_srtt - min_srtt)/(max_srtt - min_srtt)" -> rto_max =
 *        backoff_new x icsk_rto at every expiration; "when an ACK covers the retransmission,
 *        return to the saved state with cwnd/2 and ssthresh/4" -> a pending restore that the
 *        controllable congestion control below executes.
 *
 *  - `mtctl`, a struct_ops tcp_congestion_ops: Reno (the kernel's own tcp_reno_* kfuncs) that
 *    also executes the agent's commands (snapshot at an ELFN freeze, restore old/default at the
 *    thaw, set cwnd/ssthresh for ATCP and ABRA). Only a congestion control may write snd_cwnd.
 *    The loader renames it per run (mtctl_<runid>).
 */
#include "common.bpf.h"
#include "tcpctl.h"

char _license[] SEC("license") = "GPL";

extern unsigned int CONFIG_HZ __kconfig;

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

#define DEFAULT_RTO_MAX_MS 120000 /* TCP_RTO_MAX */
#define ELFN_DEFAULT_RTO_MS 6000  /* Yu 2004 s3.1: "default values (RTO 6 s, cwnd 2)" */
#define RTO_MAX_FLOOR_MS 1000     /* the kernel's floor for TCP_RTO_MAX_MS */
#define TCP_RTO_MIN_MS 200        /* TCP_RTO_MIN: the base of tcp_model_timeout() */
#define TCP_USER_TIMEOUT 18       /* include/uapi/linux/tcp.h */
/* Longest the thaw's restore=old RTO cap lasts, in round trips of the srtt at the freeze. Linux's
 * rttvar_us falls by 1/4 of its excess per round trip (tcp_rtt_estimator), so a spike of 10x the
 * old RTO is gone in ln 10 / ln(4/3) = 8 round trips; this is twice that. Ours, not the paper's:
 * ns-2's ELFN restores the RTO and takes no samples from the freeze (docs/fidelity.md). */
#define RESTORE_OLD_HOLD_MAX_RTTS 16
/* st->rto_hold: which thaw holds the RTO under a cap */
#define RTO_HOLD_DEFAULT 1 /* restore=default: exactly 6 s */
#define RTO_HOLD_OLD 2     /* restore=old: the RTO at the freeze */
#define RTO_HOLD_PRE 3     /* a restore's cap set before its ACK's RTT sample (on_hdr_in); the
			    * command's execution (ctl_apply) replaces it, a command that replaced
			    * the restore ends it */
/* Stations (network namespaces) one run can register; kernel.py MAX_STATIONS is the same number.
 * The papers' largest field is 100 stations (Cohen, Yu's 100-node field). */
#define TCPCTL_MAX_STATIONS 1024

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TCPCTL_MAX_STATIONS);
	__type(key, __u64);   /* netns cookie of a station */
	__type(value, __u32); /* station id */
} tcpctl_netns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct tcpctl_key);
	__type(value, struct tcpctl_ctl);
} tcpctl_ctl SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct tcpctl_key);
	__type(value, struct tcpctl_st);
} tcpctl_st SEC(".maps");

/* One all-zero entry, never written: a new connection's tcpctl_st starts from it (the struct is
 * too large for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tcpctl_st);
} tcpctl_st_zero SEC(".maps");

static __always_inline __u32 jiffies_to_us(__u32 j)
{
	return j * (1000000 / CONFIG_HZ);
}

static __always_inline void key_of(const struct sock *sk, struct tcpctl_key *k)
{
	k->netns = sk->__sk_common.skc_net.net->net_cookie;
	k->saddr = sk->__sk_common.skc_rcv_saddr;
	k->daddr = sk->__sk_common.skc_daddr;
	k->sport = sk->__sk_common.skc_num;
	k->dport = bpf_ntohs(sk->__sk_common.skc_dport);
	k->pad = 0;
}

/* ------------------------------------------------------------------ sock_ops */

static __always_inline void set_rto_max(struct bpf_sock_ops *skops, struct tcpctl_st *st, __u32 ms)
{
	int v = ms;

	if (v < RTO_MAX_FLOOR_MS)
		v = RTO_MAX_FLOOR_MS;
	if (bpf_setsockopt(skops, SOL_TCP, TCP_RTO_MAX_MS, &v, sizeof(v)))
		st->setsockopt_err++;
	else
		st->rto_max_ms = v;
}

/* Linux's give-up time of an established connection in this namespace, ms: tcp_model_timeout()
 * with TCP_RTO_MIN as the base, the namespace's tcp_retries2 and tcp_rto_max_ms (not the
 * socket's rto_max, which a policy lowers: since Linux 6.15 retransmits_timed_out() models the
 * budget with tcp_rto_max(sk), so a 1 s cap gave up after about 14 s instead of about 925 s). */
static __always_inline __u32 baseline_give_up_ms(struct tcp_sock *tp)
{
	struct net *net = tp->inet_conn.icsk_inet.sk.__sk_common.skc_net.net;
	__u32 boundary = BPF_CORE_READ(net, ipv4.sysctl_tcp_retries2);
	__u32 rto_max = BPF_CORE_READ(net, ipv4.sysctl_tcp_rto_max_ms);
	__u32 base = TCP_RTO_MIN_MS, q, thresh = 0;
	int k;

	if (!rto_max)
		rto_max = DEFAULT_RTO_MAX_MS;
	q = rto_max / base;
	for (k = 0; k < 31; k++) { /* ilog2 */
		if (q <= 1)
			break;
		q >>= 1;
		thresh++;
	}
	if (boundary <= thresh)
		return ((2u << boundary) - 1) * base;
	return ((2u << thresh) - 1) * base + (boundary - thresh) * rto_max;
}

/* A policy that caps the RTO keeps the baseline's give-up time (TCP_USER_TIMEOUT replaces the
 * modelled budget in retransmits_timed_out()). */
static __always_inline void keep_give_up(struct bpf_sock_ops *skops, struct tcp_sock *tp,
					 struct tcpctl_st *st)
{
	int ms = baseline_give_up_ms(tp);

	if (tp->inet_conn.icsk_user_timeout == (__u32)ms)
		return;
	if (bpf_setsockopt(skops, SOL_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms)))
		st->setsockopt_err++;
}

static __always_inline void on_rto(struct bpf_sock_ops *skops, struct tcp_sock *tp,
				   struct tcpctl_st *st, const struct tcpctl_ctl *ctl)
{
	__u32 rto_us = jiffies_to_us(skops->args[1]);
	__u32 srtt_us = skops->srtt_us >> 3;
	__u32 i = st->n_rto % TCPCTL_RTO_LOG;
	__u32 next_us = 0;

	if (st->rto_hold == RTO_HOLD_OLD || st->rto_hold == RTO_HOLD_PRE) {
		/* a timeout while restore=old caps the RTO: the kernel backs off from the RTO at the
		 * freeze, as the paper's TCP would from the restored one */
		st->rto_hold = 0;
		set_rto_max(skops, st, DEFAULT_RTO_MAX_MS);
	}
	if (st->consec_rto == 0) {
		/* ABRA: "save cwnd, ssthresh and srtt as last_cwnd, last_ssthr, last_srtt when the
		 * retransmission timer expires" (first expiration of a series: the state before it). */
		st->series_una = skops->snd_una;
		st->last_cwnd = skops->snd_cwnd;
		st->last_ssthresh = skops->snd_ssthresh;
		st->last_srtt_us = srtt_us;
	}
	st->consec_rto++;
	st->rto_us = rto_us;

	if (ctl && ctl->policy == POLICY_FIXED_AFTER_TWO && st->consec_rto >= 2) {
		/* "the RTO is not doubled a second time and remains fixed until the route is
		 * reestablished and the retransmitted packet is acknowledged" */
		next_us = rto_us;
	} else if (ctl && ctl->policy == POLICY_ABRA) {
		__u32 mn = ctl->abra_min_srtt_us, mx = ctl->abra_max_srtt_us;
		__u64 f1000;

		if (st->min_srtt_us && st->min_srtt_us < mn)
			mn = st->min_srtt_us;
		if (st->max_srtt_us > mx)
			mx = st->max_srtt_us;
		/* backoff_new = 1 + (last_srtt - min_srtt) / (max_srtt - min_srtt), in [1, 2] */
		if (mx > mn && st->last_srtt_us > mn)
			f1000 = 1000 + ((__u64)(st->last_srtt_us - mn) * 1000) / (mx - mn);
		else
			f1000 = 1000;
		if (f1000 > 2000)
			f1000 = 2000;
		next_us = (__u32)(((__u64)rto_us * f1000) / 1000);
	}
	if (next_us) {
		set_rto_max(skops, st, (next_us + 999) / 1000);
		keep_give_up(skops, tp, st);
	}
	st->rto_ts_ns[i & (TCPCTL_RTO_LOG - 1)] = bpf_ktime_get_ns();
	st->rto_log_us[i & (TCPCTL_RTO_LOG - 1)] = rto_us;
	st->rto_next_us[i & (TCPCTL_RTO_LOG - 1)] = next_us;
	st->n_rto++;
}

static __always_inline void on_rtt(struct bpf_sock_ops *skops, struct tcp_sock *tp,
				   struct tcpctl_st *st, const struct tcpctl_ctl *ctl)
{
	__u32 srtt_us = skops->srtt_us >> 3;
	/* tcp_bpf_rtt(sk, mrtt_us, srtt): args[0] the sample (us), args[1] tp->srtt_us after it
	 * (<< 3). The kernel calls it once per round trip (tcp_rtt_estimator(), where it updates
	 * rttvar: after(snd_una, rtt_seq)), so each call is one sample of the estimator's error. The
	 * estimate the sample found is undone from srtt8 = 7/8 srtt8_old + mrtt: srtt_old =
	 * (srtt8 - mrtt) / 7 (us). */
	__u32 mrtt_us = skops->args[0];
	__u32 srtt8 = skops->args[1];

	if (st->n_rtt && mrtt_us > 0 && srtt8 >= mrtt_us) {
		__u64 m = (__u64)mrtt_us;
		__u64 before = (__u64)(srtt8 - mrtt_us) / 7;
		__u64 err = (before > m ? before - m : m - before) / RTT_ERR_UNIT_US;

		st->rtt_sum_us += m;
		st->rtt_sqerr += err * err;
		st->rtt_err_n++;
	}
	st->n_rtt++;
	st->srtt_us = srtt_us;
	/* RTT_CB runs at the end of tcp_rtt_estimator(), before tcp_set_rto(): the RTO this sample
	 * gives is __tcp_set_rto() = srtt + rttvar (rttvar_us already includes the rto_min floor
	 * through mdev_max_us). ATCP predicts "TCP's RTO is about to expire" from it. */
	st->rttvar_us = tp->rttvar_us;
	st->rto_est_us = srtt_us + tp->rttvar_us;
	if (srtt_us) {
		if (!st->min_srtt_us || srtt_us < st->min_srtt_us)
			st->min_srtt_us = srtt_us;
		if (srtt_us > st->max_srtt_us)
			st->max_srtt_us = srtt_us;
	}
	if (st->consec_rto && after32(skops->snd_una, st->series_una)) {
		/* "When an ACK covers the retransmission" */
		st->consec_rto = 0;
		st->recoveries++;
		if (st->rto_max_ms && st->rto_max_ms != DEFAULT_RTO_MAX_MS && !st->rto_hold)
			set_rto_max(skops, st, DEFAULT_RTO_MAX_MS); /* (a thaw's cap ends in ctl_apply) */
		if (ctl && ctl->policy == POLICY_ABRA) {
			/* "return to the saved state with cwnd/2 and ssthresh/4" */
			st->pending_cwnd = st->last_cwnd / 2 ? st->last_cwnd / 2 : 1;
			st->pending_ssthresh = st->last_ssthresh / 4 >= 2 ? st->last_ssthresh / 4 : 2;
			st->pending = 1;
		}
	}
}

/* The RTO cap (ms, before the kernel's floor) an ELFN restore command sets; 0: not a restore. */
static __always_inline __u32 restore_cap_ms(const struct tcpctl_st *st, __u32 cmd)
{
	if (cmd == CMD_RESTORE_OLD)
		return (st->frz_rto_us + 999) / 1000; /* the RTO at the freeze */
	if (cmd == CMD_RESTORE_DEFAULT)
		return ELFN_DEFAULT_RTO_MS;
	return 0;
}

/* A thaw's RTO cap before the thawing ACK's RTT sample. Linux 6.18 runs in_ack_event (where
 * ctl_apply executes a command) after tcp_clean_rtx_queue() has taken the ACK's RTT sample and
 * set the RTO from it, and the kernel prefers the segments' send times to the echoed timestamp: a
 * thawing ACK of segments the kernel sent before the freeze (never retransmitted by it; the
 * agent's probe is a copy) gives a sample as long as the freeze, and the RTO stayed at it until
 * the next sample (measured: RTO 0.9 -> 8.7 s for 0.2 s after a 7.6 s freeze, CI red). This
 * callback runs for every incoming segment with options (tcp_validate_incoming(), before
 * tcp_ack()): while a restore command waits, set its cap now; ctl_apply then executes the
 * command on the same ACK (and sets the same cap again). */
static __always_inline void on_hdr_in(struct bpf_sock_ops *skops, struct tcpctl_st *st,
				      const struct tcpctl_ctl *ctl)
{
	__u32 ms;

	/* only sockets of the controllable congestion control execute commands (ctl_apply) */
	if (!ctl || ctl->cmd_seq == st->cmd_done || !st->ca_seen)
		return;
	ms = restore_cap_ms(st, ctl->cmd);
	if (!ms)
		return;
	if (ms < RTO_MAX_FLOOR_MS)
		ms = RTO_MAX_FLOOR_MS;
	if (st->rto_hold != RTO_HOLD_PRE || st->rto_max_ms != ms)
		set_rto_max(skops, st, ms);
	/* also keeps on_rtt's end of a timeout series from lifting it on this ACK */
	st->rto_hold = RTO_HOLD_PRE;
}

SEC("sockops")
int tcpctl_sockops(struct bpf_sock_ops *skops)
{
	struct tcpctl_key k = {};
	struct tcpctl_st *st;
	struct tcpctl_ctl *ctl;
	struct tcp_sock *tp;
	struct bpf_sock *bsk;
	__u32 op = skops->op;

	if (skops->family != AF_INET)
		return 1;
	bsk = skops->sk;
	if (!bsk)
		return 1;
	tp = bpf_skc_to_tcp_sock(bsk);
	if (!tp)
		return 1;
	key_of((struct sock *)tp, &k);
	if (!bpf_map_lookup_elem(&tcpctl_netns, &k.netns))
		return 1;

	if (op == BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB || op == BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB) {
		__u32 z = 0;
		struct tcpctl_st *zero = bpf_map_lookup_elem(&tcpctl_st_zero, &z);

		if (!zero)
			return 1;
		bpf_map_update_elem(&tcpctl_st, &k, zero, BPF_ANY);
		bpf_sock_ops_cb_flags_set(skops, BPF_SOCK_OPS_RTO_CB_FLAG | BPF_SOCK_OPS_RETRANS_CB_FLAG |
							 BPF_SOCK_OPS_STATE_CB_FLAG | BPF_SOCK_OPS_RTT_CB_FLAG |
							 BPF_SOCK_OPS_PARSE_ALL_HDR_OPT_CB_FLAG);
		return 1;
	}
	st = bpf_map_lookup_elem(&tcpctl_st, &k);
	if (!st)
		return 1;
	ctl = bpf_map_lookup_elem(&tcpctl_ctl, &k);
	switch (op) {
	case BPF_SOCK_OPS_RTO_CB:
		on_rto(skops, tp, st, ctl);
		break;
	case BPF_SOCK_OPS_RTT_CB:
		on_rtt(skops, tp, st, ctl);
		break;
	case BPF_SOCK_OPS_PARSE_HDR_OPT_CB:
		on_hdr_in(skops, st, ctl);
		break;
	case BPF_SOCK_OPS_RETRANS_CB:
		st->n_retrans++;
		break;
	case BPF_SOCK_OPS_STATE_CB:
		st->state = skops->args[1];
		break;
	}
	return 1;
}

/* ------------------------------------------------------------------ controllable Reno */

static __always_inline void set_cw(struct tcp_sock *tp, struct tcpctl_st *st, __u32 cwnd, __u32 ssthresh)
{
	if (cwnd) {
		tp->snd_cwnd = cwnd;
		st->applied_cwnd = cwnd;
	}
	if (ssthresh) {
		tp->snd_ssthresh = ssthresh;
		st->applied_ssthresh = ssthresh;
	}
}

/* TCP_RTO_MAX_MS from the congestion control (ms; the kernel's floor is 1000). 1 if set. */
static __always_inline int ca_set_rto_max(struct sock *sk, struct tcpctl_st *st, int ms)
{
	if (ms < RTO_MAX_FLOOR_MS)
		ms = RTO_MAX_FLOOR_MS;
	if (bpf_setsockopt(sk, SOL_TCP, TCP_RTO_MAX_MS, &ms, sizeof(ms))) {
		st->setsockopt_err++;
		return 0;
	}
	st->rto_max_ms = ms;
	return 1;
}

/* A thaw's RTO cap ends: the kernel's own RTO again. */
static __always_inline void rto_hold_end(struct sock *sk, struct tcpctl_st *st)
{
	st->rto_hold = 0;
	ca_set_rto_max(sk, st, DEFAULT_RTO_MAX_MS);
}

/* Does this ACK end the thaw's RTO cap? restore=default (RTO 6 s) ends at the first ACK of data
 * sent after the thaw (snd_nxt then). restore=old ends once such an ACK has come and the
 * kernel's own estimator, __tcp_set_rto() = srtt + rttvar, is back under the cap, or at any ACK
 * RESTORE_OLD_HOLD_MAX_RTTS round trips of the srtt at the freeze after the thaw (then the path
 * itself has a longer RTT and the estimator takes over). A new command or a timeout also ends
 * it. Runs in in_ack_event, after this ACK's RTT sample (Linux 6.18). */
static __always_inline int rto_hold_release(struct tcp_sock *tp, struct tcpctl_st *st)
{
	__u64 est_us;

	if (!st->rto_hold)
		return 0;
	if (st->rto_hold == RTO_HOLD_PRE)
		return 1; /* its command was replaced before it ran (ctl_apply runs commands first) */
	if (st->rto_hold == RTO_HOLD_OLD &&
	    (__s32)((__u32)(bpf_ktime_get_ns() / 1000000) - st->rto_hold_until_ms) >= 0)
		return 1;
	if ((__s32)(tp->snd_una - st->rto_hold_seq) <= 0)
		return 0;
	if (st->rto_hold != RTO_HOLD_OLD)
		return 1;
	est_us = (__u64)(tp->srtt_us >> 3) + tp->rttvar_us;
	return est_us <= (__u64)st->rto_max_ms * 1000;
}

/* Execute a new command or a pending restore; in cong_avoid (the last writer of cwnd while
 * an ACK is processed) re-assert what was applied earlier in the same ACK, so loss recovery
 * code between in_ack_event and cong_avoid cannot undo it. Returns 1 if cwnd was set. */
static __always_inline int ctl_apply(struct sock *sk, int in_cong_avoid)
{
	struct tcp_sock *tp = tp_of(sk);
	struct tcpctl_key k = {};
	struct tcpctl_ctl *ctl;
	struct tcpctl_st *st;

	key_of(sk, &k);
	st = bpf_map_lookup_elem(&tcpctl_st, &k);
	if (!st)
		return 0;
	st->ca_seen = 1;
	if (!in_cong_avoid && st->post_pending) {
		st->post_cwnd = tp->snd_cwnd;
		st->post_rto_us = jiffies_to_us(tp->inet_conn.icsk_rto);
		st->post_pending = 0;
	}
	ctl = bpf_map_lookup_elem(&tcpctl_ctl, &k);
	if (ctl && ctl->cmd_seq != st->cmd_done) {
		st->cmd_done = ctl->cmd_seq;
		st->hold_cwnd = 0; /* a new command ends an earlier CMD_SET's hold */
		if (st->rto_hold) {
			/* ... and a thaw's RTO cap: TCP_RTO_MAX_MS also bounds the kernel's zero-window
			 * probing (its interval, and the connection is dropped after 2 x rto_max without
			 * an ACK), which the next freeze or persist relies on. Seen: ATCP connections
			 * reset (ETIMEDOUT) 16 s into a disconnection with a 1 s cap. */
			rto_hold_end(sk, st);
		}
		switch (ctl->cmd) {
		case CMD_SNAPSHOT:
			st->frz_cwnd = tp->snd_cwnd;
			st->frz_ssthresh = tp->snd_ssthresh;
			st->frz_srtt_us = tp->srtt_us >> 3;
			st->frz_rto_us = jiffies_to_us(tp->inet_conn.icsk_rto);
			break;
		case CMD_RESTORE_CWND:
			set_cw(tp, st, st->frz_cwnd, st->frz_ssthresh);
			st->armed = 1;
			break;
		case CMD_RESTORE_OLD:
			set_cw(tp, st, st->frz_cwnd, st->frz_ssthresh);
			st->armed = 1;
			/* ELFN restore=old keeps the RTO at the freeze. The thawing ACK's own RTT sample is
			 * set by the agent (TSecr), but the kernel prefers the segments' send times: SACK
			 * blocks (or a cumulative ACK without a retransmitted segment) for segments sent
			 * before the freeze give samples as long as the freeze (measured: srtt 0.39 s ->
			 * 1.7 s, RTO 0.89 s -> 11.3 s after a 5.6 s freeze). Cap the RTO at its value at
			 * the freeze until the estimator is back under it (see rto_hold_release). */
			if (ca_set_rto_max(sk, st, restore_cap_ms(st, CMD_RESTORE_OLD))) {
				st->rto_hold = RTO_HOLD_OLD;
				st->rto_hold_seq = tp->snd_nxt;
				st->rto_hold_until_ms = (__u32)(bpf_ktime_get_ns() / 1000000) +
							RESTORE_OLD_HOLD_MAX_RTTS * (st->frz_srtt_us / 1000 + 1);
			}
			break;
		case CMD_RESTORE_DEFAULT:
			set_cw(tp, st, 2, st->frz_ssthresh);
			st->armed = 1;
			/* ELFN default RTO 6 s: cap the RTO at 6 s now (the agent made the thawing ACK carry
			 * an RTT sample that puts the estimator above it) until the first ACK of new data */
			ca_set_rto_max(sk, st, restore_cap_ms(st, CMD_RESTORE_DEFAULT));
			st->rto_hold = RTO_HOLD_DEFAULT;
			st->rto_hold_seq = tp->snd_nxt;
			break;
		case CMD_SET:
			set_cw(tp, st, ctl->arg_cwnd, ctl->arg_ssthresh);
			st->armed = 1;
			/* ATCP (Liu & Singh 2001, section IV): "ATCP sets TCP congestion window to one
			 * segment upon Destination Unreachable ICMP messages" while TCP waits in persist.
			 * The kernel's own retransmission timer with a zero window still runs
			 * tcp_enter_loss(), which sets cwnd = packets in flight + 1;
			 * with RACK, segments sent within the last RTT are not yet marked lost, so that can
			 * be above the value set here (seen: 5 after a set of 1). Hold the value as a ceiling
			 * (mtctl_set_state, mtctl_cong_avoid) until an ACK with an open window advances
			 * snd_una: the connection is moving again. */
			if (ctl->arg_cwnd) {
				st->hold_cwnd = ctl->arg_cwnd;
				st->hold_una = tp->snd_una;
			}
			break;
		}
		if (restore_cap_ms(st, ctl->cmd)) {
			/* an ELFN restore ran: after this ACK's RTT sample set the RTO (tcp_set_rto, bounded by the cap) */
			st->thaw_rto_us = jiffies_to_us(tp->inet_conn.icsk_rto);
			st->thaws++;
		}
	}
	if (!in_cong_avoid && st->hold_cwnd && after32(tp->snd_una, st->hold_una) && tp->snd_wnd)
		st->hold_cwnd = 0; /* an ACK of new data with an open window: the CMD_SET hold ends
				    * (ACKs the agent rewrites to window 0 while it holds the sender,
				    * e.g. late ones that were in flight, do not end it) */
	if (!in_cong_avoid && rto_hold_release(tp, st))
		rto_hold_end(sk, st);
	if (st->pending) {
		set_cw(tp, st, st->pending_cwnd, st->pending_ssthresh);
		st->pending = 0;
		st->armed = 1;
	}
	if (in_cong_avoid && st->armed) {
		set_cw(tp, st, st->applied_cwnd, st->applied_ssthresh);
		st->armed = 0;
		st->post_pending = 1;
		return 1;
	}
	return 0;
}

/* A CMD_SET hold as a ceiling on cwnd (see CMD_SET in ctl_apply). */
static __always_inline void hold_cap(struct sock *sk)
{
	struct tcp_sock *tp = tp_of(sk);
	struct tcpctl_key k = {};
	struct tcpctl_st *st;

	key_of(sk, &k);
	st = bpf_map_lookup_elem(&tcpctl_st, &k);
	if (st && st->hold_cwnd && tp->snd_cwnd > st->hold_cwnd) {
		tp->snd_cwnd = st->hold_cwnd;
		st->hold_caps++;
	}
}

SEC("struct_ops/mtctl_init")
void BPF_PROG(mtctl_init, struct sock *sk)
{
}

SEC("struct_ops/mtctl_in_ack_event")
void BPF_PROG(mtctl_in_ack_event, struct sock *sk, __u32 flags)
{
	cc_repair(sk); /* every ACK, also in recovery */
	ctl_apply(sk, 0);
}

SEC("struct_ops/mtctl_cong_avoid")
void BPF_PROG(mtctl_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	if (ctl_apply(sk, 1))
		return;
	tcp_reno_cong_avoid(sk, ack, acked);
	hold_cap(sk); /* late ACKs while held (window 0) do not grow cwnd past the hold */
}

/* tcp_set_ca_state() calls this after tcp_enter_loss() has set cwnd (the last writer of cwnd
 * when the retransmission timer expires): enforce a CMD_SET hold as a ceiling. */
SEC("struct_ops/mtctl_set_state")
void BPF_PROG(mtctl_set_state, struct sock *sk, __u8 new_state)
{
	cc_repair(sk); /* right after .ssthresh when entering recovery or loss, before PRR uses it */
	hold_cap(sk);
}

SEC("struct_ops/mtctl_ssthresh")
__u32 BPF_PROG(mtctl_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops/mtctl_undo_cwnd")
__u32 BPF_PROG(mtctl_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops")
struct tcp_congestion_ops mtctl = {
	.init = (void *)mtctl_init,
	.in_ack_event = (void *)mtctl_in_ack_event,
	.cong_avoid = (void *)mtctl_cong_avoid,
	.set_state = (void *)mtctl_set_state,
	.ssthresh = (void *)mtctl_ssthresh,
	.undo_cwnd = (void *)mtctl_undo_cwnd,
	.name = "mtctl",
	/* may be a network namespace's default (net.ipv4.tcp_congestion_control in a station) */
	.flags = TCP_CONG_NON_RESTRICTED,
};
