//! The learned index answers exactly as the fence pointers do, on many key distributions.

use std::cmp::Ordering;
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::*;
use crate::cache::{BlockCache, LruBlockCache};
use crate::compression::Compression;
use crate::ids::FileNo;
use crate::iter::InternalIterator;
use crate::learned::key_to_u64;
use crate::options::IndexPolicy;
use crate::storage::{FileKind, StorageEnv};
use crate::types::{cmp_internal, make_internal_key, make_lookup_key, ValueKind, MAX_SEQ};

type Entry = (Vec<u8>, Vec<u8>);

/// A dataset: sorted distinct user keys.
fn dataset(name: &str, rng: &mut SmallRng, n: usize) -> Vec<Vec<u8>> {
    let be = |v: u64| v.to_be_bytes().to_vec();
    let mut keys: Vec<Vec<u8>> = match name {
        "sequential" => (0..n as u64).map(be).collect(),
        "uniform" => (0..n).map(|_| be(rng.random())).collect(),
        "stride" => (0..n as u64).map(|i| be(1_000_000 + i * 977)).collect(),
        "normal" => (0..n)
            .map(|_| {
                // Sum of 12 uniforms: roughly normal around 6e12.
                let s: u64 = (0..12)
                    .map(|_| rng.random_range(0..1_000_000_000_000u64))
                    .sum();
                be(s)
            })
            .collect(),
        "seg1" | "seg10" => {
            let p = if name == "seg1" { 0.01 } else { 0.10 };
            let mut x = 0u64;
            (0..n)
                .map(|_| {
                    x += if rng.random_bool(p) {
                        rng.random_range(1_000..1_000_000_000)
                    } else {
                        1
                    };
                    be(x)
                })
                .collect()
        }
        // Every key shares its first 8 bytes (learned after the table's common prefix).
        "long-prefix" => (0..n)
            .map(|_| format!("user_id:{:012}", rng.random_range(0..1_000_000_000u64)).into_bytes())
            .collect(),
        // 6 shared bytes, then 2 that vary a little, then more: partial collisions.
        "partial-prefix" => (0..n)
            .map(|_| {
                let mut k = b"tenant".to_vec();
                k.push(rng.random_range(0..3));
                k.push(rng.random_range(0..4));
                k.extend((0..rng.random_range(0..6)).map(|_| rng.random::<u8>()));
                k
            })
            .collect(),
        // Two outliers around keys that share 8 bytes: the common prefix is empty and the
        // model sees one number for all but the ends.
        "colliding" => {
            let mut k: Vec<Vec<u8>> = (0..n.saturating_sub(2))
                .map(|_| {
                    format!("user_id:{:012}", rng.random_range(0..1_000_000_000u64)).into_bytes()
                })
                .collect();
            k.push(b"A".to_vec());
            k.push(b"z".to_vec());
            k
        }
        // 16-byte integers, zero-padded: the first 8 bytes are all zero.
        "padded" => (0..n as u64)
            .map(|i| u128::from(1_000 + i * 31 + i % 7).to_be_bytes().to_vec())
            .collect(),
        // 1..20 bytes, trailing zeros included (they collide with shorter keys).
        "variable" => (0..n)
            .map(|_| {
                let len = rng.random_range(1..20);
                (0..len)
                    .map(|_| match rng.random_range(0..4) {
                        0 => 0,
                        1 => 255,
                        _ => rng.random(),
                    })
                    .collect()
            })
            .collect(),
        _ => unreachable!("{name}"),
    };
    keys.sort();
    keys.dedup();
    keys
}

const DATASETS: &[&str] = &[
    "sequential",
    "uniform",
    "stride",
    "normal",
    "seg1",
    "seg10",
    "long-prefix",
    "colliding",
    "padded",
    "partial-prefix",
    "variable",
];

/// Entries of `keys`, each with `versions(rng)` versions (some deletions).
fn entries(keys: &[Vec<u8>], rng: &mut SmallRng, max_versions: u64) -> Vec<Entry> {
    let mut out = Vec::new();
    for k in keys {
        let nv = if max_versions > 1 && rng.random_bool(0.3) {
            rng.random_range(1..=max_versions)
        } else {
            1
        };
        let mut seqs: Vec<u64> = (0..nv).map(|_| rng.random_range(1..10_000)).collect();
        seqs.sort_unstable();
        seqs.dedup();
        for s in seqs {
            let kind = if rng.random_bool(0.1) {
                ValueKind::Deletion
            } else {
                ValueKind::Value
            };
            out.push((make_internal_key(k, s, kind), s.to_le_bytes().to_vec()));
        }
    }
    out.sort_by(|a, b| cmp_internal(&a.0, &b.0));
    out
}

struct Pair {
    _dir: tempfile::TempDir,
    fence: Arc<Table>,
    learned: Arc<Table>,
}

fn build_pair(entries: &[Entry], block_size: usize, delta: u32, cached: bool) -> Pair {
    build_pair_with(entries, block_size, delta, cached, false)
}

/// A fence-pointer table and a learned one of `entries`; the learned one's blocks are
/// fixed-width if `fixed` (the fence one's never, so the two paths share no layout).
fn build_pair_with(
    entries: &[Entry],
    block_size: usize,
    delta: u32,
    cached: bool,
    fixed: bool,
) -> Pair {
    let dir = tempfile::tempdir().unwrap();
    let env = StorageEnv::new(dir.path(), &[], 0.0).unwrap();
    let write = |name: &str, fixed_width_entries: bool| {
        let path = dir.path().join(name);
        let f = env.create(&path, FileKind::Table, 0, Some(0)).unwrap();
        let mut b = TableBuilder::new(
            f,
            TableBuildOptions {
                block_size,
                bloom_bits_per_key: if cached { 10.0 } else { 0.0 },
                fixed_width_entries,
                cache_local_filter: !fixed_width_entries,
                compression: Compression::None,
            },
        );
        for (k, v) in entries {
            b.add(k, v).unwrap();
        }
        b.finish().unwrap();
        path
    };
    let (fence_path, learned_path) = (write("f.sst", false), write("l.sst", fixed));
    let open = |path: &std::path::Path, no: u64, policy| {
        let f = env
            .open_read(path, FileKind::Table, 0, Some(0), false)
            .unwrap();
        let cache: Option<Arc<dyn BlockCache>> =
            cached.then(|| Arc::new(LruBlockCache::new(1 << 20, 2)) as Arc<dyn BlockCache>);
        Arc::new(Table::open_with(f, FileNo::new(no), cache, policy).unwrap())
    };
    let fence = open(&fence_path, 1, IndexPolicy::Fence);
    let learned = open(&learned_path, 2, IndexPolicy::learn_all(delta));
    assert!(fence.learned_index().is_none());
    if fixed && !entries.is_empty() {
        let index = learned.index().unwrap();
        assert!((0..index.num_blocks()).all(|i| index.block(i).fixed.is_some()));
    }
    Pair {
        _dir: dir,
        fence,
        learned,
    }
}

fn get(t: &Table, lookup: &[u8]) -> Option<Entry> {
    t.get(lookup, &mut ReadTrace::default()).unwrap()
}

/// Lookup keys: every version of every key at several read sequence numbers, then absent
/// keys around and between the present ones.
fn lookups(keys: &[Vec<u8>], entries: &[Entry], rng: &mut SmallRng) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (k, _) in entries {
        let p = crate::types::parse_internal_key(k).unwrap();
        out.push(make_lookup_key(p.user_key, p.seq));
        out.push(make_lookup_key(p.user_key, p.seq.saturating_sub(1)));
    }
    for k in keys {
        out.push(make_lookup_key(k, MAX_SEQ));
        let mut next = k.clone();
        next.push(0); // just after k, absent unless present as a key
        out.push(make_lookup_key(&next, MAX_SEQ));
        let mut up = k.clone();
        *up.last_mut().unwrap() = up.last().unwrap().wrapping_add(1);
        out.push(make_lookup_key(&up, MAX_SEQ));
        if k.len() > 1 {
            out.push(make_lookup_key(&k[..k.len() - 1], MAX_SEQ));
        }
    }
    for _ in 0..500 {
        let len = rng.random_range(1..20);
        let k: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        out.push(make_lookup_key(&k, rng.random_range(0..MAX_SEQ)));
        // Key numbers near the trained ones, absent bytes after.
        let base = &keys[rng.random_range(0..keys.len())];
        let x = key_to_u64(base)
            .wrapping_add(rng.random_range(0..3))
            .wrapping_sub(1);
        let mut k = x.to_be_bytes().to_vec();
        k.push(rng.random());
        out.push(make_lookup_key(&k, MAX_SEQ));
    }
    // Key numbers anywhere in the trained domain: gaps between segments, where a segment's
    // line extrapolated past its last key overshoots.
    let (xmin, xmax) = (key_to_u64(&keys[0]), key_to_u64(keys.last().unwrap()));
    for _ in 0..500 {
        let mut k = rng.random_range(xmin..=xmax).to_be_bytes().to_vec();
        if rng.random_bool(0.5) {
            k.push(rng.random());
        }
        out.push(make_lookup_key(&k, MAX_SEQ));
    }
    out.push(make_lookup_key(b"", MAX_SEQ));
    out.push(make_lookup_key(&[0xff; 24], MAX_SEQ));
    out
}

#[test]
fn learned_gets_equal_fence_gets() {
    let mut rng = SmallRng::seed_from_u64(42);
    for &name in DATASETS {
        let keys = dataset(name, &mut rng, 1200);
        for (max_versions, block_size, delta, cached, fixed) in [
            (1, 4096, 8, true, false),
            (4, 512, 8, false, false),
            (30, 256, 1, false, false),
            (3, 1024, 2, true, false),
            (2, 4096, 64, false, false),
            (1, 4096, 8, false, true),
            (4, 512, 8, true, true),
            (30, 256, 1, false, true),
            (2, 4096, 64, false, true),
        ] {
            let es = entries(&keys, &mut rng, max_versions);
            let pair = build_pair_with(&es, block_size, delta, cached, fixed);
            let li = pair.learned.learned_index().unwrap();
            assert_eq!(li.num_entries(), es.len() as u64);
            assert!(li.num_segments() >= 1);
            let probes = lookups(&keys, &es, &mut rng);
            for lk in &probes {
                assert_eq!(
                    get(&pair.learned, lk),
                    get(&pair.fence, lk),
                    "{name} (versions {max_versions}, block {block_size}, delta {delta}, \
                     fixed {fixed}): lookup {lk:?}"
                );
            }
            assert!(
                li.lookups() + li.fallbacks() > 0,
                "{name}: model never consulted"
            );
            if name == "sequential" && max_versions == 1 {
                assert_eq!(li.num_segments(), 1, "{name}");
            }
            if name != "colliding" {
                assert!(li.lookups() > 0, "{name}: model never answered");
            }
        }
    }
}

#[test]
fn smooth_data_never_falls_back_for_present_keys() {
    let mut rng = SmallRng::seed_from_u64(1);
    for name in ["sequential", "stride", "padded"] {
        let keys = dataset(name, &mut rng, 5000);
        let es = entries(&keys, &mut rng, 1);
        let pair = build_pair(&es, 1024, 8, false);
        let mut trace = ReadTrace::default();
        for k in &keys {
            let r = pair
                .learned
                .get(&make_lookup_key(k, MAX_SEQ), &mut trace)
                .unwrap();
            assert!(r.is_some());
        }
        let li = pair.learned.learned_index().unwrap();
        assert_eq!(li.fallbacks(), 0, "{name}");
        assert_eq!(li.lookups(), keys.len() as u64, "{name}");
        assert_eq!(trace.learned_lookups as usize, keys.len());
        assert_eq!(trace.learned_fallbacks, 0);
        // The block of the predicted position is read first; a neighbour only when the
        // answer may lie in it (the key opens its block and the window reaches back).
        let reads = (trace.data_hits + trace.data_misses) as f64;
        assert!(
            reads <= keys.len() as f64,
            "{name}: {reads} block reads for {} lookups",
            keys.len()
        );
    }
}

/// Bourbon's read of the predicted entries: on a fixed-width table with no cache, a
/// learned get reads only the chunks around its window (one small read each, none of a
/// whole block), and answers as the fence pointers do; with the block cached it reads
/// nothing.
#[test]
fn fixed_width_gets_read_only_the_window() {
    let mut rng = SmallRng::seed_from_u64(9);
    let keys = dataset("sequential", &mut rng, 5000);
    let es = entries(&keys, &mut rng, 1);
    let pair = build_pair_with(&es, 4096, 8, false, true);
    let block_bytes = pair.learned.index().unwrap().block(0).handle.size;
    let mut trace = ReadTrace::default();
    for k in &keys {
        let lk = make_lookup_key(k, MAX_SEQ);
        let got = pair.learned.get(&lk, &mut trace).unwrap();
        assert_eq!(got, get(&pair.fence, &lk));
        assert!(got.is_some());
    }
    let n = keys.len() as u32;
    assert_eq!(trace.learned_lookups, n);
    assert_eq!(
        (trace.data_misses, trace.data_hits),
        (0, 0),
        "no whole block read"
    );
    assert_eq!(trace.chunk_reads, trace.storage_reads);
    // A window of 2 * 8 + 1 entries (and the one before it) spans at most 6 chunks of 4.
    let entry = pair
        .learned
        .index()
        .unwrap()
        .block(0)
        .fixed
        .unwrap()
        .entry_len() as u64;
    let most = 6 * (4 * entry + 4);
    assert!(
        trace.storage_bytes <= u64::from(trace.storage_reads) * most,
        "{} bytes in {} reads",
        trace.storage_bytes,
        trace.storage_reads
    );
    assert!(
        most < block_bytes / 2,
        "{most} of a {block_bytes}-byte block"
    );
    // Usually one read per get; two when the window crosses into a neighbouring block.
    assert!(trace.storage_reads >= n && trace.storage_reads < n + n / 4);

    // With a cache, a cached block is used as it is; a window read is not cached.
    let dir = tempfile::tempdir().unwrap();
    let env = StorageEnv::new(dir.path(), &[], 0.0).unwrap();
    let path = dir.path().join("c.sst");
    let f = env.create(&path, FileKind::Table, 0, Some(0)).unwrap();
    let mut b = TableBuilder::new(
        f,
        TableBuildOptions {
            fixed_width_entries: true,
            ..Default::default()
        },
    );
    for (k, v) in &es {
        b.add(k, v).unwrap();
    }
    b.finish().unwrap();
    let cache: Arc<dyn BlockCache> = Arc::new(LruBlockCache::new(4 << 20, 2));
    let f = env
        .open_read(&path, FileKind::Table, 0, Some(0), false)
        .unwrap();
    let t = Table::open_with(
        f,
        FileNo::new(3),
        Some(cache.clone()),
        IndexPolicy::learn_all(8),
    )
    .unwrap();
    let lk = make_lookup_key(&keys[100], MAX_SEQ);
    let mut tr = ReadTrace::default();
    assert!(t.get(&lk, &mut tr).unwrap().is_some());
    assert_eq!((tr.chunk_reads, tr.data_hits), (1, 0));
    assert_eq!(cache.usage(), 0, "a window read is not cached");
    let bi = t.index().unwrap().block_for_ordinal(100).unwrap();
    t.read_block(bi, &mut ReadTrace::default()).unwrap();
    let mut tr = ReadTrace::default();
    assert!(t.get(&lk, &mut tr).unwrap().is_some());
    assert_eq!((tr.chunk_reads, tr.storage_reads, tr.data_hits), (0, 0, 1));
}

#[test]
fn colliding_keys_fall_back_and_stay_correct() {
    let mut rng = SmallRng::seed_from_u64(2);
    let keys = dataset("colliding", &mut rng, 2000);
    let es = entries(&keys, &mut rng, 1);
    let pair = build_pair(&es, 512, 8, false);
    let li = pair.learned.learned_index().unwrap();
    assert_eq!(li.space().prefix(), b"");
    assert!(
        li.num_segments() <= 3,
        "three key numbers: {}",
        li.num_segments()
    );
    for k in &keys {
        let lk = make_lookup_key(k, MAX_SEQ);
        assert_eq!(get(&pair.learned, &lk), get(&pair.fence, &lk));
    }
    assert!(li.fallbacks() > 0);
}

/// Keys that share their first 8 bytes (`user_id:000...`) learn over the bytes after the
/// table's common prefix: every present key is answered by the model.
#[test]
fn shared_prefix_keys_learn_after_the_prefix() {
    let mut rng = SmallRng::seed_from_u64(6);
    let keys: Vec<Vec<u8>> = (0..4000u64)
        .map(|i| format!("user_id:{:012}", 5_000_000 + i * 13).into_bytes())
        .collect();
    let es = entries(&keys, &mut rng, 1);
    let pair = build_pair(&es, 1024, 8, false);
    let li = pair.learned.learned_index().unwrap();
    assert_eq!(li.space().prefix(), b"user_id:0000050");
    // Decimal digits are linear between carries: a few dozen segments, not thousands.
    assert!(
        li.num_segments() < keys.len() / 40,
        "{} segments",
        li.num_segments()
    );
    for k in &keys {
        let lk = make_lookup_key(k, MAX_SEQ);
        assert_eq!(get(&pair.learned, &lk), get(&pair.fence, &lk));
    }
    assert_eq!(li.fallbacks(), 0);
    assert_eq!(li.lookups(), keys.len() as u64);
}

/// Seeks go through the model (a learned table's iterator counts learned lookups) and
/// land where the fence pointers' seeks land.
#[test]
fn learned_seeks_equal_fence_seeks() {
    let mut rng = SmallRng::seed_from_u64(3);
    for &name in DATASETS {
        let keys = dataset(name, &mut rng, 1000);
        let es = entries(&keys, &mut rng, 3);
        let pair = build_pair_with(&es, 512, 4, true, rng.random_bool(0.5));
        let mut a = pair.fence.iter();
        let mut b = pair.learned.iter();
        a.seek_to_first();
        b.seek_to_first();
        let mut all = Vec::new();
        while b.valid() {
            all.push((b.key().to_vec(), b.value().to_vec()));
            b.next();
        }
        assert_eq!(all, es, "{name}");
        for lk in lookups(&keys, &es, &mut rng).iter().take(3000) {
            a.seek(lk);
            b.seek(lk);
            assert_eq!(a.valid(), b.valid());
            if a.valid() {
                assert_eq!(a.key(), b.key());
                assert!(cmp_internal(b.key(), lk) != Ordering::Less, "{name}");
            }
            a.seek_for_prev(lk);
            b.seek_for_prev(lk);
            assert_eq!(a.valid(), b.valid());
            if a.valid() {
                assert_eq!(a.key(), b.key());
                assert_eq!(a.value(), b.value());
            }
            // And walking on from a learned seek continues in step.
            for _ in 0..3 {
                a.next();
                b.next();
                assert_eq!(a.valid(), b.valid());
                if a.valid() {
                    assert_eq!(a.key(), b.key());
                }
            }
        }
        assert_eq!(a.trace().learned_lookups, 0, "{name}");
        if name != "colliding" {
            assert!(
                b.trace().learned_lookups > 0,
                "{name}: seeks ignored the model"
            );
        }
    }
}

/// A model that predicts badly (shifted, tilted, truncated) must not change any answer:
/// the window checks send the lookups to the fence pointers.
#[test]
fn wrong_models_still_answer_right() {
    let mut rng = SmallRng::seed_from_u64(4);
    for &name in DATASETS {
        let keys = dataset(name, &mut rng, 800);
        let es = entries(&keys, &mut rng, 3);
        let fixed = rng.random_bool(0.5);
        let mut pair = build_pair_with(&es, 512, 4, false, fixed);
        let good = pair.learned.learned_index().unwrap().plr().clone();
        let probes = lookups(&keys, &es, &mut rng);
        for variant in 0..4 {
            let segs: Vec<crate::learned::Segment> = good
                .segments()
                .iter()
                .map(|s| {
                    let mut s = *s;
                    match variant {
                        0 => s.intercept += rng.random_range(-60.0..60.0),
                        1 => s.slope *= rng.random_range(0.0..3.0),
                        2 => s.intercept = rng.random_range(0.0..es.len() as f64),
                        _ => {
                            s.intercept += 30.0;
                            s.slope = 0.0;
                        }
                    }
                    s
                })
                .collect();
            let plr = crate::learned::Plr::from_parts(segs, good.delta(), good.last_x());
            let space = pair.learned.learned_index().unwrap().space().clone();
            let table = Arc::get_mut(&mut pair.learned).unwrap();
            table.set_learned_index(Some(LearnedIndex::from_plr(plr, space, es.len() as u64)));
            for lk in &probes {
                assert_eq!(
                    get(&pair.learned, lk),
                    get(&pair.fence, lk),
                    "{name}, wrong model {variant}: lookup {lk:?}"
                );
            }
            let li = pair.learned.learned_index().unwrap();
            assert!(li.fallbacks() > 0, "{name}, wrong model {variant}");
        }
    }
}

#[test]
fn empty_and_single_entry_tables() {
    let pair = build_pair(&[], 4096, 8, false);
    assert_eq!(pair.learned.learned_index().unwrap().num_segments(), 0);
    assert_eq!(get(&pair.learned, &make_lookup_key(b"a", MAX_SEQ)), None);
    let es = vec![(make_internal_key(b"k", 5, ValueKind::Value), b"v".to_vec())];
    let pair = build_pair(&es, 4096, 1, false);
    for k in [&b"a"[..], b"k", b"kk", b"z", b""] {
        for seq in [MAX_SEQ, 5, 4] {
            let lk = make_lookup_key(k, seq);
            assert_eq!(get(&pair.learned, &lk), get(&pair.fence, &lk));
        }
    }
}
