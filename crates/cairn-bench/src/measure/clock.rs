//! The harness's time: the wall clock, or, for a run on cairn's virtual device clock, the
//! engine's virtual time, so that every latency, throughput, timeline and mission of such
//! a run is in virtual time.
//!
//! Timestamps stay `Instant`s: a virtual time is the run's start plus the virtual
//! nanoseconds, so the measurement code is the same on both clocks. The virtual clock is
//! installed for the length of one run ([`VirtualRun::install`]); one run at a time uses
//! it (a virtual run has one thread).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use cairn::clock::VirtualStats;
use cairn::{CpuCounts, VirtualClock};
use parking_lot::RwLock;
use serde::{Deserialize, Serialize};

use super::cpu_price::{PriceFile, Prices, Units};
use crate::engines::Engine;

static ACTIVE: AtomicBool = AtomicBool::new(false);
static CLOCK: RwLock<Option<(Instant, Arc<VirtualClock>)>> = RwLock::new(None);

/// The harness's current time: the wall clock, or the virtual clock of the run in
/// progress.
pub fn now() -> Instant {
    if ACTIVE.load(Ordering::Acquire) {
        if let Some((base, c)) = &*CLOCK.read() {
            return *base + Duration::from_nanos(c.now_ns());
        }
    }
    Instant::now()
}

/// The Unix time virtual runs start at (2023-11-14): access statistics' slots then fall
/// at the same virtual times in every rerun.
pub const VIRTUAL_EPOCH_MS: u64 = 1_700_000_000_000;

/// Milliseconds since the Unix epoch on the virtual run's time: the epoch plus the
/// virtual clock's time (the epoch alone before a virtual run is installed).
pub fn virtual_unix_ms() -> u64 {
    let ns = match &*CLOCK.read() {
        Some((_, c)) => c.now_ns(),
        None => 0,
    };
    VIRTUAL_EPOCH_MS + ns / 1_000_000
}

/// When background work queued so far will be done: now on the wall clock (the work
/// ran); on the virtual clock, once the device has served its backlog (the job ran at
/// once in the caller's thread, its I/O is still queued).
pub fn background_done() -> Instant {
    if ACTIVE.load(Ordering::Acquire) {
        if let Some((base, c)) = &*CLOCK.read() {
            return *base + Duration::from_nanos(c.now_ns() + c.backlog_ns());
        }
    }
    Instant::now()
}

/// CPU time of the whole process, nanoseconds. A virtual run has no thread but the
/// request thread at work (no background threads, no sampler; the main thread waits), so
/// this is the request thread's, fixed-point background work included.
pub fn process_cpu_ns() -> u64 {
    let t = super::rss::CpuTime::now();
    ((t.user_s + t.sys_s) * 1e9) as u64
}

/// Thread CPU time of the caller, nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    // SAFETY: clock_gettime writes only the timespec handed to it.
    unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        if libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) != 0 {
            return 0;
        }
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }
}

/// What a virtual run reports beside its virtual times.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VirtualReport {
    /// The device of each tier, the prices' provenance, the fixed-point period.
    pub devices: Vec<cairn::DeviceModel>,
    pub cpu_prices: String,
    pub bg_every_ops: u64,
    /// The measured phase on the virtual clock: foreground time, priced CPU, device
    /// time by who issued it, queue waits and stalls, per device and kind of I/O.
    pub measured: VirtualStats,
    /// Priced CPU of the background work (flushes, compactions), reported apart: it runs
    /// beside the foreground and is not on its time line.
    pub background_cpu_ns: u64,
    /// The units the foreground's CPU was priced from, under the price file's names (the
    /// requests, point reads, entries written, ...): what a calibration fits.
    pub cpu_units: Prices,
    /// Measured CPU of the foreground's own work (the process's, fixed-point background
    /// work excluded), to set against `measured.cpu_ns` (wall-time field: differs by run).
    pub measured_foreground_cpu_ns: u64,
    /// Measured thread CPU of the fixed-point background work (wall-time field).
    pub measured_background_cpu_ns: u64,
    /// Wall seconds the measured phase took (wall-time field).
    pub wall_seconds: f64,
}

/// Drives one run on the virtual clock: charges each request's priced CPU, runs the
/// engine's background work every `bg_every_ops` requests, keeps the tallies.
pub struct VirtualRun {
    pub clock: Arc<VirtualClock>,
    prices: PriceFile,
    prices_name: String,
    bg_every: u64,
    state: parking_lot::Mutex<RunState>,
}

#[derive(Default)]
struct RunState {
    last: CpuCounts,
    last_scanned: u64,
    ops: u64,
    units: [f64; 10],
    background_cpu_ns: f64,
    bg_thread_ns: u64,
    start_thread_ns: u64,
    start_wall: Option<Instant>,
    start_stats: VirtualStats,
}

/// Uninstalls the virtual clock when the run ends.
pub struct Installed;

impl Drop for Installed {
    fn drop(&mut self) {
        ACTIVE.store(false, Ordering::Release);
        *CLOCK.write() = None;
    }
}

impl VirtualRun {
    /// The driver of `engine`'s virtual clock, or None when it runs on the wall clock.
    pub fn of(
        engine: &dyn Engine,
        prices: Option<(PriceFile, String)>,
        bg_every: u64,
    ) -> Option<VirtualRun> {
        let clock = engine.virtual_clock()?;
        let (prices, prices_name) =
            prices.unwrap_or_else(|| (PriceFile::built_in(), "built-in".to_string()));
        Some(VirtualRun {
            clock,
            prices,
            prices_name,
            bg_every: bg_every.max(1),
            state: parking_lot::Mutex::new(RunState::default()),
        })
    }

    /// Makes [`now`] read this run's virtual clock until the guard drops.
    pub fn install(&self) -> Installed {
        *CLOCK.write() = Some((Instant::now(), self.clock.clone()));
        ACTIVE.store(true, Ordering::Release);
        Installed
    }

    /// Starts the measured phase: tallies count from here.
    pub fn begin(&self, engine: &dyn Engine, scanned: u64) {
        let mut s = self.state.lock();
        s.last = engine.cpu_counts().unwrap_or_default();
        s.last_scanned = scanned;
        s.background_cpu_ns = 0.0;
        s.bg_thread_ns = 0;
        s.ops = 0;
        s.units = [0.0; 10];
        s.start_thread_ns = process_cpu_ns();
        s.start_wall = Some(Instant::now());
        s.start_stats = self.clock.stats();
    }

    /// After one request: charges its priced CPU to the foreground (`scanned`: entries
    /// scanned so far in the run).
    pub fn after_op(&self, engine: &dyn Engine, scanned: u64) {
        let mut s = self.state.lock();
        let c = engine.cpu_counts().unwrap_or_default();
        let d = c.since(&s.last);
        let u = Units::of(1, &d, scanned.saturating_sub(s.last_scanned));
        let ns = self.prices.prices.price(&u);
        for (a, b) in s.units.iter_mut().zip(u.0) {
            *a += b;
        }
        s.background_cpu_ns +=
            d.background_bytes as f64 / 1024.0 * self.prices.background_ns_per_kib;
        s.last = c;
        s.last_scanned = scanned;
        s.ops += 1;
        drop(s);
        self.clock.charge_cpu(ns.round() as u64);
    }

    /// At a fixed point (every `bg_every_ops` requests), runs the engine's background
    /// work in this thread; its I/O queues on the device, its CPU is priced apart.
    pub fn fixed_point(&self, engine: &dyn Engine) -> Result<()> {
        if !self.state.lock().ops.is_multiple_of(self.bg_every) {
            return Ok(());
        }
        self.background(engine)
    }

    /// Runs the engine's background work now.
    pub fn background(&self, engine: &dyn Engine) -> Result<()> {
        let t = thread_cpu_ns();
        let r = engine.run_background_work();
        let spent = thread_cpu_ns().saturating_sub(t);
        let mut s = self.state.lock();
        s.bg_thread_ns += spent;
        let c = engine.cpu_counts().unwrap_or_default();
        let d = c.since(&s.last);
        s.background_cpu_ns +=
            d.background_bytes as f64 / 1024.0 * self.prices.background_ns_per_kib;
        s.last = c;
        r
    }

    /// Runs the background work due and waits until the device has done it (a quiet
    /// tree, as `settle` waits on the wall clock).
    pub fn settle(&self, engine: &dyn Engine) -> Result<Instant> {
        self.background(engine)?;
        self.clock.wait_for_background();
        Ok(now())
    }

    /// The report of the measured phase with each timeline window's I/O.
    pub fn report_with(
        &self,
        rows: &[super::timeline::TimelineRow],
    ) -> crate::report::json::VirtualClockReport {
        crate::report::json::VirtualClockReport {
            run: self.report(),
            windows: rows
                .iter()
                .filter_map(|r| {
                    Some(crate::report::json::WindowIo {
                        second: r.second,
                        ops: r.ops,
                        io: r.io.clone()?,
                    })
                })
                .collect(),
        }
    }

    /// The report of the measured phase so far.
    pub fn report(&self) -> VirtualReport {
        let s = self.state.lock();
        let stats = self.clock.stats();
        VirtualReport {
            devices: stats
                .devices
                .iter()
                .filter_map(|d| d.model.clone())
                .collect(),
            cpu_prices: format!("{} ({})", self.prices_name, self.prices.measured_on),
            bg_every_ops: self.bg_every,
            measured: stats.since(&s.start_stats),
            background_cpu_ns: s.background_cpu_ns.round() as u64,
            cpu_units: Prices::from_vec(s.units),
            measured_foreground_cpu_ns: process_cpu_ns()
                .saturating_sub(s.start_thread_ns)
                .saturating_sub(s.bg_thread_ns),
            measured_background_cpu_ns: s.bg_thread_ns,
            wall_seconds: s.start_wall.map_or(0.0, |t| t.elapsed().as_secs_f64()),
        }
    }
}
