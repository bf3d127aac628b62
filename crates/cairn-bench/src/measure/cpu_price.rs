//! Priced CPU: the engine's CPU work on the virtual clock, from counts (per operation,
//! per table probed, per block searched and read, per model evaluated, per entry scanned)
//! times constants measured once on a machine by `cairn-bench calibrate` and kept in a
//! versioned file (`calibration/cpu-prices.json`). A rerun then charges the same CPU time
//! wherever it runs.

use anyhow::{bail, Context, Result};
use cairn::CpuCounts;
use serde::{Deserialize, Serialize};

/// The prices in force unless a run names another file.
const BUILT_IN: &str = include_str!("../../calibration/cpu-prices.json");

/// The file's format version.
pub const VERSION: u32 = 1;

/// Nanoseconds per counted unit of foreground work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Prices {
    /// Every request (the harness's and the engine's fixed cost).
    pub op: f64,
    /// Every point read (memtable probes, version pin).
    pub get: f64,
    /// Every entry written (WAL record, memtable insert).
    pub entry_written: f64,
    /// Every KiB of keys and values written (copies, checksums).
    pub kib_written: f64,
    /// Every table a point read probed (filter check).
    pub table_probed: f64,
    /// Every data block searched (cached or not).
    pub block_searched: f64,
    /// Every block read from storage (checksum, decode, cache insert).
    pub block_read: f64,
    /// Every lookup through a learned model.
    pub learned_lookup: f64,
    /// Every iterator created (merging set-up).
    pub iterator: f64,
    /// Every entry a scan returned.
    pub scan_entry: f64,
}

/// Unit counts of one stretch of foreground work, in the order of [`Prices`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Units(pub [f64; 10]);

impl Units {
    /// The units of `ops` requests that made engine counts `c` and scanned `scanned`.
    pub fn of(ops: u64, c: &CpuCounts, scanned: u64) -> Units {
        Units([
            ops as f64,
            c.gets as f64,
            c.entries_written as f64,
            c.user_bytes as f64 / 1024.0,
            c.tables_probed as f64,
            c.blocks_searched as f64,
            c.blocks_read as f64,
            c.learned_lookups as f64,
            c.iterators as f64,
            scanned as f64,
        ])
    }
}

impl Prices {
    /// The prices as a vector in [`Units`] order.
    pub fn to_vec(self) -> [f64; 10] {
        [
            self.op,
            self.get,
            self.entry_written,
            self.kib_written,
            self.table_probed,
            self.block_searched,
            self.block_read,
            self.learned_lookup,
            self.iterator,
            self.scan_entry,
        ]
    }

    /// Prices from a vector in [`Units`] order.
    pub fn from_vec(v: [f64; 10]) -> Prices {
        Prices {
            op: v[0],
            get: v[1],
            entry_written: v[2],
            kib_written: v[3],
            table_probed: v[4],
            block_searched: v[5],
            block_read: v[6],
            learned_lookup: v[7],
            iterator: v[8],
            scan_entry: v[9],
        }
    }

    /// Nanoseconds of CPU `u` costs.
    pub fn price(&self, u: &Units) -> f64 {
        self.to_vec().iter().zip(u.0).map(|(p, n)| p * n).sum()
    }
}

/// A calibration: the prices, and where and when they were measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PriceFile {
    pub version: u32,
    /// The machine and commit the constants were measured on, and the command.
    pub measured_on: String,
    pub commit: String,
    pub command: String,
    /// Nanoseconds of CPU per unit of background work: per KiB a flush or compaction read
    /// or wrote (reported apart; it runs beside the foreground).
    pub background_ns_per_kib: f64,
    pub prices: Prices,
    /// How close the prices came to measured CPU on each calibration workload.
    #[serde(default)]
    pub fit: Vec<FitRow>,
    /// The same, on runs the fit did not see (another seed, twice the records).
    #[serde(default)]
    pub validation: Vec<FitRow>,
}

/// One workload of a calibration: measured and priced foreground CPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FitRow {
    pub workload: String,
    pub ops: u64,
    pub measured_ns_per_op: f64,
    pub priced_ns_per_op: f64,
    /// The virtual clock's own bookkeeping (pricing each I/O and each request's CPU) as a
    /// share of the run's wall time.
    #[serde(default)]
    pub accounting_share: Option<f64>,
}

impl PriceFile {
    /// The built-in calibration.
    pub fn built_in() -> PriceFile {
        serde_json::from_str(BUILT_IN).expect("the built-in CPU price file parses")
    }

    /// Reads and checks a price file.
    pub fn load(path: &std::path::Path) -> Result<PriceFile> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let f: PriceFile = serde_json::from_str(&text)
            .with_context(|| format!("parsing CPU prices {}", path.display()))?;
        if f.version != VERSION {
            bail!(
                "{}: CPU price file version {} (this build reads {VERSION})",
                path.display(),
                f.version
            );
        }
        let all = f.prices.to_vec();
        if all
            .iter()
            .chain([&f.background_ns_per_kib])
            .any(|p| !(p.is_finite() && *p >= 0.0))
        {
            bail!(
                "{}: every price must be a finite number >= 0",
                path.display()
            );
        }
        Ok(f)
    }
}

/// Non-negative least squares by cyclic coordinate descent: the x >= 0 minimising
/// |A x - b|^2, for the handful of prices a calibration fits (rows: stretches of work,
/// columns: units). Rows are weighted by 1 / b so each workload counts by its relative
/// error rather than its size.
pub fn fit_nnls(rows: &[(Units, f64)]) -> [f64; 10] {
    let n = 10;
    let w: Vec<f64> = rows.iter().map(|(_, b)| 1.0 / b.max(1.0)).collect();
    let mut x = [0.0f64; 10];
    // Column norms, weighted.
    let norm: Vec<f64> = (0..n)
        .map(|j| {
            rows.iter()
                .zip(&w)
                .map(|((u, _), w)| (u.0[j] * w).powi(2))
                .sum()
        })
        .collect();
    let mut resid: Vec<f64> = rows.iter().zip(&w).map(|((_, b), w)| b * w).collect();
    for _ in 0..20_000 {
        let mut moved = 0.0f64;
        for j in 0..n {
            if norm[j] == 0.0 {
                continue;
            }
            let g: f64 = rows
                .iter()
                .zip(&w)
                .zip(&resid)
                .map(|(((u, _), w), r)| u.0[j] * w * r)
                .sum();
            let new = (x[j] + g / norm[j]).max(0.0);
            let d = new - x[j];
            if d != 0.0 {
                for ((r, (u, _)), w) in resid.iter_mut().zip(rows).zip(&w) {
                    *r -= d * u.0[j] * w;
                }
                x[j] = new;
                moved = moved.max(d.abs());
            }
        }
        if moved < 1e-9 {
            break;
        }
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_prices_parse_and_price_linearly() {
        let f = PriceFile::built_in();
        assert_eq!(f.version, VERSION);
        let p = Prices {
            op: 100.0,
            block_read: 1000.0,
            ..Default::default()
        };
        let c = CpuCounts {
            blocks_read: 3,
            ..Default::default()
        };
        assert_eq!(p.price(&Units::of(2, &c, 0)), 3200.0);
    }

    #[test]
    fn nnls_recovers_prices_and_keeps_them_non_negative() {
        let truth = [
            500.0, 200.0, 0.0, 30.0, 50.0, 300.0, 2000.0, 0.0, 800.0, 40.0,
        ];
        let mut rows = Vec::new();
        for i in 0..40u64 {
            let mut u = [0.0; 10];
            for (j, v) in u.iter_mut().enumerate() {
                *v = ((i * 7 + j as u64 * 13) % 11) as f64 * 100.0;
            }
            let b: f64 = u.iter().zip(truth).map(|(a, p)| a * p).sum();
            rows.push((Units(u), b));
        }
        let x = fit_nnls(&rows);
        for (got, want) in x.iter().zip(truth) {
            assert!((got - want).abs() < 1.0, "{x:?}");
        }
        // A target no non-negative mix reaches: prices stay >= 0.
        let x = fit_nnls(&[(Units([1.0; 10]), 0.0)]);
        assert!(x.iter().all(|v| *v >= 0.0));
    }
}
