//! Tests of the adaptive read cache (`read_cache/`): AC-Key's KV, KP and block caches,
//! their ghost caches and boundaries, and the repointing after flushes and compactions.

use super::repoint::locate;
use super::*;
use crate::ids::CfId;
use crate::table::{block_for_tests, BlockRange};

const CF: CfId = CfId::DEFAULT;

/// AC-Key with windows of `window` lookups, ghosts free to go off after one, and the
/// targets starting at a third of the budget each (the tests below place entries
/// against those targets).
fn ac_key(window: u64) -> ReadCachePolicy {
    ReadCachePolicy::AcKey(AcKeyParams {
        ghost_window: window,
        ghost_min_windows: 1,
        initial_point_share: 2.0 / 3.0,
        ..AcKeyParams::default()
    })
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// Where block `i` of a test table is.
fn bh(i: u64) -> BlockHandle {
    BlockHandle::new(i * 4096, 4000)
}

fn output(file_no: u64, blocks: &[(u32, u32)]) -> OutputFile {
    let blocks: Vec<BlockRange> = blocks
        .iter()
        .enumerate()
        .map(|(i, &(a, b))| BlockRange {
            handle: bh(i as u64),
            first_key: key(a),
            last_key: key(b),
        })
        .collect();
    OutputFile {
        file_no: FileNo::new(file_no),
        level: 0,
        size: 1 << 20,
        smallest: blocks[0].first_key.clone(),
        largest: blocks[blocks.len() - 1].last_key.clone(),
        blocks,
    }
}

fn bkey(i: u64) -> BlockKey {
    BlockKey {
        file_no: FileNo::new(1),
        offset: i * 4096,
    }
}

#[test]
fn first_read_is_kp_then_a_hit_promotes_to_kv() {
    let c = ReadCache::new(ac_key(10_000), 1 << 20, 4096);
    let g = c.generation();
    let big = vec![7u8; 100];
    assert_eq!(
        c.lookup_point(CF, &key(1), 50),
        PointLookup::Miss { ghost_hit: false }
    );
    c.admit(
        g,
        CF,
        &key(1),
        &big,
        10,
        3,
        FileNo::new(5),
        bh(2),
        None,
        false,
    );
    let PointLookup::Pointer(p) = c.lookup_point(CF, &key(1), 50) else {
        panic!("a warm key is a KP entry");
    };
    assert_eq!(
        (p.file_no, p.block, p.seq, p.m),
        (FileNo::new(5), bh(2), 10, 3)
    );
    assert_eq!(c.read_cache_stats().kp_hits, 0, "counted once followed");
    c.pointer_followed();
    c.promote(g, CF, &key(1), &big, p);
    assert_eq!(c.lookup_point(CF, &key(1), 50), PointLookup::Value(big));
    let s = c.read_cache_stats();
    assert_eq!(
        (s.kv_entries, s.kp_entries, s.kp_hits, s.kv_hits),
        (1, 0, 1, 1)
    );
    assert_eq!(s.kv_bytes, 8 + 100);
    // A value no longer than a pointer stays in the KP entry and is served from it.
    c.admit(
        g,
        CF,
        &key(2),
        b"tiny",
        11,
        1,
        FileNo::new(5),
        bh(0),
        None,
        false,
    );
    assert_eq!(
        c.lookup_point(CF, &key(2), 50),
        PointLookup::Value(b"tiny".to_vec())
    );
    assert_eq!(c.read_cache_stats().kp_bytes, (8 + POINTER_BYTES) as u64);
    // Column families do not see each other's keys.
    assert_eq!(
        c.lookup_point(CfId::new(1), &key(2), 50),
        PointLookup::Miss { ghost_hit: false }
    );
}

#[test]
fn reads_older_than_an_entry_bypass_it() {
    let c = ReadCache::new(ReadCachePolicy::PureKv, 1 << 20, 4096);
    c.admit(
        c.generation(),
        CF,
        &key(1),
        b"v",
        10,
        1,
        FileNo::new(5),
        bh(0),
        None,
        false,
    );
    assert_eq!(
        c.lookup_point(CF, &key(1), 9),
        PointLookup::Miss { ghost_hit: false }
    );
    assert_eq!(
        c.lookup_point(CF, &key(1), 10),
        PointLookup::Value(b"v".to_vec())
    );
}

#[test]
fn a_flush_after_the_read_began_stops_its_admission() {
    let c = ReadCache::new(ReadCachePolicy::PureKv, 1 << 20, 4096);
    let g = c.generation();
    let mem = Arc::new(Memtable::new(1));
    c.on_flush(CF, &mem, &[]);
    c.admit(
        g,
        CF,
        &key(1),
        b"old",
        10,
        1,
        FileNo::new(5),
        bh(0),
        None,
        false,
    );
    c.promote(
        g,
        CF,
        &key(1),
        b"old",
        KpPointer {
            file_no: FileNo::new(5),
            block: bh(0),
            seq: 10,
            m: 1,
            value: None,
        },
    );
    assert_eq!(c.read_cache_stats().kv_entries, 0);
}

#[test]
fn flush_rewrites_values_repoints_pointers_and_drops_deleted_keys() {
    for many_cached in [false, true] {
        let c = ReadCache::new(
            ReadCachePolicy::Fixed {
                kv: 5,
                kp: 5,
                block: 0,
            },
            1 << 20,
            4096,
        );
        let g = c.generation();
        let big = vec![1u8; 50];
        c.admit(
            g,
            CF,
            &key(1),
            &big,
            10,
            2,
            FileNo::new(5),
            bh(0),
            None,
            true,
        ); // KV
        c.admit(
            g,
            CF,
            &key(2),
            &big,
            11,
            2,
            FileNo::new(5),
            bh(0),
            None,
            false,
        ); // KP
        c.admit(
            g,
            CF,
            &key(3),
            &big,
            12,
            2,
            FileNo::new(5),
            bh(0),
            None,
            true,
        ); // KV, deleted later
        c.admit(
            g,
            CF,
            &key(4),
            &big,
            12,
            2,
            FileNo::new(5),
            bh(0),
            None,
            false,
        ); // KP, untouched
        if many_cached {
            // More cached keys than flushed ones: the flush walks the memtable.
            for i in 100..120 {
                c.admit(
                    g,
                    CF,
                    &key(i),
                    &big,
                    13,
                    2,
                    FileNo::new(5),
                    bh(0),
                    None,
                    true,
                );
            }
        }
        let mem = Arc::new(Memtable::new(1));
        mem.add(20, ValueKind::Value, &key(1), b"new1");
        mem.add(21, ValueKind::Value, &key(2), &[2u8; 60]);
        mem.add(22, ValueKind::Deletion, &key(3), b"");
        mem.add(23, ValueKind::Value, &key(9), b"not cached");
        mem.add(24, ValueKind::Value, &key(1), b"newer1");
        c.on_flush(CF, &mem, &[output(77, &[(0, 1), (2, 2), (3, 9)])]);
        let at = MAX_SEQ;
        assert_eq!(
            c.lookup_point(CF, &key(1), at),
            PointLookup::Value(b"newer1".to_vec())
        );
        assert_eq!(
            c.lookup_point(CF, &key(1), 23),
            PointLookup::Miss { ghost_hit: false },
            "a read before the flushed version must not see it"
        );
        assert_eq!(
            c.lookup_point(CF, &key(2), at),
            PointLookup::Pointer(KpPointer {
                file_no: FileNo::new(77),
                block: bh(1),
                seq: 21,
                m: 1,
                value: None,
            })
        );
        assert_eq!(
            c.lookup_point(CF, &key(3), at),
            PointLookup::Miss { ghost_hit: false }
        );
        let PointLookup::Pointer(p) = c.lookup_point(CF, &key(4), at) else {
            panic!("key 4 was not flushed: still cached");
        };
        assert_eq!((p.file_no, p.seq), (FileNo::new(5), 12));
    }
}

#[test]
fn compaction_repoints_pointers_into_its_outputs() {
    let c = ReadCache::new(ReadCachePolicy::PureKp, 1 << 20, 4096);
    let g = c.generation();
    let big = vec![1u8; 50];
    c.admit(
        g,
        CF,
        &key(5),
        &big,
        10,
        2,
        FileNo::new(7),
        bh(0),
        None,
        false,
    );
    c.admit(
        g,
        CF,
        &key(50),
        &big,
        10,
        2,
        FileNo::new(7),
        bh(3),
        None,
        false,
    );
    c.admit(
        g,
        CF,
        &key(60),
        &big,
        10,
        2,
        FileNo::new(8),
        bh(3),
        None,
        false,
    ); // not an input
    c.admit(
        g,
        CF,
        &key(99),
        &big,
        10,
        2,
        FileNo::new(7),
        bh(3),
        None,
        false,
    ); // outside every output: dropped
    c.on_compaction(
        CF,
        &[FileNo::new(7), FileNo::new(6)],
        &[output(9, &[(0, 4), (5, 40)]), output(10, &[(41, 70)])],
    );
    let ptr = |k| match c.lookup_point(CF, &key(k), MAX_SEQ) {
        PointLookup::Pointer(p) => Some((p.file_no.get(), p.block)),
        _ => None,
    };
    assert_eq!(ptr(5), Some((9, bh(1))));
    assert_eq!(ptr(50), Some((10, bh(0))));
    assert_eq!(ptr(60), Some((8, bh(3))));
    assert_eq!(ptr(99), None);
}

/// Fills the KV cache past its budget so that entries go to the ghosts.
fn overflow_kv(c: &ReadCache, n: u32) {
    let g = c.generation();
    for i in 0..n {
        c.admit(
            g,
            CF,
            &key(i),
            &[0u8; 100],
            1,
            3,
            FileNo::new(1),
            bh(0),
            None,
            true,
        );
    }
}

#[test]
fn ghost_hits_move_the_boundaries_by_k_times_e() {
    let c = ReadCache::new(ac_key(1 << 40), 4096, 1024);
    overflow_kv(&c, 100);
    let s = c.read_cache_stats();
    assert!(s.kv_entries < 100 && s.kv_entries > 0, "{s:?}");
    assert!(s.ghost_bytes > 0);
    // The newest evicted key is in the point ghost: the point target grows by k*E
    // (capped by the budget), shared between KV and KP by their targets' ratio.
    let evicted = (0..100)
        .rev()
        .find(|&i| !matches!(c.lookup_point(CF, &key(i), MAX_SEQ), PointLookup::Value(_)))
        .expect("a key was evicted");
    let _ = evicted;
    assert_eq!(c.read_cache_stats().ghost_hits, 1);
    let c = ReadCache::new(ac_key(1 << 40), 4096, 1024);
    overflow_kv(&c, 100);
    let (p0, kv0) = c.raw_targets();
    let hit = (0..100)
        .rev()
        .find(|&i| c.lookup_point(CF, &key(i), MAX_SEQ) == PointLookup::Miss { ghost_hit: true });
    assert!(hit.is_some());
    let (p1, kv1) = c.raw_targets();
    let e = efficiency(EntryKind::Kv, 3, 108);
    let want_p = (p0 + 100_000.0 * e).min(4096.0);
    assert!((p1 - want_p).abs() < 1e-6, "{p0} -> {p1}");
    assert!((kv1 - (kv0 + (want_p - p0) * kv0 / p0)).abs() < 1e-6);
    // Blocks that did not fit the block target become ghosts; a hit on one shrinks the
    // point target by k * (1 / block size), KV and KP alike.
    for i in 0..20 {
        c.insert(bkey(i), CacheValue::Data(block_for_tests(4)), 1000);
    }
    let before = c.read_cache_stats().ghost_hits;
    let mut moved = None;
    for i in (0..20).rev() {
        let t = c.raw_targets();
        c.lookup(&bkey(i));
        if c.read_cache_stats().ghost_hits > before {
            moved = Some((t, c.raw_targets()));
            break;
        }
    }
    let ((p2, kv2), (p3, kv3)) = moved.expect("a block ghost hit");
    assert!((p2 - p3 - 100_000.0 / 1000.0).abs() < 1e-6, "{p2} -> {p3}");
    assert!((kv3 - kv2 * p3 / p2).abs() < 1e-6);
}

#[test]
fn kp_ghost_hit_moves_the_boundary_toward_kp() {
    let k = 1000.0;
    let c = ReadCache::new(
        ReadCachePolicy::AcKey(AcKeyParams {
            learning_rate: k,
            ghost_window: 1 << 40,
            initial_point_share: 2.0 / 3.0,
            ..AcKeyParams::default()
        }),
        4096,
        1024,
    );
    // A block takes the block cache's share, so the point cache is held to its target.
    c.insert(bkey(1), CacheValue::Data(block_for_tests(4)), 1300);
    let g = c.generation();
    for i in 0..10 {
        c.admit(
            g,
            CF,
            &key(i),
            &[0u8; 100],
            1,
            3,
            FileNo::new(1),
            bh(0),
            None,
            true,
        );
    }
    for i in 100..300 {
        c.admit(
            g,
            CF,
            &key(i),
            &[0u8; 100],
            1,
            3,
            FileNo::new(1),
            bh(0),
            None,
            false,
        );
    }
    assert_eq!(c.read_cache_stats().kv_entries, 10, "KV within its target");

    let mut moved = None;
    for i in (100..300).rev() {
        let t = c.raw_targets();
        if c.lookup_point(CF, &key(i), MAX_SEQ) == (PointLookup::Miss { ghost_hit: true }) {
            moved = Some((t, c.raw_targets()));
            break;
        }
    }
    let ((p0, kv0), (p1, kv1)) = moved.expect("a KP ghost hit");
    // KP ghost first (KV target - k*E), then the point ghost (point target + k*E,
    // shared by the new ratio).
    let ke = k * efficiency(EntryKind::Kp, 3, 8 + POINTER_BYTES);
    let kv_low = kv0 - ke;
    assert!((p1 - (p0 + ke)).abs() < 1e-6);
    assert!(
        (kv1 - (kv_low + ke * kv_low / p0)).abs() < 1e-6,
        "{kv0} -> {kv1}"
    );
    assert!(kv1 < kv0);
}

/// Looks up `hits` cached keys and `misses` absent ones, interleaved.
fn window_of(c: &ReadCache, cached: u32, hits: u32, misses: u32) {
    for i in 0..hits.max(misses) {
        if i < hits {
            c.lookup_point(CF, &key(cached), MAX_SEQ);
        }
        if i < misses {
            c.lookup_point(CF, &key(50_000 + i), MAX_SEQ);
        }
    }
}

#[test]
fn theta_is_relative_and_ghosts_stay_on_for_the_minimum_windows() {
    let params = |min_windows| {
        ReadCachePolicy::AcKey(AcKeyParams {
            ghost_window: 100,
            ghost_min_windows: min_windows,
            initial_point_share: 2.0 / 3.0,
            ..AcKeyParams::default()
        })
    };
    let c = ReadCache::new(params(1), 4096, 1024);
    overflow_kv(&c, 100);
    let cached = (0..100)
        .find(|&i| matches!(c.lookup_point(CF, &key(i), MAX_SEQ), PointLookup::Value(_)))
        .expect("some key cached");
    // The first window (the search above was `cached + 1` lookups, one hit): 2% hits.
    let used = cached + 1;
    window_of(&c, cached, 1, 100 - used - 1);
    assert!(c.ghosts_on());
    // Then 3%: an absolute theta of 5% would call that settled; it is a 33% move of the
    // ratio itself, so the ghosts stay.
    window_of(&c, cached, 3, 97);
    assert!(c.ghosts_on(), "a 2% -> 3% hit ratio is a move");
    // 3% again: settled, off.
    window_of(&c, cached, 3, 97);
    assert!(!c.ghosts_on());

    // With a minimum of 4 windows, settled ratios (no hits at all) keep the ghosts
    // for 4 comparisons after the first window.
    let c = ReadCache::new(params(4), 4096, 1024);
    overflow_kv(&c, 100);
    for w in 0..5 {
        assert!(c.ghosts_on(), "window {w}");
        window_of(&c, 0, 0, 100);
    }
    assert!(!c.ghosts_on(), "off once the minimum is served");
}

#[test]
fn adaptive_targets_start_with_the_whole_budget_in_blocks() {
    let c = ReadCache::new(ReadCachePolicy::AcKey(AcKeyParams::default()), 8192, 1024);
    assert_eq!(c.raw_targets(), (0.0, 0.0));
    // Free space is still used by whatever comes, and refused entries become ghosts
    // whose hits grow the point target.
    for i in 0..8 {
        c.insert(bkey(i), CacheValue::Data(block_for_tests(4)), 1000);
    }
    overflow_kv(&c, 50);
    let before = c.raw_targets().0;
    let grew = (0..50).rev().any(|i| {
        c.lookup_point(CF, &key(i), MAX_SEQ);
        c.raw_targets().0 > before
    });
    assert!(grew, "a point ghost hit grows the point target from 0");
}

#[test]
fn ghosts_turn_off_when_hit_ratios_settle_and_on_when_they_move() {
    let c = ReadCache::new(ac_key(20), 4096, 1024);
    overflow_kv(&c, 100);
    assert!(c.read_cache_stats().ghost_bytes > 0);
    // Two windows of misses: the ratios do not move, ghosts go and give their bytes back.
    for i in 0..40 {
        c.lookup_point(CF, &key(10_000 + i), MAX_SEQ);
    }
    assert!(!c.ghosts_on());
    assert_eq!(c.read_cache_stats().ghost_bytes, 0);
    overflow_kv(&c, 100);
    assert_eq!(c.read_cache_stats().ghost_bytes, 0, "no ghosts while off");
    // A window of hits: the KV hit ratio jumps, ghosts come back.
    let cached = (0..100)
        .find(|&i| matches!(c.lookup_point(CF, &key(i), MAX_SEQ), PointLookup::Value(_)))
        .expect("some key cached");
    for _ in 0..40 {
        c.lookup_point(CF, &key(cached), MAX_SEQ);
    }
    assert!(c.ghosts_on());
}

#[test]
fn point_cache_takes_block_space_only_a_whole_block_at_a_time() {
    let c = ReadCache::new(ac_key(1 << 40), 10_000, 1000);
    for i in 0..10 {
        c.insert(bkey(i), CacheValue::Data(block_for_tests(4)), 1000);
    }
    assert_eq!(c.read_cache_stats().block_bytes, 10_000);
    // Target less than a block above the point cache's size (0): no block is taken,
    // and with no point entry to evict the entry is not cached.
    c.set_targets(900.0, 450.0);
    let g = c.generation();
    c.admit(
        g,
        CF,
        &key(1),
        &[0u8; 100],
        1,
        3,
        FileNo::new(1),
        bh(0),
        None,
        true,
    );
    let s = c.read_cache_stats();
    assert_eq!((s.block_bytes, s.kv_entries), (10_000, 0));
    // A whole block of room in the target: one block goes, the point cache grows.
    c.set_targets(1200.0, 600.0);
    let g = c.generation();
    c.admit(
        g,
        CF,
        &key(1),
        &[0u8; 100],
        1,
        3,
        FileNo::new(1),
        bh(0),
        None,
        true,
    );
    let s = c.read_cache_stats();
    assert_eq!((s.block_bytes, s.kv_entries), (9_000, 1));
    // A block beyond the block target evicts a block, not point entries.
    c.insert(bkey(50), CacheValue::Data(block_for_tests(4)), 1000);
    let s = c.read_cache_stats();
    assert_eq!((s.block_bytes, s.kv_entries), (9_000, 1));
}

#[test]
fn fixed_split_caps_each_component() {
    let c = ReadCache::new(
        ReadCachePolicy::Fixed {
            kv: 5,
            kp: 5,
            block: 0,
        },
        10_000,
        1000,
    );
    c.insert(bkey(1), CacheValue::Data(block_for_tests(4)), 1000);
    assert!(c.lookup(&bkey(1)).is_none(), "no block cache");
    overflow_kv(&c, 200);
    let s = c.read_cache_stats();
    assert!(s.kv_bytes <= 5_000 && s.kv_bytes > 4_000, "{s:?}");
    assert_eq!(s.ghost_bytes, 0);
    let b = ReadCache::new(ReadCachePolicy::Block, 10_000, 1000);
    for i in 0..20 {
        b.insert(bkey(i), CacheValue::Data(block_for_tests(4)), 1000);
    }
    let s = b.read_cache_stats();
    assert_eq!((s.block_bytes, s.kv_bytes), (10_000, 0));
    b.admit(
        b.generation(),
        CF,
        &key(1),
        b"v",
        1,
        1,
        FileNo::new(1),
        bh(0),
        None,
        true,
    );
    assert_eq!(
        b.read_cache_stats().kv_entries + b.read_cache_stats().kp_entries,
        0
    );
}

#[test]
fn locate_finds_the_block_holding_a_key() {
    let outs = [
        output(3, &[(0, 9), (10, 19)]),
        output(4, &[(30, 39), (40, 49)]),
    ];
    assert_eq!(locate(&outs, &key(0)), Some((FileNo::new(3), bh(0))));
    assert_eq!(locate(&outs, &key(10)), Some((FileNo::new(3), bh(1))));
    assert_eq!(locate(&outs, &key(45)), Some((FileNo::new(4), bh(1))));
    assert_eq!(locate(&outs, &key(25)), None);
    assert_eq!(locate(&outs, &key(50)), None);
}
