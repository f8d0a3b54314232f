//! `manet-medium`: the testbed's wireless medium process.
//!
//! ```text
//! manet-medium --config FILE [--event-log FILE] [--counters FILE] [--rt-priority N]
//! manet-medium --config FILE --virtual [--offered FILE] [--duration S] [--event-log FILE] [--counters FILE]
//! ```
//! Real-time mode serves the routers' socket until `stop` on the control socket, SIGTERM or
//! SIGINT, then writes `out_dir/counters.json`. Virtual mode replays offered frames (and the
//! config's saturated sources and events) as fast as possible and writes the same files.

use std::io::Write;
use std::time::Instant;

use manet_medium::config::RunConfig;
use manet_medium::realtime::{Driver, Options};
use manet_medium::virt;

fn usage() -> ! {
    eprintln!(
        "usage: manet-medium --config FILE [--virtual [--offered FILE] [--duration S]] \
         [--event-log FILE] [--counters FILE] [--rt-priority N]"
    );
    std::process::exit(2)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut config = None;
    let mut virtual_mode = false;
    let mut offered = None;
    let mut duration: Option<f64> = None;
    let mut event_log = None;
    let mut counters = None;
    let mut rt_priority = None;
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--config" => config = Some(val()),
            "--virtual" => virtual_mode = true,
            "--offered" => offered = Some(val()),
            "--duration" => duration = Some(val().parse().unwrap_or_else(|_| usage())),
            "--event-log" => event_log = Some(val()),
            "--counters" => counters = Some(val()),
            "--rt-priority" => rt_priority = Some(val().parse().unwrap_or_else(|_| usage())),
            "-h" | "--help" => usage(),
            _ => usage(),
        }
    }
    let config = config.unwrap_or_else(|| usage());
    let text = std::fs::read_to_string(&config).unwrap_or_else(|e| {
        eprintln!("manet-medium: {config}: {e}");
        std::process::exit(1)
    });
    let cfg = RunConfig::from_json(&text).unwrap_or_else(|e| {
        eprintln!("manet-medium: {e}");
        std::process::exit(1)
    });
    let r = if virtual_mode {
        run_virtual(cfg, offered, duration, event_log, counters)
    } else {
        Driver::new(cfg, Options { event_log, counters_path: counters, rt_priority }).and_then(|mut d| d.run())
    };
    if let Err(e) = r {
        eprintln!("manet-medium: {e}");
        std::process::exit(1);
    }
}

fn run_virtual(cfg: RunConfig, offered: Option<String>, duration: Option<f64>, event_log: Option<String>, counters: Option<String>) -> Result<(), String> {
    let off = match &offered {
        Some(p) => virt::parse_offered(&std::fs::read_to_string(p).map_err(|e| format!("{p}: {e}"))?)?,
        None => virt::Offered { radios_on: None, inputs: Vec::new() },
    };
    let radios_on = off.radios_on.unwrap_or(true);
    let mut m = virt::medium(&cfg, radios_on)?;
    let log_path = event_log.or_else(|| match &cfg.event_log {
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(serde_json::Value::Bool(true)) => cfg.out_dir.as_ref().map(|d| format!("{d}/events.log")),
        _ => None,
    });
    if let Some(lp) = &log_path {
        if let Some(dir) = std::path::Path::new(lp).parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let f = std::fs::File::create(lp).map_err(|e| format!("{lp}: {e}"))?;
        m.set_event_log(Box::new(std::io::BufWriter::with_capacity(1 << 20, f)), radios_on);
    }
    let until = duration.or(cfg.duration_s).map(|s| (s * 1e9).round() as u64);
    if !cfg.saturated.is_empty() && until.is_none() {
        return Err("saturated sources need --duration or duration_s".into());
    }
    m.start_saturated();
    let t0 = Instant::now();
    virt::run(&mut m, off.inputs, until, |_| {});
    let cpu = t0.elapsed().as_secs_f64();
    m.flush_log();
    let mut c = m.counters_json();
    c["mode"] = serde_json::json!("virtual");
    c["run_id"] = serde_json::json!(cfg.run_id);
    c["seed"] = serde_json::json!(cfg.seed);
    c["elapsed_s"] = serde_json::json!(cpu);
    let path = counters.or_else(|| cfg.out_dir.as_ref().map(|d| format!("{d}/counters.json")));
    let s = serde_json::to_string_pretty(&c).unwrap();
    match path {
        Some(p) => {
            if let Some(dir) = std::path::Path::new(&p).parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            std::fs::File::create(&p).and_then(|mut f| f.write_all(s.as_bytes())).map_err(|e| format!("{p}: {e}"))?;
            manet_medium::realtime::write_trace(&m, &p)?;
        }
        None => println!("{s}"),
    }
    Ok(())
}
