//! The medium's discrete-event core: PHY reception and 802.11 DCF for every station, in exact
//! virtual time (integer nanoseconds).
//!
//! The core is a pure state machine: inputs (`Medium::input`) and its own events advance it;
//! it never reads a clock or touches a socket. The real-time driver (`realtime.rs`) feeds it
//! frames at their wall-clock arrival times and plays its events out when the wall clock reaches
//! them; the virtual driver (`virt.rs`) and the tests run it as fast as possible. Events at the
//! same time run in insertion order (a heap of `(time, seq)`).
//!
//! PHY (per receiver, no global lock):
//! - Every transmission reaches every other station whose received power is above
//!   `interference_floor_dbm`, after the propagation delay d/c, for the frame's duration.
//! - A receiver keeps the sum of the power of every signal arriving at it. Carrier sense: the
//!   medium is busy while that sum is >= `cs_threshold_dbm`, while the station transmits, or
//!   while its NAV is set.
//! - Lock: a station that is not transmitting and not already receiving locks on a frame whose
//!   power is >= `rx_threshold_dbm` (preamble detection). It stays on it (ns-2: the first frame
//!   is kept) unless `capture_later_stronger` lets a later frame with SINR >= the capture threshold
//!   take over. The lowest SINR over the frame (signal / (noise + sum of every overlapping
//!   signal)) decides: threshold model: decodable iff SINR >= capture threshold; analytic and
//!   table models: lost with PER(SINR, rate, length). Then per-link loss and BER apply.
//! - A frame that was sensed (>= CS threshold) but not decoded sets EIFS (802.11-1999 9.2.3.4,
//!   ns-2 sets it for every errored frame).
//!
//! MAC (IEEE 802.11-1999 section 9.2, with ns-2 `mac-802_11.cc` choices where the standard
//! leaves room; differences are listed in docs/medium.md):
//! - Backoff: uniform in [0, CW], counted down in slots while the medium has been idle for DIFS
//!   (EIFS after an errored frame), frozen while busy (9.2.4); CW doubles per failure up to
//!   CWmax and resets after success or drop; a backoff is drawn after every transmission
//!   (post-backoff), and a frame arriving at an idle medium with no backoff pending goes after
//!   DIFS.
//! - RTS/CTS for unicast frames longer than `rts_threshold`, short retry limit for RTS (and for
//!   data sent without RTS), long retry limit for data after RTS/CTS (9.2.5.3); NAV from the
//!   Duration field of every decoded frame addressed to another station (9.2.5.4); a station
//!   answers an RTS only if its NAV is clear; CTS/ACK/DATA-after-CTS go SIFS after the frame
//!   without carrier sense.
//! - A missing CTS/ACK (timeout = SIFS + response + 2 max propagation delays, as ns-2) counts as
//!   an errored reception: the station then waits EIFS before resuming backoff, exactly like the
//!   stations that heard the collision, which keeps the two in step (Bianchi's T_c).
//! - Broadcast data is sent once, without RTS and ACK.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::io::Write;
use std::rc::Rc;

use serde_json::{json, Value};

use crate::config::{Op, P2pConfig, P2pProps, RunConfig};
use crate::errmodel;
use crate::mobility::{distance, Trajectory, Waypoint};
use crate::params::{dbm_to_mw, mw_to_dbm, ErrorModelKind, RadioParams};
use crate::propagation::Propagation;
use crate::rng::{Pcg32, STREAM_MAC, STREAM_P2P, STREAM_PHY};
use crate::BROADCAST;

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
}

#[derive(Clone, Debug, Default)]
struct StaCounters {
    offered: u64,
    acked: u64,
    failed: u64,
    sent: u64,
    rejected: u64,
    failed_by_cause: [u64; 5],
    airtime_ns: u64,
    rx_delivered: u64,
    rx_overheard: u64,
    rx_duplicates: u64,
    dropped_on_disconnect: u64,
    payload_bytes_acked: u64,
    responses_suppressed: u64,
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

struct Partition {
    id: u64,
    a: Vec<bool>,
    b: Vec<bool>,
}

#[derive(Clone, Copy, Debug, Default)]
struct LinkOverride {
    loss: Option<f64>,
    ber: Option<f64>,
}

struct P2pLink {
    props: P2pProps,
    busy_until: u64,
    rng: Pcg32,
}

/// Global counters of the core (the driver adds its own).
#[derive(Clone, Debug, Default)]
struct Counters {
    events: u64,
    receptions_evaluated: u64,
    transmissions: u64,
    rts_hist: BTreeMap<u8, u64>,
    data_hist: BTreeMap<u8, u64>,
    /// Frames addressed to a receiver (unicast to it, or broadcast data within its decoding
    /// range), by kind and outcome.
    rx_outcome: BTreeMap<(&'static str, &'static str), u64>,
    p2p_lost: u64,
    p2p_delivered: u64,
    /// Airtime of every transmission (all stations), summed per `AIRTIME_BIN_NS` bin of the
    /// transmission's start: the channel's busy share over time (timeline).
    airtime_bins: Vec<u64>,
}

/// Width of the airtime bins of `counters.json`'s `airtime_series`.
pub const AIRTIME_BIN_NS: u64 = 500_000_000;

/// Bytes of one failed-frame record of the trace (`trace_bytes`, docs/medium.md "Trace").
pub const TRACE_RECORD_BYTES: usize = 32;
/// First bytes of `medium/trace.bin`.
pub const TRACE_MAGIC: &[u8; 8] = b"MTMTRC01";

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

    fn setup_p2p(&mut self, pc: &P2pConfig) -> Result<(), String> {
        let mut links = HashMap::new();
        let add = |m: &Self, a: u32, b: u32, props: &P2pProps, links: &mut HashMap<(usize, usize), P2pLink>| -> Result<(), String> {
            if !(props.rate_bps > 0.0) || props.delay_ms[0] > props.delay_ms[1] || props.delay_ms[0] < 0.0 {
                return Err(format!("p2p link {a}-{b}: need rate_bps > 0 and 0 <= delay_ms[0] <= delay_ms[1]"));
            }
            let (ia, ib) = (m.idx(a)?, m.idx(b)?);
            for (x, y) in [(ia, ib), (ib, ia)] {
                let rng = Pcg32::new(m.seed, STREAM_P2P, ((m.sta[x].id as u64) << 32) | m.sta[y].id as u64);
                links.insert((x, y), P2pLink { props: props.clone(), busy_until: 0, rng });
            }
            Ok(())
        };
        for l in &pc.links {
            add(self, l.a, l.b, &l.props, &mut links)?;
        }
        if !pc.chain.is_empty() {
            let props = pc.chain_props.as_ref().ok_or("p2p.chain needs chain_props")?;
            for w in pc.chain.windows(2) {
                add(self, w[0], w[1], props, &mut links)?;
            }
        }
        let mut nb = vec![Vec::new(); self.sta.len()];
        for &(a, b) in links.keys() {
            nb[a].push(b);
        }
        for v in &mut nb {
            v.sort();
        }
        self.p2p_nb = nb;
        self.p2p = Some(links);
        Ok(())
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
                Input::Tx { sta, cookie, dst, power_dbm, retry_limit, no_rts, payload } => format!(
                    "{{\"t\":{t},\"ev\":\"offer\",\"sta\":{sta},\"cookie\":{cookie},\"dst\":{dst},\"len\":{},\"power\":{},\"retry\":{retry_limit},\"no_rts\":{no_rts}}}",
                    payload.len(),
                    fmt_opt_f64(*power_dbm)
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

    /// Check that a scripted op names known stations.
    pub fn check_op(&self, op: &Op) -> Result<(), String> {
        match op {
            Op::Move { station, .. } => self.idx(*station).map(|_| ()),
            Op::SetLink { a, b, .. } => self.idx(*a).and(self.idx(*b)).map(|_| ()),
            Op::Partition { a, b, .. } => {
                for x in a.iter().chain(b.iter()) {
                    self.idx(*x)?;
                }
                Ok(())
            }
        }
    }

    /// Start the saturated sources (virtual mode).
    pub fn start_saturated(&mut self) {
        let mut srcs: Vec<usize> = self.saturated.keys().copied().collect();
        srcs.sort();
        for s in srcs {
            self.offer_saturated(s);
        }
    }

    fn offer_saturated(&mut self, s: usize) {
        let (d, len) = match self.saturated.get(&s) {
            Some(&v) => v,
            None => return,
        };
        let payload = self.sat_payload.entry(len).or_insert_with(|| vec![0u8; len as usize].into()).clone();
        self.sat_cookie += 1;
        let dst = if d == usize::MAX { BROADCAST } else { self.sta[d].id };
        let id = self.sta[s].id;
        self.offer(id, self.sat_cookie, dst, None, 0, false, payload);
    }

    // ------------------------------------------------------------------ stations on/off

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

    // ------------------------------------------------------------------ offered frames

    #[allow(clippy::too_many_arguments)]
    fn offer(&mut self, sta: u32, cookie: u64, dst: u32, power: Option<f64>, retry_limit: u8, no_rts: bool, payload: Rc<[u8]>) {
        let now = self.now;
        let reject = |m: &mut Self, to: u32| {
            m.outputs.push(Output::TxStatus {
                to,
                t: now,
                cookie,
                status: Status::Rejected,
                rts_attempts: 0,
                data_attempts: 0,
                cause: Cause::None,
                t_start: now,
                t_end: now,
            });
            if let Some(&i) = m.index.get(&to) {
                m.sta[i].c.rejected += 1;
            }
        };
        let s = match self.idx(sta) {
            Ok(s) => s,
            Err(_) => return,
        };
        let dsti = if dst == BROADCAST {
            None
        } else {
            match self.index.get(&dst) {
                Some(&d) if d != s => Some(d),
                _ => return reject(self, sta),
            }
        };
        if !self.sta[s].on || self.sta[s].pending.is_some() || payload.len() > crate::MAX_PAYLOAD {
            return reject(self, sta);
        }
        let use_rts = dsti.is_some() && !no_rts && self.p.uses_rts(payload.len() as u32);
        let st = &mut self.sta[s];
        st.c.offered += 1;
        st.mac_seq = st.mac_seq.wrapping_add(1) & 0x0FFF;
        st.pending = Some(Pending {
            cookie,
            dst: dsti,
            power: power.filter(|p| p.is_finite()),
            retry_limit,
            use_rts,
            payload,
            offered: now,
            first_tx: None,
            rts_attempts: 0,
            data_attempts: 0,
            mac_seq: st.mac_seq,
            p2p_status: Status::Acked,
        });
        st.exch = Exch::Contend;
        if self.p2p.is_some() {
            return self.p2p_send(s);
        }
        let ifs = self.ifs(s);
        let st = &mut self.sta[s];
        if st.backoff.is_some() {
            self.schedule_backoff(s);
        } else if !st.busy {
            if now >= st.idle_since + ifs {
                self.start_attempt(s);
            } else {
                st.backoff = Some(0);
                st.backoff_drawn = now;
                self.schedule_backoff(s);
            }
        } else {
            self.draw_backoff(s);
        }
    }

    // ------------------------------------------------------------------ backoff

    fn ifs(&self, s: usize) -> u64 {
        if self.sta[s].eifs {
            self.p.eifs_ns()
        } else {
            self.p.difs_ns()
        }
    }

    fn draw_backoff(&mut self, s: usize) {
        let now = self.now;
        let st = &mut self.sta[s];
        let slots = st.rng_mac.uniform_incl(st.cw);
        st.backoff = Some(slots);
        st.backoff_drawn = now;
        st.backoff_sched = None;
        if self.log.is_some() {
            let line = format!("{{\"t\":{now},\"ev\":\"backoff\",\"sta\":{},\"slots\":{slots},\"cw\":{}}}", st.id, st.cw);
            self.log_line(&line);
        }
        self.schedule_backoff(s);
    }

    fn schedule_backoff(&mut self, s: usize) {
        let ifs = self.ifs(s);
        let slot = self.p.slot_ns;
        let st = &mut self.sta[s];
        if st.busy || !st.on || st.backoff_sched.is_some() {
            return;
        }
        let slots = match st.backoff {
            Some(slots) => slots,
            None => return,
        };
        let count_start = (st.idle_since + ifs).max(st.backoff_drawn);
        let fire = count_start + slots as u64 * slot;
        st.backoff_gen += 1;
        st.backoff_sched = Some((count_start, fire));
        let gen = st.backoff_gen;
        self.push(fire, Ev::Backoff { s, gen });
    }

    fn freeze_backoff(&mut self, s: usize) {
        let now = self.now;
        let slot = self.p.slot_ns;
        let st = &mut self.sta[s];
        if let Some((cs, fire)) = st.backoff_sched {
            if now >= fire {
                return; // decided at this instant: the transmission goes ahead
            }
            st.backoff_gen += 1;
            let elapsed = if now > cs { ((now - cs) / slot) as u32 } else { 0 };
            st.backoff = Some(st.backoff.unwrap_or(0).saturating_sub(elapsed));
            st.backoff_sched = None;
        }
    }

    /// Re-evaluate carrier sense (physical + virtual) of station s.
    fn reevaluate(&mut self, s: usize) {
        let now = self.now;
        let st = &self.sta[s];
        let busy = st.on && (st.tx_active.is_some() || st.total_mw >= self.cs_mw || st.nav_until > now);
        if busy && !st.busy {
            self.sta[s].busy = true;
            self.freeze_backoff(s);
        } else if !busy && st.busy {
            let st = &mut self.sta[s];
            st.busy = false;
            st.idle_since = now;
            self.schedule_backoff(s);
        }
    }

    fn set_nav(&mut self, s: usize, until: u64) {
        if until > self.sta[s].nav_until {
            self.sta[s].nav_until = until;
            self.push(until, Ev::NavEnd { s });
            self.reevaluate(s);
        }
    }

    // ------------------------------------------------------------------ transmissions

    fn power_to(&self, s: usize, dst: Option<usize>, explicit: Option<f64>) -> f64 {
        let st = &self.sta[s];
        if let Some(p) = explicit {
            return p;
        }
        if let Some(d) = dst {
            if let Some(&p) = st.power_nb.get(&d) {
                return p;
            }
        }
        st.power_all.unwrap_or(st.default_power)
    }

    fn link_cut(&self, a: usize, b: usize) -> bool {
        self.partitions.iter().any(|p| (p.a[a] && p.b[b]) || (p.b[a] && p.a[b]))
    }

    /// Position of station s now.
    fn pos(&self, s: usize) -> (f64, f64) {
        self.sta[s].traj.position(self.now)
    }

    /// The exchange a frame belongs to: RTS and DATA belong to their sender, CTS and ACK to
    /// their receiver.
    fn note_fail(&mut self, tx: &Tx, cause: Cause) {
        let owner = match tx.kind {
            Kind::Rts | Kind::Data => Some(tx.src),
            Kind::Cts | Kind::Ack => tx.dst,
        };
        if let Some(o) = owner {
            let st = &mut self.sta[o];
            if st.attempt_cause.is_none() {
                st.attempt_cause = Some(cause);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn transmit(&mut self, s: usize, kind: Kind, dst: Option<usize>, bytes: u32, rate: u64, nav: u64, power_dbm: f64, payload: Option<Rc<[u8]>>, mac_seq: u16, retry: bool) -> u64 {
        let now = self.now;
        let dur = self.p.frame_ns(bytes, rate);
        let id = self.next_tx_id;
        self.next_tx_id += 1;
        self.c.transmissions += 1;
        let tx = Rc::new(Tx { id, src: s, kind, dst, nav, bytes, rate, payload, mac_seq, retry });
        {
            let st = &mut self.sta[s];
            st.tx_active = Some(id);
            st.c.airtime_ns += dur;
            let bin = (now / AIRTIME_BIN_NS) as usize;
            if self.c.airtime_bins.len() <= bin {
                self.c.airtime_bins.resize(bin + 1, 0);
            }
            self.c.airtime_bins[bin] += dur;
            if let Some(l) = st.lock.take() {
                // Transmitting destroys the frame being received.
                if let Some(inc) = st.incoming.iter_mut().find(|i| i.tx.id == l.tx_id) {
                    inc.fail = Some(Cause::Collision);
                }
            }
        }
        self.reevaluate(s);
        if self.logging() {
            let line = format!(
                "{{\"t\":{now},\"ev\":\"tx\",\"sta\":{},\"kind\":\"{}\",\"dst\":{},\"dur\":{dur},\"dbm\":{:.3}}}",
                self.sta[s].id,
                kind.name(),
                dst.map(|d| self.sta[d].id).unwrap_or(BROADCAST),
                power_dbm
            );
            self.log_line(&line);
        }
        let ps = self.pos(s);
        let c = self.p.speed_of_light_mps;
        let mut dst_reached = false;
        for r in 0..self.sta.len() {
            if r == s || !self.sta[r].on {
                continue;
            }
            if !self.partitions.is_empty() && self.link_cut(s, r) {
                if dst == Some(r) {
                    self.note_fail(&tx, Cause::Scripted);
                    dst_reached = true;
                }
                continue;
            }
            let d = distance(ps, self.pos(r));
            let dbm = self.prop.rx_dbm(power_dbm, d, s, r, now);
            if dbm < self.floor_dbm {
                continue;
            }
            if dst == Some(r) {
                dst_reached = true;
            }
            let delay = (d / c * 1e9).round() as u64;
            self.push(now + delay, Ev::SigStart { r, tx: tx.clone(), mw: dbm_to_mw(dbm) });
            self.push(now + delay + dur, Ev::SigEnd { r, tx_id: id });
        }
        if dst.is_some() && !dst_reached {
            self.note_fail(&tx, Cause::OutOfRange);
        }
        self.push(now + dur, Ev::TxEnd { s, tx_id: id });
        id
    }

    fn start_attempt(&mut self, s: usize) {
        let now = self.now;
        let p = &self.p;
        let (dst, use_rts, len, power) = {
            let pd = self.sta[s].pending.as_ref().expect("attempt without a frame");
            (pd.dst, pd.use_rts, pd.payload.len() as u32, pd.power)
        };
        let nav_rts = 3 * p.sifs_ns + p.cts_ns() + p.data_ns(len) + p.ack_ns();
        let bcast_rate = p.bcast_rate();
        let rts_bytes = p.rts_bytes;
        let basic = p.basic_rate_bps;
        let overhead = p.mac_overhead_bytes;
        let power_dbm = self.power_to(s, dst, power);
        let st = &mut self.sta[s];
        st.attempt_cause = None;
        let pd = st.pending.as_mut().unwrap();
        pd.first_tx.get_or_insert(now);
        match dst {
            None => {
                pd.data_attempts += 1;
                let payload = pd.payload.clone();
                let seq = pd.mac_seq;
                st.exch = Exch::Bcast;
                let id = self.transmit(s, Kind::Data, None, len + overhead, bcast_rate, 0, power_dbm, Some(payload), seq, false);
                self.sta[s].exch_tx = Some(id);
            }
            Some(d) if use_rts => {
                pd.rts_attempts = pd.rts_attempts.saturating_add(1);
                st.exch = Exch::Rts;
                let id = self.transmit(s, Kind::Rts, Some(d), rts_bytes, basic, nav_rts, power_dbm, None, 0, false);
                self.sta[s].exch_tx = Some(id);
            }
            Some(_) => self.start_data(s),
        }
    }

    fn start_data(&mut self, s: usize) {
        let now = self.now;
        let nav = self.p.sifs_ns + self.p.ack_ns();
        let rate = self.p.data_rate_bps;
        let overhead = self.p.mac_overhead_bytes;
        let (dst, power) = {
            let pd = self.sta[s].pending.as_ref().expect("data without a frame");
            (pd.dst, pd.power)
        };
        let power_dbm = self.power_to(s, dst, power);
        let st = &mut self.sta[s];
        st.attempt_cause = None;
        let pd = st.pending.as_mut().unwrap();
        pd.first_tx.get_or_insert(now);
        pd.data_attempts = pd.data_attempts.saturating_add(1);
        let retry = pd.data_attempts > 1;
        let (payload, seq, len) = (pd.payload.clone(), pd.mac_seq, pd.payload.len() as u32);
        st.exch = Exch::Data;
        let id = self.transmit(s, Kind::Data, dst, len + overhead, rate, nav, power_dbm, Some(payload), seq, retry);
        self.sta[s].exch_tx = Some(id);
    }

    /// Finish the current frame: TX_STATUS to the router, reset CW, post-backoff.
    fn complete(&mut self, s: usize, status: Status, cause: Cause) {
        let now = self.now;
        let st = &mut self.sta[s];
        let pd = match st.pending.take() {
            Some(pd) => pd,
            None => return,
        };
        st.exch = Exch::Idle;
        st.exch_tx = None;
        st.cw = self.p.cw_min;
        st.ssrc = 0;
        st.slrc = 0;
        st.timeout_gen += 1;
        match status {
            Status::Acked => {
                st.c.acked += 1;
                st.c.payload_bytes_acked += pd.payload.len() as u64;
            }
            Status::Failed => {
                st.c.failed += 1;
                st.c.failed_by_cause[cause as usize] += 1;
            }
            Status::Sent => st.c.sent += 1,
            Status::Rejected => st.c.rejected += 1,
        }
        if status == Status::Failed {
            if let Some(d) = pd.dst {
                let dist = distance(self.pos(s), self.pos(d));
                let (id, did) = (self.sta[s].id, self.sta[d].id);
                trace_record(&mut self.trace, now, id, did, cause, pd.rts_attempts, pd.data_attempts, dist, &pd.payload);
            }
        }
        let st = &mut self.sta[s];
        if pd.dst.is_some() && self.p2p.is_none() {
            *self.c.rts_hist.entry(pd.rts_attempts).or_default() += 1;
            *self.c.data_hist.entry(pd.data_attempts).or_default() += 1;
        }
        let id = st.id;
        self.outputs.push(Output::TxStatus {
            to: id,
            t: now,
            cookie: pd.cookie,
            status,
            rts_attempts: pd.rts_attempts,
            data_attempts: pd.data_attempts,
            cause,
            t_start: pd.first_tx.unwrap_or(pd.offered),
            t_end: now,
        });
        if self.logging() {
            let line = format!(
                "{{\"t\":{now},\"ev\":\"status\",\"sta\":{id},\"cookie\":{},\"status\":\"{}\",\"rts\":{},\"data\":{},\"cause\":\"{}\"}}",
                pd.cookie,
                status.name(),
                pd.rts_attempts,
                pd.data_attempts,
                CAUSE_NAMES[cause as usize]
            );
            self.log_line(&line);
        }
        if self.p2p.is_none() {
            self.draw_backoff(s);
        }
        if self.saturated.contains_key(&s) {
            self.offer_saturated(s);
        }
    }

    fn retry(&mut self, s: usize) {
        let st = &mut self.sta[s];
        st.cw = (2 * st.cw + 1).min(self.p.cw_max);
        st.exch = Exch::Contend;
        st.exch_tx = None;
        self.draw_backoff(s);
    }

    // ------------------------------------------------------------------ event handlers

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::SigStart { r, tx, mw } => self.sig_start(r, tx, mw),
            Ev::SigEnd { r, tx_id } => self.sig_end(r, tx_id),
            Ev::TxEnd { s, tx_id } => self.tx_end(s, tx_id),
            Ev::Backoff { s, gen } => {
                let st = &mut self.sta[s];
                if gen != st.backoff_gen || !st.on {
                    return;
                }
                st.backoff = None;
                st.backoff_sched = None;
                if st.exch == Exch::Contend && st.pending.is_some() {
                    self.start_attempt(s);
                }
            }
            Ev::Timeout { s, gen } => self.timeout(s, gen),
            Ev::RespondCts { s, to, nav } => {
                if !self.sta[s].on || self.sta[s].tx_active.is_some() {
                    self.sta[s].c.responses_suppressed += 1;
                    return;
                }
                let power = self.power_to(s, Some(to), None);
                let (b, r) = (self.p.cts_bytes, self.p.basic_rate_bps);
                self.transmit(s, Kind::Cts, Some(to), b, r, nav, power, None, 0, false);
            }
            Ev::RespondAck { s, to } => {
                if !self.sta[s].on || self.sta[s].tx_active.is_some() {
                    self.sta[s].c.responses_suppressed += 1;
                    return;
                }
                let power = self.power_to(s, Some(to), None);
                let (b, r) = (self.p.ack_bytes, self.p.basic_rate_bps);
                self.transmit(s, Kind::Ack, Some(to), b, r, 0, power, None, 0, false);
            }
            Ev::SendData { s } => {
                if self.sta[s].exch == Exch::DataSifs && self.sta[s].on && self.sta[s].tx_active.is_none() {
                    self.start_data(s);
                }
            }
            Ev::NavEnd { s } => self.reevaluate(s),
            Ev::Script(op) => self.apply_op(op),
            Ev::PartitionEnd { id } => self.partitions.retain(|p| p.id != id),
            Ev::P2pArrive { r, src, bcast, payload } => {
                if !self.sta[r].on {
                    self.c.p2p_lost += 1;
                    return;
                }
                self.c.p2p_delivered += 1;
                self.sta[r].c.rx_delivered += 1;
                let (to, srcid) = (self.sta[r].id, self.sta[src].id);
                self.outputs.push(Output::Rx {
                    to,
                    t: self.now,
                    src: srcid,
                    dst: if bcast { BROADCAST } else { to },
                    overheard: false,
                    rssi_dbm: f32::NAN,
                    snr_db: f32::NAN,
                    noise_dbm: f32::NAN,
                    payload,
                });
            }
            Ev::P2pDone { s } => {
                if self.sta[s].exch == Exch::P2p {
                    let st = self.sta[s].pending.as_ref().map(|p| p.p2p_status).unwrap_or(Status::Sent);
                    self.complete(s, st, Cause::None);
                }
            }
        }
    }

    fn sig_start(&mut self, r: usize, tx: Rc<Tx>, mw: f64) {
        let noise = self.noise_mw;
        let (rx_mw, cap) = (self.rx_mw, self.cap_lin);
        let later = self.p.capture_later_stronger;
        let st = &mut self.sta[r];
        if !st.on {
            return;
        }
        st.total_mw += mw;
        let total = st.total_mw;
        let mut fail = None;
        if let Some(lock) = st.lock.as_mut() {
            let sinr = lock.mw / (noise + (total - lock.mw).max(0.0));
            if sinr < lock.min_sinr {
                lock.min_sinr = sinr;
            }
            let new_sinr = mw / (noise + (total - mw).max(0.0));
            if later && mw >= rx_mw && new_sinr >= cap {
                let old = lock.tx_id;
                if let Some(inc) = st.incoming.iter_mut().find(|i| i.tx.id == old) {
                    inc.fail = Some(Cause::Collision);
                }
                st.lock = Some(Lock { tx_id: tx.id, mw, min_sinr: new_sinr });
            } else {
                fail = Some(if mw >= rx_mw { Cause::Collision } else { Cause::OutOfRange });
            }
        } else if st.tx_active.is_some() {
            fail = Some(Cause::Collision);
        } else if mw >= rx_mw {
            st.lock = Some(Lock { tx_id: tx.id, mw, min_sinr: mw / (noise + (total - mw).max(0.0)) });
        } else {
            fail = Some(Cause::OutOfRange);
        }
        st.incoming.push(Incoming { tx, mw, fail });
        self.reevaluate(r);
    }

    fn sig_end(&mut self, r: usize, tx_id: u64) {
        let cs = self.cs_mw;
        let st = &mut self.sta[r];
        let i = match st.incoming.iter().position(|x| x.tx.id == tx_id) {
            Some(i) => i,
            None => return,
        };
        let inc = st.incoming.remove(i);
        st.total_mw = st.incoming.iter().map(|x| x.mw).sum();
        self.c.receptions_evaluated += 1;
        let tx = inc.tx.clone();
        let addressed = tx.dst == Some(r) || (tx.dst.is_none() && tx.kind == Kind::Data);
        let locked = st.lock.map(|l| l.tx_id == tx_id).unwrap_or(false);
        if locked {
            let lock = st.lock.take().unwrap();
            match self.decide(r, &tx, lock) {
                Ok(()) => {
                    self.sta[r].eifs = false;
                    if addressed {
                        *self.c.rx_outcome.entry((tx.kind.name(), "ok")).or_default() += 1;
                    }
                    let snr_db = mw_to_dbm(lock.mw) - self.p.noise_floor_dbm;
                    self.on_frame(r, &tx, mw_to_dbm(lock.mw), snr_db);
                }
                Err(cause) => {
                    self.sta[r].eifs = true;
                    if addressed {
                        *self.c.rx_outcome.entry((tx.kind.name(), CAUSE_NAMES[cause as usize])).or_default() += 1;
                        self.note_fail(&tx, cause);
                    }
                    self.log_rx(r, &tx, CAUSE_NAMES[cause as usize]);
                }
            }
        } else {
            if inc.mw >= cs {
                self.sta[r].eifs = true;
            }
            if addressed {
                let cause = inc.fail.unwrap_or(Cause::Collision);
                // Broadcasts below the decoding range are not "addressed" to this receiver.
                if tx.dst.is_some() || inc.mw >= self.rx_mw {
                    *self.c.rx_outcome.entry((tx.kind.name(), CAUSE_NAMES[cause as usize])).or_default() += 1;
                }
                self.note_fail(&tx, cause);
                if tx.dst.is_some() {
                    self.log_rx(r, &tx, CAUSE_NAMES[cause as usize]);
                }
            }
        }
        self.reevaluate(r);
    }

    fn log_rx(&mut self, r: usize, tx: &Tx, outcome: &str) {
        if self.logging() {
            let line = format!(
                "{{\"t\":{},\"ev\":\"rx\",\"sta\":{},\"from\":{},\"kind\":\"{}\",\"outcome\":\"{outcome}\"}}",
                self.now,
                self.sta[r].id,
                self.sta[tx.src].id,
                tx.kind.name()
            );
            self.log_line(&line);
        }
    }

    /// Decide whether a locked frame is decoded: error model on the lowest SINR seen over the
    /// frame, then per-link loss and BER.
    fn decide(&mut self, r: usize, tx: &Tx, lock: Lock) -> Result<(), Cause> {
        if lock.mw < self.rx_mw {
            return Err(Cause::OutOfRange);
        }
        let snr_db = mw_to_dbm(lock.mw / self.noise_mw);
        let sinr_db = mw_to_dbm(lock.min_sinr);
        match self.p.error_model {
            ErrorModelKind::Threshold => {
                if sinr_db < self.p.capture_threshold_db {
                    return Err(if snr_db >= self.p.capture_threshold_db { Cause::Collision } else { Cause::ChannelError });
                }
            }
            _ => {
                let per_snr = errmodel::per(&self.p, snr_db, tx.rate, tx.bytes);
                let per_sinr = errmodel::per(&self.p, sinr_db, tx.rate, tx.bytes);
                if per_sinr > 0.0 {
                    let u = self.sta[r].rng_phy.unit();
                    if u < per_snr {
                        return Err(Cause::ChannelError);
                    }
                    if u < per_sinr {
                        return Err(Cause::Collision);
                    }
                }
            }
        }
        if !self.links.is_empty() {
            if let Some(lo) = self.links.get(&sorted_pair(tx.src, r)).copied() {
                if let Some(loss) = lo.loss {
                    if loss >= 1.0 {
                        return Err(Cause::Scripted);
                    }
                    if loss > 0.0 && self.sta[r].rng_phy.unit() < loss {
                        return Err(Cause::ChannelError);
                    }
                }
                if let Some(ber) = lo.ber {
                    let per = errmodel::ber_per(ber, tx.bytes);
                    if per > 0.0 && self.sta[r].rng_phy.unit() < per {
                        return Err(Cause::ChannelError);
                    }
                }
            }
        }
        Ok(())
    }

    /// A frame decoded by station r.
    fn on_frame(&mut self, r: usize, tx: &Tx, rssi_dbm: f64, snr_db: f64) {
        let now = self.now;
        let sifs = self.p.sifs_ns;
        match tx.kind {
            Kind::Rts => {
                if tx.dst == Some(r) {
                    let st = &self.sta[r];
                    if st.nav_until <= now && st.tx_active.is_none() && matches!(st.exch, Exch::Idle | Exch::Contend) {
                        let nav = tx.nav.saturating_sub(sifs + self.p.cts_ns());
                        self.push(now + sifs, Ev::RespondCts { s: r, to: tx.src, nav });
                        self.log_rx(r, tx, "ok");
                    } else {
                        self.note_fail(tx, Cause::Collision);
                        self.sta[r].c.responses_suppressed += 1;
                        self.log_rx(r, tx, "nav_busy");
                    }
                } else {
                    self.set_nav(r, now + tx.nav);
                }
            }
            Kind::Cts => {
                if tx.dst == Some(r) {
                    let st = &mut self.sta[r];
                    let expected = st.pending.as_ref().map(|p| p.dst == Some(tx.src)).unwrap_or(false);
                    if st.exch == Exch::WaitCts && expected {
                        st.timeout_gen += 1;
                        st.ssrc = 0;
                        st.exch = Exch::DataSifs;
                        self.push(now + sifs, Ev::SendData { s: r });
                    }
                    self.log_rx(r, tx, "ok");
                } else {
                    self.set_nav(r, now + tx.nav);
                }
            }
            Kind::Ack => {
                if tx.dst == Some(r) {
                    self.log_rx(r, tx, "ok");
                    let st = &self.sta[r];
                    let expected = st.pending.as_ref().map(|p| p.dst == Some(tx.src)).unwrap_or(false);
                    if st.exch == Exch::WaitAck && expected {
                        self.complete(r, Status::Acked, Cause::None);
                    }
                } else {
                    self.set_nav(r, now + tx.nav);
                }
            }
            Kind::Data => {
                let payload = tx.payload.clone().unwrap_or_else(|| Rc::from(Vec::new()));
                let noise = self.p.noise_floor_dbm as f32;
                let (src_id, me) = (self.sta[tx.src].id, self.sta[r].id);
                match tx.dst {
                    None => {
                        self.sta[r].c.rx_delivered += 1;
                        self.outputs.push(Output::Rx {
                            to: me,
                            t: now,
                            src: src_id,
                            dst: BROADCAST,
                            overheard: false,
                            rssi_dbm: rssi_dbm as f32,
                            snr_db: snr_db as f32,
                            noise_dbm: noise,
                            payload,
                        });
                    }
                    Some(d) if d == r => {
                        self.push(now + sifs, Ev::RespondAck { s: r, to: tx.src });
                        self.log_rx(r, tx, "ok");
                        let st = &mut self.sta[r];
                        let dup = tx.retry && st.last_rx_seq.get(&tx.src) == Some(&tx.mac_seq);
                        st.last_rx_seq.insert(tx.src, tx.mac_seq);
                        if dup {
                            st.c.rx_duplicates += 1;
                        } else {
                            st.c.rx_delivered += 1;
                            self.outputs.push(Output::Rx {
                                to: me,
                                t: now,
                                src: src_id,
                                dst: me,
                                overheard: false,
                                rssi_dbm: rssi_dbm as f32,
                                snr_db: snr_db as f32,
                                noise_dbm: noise,
                                payload,
                            });
                        }
                    }
                    Some(d) => {
                        self.set_nav(r, now + tx.nav);
                        if self.sta[r].promisc {
                            self.sta[r].c.rx_overheard += 1;
                            let dst_id = self.sta[d].id;
                            self.outputs.push(Output::Rx {
                                to: me,
                                t: now,
                                src: src_id,
                                dst: dst_id,
                                overheard: true,
                                rssi_dbm: rssi_dbm as f32,
                                snr_db: snr_db as f32,
                                noise_dbm: noise,
                                payload,
                            });
                        }
                    }
                }
            }
        }
    }

    fn tx_end(&mut self, s: usize, tx_id: u64) {
        let now = self.now;
        let st = &mut self.sta[s];
        if st.tx_active != Some(tx_id) {
            return;
        }
        st.tx_active = None;
        if st.exch_tx == Some(tx_id) {
            match st.exch {
                Exch::Rts => {
                    st.exch = Exch::WaitCts;
                    st.timeout_gen += 1;
                    let gen = st.timeout_gen;
                    let t = now + self.p.cts_timeout_ns();
                    self.push(t, Ev::Timeout { s, gen });
                }
                Exch::Data => {
                    st.exch = Exch::WaitAck;
                    st.timeout_gen += 1;
                    let gen = st.timeout_gen;
                    let t = now + self.p.ack_timeout_ns();
                    self.push(t, Ev::Timeout { s, gen });
                }
                Exch::Bcast => self.complete(s, Status::Sent, Cause::None),
                _ => {}
            }
        }
        self.reevaluate(s);
    }

    fn timeout(&mut self, s: usize, gen: u64) {
        let st = &mut self.sta[s];
        if gen != st.timeout_gen || !st.on {
            return;
        }
        // A missing response is an errored reception: resume after EIFS (see module doc).
        st.eifs = true;
        let cause = st.attempt_cause.take().unwrap_or(Cause::Collision);
        let pd = match st.pending.as_ref() {
            Some(pd) => pd,
            None => return,
        };
        let (count, limit) = match st.exch {
            Exch::WaitCts => {
                st.ssrc += 1;
                (st.ssrc, self.p.short_retry_limit)
            }
            Exch::WaitAck => {
                let over = if pd.retry_limit > 0 { Some(pd.retry_limit) } else { None };
                if pd.use_rts {
                    st.slrc += 1;
                    (st.slrc, over.unwrap_or(self.p.long_retry_limit))
                } else {
                    st.ssrc += 1;
                    (st.ssrc, over.unwrap_or(self.p.short_retry_limit))
                }
            }
            _ => return,
        };
        if self.logging() {
            let line = format!(
                "{{\"t\":{},\"ev\":\"timeout\",\"sta\":{},\"count\":{count},\"cause\":\"{}\"}}",
                self.now,
                self.sta[s].id,
                CAUSE_NAMES[cause as usize]
            );
            self.log_line(&line);
        }
        if count >= limit {
            self.complete(s, Status::Failed, cause);
        } else {
            self.retry(s);
        }
    }

    // ------------------------------------------------------------------ point-to-point mode

    fn p2p_send(&mut self, s: usize) {
        let now = self.now;
        let (dst, len, payload) = {
            let pd = self.sta[s].pending.as_ref().unwrap();
            (pd.dst, pd.payload.len() as u32, pd.payload.clone())
        };
        self.sta[s].exch = Exch::P2p;
        let targets: Vec<usize> = match dst {
            Some(d) => vec![d],
            None => self.p2p_nb[s].clone(),
        };
        let mut done = now;
        let mut failed = None;
        if let Some(d) = dst {
            if !self.p2p.as_ref().unwrap().contains_key(&(s, d)) {
                failed = Some(Cause::OutOfRange);
            } else if self.link_cut(s, d) || !self.sta[d].on {
                failed = Some(if self.sta[d].on { Cause::Scripted } else { Cause::OutOfRange });
            }
        }
        if let Some(c) = failed {
            let pd = self.sta[s].pending.as_mut().unwrap();
            pd.data_attempts = 1;
            pd.first_tx = Some(now);
            return self.complete(s, Status::Failed, c);
        }
        for d in targets {
            if self.link_cut(s, d) {
                continue;
            }
            let links = self.p2p.as_mut().unwrap();
            let l = links.get_mut(&(s, d)).unwrap();
            let start = now.max(l.busy_until);
            let bits = (len + l.props.overhead_bytes) as f64 * 8.0;
            let end = start + (bits / l.props.rate_bps * 1e9).round() as u64;
            l.busy_until = end;
            done = done.max(end);
            let per = errmodel::ber_per(l.props.ber, len + l.props.overhead_bytes);
            let lost = (l.props.loss > 0.0 && l.rng.unit() < l.props.loss) || (per > 0.0 && l.rng.unit() < per);
            let [dmin, dmax] = l.props.delay_ms;
            let mut delay_ms = dmin + (dmax - dmin) * l.rng.unit();
            if l.props.reorder_prob > 0.0 && l.rng.unit() < l.props.reorder_prob {
                delay_ms += l.props.reorder_delay_ms;
            }
            let arrive = end + (delay_ms * 1e6).round() as u64;
            if lost {
                self.c.p2p_lost += 1;
            } else {
                self.push(arrive, Ev::P2pArrive { r: d, src: s, bcast: dst.is_none(), payload: payload.clone() });
            }
        }
        let st = &mut self.sta[s];
        st.c.airtime_ns += done - now;
        let pd = st.pending.as_mut().unwrap();
        pd.data_attempts = 1;
        pd.first_tx = Some(now);
        pd.p2p_status = if dst.is_some() { Status::Acked } else { Status::Sent };
        self.push(done, Ev::P2pDone { s });
    }

    // ------------------------------------------------------------------ scripted ops

    fn apply_op(&mut self, op: Op) {
        let now = self.now;
        if self.check_op(&op).is_err() {
            return;
        }
        if self.logging() {
            let line = format!("{{\"t\":{now},\"ev\":\"apply\",\"op\":{}}}", op.to_json());
            self.log_line(&line);
        }
        match op {
            Op::Move { station, x, y, speed, trajectory } => {
                let s = self.idx(station).unwrap();
                let traj = &mut self.sta[s].traj;
                if let Some(t) = trajectory {
                    let pts = t
                        .iter()
                        .map(|p| Waypoint { t_ns: (p[0].max(0.0) * 1e9).round() as u64, x: p[1], y: p[2] })
                        .collect();
                    traj.replace_from(now, pts);
                } else if let Some(v) = speed {
                    let d = distance(traj.position(now), (x, y));
                    let dt = (d / v * 1e9).round() as u64;
                    traj.replace_from(now, vec![Waypoint { t_ns: now + dt, x, y }]);
                } else {
                    traj.teleport(now, x, y);
                }
            }
            Op::SetLink { a, b, loss, ber } => {
                let k = sorted_pair(self.idx(a).unwrap(), self.idx(b).unwrap());
                if loss.is_none() && ber.is_none() {
                    self.links.remove(&k);
                } else {
                    self.links.insert(k, LinkOverride { loss, ber });
                }
            }
            Op::Partition { a, b, duration_s } => {
                let n = self.sta.len();
                let mut pa = vec![false; n];
                let mut pb = vec![false; n];
                for x in a {
                    pa[self.idx(x).unwrap()] = true;
                }
                for x in b {
                    pb[self.idx(x).unwrap()] = true;
                }
                let id = self.next_partition;
                self.next_partition += 1;
                self.partitions.push(Partition { id, a: pa, b: pb });
                if let Some(d) = duration_s {
                    self.push(now + (d.max(0.0) * 1e9).round() as u64, Ev::PartitionEnd { id });
                }
            }
        }
    }

    // ------------------------------------------------------------------ queries

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

    /// The core's counters as JSON (counters.json merges the driver's in).
    pub fn counters_json(&self) -> Value {
        let mut per = serde_json::Map::new();
        let mut tot = StaCounters::default();
        for s in &self.sta {
            let c = &s.c;
            tot.offered += c.offered;
            tot.acked += c.acked;
            tot.failed += c.failed;
            tot.sent += c.sent;
            tot.rejected += c.rejected;
            tot.rx_delivered += c.rx_delivered;
            tot.rx_overheard += c.rx_overheard;
            tot.rx_duplicates += c.rx_duplicates;
            tot.dropped_on_disconnect += c.dropped_on_disconnect;
            tot.payload_bytes_acked += c.payload_bytes_acked;
            for i in 0..5 {
                tot.failed_by_cause[i] += c.failed_by_cause[i];
            }
            per.insert(
                s.id.to_string(),
                json!({
                    "offered": c.offered, "acked": c.acked, "failed": c.failed, "sent": c.sent,
                    "rejected": c.rejected,
                    "failed_by_cause": cause_map(&c.failed_by_cause),
                    "airtime_ns": c.airtime_ns, "rx_delivered": c.rx_delivered,
                    "rx_overheard": c.rx_overheard, "rx_duplicates": c.rx_duplicates,
                    "dropped_on_disconnect": c.dropped_on_disconnect,
                    "payload_bytes_acked": c.payload_bytes_acked,
                    "responses_suppressed": c.responses_suppressed,
                    "radio_on": s.on,
                }),
            );
        }
        let mut outcome = serde_json::Map::new();
        for ((k, o), n) in &self.c.rx_outcome {
            let e = outcome.entry(k.to_string()).or_insert_with(|| json!({}));
            e[*o] = json!(n);
        }
        json!({
            "virtual_time_ns": self.now,
            "frames": {
                "offered": tot.offered, "acked": tot.acked, "failed": tot.failed,
                "sent_broadcast": tot.sent, "rejected": tot.rejected,
                "dropped_on_disconnect": tot.dropped_on_disconnect,
                "payload_bytes_acked": tot.payload_bytes_acked,
            },
            "failed_by_cause": cause_map(&tot.failed_by_cause),
            "rx": {
                "delivered": tot.rx_delivered, "overheard": tot.rx_overheard,
                "duplicates": tot.rx_duplicates,
                "outcome_by_kind": outcome,
            },
            "rts_attempts_histogram": hist(&self.c.rts_hist),
            "data_attempts_histogram": hist(&self.c.data_hist),
            "airtime_ns": self.sta.iter().map(|s| (s.id.to_string(), json!(s.c.airtime_ns))).collect::<serde_json::Map<_, _>>(),
            "transmissions": self.c.transmissions,
            "receptions_evaluated": self.c.receptions_evaluated,
            "events_processed": self.c.events,
            "p2p": {"delivered": self.c.p2p_delivered, "lost": self.c.p2p_lost},
            "airtime_series": {"bin_ns": AIRTIME_BIN_NS, "airtime_ns": self.c.airtime_bins},
            "trace_records": self.trace.len() / TRACE_RECORD_BYTES,
            "per_station": per,
        })
    }

    /// The failed-frame trace as written to `medium/trace.bin`: `TRACE_MAGIC`, then records.
    pub fn trace_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + self.trace.len());
        out.extend_from_slice(TRACE_MAGIC);
        out.extend_from_slice(&self.trace);
        out
    }
}

/// Append one failed-frame record: `t_ns` u64, `src`, `dst` u16 (station ids), `cause`,
/// `rts_attempts`, `data_attempts` u8, one pad byte, `distance_m` f32 (between sender and
/// addressee when the frame failed), then from the payload's IPv4 header the source and
/// destination addresses (4 bytes each, network order), `ip_id` u16 and `protocol` u8 (zeros
/// if the payload is not IPv4), one pad byte. Little-endian.
#[allow(clippy::too_many_arguments)]
fn trace_record(out: &mut Vec<u8>, t: u64, src: u32, dst: u32, cause: Cause, rts: u8, data: u8, dist: f64, payload: &[u8]) {
    out.extend_from_slice(&t.to_le_bytes());
    out.extend_from_slice(&(src as u16).to_le_bytes());
    out.extend_from_slice(&(dst as u16).to_le_bytes());
    out.extend_from_slice(&[cause as u8, rts, data, 0]);
    out.extend_from_slice(&(dist as f32).to_le_bytes());
    if payload.len() >= 20 && payload[0] >> 4 == 4 {
        out.extend_from_slice(&payload[12..20]);
        out.extend_from_slice(&u16::from_be_bytes([payload[4], payload[5]]).to_le_bytes());
        out.extend_from_slice(&[payload[9], 0]);
    } else {
        out.extend_from_slice(&[0u8; 12]);
    }
}

fn cause_map(c: &[u64; 5]) -> Value {
    json!({
        "out_of_range": c[1], "collision": c[2], "channel_error": c[3], "scripted": c[4],
    })
}

fn hist(h: &BTreeMap<u8, u64>) -> Value {
    Value::Object(h.iter().map(|(k, v)| (k.to_string(), json!(v))).collect())
}
