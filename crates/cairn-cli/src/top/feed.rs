//! What `cairn top` shows, read from the database's `STATS.json`: the statistics the
//! engine writes every `stats_dump_period_ms` (and at close), kept as a short history so
//! that counters become rates.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use cairn::DbStats;

/// Samples kept: enough for a sparkline across a wide terminal.
const HISTORY: usize = 240;

/// One statistics dump and when it was written (seconds, any fixed origin).
pub struct Sample {
    pub at: f64,
    pub stats: DbStats,
}

/// The dumps seen so far, oldest first.
pub struct Feed {
    file: PathBuf,
    last_mtime: Option<SystemTime>,
    samples: VecDeque<Sample>,
    /// Why the last read failed (no file yet, a file being replaced), shown in the view.
    pub problem: Option<String>,
}

impl Feed {
    /// The feed of the database in `db`.
    pub fn new(db: &Path) -> Feed {
        Feed {
            file: db.join(cairn::filenames::STATS),
            last_mtime: None,
            samples: VecDeque::new(),
            problem: None,
        }
    }

    /// The database's `STATS.json`.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Reads `STATS.json` if it changed since the last read; true when a new sample came.
    pub fn poll(&mut self) -> bool {
        let mtime = match std::fs::metadata(&self.file).and_then(|m| m.modified()) {
            Ok(t) => t,
            Err(e) => {
                self.problem = Some(format!("{}: {e}", self.file.display()));
                return false;
            }
        };
        if self.last_mtime == Some(mtime) {
            return false;
        }
        let read = std::fs::read(&self.file)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice::<DbStats>(&b).map_err(|e| e.to_string()));
        match read {
            Ok(stats) => {
                self.last_mtime = Some(mtime);
                self.problem = None;
                let at = mtime
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map_or(0.0, |d| d.as_secs_f64());
                self.push(at, stats);
                true
            }
            // The engine replaces the file atomically, so this is a damaged or foreign
            // file: say so and keep the last good sample.
            Err(e) => {
                self.problem = Some(format!("{}: {e}", self.file.display()));
                false
            }
        }
    }

    /// Adds a sample (what `poll` does with each new dump).
    pub fn push(&mut self, at: f64, stats: DbStats) {
        if self.samples.len() == HISTORY {
            self.samples.pop_front();
        }
        self.samples.push_back(Sample { at, stats });
    }

    /// The newest sample.
    pub fn latest(&self) -> Option<&Sample> {
        self.samples.back()
    }

    /// How much `counter` grew per second between the last two samples (`None` before
    /// two, or when the database reopened and its counters started again).
    pub fn rate(&self, counter: impl Fn(&DbStats) -> u64) -> Option<f64> {
        let n = self.samples.len();
        if n < 2 {
            return None;
        }
        per_second(&self.samples[n - 2], &self.samples[n - 1], &counter)
    }

    /// How much `counter` grew between the last two samples (`None` as for [`Feed::rate`]).
    pub fn delta(&self, counter: impl Fn(&DbStats) -> u64) -> Option<u64> {
        let n = self.samples.len();
        if n < 2 {
            return None;
        }
        let (a, b) = (
            counter(&self.samples[n - 2].stats),
            counter(&self.samples[n - 1].stats),
        );
        b.checked_sub(a)
    }

    /// `counter`'s rate over each interval of the history, oldest first (0 where the
    /// counters started again).
    pub fn series(&self, counter: impl Fn(&DbStats) -> u64) -> Vec<u64> {
        let s = &self.samples;
        (1..s.len())
            .map(|i| {
                per_second(&s[i - 1], &s[i], &counter)
                    .unwrap_or(0.0)
                    .round() as u64
            })
            .collect()
    }
}

fn per_second(a: &Sample, b: &Sample, counter: &impl Fn(&DbStats) -> u64) -> Option<f64> {
    let grew = counter(&b.stats).checked_sub(counter(&a.stats))?;
    let secs = b.at - a.at;
    (secs > 0.0).then(|| grew as f64 / secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(gets: u64) -> DbStats {
        DbStats {
            gets,
            ..Default::default()
        }
    }

    #[test]
    fn counters_become_rates_and_a_reopen_is_not_a_negative_rate() {
        let mut f = Feed::new(Path::new("/nonexistent"));
        assert_eq!(f.rate(|s| s.gets), None);
        f.push(10.0, stats(100));
        f.push(12.0, stats(500));
        assert_eq!(f.rate(|s| s.gets), Some(200.0));
        assert_eq!(f.delta(|s| s.gets), Some(400));
        f.push(13.0, stats(10)); // reopened: counters start again
        assert_eq!(f.rate(|s| s.gets), None);
        assert_eq!(f.series(|s| s.gets), vec![200, 0]);
    }

    #[test]
    fn a_missing_or_foreign_file_is_a_problem_not_a_sample() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = Feed::new(dir.path());
        assert!(!f.poll());
        assert!(f.problem.is_some());
        std::fs::write(dir.path().join("STATS.json"), b"not json").unwrap();
        assert!(!f.poll());
        assert!(f.problem.as_deref().unwrap().contains("STATS.json"));
        assert!(f.latest().is_none());
        let json = serde_json::to_vec(&stats(7)).unwrap();
        std::fs::write(dir.path().join("STATS.json"), json).unwrap();
        assert!(f.poll());
        assert_eq!(f.latest().unwrap().stats.gets, 7);
        assert!(f.problem.is_none());
        assert!(!f.poll(), "an unchanged file is no new sample");
    }
}
