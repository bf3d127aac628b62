//! Bourbon's background learner: tables open with fence pointers; once a table has been
//! readable for the wait time (learning guideline 2) the learner trains its model and
//! installs it (readers switch without locks). Which tables: every one (`Always`), none
//! (`Never`), or those the cost-benefit analyzer picks (`Cba`, see [`crate::learned::cba`]).
//!
//! The analyzer's inputs: lookups per table ([`Table::usage`]), sampled fence-path and
//! model-path lookup times per level (level counters in stats), learning time per entry
//! (measured here, thread CPU time), and table lifetimes per level (from first open for
//! reads to deletion, the last [`LIFETIMES_KEPT`] per level).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;

use super::table_cache::model_path;
use crate::clock::thread_cpu_nanos;
use crate::ids::FileNo;
use crate::learned::cba::{self, CbaInput, LearnCost, PathSamples};
use crate::options::LearnMode;
use crate::stats::{LevelCounters, StatsInner};
use crate::storage::{FileKind, StorageEnv, MAX_TRACKED_LEVELS};
use crate::table::{model_file, Table};

/// Lifetimes remembered per level.
pub(crate) const LIFETIMES_KEPT: usize = 32;
/// Learning cost per entry assumed before the first measurement. Bourbon reports ~40 ms
/// for a table of a few hundred thousand entries (~100 ns); cairn's learner measured
/// 34-45 ns an entry on 60k-entry tables. The priors only set how long the first table
/// waits: the analyzer learns a table once its lookups would have repaid the learning, so
/// a prior of 100 ns (and 0.6 below) kept every table of a 10M-record read-only run on
/// the fence path for its first 3.5 s.
const PRIOR_LEARN_NS_PER_ENTRY: f64 = 50.0;
/// Model-path time as a fraction of fence-path time assumed before any model-path lookup
/// was timed (Bourbon: 2-3 us against ~4 us; cairn measured 0.33-0.47 on the synthetic
/// datasets at 1M-10M records).
const PRIOR_MODEL_RATIO: f64 = 0.5;

struct Tracked {
    table: Weak<Table>,
    level: usize,
    tier: usize,
    /// When it was first opened, on the engine's clock.
    born: Duration,
    /// Learned, or learning failed: nothing more to do.
    done: bool,
}

struct State {
    tables: HashMap<FileNo, Tracked>,
    lifetimes: Vec<VecDeque<Duration>>,
    learn_cost: LearnCost,
}

pub(crate) struct Learner {
    delta: u32,
    mode: LearnMode,
    wait: Duration,
    stats: Arc<StatsInner>,
    env: StorageEnv,
    state: Mutex<State>,
}

impl Learner {
    pub(crate) fn new(
        delta: u32,
        mode: LearnMode,
        wait_ms: u32,
        stats: Arc<StatsInner>,
        env: StorageEnv,
    ) -> Self {
        Learner {
            delta,
            mode,
            wait: Duration::from_millis(wait_ms as u64),
            stats,
            env,
            state: Mutex::new(State {
                lifetimes: vec![VecDeque::new(); MAX_TRACKED_LEVELS],
                tables: HashMap::new(),
                learn_cost: LearnCost::with_prior(PRIOR_LEARN_NS_PER_ENTRY),
            }),
        }
    }

    /// How often the background thread looks for tables to learn.
    pub(crate) fn tick(&self) -> Duration {
        (self.wait / 4).clamp(Duration::from_millis(1), Duration::from_millis(10))
    }

    /// A table was opened for reads at `level` (its file in `tier`). A table opened again
    /// after the table cache closed it (`Options::max_open_files`) replaces the closed
    /// one: it keeps its age (its lifetime runs from its first opening), and unless it
    /// loaded its saved model it is learned again, at once if it is old enough.
    pub(crate) fn register(&self, t: &Arc<Table>, level: usize, tier: usize) {
        let mut s = self.state.lock();
        let tracked = s.tables.entry(t.file_no()).or_insert(Tracked {
            table: Arc::downgrade(t),
            level: level.min(MAX_TRACKED_LEVELS - 1),
            tier,
            born: self.env.engine_clock().now(),
            done: t.is_learned(),
        });
        if !std::ptr::eq(tracked.table.as_ptr(), Arc::as_ptr(t)) {
            tracked.table = Arc::downgrade(t);
            tracked.done = t.is_learned();
        }
    }

    /// Installs the model saved beside a table opened for reads, if there is a sound one
    /// (a missing, damaged or foreign file is ignored: the table is learned again; so is
    /// a model numbering keys otherwise than this table's key space would, such as a
    /// version-1 model, which kept the keys' common prefix).
    pub(crate) fn load_model(&self, t: &Table, tier: usize, level: usize) {
        let path = model_path(&self.env, tier, t.file_no());
        if self.mode == LearnMode::Never || !path.exists() {
            return;
        }
        let read = || -> crate::Result<_> {
            let f = self
                .env
                .open_read(&path, FileKind::Model, tier, Some(level), false)?;
            let raw = f.read_at(0, f.size() as usize)?;
            let m = model_file::decode(
                &raw,
                t.properties().num_entries,
                t.file_size(),
                &path.display().to_string(),
            )?;
            if m.space() != &t.key_space() {
                return Err(crate::Error::corruption(
                    path.display().to_string(),
                    "model file: numbers keys in another key space",
                ));
            }
            Ok(m)
        };
        match read() {
            Ok(m) => {
                if t.install_learned(m) {
                    self.stats.learned_models_loaded.fetch_add(1, Relaxed);
                }
            }
            Err(_) => {
                self.stats.learned_models_rejected.fetch_add(1, Relaxed);
            }
        }
    }

    /// Saves a table's model beside it: written to a temporary name, synced, renamed.
    fn save_model(&self, t: &Table, tier: usize, level: usize) -> crate::Result<()> {
        let Some(m) = t.learned_index() else {
            return Ok(());
        };
        let path = model_path(&self.env, tier, t.file_no());
        let tmp = path.with_extension("plr.tmp");
        let mut f = self.env.create(&tmp, FileKind::Model, tier, Some(level))?;
        f.append(&model_file::encode(m, t.file_size()))?;
        f.sync()?;
        drop(f);
        self.env.rename(&tmp, &path)
    }

    /// A table was deleted: remember its lifetime at its level.
    pub(crate) fn retire(&self, file_no: FileNo) {
        let mut s = self.state.lock();
        if let Some(t) = s.tables.remove(&file_no) {
            let l = &mut s.lifetimes[t.level];
            if l.len() == LIFETIMES_KEPT {
                l.pop_front();
            }
            l.push_back(self.env.engine_clock().now().saturating_sub(t.born));
        }
    }

    /// Mean lifetime of recently deleted tables at `level`.
    fn expected_life(s: &State, level: usize) -> Option<Duration> {
        let l = &s.lifetimes[level];
        (!l.is_empty()).then(|| l.iter().sum::<Duration>() / l.len() as u32)
    }

    /// Fence-path and model-path times at `level` ([`cba::path_times`]).
    fn path_times(&self, level: usize) -> Option<(f64, f64)> {
        let samples = |c: &LevelCounters| {
            let load = |ns: &AtomicU64, n: &AtomicU64| PathSamples {
                ns: ns.load(Relaxed),
                n: n.load(Relaxed),
            };
            (
                load(&c.fence_path_ns, &c.fence_path_samples),
                load(&c.model_path_ns, &c.model_path_samples),
            )
        };
        let all = self.stats.levels.iter().map(samples).fold(
            (PathSamples::default(), PathSamples::default()),
            |(f, m), (lf, lm)| (f.plus(lf), m.plus(lm)),
        );
        cba::path_times(samples(self.stats.level(level)), all, PRIOR_MODEL_RATIO)
    }

    /// Learns the tables that are due. Returns how many were learned.
    pub(crate) fn pass(&self) -> usize {
        if self.mode == LearnMode::Never {
            return 0;
        }
        let _bg = crate::clock::BackgroundWork::enter();
        let now = self.env.engine_clock().now();
        let mut due = Vec::new();
        {
            let mut s = self.state.lock();
            let learn_ns = s.learn_cost.per_entry();
            let mut lives = [None; MAX_TRACKED_LEVELS];
            for (l, life) in lives.iter_mut().enumerate() {
                *life = Self::expected_life(&s, l);
            }
            for t in s.tables.values_mut() {
                let age = now.saturating_sub(t.born);
                if t.done || age < self.wait {
                    continue;
                }
                let Some(table) = t.table.upgrade() else {
                    t.done = true;
                    continue;
                };
                if table.is_learned() {
                    t.done = true;
                    continue;
                }
                let learn = match self.mode {
                    LearnMode::Always => true,
                    LearnMode::Never => false,
                    LearnMode::Cba => {
                        let usage = table.usage().snapshot();
                        // Gets time the paths per level; a scan-only workload has none, so
                        // the table's own sampled seeks stand in (model time: the prior).
                        let own = (usage.fence_samples > 0).then(|| {
                            let f = usage.fence_ns as f64 / usage.fence_samples as f64;
                            (f, f * PRIOR_MODEL_RATIO)
                        });
                        self.path_times(t.level)
                            .or(own)
                            .is_some_and(|(fence, model)| {
                                cba::should_learn(&CbaInput {
                                    entries: table.properties().num_entries,
                                    age,
                                    lookups: usage.index_lookups,
                                    expected_life: lives[t.level],
                                    fence_ns: fence,
                                    model_ns: model,
                                    learn_ns_per_entry: learn_ns,
                                })
                            })
                    }
                };
                if learn {
                    t.done = true;
                    due.push((table, t.tier, t.level));
                }
            }
        }
        // Oldest table first, and the same order in every run (the map's is random):
        // on the virtual clock the order of the model files' writes is timed.
        due.sort_by_key(|(t, _, _)| t.file_no());
        due.iter()
            .filter(|(t, tier, level)| {
                let learned = self.learn(t);
                if learned && self.save_model(t, *tier, *level).is_err() {
                    // Only a restart's relearning is lost.
                    self.stats.learn_errors.fetch_add(1, Relaxed);
                }
                learned
            })
            .count()
    }

    /// Learns one table, counting CPU time, entries and segments.
    fn learn(&self, t: &Table) -> bool {
        let c0 = thread_cpu_nanos();
        let r = t.learn(self.delta);
        let ns = thread_cpu_nanos().saturating_sub(c0);
        self.stats.learn_cpu_nanos.fetch_add(ns, Relaxed);
        match r {
            Ok(true) => {
                let entries = t.properties().num_entries;
                let segs = t.learned_index().map_or(0, |l| l.num_segments());
                self.stats.learned_tables.fetch_add(1, Relaxed);
                self.stats.learned_segments.fetch_add(segs as u64, Relaxed);
                self.stats.learned_entries.fetch_add(entries, Relaxed);
                self.state.lock().learn_cost.record(ns, entries);
                true
            }
            Ok(false) => false,
            Err(_) => {
                // The table keeps its fence pointers; reads report real corruption.
                self.stats.learn_errors.fetch_add(1, Relaxed);
                false
            }
        }
    }
}
