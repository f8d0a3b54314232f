//! Path-loss models: received power from transmit power and geometry, in f64 dB.
//!
//! - Free space: Friis, Pr = Pt Gt Gr lambda^2 / ((4 pi d)^2 L) (ns-2 `FreeSpace`).
//! - Two-ray ground: Friis below the crossover distance dc = 4 pi ht hr / lambda, and
//!   Pr = Pt Gt Gr ht^2 hr^2 / (d^4 L) above it (ns-2 `TwoRayGround::Pr`). wmediumd's two-ray
//!   model omits the crossover; this one does not.
//! - Log-distance: PL(d) = PL0 + 10 n log10(d / d0) (+ Xg), PL0 the free-space loss at d0 unless
//!   given (wmediumd `calc_path_loss_log_distance`).
//! - Log-normal shadowing: log-distance plus Xg ~ N(0, sigma) per link, seeded; constant for
//!   the run or time-correlated with a coherence time (ns-2 `Shadowing`, which draws Xg per
//!   packet; we draw per link so that a link is stable, as a static obstacle is).
//! - ITU indoor: PL = 20 log10(f_MHz) + N log10(d) + Lf * floors - 28, N = 38 beyond 16 m
//!   (wmediumd `calc_path_loss_itu`, ITU-R P.1238).

use crate::params::{PropagationKind, RadioParams};
use crate::rng::{hashed_normal, splitmix64, STREAM_SHADOW};

/// Distances below this are clamped (Friis diverges at d = 0), m.
pub const MIN_DISTANCE_M: f64 = 0.01;

/// Precomputed model of one scenario.
#[derive(Clone, Debug)]
pub struct Propagation {
    kind: PropagationKind,
    lambda: f64,
    /// Linear Gt Gr / L.
    gain_lin: f64,
    gains_db: f64,
    system_loss_db: f64,
    ht_hr_sq: f64,
    crossover_m: f64,
    exponent: f64,
    d0: f64,
    pl0_db: f64,
    sigma_db: f64,
    coherence_ns: Option<u64>,
    freq_mhz: f64,
    itu_n: f64,
    itu_floor_db: f64,
    seed: u64,
}

impl Propagation {
    pub fn new(p: &RadioParams, seed: u64) -> Self {
        let lambda = p.speed_of_light_mps / p.frequency_hz;
        let gains_db = p.tx_gain_dbi + p.rx_gain_dbi;
        let h = p.antenna_height_m;
        let d0 = p.reference_distance_m;
        let fspl_d0 = 20.0 * (4.0 * std::f64::consts::PI * d0 / lambda).log10()
            + 10.0 * p.system_loss.log10();
        Propagation {
            kind: p.propagation,
            lambda,
            gain_lin: 10f64.powf(gains_db / 10.0) / p.system_loss,
            gains_db,
            system_loss_db: 10.0 * p.system_loss.log10(),
            ht_hr_sq: h * h * h * h,
            crossover_m: 4.0 * std::f64::consts::PI * h * h / lambda,
            exponent: p.path_loss_exponent,
            d0,
            pl0_db: p.reference_loss_db.unwrap_or(fspl_d0),
            sigma_db: p.shadowing_sigma_db,
            coherence_ns: p.shadowing_coherence_s.map(|s| (s * 1e9).max(1.0) as u64),
            freq_mhz: p.frequency_hz / 1e6,
            itu_n: p.itu_distance_power_loss,
            itu_floor_db: p.itu_floor_loss_db * p.itu_floors as f64,
            seed,
        }
    }

    /// Crossover distance of the two-ray ground model, m.
    pub fn crossover_m(&self) -> f64 {
        self.crossover_m
    }

    /// Received power in dBm at distance `d` from a transmitter of `pt_dbm`, on the link
    /// between station indices `a` and `b` (for shadowing), at virtual time `t_ns`.
    pub fn rx_dbm(&self, pt_dbm: f64, d: f64, a: usize, b: usize, t_ns: u64) -> f64 {
        let d = d.max(MIN_DISTANCE_M);
        match self.kind {
            PropagationKind::FreeSpace => pt_dbm + self.friis_gain_db(d),
            PropagationKind::TwoRayGround => {
                if d < self.crossover_m {
                    pt_dbm + self.friis_gain_db(d)
                } else {
                    pt_dbm + 10.0 * (self.gain_lin * self.ht_hr_sq / (d * d * d * d)).log10()
                }
            }
            PropagationKind::LogDistance => {
                let xg = if self.sigma_db > 0.0 { self.shadowing_db(a, b, t_ns) } else { 0.0 };
                pt_dbm + self.gains_db - self.log_distance_db(d) - xg
            }
            PropagationKind::LogNormalShadowing => {
                pt_dbm + self.gains_db - self.log_distance_db(d) - self.shadowing_db(a, b, t_ns)
            }
            PropagationKind::ItuIndoor => {
                let n = if d > 16.0 { 38.0 } else { self.itu_n };
                let pl = 20.0 * self.freq_mhz.log10() + n * d.log10() + self.itu_floor_db - 28.0;
                pt_dbm + self.gains_db - pl
            }
        }
    }

    /// Friis: 10 log10(Gt Gr lambda^2 / ((4 pi d)^2 L)).
    fn friis_gain_db(&self, d: f64) -> f64 {
        let x = self.lambda / (4.0 * std::f64::consts::PI * d);
        10.0 * (self.gain_lin * x * x).log10()
    }

    fn log_distance_db(&self, d: f64) -> f64 {
        self.pl0_db + 10.0 * self.exponent * (d / self.d0).log10()
    }

    /// Shadowing term Xg of the (unordered) link a-b at time t: sigma * z, z ~ N(0,1) from a
    /// hash of (seed, link, time bucket). With a coherence time T, z is interpolated between
    /// independent draws at multiples of T with weights normalised to keep unit variance.
    pub fn shadowing_db(&self, a: usize, b: usize, t_ns: u64) -> f64 {
        if self.sigma_db <= 0.0 {
            return 0.0;
        }
        let (lo, hi) = if a < b { (a, b) } else { (b, a) };
        let link = splitmix64(self.seed ^ splitmix64(STREAM_SHADOW ^ ((lo as u64) << 32 | hi as u64)));
        let z = match self.coherence_ns {
            None => hashed_normal(link),
            Some(tc) => {
                let k = t_ns / tc;
                let w = (t_ns % tc) as f64 / tc as f64;
                let z0 = hashed_normal(link ^ splitmix64(k));
                let z1 = hashed_normal(link ^ splitmix64(k + 1));
                ((1.0 - w) * z0 + w * z1) / ((1.0 - w).powi(2) + w * w).sqrt()
            }
        };
        self.sigma_db * z
    }

    #[allow(dead_code)]
    pub fn system_loss_db(&self) -> f64 {
        self.system_loss_db
    }
}

impl RadioParams {
    /// Distance at which the median received power of a `tx_power_dbm` transmitter falls to
    /// `threshold_dbm`, m: the root of this module's forward model (shadowing term left out), by
    /// bisection. topologies/radio.py derives the same distance in closed form; the test
    /// `tests/radio_ranges.rs` checks that the two agree.
    pub fn distance_for_dbm(&self, threshold_dbm: f64) -> f64 {
        let mut median = self.clone();
        median.shadowing_sigma_db = 0.0;
        let m = Propagation::new(&median, 0);
        let above = |d: f64| m.rx_dbm(self.tx_power_dbm, d, 0, 1, 0) >= threshold_dbm;
        let (mut lo, mut hi) = (MIN_DISTANCE_M, 1.0);
        if !above(lo) {
            return lo;
        }
        while above(hi) && hi < 1e9 {
            lo = hi;
            hi *= 2.0;
        }
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if above(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Decode range: where the received power falls to `rx_threshold_dbm`, m.
    pub fn range_m(&self) -> f64 {
        self.distance_for_dbm(self.rx_threshold_dbm)
    }

    /// Carrier-sense range: where the received power falls to `cs_threshold_dbm`, m.
    pub fn cs_range_m(&self) -> f64 {
        self.distance_for_dbm(self.cs_threshold_dbm)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::w_to_dbm;

    #[test]
    fn ns2_two_ray_ranges() {
        let p = RadioParams::ns2_wavelan();
        let m = Propagation::new(&p, 1);
        // RXThresh 3.652e-10 W is reached at 250 m, CSThresh 1.559e-11 W at 550 m.
        let at = |d: f64| m.rx_dbm(p.tx_power_dbm, d, 0, 1, 0);
        assert!((at(250.0) - w_to_dbm(3.652e-10)).abs() < 0.01);
        assert!((at(550.0) - w_to_dbm(1.559e-11)).abs() < 0.01);
        assert!(at(249.0) > p.rx_threshold_dbm && at(251.0) < p.rx_threshold_dbm);
        assert!((p.range_m() - 250.0).abs() < 0.02 && (p.cs_range_m() - 550.0).abs() < 0.03);
        // Crossover 4 pi ht hr / lambda = 86.20 m at 914 MHz (86.14 m with ns-2's c = 3e8);
        // continuous there.
        assert!((m.crossover_m() - 86.20).abs() < 0.01);
        let dc = m.crossover_m();
        assert!((at(dc - 1e-9) - at(dc + 1e-9)).abs() < 1e-6);
    }

    #[test]
    fn wmediumd_log_distance() {
        let p = RadioParams::wmediumd();
        let m = Propagation::new(&p, 1);
        // FSPL(1 m, 2412 MHz) = 40.09 dB; at 100 m: 40.09 + 60 = 100.09 dB.
        let pr = m.rx_dbm(15.0, 100.0, 0, 1, 0);
        assert!((pr - (15.0 + 10.0 - 100.09)).abs() < 0.02, "{pr}");
    }

    #[test]
    fn shadowing_is_per_link_and_symmetric() {
        let mut p = RadioParams::wmediumd();
        p.propagation = PropagationKind::LogNormalShadowing;
        p.shadowing_sigma_db = 4.0;
        let m = Propagation::new(&p, 9);
        assert_eq!(m.shadowing_db(1, 2, 0), m.shadowing_db(2, 1, 5_000_000_000));
        assert_ne!(m.shadowing_db(1, 2, 0), m.shadowing_db(1, 3, 0));
    }
}
