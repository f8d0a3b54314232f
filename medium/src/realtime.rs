//! Real-time driver: the routers' SOCK_SEQPACKET socket, the orchestrator's control socket, and
//! the lockstep of the event core with CLOCK_MONOTONIC. The only module that touches the OS.
//!
//! One thread, one epoll set: the listening sockets, every connection, a timerfd armed
//! (absolute, CLOCK_MONOTONIC, timer slack 1 ns) at the next event of the core, and a signalfd
//! for SIGINT/SIGTERM. When idle, the process sleeps in epoll_wait, so idle stations cost no CPU.
//! A frame offered by a router enters the virtual timeline at its arrival time (monotonic now
//! minus the epoch); events fire when the wall clock reaches them. The lag of every event
//! (actual minus intended time) goes into a histogram reported in counters.json.
//!
//! Isolation: a router's malformed, oversized or out-of-order message is counted and dropped;
//! a router that disconnects turns only its own station's radio off; sends never block (a
//! router that does not read loses its own messages, counted as `send_dropped`).

use std::collections::HashMap;
use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::rc::Rc;

use serde_json::{json, Value};

use crate::config::{Op, RunConfig};
use crate::core::{Input, Medium, Output};
use crate::stats::LagHistogram;
use crate::wire::{self, RouterMsg, WireError};
use crate::BROADCAST;

/// Largest datagram we accept from a router (anything longer is malformed anyway).
const RECV_BUF: usize = 65_536;
/// Largest control line, bytes.
const MAX_CONTROL_LINE: usize = 1 << 20;

pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU time of this process so far (getrusage RUSAGE_SELF): the run's measured cost
/// (docs/orchestrator.md, "Run validity": `run_cpu_s`).
fn own_rusage() -> Value {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return Value::Null;
    }
    let s = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    json!({"utime_s": s(ru.ru_utime), "stime_s": s(ru.ru_stime)})
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn check(r: i32, what: &str) -> Result<i32, String> {
    if r < 0 {
        Err(format!("{what}: {}", std::io::Error::last_os_error()))
    } else {
        Ok(r)
    }
}

/// Per-station I/O counters (section 2: malformed, out of order).
#[derive(Clone, Debug, Default)]
struct IoCounters {
    malformed: u64,
    out_of_order: u64,
    oversized: u64,
    send_dropped: u64,
    messages_in: u64,
    messages_out: u64,
    connects: u64,
    disconnects: u64,
}

impl IoCounters {
    fn json(&self) -> Value {
        json!({
            "malformed": self.malformed, "out_of_order": self.out_of_order,
            "oversized": self.oversized, "send_dropped": self.send_dropped,
            "messages_in": self.messages_in, "messages_out": self.messages_out,
            "connects": self.connects, "disconnects": self.disconnects,
        })
    }
}

struct Conn {
    fd: i32,
    station: Option<u32>,
    rx_seq: u32,
    tx_seq: u32,
}

struct CtlConn {
    buf: Vec<u8>,
}

enum Kind {
    Listen,
    CtlListen,
    Timer,
    Signal,
    Router,
    Ctl,
}

pub struct Options {
    pub event_log: Option<String>,
    pub counters_path: Option<String>,
    pub rt_priority: Option<i32>,
}

pub struct Driver {
    m: Medium,
    cfg: RunConfig,
    epfd: i32,
    timer_fd: i32,
    kinds: HashMap<i32, Kind>,
    conns: HashMap<i32, Conn>,
    ctls: HashMap<i32, CtlConn>,
    station_conn: HashMap<u32, i32>,
    io: HashMap<u32, IoCounters>,
    io_unbound: IoCounters,
    epoch: u64,
    lag: LagHistogram,
    stop: bool,
    armed_for: Option<u64>,
    opts: Options,
    wall_start: u64,
}

fn bind_unix(path: &str, ty: i32) -> Result<i32, String> {
    let p = Path::new(path);
    if let Some(dir) = p.parent() {
        if !dir.as_os_str().is_empty() && !dir.exists() {
            std::fs::create_dir_all(dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
            let c = CString::new(dir.as_os_str().as_bytes()).unwrap();
            unsafe { libc::chmod(c.as_ptr(), 0o700) };
        }
    }
    let _ = std::fs::remove_file(p);
    let fd = check(unsafe { libc::socket(libc::AF_UNIX, ty | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) }, "socket")?;
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = p.as_os_str().as_bytes();
    if bytes.len() >= addr.sun_path.len() {
        return Err(format!("socket path too long: {path}"));
    }
    for (i, b) in bytes.iter().enumerate() {
        addr.sun_path[i] = *b as libc::c_char;
    }
    // Create the socket file 0600 from the start (no window where others may connect).
    let old = unsafe { libc::umask(0o177) };
    let r = unsafe { libc::bind(fd, &addr as *const _ as *const libc::sockaddr, std::mem::size_of::<libc::sockaddr_un>() as u32) };
    unsafe { libc::umask(old) };
    check(r, &format!("bind {path}"))?;
    let c = CString::new(bytes).unwrap();
    unsafe { libc::chmod(c.as_ptr(), 0o600) };
    check(unsafe { libc::listen(fd, 1024) }, "listen")?;
    Ok(fd)
}

impl Driver {
    pub fn new(cfg: RunConfig, opts: Options) -> Result<Self, String> {
        let mut m = Medium::new(&cfg, false)?;
        let sock = cfg.socket.clone().ok_or("config has no \"socket\"")?;
        let log_path = opts.event_log.clone().or_else(|| match &cfg.event_log {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Bool(true)) => cfg.out_dir.as_ref().map(|d| format!("{d}/events.log")),
            _ => None,
        });
        if let Some(lp) = &log_path {
            if let Some(dir) = Path::new(lp).parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let f = std::fs::File::create(lp).map_err(|e| format!("event log {lp}: {e}"))?;
            m.set_event_log(Box::new(std::io::BufWriter::with_capacity(1 << 20, f)), false);
        }
        unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
            libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        }
        if let Some(prio) = opts.rt_priority {
            let sp = libc::sched_param { sched_priority: prio };
            if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &sp) } != 0 {
                eprintln!("manet-medium: SCHED_FIFO {prio} not set: {}", std::io::Error::last_os_error());
            }
        }
        let listen_fd = bind_unix(&sock, libc::SOCK_SEQPACKET)?;
        let ctl_fd = match &cfg.control_socket {
            Some(p) => bind_unix(p, libc::SOCK_STREAM)?,
            None => -1,
        };
        let epfd = check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) }, "epoll_create1")?;
        let timer_fd = check(unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) }, "timerfd")?;
        let sig_fd = unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGINT);
            libc::sigaddset(&mut set, libc::SIGTERM);
            libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            check(libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC), "signalfd")?
        };
        let mut d = Driver {
            m,
            cfg,
            epfd,
            timer_fd,
            kinds: HashMap::new(),
            conns: HashMap::new(),
            ctls: HashMap::new(),
            station_conn: HashMap::new(),
            io: HashMap::new(),
            io_unbound: IoCounters::default(),
            epoch: 0,
            lag: LagHistogram::default(),
            stop: false,
            armed_for: None,
            opts,
            wall_start: 0,
        };
        d.watch(listen_fd, Kind::Listen)?;
        if ctl_fd >= 0 {
            d.watch(ctl_fd, Kind::CtlListen)?;
        }
        d.watch(timer_fd, Kind::Timer)?;
        d.watch(sig_fd, Kind::Signal)?;
        d.epoch = monotonic_ns();
        d.wall_start = d.epoch;
        Ok(d)
    }

    fn watch(&mut self, fd: i32, kind: Kind) -> Result<(), String> {
        let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: fd as u64 };
        check(unsafe { libc::epoll_ctl(self.epfd, libc::EPOLL_CTL_ADD, fd, &mut ev) }, "epoll_ctl")?;
        self.kinds.insert(fd, kind);
        Ok(())
    }

    fn unwatch(&mut self, fd: i32) {
        unsafe {
            libc::epoll_ctl(self.epfd, libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut());
            libc::close(fd);
        }
        self.kinds.remove(&fd);
    }

    fn vnow(&self) -> u64 {
        monotonic_ns().saturating_sub(self.epoch).max(self.m.now())
    }

    /// Run every event that is due, recording its lag.
    fn run_due(&mut self) {
        loop {
            let t = match self.m.next_event_time() {
                Some(t) => t,
                None => break,
            };
            let now = monotonic_ns().saturating_sub(self.epoch);
            if t > now {
                break;
            }
            self.m.step();
            self.lag.record(now - t);
            if !self.m.outputs.is_empty() {
                self.flush_outputs();
            }
        }
    }

    fn arm_timer(&mut self) {
        let next = self.m.next_event_time();
        if next == self.armed_for {
            return;
        }
        self.armed_for = next;
        let abs = next.map(|t| self.epoch + t).unwrap_or(0);
        let its = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec { tv_sec: (abs / 1_000_000_000) as i64, tv_nsec: (abs % 1_000_000_000) as i64 },
        };
        unsafe { libc::timerfd_settime(self.timer_fd, libc::TFD_TIMER_ABSTIME, &its, std::ptr::null_mut()) };
    }

    pub fn run(&mut self) -> Result<(), String> {
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
        while !self.stop {
            self.arm_timer();
            let n = unsafe { libc::epoll_wait(self.epfd, events.as_mut_ptr(), events.len() as i32, -1) };
            if n < 0 {
                if errno() == libc::EINTR {
                    continue;
                }
                return Err(format!("epoll_wait: {}", std::io::Error::last_os_error()));
            }
            self.run_due();
            for e in events.iter().take(n as usize) {
                let fd = e.u64 as i32;
                let flags = e.events;
                match self.kinds.get(&fd) {
                    Some(Kind::Listen) => self.accept(fd, false),
                    Some(Kind::CtlListen) => self.accept(fd, true),
                    Some(Kind::Timer) => {
                        let mut buf = [0u8; 8];
                        unsafe { libc::read(fd, buf.as_mut_ptr() as *mut _, 8) };
                        self.armed_for = None;
                    }
                    Some(Kind::Signal) => {
                        let mut buf = [0u8; 128];
                        unsafe { libc::read(fd, buf.as_mut_ptr() as *mut _, 128) };
                        self.stop = true;
                    }
                    Some(Kind::Router) => self.router_readable(fd, flags),
                    Some(Kind::Ctl) => self.ctl_readable(fd),
                    None => {}
                }
                self.run_due();
            }
        }
        self.finish()
    }

    fn accept(&mut self, lfd: i32, control: bool) {
        loop {
            let fd = unsafe { libc::accept4(lfd, std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) };
            if fd < 0 {
                return;
            }
            if control {
                let _ = self.watch(fd, Kind::Ctl);
                self.ctls.insert(fd, CtlConn { buf: Vec::new() });
            } else {
                let sz: i32 = 4 << 20;
                unsafe {
                    libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, &sz as *const _ as *const _, 4);
                }
                let _ = self.watch(fd, Kind::Router);
                self.conns.insert(fd, Conn { fd, station: None, rx_seq: 0, tx_seq: 0 });
            }
        }
    }

    fn io_of(&mut self, station: Option<u32>) -> &mut IoCounters {
        match station {
            Some(s) => self.io.entry(s).or_default(),
            None => &mut self.io_unbound,
        }
    }

    fn router_readable(&mut self, fd: i32, flags: u32) {
        let mut buf = vec![0u8; RECV_BUF];
        loop {
            let n = unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut _, buf.len(), libc::MSG_DONTWAIT | libc::MSG_TRUNC) };
            if n < 0 {
                let e = errno();
                if e == libc::EAGAIN || e == libc::EWOULDBLOCK {
                    break;
                }
                self.close_router(fd);
                return;
            }
            if n == 0 {
                self.close_router(fd);
                return;
            }
            let n = n as usize;
            let station = self.conns.get(&fd).and_then(|c| c.station);
            if n > buf.len() {
                let io = self.io_of(station);
                io.malformed += 1;
                io.oversized += 1;
                continue;
            }
            self.io_of(station).messages_in += 1;
            let msg = {
                let c = self.conns.get_mut(&fd).unwrap();
                wire::parse_router(&buf[..n], &mut c.rx_seq)
            };
            match msg {
                Ok(m) => self.on_router_msg(fd, m),
                Err(WireError::Malformed(_)) => self.io_of(station).malformed += 1,
                Err(WireError::OutOfOrder { .. }) => self.io_of(station).out_of_order += 1,
                Err(WireError::Oversized { cookie }) => {
                    self.io_of(station).oversized += 1;
                    let t = self.vnow();
                    if station.is_some() {
                        let b = wire::tx_status(self.next_seq(fd), t, cookie, 3, 0, 0, 0, t, t);
                        self.send(fd, &b);
                    }
                }
            }
            if !self.conns.contains_key(&fd) {
                return;
            }
        }
        if flags & (libc::EPOLLHUP | libc::EPOLLERR) as u32 != 0 {
            self.close_router(fd);
        }
    }

    fn next_seq(&mut self, fd: i32) -> u32 {
        let c = self.conns.get_mut(&fd).unwrap();
        c.tx_seq = c.tx_seq.wrapping_add(1);
        c.tx_seq
    }

    fn send(&mut self, fd: i32, b: &[u8]) {
        let r = unsafe { libc::send(fd, b.as_ptr() as *const _, b.len(), libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) };
        let station = self.conns.get(&fd).and_then(|c| c.station);
        if r < 0 {
            self.io_of(station).send_dropped += 1;
        } else {
            self.io_of(station).messages_out += 1;
        }
    }

    fn on_router_msg(&mut self, fd: i32, msg: RouterMsg) {
        let station = self.conns.get(&fd).and_then(|c| c.station);
        let t = self.vnow();
        match (station, msg) {
            (None, RouterMsg::Hello { station_id, flags }) => {
                if !self.m.has_station(station_id) || self.station_conn.contains_key(&station_id) {
                    // Unknown station, or one already served by a live router.
                    self.io_unbound.malformed += 1;
                    self.close_router(fd);
                    return;
                }
                self.conns.get_mut(&fd).unwrap().station = Some(station_id);
                self.station_conn.insert(station_id, fd);
                self.io_of(Some(station_id)).connects += 1;
                let power = self.m.default_power(station_id) as f32;
                let seq = self.next_seq(fd);
                let b = wire::welcome(seq, t, station_id, self.m.n_stations() as u32, self.epoch, power);
                self.send(fd, &b);
                self.m.input(t, Input::Hello { sta: station_id, promisc: flags & 1 != 0 });
            }
            (None, _) => self.io_unbound.malformed += 1,
            (Some(_), RouterMsg::Hello { .. }) => self.io_of(station).malformed += 1,
            (Some(s), RouterMsg::Tx { cookie, dst, tx_power_dbm, retry_limit, flags, payload }) => {
                let power = if tx_power_dbm.is_finite() { Some(tx_power_dbm as f64) } else { None };
                self.m.input(
                    t,
                    Input::Tx { sta: s, cookie, dst, power_dbm: power, retry_limit, no_rts: flags & 1 != 0, payload: Rc::from(payload) },
                );
            }
            (Some(s), RouterMsg::SetPower { neighbour, tx_power_dbm }) => {
                let nb = if neighbour == BROADCAST { None } else { Some(neighbour) };
                let p = if tx_power_dbm.is_finite() { Some(tx_power_dbm as f64) } else { None };
                self.m.input(t, Input::SetPower { sta: s, neighbour: nb, power_dbm: p });
            }
            (Some(s), RouterMsg::Bye) => {
                self.m.input(t, Input::Bye { sta: s });
                self.station_conn.remove(&s);
                self.conns.get_mut(&fd).unwrap().station = None;
                self.io_of(Some(s)).disconnects += 1;
            }
        }
        self.flush_outputs();
    }

    fn close_router(&mut self, fd: i32) {
        if let Some(c) = self.conns.remove(&fd) {
            if let Some(s) = c.station {
                if self.station_conn.get(&s) == Some(&c.fd) {
                    self.station_conn.remove(&s);
                    let t = self.vnow();
                    self.m.input(t, Input::Bye { sta: s });
                    self.io_of(Some(s)).disconnects += 1;
                    self.flush_outputs();
                }
            }
        }
        self.unwatch(fd);
    }

    fn flush_outputs(&mut self) {
        let outs: Vec<Output> = self.m.outputs.drain(..).collect();
        for o in outs {
            match o {
                Output::Rx { to, t, src, dst, overheard, rssi_dbm, snr_db, noise_dbm, payload } => {
                    if let Some(&fd) = self.station_conn.get(&to) {
                        let seq = self.next_seq(fd);
                        let b = wire::rx(seq, t, src, dst, overheard as u8, rssi_dbm, snr_db, noise_dbm, &payload);
                        self.send(fd, &b);
                    }
                }
                Output::TxStatus { to, t, cookie, status, rts_attempts, data_attempts, cause, t_start, t_end } => {
                    if let Some(&fd) = self.station_conn.get(&to) {
                        let seq = self.next_seq(fd);
                        let b = wire::tx_status(seq, t, cookie, status as u8, rts_attempts, data_attempts, cause as u8, t_start, t_end);
                        self.send(fd, &b);
                    }
                }
            }
        }
    }

    // ------------------------------------------------------------------ control socket

    fn ctl_readable(&mut self, fd: i32) {
        let mut buf = [0u8; 8192];
        loop {
            let n = unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut _, buf.len(), libc::MSG_DONTWAIT) };
            if n < 0 && (errno() == libc::EAGAIN || errno() == libc::EWOULDBLOCK) {
                break;
            }
            if n <= 0 {
                self.ctls.remove(&fd);
                self.unwatch(fd);
                return;
            }
            let c = self.ctls.get_mut(&fd).unwrap();
            c.buf.extend_from_slice(&buf[..n as usize]);
            if c.buf.len() > MAX_CONTROL_LINE && !c.buf.contains(&b'\n') {
                self.ctls.remove(&fd);
                self.unwatch(fd);
                return;
            }
        }
        loop {
            let c = match self.ctls.get_mut(&fd) {
                Some(c) => c,
                None => return,
            };
            let pos = match c.buf.iter().position(|&b| b == b'\n') {
                Some(pos) => pos,
                None => break,
            };
            let line: Vec<u8> = c.buf.drain(..=pos).collect();
            let reply = self.control(&line);
            let mut out = serde_json::to_vec(&reply).unwrap();
            out.push(b'\n');
            let mut off = 0;
            while off < out.len() {
                let r = unsafe { libc::send(fd, out[off..].as_ptr() as *const _, out.len() - off, libc::MSG_NOSIGNAL) };
                if r <= 0 {
                    if errno() == libc::EAGAIN {
                        let mut p = libc::pollfd { fd, events: libc::POLLOUT, revents: 0 };
                        unsafe { libc::poll(&mut p, 1, 1000) };
                        continue;
                    }
                    break;
                }
                off += r as usize;
            }
        }
    }

    fn control(&mut self, line: &[u8]) -> Value {
        let v: Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(e) => return json!({"ok": false, "error": format!("bad JSON: {e}")}),
        };
        let t = self.vnow();
        match v.get("op").and_then(Value::as_str) {
            Some("positions") => {
                self.m.run_until(t);
                let pos: serde_json::Map<String, Value> = self
                    .m
                    .positions()
                    .into_iter()
                    .map(|(id, x, y, vx, vy, on)| (id.to_string(), json!({"x": x, "y": y, "vx": vx, "vy": vy, "radio_on": on})))
                    .collect();
                json!({"ok": true, "t_ns": self.m.now(), "positions": pos})
            }
            Some("counters") => json!({"ok": true, "counters": self.counters_json()}),
            Some("stop") => {
                self.stop = true;
                json!({"ok": true})
            }
            _ => match Op::parse(&v) {
                Ok(Some(op)) => match self.m.check_op(&op) {
                    Ok(()) => {
                        self.m.input(t, Input::Op(op));
                        self.flush_outputs();
                        json!({"ok": true, "t_ns": t})
                    }
                    Err(e) => json!({"ok": false, "error": e}),
                },
                Ok(None) => json!({"ok": false, "error": "unknown op"}),
                Err(e) => json!({"ok": false, "error": e}),
            },
        }
    }

    pub fn counters_json(&self) -> Value {
        let mut c = self.m.counters_json();
        let mut io = serde_json::Map::new();
        let mut ids: Vec<&u32> = self.io.keys().collect();
        ids.sort();
        for id in ids {
            io.insert(id.to_string(), self.io[id].json());
        }
        let tot_mal: u64 = self.io.values().map(|x| x.malformed).sum::<u64>() + self.io_unbound.malformed;
        let tot_ooo: u64 = self.io.values().map(|x| x.out_of_order).sum::<u64>() + self.io_unbound.out_of_order;
        c["mode"] = json!("realtime");
        c["run_id"] = json!(self.cfg.run_id);
        c["seed"] = json!(self.cfg.seed);
        c["lag"] = self.lag.to_json();
        c["io"] = json!({
            "per_station": io, "unbound": self.io_unbound.json(),
            "malformed": tot_mal, "out_of_order": tot_ooo,
        });
        c["wall_time_ns"] = json!(monotonic_ns() - self.wall_start);
        c["rusage"] = own_rusage();
        c
    }

    fn finish(&mut self) -> Result<(), String> {
        let t = self.vnow();
        self.m.run_until(t);
        self.m.flush_log();
        let c = self.counters_json();
        let path = self
            .opts
            .counters_path
            .clone()
            .or_else(|| self.cfg.out_dir.as_ref().map(|d| format!("{d}/counters.json")));
        if let Some(p) = path {
            if let Some(dir) = Path::new(&p).parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let mut f = std::fs::File::create(&p).map_err(|e| format!("{p}: {e}"))?;
            f.write_all(serde_json::to_string_pretty(&c).unwrap().as_bytes()).map_err(|e| e.to_string())?;
            write_trace(&self.m, &p)?;
        }
        if let Some(s) = &self.cfg.socket {
            let _ = std::fs::remove_file(s);
        }
        if let Some(s) = &self.cfg.control_socket {
            let _ = std::fs::remove_file(s);
        }
        Ok(())
    }
}

/// Write the medium's failed-frame trace next to `counters_path` (`trace.bin`; docs/medium.md).
pub fn write_trace(m: &Medium, counters_path: &str) -> Result<(), String> {
    let dir = Path::new(counters_path).parent().unwrap_or(Path::new("."));
    let p = dir.join("trace.bin");
    std::fs::write(&p, m.trace_bytes()).map_err(|e| format!("{}: {e}", p.display()))
}
