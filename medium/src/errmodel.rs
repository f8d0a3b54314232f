//! Packet error models: the probability that a frame is lost given its SINR and length.
//!
//! - Threshold (ns-2 `Mac802_11` + `WirelessPhy`): PER 0 if SINR >= capture threshold, else 1
//!   (the Pr >= RXThresh condition is applied by the receiver before locking on a frame).
//! - Analytic (wmediumd `per.c`): bit error rate of the modulation at the SINR (BPSK:
//!   0.5 erfc(sqrt(snr)); M-QAM: the square-QAM symbol error rate / log2 M), then the union
//!   bound of the 802.11 convolutional code (free distance and weight spectrum of rate 1/2, 2/3,
//!   3/4), then PER = 1 - (1 - p_uncorrected)^(8 len). Like wmediumd, the DSSS rates 1, 2 and
//!   5.5 Mbit/s use BPSK rate 1/2 and 11 Mbit/s uses QPSK rate 1/2.
//! - Table: PER(snr) interpolated linearly in a loaded table measured at a reference length,
//!   scaled to the frame length as PER(L) = 1 - (1 - PER_ref)^(L / L_ref).

use crate::params::{ErrorModelKind, PerTable, RadioParams};

/// Complementary error function (Numerical Recipes `erfcc`, fractional error < 1.2e-7).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let ans = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        ans
    } else {
        2.0 - ans
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fec {
    R12 = 0,
    R23 = 1,
    R34 = 2,
}

/// (M of the modulation, code rate) for a PHY rate, as wmediumd's `rateset`.
fn modulation(rate_bps: u64) -> (u32, Fec) {
    match rate_bps {
        0..=5_500_000 => (2, Fec::R12),
        5_500_001..=6_000_000 => (2, Fec::R12),
        6_000_001..=9_000_000 => (2, Fec::R34),
        9_000_001..=11_000_000 => (4, Fec::R12),
        11_000_001..=12_000_000 => (4, Fec::R12),
        12_000_001..=18_000_000 => (4, Fec::R34),
        18_000_001..=24_000_000 => (16, Fec::R12),
        24_000_001..=36_000_000 => (16, Fec::R34),
        36_000_001..=48_000_000 => (64, Fec::R23),
        _ => (64, Fec::R34),
    }
}

fn bpsk_ber(snr_lin: f64) -> f64 {
    0.5 * erfc(snr_lin.sqrt())
}

fn mqam_ber(m: u32, snr_lin: f64) -> f64 {
    let m = m as f64;
    let k = (1.0 / ((2.0 / 3.0) * (m - 1.0))).sqrt();
    let e = erfc(k * snr_lin.sqrt());
    let sqrtm = m.sqrt();
    let b = 2.0 * (1.0 - 1.0 / sqrtm) * e;
    let c = (1.0 - 2.0 / sqrtm + 1.0 / m) * e * e;
    (b - c) / m.log2()
}

fn n_choose_k(n: u32, k: u32) -> f64 {
    if k > n {
        return 0.0;
    }
    let k = k.min(n - k);
    let mut c = 1.0;
    for i in 1..=k {
        c *= (n - k + i) as f64 / i as f64;
    }
    c
}

/// Union bound of the convolutional code: probability that a decoded bit is wrong.
fn coded_ber(ber: f64, fec: Fec) -> f64 {
    const D_FREE: [u32; 3] = [10, 6, 5];
    const A_D: [[f64; 10]; 3] = [
        [11.0, 0.0, 38.0, 0.0, 193.0, 0.0, 1331.0, 0.0, 7275.0, 0.0],
        [1.0, 16.0, 48.0, 158.0, 642.0, 2435.0, 9174.0, 34701.0, 131533.0, 499312.0],
        [8.0, 31.0, 160.0, 892.0, 4512.0, 23297.0, 120976.0, 624304.0, 3229885.0, 16721329.0],
    ];
    let rho = ber;
    let mut p = 0.0;
    for (i, a) in A_D[fec as usize].iter().enumerate() {
        let d = D_FREE[fec as usize] + i as u32;
        let mut s = 0.0;
        if d % 2 == 1 {
            for k in (d + 1) / 2..=d {
                s += n_choose_k(d, k) * rho.powi(k as i32) * (1.0 - rho).powi((d - k) as i32);
            }
        } else {
            for k in d / 2 + 1..=d {
                s += n_choose_k(d, k) * rho.powi(k as i32) * (1.0 - rho).powi((d - k) as i32);
            }
            s += 0.5 * n_choose_k(d, d / 2) * rho.powi((d / 2) as i32) * (1.0 - rho).powi((d / 2) as i32);
        }
        p += a * s;
    }
    p.min(1.0)
}

/// wmediumd's analytic PER for a frame of `len` bytes at `rate_bps` and `snr_db`.
pub fn analytic_per(snr_db: f64, rate_bps: u64, len: u32) -> f64 {
    if snr_db <= 0.0 {
        return 1.0;
    }
    let snr = 10f64.powf(snr_db / 10.0);
    let (m, fec) = modulation(rate_bps);
    let ber = if m == 2 { bpsk_ber(snr) } else { mqam_ber(m, snr) };
    let pu = coded_ber(ber, fec);
    1.0 - (1.0 - pu).powf(8.0 * len as f64)
}

/// PER from a table measured at `t.frame_len_bytes`, scaled to `len`.
pub fn table_per(t: &PerTable, snr_db: f64, len: u32) -> f64 {
    let pts = &t.points;
    if pts.is_empty() {
        return 1.0;
    }
    let per_ref = if snr_db <= pts[0][0] {
        pts[0][1]
    } else if snr_db >= pts[pts.len() - 1][0] {
        pts[pts.len() - 1][1]
    } else {
        let i = pts.partition_point(|p| p[0] <= snr_db);
        let (a, b) = (pts[i - 1], pts[i]);
        let w = (snr_db - a[0]) / (b[0] - a[0]);
        a[1] + w * (b[1] - a[1])
    };
    let per_ref = per_ref.clamp(0.0, 1.0);
    if per_ref >= 1.0 {
        return 1.0;
    }
    1.0 - (1.0 - per_ref).powf(len as f64 / t.frame_len_bytes.max(1) as f64)
}

/// PER of a frame under the configured model.
pub fn per(p: &RadioParams, sinr_db: f64, rate_bps: u64, len: u32) -> f64 {
    match p.error_model {
        ErrorModelKind::Threshold => {
            if sinr_db >= p.capture_threshold_db {
                0.0
            } else {
                1.0
            }
        }
        ErrorModelKind::Analytic => analytic_per(sinr_db, rate_bps, len),
        ErrorModelKind::Table => table_per(p.per_table.as_ref().expect("validated"), sinr_db, len),
    }
}

/// PER from a bit error rate: 1 - (1 - ber)^(8 len).
pub fn ber_per(ber: f64, len: u32) -> f64 {
    if ber <= 0.0 {
        return 0.0;
    }
    1.0 - (1.0 - ber.min(1.0)).powf(8.0 * len as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erfc_values() {
        assert!((erfc(0.0) - 1.0).abs() < 1e-7);
        assert!((erfc(1.0) - 0.157_299_207).abs() < 1e-7);
        assert!((erfc(-1.0) - 1.842_700_793).abs() < 1e-7);
    }

    #[test]
    fn analytic_per_is_monotone() {
        let mut last = 1.0;
        for s in 0..30 {
            let p = analytic_per(s as f64, 2_000_000, 1028);
            assert!(p <= last + 1e-12);
            last = p;
        }
        assert!(analytic_per(1.0, 2_000_000, 1028) > 0.5);
        assert!(analytic_per(10.0, 2_000_000, 1028) < 1e-6);
    }

    #[test]
    fn table_scales_with_length() {
        let t = PerTable { frame_len_bytes: 100, points: vec![[0.0, 1.0], [10.0, 0.1], [20.0, 0.0]] };
        assert!((table_per(&t, 10.0, 100) - 0.1).abs() < 1e-12);
        assert!((table_per(&t, 10.0, 200) - 0.19).abs() < 1e-12);
        assert!((table_per(&t, 5.0, 100) - 0.55).abs() < 1e-12);
    }
}
