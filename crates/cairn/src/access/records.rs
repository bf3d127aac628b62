//! SA-LSM's query store (§2.2, §3.2): a record-level access trace of one column family.
//!
//! A record is tracked or not by a hash of its key (sampling keeps a record's history
//! whole), and a tracked record keeps its insert and last-update times, its newest
//! `max_times` access times and per-day read and write counts for its newest `max_days`
//! days with accesses. Records beyond `max_records` are not admitted. The store is
//! sharded by key hash, so requests on different records rarely meet on a lock, and a
//! request for an untracked record costs one hash.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::clock::{Clock, SystemClock};
use super::record_trace::{
    tag_time, time_ms, RecordEntry, RecordTraceHeader, FLAG_DELETED, FLAG_INSERT_SEEN,
    FLAG_TRUNCATED,
};
use crate::ids::CfId;
use crate::{Error, Result};

const SHARDS: usize = 64;

/// How the query store collects.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RecordOptions {
    /// Share of records tracked, in (0, 1]. Default 1.0 (SA-LSM's service needs the
    /// records it is to place; a lower rate leaves the untracked ones on the hot tier).
    pub sample_rate: f64,
    /// Records tracked at most; later ones are not admitted. Default 4 Mi.
    pub max_records: usize,
    /// Access times kept per record (the newest). Default 32.
    pub max_times: usize,
    /// Days with accesses whose counts are kept per record (the newest). Default 64.
    pub max_days: usize,
    /// Length of a day in milliseconds (a simulation may shorten it). Default 86,400,000.
    pub day_ms: u64,
    /// The clock times are read from.
    #[serde(skip, default = "crate::access::clock::system_clock")]
    pub clock: Arc<dyn Clock>,
}

impl Default for RecordOptions {
    fn default() -> Self {
        RecordOptions {
            sample_rate: 1.0,
            max_records: 4 << 20,
            max_times: 32,
            max_days: 64,
            day_ms: 86_400_000,
            clock: Arc::new(SystemClock),
        }
    }
}

impl RecordOptions {
    /// Checks the options.
    pub fn validate(&self) -> Result<()> {
        if !(self.sample_rate > 0.0 && self.sample_rate <= 1.0) {
            return Err(Error::InvalidArgument(format!(
                "records: sample_rate {} outside (0, 1]",
                self.sample_rate
            )));
        }
        if self.max_times == 0 || self.max_days == 0 || self.day_ms == 0 {
            return Err(Error::InvalidArgument(
                "records: max_times, max_days and day_ms must be positive".into(),
            ));
        }
        if self.max_times > u32::MAX as usize {
            return Err(Error::InvalidArgument(
                "records: max_times too large".into(),
            ));
        }
        Ok(())
    }
}

#[derive(Default)]
struct Record {
    insert_ms: u64,
    flags: u32,
    last_update_ms: u64,
    times: VecDeque<u64>,
    days: VecDeque<(u32, u32, u32)>,
}

/// The query store of one column family.
pub struct RecordStore {
    cf_id: CfId,
    opts: RecordOptions,
    threshold: u64,
    start_ms: AtomicU64,
    shards: Vec<Mutex<HashMap<Box<[u8]>, Record>>>,
    len: AtomicUsize,
    refused: AtomicU64,
    point_reads: AtomicU64,
    writes: AtomicU64,
    scans: AtomicU64,
}

impl std::fmt::Debug for RecordStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordStore")
            .field("cf_id", &self.cf_id)
            .field("records", &self.len())
            .finish()
    }
}

impl RecordStore {
    /// An empty store whose window starts now.
    pub fn new(cf_id: CfId, opts: RecordOptions) -> Self {
        let threshold = if opts.sample_rate >= 1.0 {
            u64::MAX
        } else {
            (opts.sample_rate * u64::MAX as f64) as u64
        };
        RecordStore {
            cf_id,
            start_ms: AtomicU64::new(opts.clock.now_ms()),
            opts,
            threshold,
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            len: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
            point_reads: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            scans: AtomicU64::new(0),
        }
    }

    /// A store resuming a persisted trace (its window start, counts and records); records
    /// the current options would not sample are left out.
    pub fn resume(
        cf_id: CfId,
        opts: RecordOptions,
        h: &RecordTraceHeader,
        records: Vec<RecordEntry>,
    ) -> Self {
        let s = RecordStore::new(cf_id, opts);
        s.start_ms.store(h.start_ms, Ordering::Relaxed);
        s.point_reads.store(h.point_reads, Ordering::Relaxed);
        s.writes.store(h.writes, Ordering::Relaxed);
        s.scans.store(h.scans, Ordering::Relaxed);
        let max_times = s.opts.max_times;
        let max_days = s.opts.max_days;
        for r in records {
            let hash = xxhash_rust::xxh3::xxh3_64(&r.key);
            if hash > s.threshold || s.len() >= s.opts.max_records {
                continue;
            }
            let mut times: VecDeque<u64> = r.times.into();
            let mut flags = r.flags;
            while times.len() > max_times {
                times.pop_front();
                flags |= FLAG_TRUNCATED;
            }
            let mut days: VecDeque<(u32, u32, u32)> = r.days.into();
            while days.len() > max_days {
                days.pop_front();
            }
            let rec = Record {
                insert_ms: r.insert_ms,
                flags,
                last_update_ms: r.last_update_ms,
                times,
                days,
            };
            let prev = s.shards[(hash as usize) % SHARDS]
                .lock()
                .insert(r.key.into_boxed_slice(), rec);
            if prev.is_none() {
                s.len.fetch_add(1, Ordering::Relaxed);
            }
        }
        s
    }

    /// The options in use.
    pub fn options(&self) -> &RecordOptions {
        &self.opts
    }

    /// Records tracked.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// True when no record is tracked.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Records refused because the store was full.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Counts a range query (records are not traced for scans; the count feeds the
    /// service's AWPI check).
    pub fn record_scan(&self) {
        self.scans.fetch_add(1, Ordering::Relaxed);
    }

    /// Records a point read of `key`.
    pub fn record_read(&self, key: &[u8]) {
        self.point_reads.fetch_add(1, Ordering::Relaxed);
        self.record(key, false, false, None);
    }

    /// Records a read of `key` by a range query (its records are read too: a cold record
    /// a scan covers costs a cold-tier read as a point read does).
    pub fn record_covered(&self, key: &[u8]) {
        self.record(key, false, false, None);
    }

    /// Records a write (put or delete) of `key`; `column`: the column it updates, when the
    /// writer named it (`WriteOptions::query_column`).
    pub fn record_write(&self, key: &[u8], delete: bool, column: Option<u8>) {
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.record(key, true, delete, column);
    }

    fn record(&self, key: &[u8], write: bool, delete: bool, column: Option<u8>) {
        let hash = xxhash_rust::xxh3::xxh3_64(key);
        if hash > self.threshold {
            return;
        }
        let now = self.opts.clock.now_ms();
        let day = (now / self.opts.day_ms).min(u32::MAX as u64) as u32;
        let mut shard = self.shards[(hash as usize) % SHARDS].lock();
        let rec = match shard.get_mut(key) {
            Some(r) => {
                if write {
                    r.last_update_ms = now;
                }
                r
            }
            None => {
                if self.len() >= self.opts.max_records {
                    self.refused.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                self.len.fetch_add(1, Ordering::Relaxed);
                shard.entry(key.into()).or_insert(Record {
                    insert_ms: now,
                    flags: if write { FLAG_INSERT_SEEN } else { 0 },
                    ..Record::default()
                })
            }
        };
        if write {
            if delete {
                rec.flags |= FLAG_DELETED;
            } else {
                rec.flags &= !FLAG_DELETED;
            }
        }

        // The clock may be shared with writers that read it a moment earlier: keep the
        // times ascending.
        let last = rec.times.back().map_or(0, |&t| time_ms(t));
        rec.times.push_back(tag_time(now.max(last), write, column));
        if rec.times.len() > self.opts.max_times {
            rec.times.pop_front();
            rec.flags |= FLAG_TRUNCATED;
        }
        match rec.days.back_mut() {
            Some(d) if d.0 >= day => {
                if write {
                    d.2 = d.2.saturating_add(1);
                } else {
                    d.1 = d.1.saturating_add(1);
                }
            }
            _ => {
                rec.days.push_back((day, (!write) as u32, write as u32));
                if rec.days.len() > self.opts.max_days {
                    rec.days.pop_front();
                }
            }
        }
    }

    /// The trace as of now: the header and every tracked record, sorted by key.
    pub fn snapshot(&self) -> (RecordTraceHeader, Vec<RecordEntry>) {
        let end_ms = self.opts.clock.now_ms();
        let mut records = Vec::with_capacity(self.len());
        for shard in &self.shards {
            for (k, r) in shard.lock().iter() {
                records.push(RecordEntry {
                    key: k.to_vec(),
                    insert_ms: r.insert_ms,
                    flags: r.flags,
                    last_update_ms: r.last_update_ms,
                    times: r.times.iter().copied().collect(),
                    days: r.days.iter().copied().collect(),
                });
            }
        }
        records.sort_unstable_by(|a, b| a.key.cmp(&b.key));
        let start_ms = self.start_ms.load(Ordering::Relaxed);
        let h = RecordTraceHeader {
            cf_id: self.cf_id,
            sample_rate: self.opts.sample_rate,
            day_ms: self.opts.day_ms,
            start_ms,
            end_ms: end_ms.max(start_ms),
            max_times: self.opts.max_times as u32,
            point_reads: self.point_reads.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            scans: self.scans.load(Ordering::Relaxed),
        };
        (h, records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::ManualClock;

    fn store(clock: &ManualClock, max_times: usize) -> RecordStore {
        RecordStore::new(
            CfId::new(7),
            RecordOptions {
                max_times,
                max_days: 2,
                day_ms: 1000,
                clock: Arc::new(clock.clone()),
                ..RecordOptions::default()
            },
        )
    }

    #[test]
    fn keeps_times_days_and_flags() {
        let clock = ManualClock::new(500);
        let s = store(&clock, 3);
        s.record_read(b"old"); // first seen by a read: insert not seen
        s.record_write(b"k", false, None);
        clock.advance(600); // day 1
        s.record_read(b"k");
        s.record_read(b"k");
        clock.advance(1000); // day 2
        s.record_write(b"k", true, None);
        s.record_scan();
        let (h, r) = s.snapshot();
        assert_eq!((h.point_reads, h.writes, h.scans), (3, 2, 1));
        assert_eq!((h.start_ms, h.end_ms, h.cf_id), (500, 2100, CfId::new(7)));
        assert_eq!(r.len(), 2);
        let k = &r[0];
        assert_eq!(k.key, b"k");
        assert_eq!(k.insert_ms, 500);
        assert_eq!(k.last_update_ms, 2100);
        assert_eq!(k.flags, FLAG_INSERT_SEEN | FLAG_TRUNCATED | FLAG_DELETED);
        // Four accesses, the newest three kept; two days of counts kept (days 1 and 2).
        let read = |ms| tag_time(ms, false, None);
        assert_eq!(
            k.times,
            vec![read(1100), read(1100), tag_time(2100, true, None)]
        );
        assert_eq!(k.days, vec![(1, 2, 0), (2, 0, 1)]);
        assert_eq!(r[1].key, b"old");
        assert_eq!(r[1].flags, 0);
    }

    #[test]
    fn counts_updates_per_column_and_scan_coverage() {
        let clock = ManualClock::new(0);
        let s = store(&clock, 10);
        s.record_write(b"k", false, Some(0));
        s.record_write(b"k", false, Some(2));
        s.record_write(b"k", false, Some(2));
        s.record_write(b"k", false, Some(200)); // folds into the last column
        s.record_write(b"k", false, None);
        s.record_covered(b"k");
        let (h, r) = s.snapshot();
        let w = |c| tag_time(0, true, c);
        let want = vec![
            w(Some(0)),
            w(Some(2)),
            w(Some(2)),
            w(Some(13)),
            w(None),
            tag_time(0, false, None),
        ];
        assert_eq!(r[0].times, want);
        // A covered read is a read of the record, not a point read.
        assert_eq!(h.point_reads, 0);
        assert_eq!(r[0].days, vec![(0, 1, 5)]);
        // The tags survive a resume.
        let again = RecordStore::resume(CfId::new(7), s.options().clone(), &h, r.clone());
        assert_eq!(again.snapshot().1[0].times, want);
    }

    #[test]
    fn sampling_is_by_key_and_resume_keeps_the_window() {
        let clock = ManualClock::new(0);
        let opts = RecordOptions {
            sample_rate: 0.25,
            clock: Arc::new(clock.clone()),
            ..RecordOptions::default()
        };
        let s = RecordStore::new(CfId::new(1), opts.clone());
        for i in 0..4000u32 {
            s.record_write(&i.to_be_bytes(), false, None);
            s.record_read(&i.to_be_bytes());
        }
        let n = s.len();
        assert!((800..1200).contains(&n), "{n} of 4000 tracked at 25%");
        let (h, r) = s.snapshot();
        // Every tracked record has both of its accesses: a record is in or out whole.
        assert!(r.iter().all(|e| e.times.len() == 2));
        clock.advance(10);
        let resumed = RecordStore::resume(CfId::new(1), opts, &h, r.clone());
        let (h2, r2) = resumed.snapshot();
        assert_eq!(r2, r);
        assert_eq!((h2.start_ms, h2.point_reads, h2.end_ms), (0, 4000, 10));
    }

    #[test]
    fn full_store_refuses_new_records() {
        let clock = ManualClock::new(0);
        let s = RecordStore::new(
            CfId::DEFAULT,
            RecordOptions {
                max_records: 2,
                clock: Arc::new(clock),
                ..RecordOptions::default()
            },
        );
        for k in [b"a", b"b", b"c", b"a"] {
            s.record_write(k, false, None);
        }
        assert_eq!((s.len(), s.refused()), (2, 1));
    }
}
