//! The engine's clocks: the wall clock (the default), or a virtual device clock on which
//! every I/O, foreground and background, is priced on a simulated device and the same
//! operations give the same times (DESIGN.md principles 3 and 4).
//!
//! In virtual mode ([`Clock::Virtual`]) the storage environment charges each read, write
//! and fsync to a [`VirtualClock`] instead of sleeping for a device profile, mapped reads
//! are off (every block-cache miss is a priced device read, as if no page cache stood
//! between), and the learned parts that read a clock (RusKey's missions, Bourbon's table
//! ages) read [`EngineClock`], which is then virtual time. Background work must run in the
//! caller's thread (`Options::background_work = false`, driven at fixed points of the
//! request stream) for runs to repeat exactly.

mod device;
mod timeline;

use std::cell::Cell;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

pub use device::{DeviceModel, IoOp};
pub use timeline::{DeviceStats, IoTally, VirtualClock, VirtualStats};

/// Which clock a database runs on (`Options::clock`).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Clock {
    /// Real time; tiers' device profiles add latency by sleeping.
    #[default]
    Wall,
    /// Virtual time on a simulated device: the model of every tier whose profile is
    /// `DeviceProfile::None`; a tier with the `Ssd` or `Hdd` profile keeps that device
    /// (`DeviceModel::ssd`, `hdd`), and a custom profile becomes a model of its figures.
    Virtual(DeviceModel),
}

impl Clock {
    /// Whether this is the virtual clock.
    pub fn is_virtual(&self) -> bool {
        matches!(self, Clock::Virtual(_))
    }
}

thread_local! {
    static BACKGROUND: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is doing background work (its I/O is queued on the
/// virtual device rather than charged to the foreground).
pub fn in_background() -> bool {
    BACKGROUND.with(Cell::get)
}

/// Marks the calling thread as doing background work until dropped (re-entrant).
pub struct BackgroundWork {
    prev: bool,
}

impl BackgroundWork {
    /// Enters background work.
    pub fn enter() -> Self {
        BackgroundWork {
            prev: BACKGROUND.with(|b| b.replace(true)),
        }
    }
}

impl Drop for BackgroundWork {
    fn drop(&mut self) {
        BACKGROUND.with(|b| b.set(self.prev));
    }
}

/// Times a request or a background job: wall time, or on the virtual clock the time the
/// foreground moved plus the device time of the background I/O queued meanwhile (a job
/// runs at once in the caller's thread; what it costs is its I/O's device time).
pub enum Stopwatch {
    /// Started at this instant.
    Wall(Instant),
    /// Started at these marks of the clock.
    Virtual(Arc<VirtualClock>, u64, u64),
}

impl Stopwatch {
    /// Nanoseconds since the start.
    pub fn elapsed_ns(&self) -> u64 {
        match self {
            Stopwatch::Wall(t) => t.elapsed().as_nanos() as u64,
            Stopwatch::Virtual(c, now0, bg0) => {
                let (now, bg) = c.marks();
                now.saturating_sub(*now0) + bg.saturating_sub(*bg0)
            }
        }
    }
}

/// The time the engine's learned parts read: time since an origin, on the wall clock
/// or on the database's virtual clock.
#[derive(Clone, Debug)]
pub enum EngineClock {
    /// Real time since the process's first reading.
    Wall,
    /// The foreground's virtual time.
    Virtual(Arc<VirtualClock>),
}

impl EngineClock {
    /// Time since the clock's origin.
    pub fn now(&self) -> Duration {
        match self {
            EngineClock::Wall => {
                static ORIGIN: OnceLock<Instant> = OnceLock::new();
                ORIGIN.get_or_init(Instant::now).elapsed()
            }
            EngineClock::Virtual(c) => Duration::from_nanos(c.now_ns()),
        }
    }

    /// Starts timing a request or a background job on this clock.
    pub fn stopwatch(&self) -> Stopwatch {
        match self {
            EngineClock::Wall => Stopwatch::Wall(Instant::now()),
            EngineClock::Virtual(c) => {
                let (now, bg) = c.marks();
                Stopwatch::Virtual(c.clone(), now, bg)
            }
        }
    }

    /// The virtual clock, if this is one.
    pub fn virtual_clock(&self) -> Option<&Arc<VirtualClock>> {
        match self {
            EngineClock::Virtual(c) => Some(c),
            EngineClock::Wall => None,
        }
    }
}

/// CPU time of the calling thread, nanoseconds.
pub(crate) fn thread_cpu_nanos() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec we pass; CLOCK_THREAD_CPUTIME_ID is
    // supported on every platform cairn builds on (Linux, macOS).
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}
