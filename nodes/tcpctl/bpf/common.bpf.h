/* SPDX-License-Identifier: GPL-2.0 */
#ifndef TCPCTL_COMMON_BPF_H
#define TCPCTL_COMMON_BPF_H
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#define AF_INET 2
#define SOL_TCP 6
#define TCP_RTO_MAX_MS 44 /* include/uapi/linux/tcp.h, Linux 6.15 */
#define TCP_CONG_NON_RESTRICTED 0x1 /* include/net/tcp.h */

static __always_inline struct inet_connection_sock *icsk_of(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

static __always_inline struct tcp_sock *tp_of(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline int before32(__u32 a, __u32 b) { return (__s32)(a - b) < 0; }
#define after32(a, b) before32(b, a)

/* Congestion-control state out of range (docs/tcpctl.md "Out-of-range ssthresh and cwnd").
 * On this kernel a BPF struct_ops congestion control's .ssthresh now and then hands TCP a value
 * no implementation returns: 0x81104110 (2165326096), the same in every run and in both our
 * congestion controls (whose .ssthresh is tcp_reno_ssthresh(), at most 0x7fffffff), never with
 * the kernel's own reno. Entering fast recovery with it, PRR grows cwnd to ssthresh x delivered /
 * prior_cwnd (~3e8): the sender bursts its whole receive window into the first hop's queue.
 * CC_CWND_SANE_MAX: no cwnd of ours comes near 2^20 packets (the widest path here is 10 Gbit/s
 * of loopback). The repair puts back what tcp_reno_ssthresh() gives for the cwnd at the
 * reduction's start (prior_cwnd) and caps cwnd there; each repair is counted in cc_faults. */
#define CC_INFINITE_SSTHRESH 0x7fffffff
#define CC_CWND_SANE_MAX (1u << 20)
#define CC_FAULT_SSTHRESH 0
#define CC_FAULT_CWND 1

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} cc_faults SEC(".maps");

static __always_inline void cc_fault_count(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&cc_faults, &which);

	if (n)
		__sync_fetch_and_add(n, 1);
}

static __always_inline void cc_repair(struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u32 reno = tp->prior_cwnd >> 1;

	if (reno < 2)
		reno = 2;
	if (tp->snd_ssthresh > CC_INFINITE_SSTHRESH) {
		tp->snd_ssthresh = reno;
		cc_fault_count(CC_FAULT_SSTHRESH);
	}
	if (tp->snd_cwnd > CC_CWND_SANE_MAX) {
		tp->snd_cwnd = tp->snd_ssthresh < CC_CWND_SANE_MAX ? tp->snd_ssthresh : reno;
		cc_fault_count(CC_FAULT_CWND);
	}
}
#endif
