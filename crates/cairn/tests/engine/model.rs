//! Model-based randomized test: random operations against a `Db` and against a
//! `BTreeMap` model per column family, comparing every read.
//!
//! Environment:
//! - `CAIRN_MODEL_SEEDS`: seeds per test (default 10; each of the two tests runs that many).
//! - `CAIRN_MODEL_SEED`: run only this seed (to replay a failure).
//! - `CAIRN_MODEL_SEED_BASE`: offset added to the default seeds (to explore others).
//! - `CAIRN_MODEL_OPS`: operations per seed (default 2000).
//! - `CAIRN_MODEL_TRACE`: print the operations as they run.
//! - `CAIRN_MODEL_PARANOID`: compare the whole state after every operation.

use std::ops::Bound;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

use cairn::{
    AcKeyParams, ColumnFamily, Db, DbIterator, IndexPolicy, Options, ReadCachePolicy, ReadOptions,
    Snapshot, Transition, WriteBatch, WriteOptions,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::support::{env_u64, Model};

const KEY_SPACE: u32 = 600;
const SIZE_RATIO: usize = 4;

fn key(i: u32) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

fn options(rng: &mut SmallRng, background: bool) -> Options {
    // Drawn from a copy, so that each seed's stream of operations stays what it was.
    let mut side = rng.clone();
    let subcompactions = side.random_range(1..=3);
    let compaction_jobs = side.random_range(1..=3);
    let cache_meta = side.random_bool(0.5);
    let mmap_reads = side.random_bool(0.5);
    // Half the runs close tables and value logs at the smallest bound.
    let max_open_files = side
        .random_bool(0.5)
        .then_some(cairn::options::MIN_OPEN_FILES);
    Options {
        write_buffer_size: [16 << 10, 32 << 10, 64 << 10][rng.random_range(0..3)],
        max_write_buffers: rng.random_range(2..=3),
        block_size: 1024,
        block_cache_bytes: 256 << 10,
        block_cache_shards: 4,
        bloom_bits_per_key: [0.0, 10.0][rng.random_range(0..2)],
        size_ratio: SIZE_RATIO,
        level1_bytes: 64 << 10,
        num_levels: rng.random_range(4..=5),
        l0_compaction_trigger: rng.random_range(1..=4),
        level_runs: vec![rng.random_range(1..=SIZE_RATIO), 1],
        target_file_size: 16 << 10,
        max_subcompactions: subcompactions,
        max_background_compactions: compaction_jobs,
        cache_index_and_filter_blocks: cache_meta,
        mmap_reads,
        max_open_files,
        background_work: background,
        ..Options::default()
    }
}

/// Prints flushes and compactions (with `CAIRN_MODEL_TRACE`).
struct TraceListener;

impl cairn::EventListener for TraceListener {
    fn on_flush_end(&self, i: &cairn::FlushInfo) {
        let outs: Vec<(u64, u64)> = i
            .outputs
            .iter()
            .map(|o| (o.file_no.get(), o.size))
            .collect();
        eprintln!("  [flush cf{} mem {} -> {outs:?}]", i.cf, i.memtable_id);
    }
    fn on_compaction_end(&self, i: &cairn::CompactionInfo) {
        let ins: Vec<(usize, u64, u64)> = i
            .inputs
            .iter()
            .map(|f| (f.level, f.file_no.get(), f.size))
            .collect();
        let outs: Vec<(u64, u64)> = i
            .outputs
            .iter()
            .map(|o| (o.file_no.get(), o.size))
            .collect();
        eprintln!(
            "  [compaction cf{} L{}->L{} {} move={} in {ins:?} out {outs:?}]",
            i.cf, i.input_level, i.output_level, i.reason, i.trivial_move
        );
    }
}

struct SnapState {
    snap: Snapshot,
    models: Vec<Model>,
}

struct Harness {
    seed: u64,
    rng: SmallRng,
    dir: tempfile::TempDir,
    opts: Options,
    db: Option<Db>,
    cfs: Vec<ColumnFamily>,
    models: Vec<Model>,
    snaps: Vec<SnapState>,
    op: usize,
    trace: bool,
    /// Prepended to every random key (to make keys share prefixes).
    key_prefix: Vec<u8>,
}

impl Harness {
    fn db(&self) -> &Db {
        self.db.as_ref().unwrap()
    }

    fn trace(&self, what: impl FnOnce() -> String) {
        if self.trace {
            eprintln!("op {}: {}", self.op, what());
        }
    }

    /// With tracing on, prints the shape of a column family and what `get` says about the
    /// first keys where a listing differs from the model.
    fn dump(&self, c: usize, got: &[(Vec<u8>, Vec<u8>)], want: &[(Vec<u8>, Vec<u8>)]) {
        if !self.trace || got == want {
            return;
        }
        for l in self.db().level_info(&self.cfs[c]).unwrap() {
            eprintln!("level {l:?}");
        }
        let g: std::collections::BTreeSet<&Vec<u8>> = got.iter().map(|(k, _)| k).collect();
        let w: std::collections::BTreeSet<&Vec<u8>> = want.iter().map(|(k, _)| k).collect();
        for k in g.symmetric_difference(&w).take(5) {
            eprintln!(
                "key {}: in scan {}, in model {}, get {:?}",
                show(k),
                g.contains(k),
                w.contains(k),
                self.db().get_cf(&self.cfs[c], k).unwrap().map(|v| show(&v))
            );
        }
    }

    fn ctx(&self) -> String {
        format!("seed {} op {}", self.seed, self.op)
    }

    fn rand_key(&mut self) -> Vec<u8> {
        // Keys cluster so that ranges overlap often; some keys sit between the numbered ones.
        let i = self.rng.random_range(0..KEY_SPACE);
        let mut k = self.key_prefix.clone();
        k.extend(key(i));
        if self.rng.random_ratio(1, 10) {
            k.push(b'x');
        }
        k
    }

    fn rand_value(&mut self) -> Vec<u8> {
        let n = if self.rng.random_ratio(1, 40) {
            10 << 10
        } else {
            self.rng.random_range(0..40)
        };
        let tag = format!("s{}o{}-", self.seed, self.op);
        let mut v = tag.into_bytes();
        v.extend((0..n).map(|i| b'a' + ((i + self.op) % 26) as u8));
        v
    }

    fn rand_cf(&mut self) -> usize {
        if self.rng.random_ratio(3, 4) {
            0
        } else {
            1
        }
    }

    /// A random (lower, upper) pair of optional bounds.
    fn rand_bounds(&mut self) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        let lo = self.rng.random_bool(0.6).then(|| self.rand_key());
        let hi = self.rng.random_bool(0.6).then(|| self.rand_key());
        (lo, hi)
    }

    fn reopen(&mut self) {
        self.snaps.clear();
        self.cfs.clear();
        let db = self.db.take().unwrap();
        let seq = db.latest_seq();
        db.close().unwrap();
        if std::env::var("CAIRN_MODEL_TRACE").is_ok() {
            let mut names: Vec<String> = std::fs::read_dir(self.dir.path())
                .unwrap()
                .map(|e| {
                    let e = e.unwrap();
                    format!(
                        "{}:{}",
                        e.file_name().to_string_lossy(),
                        e.metadata().unwrap().len()
                    )
                })
                .collect();
            names.sort();
            eprintln!("op {} closed at seq {seq}: {names:?}", self.op);
        }
        let db = Db::open(self.dir.path(), self.opts.clone()).unwrap();
        assert!(
            db.latest_seq() >= seq,
            "{}: sequence numbers went back at reopen: {} -> {}",
            self.ctx(),
            seq,
            db.latest_seq()
        );
        self.cfs = vec![
            db.default_cf(),
            db.cf("second").expect("cf survives reopen"),
        ];
        self.db = Some(db);
    }

    fn step(&mut self) {
        let wo = WriteOptions {
            sync: self.rng.random_ratio(1, 50),
            query_column: None,
            disable_wal: false,
        };
        let r = self.rng.random_range(0..1000);
        match r {
            0..=329 => {
                let c = self.rand_cf();
                let (k, v) = (self.rand_key(), self.rand_value());
                self.trace(|| format!("put cf{c} {} {}", show(&k), show(&v)));
                self.db().put_cf(&self.cfs[c], &wo, &k, &v).unwrap();
                self.models[c].insert(k, v);
            }
            330..=409 => {
                let c = self.rand_cf();
                let k = self.rand_key();
                self.trace(|| format!("delete cf{c} {}", show(&k)));
                self.db().delete_cf(&self.cfs[c], &wo, &k).unwrap();
                self.models[c].remove(&k);
            }
            410..=429 => {
                let c = self.rand_cf();
                let (a, b) = (self.rand_key(), self.rand_key());
                if a > b {
                    // Inverted ranges are rejected and change nothing.
                    let mut batch = WriteBatch::new();
                    assert!(batch.delete_range_cf(self.cfs[c].id(), &a, &b).is_err());
                    assert!(batch.is_empty());
                    return;
                }
                self.trace(|| format!("delete_range cf{c} {} {}", show(&a), show(&b)));
                if c == 0 && self.rng.random_bool(0.5) {
                    self.db().delete_range(&wo, &a, &b).unwrap();
                } else {
                    let mut batch = WriteBatch::new();
                    batch.delete_range_cf(self.cfs[c].id(), &a, &b).unwrap();
                    self.db().write(&wo, batch).unwrap();
                }
                range_delete(&mut self.models[c], &a, &b);
            }
            430..=509 => self.batch(wo),
            510..=639 => self.check_get(),
            640..=689 => self.check_scan(),
            690..=739 => self.check_iter_walk(),
            740..=769 => {
                if self.snaps.len() >= 3 {
                    let i = self.rng.random_range(0..self.snaps.len());
                    self.snaps.remove(i);
                }
                let snap = self.db().snapshot();
                self.trace(|| format!("snapshot {}", snap.seq()));
                self.snaps.push(SnapState {
                    snap,
                    models: self.models.clone(),
                });
            }
            770..=819 => self.check_snapshot(),
            820..=844 => {
                self.trace(|| "flush".into());
                self.db().flush().unwrap()
            }
            845..=859 => {
                let c = self.rand_cf();
                if self.opts.placement.policy != cairn::policy::PlacementPolicy::Passive
                    && self.rng.random_bool(0.5)
                {
                    // SA-LSM: a proactive compaction with a random cold-key set (keys
                    // present, deleted and never written).
                    let cf = self.cfs[c].clone();
                    let keys: Vec<Vec<u8>> = (0..self.rng.random_range(0..200))
                        .map(|_| self.rand_key())
                        .collect();
                    let set = cairn::learned::ColdSet::new(cf.id(), 0, 0.0, "model", keys);
                    self.db().install_cold_set(&cf, set).unwrap();
                    let r = self.db().proactive_compact(&cf).unwrap();
                    self.trace(|| format!("proactive_compact cf{c}: {r:?}"));
                } else if self.rng.random_bool(0.3) {
                    self.trace(|| format!("compact_range cf{c} all"));
                    self.db()
                        .compact_range_cf(&self.cfs[c], None, None)
                        .unwrap();
                } else {
                    let (a, b) = self.rand_bounds();
                    self.trace(|| format!("compact_range cf{c} {a:?} {b:?}"));
                    self.db()
                        .compact_range_cf(&self.cfs[c], a.as_deref(), b.as_deref())
                        .unwrap();
                }
            }
            860..=884 => {
                let c = self.rand_cf();
                // Level 0 takes K as its compaction trigger.
                let level = self.rng.random_range(0..self.opts.num_levels);
                let k = self.rng.random_range(1..=SIZE_RATIO);
                let t = [Transition::Greedy, Transition::Lazy, Transition::Flexible]
                    [self.rng.random_range(0..3)];
                self.trace(|| format!("set_policy cf{c} level {level} K {k} {t:?}"));
                self.db().set_policy(&self.cfs[c], level, k, t).unwrap();
            }
            885..=889 => {
                self.trace(|| "reopen".into());
                self.reopen()
            }
            890..=899 => {
                if !self.opts.background_work {
                    self.trace(|| "run_background_work".into());
                    self.db().run_background_work().unwrap();
                }
            }
            900..=902 => {
                // Drop the second column family and create it again, empty. Snapshots go
                // too: their copies of the second family's model no longer apply.
                self.trace(|| "drop and recreate cf1".into());
                self.snaps.clear();
                let old = self.cfs[1].clone();
                self.db().drop_cf(&old).unwrap();
                assert!(self.db().cf("second").is_none());
                assert!(self.db().get_cf(&old, b"k00001").is_err());
                self.cfs[1] = self.db().create_cf("second").unwrap();
                self.models[1].clear();
            }
            _ => self.check_get(),
        }
    }

    fn batch(&mut self, wo: WriteOptions) {
        let mut batch = WriteBatch::new();
        let n = self.rng.random_range(1..12);
        for _ in 0..n {
            let c = self.rand_cf();
            let id = self.cfs[c].id();
            match self.rng.random_range(0..10) {
                0..=5 => {
                    let (k, v) = (self.rand_key(), self.rand_value());
                    batch.put_cf(id, &k, &v).unwrap();
                    self.models[c].insert(k, v);
                }
                6..=7 => {
                    let k = self.rand_key();
                    batch.delete_cf(id, &k).unwrap();
                    self.models[c].remove(&k);
                }
                _ => {
                    let mut a = self.rand_key();
                    // Mostly short ranges, so puts after them in the batch survive.
                    let b = if self.rng.random_bool(0.7) {
                        let mut b = a.clone();
                        *b.last_mut().unwrap() += self.rng.random_range(1..5);
                        b
                    } else {
                        self.rand_key()
                    };
                    let mut b = b;
                    if a > b {
                        std::mem::swap(&mut a, &mut b);
                    }
                    batch.delete_range_cf(id, &a, &b).unwrap();
                    range_delete(&mut self.models[c], &a, &b);
                }
            }
        }
        self.trace(|| {
            let ops: Vec<String> = batch
                .iter()
                .map(|o| format!("{:?} cf{} {} {}", o.kind, o.cf, show(o.key), show(o.value)))
                .collect();
            format!("batch {ops:?}")
        });
        self.db().write(&wo, batch).unwrap();
    }

    fn check_get(&mut self) {
        let c = self.rand_cf();
        let k = if self.rng.random_bool(0.7) && !self.models[c].is_empty() {
            // A key likely present.
            let probe = self.rand_key();
            self.models[c]
                .range(probe..)
                .next()
                .map(|(k, _)| k.clone())
                .unwrap_or_else(|| self.rand_key())
        } else {
            self.rand_key()
        };
        // Reads that leave the caches as they are answer alike.
        let ro = ReadOptions {
            fill_cache: self.rng.random_bool(0.8),
            ..ReadOptions::default()
        };
        let got = self.db().get_opt(&ro, &self.cfs[c], &k).unwrap();
        assert_eq!(
            got.as_deref().map(show),
            self.models[c].get(&k).map(|v| show(v)),
            "{}: get {} in cf {c}",
            self.ctx(),
            show(&k)
        );
        if self.rng.random_bool(0.25) {
            self.check_multi_get(c, k);
        }
    }

    /// `multi_get` of `k` and a few random keys (repeats included), against the model.
    fn check_multi_get(&mut self, c: usize, k: Vec<u8>) {
        let mut keys: Vec<Vec<u8>> = (0..self.rng.random_range(0..8))
            .map(|_| self.rand_key())
            .collect();
        keys.push(k.clone());
        keys.push(k);
        let got = self.db().multi_get_cf(&self.cfs[c], &keys);
        assert_eq!(got.len(), keys.len());
        for (k, g) in keys.iter().zip(got) {
            assert_eq!(
                g.unwrap().as_deref().map(show),
                self.models[c].get(k).map(|v| show(v)),
                "{}: multi_get {} in cf {c}",
                self.ctx(),
                show(k)
            );
        }
    }

    fn check_scan(&mut self) {
        let c = self.rand_cf();
        let (lo, hi) = self.rand_bounds();
        let reverse = self.rng.random_bool(0.5);
        let (lb, hb) = (
            lo.clone().map_or(Bound::Unbounded, Bound::Included),
            hi.clone().map_or(Bound::Unbounded, Bound::Excluded),
        );
        if let (Some(l), Some(h)) = (&lo, &hi) {
            if l > h {
                // An empty range: the engine must return nothing.
                let got = self
                    .db()
                    .scan_opt(&ReadOptions::default(), &self.cfs[c], (lb, hb), reverse)
                    .unwrap()
                    .count();
                assert_eq!(got, 0, "{}: inverted range", self.ctx());
                return;
            }
        }
        let want: Vec<(Vec<u8>, Vec<u8>)> = {
            let it = self.models[c]
                .range::<Vec<u8>, _>((lb.clone(), hb.clone()))
                .map(|(k, v)| (k.clone(), v.clone()));
            if reverse {
                it.rev().collect()
            } else {
                it.collect()
            }
        };
        let ro = ReadOptions {
            fill_cache: self.rng.random_bool(0.7),
            ..ReadOptions::default()
        };
        let got: Vec<(Vec<u8>, Vec<u8>)> = self
            .db()
            .scan_opt(&ro, &self.cfs[c], (lb, hb), reverse)
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        self.dump(c, &got, &want);
        compare_lists(
            &got,
            &want,
            &format!(
                "{}: scan cf {c} [{:?}, {:?}) reverse={reverse}",
                self.ctx(),
                lo.as_deref().map(show),
                hi.as_deref().map(show)
            ),
        );
    }

    fn check_iter_walk(&mut self) {
        let c = self.rand_cf();
        let (lo, hi) = self.rand_bounds();
        let snap_i = (!self.snaps.is_empty() && self.rng.random_bool(0.3))
            .then(|| self.rng.random_range(0..self.snaps.len()));
        let ro = ReadOptions {
            snapshot: snap_i.map(|i| self.snaps[i].snap.clone()),
            lower_bound: lo.clone(),
            upper_bound: hi.clone(),
            fill_cache: true,
        };
        let model = match snap_i {
            Some(i) => self.snaps[i].models[c].clone(),
            None => self.models[c].clone(),
        };
        let in_bounds =
            |k: &[u8]| lo.as_deref().is_none_or(|l| k >= l) && hi.as_deref().is_none_or(|h| k < h);
        let mut it = self.db().iter(&ro, &self.cfs[c]).unwrap();
        let mut cur: Option<Vec<u8>>;
        let start = self.rng.random_range(0..4);
        let target = self.rand_key();
        let what;
        match start {
            0 => {
                it.seek_to_first();
                cur = model.keys().find(|k| in_bounds(k)).cloned();
                what = "seek_to_first".to_string();
            }
            1 => {
                it.seek_to_last();
                cur = model.keys().rev().find(|k| in_bounds(k)).cloned();
                what = "seek_to_last".to_string();
            }
            2 => {
                it.seek(&target);
                cur = model
                    .range(target.clone()..)
                    .map(|(k, _)| k)
                    .find(|k| in_bounds(k))
                    .cloned();
                // Seek clamps to the lower bound; the first key >= max(target, lo) is the
                // first in-bounds key >= target.
                what = format!("seek({})", show(&target));
            }
            _ => {
                it.seek_for_prev(&target);
                cur = model
                    .range(..=target.clone())
                    .rev()
                    .map(|(k, _)| k)
                    .find(|k| in_bounds(k))
                    .cloned();
                what = format!("seek_for_prev({})", show(&target));
            }
        }
        // Walk: random next/prev steps, each compared with the model's neighbour.
        let mut trail = vec![what];
        let steps = self.rng.random_range(0..25);
        for step in 0..=steps {
            self.check_pos(&it, &cur, &model, &trail);
            if cur.is_none() || step == steps {
                break;
            }
            let k = cur.clone().unwrap();
            if self.rng.random_bool(0.5) {
                it.next();
                cur = model
                    .range::<Vec<u8>, _>((Bound::Excluded(k), Bound::Unbounded))
                    .map(|(k, _)| k)
                    .find(|k| in_bounds(k))
                    .cloned();
                trail.push("next".into());
            } else {
                it.prev();
                cur = model
                    .range::<Vec<u8>, _>(..k)
                    .rev()
                    .map(|(k, _)| k)
                    .find(|k| in_bounds(k))
                    .cloned();
                trail.push("prev".into());
            }
        }
        it.status().unwrap();
    }

    fn check_pos(&self, it: &DbIterator, cur: &Option<Vec<u8>>, model: &Model, trail: &[String]) {
        let got = it.valid().then(|| (show(it.key()), show(it.value())));
        let want = cur.as_ref().map(|k| (show(k), show(model.get(k).unwrap())));
        assert_eq!(
            got,
            want,
            "{}: iterator after {}",
            self.ctx(),
            trail.join(" ")
        );
    }

    fn check_snapshot(&mut self) {
        if self.snaps.is_empty() {
            return;
        }
        let i = self.rng.random_range(0..self.snaps.len());
        let c = self.rand_cf();
        let ro = ReadOptions {
            snapshot: Some(self.snaps[i].snap.clone()),
            ..Default::default()
        };
        let keys: Vec<Vec<u8>> = (0..5).map(|_| self.rand_key()).collect();
        let got: Vec<Option<Vec<u8>>> = if self.rng.random_bool(0.5) {
            keys.iter()
                .map(|k| self.db().get_opt(&ro, &self.cfs[c], k).unwrap())
                .collect()
        } else {
            let got = self.db().multi_get_opt(&ro, &self.cfs[c], &keys);
            got.into_iter().map(|g| g.unwrap()).collect()
        };
        for (k, got) in keys.iter().zip(got) {
            let want = self.snaps[i].models[c].get(k);
            assert_eq!(
                got.as_deref().map(show),
                want.map(|v| show(v)),
                "{}: get {} at snapshot {} in cf {c}",
                self.ctx(),
                show(k),
                self.snaps[i].snap.seq()
            );
        }
        let reverse = self.rng.random_bool(0.5);
        let got: Vec<(Vec<u8>, Vec<u8>)> = self
            .db()
            .scan_opt::<&[u8], _>(&ro, &self.cfs[c], .., reverse)
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        let mut want: Vec<(Vec<u8>, Vec<u8>)> = self.snaps[i].models[c]
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if reverse {
            want.reverse();
        }
        compare_lists(
            &got,
            &want,
            &format!(
                "{}: full scan at snapshot {} cf {c} reverse={reverse}",
                self.ctx(),
                self.snaps[i].snap.seq()
            ),
        );
    }

    fn check_all(&mut self) {
        for c in 0..2 {
            let got: Vec<(Vec<u8>, Vec<u8>)> = self
                .db()
                .scan_opt::<&[u8], _>(&ReadOptions::default(), &self.cfs[c], .., false)
                .unwrap()
                .map(|r| r.unwrap())
                .collect();
            let want: Vec<(Vec<u8>, Vec<u8>)> = self.models[c]
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            self.dump(c, &got, &want);
            compare_lists(&got, &want, &format!("{}: final scan cf {c}", self.ctx()));
            for (k, v) in &self.models[c] {
                assert_eq!(
                    self.db().get_cf(&self.cfs[c], k).unwrap().as_deref(),
                    Some(v.as_slice()),
                    "{}: final get {}",
                    self.ctx(),
                    show(k)
                );
            }
        }
    }
}

fn range_delete(m: &mut Model, a: &[u8], b: &[u8]) {
    let doomed: Vec<Vec<u8>> = m
        .range::<[u8], _>((Bound::Included(a), Bound::Excluded(b)))
        .map(|(k, _)| k.clone())
        .collect();
    for k in doomed {
        m.remove(&k);
    }
}

/// Printable form of a key or value (long values abbreviated).
fn show(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    if s.len() > 48 {
        format!("{}..({} bytes)", &s[..40], b.len())
    } else {
        s.into_owned()
    }
}

fn compare_lists(got: &[(Vec<u8>, Vec<u8>)], want: &[(Vec<u8>, Vec<u8>)], what: &str) {
    if got == want {
        return;
    }
    let first = got
        .iter()
        .zip(want.iter())
        .position(|(g, w)| g != w)
        .unwrap_or(got.len().min(want.len()));
    let g = got.get(first).map(|(k, v)| (show(k), show(v)));
    let w = want.get(first).map(|(k, v)| (show(k), show(v)));
    panic!(
        "{what}: {} entries, want {}; first difference at {first}: got {g:?}, want {w:?}",
        got.len(),
        want.len()
    );
}

fn run_seed(seed: u64, background: bool, ops: usize) {
    run_seed_with(seed, background, ops, b"", |_| {});
}

/// Runs one seed with the options adjusted by `tweak` and random keys prefixed by
/// `key_prefix`; returns the statistics taken just before the final reopen.
fn run_seed_with(
    seed: u64,
    background: bool,
    ops: usize,
    key_prefix: &[u8],
    tweak: impl Fn(&mut Options),
) -> cairn::DbStats {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut opts = options(&mut rng, background);
    tweak(&mut opts);
    if std::env::var("CAIRN_MODEL_TRACE").is_ok() {
        opts.listeners.push(std::sync::Arc::new(TraceListener));
    }
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let second = db.create_cf("second").unwrap();
    let cfs = vec![db.default_cf(), second];
    let mut h = Harness {
        seed,
        rng,
        dir,
        opts,
        db: Some(db),
        cfs,
        models: vec![Model::new(), Model::new()],
        snaps: Vec::new(),
        op: 0,
        trace: std::env::var("CAIRN_MODEL_TRACE").is_ok(),
        key_prefix: key_prefix.to_vec(),
    };
    let paranoid = std::env::var("CAIRN_MODEL_PARANOID").is_ok();
    for op in 0..ops {
        h.op = op;
        h.step();
        if paranoid {
            h.check_all();
        }
    }
    h.op = ops;
    h.check_all();
    h.db().compact_range(None, None).unwrap();
    h.check_all();
    if !background {
        // The learner's pass (with manual background work) learns the tables read above;
        // read again through their models.
        h.db().run_background_work().unwrap();
        h.check_all();
    } else if matches!(
        h.db().options().index,
        cairn::IndexPolicy::Learned {
            mode: cairn::LearnMode::Always,
            ..
        }
    ) {
        // The learner thread trains the compacted tables on its own time, which under
        // load can come after the reads above: wait for it (bounded), then read again
        // through the models.
        let t = std::time::Instant::now();
        while h.db().stats().learned_tables == 0 && t.elapsed().as_secs() < 20 {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        h.check_all();
    }
    let stats = h.db().stats();
    h.reopen();
    h.check_all();
    stats
}

fn run_seeds(background: bool, base: u64) {
    let ops = env_u64("CAIRN_MODEL_OPS", 2000) as usize;
    let seeds: Vec<u64> = match std::env::var("CAIRN_MODEL_SEED") {
        Ok(s) => vec![s.parse().expect("CAIRN_MODEL_SEED is a number")],
        Err(_) => (0..env_u64("CAIRN_MODEL_SEEDS", 10))
            .map(|i| base + env_u64("CAIRN_MODEL_SEED_BASE", 0) + i)
            .collect(),
    };
    for seed in seeds {
        let r = catch_unwind(AssertUnwindSafe(|| run_seed(seed, background, ops)));
        if let Err(e) = r {
            eprintln!(
                "model test failed: seed {seed}, background_work={background}; replay with \
                 CAIRN_MODEL_SEED={seed} cargo test -p cairn --test engine model::"
            );
            resume_unwind(e);
        }
    }
}

#[test]
fn model_manual_background_work() {
    run_seeds(false, 1000);
}

#[test]
fn model_background_threads() {
    run_seeds(true, 2000);
}

/// The virtual device clock prices I/O and changes no answer: with background work by
/// hand (its deterministic mode), with background threads, and with a slow tier.
#[test]
fn model_virtual_clock() {
    let ops = env_u64("CAIRN_MODEL_OPS", 2000) as usize;
    for (seed, background, model) in [
        (4000, false, cairn::DeviceModel::nvme()),
        (4001, false, cairn::DeviceModel::hdd()),
        (4002, true, cairn::DeviceModel::ssd()),
    ] {
        let model = &model;
        let tiered = seed == 4001;
        let stats = run_seed_with(seed, background, ops, b"", |o| {
            o.clock = cairn::Clock::Virtual(model.clone());
            if tiered {
                o.tiers = vec![
                    cairn::TierConfig {
                        dir: "hot".into(),
                        first_level: 0,
                        profile: cairn::DeviceProfile::None,
                    },
                    cairn::TierConfig {
                        dir: "cold".into(),
                        first_level: 2,
                        profile: cairn::DeviceProfile::Hdd,
                    },
                ];
            }
        });
        assert!(stats.io.total().read_ops > 0, "seed {seed} read nothing");
    }
}

/// Bourbon's learned index on every table (small deltas too): the model must never change
/// an answer, for gets or seeks. A table's keys are numbered after their common prefix
/// (so "tenant:" keys learn); "t/" makes keys collide in the 8 bytes the model sees
/// (`k00012x` with `k00012`).
#[test]
fn model_learned_index() {
    let ops = env_u64("CAIRN_MODEL_OPS", 2000) as usize;
    let mut seeks_through_models = 0;
    let mut window_reads = 0;
    for (seed, delta, background, prefix) in [
        (3000, 8, false, &b""[..]),
        (3001, 1, false, b""),
        (3002, 2, true, b"t/"),
        (3003, 8, true, b""),
        (3004, 64, false, b"t/"),
        (3005, 8, false, b"tenant:"),
        (3006, 1, false, b"t/"),
    ] {
        // Odd seeds write fixed-width blocks, with a cache too small to hold the data:
        // learned gets then read just their windows.
        let fixed = seed % 2 == 1;
        let r = catch_unwind(AssertUnwindSafe(|| {
            run_seed_with(seed, background, ops, prefix, |o| {
                o.index = IndexPolicy::learn_all(delta);
                o.fixed_width_entries = fixed;
                if fixed {
                    o.block_cache_bytes = 16 << 10;
                    o.mmap_reads = true; // Bourbon's setting: window reads out of maps
                }
            })
        }));
        match r {
            Ok(stats) => {
                if fixed {
                    window_reads += stats.entry_chunk_reads;
                } else {
                    assert_eq!(stats.entry_chunk_reads, 0, "seed {seed}: window reads");
                }
                assert!(stats.learned_tables > 0, "seed {seed}: no table learned");
                assert!(stats.learned_segments >= stats.learned_tables);
                assert!(
                    stats.learned_lookups + stats.learned_fallbacks > 0,
                    "seed {seed}: the learned index was never consulted ({stats:?})"
                );
                assert!(stats.learned_lookups > 0, "seed {seed}: no learned answer");
                seeks_through_models += stats.learned_seeks;
            }
            Err(e) => {
                eprintln!("learned-index model test failed: seed {seed}, delta {delta}");
                resume_unwind(e);
            }
        }
    }
    assert!(window_reads > 0, "no learned get read just its window");
    // Iterator seeks are positioned by the models too, and checked against the model.
    assert!(
        seeks_through_models > 0,
        "no seek went through a learned index"
    );
}

/// AC-Key's read cache and its baselines on a small budget (entries get evicted, ghosts
/// fill and turn off and on): overwrites and deletes cross flushes and compactions, reads
/// run at snapshots; a cached answer must always be the model's.
#[test]
fn model_read_cache() {
    let ops = env_u64("CAIRN_MODEL_OPS", 2000) as usize;
    let ac_key = ReadCachePolicy::AcKey(AcKeyParams {
        ghost_window: 64,
        ..AcKeyParams::default()
    });
    for (seed, policy, background, budget) in [
        (4000, ac_key, false, 16 << 10),
        (4001, ac_key, true, 16 << 10),
        (4002, ac_key, false, 64 << 10),
        (
            4003,
            ReadCachePolicy::AcKey(AcKeyParams::default()),
            false,
            8 << 10,
        ),
        (4004, ReadCachePolicy::PureKv, false, 8 << 10),
        (4005, ReadCachePolicy::PureKp, true, 8 << 10),
        (
            4006,
            ReadCachePolicy::Fixed {
                kv: 3,
                kp: 2,
                block: 5,
            },
            false,
            16 << 10,
        ),
        (
            4007,
            ReadCachePolicy::Fixed {
                kv: 5,
                kp: 5,
                block: 0,
            },
            true,
            16 << 10,
        ),
    ] {
        let r = catch_unwind(AssertUnwindSafe(|| {
            run_seed_with(seed, background, ops, b"", |o| {
                o.read_cache = policy;
                o.block_cache_bytes = budget;
            })
        }));
        match r {
            Ok(stats) => {
                let rc = &stats.read_cache;
                assert_eq!(rc.policy, policy.name());
                assert!(
                    rc.kv_hits + rc.kp_hits > 0,
                    "seed {seed}: the point cache never answered ({rc:?})"
                );
                let used = rc.kv_bytes + rc.kp_bytes + rc.block_bytes + rc.ghost_bytes;
                // One entry may overshoot while it is inserted; none stays over.
                assert!(used <= rc.capacity + (10 << 10), "seed {seed}: {rc:?}");
            }
            Err(e) => {
                eprintln!("read-cache model test failed: seed {seed}, {policy:?}");
                resume_unwind(e);
            }
        }
    }
}

/// Key-value separation: every value (threshold 0) or the larger half of the model's
/// values (threshold 30) go to value logs, with an eager GC target so that value-log
/// garbage collection runs often between the model's snapshots, reopens and compactions.
#[test]
fn model_value_separation() {
    let ops = env_u64("CAIRN_MODEL_OPS", 2000) as usize;
    let mut gc_rewrites = 0;
    for (seed, threshold, gc, background) in [
        (4000, 0, 1.1, false),
        (4001, 30, 1.1, false),
        (4002, 0, 1.5, true),
        (4003, 30, 1.05, true),
        (4004, 0, 1.01, false),
    ] {
        let r = catch_unwind(AssertUnwindSafe(|| {
            run_seed_with(seed, background, ops, b"", |o| {
                o.value_threshold = Some(threshold);
                o.vlog_gc_space_amp = Some(gc);
            })
        }));
        match r {
            Ok(stats) => {
                // The counters start at the last reopen, which may follow the last
                // flush: the value logs it found count too.
                assert!(
                    stats.vlog.records_written + stats.vlog.files_live > 0,
                    "seed {seed}: nothing separated"
                );
                assert!(
                    stats.vlog.reads > 0,
                    "seed {seed}: no value read from a value log"
                );
                gc_rewrites += stats.vlog.gc_rewrites;
            }
            Err(e) => {
                eprintln!("value-separation model test failed: seed {seed}, threshold {threshold}");
                resume_unwind(e);
            }
        }
    }
    assert!(gc_rewrites > 0, "value-log GC never ran");
}

/// Every part at once: AC-Key's read cache on a small budget, key-value separation with
/// an eager GC, and the learned index, so KP hits resolve value pointers and GC rewrites
/// repoint cached entries; answers must stay the model's.
#[test]
fn model_all_parts_together() {
    let ops = env_u64("CAIRN_MODEL_OPS", 2000) as usize;
    for (seed, background) in [(4100, false), (4101, true)] {
        let r = catch_unwind(AssertUnwindSafe(|| {
            run_seed_with(seed, background, ops, b"", |o| {
                o.read_cache = ReadCachePolicy::AcKey(AcKeyParams {
                    ghost_window: 64,
                    ..AcKeyParams::default()
                });
                o.block_cache_bytes = 16 << 10;
                o.value_threshold = Some(20);
                o.vlog_gc_space_amp = Some(1.1);
                o.index = IndexPolicy::learn_all(4);
                o.fixed_width_entries = seed % 2 == 1;
            })
        }));
        match r {
            Ok(stats) => {
                assert!(stats.vlog.reads > 0, "seed {seed}: no value-log read");
                let rc = &stats.read_cache;
                assert!(rc.kv_hits + rc.kp_hits > 0, "seed {seed}: {rc:?}");
            }
            Err(e) => {
                eprintln!("all-parts model test failed: seed {seed}");
                resume_unwind(e);
            }
        }
    }
}

/// The `learned` preset (every learned part at once) on the model's small tree, on a hot
/// and a cold tier so that SA-LSM's proactive compactions run, with and without
/// background threads: answers must stay the model's.
#[test]
fn model_learned_preset() {
    let ops = env_u64("CAIRN_MODEL_OPS", 2000) as usize;
    for (seed, background) in [(4200, false), (4201, true)] {
        let r = catch_unwind(AssertUnwindSafe(|| {
            run_seed_with(seed, background, ops, b"", |o| {
                cairn::presets::apply_learned(o);
                o.block_cache_bytes = 16 << 10;
                o.tiers = ["hot", "cold"]
                    .iter()
                    .zip([0, 2])
                    .map(|(dir, first_level)| cairn::TierConfig {
                        dir: (*dir).into(),
                        first_level,
                        profile: cairn::DeviceProfile::None,
                    })
                    .collect();
            })
        }));
        if let Err(e) = r {
            eprintln!("learned-preset model test failed: seed {seed}");
            resume_unwind(e);
        }
    }
}

/// Regression: a WAL started after the manifest's last edit (a memtable switch with no
/// flush yet) was numbered `next_file_no` of the recovered manifest, so reopening chose the
/// same number for its new WAL, skipped replaying the old one and truncated it.
#[test]
fn reopen_replays_wal_started_after_last_manifest_edit() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        write_buffer_size: 4096,
        max_write_buffers: 4,
        background_work: false,
        ..Options::default()
    };
    let wo = WriteOptions::default();
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    for i in 0..20 {
        // Each 1 KiB value fills a quarter of the memtable: switches without flushes.
        db.put(&wo, &key(i), &[b'v'; 1024]).unwrap();
    }
    let seq = db.latest_seq();
    db.close().unwrap();
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    assert_eq!(db.latest_seq(), seq);
    for i in 0..20 {
        assert_eq!(db.get(&key(i)).unwrap(), Some(vec![b'v'; 1024]), "key {i}");
    }
    db.close().unwrap();
    let db = Db::open(dir.path(), opts).unwrap();
    assert_eq!(db.scan::<&[u8], _>(..).unwrap().count(), 20);
}

/// A column family created after another was dropped must not receive the dropped one's
/// writes when the WAL is replayed (ids are how WAL records name column families).
#[test]
fn recreated_column_family_does_not_inherit_dropped_writes() {
    let dir = tempfile::tempdir().unwrap();
    let wo = WriteOptions::default();
    let db = Db::open(dir.path(), Options::small()).unwrap();
    let a = db.create_cf("a").unwrap();
    db.put_cf(&a, &wo, b"old", b"from a").unwrap();
    db.drop_cf(&a).unwrap();
    let b = db.create_cf("b").unwrap();
    assert_eq!(db.get_cf(&b, b"old").unwrap(), None);
    db.put_cf(&b, &wo, b"new", b"from b").unwrap();
    db.close().unwrap();
    let db = Db::open(dir.path(), Options::small()).unwrap();
    assert!(db.cf("a").is_none());
    let b = db.cf("b").unwrap();
    assert_eq!(db.get_cf(&b, b"new").unwrap(), Some(b"from b".to_vec()));
    assert_eq!(
        db.get_cf(&b, b"old").unwrap(),
        None,
        "a write to the dropped family came back in the new one"
    );
}

/// Hot ranges that cover half the key space, changing every call: an oracle that is
/// often wrong, so every path of the prefetcher (keep, evict, warm) runs.
struct HalfOracle(std::sync::atomic::AtomicU64);

impl cairn::policy::HotRangeSource for HalfOracle {
    fn hot_intervals(
        &self,
        steps: std::ops::Range<usize>,
        _span: (u64, u64),
    ) -> Option<Vec<(u64, u64)>> {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let k0 = cairn::access::key_number(&key(0), 0);
        let span = cairn::access::key_number(&key(99_999), 0) - k0;
        let start = k0 + (n * 7919 + steps.start as u64) % span;
        Some(vec![(start, start + span / 2)])
    }
    fn slot_ms(&self) -> u64 {
        1000
    }
    fn steps(&self) -> usize {
        3
    }
}

/// Leaper and its baselines move blocks in and out of the cache around flushes and
/// compactions; answers must stay the model's under each, with a small cache so that
/// warming evicts, and the Leaper run with a model the Python learner wrote.
#[test]
fn model_prefetch_policies() {
    use cairn::access::AccessOptions;
    use cairn::policy::{LeaperParams, PrefetchPolicy};
    let ops = env_u64("CAIRN_MODEL_OPS", 2000) as usize;
    let bundle =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/leaper/synth.bundle");
    let policies: Vec<(u64, bool, PrefetchPolicy)> = vec![
        (4200, false, PrefetchPolicy::Lru),
        (4201, true, PrefetchPolicy::Warmup),
        (4202, false, PrefetchPolicy::WarmFlush),
        (4203, true, PrefetchPolicy::WarmAll),
        (
            4204,
            true,
            PrefetchPolicy::Oracle(std::sync::Arc::new(HalfOracle(Default::default()))),
        ),
        (
            4205,
            false,
            PrefetchPolicy::Leaper(LeaperParams {
                model: Some(bundle),
                max_warm_blocks: 64,
                ..LeaperParams::default()
            }),
        ),
    ];
    for (seed, background, policy) in policies {
        let name = policy.name();
        let r = catch_unwind(AssertUnwindSafe(|| {
            run_seed_with(seed, background, ops, b"", |o| {
                o.block_cache_bytes = 32 << 10;
                o.prefetch = policy.clone();
                o.access = Some(AccessOptions {
                    slot_ms: 1,
                    ..AccessOptions::default()
                });
            })
        }));
        match r {
            Ok(stats) => {
                let p = stats.prefetch;
                assert_eq!(p.model_errors, 0, "{name}: {p:?}");
                match name {
                    "warm-flush" | "warm-all" => assert!(p.warmed_blocks > 0, "{name}: {p:?}"),
                    "oracle" | "leaper" => assert!(p.jobs_with_model > 0, "{name}: {p:?}"),
                    _ => {}
                }
            }
            Err(e) => {
                eprintln!("prefetch model test failed: seed {seed}, policy {name}");
                resume_unwind(e);
            }
        }
    }
}

/// RusKey's tuners change K_i after every mission while the model's operations run (with
/// reopens and, in the background runs, concurrent flushes and compactions): answers
/// must stay the model's. (tests/learned/tuner.rs checks that the tuners do change K.)
#[test]
fn model_compaction_tuners() {
    use cairn::policy::{LerpParams, Propagation, TunerOptions, TunerPolicy};
    let ops = env_u64("CAIRN_MODEL_OPS", 2000) as usize;
    let mut tuners: Vec<(u64, bool, TunerPolicy)> = vec![(
        4300,
        false,
        TunerPolicy::Greedy {
            h_bottom: 0.45,
            h_top: 0.55,
        },
    )];
    // RusKey's Lerp needs cairn's `ruskey` feature (candle).
    if cfg!(feature = "ruskey") {
        tuners.extend([
            (
                4301,
                true,
                TunerPolicy::Lerp(LerpParams {
                    propagation: Propagation::None,
                    ..Default::default()
                }),
            ),
            (
                4302,
                false,
                TunerPolicy::Lerp(LerpParams {
                    propagation: Propagation::Monkey,
                    ..Default::default()
                }),
            ),
        ]);
    }
    for (seed, background, policy) in tuners {
        let r = catch_unwind(AssertUnwindSafe(|| {
            run_seed_with(seed, background, ops, b"", |o| {
                o.tuner = TunerOptions {
                    policy: policy.clone(),
                    mission_ops: 50,
                    checkpoint_every: 5,
                    ..Default::default()
                };
            })
        }));
        match r {
            Ok(stats) => {
                let t = stats.tuner;
                assert!(t.missions > 0, "{policy:?}: {t:?}");
                assert_eq!(t.errors, 0, "{policy:?}: {t:?}");
            }
            Err(e) => {
                eprintln!("tuner model test failed: seed {seed}, tuner {policy:?}");
                resume_unwind(e);
            }
        }
    }
}

/// SA-LSM's proactive compactions (random cold-key sets, both column families) among
/// every other operation, with the hot level held while placement is on: answers stay the
/// model's, through snapshots, reopens and concurrent background work.
#[test]
fn model_placement() {
    use cairn::policy::{PlacementOptions, PlacementPolicy};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    /// Counts proactive compactions that moved data, across reopens.
    struct Count(Arc<AtomicU64>);
    impl cairn::EventListener for Count {
        fn on_compaction_end(&self, i: &cairn::CompactionInfo) {
            if i.reason == "proactive" {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    let ops = env_u64("CAIRN_MODEL_OPS", 2000) as usize;
    for (seed, background) in [(4400, false), (4401, true), (4402, false)] {
        let count = Arc::new(AtomicU64::new(0));
        let r = catch_unwind(AssertUnwindSafe(|| {
            run_seed_with(seed, background, ops, b"", |o| {
                o.listeners.push(Arc::new(Count(count.clone())));
                o.tiers = vec![
                    cairn::TierConfig {
                        dir: "hot".into(),
                        first_level: 0,
                        profile: cairn::DeviceProfile::None,
                    },
                    cairn::TierConfig {
                        dir: "cold".into(),
                        first_level: 2,
                        profile: cairn::DeviceProfile::None,
                    },
                ];
                o.records = Some(Default::default());
                o.placement = PlacementOptions {
                    policy: PlacementPolicy::ColdSet,
                    hot_level_slack: 2.0,
                    ..Default::default()
                };
            })
        }));
        match r {
            Ok(_) => assert!(count.load(Ordering::Relaxed) > 0, "seed {seed}: none ran"),
            Err(e) => {
                eprintln!("placement model test failed: seed {seed}, background {background}");
                resume_unwind(e);
            }
        }
    }
}
