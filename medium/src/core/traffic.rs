//! Saturated sources (config `saturated`, virtual mode): each source offers its next frame as
//! soon as the previous one completes, so its queue is never empty (Bianchi's saturation).

use super::Medium;
use crate::BROADCAST;

impl Medium {
    /// Start the saturated sources (virtual mode).
    pub fn start_saturated(&mut self) {
        let mut srcs: Vec<usize> = self.saturated.keys().copied().collect();
        srcs.sort();
        for s in srcs {
            self.offer_saturated(s);
        }
    }

    pub(super) fn offer_saturated(&mut self, s: usize) {
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
}
