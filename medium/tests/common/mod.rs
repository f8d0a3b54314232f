//! Helpers of the virtual-time integration tests.
#![allow(dead_code)]

use std::cell::RefCell;
use std::io::Write;
use std::rc::Rc;

use manet_medium::config::RunConfig;
use manet_medium::core::{Input, Medium, Output, Status};
use serde_json::{json, Value};

pub const MS: u64 = 1_000_000;
pub const S: u64 = 1_000_000_000;

/// A config with stations at fixed positions `(id, x, y)`.
pub fn config(stations: &[(u32, f64, f64)], overrides: Value, extra: Value) -> RunConfig {
    let mut v = json!({
        "run_id": "test00", "seed": 1,
        "radio": {"preset": "ns2-wavelan", "overrides": overrides},
        "stations": stations.iter().map(|(id, x, y)| json!({"id": id, "trajectory": [[0.0, x, y]]})).collect::<Vec<_>>(),
    });
    if let Value::Object(e) = extra {
        for (k, val) in e {
            v[k] = val;
        }
    }
    RunConfig::from_json(&v.to_string()).unwrap()
}

pub fn tx(sta: u32, cookie: u64, dst: u32, len: usize) -> Input {
    Input::Tx { sta, cookie, dst, power_dbm: None, retry_limit: 0, no_rts: false, payload: Rc::from(vec![0u8; len]) }
}

/// Run the medium over inputs, collecting every output.
pub fn run(m: &mut Medium, inputs: Vec<(u64, Input)>, until: Option<u64>) -> Vec<Output> {
    let mut out = Vec::new();
    manet_medium::virt::run(m, inputs, until, |o| out.push(o.clone()));
    out
}

pub fn statuses(out: &[Output], sta: u32) -> Vec<(u64, Status, u8, u8, u8, u64, u64)> {
    out.iter()
        .filter_map(|o| match o {
            Output::TxStatus { to, cookie, status, rts_attempts, data_attempts, cause, t_start, t_end, .. } if *to == sta => {
                Some((*cookie, *status, *rts_attempts, *data_attempts, *cause as u8, *t_start, *t_end))
            }
            _ => None,
        })
        .collect()
}

pub fn rx_count(out: &[Output], to: u32, from: u32) -> usize {
    out.iter().filter(|o| matches!(o, Output::Rx { to: t, src, overheard: false, .. } if *t == to && *src == from)).count()
}

pub fn rx_times(out: &[Output], to: u32, from: u32) -> Vec<u64> {
    out.iter()
        .filter_map(|o| match o {
            Output::Rx { to: t, src, t: time, overheard: false, .. } if *t == to && *src == from => Some(*time),
            _ => None,
        })
        .collect()
}

/// A Write that appends to a shared buffer (for event logs in tests).
#[derive(Clone, Default)]
pub struct SharedBuf(pub Rc<RefCell<Vec<u8>>>);

impl Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl SharedBuf {
    pub fn text(&self) -> String {
        String::from_utf8(self.0.borrow().clone()).unwrap()
    }
}

/// Periodic offers of `len`-byte frames from `sta` to `dst` every `period` from `start`.
pub fn periodic(sta: u32, dst: u32, len: usize, start: u64, period: u64, until: u64, cookie0: u64) -> Vec<(u64, Input)> {
    let mut v = Vec::new();
    let mut t = start;
    let mut c = cookie0;
    while t < until {
        v.push((t, tx(sta, c, dst, len)));
        c += 1;
        t += period;
    }
    v
}

pub fn merge(mut a: Vec<(u64, Input)>, b: Vec<(u64, Input)>) -> Vec<(u64, Input)> {
    a.extend(b);
    a.sort_by_key(|(t, _)| *t);
    a
}

/// Acked payload bits per second of station `id` from the counters.
pub fn goodput_bps(m: &Medium, id: u32) -> f64 {
    let c = m.counters_json();
    let bytes = c["per_station"][id.to_string()]["payload_bytes_acked"].as_u64().unwrap();
    bytes as f64 * 8.0 / (m.now() as f64 / 1e9)
}
