/* SPDX-License-Identifier: GPL-2.0 */
/* Shared layout of the tcpctl maps: the BPF side (tcpctl.bpf.c) and the Python side
 * (nodes/tcpctl/kernel.py, struct formats _KEY, _CTL, _ST) must agree byte for byte.
 * All fields are naturally aligned; no implicit padding. */
#ifndef TCPCTL_H
#define TCPCTL_H

#define TCPCTL_RTO_LOG 16
/* unit of the squared SRTT error (tcpctl_st.rtt_sqerr): 10 us, so a sum of 1e6 samples of 10 s
 * errors stays far below 2^64 */
#define RTT_ERR_UNIT_US 10

/* Commands written by the agent into ctl.cmd; executed once per new ctl.cmd_seq. */
enum tcpctl_cmd {
	CMD_NONE = 0,
	CMD_SNAPSHOT = 1,        /* ELFN freeze: save cwnd, ssthresh, srtt, rto */
	CMD_RESTORE_OLD = 2,     /* ELFN thaw, restore="old": the values saved at the freeze (RTO: see docs) */
	CMD_RESTORE_DEFAULT = 3, /* ELFN thaw, restore="default": cwnd 2 (RTO: see docs) */
	CMD_SET = 4,             /* set cwnd and/or ssthresh (0 = leave) */
	CMD_RESTORE_CWND = 5,    /* cwnd and ssthresh saved at the snapshot only (ATCP's loss exit) */
};

enum tcpctl_policy {
	POLICY_STANDARD = 0,
	POLICY_FIXED_AFTER_TWO = 1, /* Dyer & Boppana 2001 (Ghanem 2008 section 2) */
	POLICY_ABRA = 2,            /* Ghanem 2008 section 3 */
};

struct tcpctl_key {
	__u64 netns;  /* network namespace cookie */
	__u32 saddr;  /* local IPv4, network order */
	__u32 daddr;  /* remote IPv4, network order */
	__u16 sport;  /* local port, host order */
	__u16 dport;  /* remote port, host order */
	__u32 pad;
};

struct tcpctl_ctl { /* written by userspace only */
	__u32 cmd_seq;
	__u32 cmd;
	__u32 arg_cwnd;
	__u32 arg_ssthresh;
	__u32 policy;
	__u32 abra_min_srtt_us; /* initial min_srtt (paper: 0.1 s) */
	__u32 abra_max_srtt_us; /* initial max_srtt (paper: 0.6 s) */
	__u32 flags;
};

struct tcpctl_st { /* written by BPF only */
	__u32 cmd_done;
	__u32 frz_cwnd;
	__u32 frz_ssthresh;
	__u32 frz_srtt_us;
	__u32 frz_rto_us;
	__u32 applied_cwnd;
	__u32 applied_ssthresh;
	__u32 armed;         /* a restore to re-assert in cong_avoid */
	__u32 consec_rto;    /* consecutive RTO expirations of the current series */
	__u32 series_una;    /* snd_una at the first expiration of the series */
	__u32 last_cwnd;     /* ABRA last_cwnd */
	__u32 last_ssthresh; /* ABRA last_ssthr */
	__u32 last_srtt_us;  /* ABRA last_srtt */
	__u32 min_srtt_us;
	__u32 max_srtt_us;
	__u32 pending;       /* ABRA restore waiting for the congestion control */
	__u32 pending_cwnd;
	__u32 pending_ssthresh;
	__u32 rto_max_ms;    /* last TCP_RTO_MAX_MS we set (0: never) */
	__u32 n_rto;         /* RTO_CB events (= kernel RTO expirations) */
	__u32 n_retrans;     /* RETRANS_CB events */
	__u32 n_rtt;         /* RTT_CB events */
	__u32 srtt_us;
	__u32 rto_us;
	__u32 recoveries;    /* series ended by an ACK covering the retransmission */
	__u32 ca_seen;       /* the controllable congestion control runs this socket */
	__u32 setsockopt_err;
	__u32 state;         /* last TCP state (STATE_CB) */
	__u32 post_pending;  /* record cwnd at the next ACK after a command */
	__u32 post_cwnd;     /* cwnd when the kernel processed that next ACK */
	__u32 rto_hold;      /* ELFN thaw: RTO capped (TCP_RTO_MAX_MS), 1 at 6 s (restore=default), */
	__u32 rto_hold_seq;  /* 2 at the freeze's (old); at least until an ACK covers this snd_nxt */
	__u32 post_rto_us;   /* icsk_rto when the kernel processed that next ACK */
	__u32 hold_cwnd;     /* CMD_SET's cwnd, a ceiling for the kernel's own loss handling ... */
	__u32 hold_una;      /* ... until an ACK with an open window advances snd_una past this */
	__u32 hold_caps;     /* times set_state or cong_avoid lowered cwnd to hold_cwnd */
	__u32 rttvar_us;     /* tp->rttvar_us at the last RTT sample (RTT_CB) ... */
	__u32 rto_est_us;    /* ... and the RTO it gives: (srtt_us >> 3) + rttvar_us (__tcp_set_rto) */
	__u64 rto_ts_ns[TCPCTL_RTO_LOG]; /* bpf_ktime_get_ns() of each expiration */
	__u32 rto_log_us[TCPCTL_RTO_LOG];     /* icsk_rto when it expired */
	__u32 rto_next_us[TCPCTL_RTO_LOG];    /* cap we set for the next RTO (0: none) */
	/* The estimator's error at each RTT_CB (once per round trip; args[0] = the sample mrtt_us,
	 * Linux 6.10+): Cohen & Levin Fig. 7(b)'s Var(SRTT)/E[RTT] = E[(SRTT - RTT)^2] / E[RTT], with
	 * SRTT the estimate the sample found (before tcp_rtt_estimator() folded it in). */
	__u64 rtt_sum_us;    /* sum of the samples that had an estimate before them */
	__u64 rtt_sqerr;     /* sum of (srtt_before - mrtt)^2, in (RTT_ERR_UNIT_US us)^2 */
	__u32 rtt_err_n;     /* how many such samples */
	__u32 rto_hold_until_ms; /* restore=old: the cap ends by then (bpf_ktime_get_ns() / 1e6) */
	__u32 thaw_rto_us;   /* icsk_rto right after the last ELFN restore's ACK (its RTT sample in) */
	__u32 thaws;         /* ELFN restores (old or default) executed */
};

#endif
