//! Deterministic random numbers.
//!
//! The medium must take the same decisions for the same seed and the same offered frames, so
//! every random draw comes from an explicitly seeded stream: one per station for the MAC
//! (backoff draws) and one per station for the PHY (error-model draws at that receiver), one per
//! point-to-point link. Streams are PCG-XSH-RR 64/32 generators (O'Neill 2014) seeded through
//! SplitMix64 (Steele et al. 2014), so adding a station never shifts another station's stream.
//! Link shadowing uses a stateless hash of (seed, link, time bucket) instead of a stream, so it
//! does not depend on the order in which links are evaluated.

/// SplitMix64 finaliser: a good 64-bit mixing function (used for seeding and hashing).
pub fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Purpose tags that separate the streams derived from one seed.
pub const STREAM_MAC: u64 = 1;
pub const STREAM_PHY: u64 = 2;
pub const STREAM_P2P: u64 = 3;
pub const STREAM_SHADOW: u64 = 4;

/// PCG-XSH-RR with 64-bit state and 32-bit output.
#[derive(Clone, Debug)]
pub struct Pcg32 {
    state: u64,
    inc: u64,
}

impl Pcg32 {
    const MULT: u64 = 6_364_136_223_846_793_005;

    /// A stream for (seed, purpose, index).
    pub fn new(seed: u64, purpose: u64, index: u64) -> Self {
        let s = splitmix64(seed ^ splitmix64(purpose.wrapping_mul(0x1000_0000_01B3) ^ index));
        let inc = (splitmix64(s ^ 0xDA94_2042_E4DD_58B5) << 1) | 1;
        let mut r = Pcg32 { state: 0, inc };
        r.next_u32();
        r.state = r.state.wrapping_add(s);
        r.next_u32();
        r
    }

    pub fn next_u32(&mut self) -> u32 {
        let old = self.state;
        self.state = old.wrapping_mul(Self::MULT).wrapping_add(self.inc);
        let xorshifted = (((old >> 18) ^ old) >> 27) as u32;
        let rot = (old >> 59) as u32;
        xorshifted.rotate_right(rot)
    }

    pub fn next_u64(&mut self) -> u64 {
        ((self.next_u32() as u64) << 32) | self.next_u32() as u64
    }

    /// Uniform integer in `0..=max` without modulo bias (Lemire's method with rejection).
    pub fn uniform_incl(&mut self, max: u32) -> u32 {
        if max == u32::MAX {
            return self.next_u32();
        }
        let range = max as u64 + 1;
        loop {
            let x = self.next_u32() as u64;
            let m = x * range;
            let low = m as u32 as u64;
            if low >= (1u64 << 32) % range {
                return (m >> 32) as u32;
            }
        }
    }

    /// Uniform float in [0, 1) with 53 bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// A standard normal value that is a pure function of `key` (Box-Muller on two hashed uniforms).
pub fn hashed_normal(key: u64) -> f64 {
    let a = splitmix64(key);
    let b = splitmix64(a ^ 0x5851_F42D_4C95_7F2D);
    let u1 = ((a >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64);
    let u2 = (b >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let mut a = Pcg32::new(1, STREAM_MAC, 0);
        let mut b = Pcg32::new(1, STREAM_MAC, 0);
        let mut c = Pcg32::new(1, STREAM_MAC, 1);
        let va: Vec<u32> = (0..8).map(|_| a.next_u32()).collect();
        let vb: Vec<u32> = (0..8).map(|_| b.next_u32()).collect();
        let vc: Vec<u32> = (0..8).map(|_| c.next_u32()).collect();
        assert_eq!(va, vb);
        assert_ne!(va, vc);
    }

    #[test]
    fn uniform_incl_covers_range() {
        let mut r = Pcg32::new(7, STREAM_MAC, 0);
        let mut seen = [0u32; 32];
        for _ in 0..32_000 {
            seen[r.uniform_incl(31) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| n > 800 && n < 1200), "{seen:?}");
    }

    #[test]
    fn hashed_normal_moments() {
        let n = 20_000;
        let xs: Vec<f64> = (0..n).map(|k| hashed_normal(k as u64)).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.03, "{mean}");
        assert!((var - 1.0).abs() < 0.05, "{var}");
    }
}
