//! The medium's discrete-event core: PHY reception and 802.11 DCF for every station, in exact
//! virtual time (integer nanoseconds).
//!
//! The core is a pure state machine: inputs (`Medium::input`) and its own events advance it;
//! it never reads a clock or touches a socket. The real-time driver (`realtime.rs`) feeds it
//! frames at their wall-clock arrival times and plays its events out when the wall clock reaches
//! them; the virtual driver (`virt.rs`) and the tests run it as fast as possible. Events at the
//! same time run in insertion order (a heap of `(time, seq)`).
//!
//! This file holds the state (`Medium`, `Sta`), the event queue and its dispatch (`handle`),
//! the inputs and the queries. Each job is an `impl Medium` block in its own module:
//! - `phy`: signals on the air, SINR, lock and capture, the decode decision (the model is
//!   described there);
//! - `dcf`: IEEE 802.11 DCF: backoff, carrier sense and NAV, RTS/CTS/DATA/ACK exchanges,
//!   retries (described there);
//! - `p2p`: the point-to-point channel that replaces the radio when the config has `p2p`;
//! - `traffic`: the saturated sources (virtual mode);
//! - `ops`: scripted operations (move, per-link loss, partitions);
//! - `counters`: `counters.json` and the failed-frame trace.

mod counters;
mod dcf;
mod ops;
pub mod p2p;
mod phy;
mod traffic;

pub use counters::{AIRTIME_BIN_NS, TRACE_MAGIC, TRACE_RECORD_BYTES};

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::io::Write;
use std::rc::Rc;

use serde_json::Value;

use crate::config::{Op, RunConfig};
use crate::mobility::Trajectory;
use crate::params::{dbm_to_mw, RadioParams};
use crate::propagation::Propagation;
use crate::rng::{Pcg32, STREAM_MAC, STREAM_PHY};
use crate::BROADCAST;
use counters::{Counters, StaCounters};
use ops::{LinkOverride, Partition};
use p2p::P2pLink;

/// TX_STATUS status codes (docs/interfaces.md section 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Acked = 0,
    Failed = 1,
    Sent = 2,
    Rejected = 3,
}

/// Ground-truth cause of a failed transmission.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cause {
    None = 0,
    OutOfRange = 1,
    Collision = 2,
    ChannelError = 3,
    Scripted = 4,
}

pub const CAUSE_NAMES: [&str; 5] = ["none", "out_of_range", "collision", "channel_error", "scripted"];

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Acked => "acked",
            Status::Failed => "failed",
            Status::Sent => "sent",
            Status::Rejected => "rejected",
        }
    }
}

/// What the core asks the driver to send to a router.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    Rx {
        to: u32,
        t: u64,
        src: u32,
        dst: u32,
        overheard: bool,
        rssi_dbm: f32,
        snr_db: f32,
        noise_dbm: f32,
        payload: Rc<[u8]>,
    },
    TxStatus {
        to: u32,
        t: u64,
        cookie: u64,
        status: Status,
        rts_attempts: u8,
        data_attempts: u8,
        cause: Cause,
        t_start: u64,
        t_end: u64,
    },
}

/// What drives the core from outside (routers, the control socket, a replayed log).
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    Hello { sta: u32, promisc: bool },
    Bye { sta: u32 },
    Tx { sta: u32, cookie: u64, dst: u32, power_dbm: Option<f64>, retry_limit: u8, no_rts: bool, payload: Rc<[u8]> },
    SetPower { sta: u32, neighbour: Option<u32>, power_dbm: Option<f64> },
    Op(Op),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Rts,
    Cts,
    Data,
    Ack,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Rts => "rts",
            Kind::Cts => "cts",
            Kind::Data => "data",
            Kind::Ack => "ack",
        }
    }
}

/// One transmission on the air.
#[derive(Debug)]
struct Tx {
    id: u64,
    src: usize,
    kind: Kind,
    /// None: broadcast.
    dst: Option<usize>,
    /// Duration/ID field (NAV), ns.
    nav: u64,
    /// MAC bytes on air (for the error models).
    bytes: u32,
    rate: u64,
    payload: Option<Rc<[u8]>>,
    mac_seq: u16,
    retry: bool,
}

#[derive(Debug)]
struct Incoming {
    tx: Rc<Tx>,
    mw: f64,
    /// Why this signal could not be locked on, if it could not.
    fail: Option<Cause>,
}

#[derive(Clone, Copy, Debug)]
struct Lock {
    tx_id: u64,
    mw: f64,
    min_sinr: f64,
}

/// The station's frame exchange state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Exch {
    Idle,
    Contend,
    Rts,
    WaitCts,
    DataSifs,
    Data,
    WaitAck,
    Bcast,
    P2p,
}

#[derive(Clone, Debug)]
struct Pending {
    cookie: u64,
    dst: Option<usize>,
    power: Option<f64>,
    retry_limit: u8,
    use_rts: bool,
    payload: Rc<[u8]>,
    offered: u64,
    first_tx: Option<u64>,
    rts_attempts: u8,
    data_attempts: u8,
    mac_seq: u16,
    p2p_status: Status,
    /// p2p: why the frame failed (a cut link or a station that is off), reported at `P2pDone`.
    p2p_cause: Cause,
}

struct Sta {
    id: u32,
    traj: Trajectory,
    on: bool,
    promisc: bool,
    default_power: f64,
    power_all: Option<f64>,
    power_nb: BTreeMap<usize, f64>,
    // PHY
    incoming: Vec<Incoming>,
    total_mw: f64,
    lock: Option<Lock>,
    tx_active: Option<u64>,
    busy: bool,
    idle_since: u64,
    nav_until: u64,
    eifs: bool,
    // MAC
    exch: Exch,
    exch_tx: Option<u64>,
    pending: Option<Pending>,
    backoff: Option<u32>,
    backoff_drawn: u64,
    backoff_sched: Option<(u64, u64)>,
    backoff_gen: u64,
    timeout_gen: u64,
    cw: u32,
    ssrc: u8,
    slrc: u8,
    mac_seq: u16,
    last_rx_seq: HashMap<usize, u16>,
    attempt_cause: Option<Cause>,
    rng_mac: Pcg32,
    rng_phy: Pcg32,
    c: StaCounters,
}

enum Ev {
    SigStart { r: usize, tx: Rc<Tx>, mw: f64 },
    SigEnd { r: usize, tx_id: u64 },
    TxEnd { s: usize, tx_id: u64 },
    Backoff { s: usize, gen: u64 },
    Timeout { s: usize, gen: u64 },
    RespondCts { s: usize, to: usize, nav: u64 },
    RespondAck { s: usize, to: usize },
    SendData { s: usize },
    NavEnd { s: usize },
    Script(Op),
    PartitionEnd { id: u64 },
    P2pArrive { r: usize, src: usize, bcast: bool, payload: Rc<[u8]> },
    P2pDone { s: usize },
}

struct Entry {
    t: u64,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.t == o.t && self.seq == o.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap, we want the earliest (time, seq) first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.t, o.seq).cmp(&(self.t, self.seq))
    }
}

/// The medium.
pub struct Medium {
    p: RadioParams,
    prop: Propagation,
    seed: u64,
    now: u64,
    seq: u64,
    heap: BinaryHeap<Entry>,
    sta: Vec<Sta>,
    index: HashMap<u32, usize>,
    next_tx_id: u64,
    noise_mw: f64,
    rx_mw: f64,
    cs_mw: f64,
    cap_lin: f64,
    floor_dbm: f64,
    links: HashMap<(usize, usize), LinkOverride>,
    partitions: Vec<Partition>,
    next_partition: u64,
    p2p: Option<HashMap<(usize, usize), P2pLink>>,
    p2p_nb: Vec<Vec<usize>>,
    saturated: HashMap<usize, (usize, u16)>,
    sat_payload: HashMap<u16, Rc<[u8]>>,
    sat_cookie: u64,
    pub outputs: Vec<Output>,
    log: Option<Box<dyn Write>>,
    c: Counters,
    /// Failed unicast frames, `TRACE_RECORD_BYTES` each (see `trace_record`).
    trace: Vec<u8>,
}

fn sorted_pair(a: usize, b: usize) -> (usize, usize) {
    if a < b {
        (a, b)
    } else {
        (b, a)
    }
}

fn fmt_opt_f64(x: Option<f64>) -> String {
    match x {
        Some(v) if v.is_finite() => format!("{v}"),
        _ => "null".into(),
    }
}

impl Medium {
    /// Build the medium of a run. `radios_on`: whether stations start with their radio on
    /// (virtual mode) or only once their router says HELLO (real-time mode).
    pub fn new(cfg: &RunConfig, radios_on: bool) -> Result<Self, String> {
        let p = cfg.radio_params()?;
        let prop = Propagation::new(&p, cfg.seed);
        let mut sta = Vec::new();
        let mut index = HashMap::new();
        let mut order: Vec<&crate::config::StationConfig> = cfg.stations.iter().collect();
        order.sort_by_key(|s| s.id);
        for (i, s) in order.iter().enumerate() {
            index.insert(s.id, i);
            sta.push(Sta {
                id: s.id,
                traj: Trajectory::from_triples(&s.trajectory).map_err(|e| format!("station {}: {e}", s.id))?,
                on: radios_on,
                promisc: false,
                default_power: s.tx_power_dbm.unwrap_or(p.tx_power_dbm),
                power_all: None,
                power_nb: BTreeMap::new(),
                incoming: Vec::new(),
                total_mw: 0.0,
                lock: None,
                tx_active: None,
                busy: false,
                idle_since: 0,
                nav_until: 0,
                eifs: false,
                exch: Exch::Idle,
                exch_tx: None,
                pending: None,
                backoff: None,
                backoff_drawn: 0,
                backoff_sched: None,
                backoff_gen: 0,
                timeout_gen: 0,
                cw: p.cw_min,
                ssrc: 0,
                slrc: 0,
                mac_seq: 0,
                last_rx_seq: HashMap::new(),
                attempt_cause: None,
                rng_mac: Pcg32::new(cfg.seed, STREAM_MAC, s.id as u64),
                rng_phy: Pcg32::new(cfg.seed, STREAM_PHY, s.id as u64),
                c: StaCounters::default(),
            });
        }
        let idx = |id: u32| index.get(&id).copied().ok_or_else(|| format!("unknown station {id}"));
        let mut links = HashMap::new();
        for l in &cfg.links {
            let k = sorted_pair(idx(l.a)?, idx(l.b)?);
            links.insert(k, LinkOverride { loss: l.loss, ber: l.ber });
        }
        let mut saturated = HashMap::new();
        for s in &cfg.saturated {
            let d = if s.dst == BROADCAST { usize::MAX } else { idx(s.dst)? };
            saturated.insert(idx(s.src)?, (d, s.len));
        }
        let n = sta.len();
        let mut m = Medium {
            noise_mw: p.noise_mw(),
            rx_mw: dbm_to_mw(p.rx_threshold_dbm),
            cs_mw: dbm_to_mw(p.cs_threshold_dbm),
            cap_lin: dbm_to_mw(p.capture_threshold_db),
            floor_dbm: p.interference_floor_dbm,
            p,
            prop,
            seed: cfg.seed,
            now: 0,
            seq: 0,
            heap: BinaryHeap::new(),
            sta,
            index,
            next_tx_id: 1,
            links,
            partitions: Vec::new(),
            next_partition: 1,
            p2p: None,
            p2p_nb: vec![Vec::new(); n],
            saturated,
            sat_payload: HashMap::new(),
            sat_cookie: 0,
            outputs: Vec::new(),
            log: None,
            c: Counters::default(),
            trace: Vec::new(),
        };
        if let Some(pc) = &cfg.p2p {
            m.setup_p2p(pc)?;
        }
        for e in &cfg.events {
            let t_s = e.get("t_s").and_then(Value::as_f64).ok_or("event needs t_s")?;
            let op = Op::parse(e)?.ok_or_else(|| format!("unsupported event op in {e}"))?;
            m.check_op(&op)?;
            m.push((t_s * 1e9).round() as u64, Ev::Script(op));
        }
        Ok(m)
    }

    fn idx(&self, id: u32) -> Result<usize, String> {
        self.index.get(&id).copied().ok_or_else(|| format!("unknown station {id}"))
    }

    /// Record every input and decision as JSON lines.
    pub fn set_event_log(&mut self, w: Box<dyn Write>, radios_on: bool) {
        self.log = Some(w);
        let line = format!("{{\"ev\":\"start\",\"seed\":{},\"radios_on\":{}}}", self.seed, radios_on);
        self.log_line(&line);
    }

    pub fn flush_log(&mut self) {
        if let Some(l) = &mut self.log {
            let _ = l.flush();
        }
    }

    fn log_line(&mut self, s: &str) {
        if let Some(l) = &mut self.log {
            let _ = writeln!(l, "{s}");
        }
    }

    fn logging(&self) -> bool {
        self.log.is_some()
    }

    pub fn params(&self) -> &RadioParams {
        &self.p
    }
    pub fn now(&self) -> u64 {
        self.now
    }
    pub fn n_stations(&self) -> usize {
        self.sta.len()
    }
    pub fn station_ids(&self) -> Vec<u32> {
        self.sta.iter().map(|s| s.id).collect()
    }
    pub fn has_station(&self, id: u32) -> bool {
        self.index.contains_key(&id)
    }
    pub fn default_power(&self, id: u32) -> f64 {
        self.index.get(&id).map(|&i| self.sta[i].default_power).unwrap_or(self.p.tx_power_dbm)
    }

    fn push(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Entry { t, seq: self.seq, ev });
    }

    /// Time of the next pending event.
    pub fn next_event_time(&self) -> Option<u64> {
        self.heap.peek().map(|e| e.t)
    }

    /// Process the next event; returns its time.
    pub fn step(&mut self) -> Option<u64> {
        let e = self.heap.pop()?;
        debug_assert!(e.t >= self.now);
        self.now = e.t;
        self.c.events += 1;
        self.handle(e.ev);
        Some(e.t)
    }

    /// Process every event with time <= t, then set the clock to t.
    pub fn run_until(&mut self, t: u64) {
        while let Some(nt) = self.next_event_time() {
            if nt > t {
                break;
            }
            self.step();
        }
        if t > self.now {
            self.now = t;
        }
    }

    /// Apply an input at time `t` (>= now): runs the events up to t first.
    pub fn input(&mut self, t: u64, inp: Input) {
        self.run_until(t);
        if self.logging() {
            let t = self.now;
            let line = match &inp {
                Input::Hello { sta, promisc } => format!("{{\"t\":{t},\"ev\":\"hello\",\"sta\":{sta},\"promisc\":{promisc}}}"),
                Input::Bye { sta } => format!("{{\"t\":{t},\"ev\":\"bye\",\"sta\":{sta}}}"),
                // The payload is not logged, but a p2p congestion window's decision depends on
                // its IPv4 ECN field (p2p.rs): logged when not zero, so a replay decides the same.
                Input::Tx { sta, cookie, dst, power_dbm, retry_limit, no_rts, payload } => format!(
                    "{{\"t\":{t},\"ev\":\"offer\",\"sta\":{sta},\"cookie\":{cookie},\"dst\":{dst},\"len\":{},\"power\":{},\"retry\":{retry_limit},\"no_rts\":{no_rts}{}}}",
                    payload.len(),
                    fmt_opt_f64(*power_dbm),
                    match p2p::ip_ecn(payload) {
                        Some(e) if e != 0 => format!(",\"ecn\":{e}"),
                        _ => String::new(),
                    }
                ),
                Input::SetPower { sta, neighbour, power_dbm } => format!(
                    "{{\"t\":{t},\"ev\":\"set_power\",\"sta\":{sta},\"nb\":{},\"power\":{}}}",
                    neighbour.map(|n| n.to_string()).unwrap_or("null".into()),
                    fmt_opt_f64(*power_dbm)
                ),
                Input::Op(op) => format!("{{\"t\":{t},\"ev\":\"op\",\"op\":{}}}", op.to_json()),
            };
            self.log_line(&line);
        }
        match inp {
            Input::Hello { sta, promisc } => {
                if let Ok(s) = self.idx(sta) {
                    self.radio_on(s, promisc);
                }
            }
            Input::Bye { sta } => {
                if let Ok(s) = self.idx(sta) {
                    self.radio_off(s);
                }
            }
            Input::Tx { sta, cookie, dst, power_dbm, retry_limit, no_rts, payload } => {
                self.offer(sta, cookie, dst, power_dbm, retry_limit, no_rts, payload)
            }
            Input::SetPower { sta, neighbour, power_dbm } => {
                if let Ok(s) = self.idx(sta) {
                    match neighbour {
                        None => {
                            self.sta[s].power_all = power_dbm;
                            self.sta[s].power_nb.clear();
                        }
                        Some(nb) => {
                            if let Ok(n) = self.idx(nb) {
                                match power_dbm {
                                    Some(p) => {
                                        self.sta[s].power_nb.insert(n, p);
                                    }
                                    None => {
                                        self.sta[s].power_nb.remove(&n);
                                    }
                                }
                            }
                        }
                    }
                }
            }
            Input::Op(op) => self.apply_op(op),
        }
    }

    fn radio_on(&mut self, s: usize, promisc: bool) {
        let now = self.now;
        let st = &mut self.sta[s];
        st.promisc = promisc;
        if st.on {
            return;
        }
        st.on = true;
        st.incoming.clear();
        st.total_mw = 0.0;
        st.lock = None;
        st.busy = false;
        st.idle_since = now;
        st.nav_until = 0;
        st.eifs = false;
        st.exch = Exch::Idle;
        st.backoff = None;
        st.backoff_sched = None;
        st.backoff_gen += 1;
        st.timeout_gen += 1;
        st.cw = self.p.cw_min;
    }

    fn radio_off(&mut self, s: usize) {
        let st = &mut self.sta[s];
        if st.pending.take().is_some() {
            st.c.dropped_on_disconnect += 1;
        }
        st.on = false;
        st.promisc = false;
        st.incoming.clear();
        st.total_mw = 0.0;
        st.lock = None;
        st.tx_active = None;
        st.busy = false;
        st.exch = Exch::Idle;
        st.exch_tx = None;
        st.backoff = None;
        st.backoff_sched = None;
        st.backoff_gen += 1;
        st.timeout_gen += 1;
    }

    /// Position of station s now.
    fn pos(&self, s: usize) -> (f64, f64) {
        self.sta[s].traj.position(self.now)
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::SigStart { r, tx, mw } => self.sig_start(r, tx, mw),
            Ev::SigEnd { r, tx_id } => self.sig_end(r, tx_id),
            Ev::TxEnd { s, tx_id } => self.tx_end(s, tx_id),
            Ev::Backoff { s, gen } => self.backoff_fired(s, gen),
            Ev::Timeout { s, gen } => self.timeout(s, gen),
            Ev::RespondCts { s, to, nav } => self.respond(s, to, Kind::Cts, nav),
            Ev::RespondAck { s, to } => self.respond(s, to, Kind::Ack, 0),
            Ev::SendData { s } => self.send_data_after_cts(s),
            Ev::NavEnd { s } => self.reevaluate(s),
            Ev::Script(op) => self.apply_op(op),
            Ev::PartitionEnd { id } => self.partitions.retain(|p| p.id != id),
            Ev::P2pArrive { r, src, bcast, payload } => self.p2p_arrive(r, src, bcast, payload),
            Ev::P2pDone { s } => self.p2p_done(s),
        }
    }

    /// Positions and velocities of every station now: (id, x, y, vx, vy, radio on).
    pub fn positions(&self) -> Vec<(u32, f64, f64, f64, f64, bool)> {
        self.sta
            .iter()
            .map(|s| {
                let (x, y) = s.traj.position(self.now);
                let (vx, vy) = s.traj.velocity(self.now);
                (s.id, x, y, vx, vy, s.on)
            })
            .collect()
    }

    pub fn position_of(&self, id: u32, t: u64) -> Option<(f64, f64)> {
        self.index.get(&id).map(|&i| self.sta[i].traj.position(t))
    }

    pub fn is_pending(&self, id: u32) -> bool {
        self.index.get(&id).map(|&i| self.sta[i].pending.is_some()).unwrap_or(false)
    }

}
