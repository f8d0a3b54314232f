//! Lag statistics of the real-time driver: a fixed-resolution histogram (1 us buckets up to
//! 100 ms, exact maximum), so p50/p99 cost O(1) memory however long the run. The JSON also gives
//! the number of events at least as late as each of `LATE_THRESHOLDS_NS` (read from the buckets when the
//! counters are written, nothing per event), from which the orchestrator computes the share of
//! late events (testbed/validity.py, docs/orchestrator.md "Run validity").

use serde_json::{json, Value};

/// Bucket width, ns.
pub const BUCKET_NS: u64 = 1_000;
/// Number of buckets (the last one collects everything beyond 100 ms).
pub const N_BUCKETS: usize = 100_000;

/// Lateness thresholds (ns): `to_json` reports under `late` how many events had a lag of at least
/// each, keyed by the threshold in ns: 0.5, 1, 2, 5, 10 and 50 ms. Multiples of `BUCKET_NS` below 100 ms, so the
/// counts are exact.
pub const LATE_THRESHOLDS_NS: [u64; 6] = [500_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000, 50_000_000];

#[derive(Clone, Debug)]
pub struct LagHistogram {
    buckets: Vec<u32>,
    count: u64,
    sum_ns: u128,
    max_ns: u64,
}

impl Default for LagHistogram {
    fn default() -> Self {
        LagHistogram { buckets: vec![0; N_BUCKETS], count: 0, sum_ns: 0, max_ns: 0 }
    }
}

impl LagHistogram {
    pub fn record(&mut self, lag_ns: u64) {
        let b = ((lag_ns / BUCKET_NS) as usize).min(N_BUCKETS - 1);
        self.buckets[b] = self.buckets[b].saturating_add(1);
        self.count += 1;
        self.sum_ns += lag_ns as u128;
        self.max_ns = self.max_ns.max(lag_ns);
    }

    /// Upper edge of the bucket holding quantile q (0..1), ns.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let target = ((self.count as f64) * q).ceil().max(1.0) as u64;
        let mut acc = 0u64;
        for (i, &n) in self.buckets.iter().enumerate() {
            acc += n as u64;
            if acc >= target {
                return ((i as u64 + 1) * BUCKET_NS).min(self.max_ns.max(BUCKET_NS));
            }
        }
        self.max_ns
    }

    /// Number of events with a lag of at least `threshold_ns` (exact when it is a multiple of
    /// `BUCKET_NS`: bucket i holds the lags in [i, i+1) us; the last bucket everything beyond).
    pub fn count_at_least(&self, threshold_ns: u64) -> u64 {
        let first = ((threshold_ns / BUCKET_NS) as usize).min(N_BUCKETS - 1);
        self.buckets[first..].iter().map(|&n| n as u64).sum()
    }

    pub fn to_json(&self) -> Value {
        let late: serde_json::Map<String, Value> =
            LATE_THRESHOLDS_NS.iter().map(|&t| (t.to_string(), json!(self.count_at_least(t)))).collect();
        json!({
            "count": self.count,
            "p50_ns": self.quantile_ns(0.50),
            "p99_ns": self.quantile_ns(0.99),
            "p999_ns": self.quantile_ns(0.999),
            "max_ns": self.max_ns,
            "mean_ns": if self.count > 0 { (self.sum_ns / self.count as u128) as u64 } else { 0 },
            "resolution_ns": BUCKET_NS,
            "late": late,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles() {
        let mut h = LagHistogram::default();
        for i in 0..100 {
            h.record(i * 1_000 + 10);
        }
        assert_eq!(h.quantile_ns(0.5), 50_000);
        assert_eq!(h.quantile_ns(0.99), 99_000);
        assert_eq!(h.to_json()["max_ns"], 99_010);
    }

    #[test]
    fn late_counts() {
        let mut h = LagHistogram::default();
        // 1000 events: 990 on time-ish (10 us), 6 at 0.7 ms, 2 at exactly 1 ms, 1 at 3 ms, 1 at 200 ms
        for _ in 0..990 {
            h.record(10_000);
        }
        for _ in 0..6 {
            h.record(700_000);
        }
        h.record(1_000_000);
        h.record(1_000_000);
        h.record(3_000_000);
        h.record(200_000_000);
        let late = &h.to_json()["late"];
        assert_eq!(late["500000"], 10);
        assert_eq!(late["1000000"], 4);
        assert_eq!(late["2000000"], 2);
        assert_eq!(late["5000000"], 1);
        assert_eq!(late["10000000"], 1);
        assert_eq!(late["50000000"], 1);
        assert_eq!(h.count_at_least(999_000), 4);
        assert_eq!(h.count_at_least(0), 1000);
        assert_eq!(h.to_json()["count"], 1000);
    }
}
