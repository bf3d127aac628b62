//! cairn, configured to the shared budget (or a named preset with the budget applied on
//! top).

use super::{
    BenchConfig, Engine, EngineCounters, EngineExtras, JobKind, JobSpan, PrefetchCounters,
    ProactiveSummary, ReadCacheGauges,
};
use crate::measure::belady::{BlockTrace, TracingCache};
use anyhow::{anyhow, Context, Result};
use cairn::events::{CompactionInfo, EventListener, FlushInfo};
use cairn::policy::{PrefetchPolicy, TunerPolicy};
use cairn::{CfId, Db, FileNo, Options, ReadCachePolicy, WriteOptions};
use parking_lot::Mutex;
use std::path::Path;
use std::sync::Arc;

/// `cairn:oracle`: Leaper's mechanism fed with the hot ranges the harness reads off its own
/// op stream (an upper bound); built here because the engine cannot know the stream.
pub const ORACLE: &str = "oracle";

pub struct CairnEngine {
    db: Db,
    write_opts: WriteOptions,
    jobs: Arc<JobLog>,
    block_trace: Option<Arc<BlockTrace>>,
}

/// Records when flushes and compactions start and end (cairn's event listener).
#[derive(Default)]
struct JobLog {
    spans: Mutex<Vec<(JobKey, JobSpan)>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum JobKey {
    Flush(CfId, u64),
    Compaction(CfId, usize, Vec<FileNo>),
}

impl JobLog {
    fn begin(&self, key: JobKey, kind: JobKind, detail: String) {
        self.spans.lock().push((
            key,
            JobSpan {
                kind,
                start: crate::measure::clock::now(),
                end: None,
                detail,
            },
        ));
    }

    fn end(&self, key: &JobKey) {
        let now = crate::measure::clock::background_done();
        let mut spans = self.spans.lock();
        if let Some((_, s)) = spans
            .iter_mut()
            .rev()
            .find(|(k, s)| k == key && s.end.is_none())
        {
            s.end = Some(now);
        }
    }
}

fn compaction_key(i: &CompactionInfo) -> JobKey {
    JobKey::Compaction(
        i.cf,
        i.output_level,
        i.inputs.iter().map(|f| f.file_no).collect(),
    )
}

impl EventListener for JobLog {
    fn on_flush_begin(&self, info: &FlushInfo) {
        self.begin(
            JobKey::Flush(info.cf, info.memtable_id),
            JobKind::Flush,
            "memtable->L0".into(),
        );
    }
    fn on_flush_end(&self, info: &FlushInfo) {
        self.end(&JobKey::Flush(info.cf, info.memtable_id));
    }
    fn on_compaction_begin(&self, info: &CompactionInfo) {
        let kind = if info.trivial_move {
            JobKind::Move
        } else {
            JobKind::Compaction
        };
        self.begin(
            compaction_key(info),
            kind,
            format!("L{}->L{}", info.input_level, info.output_level),
        );
    }
    fn on_compaction_end(&self, info: &CompactionInfo) {
        self.end(&compaction_key(info));
    }
}

impl CairnEngine {
    /// `preset` is the part after `cairn:`; the budget flags override the preset's sizes
    /// so cairn and RocksDB are always given the same memory.
    pub fn open_preset(
        dir: &Path,
        cfg: &BenchConfig,
        preset: Option<&str>,
        extras: &EngineExtras,
    ) -> Result<Self> {
        let mut opts = match preset {
            None => Options::default(),
            Some(ORACLE) => {
                let source = extras
                    .oracle
                    .clone()
                    .ok_or_else(|| anyhow!("cairn:oracle needs the harness's op stream"))?;
                let mut o = cairn::presets::by_name(ORACLE).unwrap_or_default();
                o.prefetch = PrefetchPolicy::Oracle(source);
                o
            }
            Some(name) => cairn::presets::by_name(name)
                .ok_or_else(|| anyhow!("cairn has no preset `{name}`"))?,
        };
        if let Some(a) = opts.access.as_mut() {
            a.slot_ms = cfg.leaper_slot_ms.max(1);
            if let Some(p) = cfg.leaper_sample_p {
                a.sample_p = p;
            }
            if let Some(c) = &extras.clock {
                a.clock = c.clone();
            }
        }
        if let Some(t) = cfg.invalidation_window_ms {
            opts.invalidation_window_ms = t;
            opts.invalidation_metric = true;
        }
        if cfg.flush_only {
            // Level 0 never reaches a trigger and seeks do not ask for its compaction,
            // so nothing compacts.
            opts.read_triggered_compaction = false;
            opts.l0_compaction_trigger = 1 << 20;
            opts.l0_slowdown_trigger = 1 << 20;
            opts.l0_stop_trigger = 1 << 20;
        }
        apply_shape(&mut opts, cfg);
        if let Some(s) = &extras.salsm {
            if let Some(r) = opts.records.as_mut() {
                r.clock = s.clock.clone();
                r.day_ms = s.day_ms;
                if let Some(n) = s.store_times {
                    r.max_times = n;
                }
            }
            opts.placement.clock = s.clock.clone();
            opts.placement.hot_level_slack = s.hot_level_slack;
            opts.latency_scale = s.latency_scale;
            if let Some(t) = s.target_file_size {
                opts.target_file_size = t;
            }
            if let (cairn::policy::PlacementPolicy::AgeTier { max_age_ms }, Some(age)) =
                (&mut opts.placement.policy, s.age_tier_ms)
            {
                *max_age_ms = age;
            }
        }
        let jobs = Arc::new(JobLog::default());
        opts.listeners.push(jobs.clone());
        opts.write_buffer_size = cfg.write_buffer_size;
        opts.max_write_buffers = cfg.memtables.max(2);
        opts.max_subcompactions = cfg.subcompactions.clamp(1, 64);
        opts.max_background_compactions = cfg.compaction_jobs.clamp(1, 64);
        opts.block_cache_bytes = cfg.cache_bytes;
        opts.bloom_bits_per_key = cfg.bloom_bits;
        opts.use_direct_reads = cfg.direct_io;
        opts.cache_index_and_filter_blocks = cfg.cache_index_and_filter_blocks;
        if let Some(m) = cfg.mmap_reads {
            opts.mmap_reads = m;
        }
        opts.cache_local_filter = !cfg.classic_filter;
        // The same codec at every level, as the bench sets RocksDB's.
        opts.compression = cfg.compression;
        opts.compression_per_level.clear();
        opts.bottommost_compression = None;
        opts.create_if_missing = true;
        let profile = match cfg.device {
            _ if cfg.clock == super::ClockKind::Virtual => None,
            super::Device::None => None,
            super::Device::Ssd => Some(cairn::DeviceProfile::Ssd),
            super::Device::Hdd => Some(cairn::DeviceProfile::Hdd),
            super::Device::Nvme => Some(cairn::DeviceProfile::Custom {
                read_us: 77.0,
                write_us: 18.0,
                mib_per_sec: 3052.0,
            }),
        };
        if cfg.clock == super::ClockKind::Virtual {
            // Every I/O priced on the device; background work at the harness's fixed
            // points, in its thread, so a rerun repeats exactly.
            let model = cfg.device.model().ok_or_else(|| {
                anyhow!("--clock virtual needs a device model: --device nvme, ssd or hdd")
            })?;
            opts.clock = cairn::Clock::Virtual(model);
            opts.background_work = false;
        }
        if let Some(profile) = profile {
            // One tier, the database directory itself, with the device's added latency.
            opts.tiers = vec![cairn::TierConfig {
                dir: ".".into(),
                first_level: 0,
                profile,
            }];
        }
        let block_trace = (cfg.block_trace && opts.read_cache == ReadCachePolicy::Block)
            .then(|| trace_blocks(&mut opts));
        let db =
            Db::open(dir, opts).with_context(|| format!("opening cairn in {}", dir.display()))?;
        Ok(CairnEngine {
            db,
            write_opts: WriteOptions {
                sync: cfg.sync,
                query_column: None,
                disable_wal: false,
            },
            jobs,
            block_trace,
        })
    }
}

/// Gives the database the LRU block cache it would make itself, behind a recorder of
/// its lookups.
fn trace_blocks(opts: &mut Options) -> Arc<BlockTrace> {
    let shards = match opts.block_cache_shards {
        0 => cairn::options::auto_cache_shards(opts.block_cache_bytes),
        n => n,
    };
    let lru = cairn::cache::LruBlockCache::with_hot_share(
        opts.block_cache_bytes,
        shards,
        opts.block_cache_hot_share,
    );
    let trace = Arc::new(BlockTrace::default());
    opts.block_cache = Some(Arc::new(TracingCache::new(Arc::new(lru), trace.clone())));
    trace
}

/// Sets the number of levels; a preset's run limits keep their inner entries and their
/// last level's (lazy-leveling's K = 1 stays on the last level).
fn set_num_levels(opts: &mut Options, n: usize) {
    let below_l0 = n.saturating_sub(1);
    if opts.level_runs.len() > below_l0 {
        let last = opts.level_runs.last().copied();
        opts.level_runs.truncate(below_l0);
        if let (Some(k), Some(slot)) = (last, opts.level_runs.last_mut()) {
            *slot = k;
        }
    }
    opts.num_levels = n;
}

/// The tree's shape flags: level-1 capacity, table size, size ratio, levels, mission size.
fn apply_shape(opts: &mut Options, cfg: &BenchConfig) {
    if let Some(b) = cfg.level1_bytes {
        opts.level1_bytes = b;
    }
    if let Some(b) = cfg.target_file_size {
        opts.target_file_size = b;
    }
    if let Some(n) = cfg.l0_trigger {
        // Slowdown and stop stay above the trigger, as RocksDB requires of its own.
        opts.l0_compaction_trigger = n;
        opts.l0_slowdown_trigger = opts.l0_slowdown_trigger.max(n + 1);
        opts.l0_stop_trigger = opts.l0_stop_trigger.max(n + 2);
    }
    if let Some(n) = cfg.num_levels {
        set_num_levels(opts, n);
    }
    if let Some(t) = cfg.size_ratio {
        // Presets derive their run limits from the default T: an entry equal to it means
        // K = T (tiering, lazy-leveling) and follows the new T; the others (moderate's 5)
        // are kept, clamped to the new T (K_i <= T).
        let old = opts.size_ratio;
        for k in &mut opts.level_runs {
            *k = if *k == old { t } else { (*k).min(t) };
        }
        opts.size_ratio = t;
    }
    // The tuner's missions are the harness's: one per --mission-ops operations.
    opts.tuner.mission_ops = cfg.mission_ops();
    apply_tuner_seed(opts, cfg);
    opts.stats_dump_period_ms = cfg.stats_dump_ms.unwrap_or(0);
    opts.release_memory_after_jobs = cfg.release_memory_after_jobs;
    opts.read_triggered_compaction &= cfg.read_triggered_compaction;
}

/// `--tuner-seed`: a learned tuner's seed, so repeats of one preset differ only by it;
/// tuners without randomness (static, greedy) have none to set.
fn apply_tuner_seed(opts: &mut Options, cfg: &BenchConfig) {
    if let (Some(seed), TunerPolicy::Lerp(p)) = (cfg.tuner_seed, &mut opts.tuner.policy) {
        p.seed = seed;
    }
}

impl CairnEngine {
    /// Files and sorted runs per level at the end of the run (`files_L0`, `runs_L0`, ...),
    /// levels holding data only: what a seek has to merge.
    fn tree_shape(&self) -> Vec<(String, f64)> {
        let levels = self
            .db
            .level_info(&self.db.default_cf())
            .unwrap_or_default();
        levels
            .iter()
            .filter(|l| !l.runs.is_empty())
            .flat_map(|l| {
                let files: usize = l.runs.iter().map(|r| r.files).sum();
                [
                    (format!("files_L{}", l.level), files as f64),
                    (format!("runs_L{}", l.level), l.runs.len() as f64),
                ]
            })
            .collect()
    }

    /// `f` of levels 1..=deepest with data (at least level 1).
    fn levels(&self, f: impl Fn(&cairn::LevelInfo) -> usize) -> Option<Vec<usize>> {
        let levels = self.db.level_info(&self.db.default_cf()).ok()?;
        let deepest = levels
            .iter()
            .rposition(|l| !l.runs.is_empty())
            .unwrap_or(1)
            .max(1);
        Some(
            levels
                .iter()
                .filter(|l| (1..=deepest).contains(&l.level))
                .map(f)
                .collect(),
        )
    }
}

impl Engine for CairnEngine {
    fn open(dir: &Path, cfg: &BenchConfig) -> Result<Self> {
        Self::open_preset(dir, cfg, None, &EngineExtras::default())
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.db.put(&self.write_opts, key, value)?)
    }

    fn put_column(&self, key: &[u8], value: &[u8], column: u8) -> Result<()> {
        let wo = WriteOptions {
            query_column: Some(column),
            ..self.write_opts
        };
        Ok(self.db.put(&wo, key, value)?)
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>> {
        Ok(self.db.get(key)?.map(|v| v.len()))
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        Ok(self.db.delete(&self.write_opts, key)?)
    }

    fn delete_range(&self, start: &[u8], end: &[u8]) -> Result<()> {
        Ok(self.db.delete_range(&self.write_opts, start, end)?)
    }

    fn scan(&self, start: &[u8], n: usize) -> Result<usize> {
        // The cursor, as RocksDB's raw iterator is read: no copy of each entry.
        let mut it = self
            .db
            .iter(&cairn::ReadOptions::default(), &self.db.default_cf())?;
        it.seek(start);
        let mut read = 0;
        while read < n && it.valid() {
            std::hint::black_box((it.key(), it.value()));
            read += 1;
            // Not past the last entry asked for: the step would position on (and the
            // query store would count as read) one record the scan never reads.
            if read < n {
                it.next();
            }
        }
        it.status()?;
        Ok(read)
    }

    fn flush(&self) -> Result<()> {
        Ok(self.db.flush()?)
    }

    fn counters(&self) -> EngineCounters {
        let s = self.db.stats();
        let io = s.io.total();
        EngineCounters {
            read_ops: io.read_ops,
            read_bytes: io.read_bytes,
            write_ops: io.write_ops,
            write_bytes: io.write_bytes,
            cache_hits: s.block_cache_hits,
            cache_misses: s.block_cache_misses,
            // cairn counts its cache's hits and misses on data blocks (DbStats).
            data_block_misses: Some(s.block_cache_misses),
            user_bytes_written: s.user_bytes_written,
            flush_bytes_written: s.flush_bytes_written,
            compaction_bytes_written: s.compaction_bytes_written,
            flushes_running: s.flushes_running,
            compactions_running: s.compactions_running,
            invalidation_misses: s.prefetch.invalidation_misses,
            cold_read_ops: s.io.tier(1).read_ops,
            compaction_bytes_read: s.compaction_bytes_read,
            stall_micros: s.stall_micros,
        }
    }

    fn export_record_trace(&self, path: &Path) -> Result<Option<usize>> {
        let cf = self.db.default_cf();
        if self.db.record_store(&cf).is_none() {
            return Ok(None);
        }
        let n = self
            .db
            .export_record_trace(&cf, path)
            .with_context(|| format!("exporting the record trace to {}", path.display()))?;
        Ok(Some(n))
    }

    fn load_cold_set(&self, path: &Path) -> Result<usize> {
        let cf = self.db.default_cf();
        self.db
            .load_cold_set(&cf, path)
            .with_context(|| format!("loading the cold-key set {}", path.display()))
    }

    fn proactive_compact(&self) -> Result<Option<ProactiveSummary>> {
        if self.db.options().tiers.len() < 2 {
            return Ok(None);
        }
        let r = self.db.proactive_compact(&self.db.default_cf())?;
        Ok(Some(ProactiveSummary {
            placement: r.placement,
            skipped: r.skipped,
            input_files: r.input_files,
            input_bytes: r.input_bytes,
            cold_records: r.cold_records,
            hot_records: r.hot_records,
            cold_bytes: r.cold_bytes,
            hot_bytes: r.hot_bytes,
            cpu_ns: r.cpu_ns,
            wall_ns: r.wall_ns,
        }))
    }

    fn compact_all(&self) -> Result<()> {
        Ok(self.db.compact_range(None, None)?)
    }

    fn level_bytes(&self) -> Option<Vec<u64>> {
        let levels = self.db.level_info(&self.db.default_cf()).ok()?;
        Some(
            levels
                .iter()
                .map(|l| l.runs.iter().map(|r| r.bytes).sum())
                .collect(),
        )
    }

    fn level_ks(&self) -> Option<Vec<usize>> {
        self.levels(|l| l.k as usize)
    }

    fn level_run_counts(&self) -> Option<Vec<usize>> {
        self.levels(|l| l.runs.len())
    }

    fn set_run_limits(&self, k: usize) -> Result<Option<usize>> {
        let cf = self.db.default_cf();
        let o = self.db.options();
        let k = k.clamp(1, o.size_ratio);
        for level in 1..o.num_levels {
            self.db
                .set_policy(&cf, level, k, o.tuner.transition)
                .with_context(|| format!("setting K_{level} = {k}"))?;
        }
        Ok(Some(k))
    }

    fn jobs(&self) -> Vec<JobSpan> {
        self.jobs
            .spans
            .lock()
            .iter()
            .map(|(_, s)| s.clone())
            .collect()
    }

    fn block_trace(&self) -> Option<Arc<BlockTrace>> {
        self.block_trace.clone()
    }

    fn prefetch(&self) -> Option<PrefetchCounters> {
        let p = self.db.stats().prefetch;
        Some(PrefetchCounters {
            warmed_blocks: p.warmed_blocks,
            warmed_hits: p.warmed_hits,
            evicted_blocks: p.evicted_blocks,
            invalidated_blocks: p.invalidated_blocks,
            invalidation_misses: p.invalidation_misses,
            invalidation_misses_during: p.invalidation_misses_during,
            invalidation_misses_flush: p.invalidation_misses_flush,
            invalidation_misses_scan: p.invalidation_misses_scan,
            invalidation_misses_1s: p.invalidation_misses_1s,
            invalidation_misses_60s: p.invalidation_misses_60s,
            model_errors: p.model_errors,
            jobs_with_model: p.jobs_with_model,
            alpha_ms_per_block: p.alpha_ms_per_block,
            beta: p.beta,
            rollbacks: p.rollbacks,
            model_evals: p.model_evals,
            inference_ns: p.inference_ns,
        })
    }

    fn export_access_trace(&self, path: &Path) -> Result<Option<usize>> {
        let cf = self.db.default_cf();
        if self.db.access_collector(&cf).is_none() {
            return Ok(None);
        }
        let rows = self
            .db
            .export_access_trace(&cf, path)
            .with_context(|| format!("exporting the access trace to {}", path.display()))?;
        Ok(Some(rows))
    }

    fn load_leaper_model(&self, path: &Path) -> Result<()> {
        let cf = self.db.default_cf();
        self.db
            .load_leaper_model(&cf, path)
            .with_context(|| format!("loading the Leaper model {}", path.display()))
    }

    fn read_cache(&self) -> Option<ReadCacheGauges> {
        let s = self.db.stats();
        let c = &s.read_cache;
        Some(ReadCacheGauges {
            policy: c.policy.clone(),
            capacity: c.capacity,
            kv_bytes: c.kv_bytes,
            kp_bytes: c.kp_bytes,
            block_bytes: c.block_bytes,
            ghost_bytes: c.ghost_bytes,
            kv_hits: c.kv_hits,
            kp_hits: c.kp_hits,
            block_hits: c.block_hits,
            block_misses: c.block_misses,
            ghost_hits: c.ghost_hits,
            foreground_reads: s.levels.iter().map(|l| l.storage_reads).sum(),
        })
    }

    fn extra_stats(&self) -> std::collections::BTreeMap<String, f64> {
        let s = self.db.stats();
        let mean = |ns: u64, n: u64| if n > 0 { ns as f64 / n as f64 } else { 0.0 };
        let sum = |f: fn(&cairn::LevelStats) -> u64| s.levels.iter().map(f).sum::<u64>();
        let pct_seg = if s.learned_entries > 0 {
            100.0 * s.learned_segments as f64 / s.learned_entries as f64
        } else {
            0.0
        };
        [
            ("learned_tables", s.learned_tables as f64),
            ("learned_segments", s.learned_segments as f64),
            ("learned_entries", s.learned_entries as f64),
            ("learned_pct_segments", pct_seg),
            ("learn_cpu_ms", s.learn_cpu_nanos as f64 / 1e6),
            (
                "read_triggered_compactions",
                s.read_triggered_compactions as f64,
            ),
            ("subcompactions", s.subcompactions as f64),
            ("compaction_jobs_peak", s.compaction_jobs_peak as f64),
            ("learned_lookups", s.learned_lookups as f64),
            ("learned_fallbacks", s.learned_fallbacks as f64),
            ("learned_seeks", s.learned_seeks as f64),
            ("learned_seek_fallbacks", s.learned_seek_fallbacks as f64),
            // Bourbon's lookup breakdown: mean ns per sampled get in each step.
            ("step_samples", s.lookup_steps.samples as f64),
            ("step_memtables_ns", s.lookup_steps.memtables_ns),
            ("step_point_cache_ns", s.lookup_steps.point_cache_ns),
            ("step_filters_ns", s.lookup_steps.filters_ns),
            ("step_index_ns", s.lookup_steps.index_ns),
            ("step_data_ns", s.lookup_steps.data_ns),
            ("step_value_ns", s.lookup_steps.value_ns),
            ("step_other_ns", s.lookup_steps.other_ns),
            ("step_total_ns", s.lookup_steps.total_ns),
            (
                "fence_path_ns",
                mean(sum(|l| l.fence_path_ns), sum(|l| l.fence_path_samples)),
            ),
            (
                "model_path_ns",
                mean(sum(|l| l.model_path_ns), sum(|l| l.model_path_samples)),
            ),
            (
                "fence_index_ns",
                mean(sum(|l| l.fence_index_ns), sum(|l| l.fence_path_samples)),
            ),
            (
                "model_index_ns",
                mean(sum(|l| l.model_index_ns), sum(|l| l.model_path_samples)),
            ),
            // RusKey's tuner (Fig. 13: training time against the missions' operation time).
            ("tuner_missions", s.tuner.missions as f64),
            ("tuner_changes", s.tuner.changes as f64),
            ("tuner_missions_skipped", s.tuner.missions_skipped as f64),
            ("tuner_train_cpu_ms", s.tuner.train_cpu_ns as f64 / 1e6),
            ("tuner_mission_op_ms", s.tuner.mission_op_ns as f64 / 1e6),
            (
                "tuner_train_share_pct",
                if s.tuner.mission_op_ns > 0 {
                    100.0 * s.tuner.train_cpu_ns as f64 / s.tuner.mission_op_ns as f64
                } else {
                    0.0
                },
            ),
            (
                "tuner_pretrain_cpu_ms",
                s.tuner.pretrain_cpu_ns as f64 / 1e6,
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .chain(self.tree_shape())
        .collect()
    }

    fn virtual_clock(&self) -> Option<Arc<cairn::VirtualClock>> {
        self.db.virtual_clock().cloned()
    }

    fn run_background_work(&self) -> Result<()> {
        if self.db.options().background_work {
            return Ok(());
        }
        Ok(self.db.run_background_work()?)
    }

    fn cpu_counts(&self) -> Option<cairn::CpuCounts> {
        Some(self.db.cpu_counts())
    }

    fn close(self: Box<Self>) -> Result<()> {
        Ok(self.db.close()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scan of n entries reads n records: the query store must not count the one after
    /// the last as read (SA-LSM's truth and the oracle both count what the scan read).
    #[test]
    fn a_scan_reads_only_the_entries_it_asked_for() {
        let tmp = tempfile::tempdir().unwrap();
        let e = crate::engines::EngineName::parse("cairn:sa-lru")
            .unwrap()
            .open(&tmp.path().join("db"), &BenchConfig::default())
            .unwrap();
        let key = |i: u8| vec![b'k', i];
        for i in 0..10 {
            e.put(&key(i), b"v").unwrap();
        }
        assert_eq!(e.scan(&key(2), 3).unwrap(), 3);
        let path = tmp.path().join("trace.rtr");
        e.export_record_trace(&path).unwrap().unwrap();
        e.close().unwrap();
        let (_, recs) = cairn::access::record_trace::read(&path).unwrap();
        let mut read: Vec<u8> = recs
            .iter()
            .filter(|r| {
                r.times
                    .iter()
                    .any(|&t| !cairn::access::record_trace::time_is_write(t))
            })
            .map(|r| r.key[1])
            .collect();
        read.sort();
        assert_eq!(read, vec![2, 3, 4]);
    }

    fn shaped(preset: &str, cfg: &BenchConfig) -> Options {
        let mut o = cairn::presets::by_name(preset).unwrap();
        apply_shape(&mut o, cfg);
        o.validate().unwrap();
        o
    }

    #[test]
    fn shape_flags_rederive_preset_run_limits() {
        let none = BenchConfig::default();
        let d = shaped("tiering", &none);
        assert_eq!((d.size_ratio, d.level1_bytes), (10, 256 << 20));
        assert!(d.level_runs.iter().all(|&k| k == 10));
        let t4 = BenchConfig {
            size_ratio: Some(4),
            level1_bytes: Some(4 << 20),
            ..Default::default()
        };
        let t = shaped("tiering", &t4);
        assert_eq!((t.size_ratio, t.level1_bytes), (4, 4 << 20));
        assert!(t.level_runs.iter().all(|&k| k == 4), "{:?}", t.level_runs);
        // Moderate's K = 5 is clamped to T = 4; lazy-leveling keeps K = 1 at the last level.
        assert!(shaped("moderate", &t4).level_runs.iter().all(|&k| k == 4));
        let ll = shaped("lazy-leveling", &t4).level_runs;
        assert_eq!(ll.last(), Some(&1));
        assert!(ll[..ll.len() - 1].iter().all(|&k| k == 4), "{ll:?}");
        // A larger T: K = T follows it, moderate stays 5.
        let t20 = BenchConfig {
            size_ratio: Some(20),
            ..Default::default()
        };
        assert!(shaped("tiering", &t20).level_runs.iter().all(|&k| k == 20));
        assert!(shaped("moderate", &t20).level_runs.iter().all(|&k| k == 5));
        assert!(shaped("default", &t20).level_runs.is_empty());
    }

    /// --num-levels keeps lazy-leveling's one run on the configured last level (the one
    /// holding the bulk in RusKey's shape), and uniform presets uniform.
    #[test]
    fn num_levels_moves_lazy_levelings_last_level() {
        let four = BenchConfig {
            num_levels: Some(4),
            ..Default::default()
        };
        assert_eq!(shaped("lazy-leveling", &four).level_runs, vec![10, 10, 1]);
        assert_eq!(shaped("tiering", &four).level_runs, vec![10, 10, 10]);
        assert_eq!(shaped("k-3", &four).level_runs, vec![3, 3, 3]);
        assert_eq!(shaped("default", &four).num_levels, 4);
    }

    /// The flag turns read-triggered compaction off; left at its default it keeps the
    /// preset's (on by default, so `flush_only`'s off is not turned back on).
    #[test]
    fn read_triggered_flag_only_turns_it_off() {
        let off = BenchConfig {
            read_triggered_compaction: false,
            ..Default::default()
        };
        assert!(shaped("default", &BenchConfig::default()).read_triggered_compaction);
        assert!(!shaped("default", &off).read_triggered_compaction);
        let mut o = cairn::presets::by_name("default").unwrap();
        o.read_triggered_compaction = false;
        apply_shape(&mut o, &BenchConfig::default());
        assert!(!o.read_triggered_compaction);
    }

    #[test]
    fn tuner_seed_reaches_lerp_only() {
        let seed = |preset: &str, s: Option<u64>| {
            let cfg = BenchConfig {
                tuner_seed: s,
                ..Default::default()
            };
            match shaped(preset, &cfg).tuner.policy {
                TunerPolicy::Lerp(p) => Some(p.seed),
                _ => None,
            }
        };
        let own = seed("ruskey", None).unwrap();
        assert_ne!(own, 7);
        for p in ["ruskey", "ruskey-pretrained", "ruskey-monkey"] {
            assert_eq!(seed(p, Some(7)), Some(7), "{p}");
        }
        assert_eq!(seed("greedy", Some(7)), None);
        assert_eq!(seed("default", Some(7)), None);
    }
}
