//! Radio and MAC parameters, with the named presets.
//!
//! Every constant of the PHY and MAC models is one documented field of [`RadioParams`]. A preset
//! is a complete `RadioParams`; the run config may override any field by name
//! (`"radio": {"preset": "ns2-wavelan", "overrides": {"rts_threshold": 3000}}`).
//! Derived values (DIFS, EIFS, frame durations) are methods, never second literals.
//!
//! Sources: IEEE 802.11-1999 section 9.2 (DCF) and section 15 (DSSS PHY, table 58 for the
//! 802.11b timing), ns-2's `tcl/lib/ns-default.tcl` and `mac-802_11.cc` (the WaveLAN values used
//! by the DSR/AODV papers), wmediumd's `wmediumd.h`/`config.c` and Mininet-WiFi's defaults.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// c in vacuum, m/s: the one value of every preset (topologies/radio.py `SPEED_OF_LIGHT_MPS`).
pub const SPEED_OF_LIGHT_MPS: f64 = 299_792_458.0;

/// Which path-loss model computes the received power.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PropagationKind {
    /// Friis free space: Pr = Pt Gt Gr lambda^2 / ((4 pi d)^2 L).
    FreeSpace,
    /// Log-distance: PL = PL0 + 10 n log10(d/d0) (+ Xg if sigma > 0).
    LogDistance,
    /// Log-normal shadowing: log-distance plus a per-link N(0, sigma) term (ns-2 Shadowing).
    LogNormalShadowing,
    /// Two-ray ground reflection, Friis below the crossover distance (ns-2 TwoRayGround).
    TwoRayGround,
    /// ITU-R P.1238 indoor model as wmediumd implements it.
    ItuIndoor,
}

/// How a locked frame's decodability is decided from its signal and interference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorModelKind {
    /// ns-2: decodable iff Pr >= rx_threshold and SINR >= capture_threshold for the whole frame.
    Threshold,
    /// wmediumd: BER of the modulation at the frame's SINR, convolutional-code union bound, PER
    /// over the frame's bits.
    Analytic,
    /// A loadable SNR -> PER table (linear interpolation), scaled to the frame length.
    Table,
}

/// SNR -> PER table measured at `frame_len_bytes`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PerTable {
    /// Frame length (bytes) the PER values were measured at.
    pub frame_len_bytes: u32,
    /// `[snr_db, per]` points in increasing SNR.
    pub points: Vec<[f64; 2]>,
}

/// All PHY and MAC parameters of one scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RadioParams {
    // ----- propagation -----
    /// Path-loss model.
    pub propagation: PropagationKind,
    /// Carrier frequency in Hz (ns-2 WaveLAN: 914 MHz; wmediumd: 2412 MHz, channel 1).
    pub frequency_hz: f64,
    /// System loss L (linear, >= 1) of Friis and two-ray ground (ns-2 `L_`).
    pub system_loss: f64,
    /// Antenna height above ground of every station, m (ns-2 `Antenna/OmniAntenna Z_` 1.5 m).
    pub antenna_height_m: f64,
    /// Transmit antenna gain, dBi (ns-2 Gt_ = 1 -> 0 dBi; Mininet-WiFi 5 dBi).
    pub tx_gain_dbi: f64,
    /// Receive antenna gain, dBi.
    pub rx_gain_dbi: f64,
    /// Path-loss exponent n of the log-distance and shadowing models.
    pub path_loss_exponent: f64,
    /// Reference distance d0 of the log-distance and shadowing models, m.
    pub reference_distance_m: f64,
    /// Path loss at d0, dB; `null`: Friis free-space loss at d0 (as wmediumd and ns-2 do).
    pub reference_loss_db: Option<f64>,
    /// Standard deviation of the log-normal shadowing term Xg, dB (0: none).
    pub shadowing_sigma_db: f64,
    /// Coherence time of the shadowing term, s; `null`: constant per link for the whole run.
    pub shadowing_coherence_s: Option<f64>,
    /// ITU indoor: number of floors between the stations.
    pub itu_floors: u32,
    /// ITU indoor: floor penetration loss factor Lf, dB per floor.
    pub itu_floor_loss_db: f64,
    /// ITU indoor: distance power loss coefficient N (wmediumd uses 38 beyond 16 m).
    pub itu_distance_power_loss: f64,
    /// Speed of light used for the wavelength and the propagation delay d/c, m/s.
    pub speed_of_light_mps: f64,

    // ----- transmitter / receiver -----
    /// Default transmit power, dBm (ns-2 Pt_ 0.28183815 W = 24.5 dBm).
    pub tx_power_dbm: f64,
    /// Receive threshold (sensitivity): a frame weaker than this is never decoded, dBm.
    pub rx_threshold_dbm: f64,
    /// Carrier-sense threshold: the medium is busy while the summed received power is at least
    /// this, dBm.
    pub cs_threshold_dbm: f64,
    /// Capture threshold: minimum SINR of a decodable frame (threshold model), dB.
    pub capture_threshold_db: f64,
    /// Noise floor (thermal noise + receiver noise figure), dBm.
    pub noise_floor_dbm: f64,
    /// Signals weaker than this at a receiver are not tracked at all (neither sensed nor counted
    /// as interference); an optimisation, set it well below the noise floor, dBm.
    pub interference_floor_dbm: f64,
    /// Error model.
    pub error_model: ErrorModelKind,
    /// Table of the `table` error model.
    pub per_table: Option<PerTable>,
    /// Whether a later frame that arrives at least `capture_threshold_db` above everything else
    /// takes the receiver over (preamble re-lock of modern chipsets). false: ns-2 behaviour, a
    /// receiver stays locked on the first frame.
    pub capture_later_stronger: bool,

    // ----- MAC: IEEE 802.11-1999 section 9.2 DCF with the DSSS PHY timing (table 58) -----
    /// aSlotTime, ns (DSSS: 20 us).
    pub slot_ns: u64,
    /// aSIFSTime, ns (DSSS: 10 us).
    pub sifs_ns: u64,
    /// PLCP preamble + header duration of every frame, ns (long preamble: 144 + 48 bits at
    /// 1 Mbit/s = 192 us).
    pub plcp_ns: u64,
    /// Rate of unicast data frames, bit/s (ns-2 WaveLAN: 2 Mbit/s).
    pub data_rate_bps: u64,
    /// Basic rate of RTS, CTS and ACK, bit/s (1 Mbit/s).
    pub basic_rate_bps: u64,
    /// Rate of broadcast data frames, bit/s; `null`: the data rate (as ns-2 does).
    pub broadcast_rate_bps: Option<u64>,
    /// MAC header + FCS bytes added to each data payload (24 + 4; LLC/SNAP is not modelled).
    pub mac_overhead_bytes: u32,
    /// RTS frame length, bytes (802.11-1999 7.2.1.1).
    pub rts_bytes: u32,
    /// CTS frame length, bytes (7.2.1.2).
    pub cts_bytes: u32,
    /// ACK frame length, bytes (7.2.1.3).
    pub ack_bytes: u32,
    /// aCWmin (DSSS: 31).
    pub cw_min: u32,
    /// aCWmax (DSSS: 1023).
    pub cw_max: u32,
    /// dot11ShortRetryLimit (7): RTS attempts, and data attempts of frames sent without RTS.
    pub short_retry_limit: u8,
    /// dot11LongRetryLimit (4): data attempts of frames sent after RTS/CTS.
    pub long_retry_limit: u8,
    /// dot11RTSThreshold: RTS/CTS precedes unicast frames whose MAC length exceeds this (bytes).
    /// 0: always (ns-2's default `RTSThreshold_ 0`).
    pub rts_threshold: u32,
    /// Maximum propagation delay allowed for in CTS/ACK timeouts, ns (ns-2
    /// DSSS_MaxPropagationDelay = 2 us).
    pub max_propagation_delay_ns: u64,
}

/// Convert watts to dBm.
pub fn w_to_dbm(w: f64) -> f64 {
    10.0 * (w * 1000.0).log10()
}

/// Convert dBm to milliwatts.
pub fn dbm_to_mw(dbm: f64) -> f64 {
    10f64.powf(dbm / 10.0)
}

/// Convert milliwatts to dBm.
pub fn mw_to_dbm(mw: f64) -> f64 {
    10.0 * mw.log10()
}

impl RadioParams {
    /// The papers' setting: ns-2's WaveLAN 914 MHz radio (Lucent WaveLAN DSSS, 2 Mbit/s) with
    /// two-ray ground propagation. Values from ns-2 `ns-default.tcl` and the CMU Monarch
    /// extensions: Pt_ 0.28183815 W, RXThresh_ 3.652e-10 W (250 m), CSThresh_ 1.559e-11 W
    /// (550 m), CPThresh_ 10 dB, antennas 1.5 m, unit gains, L_ 1.
    pub fn ns2_wavelan() -> Self {
        RadioParams {
            propagation: PropagationKind::TwoRayGround,
            frequency_hz: 914e6,
            system_loss: 1.0,
            antenna_height_m: 1.5,
            tx_gain_dbi: 0.0,
            rx_gain_dbi: 0.0,
            path_loss_exponent: 2.0,
            reference_distance_m: 1.0,
            reference_loss_db: None,
            shadowing_sigma_db: 0.0,
            shadowing_coherence_s: None,
            itu_floors: 0,
            itu_floor_loss_db: 0.0,
            itu_distance_power_loss: 28.0,
            // ns-2 rounds c to 3e8 (SPEED_OF_LIGHT); we use the physical value as the other
            // presets and topologies/radio.py do. Ranges beyond the crossover (250 m, 550 m) do
            // not depend on it; the crossover moves from 86.14 m to 86.20 m.
            speed_of_light_mps: SPEED_OF_LIGHT_MPS,
            tx_power_dbm: w_to_dbm(0.281_838_15),
            rx_threshold_dbm: w_to_dbm(3.652e-10),
            cs_threshold_dbm: w_to_dbm(1.559e-11),
            capture_threshold_db: 10.0,
            // ns-2 has no noise; we use thermal noise kTB over the 22 MHz DSSS channel
            // (-174 dBm/Hz + 73.4 dB), far below RXThresh, so the threshold model is unaffected
            // (SNR at 250 m is 36 dB).
            noise_floor_dbm: -100.6,
            interference_floor_dbm: -120.0,
            error_model: ErrorModelKind::Threshold,
            per_table: None,
            capture_later_stronger: false,
            slot_ns: 20_000,
            sifs_ns: 10_000,
            plcp_ns: 192_000,
            data_rate_bps: 2_000_000,
            basic_rate_bps: 1_000_000,
            broadcast_rate_bps: None,
            mac_overhead_bytes: 28,
            rts_bytes: 20,
            cts_bytes: 14,
            ack_bytes: 14,
            cw_min: 31,
            cw_max: 1023,
            short_retry_limit: 7,
            long_retry_limit: 4,
            rts_threshold: 0,
            max_propagation_delay_ns: 2_000,
        }
    }

    /// Mininet-WiFi's defaults on wmediumd: log-distance with exponent 3 and PL0 the free-space
    /// loss at 1 m on 2412 MHz (wmediumd `calc_path_loss_log_distance`), noise -91 dBm
    /// (`NOISE_LEVEL`), CCA threshold -90 dBm (`CCA_THRESHOLD`), 5 dBi antennas, 15 dBm in ad
    /// hoc mode (14 dBm for access points), and wmediumd's analytic PER model. The MAC keeps the
    /// 802.11b DSSS timing of the other preset (wmediumd itself has no CSMA/CA).
    pub fn wmediumd() -> Self {
        RadioParams {
            propagation: PropagationKind::LogDistance,
            frequency_hz: 2412e6,
            system_loss: 1.0,
            antenna_height_m: 1.0,
            tx_gain_dbi: 5.0,
            rx_gain_dbi: 5.0,
            path_loss_exponent: 3.0,
            reference_distance_m: 1.0,
            reference_loss_db: None,
            shadowing_sigma_db: 0.0,
            shadowing_coherence_s: None,
            itu_floors: 0,
            itu_floor_loss_db: 0.0,
            itu_distance_power_loss: 28.0,
            tx_power_dbm: 15.0,
            rx_threshold_dbm: -90.0,
            cs_threshold_dbm: -90.0,
            capture_threshold_db: 10.0,
            noise_floor_dbm: -91.0,
            interference_floor_dbm: -111.0,
            error_model: ErrorModelKind::Analytic,
            per_table: None,
            capture_later_stronger: false,
            ..Self::ns2_wavelan()
        }
    }

    /// Look a preset up by name.
    pub fn preset(name: &str) -> Result<Self, String> {
        match name {
            "ns2-wavelan" => Ok(Self::ns2_wavelan()),
            "wmediumd" => Ok(Self::wmediumd()),
            other => Err(format!("unknown radio preset {other:?} (known: ns2-wavelan, wmediumd)")),
        }
    }

    /// The preset with the named fields of `overrides` replaced (unknown names are an error).
    pub fn with_overrides(&self, overrides: &Value) -> Result<Self, String> {
        let mut v = serde_json::to_value(self).map_err(|e| e.to_string())?;
        if let Value::Object(o) = overrides {
            let obj = v.as_object_mut().expect("params serialise to an object");
            for (k, val) in o {
                if !obj.contains_key(k) {
                    return Err(format!("unknown radio parameter {k:?}"));
                }
                obj.insert(k.clone(), val.clone());
            }
        } else if !overrides.is_null() {
            return Err("radio.overrides must be an object".into());
        }
        serde_json::from_value(v).map_err(|e| format!("radio overrides: {e}"))
    }

    /// DIFS = SIFS + 2 slots (802.11-1999 9.2.10).
    pub fn difs_ns(&self) -> u64 {
        self.sifs_ns + 2 * self.slot_ns
    }

    /// EIFS = SIFS + DIFS + ACK duration at the basic rate (802.11-1999 9.2.10).
    pub fn eifs_ns(&self) -> u64 {
        self.sifs_ns + self.difs_ns() + self.ack_ns()
    }

    /// Duration on air of a frame of `bytes` MAC bytes at `rate_bps`: PLCP + payload bits.
    pub fn frame_ns(&self, bytes: u32, rate_bps: u64) -> u64 {
        // Rounded up (by hand: u64::div_ceil needs Rust 1.73, the medium builds with 1.63).
        let bits_ns = bytes as u64 * 8 * 1_000_000_000;
        self.plcp_ns + (bits_ns + rate_bps - 1) / rate_bps
    }

    pub fn rts_ns(&self) -> u64 {
        self.frame_ns(self.rts_bytes, self.basic_rate_bps)
    }
    pub fn cts_ns(&self) -> u64 {
        self.frame_ns(self.cts_bytes, self.basic_rate_bps)
    }
    pub fn ack_ns(&self) -> u64 {
        self.frame_ns(self.ack_bytes, self.basic_rate_bps)
    }
    /// Duration of a unicast data frame carrying `payload` bytes.
    pub fn data_ns(&self, payload: u32) -> u64 {
        self.frame_ns(payload + self.mac_overhead_bytes, self.data_rate_bps)
    }
    pub fn bcast_rate(&self) -> u64 {
        self.broadcast_rate_bps.unwrap_or(self.data_rate_bps)
    }
    /// CTS timeout after the end of an RTS (ns-2: SIFS + CTS + 2 max propagation delays).
    pub fn cts_timeout_ns(&self) -> u64 {
        self.sifs_ns + self.cts_ns() + 2 * self.max_propagation_delay_ns
    }
    /// ACK timeout after the end of a data frame.
    pub fn ack_timeout_ns(&self) -> u64 {
        self.sifs_ns + self.ack_ns() + 2 * self.max_propagation_delay_ns
    }
    /// Whether a unicast frame with `payload` bytes is preceded by RTS/CTS.
    pub fn uses_rts(&self, payload: u32) -> bool {
        payload + self.mac_overhead_bytes > self.rts_threshold
    }
    pub fn noise_mw(&self) -> f64 {
        dbm_to_mw(self.noise_floor_dbm)
    }
    pub fn validate(&self) -> Result<(), String> {
        if self.system_loss < 1.0 {
            return Err("system_loss must be >= 1".into());
        }
        if self.data_rate_bps == 0 || self.basic_rate_bps == 0 || self.slot_ns == 0 {
            return Err("rates and slot must be positive".into());
        }
        if self.cw_min == 0 || self.cw_max < self.cw_min {
            return Err("need 0 < cw_min <= cw_max".into());
        }
        if self.short_retry_limit == 0 || self.long_retry_limit == 0 {
            return Err("retry limits must be >= 1".into());
        }
        if self.error_model == ErrorModelKind::Table && self.per_table.is_none() {
            return Err("error_model table needs per_table".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dsss_timing() {
        let p = RadioParams::ns2_wavelan();
        assert_eq!(p.difs_ns(), 50_000);
        assert_eq!(p.ack_ns(), 304_000);
        assert_eq!(p.rts_ns(), 352_000);
        assert_eq!(p.eifs_ns(), 364_000);
        // 1000-byte IP packet + 28 bytes at 2 Mbit/s: 192 + 4112 us.
        assert_eq!(p.data_ns(1000), 4_304_000);
    }

    #[test]
    fn overrides_by_name() {
        let p = RadioParams::ns2_wavelan()
            .with_overrides(&serde_json::json!({"rts_threshold": 3000}))
            .unwrap();
        assert_eq!(p.rts_threshold, 3000);
        assert!(RadioParams::ns2_wavelan()
            .with_overrides(&serde_json::json!({"no_such": 1}))
            .is_err());
    }
}
