//! SA-LSM in the engine: the query store's persistence and export, cold-key sets, and the
//! proactive compaction of Algorithm 3 (§3.1-3.2).
//!
//! A proactive compaction merges every run of the hot tier's levels (level 0 down to the
//! deepest level stored on the first tier) and splits the merged records by the
//! placement hook: records it calls cold go, with the first cold level's overlapping files,
//! into that level's active run on the cold tier; the rest are written back as one new run
//! of the deepest hot level. All versions of a key go to the same side, and the cold side
//! only ever moves data down, so every read finds what it found before (no promotion, as
//! in the paper). The outputs replace the inputs in one version edit: a crash leaves
//! either the old layout or the new one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::iter::sorted_chains;
use super::merge_job::{delete_inputs, file_nos, BlockSinks, MergeInto};
use super::{CfState, ColumnFamily, Db, DbInner};
use crate::access::record_trace::{self, RecordTraceHeader};
use crate::access::{RecordOptions, RecordStore};
use crate::clock::thread_cpu_nanos;
use crate::compaction::merge::MergeOutput;
use crate::compaction::picker;
use crate::events::{CompactionInfo, InputFile};
use crate::ids::CfId;
use crate::iter::InternalIterator;
use crate::learned::ColdSet;
use crate::merging::MergingIterator;
use crate::policy::placement::{
    AgeTierPlacement, ColdSetPlacement, Placement, PlacementPolicy, SeqTimes,
};
use crate::range_del::RangeDels;
use crate::types::parse_internal_key;
use crate::version::DeletedFile;
use crate::version::{CfVersion, FileMeta, VersionEdit};
use crate::{Error, Result};

/// What a proactive compaction did (or why it did nothing).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProactiveReport {
    /// The placement that decided (`rsf`, `gbdt`, `age-tier`, ...).
    pub placement: String,
    /// Why nothing was moved, when nothing was (no set loaded, stale set, back-off, ...).
    pub skipped: Option<String>,
    /// Hot level the hot records were written back to.
    pub hot_level: usize,
    /// Cold level the cold records went to.
    pub cold_level: usize,
    /// Input tables (hot levels and the cold level's overlapping files).
    pub input_files: usize,
    /// Bytes of input tables.
    pub input_bytes: u64,
    /// User keys of the hot levels placed on the cold tier.
    pub cold_records: u64,
    /// User keys of the hot levels kept on the hot tier.
    pub hot_records: u64,
    /// Bytes of tables written to the cold tier.
    pub cold_bytes: u64,
    /// Bytes of tables written to the hot tier.
    pub hot_bytes: u64,
    /// CPU time of the compaction's thread.
    pub cpu_ns: u64,
    /// Wall time of the merge (after any back-off measurement).
    pub wall_ns: u64,
}

impl ProactiveReport {
    fn boxed(placement: &str, why: impl Into<String>) -> Box<Self> {
        Box::new(Self::skipped(placement, why))
    }
    fn skipped(placement: &str, why: impl Into<String>) -> Self {
        ProactiveReport {
            placement: placement.into(),
            skipped: Some(why.into()),
            ..Default::default()
        }
    }
}

/// The engine's placement state: loaded cold-key sets and the age rule's clock samples.
pub(crate) struct PlacementState {
    cold_sets: Mutex<HashMap<CfId, Arc<ColdSet>>>,
    pub(crate) seq_times: Option<SeqTimes>,
    /// On the virtual clock: requests, cold-tier reads and the time at the last back-off
    /// check; the next one measures its rates from there (no sleep in the caller's thread).
    last_rates: Mutex<Option<(u64, u64, Duration)>>,
}

impl PlacementState {
    pub(crate) fn new(opts: &crate::Options) -> Self {
        let seq_times = match opts.placement.policy {
            // One sample a minute (or a thousandth of the age, if finer) is plenty to
            // date an age threshold; 64 Ki samples cover 45 days at a minute.
            PlacementPolicy::AgeTier { max_age_ms } => {
                Some(SeqTimes::new((max_age_ms / 1000).clamp(1, 60_000), 1 << 16))
            }
            _ => None,
        };
        PlacementState {
            cold_sets: Mutex::new(HashMap::new()),
            seq_times,
            last_rates: Mutex::new(None),
        }
    }
}

/// Name of the file a column family's query store is kept in between runs.
pub(crate) fn query_store_path(db: &Path, cf: CfId) -> PathBuf {
    db.join(crate::filenames::query_store(cf))
}

/// The query store of a column family at open: resumed from its file when one is there
/// and sound, else empty (a damaged file is logged and set aside, never fatal).
pub(crate) fn open_query_store(
    db: &Path,
    cf: CfId,
    opts: &Option<RecordOptions>,
) -> Option<Arc<RecordStore>> {
    let opts = opts.clone()?;
    let path = query_store_path(db, cf);
    let store = match std::fs::read(&path) {
        Ok(b) => match record_trace::decode(&b, &path.display().to_string()) {
            Ok((h, records)) if h.cf_id == cf => RecordStore::resume(cf, opts, &h, records),
            Ok(_) => {
                log::warn!(
                    "cairn: {} is for another column family; the query store starts fresh",
                    path.display()
                );
                RecordStore::new(cf, opts)
            }
            Err(e) => {
                log::warn!("cairn: query store not resumed ({e}); it starts fresh");
                RecordStore::new(cf, opts)
            }
        },
        Err(_) => RecordStore::new(cf, opts),
    };
    Some(Arc::new(store))
}

/// Skips the entries of keys the placement puts on the other side. Forward only (the
/// merge needs nothing else); the decision is made on a key's newest version and applies
/// to all its versions.
struct PlacementFilter {
    inner: Box<dyn InternalIterator>,
    placement: Arc<dyn Placement>,
    want_cold: bool,
    key: Vec<u8>,
    key_cold: bool,
    have_key: bool,
    hot_keys: u64,
    cold_keys: u64,
    error: Option<&'static str>,
}

impl PlacementFilter {
    fn new(
        inner: Box<dyn InternalIterator>,
        placement: Arc<dyn Placement>,
        want_cold: bool,
    ) -> Self {
        PlacementFilter {
            inner,
            placement,
            want_cold,
            key: Vec::new(),
            key_cold: false,
            have_key: false,
            hot_keys: 0,
            cold_keys: 0,
            error: None,
        }
    }

    /// Moves forward to an entry of the wanted side.
    fn settle(&mut self) {
        while self.inner.valid() {
            let Some(p) = parse_internal_key(self.inner.key()) else {
                // The merge reports malformed keys; let it see this one.
                return;
            };
            if !self.have_key || p.user_key != self.key.as_slice() {
                self.key.clear();
                self.key.extend_from_slice(p.user_key);
                self.have_key = true;
                // Internal order puts a key's newest version first.
                self.key_cold = self.placement.is_cold(p.user_key, p.seq);
                if self.key_cold {
                    self.cold_keys += 1;
                } else {
                    self.hot_keys += 1;
                }
            }
            if self.key_cold == self.want_cold {
                return;
            }
            self.inner.next();
        }
    }

    fn backward(&mut self) {
        self.error = Some("placement filter is forward-only");
    }
}

impl InternalIterator for PlacementFilter {
    fn valid(&self) -> bool {
        self.error.is_none() && self.inner.valid()
    }
    fn seek_to_first(&mut self) {
        self.have_key = false;
        self.inner.seek_to_first();
        self.settle();
    }
    fn seek_to_last(&mut self) {
        self.backward();
    }
    fn seek(&mut self, ikey: &[u8]) {
        self.have_key = false;
        self.inner.seek(ikey);
        self.settle();
    }
    fn seek_for_prev(&mut self, _: &[u8]) {
        self.backward();
    }
    fn next(&mut self) {
        self.inner.next();
        self.settle();
    }
    fn prev(&mut self) {
        self.backward();
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
    fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(Error::InvalidArgument((*e).into())),
            None => self.inner.status(),
        }
    }
}

impl DbInner {
    /// The deepest hot level and the first cold level, when the tiers have both.
    pub(crate) fn hot_cold_levels(&self) -> Option<(usize, usize)> {
        let hot = self.env.tier_for_level(0);
        let h = (0..self.shape.num_levels)
            .take_while(|&l| self.env.tier_for_level(l) == hot)
            .last()?;
        (h >= 1 && h + 1 < self.shape.num_levels).then_some((h, h + 1))
    }

    /// The level shape the picker uses for `cf`: with placement on, passive compaction out
    /// of the deepest hot level waits for the level to reach its slack.
    pub(crate) fn shape_for(&self, cf: &CfState) -> crate::compaction::LevelShape {
        let p = &self.opts.placement;
        match self.hot_cold_levels() {
            Some((h, _)) if p.applies_to(&cf.name) => crate::compaction::LevelShape {
                held: Some((h, p.hot_level_slack)),
                ..self.shape
            },
            _ => self.shape,
        }
    }

    /// Notes the newest sequence number for the age rule (after a write group).
    pub(crate) fn note_seq_time(&self, seq: u64) {
        if let Some(t) = &self.placement.seq_times {
            t.note(self.opts.placement.clock.now_ms(), seq);
        }
    }

    fn placement_for(
        &self,
        cf: &CfState,
    ) -> std::result::Result<Arc<dyn Placement>, Box<ProactiveReport>> {
        let p = &self.opts.placement;
        match p.policy {
            PlacementPolicy::Passive => Err(ProactiveReport::boxed(
                "passive",
                "passive placement: data moves by level size only",
            )),
            PlacementPolicy::AgeTier { max_age_ms } => {
                let now = p.clock.now_ms();
                let cutoff = now
                    .checked_sub(max_age_ms)
                    .and_then(|t| self.placement.seq_times.as_ref()?.seq_at_or_before(t));
                match cutoff {
                    Some(cutoff) => Ok(Arc::new(AgeTierPlacement { cutoff })),
                    None => Err(ProactiveReport::boxed(
                        "age-tier",
                        "no write is known to be older than the age threshold",
                    )),
                }
            }
            PlacementPolicy::ColdSet => {
                let Some(set) = self.placement.cold_sets.lock().get(&cf.id).cloned() else {
                    return Err(ProactiveReport::boxed("cold-set", "no cold-key set loaded"));
                };
                if let Some(max_age) = p.max_cold_set_age_ms {
                    let age = p.clock.now_ms().saturating_sub(set.trace_end_ms);
                    if age > max_age {
                        self.warn(format_args!(
                            "cold-key set of column family {} is stale ({age} ms old); passive compaction only",
                            cf.name
                        ));
                        return Err(ProactiveReport::boxed(&set.method, "cold-key set is stale"));
                    }
                }
                Ok(Arc::new(ColdSetPlacement(set)))
            }
        }
    }

    /// Measures the request and cold-tier read rates over the back-off window; `Some`
    /// names the limit passed.
    fn back_off(&self, cold_tier: usize) -> Option<String> {
        let p = &self.opts.placement;
        if p.max_ops_per_sec.is_none() && p.max_cold_reads_per_sec.is_none() {
            return None;
        }
        let sample = || {
            let s = &self.stats;
            let ops = s.gets.load(Ordering::Relaxed)
                + s.entries_written.load(Ordering::Relaxed)
                + s.iterators.load(Ordering::Relaxed);
            (ops, self.env.stats().snapshot().tier(cold_tier).read_ops)
        };
        let (ops1, reads1, secs, ops0, reads0);
        if self.clock.virtual_clock().is_some() {
            // Background work runs in the request thread: the rates are those since the
            // last check, on virtual time (none at the first).
            let now = self.clock.now();
            (ops1, reads1) = sample();
            let last = self
                .placement
                .last_rates
                .lock()
                .replace((ops1, reads1, now));
            let (o, r, t) = last?;
            (ops0, reads0) = (o, r);
            secs = now.saturating_sub(t).as_secs_f64().max(1e-6);
        } else {
            (ops0, reads0) = sample();
            let t = Instant::now();
            std::thread::sleep(Duration::from_millis(p.backoff_window_ms.max(1)));
            (ops1, reads1) = sample();
            secs = t.elapsed().as_secs_f64().max(1e-6);
        }
        let ops_rate = (ops1 - ops0) as f64 / secs;
        let read_rate = (reads1 - reads0) as f64 / secs;
        if p.max_ops_per_sec.is_some_and(|m| ops_rate > m) {
            return Some(format!("backed off: {ops_rate:.0} ops/s over the limit"));
        }
        if p.max_cold_reads_per_sec.is_some_and(|m| read_rate > m) {
            return Some(format!(
                "backed off: {read_rate:.0} cold-tier reads/s over the limit"
            ));
        }
        None
    }

    pub(crate) fn proactive_compact(&self, cf: CfId) -> Result<ProactiveReport> {
        self.check_open()?;
        let _bg = crate::clock::BackgroundWork::enter();
        let state = self.cf_state(cf)?;
        if !self.opts.placement.applies_to(&state.name) {
            return Ok(ProactiveReport::skipped(
                "passive",
                format!("placement is not on for column family {}", state.name),
            ));
        }
        let Some((h, c)) = self.hot_cold_levels() else {
            return Err(Error::InvalidArgument(
                "proactive compaction needs a hot tier holding level 1 and a cold tier below it (Options::tiers)".into(),
            ));
        };
        let placement = match self.placement_for(&state) {
            Ok(p) => p,
            Err(r) => return Ok(*r),
        };
        let name = placement.name().to_string();
        if let Some(why) = self.back_off(self.env.tier_for_level(c)) {
            self.stats
                .proactive_backoffs
                .fetch_add(1, Ordering::Relaxed);
            return Ok(ProactiveReport::skipped(&name, why));
        }
        let _c = self.compaction_lock.write();
        let state = self.cf_state(cf)?; // dropped while waiting?
        let cpu0 = thread_cpu_nanos();
        let t0 = Instant::now();
        let v = state.sv.load().version.clone();
        let Some(job) = ProactiveInputs::of(&v, h, c) else {
            return Ok(ProactiveReport::skipped(
                &name,
                "the hot tier holds no tables",
            ));
        };
        let mut report = self.proactive_job(&state, &v, &job, &placement)?;
        let cpu_ns = thread_cpu_nanos().saturating_sub(cpu0);
        self.stats
            .proactive_cpu_ns
            .fetch_add(cpu_ns, Ordering::Relaxed);
        report.placement = name;
        report.cpu_ns = cpu_ns;
        report.wall_ns = t0.elapsed().as_nanos() as u64;
        self.event(
            "sa_lsm_proactive",
            format_args!(
                "cf={} placement={} cold_records={} hot_records={} cold_bytes={} hot_bytes={} \
                 micros={}",
                state.name,
                report.placement,
                report.cold_records,
                report.hot_records,
                report.cold_bytes,
                report.hot_bytes,
                report.wall_ns / 1000
            ),
        );
        Ok(report)
    }

    /// Merges the hot tier's runs and splits them by `placement`: the hot side back into
    /// one new run of level `h`, the cold side with level `c`'s overlapping files into
    /// its active run; installs both in one edit.
    fn proactive_job(
        &self,
        state: &CfState,
        v: &CfVersion,
        job: &ProactiveInputs,
        placement: &Arc<dyn Placement>,
    ) -> Result<ProactiveReport> {
        let (h, c) = (job.hot_level, job.cold_level);
        let gone = file_nos(job.all());
        let input_bytes: u64 = job.all().map(|f| f.size()).sum();
        // Range deletions: the upper inputs' go to both sides (each side's entries are
        // checked against them), the cold level's own stay on the cold side.
        let upper = || job.inputs.iter().map(|(l, f)| (*l, f));
        let hot_dels = self.files_range_dels(upper())?;
        let cold_dels = self.files_range_dels(upper().chain(job.dest.iter().map(|f| (c, f))))?;
        let dels = (hot_dels.as_deref(), cold_dels.as_deref());
        let mut info = job.info(state);
        crate::events::notify(self.id(), &self.listeners, |l| l.on_compaction_begin(&info));
        // The prefetch policy sees this job as any compaction (Leaper's metric and
        // warming), and its end however the job ends. The hot and the cold pass each merge
        // every input of the upper level: count them twice, so the job's time per block
        // fits eq. 3's alpha as a plain merge's does.
        let (mlo, mhi) = picker::merged_range(&job.upper, &job.dest);
        let counted = job.upper.iter().chain(&job.upper).chain(&job.dest);
        let guard = self.begin_merge_job(state.id, counted, (&mlo, &mhi));
        let sinks = BlockSinks {
            warmer: guard.1.as_ref().and_then(|j| j.warmer.clone()),
            ..Default::default()
        };
        let merged = self.proactive_merge(state, v, job, placement, &sinks, dels)?;
        let mut edit = VersionEdit::default();
        for (l, f) in &job.inputs {
            edit.deleted.push(DeletedFile {
                cf: state.id,
                level: *l as u32,
                file_no: f.file_no(),
            });
        }
        delete_inputs(&mut edit, state.id, c, &job.dest);
        let hot_run = self.versions.lock().new_run_id();
        let cold_run = match job.dest_run {
            Some(r) => r,
            None => self.versions.lock().new_run_id(),
        };
        let mut files = Vec::new();
        let hot_bytes = self.add_outputs(&mut edit, state.id, (h, hot_run), merged.hot, &mut files);
        let cold_bytes =
            self.add_outputs(&mut edit, state.id, (c, cold_run), merged.cold, &mut files);
        self.install_merge(state, edit, &guard, &gone, &files)?;
        info.outputs = files;
        crate::events::notify(self.id(), &self.listeners, |l| l.on_compaction_end(&info));
        let s = &self.stats;
        s.compactions.fetch_add(1, Ordering::Relaxed);
        s.proactive_compactions.fetch_add(1, Ordering::Relaxed);
        s.proactive_cold_records
            .fetch_add(merged.cold_keys, Ordering::Relaxed);
        s.compaction_bytes_written
            .fetch_add(hot_bytes + cold_bytes, Ordering::Relaxed);
        s.compaction_bytes_read
            .fetch_add(input_bytes, Ordering::Relaxed);
        Ok(ProactiveReport {
            placement: String::new(),
            skipped: None,
            hot_level: h,
            cold_level: c,
            input_files: gone.len(),
            input_bytes,
            cold_records: merged.cold_keys,
            hot_records: merged.hot_keys,
            cold_bytes,
            hot_bytes,
            cpu_ns: 0,
            wall_ns: 0,
        })
    }

    /// The two passes of a proactive compaction: the hot side first (it also counts the
    /// keys each side gets), then the cold side with the cold level's overlapping files.
    /// When the cold side fails the hot side's tables go too.
    #[allow(clippy::too_many_arguments)]
    fn proactive_merge(
        &self,
        state: &CfState,
        v: &CfVersion,
        job: &ProactiveInputs,
        placement: &Arc<dyn Placement>,
        sinks: &BlockSinks,
        (hot_dels, cold_dels): (Option<&RangeDels>, Option<&RangeDels>),
    ) -> Result<ProactiveOutputs> {
        let (h, c) = (job.hot_level, job.cold_level);
        let (mlo, mhi) = picker::merged_range(&job.upper, &job.dest);
        let snapshots = self.snapshots.all();
        let stop = || self.shutdown.load(Ordering::Acquire);
        let version_dels = self.version_range_dels(v)?;
        let side = |level, bottommost, range_dels| MergeInto {
            db: self,
            cf: state,
            level,
            deepest: v.deepest_nonempty().max(c),
            snapshots: &snapshots,
            bottommost,
            range_dels,
            version_dels: version_dels.as_deref(),
            renumbered_max: super::merge_job::renumbered_max(job.upper.iter().chain(&job.dest)),
            sinks,
            stop: &stop,
        };
        let hot = side(h, false, hot_dels);
        let cold = side(
            c,
            picker::is_bottommost(v, c, job.dest_run, &mlo, &mhi),
            cold_dels,
        );
        // Every run of the hot levels, each read a file at a time (`max_open_files`).
        let open_upper = || -> Box<dyn InternalIterator> {
            let mut children = Vec::new();
            for l in 0..=h {
                let files: Vec<Arc<FileMeta>> = job
                    .inputs
                    .iter()
                    .filter(|(fl, _)| *fl == l)
                    .map(|(_, f)| f.clone())
                    .collect();
                for chain in sorted_chains(&files) {
                    children.push(hot.run_input(l, chain));
                }
            }
            Box::new(MergingIterator::new(children))
        };
        let mut hot_it = PlacementFilter::new(open_upper(), placement.clone(), false);
        let hot_out = hot.merge(&mut hot_it, (None, None), None)?;
        let (hot_keys, cold_keys) = (hot_it.hot_keys, hot_it.cold_keys);
        drop(hot_it);
        let mut children: Vec<Box<dyn InternalIterator>> = vec![Box::new(PlacementFilter::new(
            open_upper(),
            placement.clone(),
            true,
        ))];
        for chain in sorted_chains(&job.dest) {
            children.push(cold.run_input(c, chain));
        }
        let mut cold_it = MergingIterator::new(children);
        let cold_out = match cold.merge(&mut cold_it, (None, None), None) {
            Ok(o) => o,
            Err(e) => {
                hot.remove(&hot_out);
                return Err(e);
            }
        };
        Ok(ProactiveOutputs {
            hot: hot_out,
            cold: cold_out,
            hot_keys,
            cold_keys,
        })
    }

    /// Writes every column family's query store to its file (at close).
    pub(crate) fn save_query_stores(&self) {
        let cfs: Vec<Arc<CfState>> = self.cfs.read().values().cloned().collect();
        for cf in cfs {
            let Some(rs) = &cf.records else { continue };
            let (h, records) = rs.snapshot();
            if let Err(e) = record_trace::write(
                &self.env,
                &query_store_path(&self.path, cf.id),
                &h,
                &records,
            ) {
                self.warn(format_args!(
                    "query store of column family {} not saved: {e}",
                    cf.name
                ));
            }
        }
    }
}

impl Db {
    /// Writes the record trace of a column family (SA-LSM's query store: per tracked
    /// record its insert and update times, newest access times and per-day counts) to
    /// `path`, atomically. Returns the number of records. `InvalidArgument` when
    /// [`Options::records`](crate::Options::records) is not set.
    pub fn export_record_trace(&self, cf: &ColumnFamily, path: impl AsRef<Path>) -> Result<usize> {
        let state = self.inner.cf_state(cf.id)?;
        let Some(rs) = &state.records else {
            return Err(Error::InvalidArgument(
                "the query store is off (Options::records)".into(),
            ));
        };
        let (h, records): (RecordTraceHeader, _) = rs.snapshot();
        record_trace::write(&self.inner.env, path.as_ref(), &h, &records)?;
        Ok(records.len())
    }

    /// The query store of a column family, when [`Options::records`](crate::Options::records) is set.
    pub fn record_store(&self, cf: &ColumnFamily) -> Option<Arc<RecordStore>> {
        self.inner.cf_state(cf.id).ok()?.records.clone()
    }

    /// Loads the cold-key set the external service wrote for `cf` (the next proactive
    /// compaction uses it). A damaged set, or one for another column family, is refused
    /// with an error and the set in use (if any) stays. Returns the number of keys.
    pub fn load_cold_set(&self, cf: &ColumnFamily, path: impl AsRef<Path>) -> Result<usize> {
        let set = ColdSet::read(path.as_ref())?;
        self.install_cold_set(cf, set)
    }

    /// Installs a cold-key set built in memory (tests, tools); see [`Db::load_cold_set`].
    pub fn install_cold_set(&self, cf: &ColumnFamily, set: ColdSet) -> Result<usize> {
        let state = self.inner.cf_state(cf.id)?;
        if set.cf_id != state.id {
            return Err(Error::InvalidArgument(format!(
                "the cold-key set is for column family {}, not {} ({})",
                set.cf_id, state.id, state.name
            )));
        }
        let n = set.len();
        self.inner
            .placement
            .cold_sets
            .lock()
            .insert(state.id, Arc::new(set));
        let cf = &state.name;
        self.inner
            .event("sa_lsm_cold_set", format_args!("cf={cf} keys={n}"));
        Ok(n)
    }

    /// Forgets the cold-key set of `cf` (proactive compaction then does nothing).
    pub fn clear_cold_set(&self, cf: &ColumnFamily) {
        self.inner.placement.cold_sets.lock().remove(&cf.id);
    }

    /// Runs a proactive compaction of `cf` now (SA-LSM Algorithm 3, as the external
    /// service asks for one): the hot tier's levels are merged and the records the
    /// placement calls cold move to the cold tier. Returns what it did, or why it did
    /// nothing (placement off, no or a stale cold-key set, back-off under load).
    /// `InvalidArgument` when the tiers have no cold level below a hot level 1.
    pub fn proactive_compact(&self, cf: &ColumnFamily) -> Result<ProactiveReport> {
        crate::events::refuse_in_callback(self.inner.id(), "proactive_compact")?;
        self.inner.proactive_compact(cf.id)
    }
}

/// What a proactive compaction merges.
struct ProactiveInputs {
    hot_level: usize,
    cold_level: usize,
    /// Every table of levels 0..=hot_level, with its level.
    inputs: Vec<(usize, Arc<FileMeta>)>,
    /// The same tables without their levels.
    upper: Vec<Arc<FileMeta>>,
    /// The cold level's active run, and its tables overlapping the inputs.
    dest_run: Option<u64>,
    dest: Vec<Arc<FileMeta>>,
}

impl ProactiveInputs {
    /// The inputs in `v` of a compaction of levels 0..=h into `c`; None when the hot tier
    /// holds no tables.
    fn of(v: &CfVersion, h: usize, c: usize) -> Option<ProactiveInputs> {
        let inputs: Vec<(usize, Arc<FileMeta>)> = (0..=h)
            .flat_map(|l| {
                v.levels[l]
                    .runs
                    .iter()
                    .flat_map(move |r| r.files.iter().map(move |f| (l, f.clone())))
            })
            .collect();
        if inputs.is_empty() {
            return None;
        }
        let lo = inputs
            .iter()
            .map(|(_, f)| f.smallest_user())
            .min()?
            .to_vec();
        let hi = inputs.iter().map(|(_, f)| f.largest_user()).max()?.to_vec();
        let (dest_run, dest) = match v.levels[c].active() {
            Some(r) => (Some(r.id), r.overlapping(&lo, &hi)),
            None => (None, Vec::new()),
        };
        Some(ProactiveInputs {
            hot_level: h,
            cold_level: c,
            upper: inputs.iter().map(|(_, f)| f.clone()).collect(),
            inputs,
            dest_run,
            dest,
        })
    }

    /// Every input table, upper levels first.
    fn all(&self) -> impl Iterator<Item = &Arc<FileMeta>> {
        self.upper.iter().chain(&self.dest)
    }

    /// The listeners' description of the job (no outputs yet).
    fn info(&self, state: &CfState) -> CompactionInfo {
        let c = self.cold_level;
        CompactionInfo {
            cf: state.id,
            cf_name: state.name.clone(),
            input_level: self.hot_level,
            output_level: c,
            reason: "proactive",
            inputs: self
                .inputs
                .iter()
                .map(|(l, f)| (*l, f))
                .chain(self.dest.iter().map(|f| (c, f)))
                .map(|(level, f)| InputFile {
                    file_no: f.file_no(),
                    level,
                    size: f.size(),
                })
                .collect(),
            outputs: Vec::new(),
            trivial_move: false,
        }
    }
}

/// The two sides a proactive compaction wrote, and the keys each got.
struct ProactiveOutputs {
    hot: Vec<MergeOutput>,
    cold: Vec<MergeOutput>,
    hot_keys: u64,
    cold_keys: u64,
}
