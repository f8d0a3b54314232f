//! Virtual-time driver: replays offered frames (from an event log or a test) through the core
//! without the wall clock, as fast as possible. The tests, the saturation benchmark and
//! `manet-medium --virtual` use it.
//!
//! Offered-frame files are JSON lines in the event-log format; only the input records are read
//! (`start`, `hello`, `bye`, `offer`, `set_power`, `op`), the decisions are ignored, so an event
//! log recorded in real time replays into an identical log:
//!
//! ```text
//! {"ev":"start","seed":1,"radios_on":false}
//! {"t":1000000,"ev":"hello","sta":1,"promisc":false}
//! {"t":2000000,"ev":"offer","sta":1,"cookie":1,"dst":2,"len":512,"power":null,"retry":0,"no_rts":false}
//! ```

use std::rc::Rc;

use serde_json::Value;

use crate::config::{Op, RunConfig};
use crate::core::{Input, Medium};

/// Inputs read from an offered-frame file, and the initial radio state it asks for.
pub struct Offered {
    pub radios_on: Option<bool>,
    pub inputs: Vec<(u64, Input)>,
}

fn num(v: &Value, k: &str) -> Result<u64, String> {
    v.get(k).and_then(Value::as_u64).ok_or_else(|| format!("offered record needs integer {k:?}: {v}"))
}

/// Zeros, or with `ecn` (the offer record's IPv4 ECN field) an IPv4 version/IHL byte and that ECN
/// field: all a decision reads from a payload (the p2p congestion windows, core/p2p.rs).
fn replay_payload(len: usize, ecn: Option<u64>) -> Vec<u8> {
    let mut p = vec![0u8; len];
    if let (Some(e), true) = (ecn, len >= 20) {
        p[0] = 0x45;
        p[1] = (e & 3) as u8;
    }
    p
}

/// Parse an offered-frame / event-log file.
pub fn parse_offered(text: &str) -> Result<Offered, String> {
    let mut radios_on = None;
    let mut inputs = Vec::new();
    for (ln, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let v: Value = serde_json::from_str(line).map_err(|e| format!("line {}: {e}", ln + 1))?;
        let ev = v.get("ev").and_then(Value::as_str).unwrap_or("");
        let sta = || num(&v, "sta").map(|x| x as u32);
        let inp = match ev {
            "start" => {
                radios_on = v.get("radios_on").and_then(Value::as_bool);
                continue;
            }
            "hello" => Input::Hello { sta: sta()?, promisc: v.get("promisc").and_then(Value::as_bool).unwrap_or(false) },
            "bye" => Input::Bye { sta: sta()? },
            "offer" => Input::Tx {
                sta: sta()?,
                cookie: num(&v, "cookie")?,
                dst: num(&v, "dst")? as u32,
                power_dbm: v.get("power").and_then(Value::as_f64),
                retry_limit: v.get("retry").and_then(Value::as_u64).unwrap_or(0) as u8,
                no_rts: v.get("no_rts").and_then(Value::as_bool).unwrap_or(false),
                payload: Rc::from(replay_payload(num(&v, "len")? as usize, v.get("ecn").and_then(Value::as_u64))),
            },
            "set_power" => Input::SetPower {
                sta: sta()?,
                neighbour: v.get("nb").and_then(Value::as_u64).map(|x| x as u32),
                power_dbm: v.get("power").and_then(Value::as_f64),
            },
            "op" => {
                let op = v.get("op").ok_or("op record without op")?;
                Input::Op(Op::parse(op)?.ok_or("unsupported op")?)
            }
            _ => continue,
        };
        inputs.push((num(&v, "t")?, inp));
    }
    inputs.sort_by_key(|(t, _)| *t); // stable: equal times keep file order
    Ok(Offered { radios_on, inputs })
}

/// Run the core over `inputs` (sorted by time) until `until_ns` (or until nothing is left).
/// Outputs are handed to `sink` as they are produced.
pub fn run(m: &mut Medium, inputs: Vec<(u64, Input)>, until_ns: Option<u64>, mut sink: impl FnMut(&crate::core::Output)) {
    for (t, inp) in inputs {
        if let Some(u) = until_ns {
            if t > u {
                break;
            }
        }
        m.input(t, inp);
        for o in m.outputs.drain(..) {
            sink(&o);
        }
    }
    loop {
        match (m.next_event_time(), until_ns) {
            (None, _) => break,
            (Some(t), Some(u)) if t > u => break,
            _ => {}
        }
        m.step();
        if !m.outputs.is_empty() {
            for o in m.outputs.drain(..) {
                sink(&o);
            }
        }
    }
    if let Some(u) = until_ns {
        m.run_until(u);
    }
}

/// Build a medium for virtual mode from a config.
pub fn medium(cfg: &RunConfig, radios_on: bool) -> Result<Medium, String> {
    Medium::new(cfg, radios_on)
}
