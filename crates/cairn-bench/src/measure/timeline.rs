//! Per-second timeline: workers publish op counts and latencies, a sampler thread turns
//! them into one row per second along with the engine's background-work gauges.

use super::latency::new_histogram;
use crate::engines::{Engine, EngineCounters, ReadCacheGauges};
use hdrhistogram::Histogram;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Shared between workers (writers) and the sampler (reader).
pub struct Live {
    ops: AtomicU64,
    interval: Mutex<Histogram<u64>>,
    pub stop: AtomicBool,
    /// On the virtual clock: the sampler the request loop drives (no sampler thread).
    pub inline: Mutex<Option<Sampler>>,
}

impl Default for Live {
    fn default() -> Self {
        Live {
            ops: AtomicU64::new(0),
            interval: Mutex::new(new_histogram()),
            stop: AtomicBool::new(false),
            inline: Mutex::new(None),
        }
    }
}

impl Live {
    pub fn record(&self, nanos: u64) {
        self.ops.fetch_add(1, Ordering::Relaxed);
        self.interval.lock().saturating_record(nanos.max(1));
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimelineRow {
    /// End of the interval, seconds since the measured phase began.
    pub second: f64,
    pub ops: u64,
    pub qps: f64,
    pub p95_us: f64,
    /// Block cache hit ratio within the interval; empty when no cache lookups happened.
    pub cache_hit_ratio: Option<f64>,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub flushes_running: u64,
    pub compactions_running: u64,
    /// Read-cache component sizes at the end of the interval (engines that report them).
    pub cache_sizes: Option<CacheSizes>,
    /// Block cache hits and misses within the interval.
    #[serde(default)]
    pub cache_hits: u64,
    #[serde(default)]
    pub cache_misses: u64,
    /// Invalidation misses counted within the interval (engines that count them).
    #[serde(default)]
    pub invalidation_misses: u64,
    /// On the virtual clock: the interval's I/O by device, issuer and kind, its priced
    /// CPU, queue waits and stalls (what `cairn-bench reprice` prices again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io: Option<cairn::clock::VirtualStats>,
    /// The interval's latencies (in memory only: merged over job windows for their p95
    /// and p99; not in the CSV).
    #[serde(skip)]
    pub latencies: Option<Box<RowLatencies>>,
}

/// One interval's latencies, kept sparse at two significant digits: the values recorded
/// and their counts. A dense three-digit histogram per 100 ms row was 270 KB, so the
/// harness's memory grew 2.7 MB a second of any run, and every engine's peak RSS (the
/// whole process's) with it, more for a slower engine.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RowLatencies(Vec<(u64, u64)>);

impl RowLatencies {
    /// `h`'s values, each rounded to two significant digits (1%).
    pub fn of(h: &Histogram<u64>) -> RowLatencies {
        let mut coarse = crate::measure::latency::new_histogram_digits(2);
        for v in h.iter_recorded() {
            let _ = coarse.record_n(v.value_iterated_to(), v.count_at_value());
        }
        RowLatencies(
            coarse
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect(),
        )
    }

    /// Records these latencies into `h`.
    pub fn add_to(&self, h: &mut Histogram<u64>) {
        for &(v, n) in &self.0 {
            let _ = h.record_n(v, n);
        }
    }
}

/// Bytes held by each read-cache component (AC-Key's Fig. 12).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CacheSizes {
    pub kv: u64,
    pub kp: u64,
    pub block: u64,
    pub ghost: u64,
}

impl CacheSizes {
    fn of(g: &ReadCacheGauges) -> CacheSizes {
        CacheSizes {
            kv: g.kv_bytes,
            kp: g.kp_bytes,
            block: g.block_bytes,
            ghost: g.ghost_bytes,
        }
    }
}

/// Samples every `period` from `start` until `live.stop` is set; the last row covers the
/// tail. Runs in a thread of its own, on the wall clock.
pub fn sample(
    engine: &dyn Engine,
    live: &Live,
    period: Duration,
    start: Instant,
) -> Vec<TimelineRow> {
    let mut s = Sampler::new(engine, period, start);
    loop {
        let next = s.next();
        while Instant::now() < next && !live.stop.load(Ordering::Acquire) {
            std::thread::sleep(
                Duration::from_millis(20).min(next.saturating_duration_since(Instant::now())),
            );
        }
        let stopping = live.stop.load(Ordering::Acquire);
        s.take(engine, live, Instant::now(), stopping);
        if stopping {
            return s.rows;
        }
    }
}

/// The timeline's state between rows. On the virtual clock the request loop drives it
/// ([`Sampler::poll`]), so rows fall at the same virtual times in every rerun.
pub struct Sampler {
    start: Instant,
    period: Duration,
    last_t: Instant,
    last_ops: u64,
    last_c: EngineCounters,
    last_v: Option<cairn::clock::VirtualStats>,
    pub rows: Vec<TimelineRow>,
}

impl Sampler {
    pub fn new(engine: &dyn Engine, period: Duration, start: Instant) -> Sampler {
        Sampler {
            start,
            period,
            last_t: start,
            last_ops: 0,
            last_c: engine.counters(),
            last_v: engine.virtual_clock().map(|c| c.stats()),
            rows: Vec::new(),
        }
    }

    /// When the next row is due.
    pub fn next(&self) -> Instant {
        self.last_t + self.period
    }

    /// Takes a row if one is due at `now`.
    pub fn poll(&mut self, engine: &dyn Engine, live: &Live, now: Instant) {
        if now >= self.next() {
            self.take(engine, live, now, false);
        }
    }

    /// Takes the row that ends at `now` (the last one when `stopping`).
    pub fn take(&mut self, engine: &dyn Engine, live: &Live, now: Instant, stopping: bool) {
        let ops = live.ops.load(Ordering::Relaxed);
        let hist = std::mem::replace(&mut *live.interval.lock(), new_histogram());
        let c = engine.counters();
        let v = engine.virtual_clock().map(|c| c.stats());
        let dt = now.duration_since(self.last_t).as_secs_f64();
        if ops > self.last_ops || !stopping {
            let mut r = row(
                now.duration_since(self.start).as_secs_f64(),
                ops - self.last_ops,
                dt,
                &hist,
                &c.since(&self.last_c),
            );
            r.cache_sizes = engine.read_cache().as_ref().map(CacheSizes::of);
            r.latencies = Some(Box::new(RowLatencies::of(&hist)));
            r.io = match (&v, &self.last_v) {
                (Some(v), Some(l)) => Some(v.since(l)),
                _ => None,
            };
            self.rows.push(r);
        }
        (self.last_t, self.last_ops, self.last_c, self.last_v) = (now, ops, c, v);
    }
}

fn row(second: f64, ops: u64, dt: f64, hist: &Histogram<u64>, d: &EngineCounters) -> TimelineRow {
    let lookups = d.cache_hits + d.cache_misses;
    TimelineRow {
        second,
        ops,
        qps: if dt > 0.0 { ops as f64 / dt } else { 0.0 },
        p95_us: if hist.is_empty() {
            0.0
        } else {
            hist.value_at_quantile(0.95) as f64 / 1000.0
        },
        cache_hit_ratio: (lookups > 0).then(|| d.cache_hits as f64 / lookups as f64),
        read_bytes: d.read_bytes,
        write_bytes: d.write_bytes,
        flushes_running: d.flushes_running,
        compactions_running: d.compactions_running,
        cache_sizes: None,
        cache_hits: d.cache_hits,
        cache_misses: d.cache_misses,
        invalidation_misses: d.invalidation_misses,
        io: None,
        latencies: None,
    }
}

pub const CSV_HEADER: &str =
    "second,ops,qps,p95_us,cache_hit_ratio,read_bytes,write_bytes,flushes_running,compactions_running,\
     kv_cache_bytes,kp_cache_bytes,block_cache_bytes,ghost_cache_bytes,\
     cache_hits,cache_misses,invalidation_misses";

pub fn to_csv(rows: &[TimelineRow]) -> String {
    let mut s = String::from(CSV_HEADER);
    s.push('\n');
    for r in rows {
        s.push_str(&format!(
            "{:.3},{},{:.1},{:.2},{},{},{},{},{},{},{},{},{}\n",
            r.second,
            r.ops,
            r.qps,
            r.p95_us,
            r.cache_hit_ratio
                .map(|x| format!("{x:.4}"))
                .unwrap_or_default(),
            r.read_bytes,
            r.write_bytes,
            r.flushes_running,
            r.compactions_running,
            r.cache_sizes.map_or(",,,".to_string(), |c| format!(
                "{},{},{},{}",
                c.kv, c.kp, c.block, c.ghost
            )),
            r.cache_hits,
            r.cache_misses,
            r.invalidation_misses,
        ));
    }
    s
}

pub fn from_csv(s: &str) -> anyhow::Result<Vec<TimelineRow>> {
    use anyhow::Context;
    let mut rows = Vec::new();
    for line in s.lines().skip(1).filter(|l| !l.is_empty()) {
        let f: Vec<&str> = line.split(',').collect();
        // 9 fields: written before the cache-size columns existed; 13: before the
        // hit/miss counts.
        anyhow::ensure!(
            f.len() == 9 || f.len() == 13 || f.len() == 16,
            "timeline row `{line}` has {} fields",
            f.len()
        );
        rows.push(TimelineRow {
            second: f[0].parse().context("second")?,
            ops: f[1].parse().context("ops")?,
            qps: f[2].parse().context("qps")?,
            p95_us: f[3].parse().context("p95")?,
            cache_hit_ratio: if f[4].is_empty() {
                None
            } else {
                Some(f[4].parse()?)
            },
            read_bytes: f[5].parse()?,
            write_bytes: f[6].parse()?,
            flushes_running: f[7].parse()?,
            compactions_running: f[8].parse()?,
            cache_sizes: match f.get(9..13) {
                Some(c) if c.iter().all(|x| !x.is_empty()) => Some(CacheSizes {
                    kv: c[0].parse().context("kv_cache_bytes")?,
                    kp: c[1].parse().context("kp_cache_bytes")?,
                    block: c[2].parse().context("block_cache_bytes")?,
                    ghost: c[3].parse().context("ghost_cache_bytes")?,
                }),
                _ => None,
            },
            cache_hits: f
                .get(13)
                .map_or(Ok(0), |x| x.parse())
                .context("cache_hits")?,
            cache_misses: f
                .get(14)
                .map_or(Ok(0), |x| x.parse())
                .context("cache_misses")?,
            invalidation_misses: f
                .get(15)
                .map_or(Ok(0), |x| x.parse())
                .context("invalidation_misses")?,
            io: None,
            latencies: None,
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_latencies_are_small_and_keep_quantiles_to_one_percent() {
        let mut h = crate::measure::latency::new_histogram();
        let mut x: u64 = 12345;
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            h.record(2_000 + (x >> 33) % 60_000).unwrap();
        }
        h.record(5_000_000).unwrap();
        let row = RowLatencies::of(&h);
        assert!(row.0.len() < 1000, "{} values kept", row.0.len());
        let mut back = crate::measure::latency::new_histogram();
        row.add_to(&mut back);
        assert_eq!(back.len(), h.len());
        for q in [0.5, 0.95, 0.99, 1.0] {
            let (a, b) = (
                h.value_at_quantile(q) as f64,
                back.value_at_quantile(q) as f64,
            );
            assert!((a - b).abs() <= a * 0.01, "q {q}: {a} against {b}");
        }
    }

    #[test]
    fn csv_round_trips() {
        let rows = vec![
            TimelineRow {
                second: 1.0,
                ops: 10,
                qps: 10.0,
                p95_us: 3.5,
                cache_hit_ratio: Some(0.5),
                read_bytes: 4096,
                write_bytes: 0,
                flushes_running: 1,
                compactions_running: 0,
                cache_sizes: Some(CacheSizes {
                    kv: 100,
                    kp: 20,
                    block: 4096,
                    ghost: 8,
                }),
                cache_hits: 30,
                cache_misses: 7,
                invalidation_misses: 2,
                io: None,
                latencies: None,
            },
            TimelineRow {
                second: 1.5,
                ops: 2,
                qps: 4.0,
                ..Default::default()
            },
        ];
        let csv = to_csv(&rows);
        assert!(csv.starts_with(CSV_HEADER));
        assert!(CSV_HEADER
            .contains("kv_cache_bytes,kp_cache_bytes,block_cache_bytes,ghost_cache_bytes"));
        assert!(CSV_HEADER.ends_with("cache_hits,cache_misses,invalidation_misses"));
        assert!(csv.contains(",100,20,4096,8,30,7,2\n"), "{csv}");
        assert_eq!(from_csv(&csv).unwrap(), rows);
        // Files written before the cache columns still load.
        let old = "h\n1.000,10,10.0,3.50,0.5000,4096,0,1,0\n";
        assert_eq!(from_csv(old).unwrap()[0].cache_sizes, None);
    }
}
