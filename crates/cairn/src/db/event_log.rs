//! The event log `LOG` in the database directory, as RocksDB's info log: one line per
//! event, `<UTC time> <event> key=value ...`, for a person reading what the engine did.
//! It records the options at open, each flush and compaction with its sizes and time,
//! background errors, write stalls, warnings, and the learned parts' decisions (RusKey's
//! K changes, SA-LSM's cold sets and proactive compactions, AC-Key's cache split).
//!
//! Each open starts a new `LOG` once it succeeds (until then lines wait in memory, so a
//! refused open leaves the directory as it was), the previous one renamed
//! `LOG.old.<micros>`; so does a `LOG` grown past `Options::max_log_file_size`. `Options::keep_log_file_num` old logs
//! are kept. The log is advisory: it is not synced, and a failure to write it is counted
//! in no statistic and stops nothing (the line is dropped). Read-only opens write none.

use std::collections::HashMap;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

use crate::events::{CompactionInfo, EventListener, FlushInfo, OutputFile};
use crate::ids::CfId;
use crate::ids::FileNo;

// The event log's name, and the prefix of rotated logs (the rotation time in
// microseconds follows it).
pub use crate::filenames::EVENT_LOG as LOG_FILE;
use crate::filenames::OLD_EVENT_LOG_PREFIX as OLD_PREFIX;

/// The open event log of one database.
pub(crate) struct EventLog {
    dir: PathBuf,
    /// Rotate past this many bytes (0: never, but at each open).
    max_bytes: u64,
    /// Rotated logs kept.
    keep: usize,
    file: Mutex<LogFile>,
    /// When each running job began, to report its time at its end.
    started: Mutex<HashMap<JobKey, Instant>>,
    /// The learned parts' gauges as last logged.
    last: Mutex<HashMap<&'static str, u64>>,
}

/// Where lines go.
enum LogFile {
    /// The open has not succeeded yet: lines wait here.
    Pending(Vec<String>),
    /// `LOG` and its size.
    Open(File, u64),
    /// `LOG` could not be opened: lines are dropped.
    Closed,
}

/// Lines kept while an open is pending (a long WAL replay flushes often).
const MAX_PENDING: usize = 10_000;

/// A running flush (family, memtable) or compaction (family, first input file).
#[derive(Clone, Copy, Hash, PartialEq, Eq)]
enum JobKey {
    Flush(CfId, u64),
    Compaction(CfId, FileNo),
}

impl EventLog {
    /// The event log of the database in `dir`; lines wait in memory until
    /// [`start`](Self::start).
    pub(crate) fn open(dir: &Path, max_bytes: u64, keep: usize) -> EventLog {
        EventLog {
            dir: dir.to_path_buf(),
            max_bytes,
            keep,
            file: Mutex::new(LogFile::Pending(Vec::new())),
            started: Mutex::new(HashMap::new()),
            last: Mutex::new(HashMap::new()),
        }
    }

    /// The open succeeded: starts a new `LOG` (rotating the previous one) with `head`'s
    /// events first, then the lines that waited.
    pub(crate) fn start(&self, head: &[(&str, String)]) {
        let mut file = self.file.lock();
        let LogFile::Pending(waiting) = std::mem::replace(&mut *file, LogFile::Closed) else {
            return;
        };
        *file = self.rotate();
        let lines = head.iter().map(|(e, d)| line(e, format_args!("{d}")));
        for l in lines.chain(waiting) {
            self.write(&mut file, &l);
        }
    }

    /// Writes one event line. `detail` is `key=value` pairs.
    pub(crate) fn event(&self, event: &str, detail: fmt::Arguments<'_>) {
        let l = line(event, detail);
        self.write(&mut self.file.lock(), &l);
    }

    fn write(&self, file: &mut LogFile, line: &str) {
        match file {
            LogFile::Pending(v) if v.len() < MAX_PENDING => v.push(line.to_string()),
            LogFile::Open(f, size) => {
                if f.write_all(line.as_bytes()).is_ok() {
                    *size += line.len() as u64;
                }
                if self.max_bytes > 0 && *size >= self.max_bytes {
                    *file = self.rotate();
                }
            }
            _ => {}
        }
    }

    /// Renames `LOG` to `LOG.old.<micros>`, drops the oldest rotated logs past `keep`,
    /// and opens a new `LOG`.
    fn rotate(&self) -> LogFile {
        let path = self.dir.join(LOG_FILE);
        if path.exists() {
            let micros = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_micros());
            let mut old = self.dir.join(format!("{OLD_PREFIX}{micros}"));
            // Two rotations in one microsecond (a tiny max size) must not overwrite.
            let mut n = micros;
            while old.exists() {
                n += 1;
                old = self.dir.join(format!("{OLD_PREFIX}{n}"));
            }
            let _ = std::fs::rename(&path, old);
        }
        self.drop_old_logs();
        match OpenOptions::new().create(true).append(true).open(&path) {
            Ok(f) => LogFile::Open(f, 0),
            Err(_) => LogFile::Closed,
        }
    }

    fn drop_old_logs(&self) {
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut old: Vec<(u128, PathBuf)> = rd
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let n = name.strip_prefix(OLD_PREFIX)?.parse().ok()?;
                Some((n, e.path()))
            })
            .collect();
        old.sort();
        let excess = old.len().saturating_sub(self.keep);
        for (_, p) in old.into_iter().take(excess) {
            let _ = std::fs::remove_file(p);
        }
    }

    /// Whether gauge `key` moved at least `step` since it was last logged (from 0 at
    /// first); if so, remembers `value` and returns the value last logged.
    fn moved(&self, key: &'static str, value: u64, step: u64) -> Option<u64> {
        let mut last = self.last.lock();
        let before = last.get(key).copied().unwrap_or(0);
        (value.abs_diff(before) >= step.max(1)).then(|| {
            last.insert(key, value);
            before
        })
    }

    fn begin(&self, key: JobKey) {
        self.started.lock().insert(key, Instant::now());
    }

    /// Microseconds since `key` began (0 when its beginning was not seen).
    fn end(&self, key: JobKey) -> u128 {
        self.started
            .lock()
            .remove(&key)
            .map_or(0, |t| t.elapsed().as_micros())
    }
}

impl super::DbInner {
    /// Logs what the learned parts changed since the last look (called after each flush
    /// and compaction): Bourbon's learned tables, AC-Key's split of the read cache (moves
    /// of at least 1/32 of it), the blocks Leaper warmed.
    pub(crate) fn log_learned_parts(&self) {
        let Some(log) = &self.event_log else {
            return;
        };
        let learned = self.stats.learned_tables.load(Ordering::Relaxed);
        if let Some(before) = log.moved("learned_tables", learned, 1) {
            log.event(
                "bourbon_learned",
                format_args!("tables={learned} before={before}"),
            );
        }
        if let Some(rc) = &self.read_cache {
            let s = rc.read_cache_stats();
            let step = s.capacity / 32;
            let point = log.moved("point_target", s.point_target_bytes, step);
            let kv = log.moved("kv_target", s.kv_target_bytes, step);
            if point.is_some() || kv.is_some() {
                let (p, kv) = (s.point_target_bytes, s.kv_target_bytes);
                log.event(
                    "ac_key_split",
                    format_args!(
                        "kv_target={kv} kp_target={} block_target={} capacity={}",
                        p.saturating_sub(kv),
                        s.capacity.saturating_sub(p),
                        s.capacity
                    ),
                );
            }
        }
        let warmed = self.prefetch.stats().warmed_blocks;
        if let Some(before) = log.moved("warmed_blocks", warmed, 1) {
            log.event(
                "leaper_warmed",
                format_args!("blocks={} total={warmed}", warmed.saturating_sub(before)),
            );
        }
    }
}

/// One line of the log: the time, the event, its details.
fn line(event: &str, detail: fmt::Arguments<'_>) -> String {
    format!("{} {event} {detail}\n", utc_now())
}

fn output_bytes(outputs: &[OutputFile]) -> u64 {
    outputs.iter().map(|o| o.size).sum()
}

impl EventListener for EventLog {
    fn on_flush_begin(&self, i: &FlushInfo) {
        self.begin(JobKey::Flush(i.cf, i.memtable_id));
        let cf = &i.cf_name;
        self.event(
            "flush_begin",
            format_args!("cf={cf} memtable={}", i.memtable_id),
        );
    }

    fn on_flush_end(&self, i: &FlushInfo) {
        let micros = self.end(JobKey::Flush(i.cf, i.memtable_id));
        let (cf, tables, bytes) = (&i.cf_name, i.outputs.len(), output_bytes(&i.outputs));
        self.event(
            "flush_end",
            format_args!(
                "cf={cf} memtable={} tables={tables} bytes={bytes} micros={micros}",
                i.memtable_id
            ),
        );
    }

    fn on_compaction_begin(&self, i: &CompactionInfo) {
        let first = i.inputs.first().map_or(FileNo::new(0), |f| f.file_no);
        self.begin(JobKey::Compaction(i.cf, first));
        let bytes: u64 = i.inputs.iter().map(|f| f.size).sum();
        self.event(
            "compaction_begin",
            format_args!(
                "cf={} from={} to={} reason={} inputs={} input_bytes={bytes}",
                i.cf_name,
                i.input_level,
                i.output_level,
                i.reason,
                i.inputs.len()
            ),
        );
    }

    fn on_compaction_end(&self, i: &CompactionInfo) {
        let first = i.inputs.first().map_or(FileNo::new(0), |f| f.file_no);
        let micros = self.end(JobKey::Compaction(i.cf, first));
        let bytes = output_bytes(&i.outputs);
        self.event(
            "compaction_end",
            format_args!(
                "cf={} from={} to={} reason={} outputs={} output_bytes={bytes} \
                 trivial_move={} micros={micros}",
                i.cf_name,
                i.input_level,
                i.output_level,
                i.reason,
                i.outputs.len(),
                i.trivial_move
            ),
        );
    }
}

/// The time now as `YYYY-MM-DDTHH:MM:SS.micros` (UTC).
fn utc_now() -> String {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    format_utc(d.as_secs() as i64, d.subsec_micros())
}

fn format_utc(secs: i64, micros: u32) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    let (hh, mm, ss) = (rem / 3600, rem % 3600 / 60, rem % 60);
    format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}.{micros:06}Z")
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(format_utc(0, 0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(format_utc(951_782_400, 7), "2000-02-29T00:00:00.000007Z");
        assert_eq!(format_utc(1_795_804_212, 0), "2026-11-27T18:30:12.000000Z");
        assert_eq!(format_utc(-1, 0), "1969-12-31T23:59:59.000000Z");
    }

    #[test]
    fn log_names() {
        assert!(
            crate::filenames::is_event_log("LOG")
                && crate::filenames::is_event_log("LOG.old.1795804212000000")
        );
        assert!(
            !crate::filenames::is_event_log("LOG.old.")
                && !crate::filenames::is_event_log("LOG.old.x")
                && !crate::filenames::is_event_log("a.log")
        );
    }

    #[test]
    fn rotates_past_its_size_and_keeps_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::open(dir.path(), 200, 2);
        log.event("waiting", format_args!("x=0"));
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "no file before start"
        );
        log.start(&[("first", "x=1".to_string())]);
        let now = std::fs::read_to_string(dir.path().join(LOG_FILE)).unwrap();
        assert!(now.lines().next().unwrap().contains(" first x=1"), "{now}");
        assert!(now.contains(" waiting x=0"), "{now}");
        for i in 0..40 {
            log.event("test", format_args!("line={i}"));
        }
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names.len(), 3, "LOG and two old logs: {names:?}");
        assert!(names.iter().all(|n| crate::filenames::is_event_log(n)));
        let last = std::fs::read_to_string(dir.path().join(LOG_FILE)).unwrap();
        let older = std::fs::read_to_string(dir.path().join(&names[1])).unwrap();
        assert!(
            (older + &last).contains("test line=39"),
            "the newest lines survive"
        );
        // A new open starts a new LOG.
        drop(log);
        let log = EventLog::open(dir.path(), 0, 2);
        log.start(&[]);
        log.event("reopened", format_args!("x=1"));
        let now = std::fs::read_to_string(dir.path().join(LOG_FILE)).unwrap();
        assert!(now.contains("reopened x=1") && !now.contains("line="));
    }
}
