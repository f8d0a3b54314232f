//! Lag statistics of the real-time driver: a fixed-resolution histogram (1 us buckets up to
//! 100 ms, exact maximum), so p50/p99 cost O(1) memory however long the run.

use serde_json::{json, Value};

/// Bucket width, ns.
pub const BUCKET_NS: u64 = 1_000;
/// Number of buckets (the last one collects everything beyond 100 ms).
pub const N_BUCKETS: usize = 100_000;

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

    pub fn to_json(&self) -> Value {
        json!({
            "count": self.count,
            "p50_ns": self.quantile_ns(0.50),
            "p99_ns": self.quantile_ns(0.99),
            "p999_ns": self.quantile_ns(0.999),
            "max_ns": self.max_ns,
            "mean_ns": if self.count > 0 { (self.sum_ns / self.count as u128) as u64 } else { 0 },
            "resolution_ns": BUCKET_NS,
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
}
