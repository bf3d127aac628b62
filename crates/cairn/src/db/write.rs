//! The write path: group commit (the writer at the head of the queue logs the batches
//! queued behind it as one record; then each writer of the group inserts its own batch
//! into the memtable, at once, or the leader inserts them all), memtable switching and
//! write stalls.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::MutexGuard;

use super::{DbInner, ExclusiveWork, Slot, SuperVersion};
use crate::batch::{BatchOpKind, WriteBatch};
use crate::ids::FileNo;
use crate::log::LogWriter;
use crate::options::WriteOptions;
use crate::storage::FileKind;
use crate::types::{SeqNo, ValueKind};
use crate::{Error, Result};

/// Largest group a leader commits at once.
const MAX_GROUP_BYTES: usize = 1 << 20;

/// How long a queued writer yields (rather than sleeps) while it waits for the leader.
const WAIT_YIELDING: Duration = Duration::from_micros(50);

pub(crate) use crate::filenames::wal_path;

/// A group member's share of the group's memtable inserts (see `insert_in_parallel`).
pub(crate) struct MemberInsert {
    /// Its batch's first sequence number.
    first: SeqNo,
    /// Its place among the group's members.
    index: usize,
    group: Arc<GroupInserts>,
}

/// How a group's parallel inserts are going. A member's batch is inserted by whoever
/// claims it first, the member or the leader; the leader waits for `left` to reach 0.
struct GroupInserts {
    claimed: Vec<AtomicBool>,
    left: AtomicUsize,
    /// A member panicked while inserting (the database has stopped).
    panicked: AtomicBool,
}

impl GroupInserts {
    fn claim(&self, index: usize) -> bool {
        !self.claimed[index].swap(true, Ordering::AcqRel)
    }
}

/// Claims, when the leader unwinds, every batch of the group no one has claimed.
struct ClaimRest<'a>(&'a GroupInserts);

impl Drop for ClaimRest<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            for index in 0..self.0.claimed.len() {
                self.0.claim(index);
            }
        }
    }
}

type Queue<'a> = MutexGuard<'a, std::collections::VecDeque<Arc<Slot>>>;

/// Logs a write stall's beginning and, however the wait ends, its end and length.
struct StallLog<'a> {
    db: &'a DbInner,
    since: Option<Instant>,
}

impl StallLog<'_> {
    fn begin(&mut self, imms: usize, l0_runs: usize) {
        if self.since.is_none() {
            self.since = Some(Instant::now());
            self.db.event(
                "stall_begin",
                format_args!("immutable_memtables={imms} l0_runs={l0_runs}"),
            );
        }
    }
}

impl Drop for StallLog<'_> {
    fn drop(&mut self) {
        if let Some(t) = self.since {
            let micros = t.elapsed().as_micros();
            self.db.event("stall_end", format_args!("micros={micros}"));
        }
    }
}

impl DbInner {
    pub(crate) fn write(&self, wo: &WriteOptions, batch: WriteBatch) -> Result<()> {
        crate::events::refuse_in_callback(self.id(), "a write")?;
        if wo.sync && wo.disable_wal {
            return Err(Error::InvalidArgument(
                "a synced write needs the write-ahead log (sync with disable_wal)".into(),
            ));
        }
        if batch.is_empty() && !wo.sync {
            return Ok(());
        }
        {
            let cfs = self.cfs.read();
            for op in batch.iter() {
                let Some(state) = cfs.get(&op.cf) else {
                    return Err(Error::UnknownColumnFamily(format!("id {}", op.cf)));
                };
                if let Some(a) = &state.access {
                    a.record(op.key, crate::access::Access::Write);
                }
                // A range delete names no record: the query store traces point writes.
                if let (Some(r), false) = (&state.records, op.kind == BatchOpKind::DeleteRange) {
                    r.record_write(op.key, op.kind == BatchOpKind::Delete, wo.query_column);
                }
            }
        }
        self.submit(Slot {
            batch,
            sync: wo.sync,
            disable_wal: wo.disable_wal,
            switch: false,
            exclusive: None,
            insert: parking_lot::Mutex::new(None),
            result: parking_lot::Mutex::new(None),
        })
    }

    /// Queues a slot and waits until a leader has handled it, or handles the group itself.
    pub(crate) fn submit(&self, slot: Slot) -> Result<()> {
        self.check_open()?;
        let slot = Arc::new(slot);
        let mut q = self.queue.lock();
        q.push_back(slot.clone());
        let waiting = Instant::now();
        loop {
            if let Some(r) = slot.result.lock().take() {
                return r;
            }
            if let Some(job) = slot.insert.lock().take() {
                MutexGuard::unlocked(&mut q, || self.insert_as_member(&slot.batch, job));
                continue;
            }
            if q.front().is_some_and(|f| Arc::ptr_eq(f, &slot)) {
                break;
            }
            // A group commit takes microseconds; sleeping on the condition variable and
            // being woken takes tens of them on a busy machine. So first yield the CPU
            // (to the leader, when it shares this core) for a short while, as RocksDB's
            // writers do before they block.
            if waiting.elapsed() < WAIT_YIELDING {
                MutexGuard::unlocked(&mut q, std::thread::yield_now);
                continue;
            }
            self.queue_cv.wait(&mut q);
        }
        // This writer leads. A panic here would leave it at the head of the queue and
        // every later writer waiting forever: stop writes, dequeue it, and let the next
        // writers fail fast (their groups may be half applied).
        let led =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.lead(&mut q, &slot)));
        let (count, result) = match led {
            Ok(r) => r,
            Err(panic) => {
                self.panicked("a write leader", panic.as_ref());
                q.pop_front();
                drop(q);
                std::panic::resume_unwind(panic);
            }
        };
        for _ in 0..count {
            let s = q.pop_front().expect("group members are queued");
            if !Arc::ptr_eq(&s, &slot) {
                *s.result.lock() = Some(match &result {
                    Ok(()) => Ok(()),
                    Err(e) => Err(e.duplicate()),
                });
            }
        }
        self.queue_cv.notify_all();
        result
    }

    /// The leader's work: a memtable switch, or room for a group and its commit. Returns
    /// how many queued slots it handled.
    fn lead(&self, q: &mut Queue<'_>, slot: &Arc<Slot>) -> (usize, Result<()>) {
        // The database may have stopped while this writer queued (a switch would rotate
        // the WAL, retrying the fsync that failed).
        if let Err(e) = self.check_open() {
            return (1, Err(e));
        }
        if let Some(work) = &slot.exclusive {
            // Alone at the head: writers queue behind it, none commits until it is done.
            let work = work.lock().take();
            let r = MutexGuard::unlocked(q, || work.map_or(Ok(()), |w| w(self)));
            (1, r)
        } else if slot.switch {
            (1, self.switch_memtables())
        } else {
            match self.make_room(q) {
                Err(e) => (1, Err(e)),
                Ok(()) => {
                    let group = Self::take_group(q, slot);
                    let n = group.len();
                    let r = MutexGuard::unlocked(q, || self.commit_group(&group));
                    (n, r)
                }
            }
        }
    }

    fn take_group(q: &Queue<'_>, leader: &Arc<Slot>) -> Vec<Arc<Slot>> {
        let mut group = vec![leader.clone()];
        let mut bytes = leader.batch.approximate_size();
        for s in q.iter().skip(1) {
            // A sync write does not ride on a non-sync leader; switches lead alone; a
            // group is logged whole or not at all.
            if s.switch
                || s.exclusive.is_some()
                || (s.sync && !leader.sync)
                || s.disable_wal != leader.disable_wal
            {
                break;
            }
            bytes += s.batch.approximate_size();
            if bytes > MAX_GROUP_BYTES {
                break;
            }
            group.push(s.clone());
        }
        group
    }

    fn commit_group(&self, group: &[Arc<Slot>]) -> Result<()> {
        let sync = group.iter().any(|s| s.sync);
        let n: u64 = group.iter().map(|s| s.batch.len() as u64).sum();
        if n == 0 {
            // Nothing to log (an empty batch), but a synced write still promises that
            // every write acknowledged before it is durable.
            return if sync { self.log(None, true) } else { Ok(()) };
        }
        let first = self.last_seq.load(Ordering::Acquire) + 1;
        let logged = if group[0].disable_wal {
            self.unlogged.store(true, Ordering::Release);
            Ok(())
        } else {
            let batches: Vec<&WriteBatch> = group.iter().map(|s| &s.batch).collect();
            self.log(Some(&WriteBatch::encode_all(&batches, first)), sync)
        };
        if let Err(e) = logged {
            // Burn the sequence numbers: the record may survive in the abandoned log, and
            // no later write may reuse them.
            self.last_seq.store(first + n - 1, Ordering::Release);
            return Err(e);
        }
        if self.opts.concurrent_memtable_writes && group.len() > 1 {
            self.insert_in_parallel(group, first)?;
        } else {
            let mut seq = first;
            for s in group {
                self.apply_to_memtables(&s.batch, seq);
                seq += s.batch.len() as u64;
            }
        }
        // Readers see the group's writes from here on, all at once.
        self.last_seq.store(first + n - 1, Ordering::Release);
        self.note_seq_time(first + n - 1);
        self.stats
            .writes
            .fetch_add(group.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Hands each member of a logged group its batch's first sequence number, inserts the
    /// leader's own batch, then every member's batch that no member has claimed, and waits
    /// for those members that did. No reader sees any of them meanwhile: the group's
    /// sequence numbers are published after.
    ///
    /// A member inserts its own batch only when it runs while the leader does: one that
    /// waits off the CPU is not woken for it (a wake-up costs more than the insert), and
    /// the leader never waits for one to be scheduled.
    fn insert_in_parallel(&self, group: &[Arc<Slot>], first: SeqNo) -> Result<()> {
        let members = &group[1..];
        let progress = Arc::new(GroupInserts {
            claimed: members.iter().map(|_| AtomicBool::new(false)).collect(),
            left: AtomicUsize::new(members.len()),
            panicked: AtomicBool::new(false),
        });
        let after_leader = first + group[0].batch.len() as u64;
        let mut seq = after_leader;
        for (index, s) in members.iter().enumerate() {
            *s.insert.lock() = Some(MemberInsert {
                first: seq,
                index,
                group: progress.clone(),
            });
            seq += s.batch.len() as u64;
        }
        // Should the leader panic, the batches no member took stay claimed: nobody
        // inserts them into a database that has stopped.
        let claim_rest = ClaimRest(&progress);
        self.apply_to_memtables(&group[0].batch, first);
        let mut seq = after_leader;
        for (index, s) in members.iter().enumerate() {
            if progress.claim(index) {
                self.apply_to_memtables(&s.batch, seq);
                progress.left.fetch_sub(1, Ordering::AcqRel);
            }
            seq += s.batch.len() as u64;
        }
        drop(claim_rest);
        // Only members mid-insert are left: a few microseconds, unless one lost its core.
        while progress.left.load(Ordering::Acquire) > 0 {
            std::thread::yield_now();
        }
        if progress.panicked.load(Ordering::Acquire) {
            // The database stopped (`panicked`); the group stays unpublished.
            self.check_open()?;
        }
        Ok(())
    }

    /// A group member's share, unless the leader has claimed it: its own batch into the
    /// memtables, at the sequence numbers the leader gave it. A panic here stops the
    /// database, as a leader's does; the member's write then fails with the error the
    /// leader reports for the group rather than unwinding.
    fn insert_as_member(&self, batch: &WriteBatch, job: MemberInsert) {
        if !job.group.claim(job.index) {
            return;
        }
        let inserted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.apply_to_memtables(batch, job.first)
        }));
        match &inserted {
            Ok(()) => {
                self.stats.member_inserts.fetch_add(1, Ordering::Relaxed);
            }
            Err(panic) => {
                self.panicked("a write group member", panic.as_ref());
                job.group.panicked.store(true, Ordering::Release);
            }
        }
        job.group.left.fetch_sub(1, Ordering::AcqRel);
    }

    /// Appends `record` to the WAL, then fsyncs it if `sync`. A failed write poisons the
    /// log (the next write starts a new one, cutting the failed record off this one); a
    /// failed fsync stops writes until reopen (see `Halt`).
    fn log(&self, record: Option<&[u8]>, sync: bool) -> Result<()> {
        let mut wal = self.wal.lock();
        let Some(w) = wal.writer.as_mut() else {
            return Err(Error::Closed("no write-ahead log".into()));
        };
        let start = w.len();
        let written = match record {
            Some(rec) => w.add_record(rec).and_then(|_| w.flush()),
            None => w.flush(),
        };
        if let Err(e) = written {
            wal.poisoned = true;
            wal.failed_at = start;
            return Err(e);
        }
        if !sync {
            return Ok(());
        }
        w.sync_written().inspect_err(|e| {
            // The fsync may have dropped what it covered: nothing written after counts.
            wal.poisoned = true;
            wal.failed_at = start;
            self.halt.stop_wal(e);
        })
    }

    pub(crate) fn apply_to_memtables(&self, batch: &WriteBatch, first: u64) {
        let cfs = self.cfs.read();
        let mut bytes = 0u64;
        let mut entries = 0u64;
        for (seq, op) in (first..).zip(batch.iter()) {
            entries += 1;
            if let Some(cf) = cfs.get(&op.cf) {
                let sv = cf.sv.load();
                match op.kind {
                    BatchOpKind::Put => sv.mem.add(seq, ValueKind::Value, op.key, op.value),
                    BatchOpKind::Delete => sv.mem.add(seq, ValueKind::Deletion, op.key, &[]),
                    BatchOpKind::DeleteRange => sv.mem.add_range_del(seq, op.key, op.value),
                }
            }
            bytes += (op.key.len() + op.value.len()) as u64;
        }
        self.stats
            .user_bytes_written
            .fetch_add(bytes, Ordering::Relaxed);
        self.stats
            .entries_written
            .fetch_add(entries, Ordering::Relaxed);
    }

    /// Waits while the tree is too far behind, and switches full memtables.
    fn make_room(&self, q: &mut Queue<'_>) -> Result<()> {
        let mut allow_delay = true;
        let mut stall = StallLog {
            db: self,
            since: None,
        };
        loop {
            self.check_open()?;
            if self.wal.lock().poisoned {
                self.rotate_wal()?;
            }
            let (l0_runs, imms, full) = {
                let cfs = self.cfs.read();
                let mut l0 = 0;
                let mut imms = 0;
                let mut full = false;
                for cf in cfs.values() {
                    let sv = cf.sv.load();
                    l0 = l0.max(sv.version.levels[0].runs.len());
                    imms = imms.max(sv.imms.len());
                    full |= sv.mem.approximate_memory_usage() >= cf.opts.write_buffer_size;
                }
                (l0, imms, full)
            };
            if allow_delay && l0_runs >= self.opts.l0_slowdown_trigger {
                // Spread the delay over writes rather than stopping them later.
                allow_delay = false;
                self.stats.slowdowns.fetch_add(1, Ordering::Relaxed);
                self.request_compaction();
                match self.clock.virtual_clock() {
                    Some(c) => c.wait(1_000_000),
                    None => {
                        MutexGuard::unlocked(q, || std::thread::sleep(Duration::from_millis(1)))
                    }
                }
                continue;
            }
            if !full {
                return Ok(());
            }
            if imms + 1 >= self.opts.max_write_buffers || l0_runs >= self.opts.l0_stop_trigger {
                stall.begin(imms, l0_runs);
                let t = Instant::now();
                self.request_flush();
                self.request_compaction();
                if !self.opts.background_work {
                    // Nobody else will make room: do the work here.
                    MutexGuard::unlocked(q, || -> Result<()> {
                        while self.flush_one()? {}
                        self.compact_until_done().map(|_| ())
                    })?;
                } else {
                    // Waiting on work that keeps failing would never end: fail instead.
                    let needs_flush = imms + 1 >= self.opts.max_write_buffers;
                    if let Some(e) = self.stalled_by_background_error(needs_flush) {
                        return Err(e);
                    }
                    self.queue_cv.wait_for(q, Duration::from_millis(50));
                }
                self.stats
                    .stall_micros
                    .fetch_add(t.elapsed().as_micros() as u64, Ordering::Relaxed);
                continue;
            }
            self.switch_memtables()?;
        }
    }

    /// Starts a new WAL file and returns the number of the old one.
    pub(crate) fn rotate_wal(&self) -> Result<FileNo> {
        let no = self.versions.lock().new_file_no();
        let path = wal_path(&self.path, no);
        let f = self.env.create(&path, FileKind::Wal, 0, None)?;
        let mut w = LogWriter::new(f);
        w.sync()?;
        self.env.sync_dir(&self.path)?;
        let mut wal = self.wal.lock();
        // Make the old log durable before any write goes to the new one: otherwise a synced
        // write in the new log could survive a power loss that takes earlier acknowledged
        // (unsynced) writes of the old one, and recovery would show a later write without
        // the earlier ones. A failed write's record is cut off it first (`make_durable`).
        if let Err(e) = wal.make_durable() {
            // A failed fsync may have dropped what it covered: stop (see `Halt`).
            self.halt.stop_wal(&e);
            drop(wal);
            let _ = self.env.remove(&path);
            return Err(e);
        }
        wal.writer = Some(w);
        wal.poisoned = false;
        let old = wal.number;
        wal.number = no;
        Ok(old)
    }

    /// Moves every non-empty memtable to the immutable list (a new WAL starts with the new
    /// memtables) and wakes the flush thread. Callers lead the write queue.
    pub(crate) fn switch_memtables(&self) -> Result<()> {
        let any = self
            .cfs
            .read()
            .values()
            .any(|cf| !cf.sv.load().mem.is_empty());
        if !any {
            return Ok(());
        }
        if let Some(c) = self.clock.virtual_clock() {
            // On the virtual clock the work queued at earlier switches has already been
            // installed: a new memtable waits until the device has done it.
            c.wait_for_background();
        }
        self.rotate_wal()?;
        let wal_no = self.wal.lock().number;
        let _vs = self.versions.lock();
        for cf in self.cfs.read().values() {
            self.install_sv(cf, |sv| {
                let mut imms = sv.imms.clone();
                if !sv.mem.is_empty() {
                    imms.insert(0, (sv.mem.clone(), sv.mem_wal));
                }
                SuperVersion {
                    mem: self.new_memtable(),
                    mem_wal: wal_no,
                    imms,
                    version: sv.version.clone(),
                }
            });
        }
        drop(_vs);
        self.request_flush();
        Ok(())
    }

    /// Runs `work` at the head of the write queue: every write queued before it commits
    /// first, none after it until it returns.
    pub(crate) fn run_exclusive(&self, work: ExclusiveWork) -> Result<()> {
        self.submit(Slot {
            batch: WriteBatch::new(),
            sync: false,
            disable_wal: false,
            switch: false,
            exclusive: Some(parking_lot::Mutex::new(Some(work))),
            insert: parking_lot::Mutex::new(None),
            result: parking_lot::Mutex::new(None),
        })
    }

    /// Switches memtables through the write queue and waits until the immutable ones are
    /// flushed.
    pub(crate) fn flush_and_wait(&self) -> Result<()> {
        self.submit(Slot {
            batch: WriteBatch::new(),
            sync: false,
            disable_wal: false,
            switch: true,
            exclusive: None,
            insert: parking_lot::Mutex::new(None),
            result: parking_lot::Mutex::new(None),
        })?;
        if !self.opts.background_work {
            while self.flush_one()? {}
            // A stopped database flushes nothing: say so rather than succeed.
            return self.check_open();
        }
        loop {
            self.check_open()?;
            let pending = self
                .cfs
                .read()
                .values()
                .any(|cf| !cf.sv.load().imms.is_empty());
            if !pending {
                return Ok(());
            }
            if let Some(e) = self.stalled_by_background_error(true) {
                return Err(e);
            }
            self.request_flush();
            let mut bg = self.bg.lock();
            self.bg_cv.wait_for(&mut bg, Duration::from_millis(20));
        }
    }
}
