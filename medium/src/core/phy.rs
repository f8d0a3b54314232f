//! The PHY: signals on the air and their reception at every station.
//!
//! Reception (per receiver, no global lock):
//! - Every transmission reaches every other station whose received power is above
//!   `interference_floor_dbm`, after the propagation delay d/c, for the frame's duration.
//! - A receiver keeps the sum of the power of every signal arriving at it. Carrier sense: the
//!   medium is busy while that sum is >= `cs_threshold_dbm`, while the station transmits, or
//!   while its NAV is set.
//! - Lock: a station that is not transmitting and not already receiving locks on a frame whose
//!   power is >= `rx_threshold_dbm` (preamble detection). It stays on it (ns-2: the first frame
//!   is kept) unless `capture_later_stronger` lets a later frame with SINR >= the capture threshold
//!   take over. The lowest SINR over the frame (signal / (noise + sum of every overlapping
//!   signal)) decides: threshold model: decodable iff SINR >= capture threshold; analytic and
//!   table models: lost with PER(SINR, rate, length). Then per-link loss and BER apply.
//! - A frame that was sensed (>= CS threshold) but not decoded sets EIFS (802.11-1999 9.2.3.4,
//!   ns-2 sets it for every errored frame).
//!
//! `transmit` puts a frame on the air (one signal start and end per station in reach);
//! `sig_start` and `sig_end` track each receiver's signals and lock; `decide` applies the error
//! model; a decoded frame goes to the MAC (`dcf::on_frame`).

use std::rc::Rc;

use super::{sorted_pair, Cause, Ev, Incoming, Kind, Lock, Medium, Tx, AIRTIME_BIN_NS, CAUSE_NAMES};
use crate::errmodel;
use crate::mobility::distance;
use crate::params::{dbm_to_mw, mw_to_dbm, ErrorModelKind};
use crate::BROADCAST;

impl Medium {
    pub(super) fn power_to(&self, s: usize, dst: Option<usize>, explicit: Option<f64>) -> f64 {
        let st = &self.sta[s];
        if let Some(p) = explicit {
            return p;
        }
        if let Some(d) = dst {
            if let Some(&p) = st.power_nb.get(&d) {
                return p;
            }
        }
        st.power_all.unwrap_or(st.default_power)
    }

    /// The exchange a frame belongs to: RTS and DATA belong to their sender, CTS and ACK to
    /// their receiver.
    pub(super) fn note_fail(&mut self, tx: &Tx, cause: Cause) {
        let owner = match tx.kind {
            Kind::Rts | Kind::Data => Some(tx.src),
            Kind::Cts | Kind::Ack => tx.dst,
        };
        if let Some(o) = owner {
            let st = &mut self.sta[o];
            if st.attempt_cause.is_none() {
                st.attempt_cause = Some(cause);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn transmit(&mut self, s: usize, kind: Kind, dst: Option<usize>, bytes: u32, rate: u64, nav: u64, power_dbm: f64, payload: Option<Rc<[u8]>>, mac_seq: u16, retry: bool) -> u64 {
        let now = self.now;
        let dur = self.p.frame_ns(bytes, rate);
        let id = self.next_tx_id;
        self.next_tx_id += 1;
        self.c.transmissions += 1;
        let tx = Rc::new(Tx { id, src: s, kind, dst, nav, bytes, rate, payload, mac_seq, retry });
        {
            let st = &mut self.sta[s];
            st.tx_active = Some(id);
            st.c.airtime_ns += dur;
            let bin = (now / AIRTIME_BIN_NS) as usize;
            if self.c.airtime_bins.len() <= bin {
                self.c.airtime_bins.resize(bin + 1, 0);
            }
            self.c.airtime_bins[bin] += dur;
            if let Some(l) = st.lock.take() {
                // Transmitting destroys the frame being received.
                if let Some(inc) = st.incoming.iter_mut().find(|i| i.tx.id == l.tx_id) {
                    inc.fail = Some(Cause::Collision);
                }
            }
        }
        self.reevaluate(s);
        if self.logging() {
            let line = format!(
                "{{\"t\":{now},\"ev\":\"tx\",\"sta\":{},\"kind\":\"{}\",\"dst\":{},\"dur\":{dur},\"dbm\":{:.3}}}",
                self.sta[s].id,
                kind.name(),
                dst.map(|d| self.sta[d].id).unwrap_or(BROADCAST),
                power_dbm
            );
            self.log_line(&line);
        }
        let ps = self.pos(s);
        let c = self.p.speed_of_light_mps;
        let mut dst_reached = false;
        for r in 0..self.sta.len() {
            if r == s || !self.sta[r].on {
                continue;
            }
            if !self.partitions.is_empty() && self.link_cut(s, r) {
                if dst == Some(r) {
                    self.note_fail(&tx, Cause::Scripted);
                    dst_reached = true;
                }
                continue;
            }
            let d = distance(ps, self.pos(r));
            let dbm = self.prop.rx_dbm(power_dbm, d, s, r, now);
            if dbm < self.floor_dbm {
                continue;
            }
            if dst == Some(r) {
                dst_reached = true;
            }
            let delay = (d / c * 1e9).round() as u64;
            self.push(now + delay, Ev::SigStart { r, tx: tx.clone(), mw: dbm_to_mw(dbm) });
            self.push(now + delay + dur, Ev::SigEnd { r, tx_id: id });
        }
        if dst.is_some() && !dst_reached {
            self.note_fail(&tx, Cause::OutOfRange);
        }
        self.push(now + dur, Ev::TxEnd { s, tx_id: id });
        id
    }

    pub(super) fn sig_start(&mut self, r: usize, tx: Rc<Tx>, mw: f64) {
        let noise = self.noise_mw;
        let (rx_mw, cap) = (self.rx_mw, self.cap_lin);
        let later = self.p.capture_later_stronger;
        let st = &mut self.sta[r];
        if !st.on {
            return;
        }
        st.total_mw += mw;
        let total = st.total_mw;
        let mut fail = None;
        if let Some(lock) = st.lock.as_mut() {
            let sinr = lock.mw / (noise + (total - lock.mw).max(0.0));
            if sinr < lock.min_sinr {
                lock.min_sinr = sinr;
            }
            let new_sinr = mw / (noise + (total - mw).max(0.0));
            if later && mw >= rx_mw && new_sinr >= cap {
                let old = lock.tx_id;
                if let Some(inc) = st.incoming.iter_mut().find(|i| i.tx.id == old) {
                    inc.fail = Some(Cause::Collision);
                }
                st.lock = Some(Lock { tx_id: tx.id, mw, min_sinr: new_sinr });
            } else {
                fail = Some(if mw >= rx_mw { Cause::Collision } else { Cause::OutOfRange });
            }
        } else if st.tx_active.is_some() {
            fail = Some(Cause::Collision);
        } else if mw >= rx_mw {
            st.lock = Some(Lock { tx_id: tx.id, mw, min_sinr: mw / (noise + (total - mw).max(0.0)) });
        } else {
            fail = Some(Cause::OutOfRange);
        }
        st.incoming.push(Incoming { tx, mw, fail });
        self.reevaluate(r);
    }

    pub(super) fn sig_end(&mut self, r: usize, tx_id: u64) {
        let cs = self.cs_mw;
        let st = &mut self.sta[r];
        let i = match st.incoming.iter().position(|x| x.tx.id == tx_id) {
            Some(i) => i,
            None => return,
        };
        let inc = st.incoming.remove(i);
        st.total_mw = st.incoming.iter().map(|x| x.mw).sum();
        self.c.receptions_evaluated += 1;
        let tx = inc.tx.clone();
        let addressed = tx.dst == Some(r) || (tx.dst.is_none() && tx.kind == Kind::Data);
        let locked = st.lock.map(|l| l.tx_id == tx_id).unwrap_or(false);
        if locked {
            let lock = st.lock.take().unwrap();
            match self.decide(r, &tx, lock) {
                Ok(()) => {
                    self.sta[r].eifs = false;
                    if addressed {
                        *self.c.rx_outcome.entry((tx.kind.name(), "ok")).or_default() += 1;
                    }
                    let snr_db = mw_to_dbm(lock.mw) - self.p.noise_floor_dbm;
                    self.on_frame(r, &tx, mw_to_dbm(lock.mw), snr_db);
                }
                Err(cause) => {
                    self.sta[r].eifs = true;
                    if addressed {
                        *self.c.rx_outcome.entry((tx.kind.name(), CAUSE_NAMES[cause as usize])).or_default() += 1;
                        self.note_fail(&tx, cause);
                    }
                    self.log_rx(r, &tx, CAUSE_NAMES[cause as usize]);
                }
            }
        } else {
            if inc.mw >= cs {
                self.sta[r].eifs = true;
            }
            if addressed {
                let cause = inc.fail.unwrap_or(Cause::Collision);
                // Broadcasts below the decoding range are not "addressed" to this receiver.
                if tx.dst.is_some() || inc.mw >= self.rx_mw {
                    *self.c.rx_outcome.entry((tx.kind.name(), CAUSE_NAMES[cause as usize])).or_default() += 1;
                }
                self.note_fail(&tx, cause);
                if tx.dst.is_some() {
                    self.log_rx(r, &tx, CAUSE_NAMES[cause as usize]);
                }
            }
        }
        self.reevaluate(r);
    }

    pub(super) fn log_rx(&mut self, r: usize, tx: &Tx, outcome: &str) {
        if self.logging() {
            let line = format!(
                "{{\"t\":{},\"ev\":\"rx\",\"sta\":{},\"from\":{},\"kind\":\"{}\",\"outcome\":\"{outcome}\"}}",
                self.now,
                self.sta[r].id,
                self.sta[tx.src].id,
                tx.kind.name()
            );
            self.log_line(&line);
        }
    }

    /// Decide whether a locked frame is decoded: error model on the lowest SINR seen over the
    /// frame, then per-link loss and BER.
    pub(super) fn decide(&mut self, r: usize, tx: &Tx, lock: Lock) -> Result<(), Cause> {
        if lock.mw < self.rx_mw {
            return Err(Cause::OutOfRange);
        }
        let snr_db = mw_to_dbm(lock.mw / self.noise_mw);
        let sinr_db = mw_to_dbm(lock.min_sinr);
        match self.p.error_model {
            ErrorModelKind::Threshold => {
                if sinr_db < self.p.capture_threshold_db {
                    return Err(if snr_db >= self.p.capture_threshold_db { Cause::Collision } else { Cause::ChannelError });
                }
            }
            _ => {
                let per_snr = errmodel::per(&self.p, snr_db, tx.rate, tx.bytes);
                let per_sinr = errmodel::per(&self.p, sinr_db, tx.rate, tx.bytes);
                if per_sinr > 0.0 {
                    let u = self.sta[r].rng_phy.unit();
                    if u < per_snr {
                        return Err(Cause::ChannelError);
                    }
                    if u < per_sinr {
                        return Err(Cause::Collision);
                    }
                }
            }
        }
        if !self.links.is_empty() {
            if let Some(lo) = self.links.get(&sorted_pair(tx.src, r)).copied() {
                if let Some(loss) = lo.loss {
                    if loss >= 1.0 {
                        return Err(Cause::Scripted);
                    }
                    if loss > 0.0 && self.sta[r].rng_phy.unit() < loss {
                        return Err(Cause::ChannelError);
                    }
                }
                if let Some(ber) = lo.ber {
                    let per = errmodel::ber_per(ber, tx.bytes);
                    if per > 0.0 && self.sta[r].rng_phy.unit() < per {
                        return Err(Cause::ChannelError);
                    }
                }
            }
        }
        Ok(())
    }
}
