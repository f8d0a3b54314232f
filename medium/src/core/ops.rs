//! Scripted operations (config `events` and the control socket): move a station, set a link's
//! loss and BER, partition the stations into two sets for a while.

use super::{sorted_pair, Ev, Medium};
use crate::config::Op;
use crate::mobility::{distance, Waypoint};

pub(super) struct Partition {
    pub(super) id: u64,
    pub(super) a: Vec<bool>,
    pub(super) b: Vec<bool>,
}

#[derive(Clone, Copy, Debug, Default)]
pub(super) struct LinkOverride {
    pub(super) loss: Option<f64>,
    pub(super) ber: Option<f64>,
}

impl Medium {
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

    pub(super) fn link_cut(&self, a: usize, b: usize) -> bool {
        self.partitions.iter().any(|p| (p.a[a] && p.b[b]) || (p.b[a] && p.a[b]))
    }

    pub(super) fn apply_op(&mut self, op: Op) {
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
}
