// SPDX-License-Identifier: GPL-2.0
/* The TCP profile knobs that no sysctl or route metric carries (issue 45; docs/tcpctl.md "TCP
 * profiles", topologies/tcp_profiles.py). A cgroup sock_ops program, loaded once per run that
 * needs it and acting only on sockets of the network namespaces registered in `tcpprof_netns`:
 *
 *  - rto_init_ms, at BPF_SOCK_OPS_TIMEOUT_INIT: the RTO before the first RTT sample (the SYN's and
 *    the SYN-ACK's timer; tcp_timeout_init() takes the reply in jiffies). ns-2: rtxcur_init_ 6 s.
 *  - cwnd_clamp, at connection set-up: TCP_BPF_SNDCWND_CLAMP, the largest congestion window in
 *    segments (ns-2's window_: TcpAgent::window() = min(cwnd_, wnd_)). The route's `cwnd lock` is
 *    not honoured by this kernel; the clamp is.
 *  - max_backoff, at every RTO expiration (BPF_SOCK_OPS_RTO_CB, before tcp_retransmit_timer()
 *    doubles icsk_rto up to the socket's rto_max): once the RTO has doubled log2(max_backoff)
 *    times, rto_max = icsk_rto so it grows no more (ns-2 tcp.cc rtt_backoff(): "if (t_backoff_ <
 *    64) t_backoff_ <<= 1"); the first expiration of a later series puts the profile's rto_max
 *    back. The program runs after tcpctl's (attached later), so with ABRA or Fixed RTO the
 *    smaller cap wins.
 *
 * Per-namespace counters (`tcpprof_stats`) let the run read back that each knob acted.
 */
#include "common.bpf.h"

char _license[] SEC("license") = "GPL";

extern unsigned int CONFIG_HZ __kconfig;

#define TCP_BPF_SNDCWND_CLAMP 1002 /* include/uapi/linux/bpf.h */
#define TCPPROF_MAX_STATIONS 1024  /* kernel.py MAX_STATIONS */

struct tcpprof {          /* written by userspace (nodes/tcpctl/kernel.py _PROF) */
	__u32 rto_init_ms;    /* 0: the kernel's (1 s) */
	__u32 cwnd_clamp;     /* 0: none */
	__u32 backoff_shift;  /* log2(max_backoff); 0: no cap */
	__u32 rto_max_ms;     /* the namespace's tcp_rto_max_ms, put back after a capped series */
};

struct tcpprof_stats {    /* written here only */
	__u64 timeout_init;   /* TIMEOUT_INIT replies */
	__u64 clamps;         /* connections clamped */
	__u64 backoff_caps;   /* expirations at which the RTO stopped growing */
	__u64 backoff_uncaps; /* later series that got the profile's rto_max back */
	__u64 setsockopt_err;
	__u64 established;    /* connections set up in the namespace */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TCPPROF_MAX_STATIONS);
	__type(key, __u64);   /* netns cookie */
	__type(value, struct tcpprof);
} tcpprof_netns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TCPPROF_MAX_STATIONS);
	__type(key, __u64);   /* netns cookie */
	__type(value, struct tcpprof_stats);
} tcpprof_stats SEC(".maps");

/* per socket: whether max_backoff capped its rto_max */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u32);
} tcpprof_capped SEC(".maps");

static __always_inline struct tcpprof_stats *stats_of(__u64 cookie)
{
	struct tcpprof_stats *s = bpf_map_lookup_elem(&tcpprof_stats, &cookie);

	if (!s) {
		struct tcpprof_stats zero = {};

		bpf_map_update_elem(&tcpprof_stats, &cookie, &zero, BPF_NOEXIST);
		s = bpf_map_lookup_elem(&tcpprof_stats, &cookie);
	}
	return s;
}

static __always_inline void set_rto_max(struct bpf_sock_ops *skops, struct tcpprof_stats *s, int ms)
{
	if (bpf_setsockopt(skops, SOL_TCP, TCP_RTO_MAX_MS, &ms, sizeof(ms)))
		__sync_fetch_and_add(&s->setsockopt_err, 1);
}

static __always_inline void on_rto(struct bpf_sock_ops *skops, const struct tcpprof *p,
				   struct tcpprof_stats *s)
{
	__u32 retransmits = skops->args[0]; /* expirations before this one in the series */
	__u32 rto_ms = skops->args[1] * (1000 / CONFIG_HZ);
	struct bpf_sock *bsk = skops->sk;
	__u32 *capped;

	if (!p->backoff_shift || !bsk)
		return;
	capped = bpf_sk_storage_get(&tcpprof_capped, bsk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!capped)
		return;
	if (retransmits >= p->backoff_shift) {
		if (rto_ms < 1000) /* the kernel's floor for TCP_RTO_MAX_MS */
			rto_ms = 1000;
		set_rto_max(skops, s, rto_ms);
		if (!*capped)
			__sync_fetch_and_add(&s->backoff_caps, 1);
		*capped = 1;
	} else if (*capped) {
		set_rto_max(skops, s, p->rto_max_ms);
		*capped = 0;
		__sync_fetch_and_add(&s->backoff_uncaps, 1);
	}
}

SEC("sockops")
int tcpprof_sockops(struct bpf_sock_ops *skops)
{
	__u64 cookie = bpf_get_netns_cookie(skops);
	struct tcpprof *p = bpf_map_lookup_elem(&tcpprof_netns, &cookie);
	struct tcpprof_stats *s;
	int v;

	/* any family: a receiver listening on :: (iperf3) accepts IPv4 as v4-mapped AF_INET6 */
	if (!p)
		return 1;
	s = stats_of(cookie);
	if (!s)
		return 1;
	switch (skops->op) {
	case BPF_SOCK_OPS_TIMEOUT_INIT:
		if (p->rto_init_ms) {
			skops->reply = p->rto_init_ms * CONFIG_HZ / 1000;
			__sync_fetch_and_add(&s->timeout_init, 1);
		}
		break;
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		__sync_fetch_and_add(&s->established, 1);
		if (p->cwnd_clamp) {
			v = p->cwnd_clamp;
			if (bpf_setsockopt(skops, SOL_TCP, TCP_BPF_SNDCWND_CLAMP, &v, sizeof(v)))
				__sync_fetch_and_add(&s->setsockopt_err, 1);
			else
				__sync_fetch_and_add(&s->clamps, 1);
		}
		if (p->backoff_shift) /* keep the flags other programs (tcpctl) set */
			bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_RTO_CB_FLAG);
		break;
	case BPF_SOCK_OPS_RTO_CB:
		on_rto(skops, p, s);
		break;
	}
	return 1;
}
