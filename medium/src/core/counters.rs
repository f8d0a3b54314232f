//! The core's counters (`counters.json`, merged with the driver's) and the failed-frame trace
//! (`medium/trace.bin`, docs/medium.md "Trace").

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::{Cause, Medium};

#[derive(Clone, Debug, Default)]
pub(super) struct StaCounters {
    pub(super) offered: u64,
    pub(super) acked: u64,
    pub(super) failed: u64,
    pub(super) sent: u64,
    pub(super) rejected: u64,
    pub(super) failed_by_cause: [u64; 5],
    pub(super) airtime_ns: u64,
    pub(super) rx_delivered: u64,
    pub(super) rx_overheard: u64,
    pub(super) rx_duplicates: u64,
    pub(super) dropped_on_disconnect: u64,
    pub(super) payload_bytes_acked: u64,
    pub(super) responses_suppressed: u64,
}

/// Global counters of the core (the driver adds its own).
#[derive(Clone, Debug, Default)]
pub(super) struct Counters {
    pub(super) events: u64,
    pub(super) receptions_evaluated: u64,
    pub(super) transmissions: u64,
    pub(super) rts_hist: BTreeMap<u8, u64>,
    pub(super) data_hist: BTreeMap<u8, u64>,
    /// Frames addressed to a receiver (unicast to it, or broadcast data within its decoding
    /// range), by kind and outcome.
    pub(super) rx_outcome: BTreeMap<(&'static str, &'static str), u64>,
    pub(super) p2p_lost: u64,
    pub(super) p2p_delivered: u64,
    /// p2p congestion windows: frames marked CE, not-ECT frames dropped.
    pub(super) p2p_ce_marked: u64,
    pub(super) p2p_congestion_dropped: u64,
    /// Airtime of every transmission (all stations), summed per `AIRTIME_BIN_NS` bin of the
    /// transmission's start: the channel's busy share over time (timeline).
    pub(super) airtime_bins: Vec<u64>,
}

/// Width of the airtime bins of `counters.json`'s `airtime_series`.
pub const AIRTIME_BIN_NS: u64 = 500_000_000;

/// Bytes of one failed-frame record of the trace (`trace_bytes`, docs/medium.md "Trace").
pub const TRACE_RECORD_BYTES: usize = 32;

/// First bytes of `medium/trace.bin`.
pub const TRACE_MAGIC: &[u8; 8] = b"MTMTRC01";

/// Append one failed-frame record: `t_ns` u64, `src`, `dst` u16 (station ids), `cause`,
/// `rts_attempts`, `data_attempts` u8, one pad byte, `distance_m` f32 (between sender and
/// addressee when the frame failed), then from the payload's IPv4 header the source and
/// destination addresses (4 bytes each, network order), `ip_id` u16 and `protocol` u8 (zeros
/// if the payload is not IPv4), one pad byte. Little-endian.
#[allow(clippy::too_many_arguments)]
pub(super) fn trace_record(out: &mut Vec<u8>, t: u64, src: u32, dst: u32, cause: Cause, rts: u8, data: u8, dist: f64, payload: &[u8]) {
    out.extend_from_slice(&t.to_le_bytes());
    out.extend_from_slice(&(src as u16).to_le_bytes());
    out.extend_from_slice(&(dst as u16).to_le_bytes());
    out.extend_from_slice(&[cause as u8, rts, data, 0]);
    out.extend_from_slice(&(dist as f32).to_le_bytes());
    if payload.len() >= 20 && payload[0] >> 4 == 4 {
        out.extend_from_slice(&payload[12..20]);
        out.extend_from_slice(&u16::from_be_bytes([payload[4], payload[5]]).to_le_bytes());
        out.extend_from_slice(&[payload[9], 0]);
    } else {
        out.extend_from_slice(&[0u8; 12]);
    }
}

fn cause_map(c: &[u64; 5]) -> Value {
    json!({
        "out_of_range": c[1], "collision": c[2], "channel_error": c[3], "scripted": c[4],
    })
}

fn hist(h: &BTreeMap<u8, u64>) -> Value {
    Value::Object(h.iter().map(|(k, v)| (k.to_string(), json!(v))).collect())
}

impl Medium {
    /// The core's counters as JSON (counters.json merges the driver's in).
    pub fn counters_json(&self) -> Value {
        let mut per = serde_json::Map::new();
        let mut tot = StaCounters::default();
        for s in &self.sta {
            let c = &s.c;
            tot.offered += c.offered;
            tot.acked += c.acked;
            tot.failed += c.failed;
            tot.sent += c.sent;
            tot.rejected += c.rejected;
            tot.rx_delivered += c.rx_delivered;
            tot.rx_overheard += c.rx_overheard;
            tot.rx_duplicates += c.rx_duplicates;
            tot.dropped_on_disconnect += c.dropped_on_disconnect;
            tot.payload_bytes_acked += c.payload_bytes_acked;
            for i in 0..5 {
                tot.failed_by_cause[i] += c.failed_by_cause[i];
            }
            per.insert(
                s.id.to_string(),
                json!({
                    "offered": c.offered, "acked": c.acked, "failed": c.failed, "sent": c.sent,
                    "rejected": c.rejected,
                    "failed_by_cause": cause_map(&c.failed_by_cause),
                    "airtime_ns": c.airtime_ns, "rx_delivered": c.rx_delivered,
                    "rx_overheard": c.rx_overheard, "rx_duplicates": c.rx_duplicates,
                    "dropped_on_disconnect": c.dropped_on_disconnect,
                    "payload_bytes_acked": c.payload_bytes_acked,
                    "responses_suppressed": c.responses_suppressed,
                    "radio_on": s.on,
                }),
            );
        }
        let mut outcome = serde_json::Map::new();
        for ((k, o), n) in &self.c.rx_outcome {
            let e = outcome.entry(k.to_string()).or_insert_with(|| json!({}));
            e[*o] = json!(n);
        }
        json!({
            "virtual_time_ns": self.now,
            "frames": {
                "offered": tot.offered, "acked": tot.acked, "failed": tot.failed,
                "sent_broadcast": tot.sent, "rejected": tot.rejected,
                "dropped_on_disconnect": tot.dropped_on_disconnect,
                "payload_bytes_acked": tot.payload_bytes_acked,
            },
            "failed_by_cause": cause_map(&tot.failed_by_cause),
            "rx": {
                "delivered": tot.rx_delivered, "overheard": tot.rx_overheard,
                "duplicates": tot.rx_duplicates,
                "outcome_by_kind": outcome,
            },
            "rts_attempts_histogram": hist(&self.c.rts_hist),
            "data_attempts_histogram": hist(&self.c.data_hist),
            "airtime_ns": self.sta.iter().map(|s| (s.id.to_string(), json!(s.c.airtime_ns))).collect::<serde_json::Map<_, _>>(),
            "transmissions": self.c.transmissions,
            "receptions_evaluated": self.c.receptions_evaluated,
            "events_processed": self.c.events,
            "p2p": {
                "delivered": self.c.p2p_delivered,
                "lost": self.c.p2p_lost,
                "ce_marked": self.c.p2p_ce_marked,
                "congestion_dropped": self.c.p2p_congestion_dropped,
            },
            "airtime_series": {"bin_ns": AIRTIME_BIN_NS, "airtime_ns": self.c.airtime_bins},
            "trace_records": self.trace.len() / TRACE_RECORD_BYTES,
            "per_station": per,
        })
    }

    /// The failed-frame trace as written to `medium/trace.bin`: `TRACE_MAGIC`, then records.
    pub fn trace_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + self.trace.len());
        out.extend_from_slice(TRACE_MAGIC);
        out.extend_from_slice(&self.trace);
        out
    }
}
