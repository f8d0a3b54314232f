//! The 802.11 DCF of every station: offered frames, backoff, carrier sense and NAV, the
//! RTS/CTS/DATA/ACK exchange, retries and TX_STATUS (`phy` hands it the decoded frames).
//!
//! MAC (IEEE 802.11-1999 section 9.2, with ns-2 `mac-802_11.cc` choices where the standard
//! leaves room; differences are listed in docs/medium.md):
//! - Backoff: uniform in [0, CW], counted down in slots while the medium has been idle for DIFS
//!   (EIFS after an errored frame), frozen while busy (9.2.4); CW doubles per failure up to
//!   CWmax and resets after success or drop; a backoff is drawn after every transmission
//!   (post-backoff), and a frame arriving at an idle medium with no backoff pending goes after
//!   DIFS.
//! - RTS/CTS for unicast frames longer than `rts_threshold`, short retry limit for RTS (and for
//!   data sent without RTS), long retry limit for data after RTS/CTS (9.2.5.3); NAV from the
//!   Duration field of every decoded frame addressed to another station (9.2.5.4); a station
//!   answers an RTS only if its NAV is clear; CTS/ACK/DATA-after-CTS go SIFS after the frame
//!   without carrier sense.
//! - A missing CTS/ACK (timeout = SIFS + response + 2 max propagation delays, as ns-2) counts as
//!   an errored reception: the station then waits EIFS before resuming backoff, exactly like the
//!   stations that heard the collision, which keeps the two in step (Bianchi's T_c).
//! - Broadcast data is sent once, without RTS and ACK.

use std::rc::Rc;

use super::counters::trace_record;
use super::{Cause, Ev, Exch, Kind, Medium, Output, Pending, Status, Tx, CAUSE_NAMES};
use crate::mobility::distance;
use crate::BROADCAST;

impl Medium {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn offer(&mut self, sta: u32, cookie: u64, dst: u32, power: Option<f64>, retry_limit: u8, no_rts: bool, payload: Rc<[u8]>) {
        let now = self.now;
        let reject = |m: &mut Self, to: u32| {
            m.outputs.push(Output::TxStatus {
                to,
                t: now,
                cookie,
                status: Status::Rejected,
                rts_attempts: 0,
                data_attempts: 0,
                cause: Cause::None,
                t_start: now,
                t_end: now,
            });
            if let Some(&i) = m.index.get(&to) {
                m.sta[i].c.rejected += 1;
            }
        };
        let s = match self.idx(sta) {
            Ok(s) => s,
            Err(_) => return,
        };
        let dsti = if dst == BROADCAST {
            None
        } else {
            match self.index.get(&dst) {
                Some(&d) if d != s => Some(d),
                _ => return reject(self, sta),
            }
        };
        if !self.sta[s].on || self.sta[s].pending.is_some() || payload.len() > crate::MAX_PAYLOAD {
            return reject(self, sta);
        }
        let use_rts = dsti.is_some() && !no_rts && self.p.uses_rts(payload.len() as u32);
        let st = &mut self.sta[s];
        st.c.offered += 1;
        st.mac_seq = st.mac_seq.wrapping_add(1) & 0x0FFF;
        st.pending = Some(Pending {
            cookie,
            dst: dsti,
            power: power.filter(|p| p.is_finite()),
            retry_limit,
            use_rts,
            payload,
            offered: now,
            first_tx: None,
            rts_attempts: 0,
            data_attempts: 0,
            mac_seq: st.mac_seq,
            p2p_status: Status::Acked,
            p2p_cause: Cause::None,
        });
        st.exch = Exch::Contend;
        if self.p2p.is_some() {
            return self.p2p_send(s);
        }
        let ifs = self.ifs(s);
        let st = &mut self.sta[s];
        if st.backoff.is_some() {
            self.schedule_backoff(s);
        } else if !st.busy {
            if now >= st.idle_since + ifs {
                self.start_attempt(s);
            } else {
                st.backoff = Some(0);
                st.backoff_drawn = now;
                self.schedule_backoff(s);
            }
        } else {
            self.draw_backoff(s);
        }
    }

    pub(super) fn ifs(&self, s: usize) -> u64 {
        if self.sta[s].eifs {
            self.p.eifs_ns()
        } else {
            self.p.difs_ns()
        }
    }

    pub(super) fn draw_backoff(&mut self, s: usize) {
        let now = self.now;
        let st = &mut self.sta[s];
        let slots = st.rng_mac.uniform_incl(st.cw);
        st.backoff = Some(slots);
        st.backoff_drawn = now;
        st.backoff_sched = None;
        if self.log.is_some() {
            let line = format!("{{\"t\":{now},\"ev\":\"backoff\",\"sta\":{},\"slots\":{slots},\"cw\":{}}}", st.id, st.cw);
            self.log_line(&line);
        }
        self.schedule_backoff(s);
    }

    pub(super) fn schedule_backoff(&mut self, s: usize) {
        let ifs = self.ifs(s);
        let slot = self.p.slot_ns;
        let st = &mut self.sta[s];
        if st.busy || !st.on || st.backoff_sched.is_some() {
            return;
        }
        let slots = match st.backoff {
            Some(slots) => slots,
            None => return,
        };
        let count_start = (st.idle_since + ifs).max(st.backoff_drawn);
        let fire = count_start + slots as u64 * slot;
        st.backoff_gen += 1;
        st.backoff_sched = Some((count_start, fire));
        let gen = st.backoff_gen;
        self.push(fire, Ev::Backoff { s, gen });
    }

    pub(super) fn freeze_backoff(&mut self, s: usize) {
        let now = self.now;
        let slot = self.p.slot_ns;
        let st = &mut self.sta[s];
        if let Some((cs, fire)) = st.backoff_sched {
            if now >= fire {
                return; // decided at this instant: the transmission goes ahead
            }
            st.backoff_gen += 1;
            let elapsed = if now > cs { ((now - cs) / slot) as u32 } else { 0 };
            st.backoff = Some(st.backoff.unwrap_or(0).saturating_sub(elapsed));
            st.backoff_sched = None;
        }
    }

    /// Re-evaluate carrier sense (physical + virtual) of station s.
    pub(super) fn reevaluate(&mut self, s: usize) {
        let now = self.now;
        let st = &self.sta[s];
        let busy = st.on && (st.tx_active.is_some() || st.total_mw >= self.cs_mw || st.nav_until > now);
        if busy && !st.busy {
            self.sta[s].busy = true;
            self.freeze_backoff(s);
        } else if !busy && st.busy {
            let st = &mut self.sta[s];
            st.busy = false;
            st.idle_since = now;
            self.schedule_backoff(s);
        }
    }

    pub(super) fn set_nav(&mut self, s: usize, until: u64) {
        if until > self.sta[s].nav_until {
            self.sta[s].nav_until = until;
            self.push(until, Ev::NavEnd { s });
            self.reevaluate(s);
        }
    }

    pub(super) fn start_attempt(&mut self, s: usize) {
        let now = self.now;
        let p = &self.p;
        let (dst, use_rts, len, power) = {
            let pd = self.sta[s].pending.as_ref().expect("attempt without a frame");
            (pd.dst, pd.use_rts, pd.payload.len() as u32, pd.power)
        };
        let nav_rts = 3 * p.sifs_ns + p.cts_ns() + p.data_ns(len) + p.ack_ns();
        let bcast_rate = p.bcast_rate();
        let rts_bytes = p.rts_bytes;
        let basic = p.basic_rate_bps;
        let overhead = p.mac_overhead_bytes;
        let power_dbm = self.power_to(s, dst, power);
        let st = &mut self.sta[s];
        st.attempt_cause = None;
        let pd = st.pending.as_mut().unwrap();
        pd.first_tx.get_or_insert(now);
        match dst {
            None => {
                pd.data_attempts += 1;
                let payload = pd.payload.clone();
                let seq = pd.mac_seq;
                st.exch = Exch::Bcast;
                let id = self.transmit(s, Kind::Data, None, len + overhead, bcast_rate, 0, power_dbm, Some(payload), seq, false);
                self.sta[s].exch_tx = Some(id);
            }
            Some(d) if use_rts => {
                pd.rts_attempts = pd.rts_attempts.saturating_add(1);
                st.exch = Exch::Rts;
                let id = self.transmit(s, Kind::Rts, Some(d), rts_bytes, basic, nav_rts, power_dbm, None, 0, false);
                self.sta[s].exch_tx = Some(id);
            }
            Some(_) => self.start_data(s),
        }
    }

    pub(super) fn start_data(&mut self, s: usize) {
        let now = self.now;
        let nav = self.p.sifs_ns + self.p.ack_ns();
        let rate = self.p.data_rate_bps;
        let overhead = self.p.mac_overhead_bytes;
        let (dst, power) = {
            let pd = self.sta[s].pending.as_ref().expect("data without a frame");
            (pd.dst, pd.power)
        };
        let power_dbm = self.power_to(s, dst, power);
        let st = &mut self.sta[s];
        st.attempt_cause = None;
        let pd = st.pending.as_mut().unwrap();
        pd.first_tx.get_or_insert(now);
        pd.data_attempts = pd.data_attempts.saturating_add(1);
        let retry = pd.data_attempts > 1;
        let (payload, seq, len) = (pd.payload.clone(), pd.mac_seq, pd.payload.len() as u32);
        st.exch = Exch::Data;
        let id = self.transmit(s, Kind::Data, dst, len + overhead, rate, nav, power_dbm, Some(payload), seq, retry);
        self.sta[s].exch_tx = Some(id);
    }

    /// Finish the current frame: TX_STATUS to the router, reset CW, post-backoff.
    pub(super) fn complete(&mut self, s: usize, status: Status, cause: Cause) {
        let now = self.now;
        let st = &mut self.sta[s];
        let pd = match st.pending.take() {
            Some(pd) => pd,
            None => return,
        };
        st.exch = Exch::Idle;
        st.exch_tx = None;
        st.cw = self.p.cw_min;
        st.ssrc = 0;
        st.slrc = 0;
        st.timeout_gen += 1;
        match status {
            Status::Acked => {
                st.c.acked += 1;
                st.c.payload_bytes_acked += pd.payload.len() as u64;
            }
            Status::Failed => {
                st.c.failed += 1;
                st.c.failed_by_cause[cause as usize] += 1;
            }
            Status::Sent => st.c.sent += 1,
            Status::Rejected => st.c.rejected += 1,
        }
        if status == Status::Failed {
            if let Some(d) = pd.dst {
                let dist = distance(self.pos(s), self.pos(d));
                let (id, did) = (self.sta[s].id, self.sta[d].id);
                trace_record(&mut self.trace, now, id, did, cause, pd.rts_attempts, pd.data_attempts, dist, &pd.payload);
            }
        }
        let st = &mut self.sta[s];
        if pd.dst.is_some() && self.p2p.is_none() {
            *self.c.rts_hist.entry(pd.rts_attempts).or_default() += 1;
            *self.c.data_hist.entry(pd.data_attempts).or_default() += 1;
        }
        let id = st.id;
        self.outputs.push(Output::TxStatus {
            to: id,
            t: now,
            cookie: pd.cookie,
            status,
            rts_attempts: pd.rts_attempts,
            data_attempts: pd.data_attempts,
            cause,
            t_start: pd.first_tx.unwrap_or(pd.offered),
            t_end: now,
        });
        if self.logging() {
            let line = format!(
                "{{\"t\":{now},\"ev\":\"status\",\"sta\":{id},\"cookie\":{},\"status\":\"{}\",\"rts\":{},\"data\":{},\"cause\":\"{}\"}}",
                pd.cookie,
                status.name(),
                pd.rts_attempts,
                pd.data_attempts,
                CAUSE_NAMES[cause as usize]
            );
            self.log_line(&line);
        }
        if self.p2p.is_none() {
            self.draw_backoff(s);
        }
        if self.saturated.contains_key(&s) {
            self.offer_saturated(s);
        }
    }

    pub(super) fn retry(&mut self, s: usize) {
        let st = &mut self.sta[s];
        st.cw = (2 * st.cw + 1).min(self.p.cw_max);
        st.exch = Exch::Contend;
        st.exch_tx = None;
        self.draw_backoff(s);
    }

    /// A frame decoded by station r.
    pub(super) fn on_frame(&mut self, r: usize, tx: &Tx, rssi_dbm: f64, snr_db: f64) {
        let now = self.now;
        let sifs = self.p.sifs_ns;
        match tx.kind {
            Kind::Rts => {
                if tx.dst == Some(r) {
                    let st = &self.sta[r];
                    if st.nav_until <= now && st.tx_active.is_none() && matches!(st.exch, Exch::Idle | Exch::Contend) {
                        let nav = tx.nav.saturating_sub(sifs + self.p.cts_ns());
                        self.push(now + sifs, Ev::RespondCts { s: r, to: tx.src, nav });
                        self.log_rx(r, tx, "ok");
                    } else {
                        self.note_fail(tx, Cause::Collision);
                        self.sta[r].c.responses_suppressed += 1;
                        self.log_rx(r, tx, "nav_busy");
                    }
                } else {
                    self.set_nav(r, now + tx.nav);
                }
            }
            Kind::Cts => {
                if tx.dst == Some(r) {
                    let st = &mut self.sta[r];
                    let expected = st.pending.as_ref().map(|p| p.dst == Some(tx.src)).unwrap_or(false);
                    if st.exch == Exch::WaitCts && expected {
                        st.timeout_gen += 1;
                        st.ssrc = 0;
                        st.exch = Exch::DataSifs;
                        self.push(now + sifs, Ev::SendData { s: r });
                    }
                    self.log_rx(r, tx, "ok");
                } else {
                    self.set_nav(r, now + tx.nav);
                }
            }
            Kind::Ack => {
                if tx.dst == Some(r) {
                    self.log_rx(r, tx, "ok");
                    let st = &self.sta[r];
                    let expected = st.pending.as_ref().map(|p| p.dst == Some(tx.src)).unwrap_or(false);
                    if st.exch == Exch::WaitAck && expected {
                        self.complete(r, Status::Acked, Cause::None);
                    }
                } else {
                    self.set_nav(r, now + tx.nav);
                }
            }
            Kind::Data => {
                let payload = tx.payload.clone().unwrap_or_else(|| Rc::from(Vec::new()));
                let noise = self.p.noise_floor_dbm as f32;
                let (src_id, me) = (self.sta[tx.src].id, self.sta[r].id);
                match tx.dst {
                    None => {
                        self.sta[r].c.rx_delivered += 1;
                        self.outputs.push(Output::Rx {
                            to: me,
                            t: now,
                            src: src_id,
                            dst: BROADCAST,
                            overheard: false,
                            rssi_dbm: rssi_dbm as f32,
                            snr_db: snr_db as f32,
                            noise_dbm: noise,
                            payload,
                        });
                    }
                    Some(d) if d == r => {
                        self.push(now + sifs, Ev::RespondAck { s: r, to: tx.src });
                        self.log_rx(r, tx, "ok");
                        let st = &mut self.sta[r];
                        let dup = tx.retry && st.last_rx_seq.get(&tx.src) == Some(&tx.mac_seq);
                        st.last_rx_seq.insert(tx.src, tx.mac_seq);
                        if dup {
                            st.c.rx_duplicates += 1;
                        } else {
                            st.c.rx_delivered += 1;
                            self.outputs.push(Output::Rx {
                                to: me,
                                t: now,
                                src: src_id,
                                dst: me,
                                overheard: false,
                                rssi_dbm: rssi_dbm as f32,
                                snr_db: snr_db as f32,
                                noise_dbm: noise,
                                payload,
                            });
                        }
                    }
                    Some(d) => {
                        self.set_nav(r, now + tx.nav);
                        if self.sta[r].promisc {
                            self.sta[r].c.rx_overheard += 1;
                            let dst_id = self.sta[d].id;
                            self.outputs.push(Output::Rx {
                                to: me,
                                t: now,
                                src: src_id,
                                dst: dst_id,
                                overheard: true,
                                rssi_dbm: rssi_dbm as f32,
                                snr_db: snr_db as f32,
                                noise_dbm: noise,
                                payload,
                            });
                        }
                    }
                }
            }
        }
    }

    pub(super) fn tx_end(&mut self, s: usize, tx_id: u64) {
        let now = self.now;
        let st = &mut self.sta[s];
        if st.tx_active != Some(tx_id) {
            return;
        }
        st.tx_active = None;
        if st.exch_tx == Some(tx_id) {
            match st.exch {
                Exch::Rts => {
                    st.exch = Exch::WaitCts;
                    st.timeout_gen += 1;
                    let gen = st.timeout_gen;
                    let t = now + self.p.cts_timeout_ns();
                    self.push(t, Ev::Timeout { s, gen });
                }
                Exch::Data => {
                    st.exch = Exch::WaitAck;
                    st.timeout_gen += 1;
                    let gen = st.timeout_gen;
                    let t = now + self.p.ack_timeout_ns();
                    self.push(t, Ev::Timeout { s, gen });
                }
                Exch::Bcast => self.complete(s, Status::Sent, Cause::None),
                _ => {}
            }
        }
        self.reevaluate(s);
    }

    pub(super) fn timeout(&mut self, s: usize, gen: u64) {
        let st = &mut self.sta[s];
        if gen != st.timeout_gen || !st.on {
            return;
        }
        // A missing response is an errored reception: resume after EIFS (see module doc).
        st.eifs = true;
        let cause = st.attempt_cause.take().unwrap_or(Cause::Collision);
        let pd = match st.pending.as_ref() {
            Some(pd) => pd,
            None => return,
        };
        let (count, limit) = match st.exch {
            Exch::WaitCts => {
                st.ssrc += 1;
                (st.ssrc, self.p.short_retry_limit)
            }
            Exch::WaitAck => {
                let over = if pd.retry_limit > 0 { Some(pd.retry_limit) } else { None };
                if pd.use_rts {
                    st.slrc += 1;
                    (st.slrc, over.unwrap_or(self.p.long_retry_limit))
                } else {
                    st.ssrc += 1;
                    (st.ssrc, over.unwrap_or(self.p.short_retry_limit))
                }
            }
            _ => return,
        };
        if self.logging() {
            let line = format!(
                "{{\"t\":{},\"ev\":\"timeout\",\"sta\":{},\"count\":{count},\"cause\":\"{}\"}}",
                self.now,
                self.sta[s].id,
                CAUSE_NAMES[cause as usize]
            );
            self.log_line(&line);
        }
        if count >= limit {
            self.complete(s, Status::Failed, cause);
        } else {
            self.retry(s);
        }
    }

    /// A backoff count reached zero: start the attempt if the station still contends.
    pub(super) fn backoff_fired(&mut self, s: usize, gen: u64) {
        let st = &mut self.sta[s];
        if gen != st.backoff_gen || !st.on {
            return;
        }
        st.backoff = None;
        st.backoff_sched = None;
        if st.exch == Exch::Contend && st.pending.is_some() {
            self.start_attempt(s);
        }
    }

    /// Send a CTS (`nav`: its Duration field) or an ACK (`nav` 0) SIFS after the frame it
    /// answers, without carrier sense; suppressed if the station is off or transmitting.
    pub(super) fn respond(&mut self, s: usize, to: usize, kind: Kind, nav: u64) {
        if !self.sta[s].on || self.sta[s].tx_active.is_some() {
            self.sta[s].c.responses_suppressed += 1;
            return;
        }
        let power = self.power_to(s, Some(to), None);
        let b = if kind == Kind::Cts { self.p.cts_bytes } else { self.p.ack_bytes };
        let r = self.p.basic_rate_bps;
        self.transmit(s, kind, Some(to), b, r, nav, power, None, 0, false);
    }

    /// DATA goes SIFS after the CTS, if the exchange is still on.
    pub(super) fn send_data_after_cts(&mut self, s: usize) {
        if self.sta[s].exch == Exch::DataSifs && self.sta[s].on && self.sta[s].tx_active.is_none() {
            self.start_data(s);
        }
    }
}
