/*
 * The station router's native forwarding fast path (docs/router.md, "The fast path").
 *
 * The router's event loop calls fp_wait() instead of epoll_wait() on its own epoll set when the
 * fast path is on (static routing, no extension, no capture running on the mirror TAP). fp_wait
 * sleeps in epoll_wait and, for as long as only the medium socket wakes it, handles the two
 * medium messages of a forwarded data packet itself:
 *
 *   RX of an IPv4 packet for another station  ->  TTL - 1 (RFC 1624 incremental checksum),
 *   next hop from the static table, TX to the medium          (nodes/protocols/static.py)
 *   TX_STATUS ACKED/SENT of that TX                          ->  the MAC is free again
 *
 * Everything else goes back to Python unchanged: another descriptor ready (TUN, TAP, control,
 * signal wake-up), a timer due (the deadline the loop passes), and any medium message the fast
 * path does not take (it is left in st->msg for the router to handle exactly as if it had read
 * it itself). The Python side keeps the sequence numbers, cookies and counters in step
 * (nodes/router/fastpath.py) and adopts a TX still outstanding when control comes back, so the
 * protocol core sees the same MAC state as without the fast path.
 *
 * Wire layouts: docs/interfaces.md section 2 (little-endian, packed), the same as
 * nodes/formats/medium.py; fp_init() checks the sizes the Python side passes against these.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define FP_ABI 2
#define SLOT_PREFIX 16 /* int64 enqueue time (CLOCK_MONOTONIC ns), uint32 payload length, pad */

struct __attribute__((packed)) hdr {
    uint16_t magic;
    uint8_t version;
    uint8_t type;
    uint32_t seq;
    uint64_t time_ns;
};

struct __attribute__((packed)) rx_msg {
    struct hdr h;
    uint32_t src, dst;
    uint8_t flags, pad[3];
    float rssi, snr, noise;
    uint16_t plen;
};

struct __attribute__((packed)) tx_msg {
    struct hdr h;
    uint64_t cookie;
    uint32_t next_hop;
    float power;
    uint8_t retry_limit, flags;
    uint16_t plen;
};

struct __attribute__((packed)) tx_status_msg {
    struct hdr h;
    uint64_t cookie;
    uint8_t status, rts, data, cause;
    uint64_t t0, t1;
};

/* Mirrored field by field by nodes/router/fastpath.py (ctypes.Structure _FpState). */
struct fp_state {
    /* set once by Python */
    int32_t abi;
    int32_t ep_fd;
    int32_t medium_fd;
    uint32_t station;
    uint32_t first_ip, last_ip; /* host order: the station address range (10.0.0.1 ..) */
    uint16_t magic;
    uint8_t version, t_rx, t_tx, t_tx_status, st_acked, st_sent, rx_overheard;
    uint8_t pad0[3];
    uint32_t max_payload;
    uint32_t msg_cap; /* bytes at msg and tx */
    int32_t packet_sockets_fd; /* /proc/net/packet (mirror auto), -1: no check */
    int32_t tap_ifindex;
    int64_t capture_check_interval_ns;
    uint32_t routes_len;
    uint32_t pad1;
    uint16_t *routes; /* next hop per destination station (< routes_len), 0: the destination */
    uint8_t *msg;     /* a medium message left for Python */
    uint8_t *tx;      /* the last TX the fast path sent (header + payload) */
    uint8_t *q_buf;   /* q_cap slots of slot_size bytes: SLOT_PREFIX + TX header + payload */
    uint32_t q_cap, slot_size;
    /* shared: Python writes them before fp_wait and reads them after */
    int32_t enabled;
    int32_t py_busy;          /* Python's MAC is busy or its interface queue is not empty */
    uint32_t rx_seq, tx_seq;  /* last medium sequence number received / sent */
    uint64_t cookie;          /* last TX cookie */
    uint64_t native_cookie;   /* the fast path's outstanding TX, 0: none */
    int64_t capture_check_at; /* CLOCK_MONOTONIC ns of the next /proc/net/packet check */
    int32_t has_msg;          /* st->msg holds msg_len bytes for Python (0: EOF, <0: -errno) */
    int32_t msg_len;
    uint32_t q_head, q_count; /* the fast path's frames waiting for the MAC, oldest at q_head */
    /* counters, only ever incremented here */
    uint64_t n_forwarded, n_tx_ok, n_medium_rx, n_medium_tx, n_wakeups, n_capture_checks, n_queued;
};

int fp_abi(void) { return FP_ABI; }

int fp_sizes(int which)
{
    switch (which) {
    case 0: return (int)sizeof(struct rx_msg);
    case 1: return (int)sizeof(struct tx_msg);
    case 2: return (int)sizeof(struct tx_status_msg);
    case 3: return (int)sizeof(struct fp_state);
    default: return -1;
    }
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Is a packet socket receiving on the TAP or on every interface? The same test as
 * Router._check_capture: /proc/net/packet columns "sk RefCnt Type Proto Iface R Rmem User Inode",
 * Iface 0 or the TAP's ifindex with R = 1. Returns 1 (capturing or unreadable: let Python decide). */
static int capture_running(struct fp_state *st)
{
    static char buf[1 << 16];
    ssize_t n = pread(st->packet_sockets_fd, buf, sizeof buf - 1, 0);
    st->n_capture_checks++;
    if (n < 0 || n == (ssize_t)sizeof buf - 1)
        return 1;
    buf[n] = 0;
    char *line = strchr(buf, '\n'); /* skip the header */
    while (line && *++line) {
        char *end = strchr(line, '\n');
        if (end)
            *end = 0;
        char *f[6];
        int nf = 0;
        char *p = line;
        while (*p && nf < 6) {
            while (*p == ' ')
                p++;
            if (!*p)
                break;
            f[nf++] = p;
            while (*p && *p != ' ')
                p++;
            if (*p)
                *p++ = 0;
        }
        if (nf == 6 && f[5][0] == '1' && f[5][1] == 0) {
            long ifx = 0;
            int ok = 1;
            for (char *q = f[4]; *q; q++) {
                if (*q < '0' || *q > '9') { ok = 0; break; }
                ifx = ifx * 10 + (*q - '0');
            }
            if (ok && (ifx == 0 || ifx == st->tap_ifindex))
                return 1;
        }
        line = end;
    }
    return 0;
}

/* The TX header of a forwarded packet (seq and cookie are set when it goes to the medium) and the
 * packet with TTL - 1 (nodes.protocols.static.forward_copy: RFC 1624 eqn. 3, HC' = ~(~HC + 0xFEFF)). */
static void build_tx(const struct fp_state *st, uint8_t *dst_msg, const uint8_t *ip, size_t plen,
                     uint32_t next_hop)
{
    struct tx_msg *tx = (struct tx_msg *)dst_msg;
    tx->h.magic = st->magic;
    tx->h.version = st->version;
    tx->h.type = st->t_tx;
    tx->h.seq = 0;
    tx->h.time_ns = 0;
    tx->cookie = 0;
    tx->next_hop = next_hop;
    tx->power = NAN;
    tx->retry_limit = 0;
    tx->flags = 0;
    tx->plen = (uint16_t)plen;
    uint8_t *out = dst_msg + sizeof *tx;
    memcpy(out, ip, plen);
    uint32_t hc = (uint32_t)out[10] << 8 | out[11];
    uint32_t sum = (hc ^ 0xFFFF) + 0xFEFF;
    sum = (sum & 0xFFFF) + (sum >> 16);
    sum ^= 0xFFFF;
    out[8] = (uint8_t)(ip[8] - 1);
    out[10] = (uint8_t)(sum >> 8);
    out[11] = (uint8_t)sum;
}

/* Hand st->tx (built by build_tx) to the MAC: the next sequence number and cookie, then send.
 * 1: sent; 2: the send failed (left for Python as a medium error). */
static int send_tx(struct fp_state *st, size_t plen)
{
    struct tx_msg *tx = (struct tx_msg *)st->tx;
    tx->h.seq = ++st->tx_seq;
    tx->cookie = ++st->cookie;
    st->native_cookie = st->cookie;
    ssize_t r = send(st->medium_fd, st->tx, sizeof *tx + plen, MSG_NOSIGNAL);
    if (r < 0) {
        st->has_msg = 1;
        st->msg_len = -errno; /* Python: medium gone */
        return 2;
    }
    st->n_medium_tx++;
    return 1;
}

/* RX: forward it here if the static core would send it on unchanged but for the TTL. With the MAC
 * busy with the fast path's own TX it waits in the fast path's queue (FIFO, the interface queue's
 * capacity: static routing has no control frames, so the PriQueue is a plain FIFO); when that is
 * full, or Python's MAC or queue are in use, Python takes it (and applies the drop-tail). */
static int take_rx(struct fp_state *st, const uint8_t *buf, size_t n)
{
    const struct rx_msg *m = (const struct rx_msg *)buf;
    size_t plen = m->plen;
    if (m->h.magic != st->magic || m->h.version != st->version || n != sizeof *m + plen ||
        plen > st->max_payload || m->h.seq != st->rx_seq + 1 || (m->flags & st->rx_overheard))
        return 0;
    if (st->py_busy)
        return 0; /* Python's MAC or interface queue holds frames: keep their order there */
    int queue = st->native_cookie != 0 || st->q_count != 0;
    if (queue && st->q_count >= st->q_cap)
        return 0; /* full: Python adopts the queue and drops this one (drop-tail) */
    const uint8_t *ip = buf + sizeof *m;
    /* nodes.core.ipv4.check */
    if (plen < 20 || ip[0] >> 4 != 4)
        return 0;
    size_t ihl = (size_t)(ip[0] & 0x0F) * 4, total = (size_t)ip[2] << 8 | ip[3];
    if (ihl < 20 || ihl > plen || total < ihl || total > plen)
        return 0;
    uint32_t addr = (uint32_t)ip[16] << 24 | (uint32_t)ip[17] << 16 | (uint32_t)ip[18] << 8 | ip[19];
    if (addr < st->first_ip || addr > st->last_ip)
        return 0;
    uint32_t dst = addr & 0xFFFF;
    if (dst == st->station || ip[8] <= 1)
        return 0; /* local delivery, TTL expiry: Python */
    int64_t t = now_ns();
    if (st->packet_sockets_fd >= 0 && st->capture_check_at <= t) {
        st->capture_check_at = t + st->capture_check_interval_ns;
        if (capture_running(st)) {
            st->capture_check_at = 0; /* Python checks at once and starts mirroring */
            st->enabled = 0;
            return 0;
        }
    }
    if (SLOT_PREFIX + sizeof(struct tx_msg) + plen > st->slot_size ||
        sizeof(struct tx_msg) + plen > st->msg_cap)
        return 0;
    uint32_t next_hop = dst < st->routes_len && st->routes[dst] ? st->routes[dst] : dst;
    st->rx_seq = m->h.seq;
    st->n_medium_rx++;
    st->n_forwarded++;
    if (!queue) {
        build_tx(st, st->tx, ip, plen, next_hop);
        return send_tx(st, plen);
    }
    uint8_t *slot = st->q_buf + (size_t)((st->q_head + st->q_count) % st->q_cap) * st->slot_size;
    memcpy(slot, &t, sizeof t);
    uint32_t len32 = (uint32_t)plen;
    memcpy(slot + 8, &len32, sizeof len32);
    build_tx(st, slot + SLOT_PREFIX, ip, plen, next_hop);
    st->q_count++;
    st->n_queued++;
    return 1;
}

static int take_tx_status(struct fp_state *st, const uint8_t *buf, size_t n)
{
    const struct tx_status_msg *m = (const struct tx_status_msg *)buf;
    if (n != sizeof *m || m->h.magic != st->magic || m->h.version != st->version ||
        m->h.seq != st->rx_seq + 1 || !st->native_cookie || m->cookie != st->native_cookie ||
        (m->status != st->st_acked && m->status != st->st_sent))
        return 0; /* failures, rejections, others' cookies: Python */
    st->rx_seq = m->h.seq;
    st->native_cookie = 0;
    st->n_medium_rx++;
    st->n_tx_ok++;
    if (!st->q_count)
        return 1;
    /* NodeRuntime.tx_done -> pump: the next frame of the queue goes to the MAC */
    const uint8_t *slot = st->q_buf + (size_t)st->q_head * st->slot_size;
    uint32_t plen;
    memcpy(&plen, slot + 8, sizeof plen);
    memcpy(st->tx, slot + SLOT_PREFIX, sizeof(struct tx_msg) + plen);
    st->q_head = (st->q_head + 1) % st->q_cap;
    st->q_count--;
    return send_tx(st, plen);
}

/* Handle one medium message: 1 taken, 0 left in st->msg for Python, 2 left (error) for Python. */
static int on_medium(struct fp_state *st)
{
    ssize_t n = recv(st->medium_fd, st->msg, st->msg_cap, MSG_DONTWAIT);
    if (n < 0) {
        if (errno == EAGAIN || errno == EINTR)
            return 1;
        st->has_msg = 1;
        st->msg_len = -errno;
        return 2;
    }
    if (n >= (ssize_t)sizeof(struct hdr) && st->enabled) {
        uint8_t type = st->msg[3];
        int r = 0;
        if (type == st->t_rx && n >= (ssize_t)sizeof(struct rx_msg))
            r = take_rx(st, st->msg, (size_t)n);
        else if (type == st->t_tx_status)
            r = take_tx_status(st, st->msg, (size_t)n);
        if (r)
            return r;
    }
    st->has_msg = 1;
    st->msg_len = (int32_t)n; /* 0: EOF */
    return 0;
}

/*
 * Wait for events until deadline_ns (CLOCK_MONOTONIC; < 0: none; <= now: one look). Returns the
 * number of (fd, events) pairs written for Python (0: the deadline passed), or -errno (-EINTR: a
 * signal, let Python run its handlers). The medium socket is among the pairs when st->has_msg.
 */
int fp_wait(struct fp_state *st, int64_t deadline_ns, int32_t *out_fd, uint32_t *out_ev, int max_out)
{
    struct epoll_event evs[16];
    if (st->abi != FP_ABI)
        return -EINVAL;
    for (;;) {
        int timeout_ms = -1;
        if (deadline_ns >= 0) {
            int64_t left = deadline_ns - now_ns();
            timeout_ms = left <= 0 ? 0 : (int)((left + 999999) / 1000000); /* never early */
            if (left > 86400000000000LL)
                timeout_ms = 86400000;
        }
        int n = epoll_wait(st->ep_fd, evs, max_out < 16 ? max_out : 16, timeout_ms);
        if (n < 0)
            return -errno;
        st->n_wakeups++;
        int out = 0;
        for (int i = 0; i < n; i++) {
            if (evs[i].data.fd == st->medium_fd && st->enabled && !st->has_msg) {
                if (on_medium(st) == 1)
                    continue;
            }
            out_fd[out] = evs[i].data.fd;
            out_ev[out] = evs[i].events;
            out++;
        }
        if (out || n == 0 || timeout_ms == 0 || !st->enabled)
            return out;
    }
}
