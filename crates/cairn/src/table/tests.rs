//! Whole-table tests: round trips against a model, corruption, truncation, forged
//! checksums.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::format::{block_trailer, BlockType};
use super::*;
use crate::cache::{BlockCache, LruBlockCache};
use crate::compression::Compression;
use crate::ids::CfId;
use crate::ids::FileNo;
use crate::iter::InternalIterator;
use crate::options::IndexPolicy;
use crate::storage::{FileKind, StorageEnv};
use crate::types::{
    cmp_internal, make_internal_key, make_lookup_key, user_key, ValueKind, MAX_SEQ,
};
use crate::Error;

type Entry = (Vec<u8>, Vec<u8>);

struct Fixture {
    _dir: tempfile::TempDir,
    env: StorageEnv,
    root: PathBuf,
}

fn fixture() -> Fixture {
    fixture_with(false)
}

/// A fixture whose tables are read through memory maps if `mapped`.
fn fixture_with(mapped: bool) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let env = StorageEnv::new(dir.path(), &[], 0.0)
        .unwrap()
        .with_mmap_reads(mapped);
    let root = dir.path().to_path_buf();
    Fixture {
        _dir: dir,
        env,
        root,
    }
}

impl Fixture {
    fn build(
        &self,
        name: &str,
        entries: &[Entry],
        opts: TableBuildOptions,
    ) -> (PathBuf, TableSummary) {
        let path = self.root.join(name);
        let f = self.env.create(&path, FileKind::Table, 0, Some(0)).unwrap();
        let mut b = TableBuilder::new(f, opts);
        for (k, v) in entries {
            b.add(k, v).unwrap();
        }
        assert_eq!(b.num_entries(), entries.len() as u64);
        let est = b.estimated_size();
        let s = b.finish().unwrap();
        // The pending block is estimated before compression.
        assert!(s.file_size >= est || opts.compression != Compression::None);
        (path, s)
    }

    fn open(&self, path: &Path, cache: Option<Arc<dyn BlockCache>>) -> crate::Result<Arc<Table>> {
        self.open_with(path, cache, IndexPolicy::Fence)
    }

    fn open_with(
        &self,
        path: &Path,
        cache: Option<Arc<dyn BlockCache>>,
        policy: IndexPolicy,
    ) -> crate::Result<Arc<Table>> {
        self.open_table(path, cache, policy).map(Arc::new)
    }

    fn open_table(
        &self,
        path: &Path,
        cache: Option<Arc<dyn BlockCache>>,
        policy: IndexPolicy,
    ) -> crate::Result<Table> {
        let f = self
            .env
            .open_read(path, FileKind::Table, 0, Some(0), false)?;
        Table::open_with(f, FileNo::new(1), cache, policy)
    }
}

/// Random entries in internal order: several versions per user key, all kinds, empty
/// values, 1-byte and 2 KiB keys, a few large values.
fn random_entries(rng: &mut SmallRng, n_keys: usize) -> Vec<Entry> {
    let mut out = Vec::new();
    for _ in 0..n_keys {
        let ukey: Vec<u8> = match rng.random_range(0..20) {
            0 => vec![rng.random()],
            1 => (0..2048).map(|_| rng.random()).collect(),
            _ => {
                let n = rng.random_range(2..24);
                (0..n).map(|_| rng.random_range(b'a'..=b'f')).collect()
            }
        };
        let versions = if rng.random_bool(0.2) {
            rng.random_range(2..5)
        } else {
            1
        };
        for _ in 0..versions {
            let seq = rng.random_range(1..1_000_000u64);
            let kind = match rng.random_range(0..10) {
                0 | 1 => ValueKind::Deletion,
                2 => ValueKind::ValuePointer,
                _ => ValueKind::Value,
            };
            let vlen = match rng.random_range(0..10) {
                0 | 1 => 0,
                2 => rng.random_range(1000..3000),
                _ => rng.random_range(1..60),
            };
            // Values of even sequence numbers repeat a short pattern, so that compressed
            // tables hold compressed blocks (the random bytes are drawn all the same, to
            // keep the draws of the tests that share this generator).
            let value = if kind == ValueKind::Deletion {
                Vec::new()
            } else {
                (0..vlen)
                    .map(|i| {
                        let r: u8 = rng.random();
                        if seq % 2 == 0 {
                            b"pattern"[i % 7]
                        } else {
                            r
                        }
                    })
                    .collect()
            };
            out.push((make_internal_key(&ukey, seq, kind), value));
        }
    }
    out.sort_by(|a, b| cmp_internal(&a.0, &b.0));
    out.dedup_by(|a, b| cmp_internal(&a.0, &b.0) == Ordering::Equal);
    out
}

fn first_ge(model: &[Entry], target: &[u8]) -> usize {
    model.partition_point(|(k, _)| cmp_internal(k, target) == Ordering::Less)
}

fn expected_get(model: &[Entry], lookup: &[u8]) -> Option<Entry> {
    model
        .get(first_ge(model, lookup))
        .filter(|(k, _)| user_key(k) == user_key(lookup))
        .cloned()
}

fn random_target(rng: &mut SmallRng, model: &[Entry]) -> Vec<u8> {
    if !model.is_empty() && rng.random_bool(0.6) {
        let (k, _) = &model[rng.random_range(0..model.len())];
        let seq = crate::types::parse_internal_key(k).unwrap().seq;
        let seq = match rng.random_range(0..3) {
            0 => seq,
            1 => seq.saturating_sub(1),
            _ => seq + 1,
        };
        make_internal_key(user_key(k), seq, ValueKind::Value)
    } else {
        let n = rng.random_range(0..6);
        let uk: Vec<u8> = (0..n).map(|_| rng.random_range(b'a'..=b'g')).collect();
        make_lookup_key(&uk, rng.random_range(0..MAX_SEQ))
    }
}

fn collect_forward(it: &mut TableIterator) -> Vec<Entry> {
    let mut v = Vec::new();
    it.seek_to_first();
    while it.valid() {
        v.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    v
}

fn collect_backward(it: &mut TableIterator) -> Vec<Entry> {
    let mut v = Vec::new();
    it.seek_to_last();
    while it.valid() {
        v.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    v.reverse();
    v
}

fn check_round_trip(
    fx: &Fixture,
    rng: &mut SmallRng,
    model: &[Entry],
    opts: TableBuildOptions,
    cache: Option<Arc<dyn BlockCache>>,
) {
    let (path, s) = fx.build("t.sst", model, opts);
    check_table(fx, rng, model, &path, &s, cache);
}

/// Checks the table at `path`, written from `model` with summary `s`, against the model.
fn check_table(
    fx: &Fixture,
    rng: &mut SmallRng,
    model: &[Entry],
    path: &Path,
    s: &TableSummary,
    cache: Option<Arc<dyn BlockCache>>,
) {
    assert_eq!(s.num_entries, model.len() as u64);
    let t = fx.open(path, cache).unwrap();
    let p = t.properties();
    assert_eq!(p.num_entries, model.len() as u64);
    assert_eq!(t.file_size(), s.file_size);
    assert_eq!(p.num_data_blocks as usize, s.blocks.len());
    assert_eq!(t.index().unwrap().num_blocks(), s.blocks.len());
    let dels = model
        .iter()
        .filter(|(k, _)| crate::types::parse_internal_key(k).unwrap().kind == 0)
        .count();
    assert_eq!(p.num_deletions, dels as u64);
    let seqs: Vec<u64> = model
        .iter()
        .map(|(k, _)| crate::types::parse_internal_key(k).unwrap().seq)
        .collect();
    if let (Some(first), Some(last)) = (model.first(), model.last()) {
        assert_eq!((&s.smallest, &s.largest), (&first.0, &last.0));
        assert_eq!((&p.smallest, &p.largest), (&first.0, &last.0));
        assert_eq!(s.min_seq, *seqs.iter().min().unwrap());
        assert_eq!(p.max_seq, *seqs.iter().max().unwrap());
    }
    assert_eq!(
        p.raw_key_bytes,
        model.iter().map(|e| e.0.len() as u64).sum::<u64>()
    );
    assert_eq!(
        p.raw_value_bytes,
        model.iter().map(|e| e.1.len() as u64).sum::<u64>()
    );
    // Block ranges cover the model in order, ordinals match.
    let mut ord = 0u64;
    for (i, b) in s.blocks.iter().enumerate() {
        let idx = t.index().unwrap();
        let e = idx.block(i);
        assert_eq!(e.handle, b.handle);
        assert_eq!(e.first_ordinal, ord);
        assert_eq!(b.first_key, user_key(&model[ord as usize].0));
        ord += t.index().unwrap().block_entries(i);
        assert_eq!(b.last_key, user_key(&model[ord as usize - 1].0));
        assert_eq!(e.last_key, model[ord as usize - 1].0);
    }
    assert_eq!(ord, model.len() as u64);

    // Point lookups: every version, newest version, below the oldest, absent keys.
    let mut trace = ReadTrace::default();
    for (k, v) in model {
        let pk = crate::types::parse_internal_key(k).unwrap();
        let got = t
            .get(&make_lookup_key(pk.user_key, pk.seq), &mut trace)
            .unwrap();
        assert_eq!(got.as_ref(), Some(&(k.clone(), v.clone())));
        assert!(t.may_contain(pk.user_key).unwrap());
        for seq in [MAX_SEQ, pk.seq.saturating_sub(1)] {
            let look = make_lookup_key(pk.user_key, seq);
            assert_eq!(
                t.get(&look, &mut trace).unwrap(),
                expected_get(model, &look)
            );
        }
    }
    for _ in 0..500 {
        let look = random_target(rng, model);
        let look = make_lookup_key(user_key(&look), rng.random_range(0..MAX_SEQ));
        assert_eq!(
            t.get(&look, &mut trace).unwrap(),
            expected_get(model, &look)
        );
    }
    // Ordinals address entries directly.
    for _ in 0..50.min(model.len()) {
        let o = rng.random_range(0..model.len() as u64);
        let bi = t.index().unwrap().block_for_ordinal(o).unwrap();
        let blk = t.read_block(bi, &mut trace).unwrap();
        let (k, v) = blk.entry((o - t.index().unwrap().block(bi).first_ordinal) as usize);
        assert_eq!(
            (&k.to_vec(), v),
            (&model[o as usize].0, &model[o as usize].1[..])
        );
    }

    // Iteration both ways.
    let mut it = t.iter();
    assert_eq!(collect_forward(&mut it), model);
    assert_eq!(collect_backward(&mut it), model);
    it.status().unwrap();

    // Seeks at random points, then a few steps each way.
    for _ in 0..300 {
        let target = random_target(rng, model);
        let i = first_ge(model, &target);
        it.seek(&target);
        assert_eq!(it.valid(), i < model.len());
        for (k, v) in model.iter().skip(i).take(3) {
            assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
            it.next();
        }
        assert_eq!(it.valid(), i + 3 < model.len());
        // seek_for_prev: last entry <= target.
        let le = model.partition_point(|(k, _)| cmp_internal(k, &target) != Ordering::Greater);
        it.seek_for_prev(&target);
        assert_eq!(it.valid(), le > 0, "seek_for_prev validity");
        for (k, v) in model[..le].iter().rev().take(3) {
            assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
            it.prev();
        }
        assert_eq!(it.valid(), le > 3);
    }
    it.status().unwrap();
}

#[test]
fn round_trip_against_model() {
    let mut rng = SmallRng::seed_from_u64(42);
    let fx = fixture();
    let configs = [
        (4096, 10.0, false, false),
        (4096, 10.0, true, false),
        (64, 0.0, false, false),
        (1, 3.3, true, false),
        (16 * 1024, 20.0, false, false),
        (4096, 10.0, false, true),
        (4096, 10.0, true, true),
        (64, 0.0, false, true),
        (1, 3.3, true, true),
        (16 * 1024, 20.0, false, true),
    ];
    for (round, &(block_size, bits, cached, fixed)) in configs.iter().enumerate() {
        let model = random_entries(&mut rng, 300 + 200 * (round % 5));
        let cache: Option<Arc<dyn BlockCache>> =
            cached.then(|| Arc::new(LruBlockCache::new(32 * 1024, 4)) as Arc<dyn BlockCache>);
        let opts = TableBuildOptions {
            block_size,
            bloom_bits_per_key: bits,
            fixed_width_entries: fixed,
            cache_local_filter: round % 2 == 0,
            compression: [Compression::None, Compression::Lz4, Compression::ZSTD][round % 3],
        };
        check_round_trip(&fx, &mut rng, &model, opts, cache.clone());
        // Blocks of short entries are fixed-width when asked for; blocks with a long key
        // or value keep layout 2 (both kinds in one table).
        let (path, _) = fx.build("t.sst", &model, opts);
        let t = fx.open(&path, None).unwrap();
        let index = t.index().unwrap();
        let n_fixed = (0..index.num_blocks())
            .filter(|&i| index.block(i).fixed.is_some())
            .count();
        if !fixed {
            assert_eq!(n_fixed, 0);
        } else if block_size <= 64 {
            assert!(n_fixed > 0 && n_fixed < index.num_blocks(), "{n_fixed}");
        }
        if let Some(c) = cache {
            let s = c.stats();
            assert!(s.hits > 0 && s.inserts > 0 && c.usage() <= c.capacity());
        }
    }
}

/// Rewrites the table at `path` (summary `s`) into `name` with its data and index blocks
/// in layout 1 (no key prefix, u32 offsets), as builds before layout 2 wrote them; returns
/// the new file and its summary.
fn rewrite_as_layout_1(
    fx: &Fixture,
    path: &Path,
    s: &TableSummary,
    name: &str,
) -> (PathBuf, TableSummary) {
    let old = std::fs::read(path).unwrap();
    let footer = Footer::decode(&old[old.len() - FOOTER_LEN..], "t").unwrap();
    let contents = |h: BlockHandle| old[h.offset as usize..(h.offset + h.size) as usize].to_vec();
    let put = |out: &mut Vec<u8>, c: &[u8], ty| {
        let h = BlockHandle::new(out.len() as u64, c.len() as u64);
        out.extend_from_slice(c);
        out.extend_from_slice(&block_trailer(c, ty, 0));
        h
    };
    let t = fx.open(path, None).unwrap();
    let (mut out, mut index, mut blocks) = (Vec::new(), Vec::new(), s.blocks.clone());
    for (i, range) in blocks.iter_mut().enumerate() {
        let idx = t.index().unwrap();
        let e = idx.block(i);
        let blk = Block::decode(contents(e.handle), "t").unwrap();
        let mut b = block::BlockBuilder::v1();
        for j in 0..blk.entry_count() {
            let (k, v) = blk.entry(j);
            b.add(&k.to_vec(), v);
        }
        range.handle = put(&mut out, &b.finish(), BlockType::Data);
        index.push(IndexEntry {
            handle: range.handle,
            ..e.clone()
        });
    }
    let filter = if footer.filter.size == 0 {
        BlockHandle::default()
    } else {
        put(&mut out, &contents(footer.filter), BlockType::Filter)
    };
    let mut ib = block::BlockBuilder::v1();
    for e in &index {
        let mut v = Vec::new();
        e.handle.encode_to(&mut v);
        format::put_varint(&mut v, e.first_ordinal);
        ib.add(&e.last_key, &v);
    }
    let index = put(&mut out, &ib.finish(), BlockType::Index);
    let properties = put(
        &mut out,
        &contents(footer.properties),
        BlockType::Properties,
    );
    out.extend_from_slice(
        // A version-1 footer, as those builds wrote it.
        &Footer {
            index,
            filter,
            properties,
        }
        .encode_as(1),
    );
    let new_path = fx.root.join(name);
    std::fs::write(&new_path, &out).unwrap();
    let summary = TableSummary {
        file_size: out.len() as u64,
        blocks,
        ..s.clone()
    };
    (new_path, summary)
}

/// Whether each data block of a table file (as `s` lists them) is in layout 2.
fn blocks_prefixed(path: &Path, s: &TableSummary) -> Vec<bool> {
    let bytes = std::fs::read(path).unwrap();
    s.blocks
        .iter()
        .map(|b| bytes[(b.handle.offset + b.handle.size) as usize - 1] & 0x80 != 0)
        .collect()
}

/// Tables written before layout 2 (data and index blocks in layout 1) still read back,
/// through the fence pointers and through a learned index.
#[test]
fn layout_1_tables_read_back() {
    let mut rng = SmallRng::seed_from_u64(8);
    let fx = fixture();
    for (round, block_size) in [4096, 64, 1, 16 * 1024].into_iter().enumerate() {
        let model = random_entries(&mut rng, 300 + 100 * round);
        let opts = TableBuildOptions {
            block_size,
            bloom_bits_per_key: 10.0,
            fixed_width_entries: false,
            cache_local_filter: round % 2 == 0,
            compression: Compression::None,
        };
        let (path, s) = fx.build("new.sst", &model, opts);
        assert!(blocks_prefixed(&path, &s).iter().all(|&p| p));
        let (old, s1) = rewrite_as_layout_1(&fx, &path, &s, "old.sst");
        assert!(blocks_prefixed(&old, &s1).iter().all(|&p| !p));
        assert!(s1.file_size > s.file_size, "layout 2 is smaller");
        let cache: Option<Arc<dyn BlockCache>> = (round % 2 == 0)
            .then(|| Arc::new(LruBlockCache::new(32 * 1024, 4)) as Arc<dyn BlockCache>);
        check_table(&fx, &mut rng, &model, &old, &s1, cache);
        let t = fx.open_with(&old, None, IndexPolicy::learn_all(4)).unwrap();
        assert!(t.is_learned());
        let mut trace = ReadTrace::default();
        for (k, v) in &model {
            let pk = crate::types::parse_internal_key(k).unwrap();
            let got = t.get(&make_lookup_key(pk.user_key, pk.seq), &mut trace);
            assert_eq!(got.unwrap(), Some((k.clone(), v.clone())));
        }
        for _ in 0..300 {
            let look = random_target(&mut rng, &model);
            let look = make_lookup_key(user_key(&look), rng.random_range(0..MAX_SEQ));
            assert_eq!(
                t.get(&look, &mut trace).unwrap(),
                expected_get(&model, &look)
            );
        }
        assert!(trace.learned_lookups > 0);
    }
}

#[test]
fn tiny_and_empty_tables() {
    let mut rng = SmallRng::seed_from_u64(1);
    let fx = fixture();
    for n in [0usize, 1, 2] {
        let model: Vec<Entry> = (0..n)
            .map(|i| {
                (
                    make_internal_key(&[b'k', i as u8], 5, ValueKind::Value),
                    vec![i as u8],
                )
            })
            .collect();
        check_round_trip(&fx, &mut rng, &model, TableBuildOptions::default(), None);
    }
    let (path, s) = fx.build("e.sst", &[], TableBuildOptions::default());
    assert!(s.blocks.is_empty() && s.smallest.is_empty());
    let t = fx.open(&path, None).unwrap();
    assert!(!t.may_contain(b"x").unwrap());
    let mut it = t.iter();
    it.seek(&make_lookup_key(b"a", 1));
    assert!(!it.valid());
    it.seek_for_prev(&make_lookup_key(b"a", 1));
    assert!(!it.valid());
}

#[test]
fn builder_rejects_bad_input() {
    let fx = fixture();
    let f = fx
        .env
        .create(&fx.root.join("b.sst"), FileKind::Table, 0, None)
        .unwrap();
    let mut b = TableBuilder::new(f, TableBuildOptions::default());
    assert!(b.add(b"short", b"").is_err());
    b.add(&make_internal_key(b"b", 5, ValueKind::Value), b"")
        .unwrap();
    // Same key again, an older-sorting key, and a smaller user key are refused.
    assert!(b
        .add(&make_internal_key(b"b", 5, ValueKind::Value), b"")
        .is_err());
    assert!(b
        .add(&make_internal_key(b"b", 6, ValueKind::Value), b"")
        .is_err());
    assert!(b
        .add(&make_internal_key(b"a", 1, ValueKind::Value), b"")
        .is_err());
    b.add(&make_internal_key(b"b", 4, ValueKind::Value), b"")
        .unwrap();
    assert!(matches!(
        b.add(
            &make_internal_key(&vec![b'z'; 70_000], 1, ValueKind::Value),
            b""
        ),
        Err(Error::TooLarge { .. })
    ));
}

#[test]
fn traces_bloom_and_cache() {
    let mut rng = SmallRng::seed_from_u64(2);
    let fx = fixture();
    let model = random_entries(&mut rng, 400);
    let (path, _) = fx.build("c.sst", &model, TableBuildOptions::default());
    let cache: Arc<dyn BlockCache> = Arc::new(LruBlockCache::new(1 << 20, 16));
    let t = fx.open(&path, Some(cache.clone())).unwrap();
    let before = fx.env.stats().snapshot().kind(FileKind::Table).read_ops;
    let look = make_lookup_key(user_key(&model[10].0), MAX_SEQ);
    let mut tr = ReadTrace::default();
    assert!(t.get(&look, &mut tr).unwrap().is_some());
    assert_eq!((tr.data_misses, tr.data_hits, tr.storage_reads), (1, 0, 1));
    assert!(tr.bloom_checked && !tr.bloom_negative && tr.storage_bytes > 0);
    let mut tr = ReadTrace::default();
    assert!(t.get(&look, &mut tr).unwrap().is_some());
    assert_eq!((tr.data_misses, tr.data_hits, tr.storage_reads), (0, 1, 0));
    assert_eq!(
        fx.env.stats().snapshot().kind(FileKind::Table).read_ops,
        before + 1
    );
    // Absent keys are mostly stopped by the filter, without storage reads.
    let mut negatives = 0;
    for i in 0..1000 {
        let mut tr = ReadTrace::default();
        let got = t
            .get(
                &make_lookup_key(format!("absent{i}").as_bytes(), MAX_SEQ),
                &mut tr,
            )
            .unwrap();
        assert!(got.is_none());
        if tr.bloom_negative {
            negatives += 1;
            assert_eq!(tr.storage_reads, 0);
        }
    }
    assert!(negatives > 950, "{negatives}");
    cache.erase_file(FileNo::new(1));
    assert_eq!(cache.usage(), 0);
    // The same table read with O_DIRECT (or its fallback) gives the same entries.
    let f = fx
        .env
        .open_read(&path, FileKind::Table, 0, Some(0), true)
        .unwrap();
    let direct = Arc::new(Table::open(f, FileNo::new(2), None).unwrap());
    assert_eq!(collect_forward(&mut direct.iter()), model);
    assert_eq!(collect_forward(&mut t.iter()), model);
}

#[test]
fn tables_are_shareable() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Table>();
    send_sync::<LruBlockCache>();
    send::<TableIterator>();
}

#[test]
fn unsupported_version_and_bad_magic() {
    let mut rng = SmallRng::seed_from_u64(3);
    let fx = fixture();
    let model = random_entries(&mut rng, 20);
    // Short entries, which fixed-width blocks take.
    let short: Vec<Entry> = (0..20u32)
        .map(|i| {
            let k = make_internal_key(format!("k{i:03}").as_bytes(), 1, ValueKind::Value);
            (k, b"v".to_vec())
        })
        .collect();
    let version = |opts| {
        let (path, _) = fx.build("v.sst", &short, opts);
        let t = std::fs::read(&path).unwrap();
        u32::from_le_bytes(t[t.len() - 12..t.len() - 8].try_into().unwrap())
    };
    // Each table says the oldest version that names its layouts, so older builds read
    // what they can: 2 without fixed-width blocks or a cache-local filter, 3 with
    // fixed-width blocks, 4 with a cache-local filter, 5 with a compressed block.
    let classic = TableBuildOptions {
        cache_local_filter: false,
        ..Default::default()
    };
    assert_eq!(version(classic), 2);
    let fixed = TableBuildOptions {
        fixed_width_entries: true,
        ..classic
    };
    assert_eq!(version(fixed), 3);
    assert_eq!(version(TableBuildOptions::default()), 4);
    let unfiltered = TableBuildOptions {
        bloom_bits_per_key: 0.0,
        ..Default::default()
    };
    assert_eq!(version(unfiltered), 2);
    let lz4 = TableBuildOptions {
        compression: Compression::Lz4,
        ..classic
    };
    assert_eq!(version(lz4), 5);
    // Fixed-width blocks stay raw (a learned get reads their chunks): no compressed data
    // block, and the index block of a table this small does not shrink by 1/8.
    let fixed_lz4 = TableBuildOptions {
        compression: Compression::Lz4,
        ..fixed
    };
    assert!(version(fixed_lz4) >= 3);
    let (path, _) = fx.build("v.sst", &model, TableBuildOptions::default());
    let good = std::fs::read(&path).unwrap();
    let n = good.len();
    let mut v7 = good.clone();
    v7[n - 12..n - 8].copy_from_slice(&7u32.to_le_bytes());
    std::fs::write(&path, &v7).unwrap();
    assert!(matches!(
        fx.open(&path, None),
        Err(Error::UnsupportedVersion {
            found: 7,
            supported: 6,
            ..
        })
    ));
    let mut magic = good;
    magic[n - 1] ^= 0x40;
    std::fs::write(&path, &magic).unwrap();
    let e = fx.open(&path, None).unwrap_err();
    assert!(
        matches!(e, Error::Corruption { ref file, .. } if file.contains("v.sst")),
        "{e}"
    );
}

/// Opens a (possibly damaged) table and reads everything; each call must fail or return
/// exactly the model's answer.
fn check_damaged(fx: &Fixture, path: &Path, model: &[Entry], absent: &[Vec<u8>], cached: bool) {
    check_damaged_with(fx, path, model, absent, cached, IndexPolicy::Fence);
}

fn check_damaged_with(
    fx: &Fixture,
    path: &Path,
    model: &[Entry],
    absent: &[Vec<u8>],
    cached: bool,
    policy: IndexPolicy,
) {
    let cache: Option<Arc<dyn BlockCache>> =
        cached.then(|| Arc::new(LruBlockCache::new(1 << 20, 2)) as Arc<dyn BlockCache>);
    match fx.open_with(path, cache, policy) {
        Ok(t) => {
            check_damaged_table(&t, model, absent);
        }
        Err(e) => assert!(e.is_corruption(), "unexpected error {e}"),
    }
}

/// Reads everything from an open (possibly damaged) table: each call must fail with a
/// corruption error or return exactly the model's answer. Returns the gets' trace and
/// how many of them failed.
fn check_damaged_table(t: &Arc<Table>, model: &[Entry], absent: &[Vec<u8>]) -> (ReadTrace, usize) {
    let mut tr = ReadTrace::default();
    let mut errors = 0;
    for (k, v) in model {
        let pk = crate::types::parse_internal_key(k).unwrap();
        match t.get(&make_lookup_key(pk.user_key, pk.seq), &mut tr) {
            Ok(got) => assert_eq!(got, Some((k.clone(), v.clone())), "wrong answer"),
            Err(e) => {
                assert!(e.is_corruption(), "{e}");
                errors += 1;
            }
        }
    }
    for a in absent {
        if let Ok(got) = t.get(&make_lookup_key(a, MAX_SEQ), &mut tr) {
            assert_eq!(got, None);
        }
    }
    let mut it = t.iter();
    let fwd = collect_forward(&mut it);
    assert_eq!(fwd[..], model[..fwd.len()], "wrong forward iteration");
    assert!(fwd.len() == model.len() || it.status().is_err());
    let mut it = t.iter();
    let back = collect_backward(&mut it);
    assert_eq!(
        back[..],
        model[model.len() - back.len()..],
        "wrong backward iteration"
    );
    assert!(back.len() == model.len() || it.status().is_err());
    (tr, errors)
}

fn small_table(fx: &Fixture) -> (PathBuf, Vec<Entry>, Vec<Vec<u8>>) {
    small_table_with(fx, false)
}

/// A small table of several blocks, fixed-width ones if `fixed`. Its filter is
/// cache-local, or classic with `fixed` (so the corruption tests cover both layouts).
fn small_table_with(fx: &Fixture, fixed: bool) -> (PathBuf, Vec<Entry>, Vec<Vec<u8>>) {
    small_table_as(fx, fixed, Compression::None)
}

/// As [`small_table_with`], its blocks compressed as `compression` says (and every data
/// block then is).
fn small_table_as(
    fx: &Fixture,
    fixed: bool,
    compression: Compression,
) -> (PathBuf, Vec<Entry>, Vec<Vec<u8>>) {
    let model: Vec<Entry> = (0..40u32)
        .flat_map(|i| {
            let uk = format!("key{:03}", i * 2);
            let mut v = vec![(
                make_internal_key(uk.as_bytes(), 100 + i as u64, ValueKind::Value),
                format!("value{i}").into_bytes(),
            )];
            if i % 5 == 0 {
                v.insert(
                    0,
                    (
                        make_internal_key(uk.as_bytes(), 500 + i as u64, ValueKind::Deletion),
                        vec![],
                    ),
                );
            }
            v
        })
        .collect();
    let absent = (0..40u32)
        .map(|i| format!("key{:03}", i * 2 + 1).into_bytes())
        .collect();
    let (path, s) = fx.build(
        "small.sst",
        &model,
        TableBuildOptions {
            block_size: 200,
            bloom_bits_per_key: 10.0,
            fixed_width_entries: fixed,
            cache_local_filter: !fixed,
            compression,
        },
    );
    assert!(
        s.blocks.len() >= 4,
        "want several data blocks, got {}",
        s.blocks.len()
    );
    // Most blocks shrink by the 1/8 that keeps them compressed (zstd's frame costs a
    // few of these small blocks theirs).
    let bytes = std::fs::read(&path).unwrap();
    let packed = s
        .blocks
        .iter()
        .filter(|b| bytes[(b.handle.offset + b.handle.size) as usize] >> 4 == compression.code())
        .count();
    assert!(
        2 * packed >= s.blocks.len(),
        "{packed} of {} blocks",
        s.blocks.len()
    );
    let t = fx.open(&path, None).unwrap();
    let index = t.index().unwrap();
    assert!((0..index.num_blocks()).all(|i| index.block(i).fixed.is_some() == fixed));
    (path, model, absent)
}

#[test]
fn every_byte_flip_is_caught_or_harmless() {
    let layouts = [
        (false, Compression::None),
        (true, Compression::None),
        (false, Compression::Lz4),
        (false, Compression::ZSTD),
    ];
    for (fixed, compression) in layouts {
        // Fixed-width tables are read through a memory map, as Bourbon's presets read.
        let fx = fixture_with(fixed);
        let (path, model, absent) = small_table_as(&fx, fixed, compression);
        assert_eq!(
            fx.env
                .open_read(&path, FileKind::Table, 0, Some(0), false)
                .unwrap()
                .is_mapped(),
            fixed
        );
        let good = std::fs::read(&path).unwrap();
        check_damaged(&fx, &path, &model, &absent, false);
        // The good table's model, installed on each damaged copy: learning at open would
        // read (and checksum) every whole block first, so gets would never meet a damaged
        // chunk.
        let learned = fx
            .open_with(&path, None, IndexPolicy::learn_all(2))
            .unwrap();
        let li = learned.learned_index().unwrap();
        let (plr, space, n) = (li.plr().clone(), li.space().clone(), li.num_entries());
        let bad_path = fx.root.join("bad.sst");
        let (mut opened, mut chunk_reads, mut chunk_errors) = (0, 0, 0);
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 1u8 << (i % 8) | 0x20;
            std::fs::write(&bad_path, &bad).unwrap();
            if fx.open(&bad_path, None).is_ok() {
                opened += 1;
            }
            check_damaged(&fx, &bad_path, &model, &absent, i % 2 == 0);
            if i % 3 == 0 {
                let learned = IndexPolicy::learn_all(2);
                check_damaged_with(&fx, &bad_path, &model, &absent, i % 2 == 0, learned);
            }
            // Fixed-width tables: every flip through the learned gets' window reads.
            if fixed {
                if let Ok(mut t) = fx.open_table(&bad_path, None, IndexPolicy::Fence) {
                    let l = LearnedIndex::from_plr(plr.clone(), space.clone(), n);
                    t.set_learned_index(Some(l));
                    let (tr, errors) = check_damaged_table(&Arc::new(t), &model, &absent);
                    chunk_reads += tr.chunk_reads;
                    chunk_errors += usize::from(tr.chunk_reads > 0 && errors > 0);
                }
            }
        }
        // Flips inside data blocks are only seen when the block is read.
        assert!(opened > 0);
        if fixed {
            assert!(
                chunk_reads > 0 && chunk_errors > 0,
                "{chunk_reads} {chunk_errors}"
            );
        }
    }
}

#[test]
fn truncated_files_are_refused() {
    for fixed in [false, true] {
        let fx = fixture_with(fixed);
        let (path, model, absent) = small_table_with(&fx, fixed);
        let good = std::fs::read(&path).unwrap();
        let bad_path = fx.root.join("short.sst");
        for len in 0..good.len() {
            std::fs::write(&bad_path, &good[..len]).unwrap();
            let e = fx.open(&bad_path, None).unwrap_err();
            assert!(e.is_corruption(), "{e}");
            check_damaged(&fx, &bad_path, &model, &absent, false);
        }
    }
}

/// Damage with the checksums recomputed (as a buggy writer would produce): structural
/// validation must still keep every decoder from panicking.
#[test]
fn forged_checksums_never_panic() {
    let mut rng = SmallRng::seed_from_u64(77);
    let fx = fixture();
    let (path, _, _) = small_table(&fx);
    let s = fx.open(&path, None).unwrap();
    let summary = TableSummary {
        file_size: s.file_size(),
        num_entries: s.properties().num_entries,
        smallest: Vec::new(),
        largest: Vec::new(),
        min_seq: 0,
        max_seq: 0,
        range_dels: 0,
        blocks: (0..s.index().unwrap().num_blocks())
            .map(|i| BlockRange {
                handle: s.index().unwrap().block(i).handle,
                first_key: Vec::new(),
                last_key: Vec::new(),
            })
            .collect(),
    };
    let (old, _) = rewrite_as_layout_1(&fx, &path, &summary, "small-layout-1.sst");
    let (fixed, _, _) = small_table_with(&fx, true);
    let fixed_copy = fx.root.join("small-fixed.sst");
    std::fs::copy(&fixed, &fixed_copy).unwrap();
    let mut paths = vec![path, old, fixed_copy];
    for c in [Compression::Lz4, Compression::ZSTD] {
        let (packed, _, _) = small_table_as(&fx, false, c);
        let copy = fx.root.join(format!("small-{}.sst", c.name()));
        std::fs::copy(&packed, &copy).unwrap();
        paths.push(copy);
    }
    for path in paths {
        forge_checksums(&mut rng, &fx, &path);
    }
}

fn forge_checksums(rng: &mut SmallRng, fx: &Fixture, path: &Path) {
    let good = std::fs::read(path).unwrap();
    let footer = Footer::decode(&good[good.len() - FOOTER_LEN..], "t").unwrap();
    let t = fx.open(path, None).unwrap();
    let mut blocks: Vec<(BlockHandle, BlockType)> = (0..t.index().unwrap().num_blocks())
        .map(|i| (t.index().unwrap().block(i).handle, BlockType::Data))
        .collect();
    blocks.push((footer.index, BlockType::Index));
    blocks.push((footer.filter, BlockType::Filter));
    blocks.push((footer.properties, BlockType::Properties));
    let bad_path = fx.root.join("forged.sst");
    for _ in 0..3000 {
        let (h, ty) = blocks[rng.random_range(0..blocks.len())];
        let (s, e) = (h.offset as usize, (h.offset + h.size) as usize);
        let mut bad = good.clone();
        for _ in 0..rng.random_range(1..4) {
            let i = rng.random_range(s..e);
            bad[i] = if rng.random_bool(0.5) {
                rng.random()
            } else {
                bad[i] ^ 0x80
            };
        }
        let trailer = block_trailer(&bad[s..e], ty, good[e] >> 4);
        bad[e..e + BLOCK_TRAILER_LEN].copy_from_slice(&trailer);
        std::fs::write(&bad_path, &bad).unwrap();
        // The learned index trains on every key at open: forged keys must give errors.
        if let Ok(t) = fx.open_with(&bad_path, None, IndexPolicy::learn_all(1)) {
            let mut tr = ReadTrace::default();
            for i in 0..60u32 {
                let _ = t.get(
                    &make_lookup_key(format!("key{i:03}").as_bytes(), MAX_SEQ),
                    &mut tr,
                );
            }
        }
        let Ok(t) = fx.open(&bad_path, None) else {
            continue;
        };
        let mut tr = ReadTrace::default();
        for i in 0..60u32 {
            let _ = t.get(
                &make_lookup_key(format!("key{i:03}").as_bytes(), MAX_SEQ),
                &mut tr,
            );
        }
        let mut it = t.iter();
        let mut steps = 0;
        it.seek_to_first();
        while it.valid() && steps < 1000 {
            it.next();
            steps += 1;
        }
        it.seek_to_last();
        while it.valid() && steps < 2000 {
            it.prev();
            steps += 1;
        }
        it.seek(&make_lookup_key(b"key033", MAX_SEQ));
        it.seek_for_prev(&make_lookup_key(b"key033", MAX_SEQ));
    }
}

/// Entries of `n` keys with 100-byte values, in order.
fn plain_entries(n: u32) -> Vec<Entry> {
    (0..n)
        .map(|i| {
            (
                make_internal_key(format!("key{i:08}").as_bytes(), 1, ValueKind::Value),
                vec![(i % 251) as u8; 100],
            )
        })
        .collect()
}

/// Compressed blocks read ahead are checked and decompressed out of the readahead
/// buffer: a scan returns the same entries as a read block by block, with every codec.
#[test]
fn compressed_blocks_decode_out_of_the_readahead_buffer() {
    let fx = fixture();
    let model = plain_entries(8000);
    for compression in [Compression::Lz4, Compression::ZSTD] {
        let opts = TableBuildOptions {
            compression,
            ..TableBuildOptions::default()
        };
        let (path, _) = fx.build(&format!("ra-{compression:?}.sst"), &model, opts);
        let t = fx.open(&path, None).unwrap();
        let blocks = t.index().unwrap().num_blocks() as u32;
        let mut it = t.iter();
        assert!(collect_forward(&mut it) == model, "{compression:?}");
        assert_eq!(it.trace().data_misses, blocks);
        assert!(
            it.trace().storage_reads < blocks / 4,
            "{compression:?} read ahead"
        );
        let mut it = t.iter();
        assert!(collect_backward(&mut it).len() == model.len());
    }
}

#[test]
fn sequential_scans_read_ahead_and_return_the_same_entries() {
    let fx = fixture();
    let model = plain_entries(8000); // about 220 blocks of 4 KiB
    let (path, _) = fx.build("ra.sst", &model, TableBuildOptions::default());
    let t = fx.open(&path, None).unwrap();
    let blocks = t.index().unwrap().num_blocks() as u32;
    assert!(blocks > 200, "{blocks} blocks");
    let mut it = t.iter();
    assert!(collect_forward(&mut it) == model);
    let tr = it.trace();
    assert_eq!(tr.data_misses, blocks, "every block is still a cache miss");
    // Two single reads, then 8, 16, ..., 256 KiB: a dozen reads for the whole table.
    assert!(
        tr.storage_reads <= 14,
        "{} storage reads for {blocks} blocks",
        tr.storage_reads
    );
    // Backward the sequence never starts: one read per block.
    let mut it = t.iter();
    assert!(collect_backward(&mut it).len() == model.len());
    assert_eq!(it.trace().storage_reads, blocks);
    // The environment counts what the trace does.
    let env_before = fx.env.stats().snapshot().kind(FileKind::Table);
    let mut it = t.iter();
    assert!(collect_forward(&mut it) == model);
    let env_after = fx.env.stats().snapshot().kind(FileKind::Table);
    assert_eq!(
        env_after.read_ops - env_before.read_ops,
        u64::from(it.trace().storage_reads)
    );
    assert_eq!(
        env_after.read_bytes - env_before.read_bytes,
        it.trace().storage_bytes
    );
    // A seek starts over: after a long forward run, a jump reads two blocks singly before
    // reading ahead again.
    let per_block = (model.len() as u32).div_ceil(blocks) as usize;
    let mut it = t.iter();
    it.seek_to_first();
    for _ in 0..per_block * 40 {
        it.next();
    }
    let before = it.trace().clone();
    it.seek(&model[6000].0);
    assert_eq!(it.key(), model[6000].0.as_slice());
    let one = |t: &ReadTrace, b: &ReadTrace| {
        (
            t.storage_reads - b.storage_reads,
            t.storage_bytes - b.storage_bytes,
        )
    };
    let (reads, bytes) = one(it.trace(), &before);
    assert_eq!(reads, 1);
    assert!(bytes < 8 << 10, "the seek read one block: {bytes} bytes");
    let mut block_reads = vec![];
    let mut prev = it.trace().clone();
    for (k, _) in &model[6001..6000 + per_block * 4] {
        it.next();
        assert_eq!(it.key(), k.as_slice());
        let (r, b) = one(it.trace(), &prev);
        if r > 0 {
            block_reads.push(b);
        }
        prev = it.trace().clone();
    }
    assert!(block_reads.len() >= 2, "{block_reads:?}");
    assert!(block_reads[0] < 8 << 10, "{block_reads:?}");
    assert!(
        block_reads[1] >= 8 << 10,
        "the third block read ahead: {block_reads:?}"
    );
}

#[test]
fn cached_blocks_break_the_sequence() {
    let fx = fixture();
    let model = plain_entries(2000);
    let (path, _) = fx.build("rc.sst", &model, TableBuildOptions::default());
    let cache: Arc<dyn BlockCache> = Arc::new(LruBlockCache::new(64 << 20, 1));
    let f = fx
        .env
        .open_read(&path, FileKind::Table, 0, Some(0), false)
        .unwrap();
    let mut t = Table::open(f, FileNo::new(1), Some(cache)).unwrap();
    assert!(
        !t.reads_ahead(),
        "buffered reads through a cache: the OS reads ahead"
    );
    t.set_readahead(true); // as with direct reads
    let t = Arc::new(t);
    let blocks = t.index().unwrap().num_blocks();
    // Every third block cached by point reads.
    for b in (0..blocks).step_by(3) {
        t.read_block(b, &mut ReadTrace::default()).unwrap();
    }
    let mut it = t.iter();
    assert!(collect_forward(&mut it) == model);
    // Never two misses in a row before a hit: no readahead, one read per missing block.
    let missing = (blocks - blocks.div_ceil(3)) as u32;
    assert_eq!(it.trace().storage_reads, missing);
    assert_eq!(it.trace().data_misses, missing);
}

/// `cache_index_and_filter_blocks`: the index and filter live in the block cache, charged
/// to its budget, and are read again after an eviction; every answer equals the pinned
/// table's, a damaged re-read is a corruption error, and a block handle reads its block
/// without the index.
#[test]
fn index_and_filter_in_the_cache() {
    use crate::cache::BlockKind;
    let mut rng = SmallRng::seed_from_u64(12);
    let fx = fixture();
    let model = random_entries(&mut rng, 600);
    let (path, s) = fx.build("m.sst", &model, TableBuildOptions::default());
    let bytes = std::fs::read(&path).unwrap();
    let footer = Footer::decode(&bytes[bytes.len() - FOOTER_LEN..], "m").unwrap();
    let cache: Arc<dyn BlockCache> = Arc::new(LruBlockCache::new(4 << 20, 1));
    let f = fx
        .env
        .open_read(&path, FileKind::Table, 0, Some(0), false)
        .unwrap();
    let t = Arc::new(Table::open_caching_meta(f, FileNo::new(1), cache.clone()).unwrap());
    let pinned = fx.open(&path, None).unwrap();
    let st = cache.stats();
    assert_eq!(st.kind(BlockKind::Index).inserts, 1);
    assert_eq!(st.kind(BlockKind::Filter).inserts, 1);
    assert_eq!(t.pinned_memory(), 0);
    assert!(
        cache.usage() >= pinned.pinned_memory(),
        "charged to the budget"
    );

    let same = |t: &Table| {
        for (k, _) in model.iter().step_by(5) {
            let pk = crate::types::parse_internal_key(k).unwrap();
            let look = make_lookup_key(pk.user_key, pk.seq);
            let mut a = ReadTrace::default();
            let mut b = ReadTrace::default();
            assert_eq!(
                t.get(&look, &mut a).unwrap(),
                pinned.get(&look, &mut b).unwrap()
            );
        }
    };
    same(&t);
    assert!(collect_forward(&mut t.iter()) == model);
    assert!(collect_backward(&mut t.iter()) == model);

    // Evicted: the next get reads both again, once; the one after finds them cached.
    let key_of = |h: BlockHandle| crate::cache::BlockKey {
        file_no: FileNo::new(1),
        offset: h.offset,
    };
    cache.erase(&key_of(footer.index));
    cache.erase(&key_of(footer.filter));
    let pk = crate::types::parse_internal_key(&model[100].0).unwrap();
    let look = make_lookup_key(pk.user_key, pk.seq);
    let mut tr = ReadTrace::default();
    assert!(t.get(&look, &mut tr).unwrap().is_some());
    assert_eq!((tr.index_misses, tr.filter_misses), (1, 1));
    assert!(tr.storage_reads >= 2);
    let mut tr = ReadTrace::default();
    assert!(t.get(&look, &mut tr).unwrap().is_some());
    assert_eq!((tr.index_misses, tr.filter_misses), (0, 0));
    assert_eq!((tr.index_hits, tr.filter_hits), (1, 1));
    same(&t);

    // The handle a get reports reads the block without the index.
    let (no, handle) = tr.found_block.expect("a found entry reports its block");
    assert_eq!(handle, s.blocks[no as usize].handle);
    cache.erase(&key_of(footer.index));
    let inserts = cache.stats().kind(BlockKind::Index).inserts;
    let mut tr = ReadTrace::default();
    let b = t.read_block_at(handle, &mut tr).unwrap();
    assert_eq!(cache.stats().kind(BlockKind::Index).inserts, inserts);
    assert_eq!(tr.index_misses + tr.index_hits, 0);
    let want = pinned
        .read_block(no as usize, &mut ReadTrace::default())
        .unwrap();
    assert_eq!(b.entry_count(), want.entry_count());
    assert_eq!(b.entry(0).1, want.entry(0).1);
    let past = BlockHandle::new(footer.index.offset, 10);
    let e = t
        .read_block_at(past, &mut ReadTrace::default())
        .unwrap_err();
    assert!(e.is_corruption(), "{e}");

    // The index damaged on disk after the open, then evicted: a corruption error, never
    // a wrong answer.
    let mut bad = bytes.clone();
    bad[footer.index.offset as usize + 3] ^= 0x40;
    std::fs::write(&path, &bad).unwrap();
    cache.erase(&key_of(footer.index));
    let e = t.get(&look, &mut ReadTrace::default()).unwrap_err();
    assert!(e.is_corruption(), "{e}");
    let mut it = t.iter();
    it.seek_to_first();
    assert!(!it.valid() && it.status().unwrap_err().is_corruption());
}

/// Compressed tables store less, read back the same entries, and cache their blocks
/// uncompressed (charged at their decoded size); a compressed block read twice is read
/// from storage once.
#[test]
fn compressed_tables_are_smaller_and_cache_raw_blocks() {
    let fx = fixture();
    let (raw_path, model, absent) = small_table_as(&fx, false, Compression::None);
    let raw_size = std::fs::metadata(&raw_path).unwrap().len();
    let raw_copy = fx.root.join("raw.sst");
    std::fs::copy(&raw_path, &raw_copy).unwrap();
    for c in [Compression::Lz4, Compression::ZSTD] {
        let (path, _, _) = small_table_as(&fx, false, c);
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(size < raw_size, "{c:?}: {size} bytes, raw {raw_size}");
        let cache = Arc::new(LruBlockCache::new(1 << 20, 1));
        let t = fx.open(&path, Some(cache.clone())).unwrap();
        let mut tr = ReadTrace::default();
        let block = t.read_block(0, &mut tr).unwrap();
        let handle = t.index().unwrap().block(0).handle;
        assert!(
            block.size() > handle.size as usize,
            "{c:?}: block not compressed"
        );
        assert!(cache.usage() >= block.charge());
        assert_eq!(tr.storage_bytes, handle.size + BLOCK_TRAILER_LEN as u64);
        t.read_block(0, &mut tr).unwrap();
        assert_eq!((tr.data_misses, tr.data_hits), (1, 1));
        for (k, v) in model.iter().filter(|(k, _)| k.len() > 8) {
            let uk = crate::types::user_key(k);
            let got = t.get(&make_lookup_key(uk, MAX_SEQ), &mut tr).unwrap();
            let (gk, gv) = got.expect("present key found");
            if gk == *k {
                assert_eq!(gv, *v);
            }
        }
        for k in &absent {
            let got = t.get(&make_lookup_key(k, MAX_SEQ), &mut tr).unwrap();
            assert!(got.is_none_or(|(gk, _)| crate::types::user_key(&gk) != &k[..]));
        }
    }
}

/// A table holding `entries` and the range deletions `dels` (column family 0).
fn build_with_dels(
    fx: &Fixture,
    name: &str,
    entries: &[Entry],
    dels: &crate::range_del::RangeDels,
) -> crate::Result<(PathBuf, TableSummary)> {
    let path = fx.root.join(name);
    let f = fx.env.create(&path, FileKind::Table, 0, Some(0))?;
    let mut b = TableBuilder::new(f, TableBuildOptions::default());
    b.set_column_family(CfId::DEFAULT, "default");
    for (k, v) in entries {
        b.add(k, v)?;
    }
    b.add_range_dels(dels);
    Ok((path, b.finish()?))
}

fn tombstone(start: &str, end: &str, seq: u64) -> crate::range_del::RangeTombstone {
    crate::range_del::RangeTombstone {
        start: start.as_bytes().to_vec(),
        end: end.as_bytes().to_vec(),
        seq,
    }
}

#[test]
fn range_deletions_round_trip_and_widen_the_table() {
    use crate::range_del::RangeDels;
    use crate::types::{is_range_bound, range_bound_key};
    let fx = fixture();
    let entries: Vec<Entry> = ["d", "e", "f"]
        .iter()
        .map(|k| {
            (
                make_internal_key(k.as_bytes(), 5, ValueKind::Value),
                b"v".to_vec(),
            )
        })
        .collect();
    let dels = RangeDels::new([tombstone("a", "e", 9), tombstone("c", "k", 2)]);
    let (path, s) = build_with_dels(&fx, "d.sst", &entries, &dels).unwrap();
    assert_eq!(s.range_dels, dels.len() as u64);
    assert_eq!(s.smallest, range_bound_key(b"a"));
    assert_eq!(s.largest, range_bound_key(b"k"));
    assert!(is_range_bound(&s.largest));
    assert_eq!((s.min_seq, s.max_seq), (2, 9));
    let raw = std::fs::read(&path).unwrap();
    let n = raw.len();
    assert_eq!(
        u32::from_le_bytes(raw[n - 12..n - 8].try_into().unwrap()),
        6
    );
    let t = fx.open(&path, None).unwrap();
    assert_eq!(t.range_dels().map(|d| (**d).clone()), Some(dels.clone()));
    assert_eq!(t.properties().num_entries, 3);
    // The entries read as before.
    let got = t.get(&make_lookup_key(b"e", MAX_SEQ), &mut ReadTrace::default());
    assert!(got.unwrap().is_some());

    // Deletions alone make a table too; its range is theirs.
    let (path, s) = build_with_dels(&fx, "only.sst", &[], &dels).unwrap();
    assert_eq!(s.num_entries, 0);
    assert_eq!(
        (s.smallest, s.largest),
        (range_bound_key(b"a"), range_bound_key(b"k"))
    );
    let t = fx.open(&path, None).unwrap();
    assert_eq!(t.range_dels().map(|d| d.len()), Some(dels.len()));
    let mut it = t.iter();
    it.seek_to_first();
    assert!(!it.valid() && it.status().is_ok());

    // A table that names no column family cannot hold them (repair needs it).
    let f = fx
        .env
        .create(&fx.root.join("nocf.sst"), FileKind::Table, 0, Some(0))
        .unwrap();
    let mut b = TableBuilder::new(f, TableBuildOptions::default());
    b.add_range_dels(&dels);
    assert!(matches!(b.finish(), Err(Error::InvalidArgument(_))));
}

#[test]
fn a_damaged_range_deletion_block_is_refused_at_open() {
    use crate::range_del::RangeDels;
    let fx = fixture();
    let entries: Vec<Entry> = (0..50u32)
        .map(|i| {
            let k = make_internal_key(format!("k{i:03}").as_bytes(), 5, ValueKind::Value);
            (k, b"value".to_vec())
        })
        .collect();
    let dels = RangeDels::new([tombstone("k010", "k020", 9), tombstone("k015", "k090", 7)]);
    let (path, _) = build_with_dels(&fx, "d.sst", &entries, &dels).unwrap();
    let good = std::fs::read(&path).unwrap();
    let t = fx.open(&path, None).unwrap();
    let (_, h) = t.properties().range_dels.unwrap();
    drop(t);
    // Every byte of the block and its trailer: a flip is a corruption error at open.
    for at in h.offset..h.end_with_trailer().unwrap() {
        let mut bad = good.clone();
        bad[at as usize] ^= 0x20;
        std::fs::write(&path, &bad).unwrap();
        match fx.open(&path, None) {
            Err(Error::Corruption { .. }) => {}
            other => panic!("flip at {at}: {other:?}"),
        }
    }
    // A block whose checksum is forged over garbage is refused by its decoder.
    let mut forged = good.clone();
    let (start, end) = (h.offset as usize, (h.offset + h.size) as usize);
    for b in &mut forged[start..end] {
        *b = 0xee;
    }
    let trailer = block_trailer(&forged[start..end], BlockType::RangeDel, 0);
    forged[end..end + BLOCK_TRAILER_LEN].copy_from_slice(&trailer);
    std::fs::write(&path, &forged).unwrap();
    assert!(matches!(
        fx.open(&path, None),
        Err(Error::Corruption { .. })
    ));
}
