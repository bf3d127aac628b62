//! `STATS.json`: the statistics of the last session, written when the database closes so
//! that tools (`cairn info`) can show them after the process is gone, and every
//! `Options::stats_dump_period_ms` while it runs, so they can follow it. Advisory: nothing
//! reads it back into the engine, and a failure to write it only logs a warning.

use std::path::Path;
use std::time::{Duration, Instant};

use super::DbInner;

use crate::stats::DbStats;
use crate::storage::{FileKind, StorageEnv};
use crate::{Error, Result};

pub(crate) use crate::filenames::STATS as STATS_FILE;

/// Writes `stats` as JSON: temporary file, fsync, rename, fsync of the directory.
pub(crate) fn save(env: &StorageEnv, root: &Path, stats: &DbStats) -> Result<()> {
    let json = serde_json::to_vec_pretty(stats)
        .map_err(|e| Error::InvalidArgument(format!("statistics do not serialize: {e}")))?;
    env.write_atomic(&root.join(STATS_FILE), FileKind::Other, &json)
}

impl DbInner {
    /// The stats thread: every `Options::stats_dump_period_ms`, [`Self::dump_stats`], until
    /// the database closes.
    pub(crate) fn stats_loop(&self) {
        let period = Duration::from_millis(self.opts.stats_dump_period_ms.max(1));
        loop {
            // The whole period: other threads' notifications do not cut it short.
            let until = Instant::now() + period;
            let mut bg = self.bg.lock();
            while !self.stopping() {
                if self.bg_cv.wait_until(&mut bg, until).timed_out() {
                    break;
                }
            }
            drop(bg);
            if self.stopping() {
                return;
            }
            self.dump_stats();
        }
    }

    /// Writes the statistics now to `STATS.json`, and their headline to the event log.
    pub(crate) fn dump_stats(&self) {
        let t = Instant::now();
        let s = self.stats_snapshot();
        // The snapshot is the part that takes locks the foreground also takes.
        let snapshot_micros = t.elapsed().as_micros();
        if let Err(e) = save(&self.env, &self.path, &s) {
            self.warn(format_args!("{STATS_FILE} not written: {e}"));
        }
        // The dump's own time (snapshot, JSON, write and fsyncs): what following a running
        // database costs, per period.
        let micros = t.elapsed().as_micros();
        let lookups = s.block_cache_hits + s.block_cache_misses;
        let hit = if lookups > 0 {
            s.block_cache_hits as f64 / lookups as f64
        } else {
            0.0
        };
        self.event(
            "stats",
            format_args!(
                "gets={} writes={} flushes={} compactions={} stall_micros={} \
                 block_cache_hit_ratio={hit:.4} background_errors={} snapshot_micros={snapshot_micros} \
                 micros={micros}",
                s.gets, s.writes, s.flushes, s.compactions, s.stall_micros, s.background_errors
            ),
        );
    }
}
