//! The medium's run config (docs/interfaces.md section 3) and the scripted operations shared by
//! config `events` and the control socket.

use serde::Deserialize;
use serde_json::Value;

use crate::params::RadioParams;

#[derive(Clone, Debug, Deserialize)]
pub struct RadioConfig {
    pub preset: String,
    #[serde(default)]
    pub overrides: Value,
}

#[derive(Clone, Debug, Deserialize)]
pub struct StationConfig {
    pub id: u32,
    /// `[t_s, x_m, y_m]` waypoints.
    pub trajectory: Vec<[f64; 3]>,
    /// Default transmit power of this station, dBm (`null`: the radio's).
    #[serde(default)]
    pub tx_power_dbm: Option<f64>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct LinkConfig {
    pub a: u32,
    pub b: u32,
    #[serde(default)]
    pub loss: Option<f64>,
    #[serde(default)]
    pub ber: Option<f64>,
}

/// One point-to-point link (section "p2p" of docs/medium.md).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct P2pLinkConfig {
    pub a: u32,
    pub b: u32,
    #[serde(flatten)]
    pub props: P2pProps,
}

#[derive(Clone, Debug, Deserialize)]
pub struct P2pProps {
    /// Serialisation rate, bit/s.
    pub rate_bps: f64,
    /// One-way delay drawn uniformly per frame from [min, max], ms.
    #[serde(default)]
    pub delay_ms: [f64; 2],
    /// Bit error rate (per frame: 1 - (1 - ber)^(8 len)).
    #[serde(default)]
    pub ber: f64,
    /// Fixed loss probability per frame.
    #[serde(default)]
    pub loss: f64,
    /// Probability that a frame is held back `reorder_delay_ms` extra, so later ones overtake it.
    #[serde(default)]
    pub reorder_prob: f64,
    #[serde(default)]
    pub reorder_delay_ms: f64,
    /// Per-link header bytes added to each payload on the wire (0: none).
    #[serde(default)]
    pub overhead_bytes: u32,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct P2pConfig {
    /// Explicit links.
    #[serde(default)]
    pub links: Vec<P2pLinkConfig>,
    /// Shorthand: consecutive stations of `chain` are linked with `chain_props`.
    #[serde(default)]
    pub chain: Vec<u32>,
    #[serde(default)]
    pub chain_props: Option<P2pProps>,
    /// Periodic congestion windows on one direction of a link (Liu & Singh 2001 section V-B).
    #[serde(default)]
    pub congestion: Vec<P2pCongestion>,
}

/// Congestion on the direction `from -> to` of a p2p link during `[start_s + k period_s,
/// + duration_s)`: a frame offered then waits for the window's end (the link is busy with the
/// flood), ECT(0)/ECT(1) frames are marked CE and not-ECT frames are dropped (RFC 3168 section 5).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct P2pCongestion {
    pub from: u32,
    pub to: u32,
    pub period_s: f64,
    pub duration_s: f64,
    #[serde(default)]
    pub start_s: f64,
}

/// A saturated source for the virtual mode: `src` always has a frame of `len` bytes for `dst`.
#[derive(Clone, Debug, Deserialize)]
pub struct SaturatedSource {
    pub src: u32,
    pub dst: u32,
    pub len: u16,
}

#[derive(Clone, Debug, Deserialize)]
pub struct RunConfig {
    #[serde(default)]
    pub run_id: String,
    #[serde(default)]
    pub seed: u64,
    #[serde(default)]
    pub socket: Option<String>,
    #[serde(default)]
    pub control_socket: Option<String>,
    #[serde(default)]
    pub out_dir: Option<String>,
    pub radio: RadioConfig,
    pub stations: Vec<StationConfig>,
    #[serde(default)]
    pub links: Vec<LinkConfig>,
    #[serde(default)]
    pub events: Vec<Value>,
    #[serde(default)]
    pub p2p: Option<P2pConfig>,
    /// Write `out_dir/events.log` (or this path if a string).
    #[serde(default)]
    pub event_log: Option<Value>,
    /// Virtual mode only: saturated sources.
    #[serde(default)]
    pub saturated: Vec<SaturatedSource>,
    /// Virtual mode only: stop at this virtual time, s.
    #[serde(default)]
    pub duration_s: Option<f64>,
}

impl RunConfig {
    pub fn from_json(text: &str) -> Result<Self, String> {
        let c: RunConfig = serde_json::from_str(text).map_err(|e| format!("config: {e}"))?;
        c.check()?;
        Ok(c)
    }

    pub fn radio_params(&self) -> Result<RadioParams, String> {
        let p = RadioParams::preset(&self.radio.preset)?.with_overrides(&self.radio.overrides)?;
        p.validate()?;
        Ok(p)
    }

    fn check(&self) -> Result<(), String> {
        let mut ids: Vec<u32> = self.stations.iter().map(|s| s.id).collect();
        ids.sort();
        if ids.windows(2).any(|w| w[0] == w[1]) {
            return Err("duplicate station id".into());
        }
        if ids.contains(&crate::BROADCAST) {
            return Err("station id 0xFFFFFFFF is reserved for broadcast".into());
        }
        Ok(())
    }
}

/// A scripted operation (config `events` and the control socket).
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Teleport to (x, y), or follow `trajectory` (absolute `[t_s, x, y]`, from now on), or go
    /// in a straight line to (x, y) at `speed` m/s.
    Move { station: u32, x: f64, y: f64, speed: Option<f64>, trajectory: Option<Vec<[f64; 3]>> },
    /// Per-link loss probability / bit error rate; `None` clears.
    SetLink { a: u32, b: u32, loss: Option<f64>, ber: Option<f64> },
    /// Cut all links between the two sets for `duration_s` (None: until the end).
    Partition { a: Vec<u32>, b: Vec<u32>, duration_s: Option<f64> },
}

fn get_u32(v: &Value, k: &str) -> Result<u32, String> {
    v.get(k)
        .and_then(Value::as_u64)
        .and_then(|x| u32::try_from(x).ok())
        .ok_or_else(|| format!("{k:?} must be a station id"))
}

fn get_f64(v: &Value, k: &str) -> Result<f64, String> {
    v.get(k).and_then(Value::as_f64).ok_or_else(|| format!("{k:?} must be a number"))
}

fn opt_f64(v: &Value, k: &str) -> Result<Option<f64>, String> {
    match v.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(x) => x.as_f64().map(Some).ok_or_else(|| format!("{k:?} must be a number or null")),
    }
}

fn get_ids(v: &Value, k: &str) -> Result<Vec<u32>, String> {
    v.get(k)
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{k:?} must be a list of station ids"))?
        .iter()
        .map(|x| x.as_u64().and_then(|x| u32::try_from(x).ok()).ok_or_else(|| format!("bad id in {k:?}")))
        .collect()
}

impl Op {
    /// Parse a scripted op from its JSON form (`{"op": "move", ...}`); `None` if the op is not
    /// one of the scripted ones (positions, counters, stop are the driver's).
    pub fn parse(v: &Value) -> Result<Option<Op>, String> {
        let op = v.get("op").and_then(Value::as_str).ok_or("missing \"op\"")?;
        Ok(Some(match op {
            "move" => {
                let trajectory = match v.get("trajectory") {
                    None | Some(Value::Null) => None,
                    Some(t) => Some(
                        serde_json::from_value::<Vec<[f64; 3]>>(t.clone())
                            .map_err(|e| format!("trajectory: {e}"))?,
                    ),
                };
                let (x, y) = if trajectory.is_some() {
                    (opt_f64(v, "x")?.unwrap_or(0.0), opt_f64(v, "y")?.unwrap_or(0.0))
                } else {
                    (get_f64(v, "x")?, get_f64(v, "y")?)
                };
                let speed = opt_f64(v, "speed")?;
                if let Some(s) = speed {
                    if !(s > 0.0) {
                        return Err("speed must be > 0".into());
                    }
                }
                Op::Move { station: get_u32(v, "station")?, x, y, speed, trajectory }
            }
            "set_link" => {
                let loss = opt_f64(v, "loss")?;
                let ber = opt_f64(v, "ber")?;
                for p in [loss, ber].into_iter().flatten() {
                    if !(0.0..=1.0).contains(&p) {
                        return Err("loss and ber must be in [0, 1]".into());
                    }
                }
                Op::SetLink { a: get_u32(v, "a")?, b: get_u32(v, "b")?, loss, ber }
            }
            "partition" => Op::Partition {
                a: get_ids(v, "a")?,
                b: get_ids(v, "b")?,
                duration_s: opt_f64(v, "duration_s")?,
            },
            _ => return Ok(None),
        }))
    }

    pub fn to_json(&self) -> Value {
        match self {
            Op::Move { station, x, y, speed, trajectory } => serde_json::json!({
                "op": "move", "station": station, "x": x, "y": y, "speed": speed,
                "trajectory": trajectory,
            }),
            Op::SetLink { a, b, loss, ber } => {
                serde_json::json!({"op": "set_link", "a": a, "b": b, "loss": loss, "ber": ber})
            }
            Op::Partition { a, b, duration_s } => {
                serde_json::json!({"op": "partition", "a": a, "b": b, "duration_s": duration_s})
            }
        }
    }
}
