//! Background work: flushing immutable memtables to level 0, compactions chosen by the
//! picker, manual compactions, and deletion of files no version references.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::iter::sorted_chains;
use super::merge_job::{delete_inputs, file_nos, renumbered_max, BlockSinks, MergeInto};
use super::table_cache::table_path;
use super::write::wal_path;
use super::{CfState, DbInner, SuperVersion};
use crate::clock::BackgroundWork;
use crate::compaction::merge::{merge, MergeOutput, MergeParams, ValueRewriter};
use crate::compaction::split::{self, Bounded};
use crate::compaction::{picker, Task};
use crate::events::{CompactionInfo, FlushInfo, InputFile, OutputFile};
use crate::ids::CfId;
use crate::ids::FileNo;
use crate::iter::InternalIterator;
use crate::memtable::Memtable;
use crate::merging::MergingIterator;
use crate::policy::prefetch::{CompactionJob, Prefetcher, Warmer};
use crate::table::{BlockSink, TableBuildOptions};
use crate::types::user_key;
use crate::version::{AddedFile, CompactPointer, DeletedFile, LevelPolicy, SealedRun};
use crate::version::{FileDesc, FileMeta, VersionEdit};
use crate::vlog::VlogMerge;
use crate::{Error, Result};

impl DbInner {
    pub(super) fn stopping(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }

    /// Records a background failure. Corruption stops the database (writes fail; reads of
    /// healthy data go on); I/O errors such as a full disk are retried after a pause, and
    /// until a retry succeeds a write that would wait for the failing work fails instead
    /// (`stalled_by_background_error`), as RocksDB's background error stops writes.
    fn background_error(&self, e: Error, flush: bool) {
        self.stats.background_errors.fetch_add(1, Ordering::Relaxed);
        let job = if flush { "flush" } else { "compaction" };
        self.event("background_error", format_args!("job={job} error={e}"));
        if !e.is_corruption() && !matches!(e, Error::Closed(_)) {
            let mut bg = self.bg.lock();
            let slot = if flush {
                &mut bg.flush_error
            } else {
                &mut bg.compaction_error
            };
            *slot = Some(e.duplicate());
            drop(bg);
            self.queue_cv.notify_all();
        }
        if e.is_corruption() {
            self.halt.stop(&e);
            self.queue_cv.notify_all();
        } else if !matches!(e, Error::Closed(_)) {
            // The whole pause: other threads' notifications (a finished job, a flush) must
            // not cut it short, or compaction threads would trade a failing job back and
            // forth without rest. Shutdown ends it.
            let until = std::time::Instant::now() + Duration::from_millis(200);
            let mut bg = self.bg.lock();
            while !self.stopping() && !self.bg_cv.wait_until(&mut bg, until).timed_out() {}
        }
    }

    /// The error a write (or a flush request) gets instead of waiting for background work
    /// that keeps failing: the last failure of the work it waits for, flush or compaction.
    pub(crate) fn stalled_by_background_error(&self, needs_flush: bool) -> Option<Error> {
        let bg = self.bg.lock();
        let e = if needs_flush {
            bg.flush_error.as_ref()
        } else {
            bg.compaction_error.as_ref()
        }?;
        Some(match e.duplicate() {
            Error::Io { context, source } => Error::Io {
                context: format!(
                    "writes stop while background {} fails (retried every 200 ms): {context}",
                    if needs_flush { "flush" } else { "compaction" }
                ),
                source,
            },
            other => other,
        })
    }

    pub(crate) fn flush_loop(self: Arc<Self>) {
        let mut flushed = false;
        while !self.stopping() {
            match self.flush_one() {
                Ok(true) => {
                    self.bg.lock().flush_error = None;
                    flushed = true;
                    continue;
                }
                Ok(false) => {}
                Err(e) => {
                    self.background_error(e, true);
                    continue;
                }
            }
            if std::mem::take(&mut flushed) {
                self.release_memory(true);
            }
            let mut bg = self.bg.lock();
            if !bg.flush_requested && !self.stopping() {
                self.bg_cv.wait_for(&mut bg, Duration::from_millis(500));
            }
            bg.flush_requested = false;
        }
    }

    /// Hands the allocator's free memory back when jobs freed some and the last release
    /// is far enough behind (`Options::release_memory_after_jobs`); `jobs_done` notes
    /// that a run of jobs just ended.
    fn release_memory(&self, jobs_done: bool) {
        if !self.opts.release_memory_after_jobs {
            return;
        }
        let release = {
            let mut bg = self.bg.lock();
            if jobs_done {
                bg.release.jobs_done();
            }
            bg.release.take_due(std::time::Instant::now())
        };
        if release {
            self.stats.memory_releases.fetch_add(1, Ordering::Relaxed);
            crate::heap::release_free_memory();
        }
    }

    pub(crate) fn compaction_loop(self: Arc<Self>) {
        while !self.stopping() {
            match self.compact_until_done() {
                Err(e) => {
                    self.background_error(e, false);
                    continue;
                }
                // Only a pass that compacted shows the failure is over: with jobs side by
                // side, one that found nothing to pick says nothing of another's error.
                Ok(true) => {
                    self.bg.lock().compaction_error = None;
                    self.release_memory(true);
                }
                // Idle: a release that jobs ending too close together left due.
                Ok(false) => self.release_memory(false),
            }
            self.prefetch
                .sample_reads(self.stats.gets.load(Ordering::Relaxed));
            // Leaper's collectors move ended slots into their traces off the request path.
            for cf in self.cfs.read().values() {
                if let Some(a) = &cf.access {
                    a.fold();
                }
            }
            let mut bg = self.bg.lock();
            if !bg.compaction_requested && !self.stopping() {
                // A release left due wakes the loop when its interval has passed (none is
                // ever due with the option off).
                let due = bg.release.due_in(std::time::Instant::now());
                let wait = Duration::from_millis(500);
                self.bg_cv
                    .wait_for(&mut bg, due.map_or(wait, |d| d.min(wait)));
            }
            bg.compaction_requested = false;
        }
    }

    /// How family `cf`'s tables of `level` are built.
    pub(super) fn table_options(
        &self,
        cf: CfId,
        level: usize,
        deepest: usize,
    ) -> TableBuildOptions {
        self.cf_opts(cf).table_build_options(level, deepest)
    }

    pub(super) fn output_file(
        &self,
        f: &FileDesc,
        level: usize,
        summary_blocks: Vec<crate::table::BlockRange>,
    ) -> OutputFile {
        OutputFile {
            file_no: f.file_no,
            level,
            size: f.size,
            smallest: crate::types::user_key(&f.smallest).to_vec(),
            largest: crate::types::user_key(&f.largest).to_vec(),
            blocks: summary_blocks,
        }
    }

    /// Writes a memtable to level-0 tables (one new run). Returns the edit that adds them.
    pub(crate) fn write_level0(
        &self,
        cf: CfId,
        mem: &Arc<Memtable>,
        deepest: usize,
        warmer: Option<Arc<Warmer>>,
    ) -> Result<(VersionEdit, Vec<OutputFile>)> {
        let sink = warmer.map(|w| move |file_no: FileNo| w.sink(file_no));
        let o = self.cf_opts(cf);
        let target = o.target_file_size.max(o.write_buffer_size as u64 * 2);
        let sink = sink.as_ref().map(|s| s as &dyn Fn(FileNo) -> BlockSink);
        let mut it = mem.iter();
        let dels = mem.range_dels();
        let (outputs, vlog_size) =
            self.write_sorted(cf, &mut it, dels.as_deref(), 0, deepest, target, sink)?;
        self.stats
            .flush_bytes_written
            .fetch_add(vlog_size, Ordering::Relaxed);
        let mut edit = VersionEdit::default();
        let mut files = Vec::new();
        if !outputs.is_empty() {
            let run = self.versions.lock().new_run_id();
            for o in outputs {
                self.stats
                    .flush_bytes_written
                    .fetch_add(o.desc.size, Ordering::Relaxed);
                files.push(self.output_file(&o.desc, 0, o.summary.blocks));
                edit.added.push(AddedFile {
                    cf,
                    level: 0,
                    run,
                    file: o.desc,
                });
            }
            edit.sealed.push(SealedRun { cf, level: 0, run });
        }
        edit.last_seq = mem.max_seq();
        Ok((edit, files))
    }

    /// Writes the entries of `it` (sorted) and the range deletions `dels` as new tables
    /// of `level`, values separated as the options say; the tables are not installed.
    /// Returns them and the bytes of the value log written beside them.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn write_sorted(
        &self,
        cf: CfId,
        it: &mut dyn InternalIterator,
        dels: Option<&crate::range_del::RangeDels>,
        level: usize,
        deepest: usize,
        target_file_size: u64,
        sink: Option<&dyn Fn(FileNo) -> BlockSink>,
    ) -> Result<(Vec<MergeOutput>, u64)> {
        let tier = self.env.tier_for_level(level);
        let cf_name = self
            .cfs
            .read()
            .get(&cf)
            .map(|c| c.name.clone())
            .unwrap_or_default();
        let snapshots = self.snapshots.all();
        let mut new_file = || {
            let no = self.versions.lock().new_file_no();
            (no, table_path(&self.env, tier, no))
        };
        let no_gc = HashSet::new();
        let mut new_vlog = || self.new_vlog_file();
        let mut vlog = VlogMerge::new(
            &self.env,
            &self.vlog,
            self.cf_opts(cf).value_threshold,
            &no_gc,
            &mut new_vlog,
        );
        let separate = !vlog.is_noop();
        let mut params = MergeParams {
            env: &self.env,
            tier,
            level,
            column_family: (cf, &cf_name),
            build: self.table_options(cf, level, deepest),
            target_file_size,
            snapshots: &snapshots,
            bottommost: false,
            zero_seqs: false,
            version_dels: None,
            renumbered_max: 0,
            new_file: &mut new_file,
            should_stop: &|| false,
            block_sink: sink,
            values: if separate { Some(&mut vlog) } else { None },
            range_dels: dels,
            bounds: (None, None),
        };
        let (outputs, _) = match merge(it, &mut params) {
            Ok(r) => r,
            Err(e) => {
                vlog.abandon();
                return Err(e);
            }
        };
        let vlog_size = self.finish_vlog(&mut vlog, &outputs, tier)?;
        Ok((outputs, vlog_size))
    }

    /// Flushes the oldest immutable memtable of any column family. Returns false if there
    /// was none.
    pub(crate) fn flush_one(&self) -> Result<bool> {
        if !self.halt.manifest_writable() {
            return Ok(false); // nothing more may reach the manifest
        }
        let _claim = self.flush_lock.lock();
        let _bg = BackgroundWork::enter();
        let Some((cf, mem)) = self.oldest_imm() else {
            return Ok(false);
        };
        self.stats.flushes_running.fetch_add(1, Ordering::Relaxed);
        let t = self.clock.stopwatch();
        let r = self.flush_memtable(&cf, &mem);
        self.stats
            .level(0)
            .compaction_ns
            .fetch_add(t.elapsed_ns(), Ordering::Relaxed);
        self.stats.flushes_running.fetch_sub(1, Ordering::Relaxed);
        r?;
        self.queue_cv.notify_all();
        self.bg_cv.notify_all();
        self.request_compaction();
        Ok(true)
    }

    fn oldest_imm(&self) -> Option<(Arc<CfState>, Arc<Memtable>)> {
        self.cfs
            .read()
            .values()
            .filter_map(|cf| {
                let sv = cf.sv.load();
                sv.imms.last().map(|(m, _)| (cf.clone(), m.clone()))
            })
            .min_by_key(|(_, m)| m.id())
    }

    fn flush_memtable(&self, cf: &Arc<CfState>, mem: &Arc<Memtable>) -> Result<()> {
        let mut info = FlushInfo {
            cf: cf.id,
            cf_name: cf.name.clone(),
            memtable_id: mem.id(),
            outputs: Vec::new(),
        };
        crate::events::notify(self.id(), &self.listeners, |l| l.on_flush_begin(&info));
        let deepest = cf.sv.load().version.deepest_nonempty();
        let (lo, hi) = mem.user_key_span().unwrap_or_default();
        let warmer = self.prefetch.flush_warmer(cf.id, (&lo, &hi));
        let (mut edit, files) = self.write_level0(cf.id, mem, deepest, warmer)?;
        if let Some(rc) = &self.read_cache {
            // AC-Key: sync cached entries while readers still see the memtable (they check
            // it before the cache), so none reads a cached version older than it.
            rc.on_flush(cf.id, mem, &files);
        }
        // Reads of the flushed keys go to the new tables once they are installed below
        // (Leaper's metric; recorded first, so the first of those reads count).
        let outputs: Vec<FileNo> = files.iter().map(|f| f.file_no).collect();
        self.prefetch.flush_done(mem, &outputs);
        let mut vs = self.versions.lock();
        if !vs.cfs.contains_key(&cf.id) {
            // The family was dropped while its memtable was written (drop_cf does not wait
            // for flushes): its data goes with it. Logging the edit would name an unknown
            // family, which the version set reports as corruption, stopping the database.
            drop(vs);
            for d in edit.added.iter().map(|a| &a.file) {
                let _ = self
                    .env
                    .remove(&table_path(&self.env, d.tier as usize, d.file_no));
            }
            return Ok(());
        }
        // WAL files older than every memtable still unflushed are obsolete.
        let min_wal = self
            .cfs
            .read()
            .values()
            .flat_map(|c| {
                let sv = c.sv.load();
                let mut v = vec![sv.mem_wal];
                v.extend(
                    sv.imms
                        .iter()
                        .filter(|(m, _)| !Arc::ptr_eq(m, mem))
                        .map(|(_, w)| *w),
                );
                v
            })
            .min()
            .unwrap_or(FileNo::new(0));
        edit.log_number = Some(min_wal);
        // On failure the outputs stay: the edit may have reached the manifest (the next
        // open removes them if it did not).
        vs.log_and_apply(edit)?;
        // Counted before the memtable leaves the super version: `Db::flush` returns once
        // no immutable memtable is left, and its caller must find the flush counted.
        self.stats.flushes.fetch_add(1, Ordering::Relaxed);
        let version = vs.version(cf.id);
        if let Some(version) = version {
            self.install_sv(cf, |sv| SuperVersion {
                mem: sv.mem.clone(),
                mem_wal: sv.mem_wal,
                imms: sv
                    .imms
                    .iter()
                    .filter(|(m, _)| !Arc::ptr_eq(m, mem))
                    .cloned()
                    .collect(),
                version,
            });
        }
        let log_number = vs.log_number;
        drop(vs);
        self.remove_old_wals(log_number);
        info.outputs = files;
        crate::events::notify(self.id(), &self.listeners, |l| l.on_flush_end(&info));
        self.log_learned_parts();
        Ok(())
    }

    pub(crate) fn remove_old_wals(&self, log_number: FileNo) {
        let current = self.wal.lock().number;
        if let Ok(rd) = std::fs::read_dir(&self.path) {
            for e in rd.flatten() {
                let name = e.file_name();
                let Some(no) = name.to_str().and_then(crate::filenames::wal_no) else {
                    continue;
                };
                if no < log_number && no != current {
                    let _ = self.env.remove(&wal_path(&self.path, no));
                }
            }
        }
    }

    /// Runs picked compactions of every column family until none is needed that no other
    /// compaction thread holds the levels of (`Options::max_background_compactions`).
    /// Without background threads, callers run jobs side by side too, and each waits for
    /// the others' before it returns, so the tree is in shape when it does. Returns
    /// whether it compacted anything.
    pub(crate) fn compact_until_done(&self) -> Result<bool> {
        let _bg = BackgroundWork::enter();
        let mut any = false;
        loop {
            if self.stopping() {
                return Ok(any);
            }
            if self.halt.error().is_some() {
                return Ok(any);
            }
            let mut did = false;
            {
                let _c = self.compaction_lock.read();
                let cfs: Vec<Arc<CfState>> = self.cfs.read().values().cloned().collect();
                for cf in cfs {
                    if let Some((task, claim)) = self.claim_task(&cf) {
                        let r = self.execute(&cf, task);
                        drop(claim);
                        r?;
                        did = true;
                    }
                }
            }
            if !did {
                // GC rewrites tables in place at any level: only with no job running.
                if let Some(_c) = self.compaction_lock.try_write() {
                    did = self.vlog_gc_step()? || self.bottom_range_dels_step()?;
                }
            }
            // The picked version and task held the inputs until here.
            self.purge_obsolete();
            any |= did;
            if !did {
                if !self.opts.background_work && self.jobs.running() > 0 {
                    // Another caller's job holds what is due: wait for it (a claim's
                    // release wakes this), never spin.
                    let mut bg = self.bg.lock();
                    self.bg_cv.wait_for(&mut bg, Duration::from_millis(10));
                    continue;
                }
                return Ok(any);
            }
        }
    }

    /// Compacts `[start, end]` through every level (callers flushed first).
    pub(crate) fn compact_range(
        &self,
        cf: CfId,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Result<()> {
        self.check_open()?;
        let state = self.cf_state(cf)?;
        let _bg = BackgroundWork::enter();
        let _c = self.compaction_lock.write();
        // drop_cf may have run while this waited for the lock.
        self.cf_state(cf)?;
        let lo = start.unwrap_or(&[]).to_vec();
        let hi = end.map(|e| e.to_vec());
        let same_tier =
            |a: usize, b: usize| self.env.tier_for_level(a) == self.env.tier_for_level(b);
        let shape = self.shape_for(&state);
        for level in 0..self.shape.num_levels {
            loop {
                self.check_open()?;
                let v = state.sv.load().version.clone();
                let Some(task) = picker::manual(&v, level, &lo, hi.as_deref(), &shape, &same_tier)
                else {
                    break;
                };
                self.execute(&state, task)?;
            }
        }
        self.drop_range_deleted(&state, &lo, hi.as_deref(), &same_tier)?;
        self.purge_obsolete();
        Ok(())
    }

    /// The last step of a manual compaction: each last-level table in `[lo, hi]` holding
    /// range deletions is merged once more, alone with its unit, so that the entries they
    /// cover go. (On their way down they met only the entries of the tables merged with
    /// them, and a snapshot may have kept both.) Once per table found now: a snapshot
    /// still held keeps the deletions in the new tables, which are left alone.
    fn drop_range_deleted(
        &self,
        state: &Arc<CfState>,
        lo: &[u8],
        hi: Option<&[u8]>,
        same_tier: &dyn Fn(usize, usize) -> bool,
    ) -> Result<()> {
        let last = self.shape.last();
        let v = state.sv.load().version.clone();
        let seeds: Vec<FileNo> = v.levels[last]
            .runs
            .iter()
            .flat_map(|r| r.files.iter())
            .filter(|f| f.desc.range_dels > 0 && !f.ends_before(lo))
            .filter(|f| hi.is_none_or(|h| f.smallest_user() <= h))
            .map(|f| f.file_no())
            .collect();
        for no in seeds {
            self.check_open()?;
            let v = state.sv.load().version.clone();
            let seed = v.levels[last]
                .runs
                .iter()
                .flat_map(|r| r.files.iter())
                .find(|f| f.file_no() == no)
                .cloned();
            if let Some(seed) = seed {
                let task = picker::rewrite_last_level(&v, last, &seed, same_tier);
                self.execute(state, task)?;
            }
        }
        Ok(())
    }

    pub(super) fn install_edit(&self, cf: &CfState, edit: VersionEdit) -> Result<()> {
        let mut vs = self.versions.lock();
        self.log_and_install(&mut vs, cf, edit)?;
        drop(vs);
        self.queue_cv.notify_all();
        self.bg_cv.notify_all();
        self.purge_obsolete();
        Ok(())
    }

    /// Installs a bookkeeping edit (seal, policy state) of `level` if the picker, run
    /// again on the current version under the versions lock, still asks for it there
    /// (`same`). set_policy does not take the compaction lock, so the level's policy may
    /// have changed since the pick; writing back a state computed from the older version
    /// would silently undo the user's change (K reverting to the old value). If the task
    /// is stale it is dropped; the compaction loop picks again. Only `level` is asked
    /// about: other levels may be held by jobs running beside this one.
    fn install_bookkeeping(
        &self,
        cf: &CfState,
        level: usize,
        edit: VersionEdit,
        same: impl Fn(&Task) -> bool,
    ) -> Result<()> {
        let mut vs = self.versions.lock();
        let Some(current) = vs.version(cf.id) else {
            return Ok(()); // dropped
        };
        let same_tier =
            |a: usize, b: usize| self.env.tier_for_level(a) == self.env.tier_for_level(b);
        let others = |l: usize| l != level;
        if !picker::pick_free(&current, &self.shape_for(cf), &same_tier, &others)
            .is_some_and(|t| same(&t))
        {
            return Ok(());
        }
        self.log_and_install(&mut vs, cf, edit)?;
        drop(vs);
        self.queue_cv.notify_all();
        self.bg_cv.notify_all();
        Ok(())
    }

    fn execute(&self, cf: &CfState, task: Task) -> Result<()> {
        let read_triggered = matches!(
            task,
            Task::Merge {
                reason: "read-triggered",
                ..
            } | Task::Move {
                reason: "read-triggered",
                ..
            }
        );
        self.execute_task(cf, task)?;
        if read_triggered {
            self.stats
                .read_triggered_compactions
                .fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    fn execute_task(&self, cf: &CfState, task: Task) -> Result<()> {
        let id = cf.id;
        let mut edit = VersionEdit::default();
        match task {
            Task::Seal { level, run } => {
                edit.sealed.push(SealedRun {
                    cf: id,
                    level: level as u32,
                    run,
                });
                self.install_bookkeeping(
                    cf,
                    level,
                    edit,
                    |t| matches!(t, Task::Seal { level: l, run: r } if *l == level && *r == run),
                )
            }
            Task::Policy { level, state } => {
                edit.policies.push(LevelPolicy {
                    cf: id,
                    level: level as u32,
                    state,
                });
                self.install_bookkeeping(cf, level, edit, |t| {
                    matches!(t, Task::Policy { level: l, state: s } if *l == level && *s == state)
                })
            }
            Task::Move {
                from,
                to,
                file,
                dest_run,
                pointer,
                reason,
            } => {
                let run = dest_run.unwrap_or_else(|| self.versions.lock().new_run_id());
                edit.deleted.push(DeletedFile {
                    cf: id,
                    level: from as u32,
                    file_no: file.file_no(),
                });
                edit.added.push(AddedFile {
                    cf: id,
                    level: to as u32,
                    run,
                    file: file.desc.clone(),
                });
                if from > 0 {
                    edit.compact_pointers.push(CompactPointer {
                        cf: id,
                        level: from as u32,
                        key: pointer,
                    });
                }
                let info = CompactionInfo {
                    cf: id,
                    cf_name: cf.name.clone(),
                    input_level: from,
                    output_level: to,
                    reason,
                    inputs: vec![InputFile {
                        file_no: file.file_no(),
                        level: from,
                        size: file.size(),
                    }],
                    outputs: Vec::new(),
                    trivial_move: true,
                };
                crate::events::notify(self.id(), &self.listeners, |l| l.on_compaction_begin(&info));
                self.install_edit(cf, edit)?;
                self.stats.trivial_moves.fetch_add(1, Ordering::Relaxed);
                crate::events::notify(self.id(), &self.listeners, |l| l.on_compaction_end(&info));
                self.log_learned_parts();
                Ok(())
            }
            Task::Merge {
                from,
                to,
                inputs,
                dest_inputs,
                dest_run,
                bottommost,
                pointer,
                reason,
            } => {
                let mut info = CompactionInfo {
                    cf: id,
                    cf_name: cf.name.clone(),
                    input_level: from,
                    output_level: to,
                    reason,
                    inputs: inputs
                        .iter()
                        .map(|f| InputFile {
                            file_no: f.file_no(),
                            level: from,
                            size: f.size(),
                        })
                        .chain(dest_inputs.iter().map(|f| InputFile {
                            file_no: f.file_no(),
                            level: to,
                            size: f.size(),
                        }))
                        .collect(),
                    outputs: Vec::new(),
                    trivial_move: false,
                };
                crate::events::notify(self.id(), &self.listeners, |l| l.on_compaction_begin(&info));
                self.stats
                    .compactions_running
                    .fetch_add(1, Ordering::Relaxed);
                let t = self.clock.stopwatch();
                let r = self.run_merge(
                    cf,
                    from,
                    to,
                    &inputs,
                    &dest_inputs,
                    dest_run,
                    bottommost,
                    pointer,
                );
                self.stats
                    .level(to)
                    .compaction_ns
                    .fetch_add(t.elapsed_ns(), Ordering::Relaxed);
                self.stats
                    .compactions_running
                    .fetch_sub(1, Ordering::Relaxed);
                info.outputs = r?;
                self.stats.compactions.fetch_add(1, Ordering::Relaxed);
                crate::events::notify(self.id(), &self.listeners, |l| l.on_compaction_end(&info));
                self.log_learned_parts();
                Ok(())
            }
        }
    }

    /// Merges `inputs` of level `from` with `dest_inputs` of level `to` into new tables of
    /// `to` (in `dest_run`, else a new run), installs them, and returns them.
    #[allow(clippy::too_many_arguments)]
    fn run_merge(
        &self,
        cf: &CfState,
        from: usize,
        to: usize,
        inputs: &[Arc<FileMeta>],
        dest_inputs: &[Arc<FileMeta>],
        dest_run: Option<u64>,
        bottommost: bool,
        pointer: Vec<u8>,
    ) -> Result<Vec<OutputFile>> {
        let id = cf.id;
        let all = || inputs.iter().chain(dest_inputs);
        let (lo, hi) = picker::merged_range(inputs, dest_inputs);
        let job = self.begin_merge_job(id, all(), (&lo, &hi));
        let bytes_in: u64 = all().map(|f| f.size()).sum();
        let gone = file_nos(all());
        // AC-Key: the compaction's writers offer their blocks to replace cached ones.
        let sinks = BlockSinks {
            replacer: self
                .read_cache
                .as_ref()
                .and_then(|rc| rc.block_replacer(&gone))
                .map(Arc::new),
            warmer: job.1.as_ref().and_then(|j| j.warmer.clone()),
        };
        let dels = self.files_range_dels(
            inputs
                .iter()
                .map(|f| (from, f))
                .chain(dest_inputs.iter().map(|f| (to, f))),
        )?;
        let snapshots = self.snapshots.all();
        // A failed range stops its siblings: their work would be thrown away.
        let failed = AtomicBool::new(false);
        let stop = || self.stopping() || failed.load(Ordering::Relaxed);
        let version = cf.sv.load().version.clone();
        let version_dels = self.version_range_dels(&version)?;
        let into = MergeInto {
            db: self,
            cf,
            level: to,
            deepest: version.deepest_nonempty().max(to),
            snapshots: &snapshots,
            bottommost,
            range_dels: dels.as_deref(),
            version_dels: version_dels.as_deref(),
            renumbered_max: renumbered_max(all()),
            sinks: &sinks,
            stop: &stop,
        };
        // Inputs are read a file per sorted run at a time (`Options::max_open_files`).
        let chains: Vec<(usize, Vec<Arc<FileMeta>>)> = sorted_chains(inputs)
            .into_iter()
            .map(|c| (from, c))
            .chain(sorted_chains(dest_inputs).into_iter().map(|c| (to, c)))
            .collect();
        let merge_range =
            |lo: Option<Vec<u8>>, hi: Option<Vec<u8>>, values: Option<&mut dyn ValueRewriter>| {
                // Shortens the rewriter's lifetime to this call's.
                let values = values.map(|v| v as &mut dyn ValueRewriter);
                let children = chains
                    .iter()
                    .map(|(level, files)| into.run_input(*level, files.clone()))
                    .collect();
                let bounds = (lo.clone(), hi.clone());
                let mut it = Bounded::new(MergingIterator::new(children), lo, hi);
                into.merge(&mut it, (bounds.0.as_deref(), bounds.1.as_deref()), values)
            };
        let gc = self.gc_targets.lock().clone();
        let mut new_vlog = || self.new_vlog_file();
        let mut vlog = VlogMerge::new(
            &self.env,
            &self.vlog,
            cf.opts.value_threshold,
            &gc,
            &mut new_vlog,
        );
        let rewrite_values = !vlog.is_noop();
        // Level-0 merges are split, as RocksDB splits them: they are what writes wait on.
        let cuts = if from == 0 && to > 0 && !rewrite_values && self.opts.max_subcompactions > 1 {
            self.subcompaction_cuts(cf, (from, inputs), (to, dest_inputs))?
        } else {
            Vec::new()
        };
        let merged = if cuts.is_empty() {
            let values = rewrite_values.then_some(&mut vlog as &mut dyn ValueRewriter);
            merge_range(None, None, values)
        } else {
            self.merge_split(&into, &cuts, &failed, |lo, hi| merge_range(lo, hi, None))
        };
        let outputs = match merged {
            Ok(o) => o,
            Err(e) => {
                vlog.abandon();
                return Err(e);
            }
        };
        let tier = self.env.tier_for_level(to);
        let vlog_size = self.finish_vlog(&mut vlog, &outputs, tier)?;
        let run = match dest_run {
            Some(r) => r,
            None => self.versions.lock().new_run_id(),
        };
        let mut edit = VersionEdit::default();
        delete_inputs(&mut edit, id, from, inputs);
        delete_inputs(&mut edit, id, to, dest_inputs);
        let mut files = Vec::new();
        let written = self.add_outputs(&mut edit, id, (to, run), outputs, &mut files);
        if from > 0 {
            edit.compact_pointers.push(CompactPointer {
                cf: id,
                level: from as u32,
                key: pointer,
            });
        }
        self.install_merge(cf, edit, &job, &gone, &files)?;
        if let (Some(rc), Some(r)) = (&self.read_cache, sinks.replacer) {
            if let Ok(r) = Arc::try_unwrap(r) {
                rc.replace_blocks(r);
            }
        }
        self.stats
            .compaction_bytes_written
            .fetch_add(written + vlog_size, Ordering::Relaxed);
        self.stats
            .compaction_bytes_read
            .fetch_add(bytes_in, Ordering::Relaxed);
        Ok(files)
    }

    /// Where a level-0 merge splits into subcompactions: cuts between the inputs' blocks
    /// (each input opened alone, its block ends copied out of its index), a range writing
    /// at least a target file or 1 MiB, whichever is smaller.
    fn subcompaction_cuts(
        &self,
        cf: &CfState,
        (from, inputs): (usize, &[Arc<FileMeta>]),
        (to, dest_inputs): (usize, &[Arc<FileMeta>]),
    ) -> Result<Vec<Vec<u8>>> {
        let mut owned: Vec<Vec<(Vec<u8>, u64)>> = Vec::new();
        for (level, f) in inputs
            .iter()
            .map(|f| (from, f))
            .chain(dest_inputs.iter().map(|f| (to, f)))
        {
            let table = self.tables.open_uncached(f, level)?;
            let index = table.index()?;
            owned.push(
                (0..index.num_blocks())
                    .map(|i| {
                        let b = index.block(i);
                        (
                            user_key(&b.last_key).to_vec(),
                            b.handle.offset + b.handle.size,
                        )
                    })
                    .collect(),
            );
        }
        let ends: Vec<split::BlockEnds<'_>> = owned
            .iter()
            .map(|t| t.iter().map(|(k, o)| (k.as_slice(), *o)).collect())
            .collect();
        let min = cf.opts.target_file_size.min(1 << 20);
        Ok(split::boundaries(&ends, self.opts.max_subcompactions, min))
    }

    /// Runs `merge_range` over the ranges between `cuts`, the first here and the others
    /// on threads of their own; a failed range sets `failed`, which stops the others.
    /// Returns the outputs in key order; on any failure every range's tables go, and the
    /// error is the one that stopped the others.
    fn merge_split(
        &self,
        into: &MergeInto<'_>,
        cuts: &[Vec<u8>],
        failed: &AtomicBool,
        merge_range: impl Fn(Option<Vec<u8>>, Option<Vec<u8>>) -> Result<Vec<MergeOutput>> + Sync,
    ) -> Result<Vec<MergeOutput>> {
        let ranges = split::ranges(cuts);
        let count = ranges.len() as u64;
        let run_range = |lo, hi| {
            let r = merge_range(lo, hi);
            if r.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            r
        };
        let results: Vec<Result<Vec<MergeOutput>>> = std::thread::scope(|s| {
            let run_range = &run_range;
            let mut ranges = ranges.into_iter();
            let (lo0, hi0) = ranges.next().expect("at least one range");
            let handles: Vec<_> = ranges
                .map(|(lo, hi)| s.spawn(move || run_range(lo, hi)))
                .collect();
            let mut results = vec![run_range(lo0, hi0)];
            for h in handles {
                // A panic there is a bug: it goes on here.
                results.push(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
            }
            results
        });
        let mut outputs = Vec::new();
        let mut errors = Vec::new();
        for r in results {
            match r {
                Ok(o) => outputs.extend(o),
                Err(e) => errors.push(e),
            }
        }
        if errors.is_empty() {
            self.stats
                .subcompactions
                .fetch_add(count, Ordering::Relaxed);
            return Ok(outputs);
        }
        into.remove(&outputs);
        let i = errors
            .iter()
            .position(|e| !matches!(e, Error::Closed(_)))
            .unwrap_or(0);
        Err(errors.swap_remove(i))
    }

    /// Allocates a value-log file number and its path.
    /// Syncs a merge's value-log file (if it wrote one) before the edit that makes tables
    /// point into it; returns its size. On failure the file and the merge's tables go.
    fn finish_vlog(
        &self,
        vlog: &mut VlogMerge,
        outputs: &[MergeOutput],
        tier: usize,
    ) -> Result<u64> {
        match vlog.finish() {
            Ok(f) => Ok(f.map_or(0, |(_, size)| size)),
            Err(e) => {
                vlog.abandon();
                for o in outputs {
                    let _ = self
                        .env
                        .remove(&table_path(&self.env, tier, o.desc.file_no));
                }
                Err(e)
            }
        }
    }

    fn new_vlog_file(&self) -> (FileNo, std::path::PathBuf) {
        let no = self.versions.lock().new_file_no();
        (no, crate::vlog::vlog_path(self.env.root(), no))
    }

    /// Value-log usage of the current versions of every column family.
    pub(crate) fn vlog_usage(&self) -> Vec<crate::vlog::gc::VlogUsage> {
        let versions: Vec<_> = self
            .versions
            .lock()
            .cfs
            .values()
            .map(|e| e.version.clone())
            .collect();
        crate::vlog::gc::usage(versions.iter().map(|v| &**v), |no| self.vlog.size(no))
    }

    /// Rewrites one table of a family's deepest level that holds range deletions no
    /// snapshot needs any more (RocksDB compacts such bottommost files once the snapshots
    /// that kept them go): the deletions and the entries they cover go. The caller holds
    /// the compaction lock for writing. Every deletion of the table is at or below the
    /// oldest snapshot, so the merge, bottommost, drops them all: its outputs are never
    /// picked again. Returns true if it did something.
    fn bottom_range_dels_step(&self) -> Result<bool> {
        let oldest = self.snapshots.all().first().copied().unwrap_or(u64::MAX);
        let same_tier =
            |a: usize, b: usize| self.env.tier_for_level(a) == self.env.tier_for_level(b);
        let cfs: Vec<Arc<CfState>> = self.cfs.read().values().cloned().collect();
        for cf in cfs {
            let v = cf.sv.load().version.clone();
            let deepest = v.deepest_nonempty();
            // Not level 0: flushes install runs there beside this step (they take no
            // compaction lock), and the rewrite's new run would go above one flushed
            // meanwhile, its older versions then read before the newer ones. Level 0's
            // deletions go with its next compaction.
            if deepest == 0 {
                continue;
            }
            let seed = v.levels[deepest]
                .runs
                .iter()
                .flat_map(|r| r.files.iter())
                .find(|f| f.desc.range_dels > 0 && f.desc.max_seq <= oldest)
                .cloned();
            if let Some(seed) = seed {
                let task = picker::rewrite_last_level(&v, deepest, &seed, &same_tier);
                self.execute(&cf, task)?;
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// One step of value-log GC (the caller holds the compaction lock for writing): when space
    /// amplification is above the target, chooses the files to collect and rewrites one
    /// table that references them. Returns true if it did something.
    fn vlog_gc_step(&self) -> Result<bool> {
        let Some(target) = self.opts.vlog_gc_space_amp else {
            return Ok(false);
        };
        let usage = self.vlog_usage();
        let targets: HashSet<FileNo> = crate::vlog::gc::pick_files(&usage, target)
            .into_iter()
            .collect();
        *self.gc_targets.lock() = targets.clone();
        if targets.is_empty() {
            return Ok(false);
        }
        let cfs: Vec<Arc<CfState>> = self.cfs.read().values().cloned().collect();
        for cf in cfs {
            let v = cf.sv.load().version.clone();
            let Some((level, run, file)) = crate::vlog::gc::pick_table(&v, &targets) else {
                continue;
            };
            let pointer = v.levels[level].compact_pointer.clone();
            self.stats
                .compactions_running
                .fetch_add(1, Ordering::Relaxed);
            // In place: the same level and run, so the tree's shape does not change.
            let r = self.run_merge(&cf, level, level, &[file], &[], Some(run), false, pointer);
            self.stats
                .compactions_running
                .fetch_sub(1, Ordering::Relaxed);
            let outputs = r?;
            self.vlog.add_gc_rewrite();
            // Every pointer into a chosen file moved; were one left, GC would pick the
            // same table again forever. A bug, never bad input: stop collecting.
            let v = cf.sv.load().version.clone();
            let kept = v
                .levels
                .iter()
                .flat_map(|l| &l.runs)
                .flat_map(|r| &r.files)
                .filter(|f| outputs.iter().any(|o| o.file_no == f.file_no()))
                .any(|f| f.desc.vlog_refs.iter().any(|(no, _)| targets.contains(no)));
            debug_assert!(!kept, "a GC rewrite kept pointers into a collected file");
            return Ok(!kept);
        }
        Ok(false)
    }

    /// Deletes table files that no version references any more.
    pub(crate) fn purge_obsolete(&self) {
        let vs = self.versions.lock();
        let queued = vs.obsolete.take();
        let vlogs = vs.vlogs.clone();
        let dead_vlogs = vlogs.take_obsolete();
        if queued.is_empty() && dead_vlogs.is_empty() {
            return;
        }
        let live = vs.live_files();
        drop(vs);
        for (no, tier) in queued {
            if live.contains(&no) {
                continue; // moved to another level, still in use
            }
            self.tables.evict(no, self.prefetch.erase_obsolete());
            let _ = self.env.remove(&table_path(&self.env, tier as usize, no));
        }
        // After the tables: a value-log file dies when the last table holding it is gone.
        for no in dead_vlogs {
            if !vlogs.is_live(no) {
                self.vlog.delete(no);
            }
        }
    }
}

/// Ends a compaction's prefetch job however the merge ends.
pub(super) struct JobGuard<'a>(pub(super) &'a Prefetcher, pub(super) Option<CompactionJob>);

impl Drop for JobGuard<'_> {
    fn drop(&mut self) {
        if let Some(job) = self.1.take() {
            self.0.compaction_end(job);
        }
    }
}
