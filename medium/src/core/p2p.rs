//! The point-to-point channel (config `p2p`): instead of the radio, each station reaches only
//! its configured neighbours over links with a rate, a delay range, loss, BER and reordering.
//! A frame is serialized on each link in turn (per-link `busy_until`), no MAC contention.
//!
//! Congestion windows (config `p2p.congestion`, Liu & Singh 2001 section V-B: "a local source
//! dumps packets into ip_output() for a period of 200 ms" every 5 s, which "results in the
//! generation of an explicit congestion notification"): during a window the direction is busy
//! with the flood, so a frame offered then starts at the window's end; RFC 3168 section 5: "the
//! router sets the CE codepoint" of an ECN-capable packet (ECT(0) or ECT(1)) instead of dropping
//! it, and drops a not-ECT one. The IPv4 header checksum is updated incrementally (RFC 1624).

use std::collections::HashMap;
use std::rc::Rc;

use super::{Cause, Ev, Exch, Medium, Output, Status};
use crate::config::{P2pConfig, P2pProps};
use crate::errmodel;
use crate::rng::{Pcg32, STREAM_P2P};
use crate::BROADCAST;

/// RFC 3168 section 5: the ECN field's codepoints.
pub const ECN_NOT_ECT: u8 = 0;
pub const ECN_CE: u8 = 3;

/// Periodic windows `[start + k period, start + k period + duration)`, k >= 0, in ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Windows {
    pub start: u64,
    pub period: u64,
    pub duration: u64,
}

impl Windows {
    /// The end of the window containing `t`, or None when `t` is outside every window.
    pub fn end_of_window_at(&self, t: u64) -> Option<u64> {
        if t < self.start || self.period == 0 {
            return None;
        }
        let ws = self.start + (t - self.start) / self.period * self.period;
        if t < ws + self.duration {
            Some(ws + self.duration)
        } else {
            None
        }
    }
}

/// The ECN field of an IPv4 packet (RFC 3168 section 5), None if `p` is not IPv4.
pub fn ip_ecn(p: &[u8]) -> Option<u8> {
    if p.len() >= 20 && p[0] >> 4 == 4 {
        Some(p[1] & 3)
    } else {
        None
    }
}

/// A copy of IPv4 packet `p` with the ECN field set to CE and the header checksum updated
/// (RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), m the 16-bit word holding the TOS byte).
pub fn with_ce(p: &[u8]) -> Vec<u8> {
    let mut b = p.to_vec();
    let old = u16::from_be_bytes([b[0], b[1]]) as u32;
    b[1] |= ECN_CE;
    let new = u16::from_be_bytes([b[0], b[1]]) as u32;
    let hc = u16::from_be_bytes([b[10], b[11]]) as u32;
    let mut sum = (!hc & 0xFFFF) + (!old & 0xFFFF) + new;
    while sum >> 16 != 0 {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    let hc2 = !(sum as u16);
    b[10..12].copy_from_slice(&hc2.to_be_bytes());
    b
}

pub(super) struct P2pLink {
    pub(super) props: P2pProps,
    pub(super) busy_until: u64,
    pub(super) rng: Pcg32,
    /// Congestion windows on this direction.
    pub(super) congestion: Vec<Windows>,
}

impl P2pLink {
    /// The end of the congestion window `t` falls in (the latest, if several overlap).
    fn congested_until(&self, t: u64) -> Option<u64> {
        self.congestion.iter().filter_map(|w| w.end_of_window_at(t)).max()
    }
}

impl Medium {
    pub(super) fn setup_p2p(&mut self, pc: &P2pConfig) -> Result<(), String> {
        let mut links = HashMap::new();
        let add = |m: &Self, a: u32, b: u32, props: &P2pProps, links: &mut HashMap<(usize, usize), P2pLink>| -> Result<(), String> {
            if !(props.rate_bps > 0.0) || props.delay_ms[0] > props.delay_ms[1] || props.delay_ms[0] < 0.0 {
                return Err(format!("p2p link {a}-{b}: need rate_bps > 0 and 0 <= delay_ms[0] <= delay_ms[1]"));
            }
            let (ia, ib) = (m.idx(a)?, m.idx(b)?);
            for (x, y) in [(ia, ib), (ib, ia)] {
                let rng = Pcg32::new(m.seed, STREAM_P2P, ((m.sta[x].id as u64) << 32) | m.sta[y].id as u64);
                links.insert((x, y), P2pLink { props: props.clone(), busy_until: 0, rng, congestion: Vec::new() });
            }
            Ok(())
        };
        for l in &pc.links {
            add(self, l.a, l.b, &l.props, &mut links)?;
        }
        if !pc.chain.is_empty() {
            let props = pc.chain_props.as_ref().ok_or("p2p.chain needs chain_props")?;
            for w in pc.chain.windows(2) {
                add(self, w[0], w[1], props, &mut links)?;
            }
        }
        for (i, c) in pc.congestion.iter().enumerate() {
            let ok = c.period_s.is_finite() && c.period_s > 0.0 && c.duration_s > 0.0 && c.duration_s < c.period_s && c.start_s >= 0.0 && c.start_s.is_finite();
            if !ok {
                return Err(format!("p2p.congestion[{i}]: need period_s > 0, 0 < duration_s < period_s and start_s >= 0"));
            }
            let key = (self.idx(c.from)?, self.idx(c.to)?);
            let l = links.get_mut(&key).ok_or_else(|| format!("p2p.congestion[{i}]: no p2p link {}-{}", c.from, c.to))?;
            let ns = |s: f64| (s * 1e9).round() as u64;
            l.congestion.push(Windows { start: ns(c.start_s), period: ns(c.period_s), duration: ns(c.duration_s) });
        }
        let mut nb = vec![Vec::new(); self.sta.len()];
        for &(a, b) in links.keys() {
            nb[a].push(b);
        }
        for v in &mut nb {
            v.sort();
        }
        // A saturated source offers its next frame when the last one completes: it needs a link to
        // serialize on, or it would offer again at the same instant forever.
        for (&src, &(d, _)) in &self.saturated {
            let ok = if d == usize::MAX { !nb[src].is_empty() } else { links.contains_key(&(src, d)) };
            if !ok {
                return Err(format!("saturated source {}: no p2p link to its destination", self.sta[src].id));
            }
        }
        self.p2p_nb = nb;
        self.p2p = Some(links);
        Ok(())
    }

    pub(super) fn p2p_send(&mut self, s: usize) {
        let now = self.now;
        let (dst, len, payload) = {
            let pd = self.sta[s].pending.as_ref().unwrap();
            (pd.dst, pd.payload.len() as u32, pd.payload.clone())
        };
        self.sta[s].exch = Exch::P2p;
        let targets: Vec<usize> = match dst {
            Some(d) => vec![d],
            None => self.p2p_nb[s].clone(),
        };
        let mut done = now;
        let mut failed = None;
        if let Some(d) = dst {
            if !self.p2p.as_ref().unwrap().contains_key(&(s, d)) {
                // no link to d at all: nothing is sent (a saturated source never gets here: setup_p2p)
                let pd = self.sta[s].pending.as_mut().unwrap();
                pd.data_attempts = 1;
                pd.first_tx = Some(now);
                return self.complete(s, Status::Failed, Cause::OutOfRange);
            } else if self.link_cut(s, d) || !self.sta[d].on {
                failed = Some(if self.sta[d].on { Cause::Scripted } else { Cause::OutOfRange });
            }
        }
        for d in targets {
            // The frame is serialized on every link, cut or not (the sender cannot tell): a failure
            // takes the frame's time, so a saturated source on a cut link advances in time.
            let cut = self.link_cut(s, d) || !self.sta[d].on;
            let links = self.p2p.as_mut().unwrap();
            let l = links.get_mut(&(s, d)).unwrap();
            let mut start = now.max(l.busy_until);
            let mut payload = payload.clone();
            if !cut {
                if let Some(end) = l.congested_until(start) {
                    match ip_ecn(&payload) {
                        None | Some(ECN_NOT_ECT) => {
                            // Dropped in the flooded queue; the sender cannot tell. It is not
                            // serialized (the link stays the flood's) but holds the sender for
                            // its frame time, so back-to-back frames arrive at the link's rate
                            // (and a saturated source does not offer again at the same instant).
                            let bits = (len + l.props.overhead_bytes) as f64 * 8.0;
                            done = done.max(now + (bits / l.props.rate_bps * 1e9).round() as u64);
                            self.c.p2p_congestion_dropped += 1;
                            continue;
                        }
                        Some(ECN_CE) => {}
                        Some(_) => {
                            payload = Rc::from(with_ce(&payload));
                            self.c.p2p_ce_marked += 1;
                        }
                    }
                    start = end;
                }
            }
            let bits = (len + l.props.overhead_bytes) as f64 * 8.0;
            let end = start + (bits / l.props.rate_bps * 1e9).round() as u64;
            l.busy_until = end;
            done = done.max(end);
            if cut {
                continue;
            }
            let per = errmodel::ber_per(l.props.ber, len + l.props.overhead_bytes);
            let lost = (l.props.loss > 0.0 && l.rng.unit() < l.props.loss) || (per > 0.0 && l.rng.unit() < per);
            let [dmin, dmax] = l.props.delay_ms;
            let mut delay_ms = dmin + (dmax - dmin) * l.rng.unit();
            if l.props.reorder_prob > 0.0 && l.rng.unit() < l.props.reorder_prob {
                delay_ms += l.props.reorder_delay_ms;
            }
            let arrive = end + (delay_ms * 1e6).round() as u64;
            if lost {
                self.c.p2p_lost += 1;
            } else {
                self.push(arrive, Ev::P2pArrive { r: d, src: s, bcast: dst.is_none(), payload: payload.clone() });
            }
        }
        let st = &mut self.sta[s];
        st.c.airtime_ns += done - now;
        let pd = st.pending.as_mut().unwrap();
        pd.data_attempts = 1;
        pd.first_tx = Some(now);
        (pd.p2p_status, pd.p2p_cause) = match (dst, failed) {
            (_, Some(c)) => (Status::Failed, c),
            (Some(_), None) => (Status::Acked, Cause::None),
            (None, None) => (Status::Sent, Cause::None),
        };
        self.push(done, Ev::P2pDone { s });
    }

    /// A frame reaches station r over a p2p link.
    pub(super) fn p2p_arrive(&mut self, r: usize, src: usize, bcast: bool, payload: Rc<[u8]>) {
        if !self.sta[r].on {
            self.c.p2p_lost += 1;
            return;
        }
        self.c.p2p_delivered += 1;
        self.sta[r].c.rx_delivered += 1;
        let (to, srcid) = (self.sta[r].id, self.sta[src].id);
        self.outputs.push(Output::Rx {
            to,
            t: self.now,
            src: srcid,
            dst: if bcast { BROADCAST } else { to },
            overheard: false,
            rssi_dbm: f32::NAN,
            snr_db: f32::NAN,
            noise_dbm: f32::NAN,
            payload,
        });
    }

    /// Station s has serialized its frame on every link: TX_STATUS.
    pub(super) fn p2p_done(&mut self, s: usize) {
        if self.sta[s].exch == Exch::P2p {
            let (st, cause) = self.sta[s].pending.as_ref().map(|p| (p.p2p_status, p.p2p_cause)).unwrap_or((Status::Sent, Cause::None));
            self.complete(s, st, cause);
        }
    }
}
