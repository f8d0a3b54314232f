//! Piecewise-linear trajectories, evaluated exactly at any virtual time (no movement ticks).
//!
//! A trajectory is a list of waypoints `(t_ns, x_m, y_m)`: the position is linear between
//! consecutive waypoints and constant before the first and after the last; a pause is two
//! waypoints at the same place. Generation (random waypoint, ns-2 setdest, BonnMotion) is done
//! in Python (`topologies/`); the medium only evaluates.

/// One waypoint.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Waypoint {
    pub t_ns: u64,
    pub x: f64,
    pub y: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Trajectory {
    points: Vec<Waypoint>,
}

impl Trajectory {
    /// Build from waypoints; they are sorted by time (stable, so equal times keep their order).
    pub fn new(mut points: Vec<Waypoint>) -> Result<Self, String> {
        if points.is_empty() {
            return Err("a trajectory needs at least one waypoint".into());
        }
        if points.iter().any(|p| !p.x.is_finite() || !p.y.is_finite()) {
            return Err("waypoint coordinates must be finite".into());
        }
        points.sort_by_key(|p| p.t_ns);
        Ok(Trajectory { points })
    }

    pub fn fixed(x: f64, y: f64) -> Self {
        Trajectory { points: vec![Waypoint { t_ns: 0, x, y }] }
    }

    /// From config triples `[t_s, x_m, y_m]`.
    pub fn from_triples(v: &[[f64; 3]]) -> Result<Self, String> {
        let pts = v
            .iter()
            .map(|p| {
                if !(p[0] >= 0.0) {
                    return Err(format!("waypoint time must be >= 0, got {}", p[0]));
                }
                Ok(Waypoint { t_ns: (p[0] * 1e9).round() as u64, x: p[1], y: p[2] })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Self::new(pts)
    }

    pub fn points(&self) -> &[Waypoint] {
        &self.points
    }

    /// Position at `t_ns`.
    pub fn position(&self, t_ns: u64) -> (f64, f64) {
        let p = &self.points;
        let i = p.partition_point(|w| w.t_ns <= t_ns);
        if i == 0 {
            return (p[0].x, p[0].y);
        }
        if i == p.len() {
            let l = p[p.len() - 1];
            return (l.x, l.y);
        }
        let (a, b) = (p[i - 1], p[i]);
        let w = (t_ns - a.t_ns) as f64 / (b.t_ns - a.t_ns) as f64;
        (a.x + w * (b.x - a.x), a.y + w * (b.y - a.y))
    }

    /// Velocity (m/s) at `t_ns` (that of the segment containing t; 0 outside).
    pub fn velocity(&self, t_ns: u64) -> (f64, f64) {
        let p = &self.points;
        let i = p.partition_point(|w| w.t_ns <= t_ns);
        if i == 0 || i == p.len() {
            return (0.0, 0.0);
        }
        let (a, b) = (p[i - 1], p[i]);
        let dt = (b.t_ns - a.t_ns) as f64 / 1e9;
        ((b.x - a.x) / dt, (b.y - a.y) / dt)
    }

    /// Replace the future from `now`: keep the past, start at the current position and follow
    /// `future` (absolute times >= now).
    pub fn replace_from(&mut self, now: u64, future: Vec<Waypoint>) {
        let (x, y) = self.position(now);
        let mut pts: Vec<Waypoint> = self.points.iter().copied().filter(|w| w.t_ns < now).collect();
        pts.push(Waypoint { t_ns: now, x, y });
        pts.extend(future.into_iter().filter(|w| w.t_ns >= now));
        pts.sort_by_key(|p| p.t_ns);
        self.points = pts;
    }

    /// Jump to (x, y) at `now` and stay there.
    pub fn teleport(&mut self, now: u64, x: f64, y: f64) {
        let mut pts: Vec<Waypoint> = self.points.iter().copied().filter(|w| w.t_ns < now).collect();
        if let Some(l) = pts.last().copied() {
            // Keep the old position up to now, then jump.
            let (ox, oy) = self.position(now);
            let _ = l;
            pts.push(Waypoint { t_ns: now, x: ox, y: oy });
        }
        pts.push(Waypoint { t_ns: now, x, y });
        // A jump: two waypoints at the same time; position() takes the later one.
        self.points = pts;
    }
}

pub fn distance(a: (f64, f64), b: (f64, f64)) -> f64 {
    ((a.0 - b.0).powi(2) + (a.1 - b.1).powi(2)).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_metres_per_second_for_ten_seconds() {
        let t = Trajectory::from_triples(&[[0.0, 0.0, 0.0], [100.0, 1000.0, 0.0]]).unwrap();
        let d = distance(t.position(0), t.position(10_000_000_000));
        assert!((d - 100.0).abs() < 0.1, "{d}");
        assert_eq!(t.velocity(5_000_000_000), (10.0, 0.0));
    }

    #[test]
    fn constant_outside_and_pause() {
        let t = Trajectory::from_triples(&[[1.0, 5.0, 5.0], [2.0, 5.0, 5.0], [3.0, 6.0, 5.0]]).unwrap();
        assert_eq!(t.position(0), (5.0, 5.0));
        assert_eq!(t.position(1_500_000_000), (5.0, 5.0));
        assert_eq!(t.position(9_000_000_000), (6.0, 5.0));
    }

    #[test]
    fn teleport_and_replace() {
        let mut t = Trajectory::from_triples(&[[0.0, 0.0, 0.0], [10.0, 100.0, 0.0]]).unwrap();
        t.teleport(5_000_000_000, 0.0, 900.0);
        assert_eq!(t.position(5_000_000_000), (0.0, 900.0));
        assert_eq!(t.position(2_000_000_000), (20.0, 0.0));
        t.replace_from(6_000_000_000, vec![Waypoint { t_ns: 7_000_000_000, x: 10.0, y: 900.0 }]);
        assert_eq!(t.position(6_500_000_000), (5.0, 900.0));
    }
}
