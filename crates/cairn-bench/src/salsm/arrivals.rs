//! Open-loop arrivals for SA-LSM's measured replay (`--salsm-arrival-rate`): the paper
//! drives its replay at a request rate from many clients (§4.3, Figs. 15-17), so a cold
//! tier that is busy makes requests queue, and the tail grows with the cold reads a
//! placement causes. A closed loop with one client has no such queue.
//!
//! Arrivals are a Poisson process on the virtual clock, seeded, so a rerun repeats.

use anyhow::{bail, Result};

use crate::rng::Rng;

/// The arrival times of an open-loop replay, nanoseconds of virtual time.
pub struct Arrivals {
    rng: Rng,
    mean_gap_ns: f64,
    next_ns: f64,
}

impl Arrivals {
    /// Arrivals at `rate` per second from `start_ns` on.
    pub fn new(rate: f64, seed: u64, start_ns: u64) -> Result<Arrivals> {
        if !(rate > 0.0 && rate.is_finite()) {
            bail!("--salsm-arrival-rate must be a positive number of ops per second");
        }
        Ok(Arrivals {
            rng: Rng::derive(seed, 0x0A11_1BA1),
            mean_gap_ns: 1e9 / rate,
            next_ns: start_ns as f64,
        })
    }

    /// The next request's arrival time.
    pub fn next_ns(&mut self) -> u64 {
        // An exponential gap; 1 - u is in (0, 1], so the log is finite.
        let gap = -(1.0 - self.rng.next_f64()).ln() * self.mean_gap_ns;
        self.next_ns += gap;
        self.next_ns as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrivals_keep_their_rate_in_order_and_repeat() {
        let mut a = Arrivals::new(1000.0, 7, 5_000).unwrap();
        let times: Vec<u64> = (0..20_000).map(|_| a.next_ns()).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
        assert!(times[0] >= 5_000);
        // 20,000 arrivals at 1,000/s take 20 s, within 3%.
        let secs = (times[times.len() - 1] - 5_000) as f64 / 1e9;
        assert!((secs - 20.0).abs() < 0.6, "{secs}");
        let mut b = Arrivals::new(1000.0, 7, 5_000).unwrap();
        assert_eq!(b.next_ns(), times[0]);
        assert!(Arrivals::new(0.0, 7, 0).is_err());
        assert!(Arrivals::new(f64::NAN, 7, 0).is_err());
    }
}
