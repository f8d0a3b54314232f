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
#endif
