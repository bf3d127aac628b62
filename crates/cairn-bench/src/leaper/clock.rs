//! A wall clock that stops while the harness trains the model, so the access statistics'
//! time slots run on without a gap of empty slots (the learner's history features would
//! otherwise read zeros right when the measured part starts).

use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct PausableClock {
    /// Reads the run's virtual time (from a fixed epoch) instead of the wall clock.
    virtual_time: bool,
    /// Milliseconds spent paused, subtracted from the wall clock.
    paused_total: AtomicU64,
    /// Wall time at which the current pause began.
    paused_at: Mutex<Option<u64>>,
}

fn wall_ms() -> u64 {
    cairn::access::Clock::now_ms(&cairn::access::SystemClock)
}

impl PausableClock {
    pub fn new() -> Self {
        Self::default()
    }

    /// A clock on the run's virtual time: a fixed epoch until the virtual clock is
    /// installed, then the epoch plus virtual time, so slots fall alike in every rerun.
    pub fn on_virtual_time() -> Self {
        PausableClock {
            virtual_time: true,
            ..Self::default()
        }
    }

    fn base_ms(&self) -> u64 {
        if self.virtual_time {
            crate::measure::clock::virtual_unix_ms()
        } else {
            wall_ms()
        }
    }

    /// Stops the clock (no-op when stopped).
    pub fn pause(&self) {
        let mut p = self.paused_at.lock();
        if p.is_none() {
            *p = Some(self.base_ms());
        }
    }

    /// Starts it again where it stopped.
    pub fn resume(&self) {
        let mut p = self.paused_at.lock();
        if let Some(at) = p.take() {
            self.paused_total
                .fetch_add(self.base_ms().saturating_sub(at), Ordering::Relaxed);
        }
    }

    /// Milliseconds the clock has stood still so far.
    pub fn paused_ms(&self) -> u64 {
        self.paused_total.load(Ordering::Relaxed)
    }
}

impl cairn::access::Clock for PausableClock {
    fn now_ms(&self) -> u64 {
        let p = self.paused_at.lock();
        let now = p.unwrap_or_else(|| self.base_ms());
        now.saturating_sub(self.paused_total.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn::access::Clock;

    #[test]
    fn stands_still_while_paused() {
        let c = PausableClock::new();
        let a = c.now_ms();
        c.pause();
        let b = c.now_ms();
        std::thread::sleep(std::time::Duration::from_millis(30));
        assert_eq!(c.now_ms(), b);
        c.resume();
        let d = c.now_ms();
        assert!(d >= b && d < b + 25, "{a} {b} {d}");
        assert!(c.paused_ms() >= 30);
    }
}
