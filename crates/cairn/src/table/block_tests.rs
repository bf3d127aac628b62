//! Tests of the data-block format (`block.rs`): its layouts, lookups and corruption checks.

use super::*;
use crate::types::{make_internal_key, make_lookup_key, ValueKind, MAX_SEQ};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

type Entry = (Vec<u8>, Vec<u8>);

fn ikey(i: u32) -> Vec<u8> {
    make_internal_key(format!("key{i:06}").as_bytes(), 1, ValueKind::Value)
}

fn build(entries: &[Entry], v1: bool) -> Vec<u8> {
    let mut b = if v1 {
        BlockBuilder::v1()
    } else {
        BlockBuilder::default()
    };
    for (k, v) in entries {
        b.add(k, v);
    }
    let est = b.estimated_size();
    let data = b.finish();
    assert_eq!(data.len(), est, "estimated size is exact");
    assert!(b.is_empty());
    data
}

/// Whether the count word flags layout 2.
fn prefixed(data: &[u8]) -> bool {
    data[data.len() - 1] & 0x80 != 0
}

/// Everything a decoded block answers agrees with `entries`.
fn check_entries(blk: &Block, entries: &[Entry]) {
    assert_eq!(blk.entry_count(), entries.len());
    let mut buf = Vec::new();
    for (i, (k, v)) in entries.iter().enumerate() {
        let (key, value) = blk.entry(i);
        assert_eq!(key.to_vec(), *k);
        assert!(key == k[..]);
        assert_eq!(value, &v[..]);
        assert_eq!(blk.value(i), &v[..]);
        blk.key_into(i, &mut buf);
        assert_eq!(buf, *k);
        let pk = crate::types::parse_internal_key(k).unwrap();
        assert_eq!(key.user_key_vec(), pk.user_key);
        assert!(key.user_key_eq(pk.user_key));
        assert_eq!((key.seq(), key.value_kind()), (pk.seq, pk.value_kind()));
        assert!(key.parts().1.len() >= TRAILER_LEN);
    }
}

/// Random internal keys in order: user keys over a small alphabet after a shared head
/// of random length (so blocks share prefixes of every length), several versions of
/// some, values of random length.
fn random_entries(rng: &mut SmallRng, n: usize, max_value: usize) -> Vec<Entry> {
    let head: Vec<u8> = (0..rng.random_range(0..12)).map(|_| rng.random()).collect();
    let mut out: Vec<Entry> = Vec::new();
    for _ in 0..n {
        let mut uk = head[..rng.random_range(0..=head.len())].to_vec();
        let tail = rng.random_range(0..6);
        uk.extend((0..tail).map(|_| rng.random_range(b'a'..=b'c')));
        let seq = rng.random_range(0..1000);
        let kind = [
            ValueKind::Deletion,
            ValueKind::Value,
            ValueKind::ValuePointer,
        ][rng.random_range(0..3)];
        let v: Vec<u8> = (0..rng.random_range(0..=max_value))
            .map(|_| rng.random())
            .collect();
        out.push((make_internal_key(&uk, seq, kind), v));
    }
    out.sort_by(|a, b| cmp_internal(&a.0, &b.0));
    out.dedup_by(|a, b| cmp_internal(&a.0, &b.0) == Ordering::Equal);
    out
}

/// Seek targets around `entries`: their keys and neighbouring sequence numbers, user
/// keys cut inside and before the block's prefix, extended past it, keys before and
/// after everything, and targets shorter than a trailer.
fn targets(rng: &mut SmallRng, entries: &[Entry], prefix: &[u8]) -> Vec<Vec<u8>> {
    let mut t = vec![
        Vec::new(),
        b"a".to_vec(),
        make_lookup_key(b"", MAX_SEQ),
        make_lookup_key(b"", 0),
        make_lookup_key(&[0xff; 20], 0),
        prefix.to_vec(),
        make_lookup_key(prefix, MAX_SEQ),
        make_lookup_key(prefix, 0),
        [prefix, b"\xff"].concat(),
    ];
    let p = prefix.len();
    let cuts: Vec<usize> = if p <= 32 {
        (0..=p).collect()
    } else {
        vec![0, 1, p / 2, p - 1, p]
    };
    for l in cuts {
        t.push(make_lookup_key(&prefix[..l], MAX_SEQ));
        t.push(make_lookup_key(&prefix[..l], 0));
        t.push(prefix[..l].to_vec());
        if let Some((&last, head)) = prefix[..l].split_last() {
            for d in [1u8, 255] {
                let bumped = [head, &[last.wrapping_add(d)]].concat();
                t.push(make_lookup_key(&bumped, MAX_SEQ));
            }
        }
    }
    for (k, _) in entries {
        let pk = crate::types::parse_internal_key(k).unwrap();
        t.push(k.clone());
        for seq in [pk.seq.saturating_sub(1), pk.seq + 1, 0, MAX_SEQ] {
            t.push(make_lookup_key(pk.user_key, seq));
        }
        let cut = rng.random_range(0..=pk.user_key.len());
        t.push(make_lookup_key(&pk.user_key[..cut], MAX_SEQ));
        t.push(pk.user_key[..cut.min(7)].to_vec());
        t.push(make_lookup_key(&[pk.user_key, b"a"].concat(), 0));
    }
    for _ in 0..20 {
        let n = rng.random_range(0..20);
        t.push((0..n).map(|_| rng.random()).collect());
    }
    t
}

fn check_seeks(rng: &mut SmallRng, blk: &Block, entries: &[Entry]) {
    for t in targets(rng, entries, blk.prefix()) {
        let want = entries.partition_point(|(k, _)| cmp_internal(k, &t) == Ordering::Less);
        assert_eq!(
            blk.seek(&t),
            want,
            "seek {t:?} in a block with prefix {:?}",
            blk.prefix()
        );
        for i in [want.saturating_sub(1), want.min(entries.len() - 1)] {
            let key = blk.key(i);
            assert_eq!(key.cmp_internal(&t), cmp_internal(&entries[i].0, &t));
            let u = user_key(&t);
            assert_eq!(key.cmp_user_key(u), user_key(&entries[i].0).cmp(u));
            assert_eq!(key.user_key_eq(u), user_key(&entries[i].0) == u);
        }
    }
}

#[test]
fn build_decode_seek() {
    for v1 in [false, true] {
        let entries: Vec<Entry> = (0..100)
            .map(|i| (ikey(i * 2), format!("v{i}").into_bytes()))
            .collect();
        let data = build(&entries, v1);
        assert_eq!(prefixed(&data), !v1);
        let blk = Block::decode(data, "t").unwrap();
        assert_eq!(blk.prefix(), if v1 { &b""[..] } else { b"key000" });
        check_entries(&blk, &entries);
        assert_eq!(blk.seek(&ikey(14)), 7);
        assert_eq!(blk.seek(&ikey(15)), 8);
        assert_eq!(blk.seek(&ikey(0)), 0);
        assert_eq!(blk.seek(&ikey(1000)), 100);
    }
}

/// The exact bytes of both layouts, so that a change to either is deliberate.
#[test]
fn layouts_byte_for_byte() {
    let entries = vec![
        (
            make_internal_key(b"ab1", 1, ValueKind::Value),
            b"x".to_vec(),
        ),
        (
            make_internal_key(b"ab2", 2, ValueKind::Deletion),
            Vec::new(),
        ),
    ];
    let t1 = [1, 1, 0, 0, 0, 0, 0, 0];
    let t2 = [0, 2, 0, 0, 0, 0, 0, 0];
    let mut v2 = b"ab".to_vec();
    v2.extend([11, 1, b'1']);
    v2.extend(t1);
    v2.push(b'x');
    v2.extend([11, 0, b'2']);
    v2.extend(t2);
    v2.extend([2, 0, 14, 0]); // u16 offsets
    v2.extend([2, 0]); // prefix length
    v2.extend([2, 0, 0, 0x80]); // count | PREFIXED
    assert_eq!(build(&entries, false), v2);
    let mut v1 = vec![11, 1, b'a', b'b', b'1'];
    v1.extend(t1);
    v1.push(b'x');
    v1.extend([11, 0, b'a', b'b', b'2']);
    v1.extend(t2);
    v1.extend([0, 0, 0, 0, 14, 0, 0, 0]); // u32 offsets
    v1.extend([2, 0, 0, 0]); // count
    assert_eq!(build(&entries, true), v1);
    for data in [v1, v2] {
        check_entries(&Block::decode(data, "t").unwrap(), &entries);
    }
}

#[test]
fn random_blocks_round_trip_in_both_layouts() {
    let mut rng = SmallRng::seed_from_u64(5);
    for round in 0..300 {
        let n = rng.random_range(1..80);
        let entries = random_entries(&mut rng, n, 40);
        let mut sizes = [0; 2];
        for (j, v1) in [false, true].into_iter().enumerate() {
            let data = build(&entries, v1);
            sizes[j] = data.len();
            let blk = Block::decode(data, "t").unwrap();
            check_entries(&blk, &entries);
            check_seeks(&mut rng, &blk, &entries);
            let users = || entries.iter().map(|(k, _)| user_key(k));
            if v1 {
                assert!(blk.prefix().is_empty());
            } else {
                // The prefix is the longest one all user keys share.
                let p = blk.prefix();
                assert!(users().all(|u| u.starts_with(p)), "round {round}");
                assert!(
                    users().any(|u| u.len() == p.len())
                        || users().any(|u| u[p.len()] != users().next().unwrap()[p.len()])
                );
            }
        }
        // Layout 2 adds a prefix-length word and saves at least 2 bytes an entry (u16
        // offsets; the prefix is stored once instead of in every key).
        assert!(
            sizes[0] + 2 * entries.len() <= sizes[1] + 2,
            "round {round}"
        );
    }
}

#[test]
fn keys_with_no_common_prefix() {
    let entries: Vec<Entry> = [&b""[..], b"a", b"b\x00", b"zz"]
        .iter()
        .map(|u| (make_internal_key(u, 3, ValueKind::Value), u.to_vec()))
        .collect();
    let blk = Block::decode(build(&entries, false), "t").unwrap();
    assert!(blk.prefix().is_empty());
    check_entries(&blk, &entries);
    check_seeks(&mut SmallRng::seed_from_u64(1), &blk, &entries);
}

/// Versions of one user key share all of it; the prefix stops before the trailers.
#[test]
fn versions_of_one_key_share_the_whole_user_key() {
    let entries: Vec<Entry> = (0..20u64)
        .rev()
        .map(|s| {
            (
                make_internal_key(b"same", s, ValueKind::Value),
                vec![s as u8],
            )
        })
        .collect();
    let blk = Block::decode(build(&entries, false), "t").unwrap();
    assert_eq!(blk.prefix(), b"same");
    check_entries(&blk, &entries);
    check_seeks(&mut SmallRng::seed_from_u64(2), &blk, &entries);
    // One entry: the prefix is its whole user key.
    let blk = Block::decode(build(&entries[..1], false), "t").unwrap();
    assert_eq!(blk.prefix(), b"same");
    check_seeks(&mut SmallRng::seed_from_u64(3), &blk, &entries[..1]);
    // The longest user keys share more than a u16 length can say: the prefix is capped.
    let long = vec![7u8; crate::types::MAX_KEY_SIZE];
    let entries: Vec<Entry> = (0..3u64)
        .rev()
        .map(|s| (make_internal_key(&long, s, ValueKind::Value), Vec::new()))
        .collect();
    let blk = Block::decode(build(&entries, false), "t").unwrap();
    assert_eq!(blk.prefix().len(), u16::MAX as usize);
    check_entries(&blk, &entries);
    check_seeks(&mut SmallRng::seed_from_u64(4), &blk, &entries);
}

/// Past 64 KiB of entries the offsets widen to u32; up to it they stay u16.
#[test]
fn offsets_widen_past_64_kib() {
    let entry = |i: u32, n: usize| (ikey(i), vec![i as u8; n]);
    // Prefix "key00000" (8), then 4 entries of 1 + 2 (lengths) + 9 (suffix) + value.
    let narrow: Vec<Entry> = (0..4)
        .map(|i| entry(i, (NARROW_AREA - 8) / 4 - 12))
        .collect();
    let data = build(&narrow, false);
    assert_eq!(data.len(), NARROW_AREA + 2 * 4 + TAIL_LEN);
    assert_eq!(data[data.len() - 1] & 0x40, 0);
    check_entries(&Block::decode(data, "t").unwrap(), &narrow);

    let mut rng = SmallRng::seed_from_u64(9);
    let mut wide = narrow.clone();
    wide.push(entry(4, 0));
    let data = build(&wide, false);
    assert_eq!(data.len(), NARROW_AREA + 11 + 4 * 5 + TAIL_LEN);
    assert_ne!(data[data.len() - 1] & 0x40, 0);
    let blk = Block::decode(data, "t").unwrap();
    check_entries(&blk, &wide);
    check_seeks(&mut rng, &blk, &wide);

    let big = random_entries(&mut rng, 400, 1000);
    let data = build(&big, false);
    assert!(data.len() > NARROW_AREA);
    let blk = Block::decode(data, "t").unwrap();
    check_entries(&blk, &big);
    check_seeks(&mut rng, &blk, &big);
}

/// Prefix compression on the keys the size benchmark uses (16-byte big-endian
/// integers, 100-byte values): 113 bytes an entry, from 130.
#[test]
fn integer_keys_cost_less() {
    let entries: Vec<Entry> = (1024u128..1056)
        .map(|i| {
            (
                make_internal_key(&i.to_be_bytes(), 9, ValueKind::Value),
                vec![0; 100],
            )
        })
        .collect();
    assert_eq!(build(&entries, true).len(), 32 * 130 + 4);
    let data = build(&entries, false);
    assert_eq!(data.len(), 15 + 32 * 113 + TAIL_LEN);
    check_entries(&Block::decode(data, "t").unwrap(), &entries);
}

#[test]
fn rejects_malformed() {
    assert!(Block::decode(vec![], "t").is_err());
    assert!(Block::decode(vec![0, 0, 0, 0], "t").is_err()); // empty
    assert!(Block::decode(vec![9, 0, 0, 0], "t").is_err()); // count too big
    let mut b = BlockBuilder::v1();
    b.add(&ikey(1), b"value");
    let good = b.finish();
    // Key length pointing past the entry area.
    let mut bad = good.clone();
    bad[0] = 100;
    assert!(Block::decode(bad, "t").is_err());
    // Offset pointing past the entry area.
    let mut bad = good.clone();
    let n = bad.len();
    bad[n - 8] = 200;
    assert!(Block::decode(bad, "t").is_err());
    // Key shorter than a trailer.
    let mut b = BlockBuilder::v1();
    b.add(b"abc", b"");
    assert!(Block::decode(b.finish(), "t").is_err());
}

#[test]
fn rejects_malformed_prefixed() {
    let entries: Vec<Entry> = (0..3).map(|i| (ikey(i), b"val".to_vec())).collect();
    let good = build(&entries, false);
    let n = good.len();
    // [prefix "key00000" (8)] 3 x [19 3 "i" trailer(8) "val" ] = 14 bytes each
    // [offsets 8 22 36 (u16)] [prefix len 8 (u16)] [count word]
    assert_eq!(n, 8 + 3 * 14 + 6 + 6);
    assert!(Block::decode(good.clone(), "t").is_ok());
    let corrupt = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut d = good.clone();
        f(&mut d);
        Block::decode(d, "t")
    };
    let err = |f: &dyn Fn(&mut Vec<u8>)| corrupt(f).is_err();
    // Too short for the prefix-length word.
    assert!(Block::decode(vec![0, 0, 0, 0x80], "t").is_err());
    assert!(Block::decode(vec![0, 0, 0, 0, 0x80], "t").is_err());
    // Empty, but the prefix-length word is there.
    assert!(Block::decode(vec![0, 0, 0, 0, 0, 0x80], "t").is_err());
    assert!(Block::decode_with(vec![0, 0, 0, 0, 0, 0x80], "t", true).is_ok());
    // Prefix longer than the area before the offsets.
    assert!(err(
        &|d| d[n - 6..n - 4].copy_from_slice(&51u16.to_le_bytes())
    ));
    assert!(err(
        &|d| d[n - 6..n - 4].copy_from_slice(&u16::MAX.to_le_bytes())
    ));
    // Prefix longer than a key's user key: its suffix is shorter than a trailer.
    assert!(err(&|d| d[n - 6] = 12));
    // A shorter prefix makes the stored suffixes too short for their key lengths...
    // unless lengths still fit; either way nothing panics and keys stay trailer-long.
    if let Ok(b) = corrupt(&|d| d[n - 6] = 7) {
        assert!((0..3).all(|i| b.key(i).parts().1.len() >= TRAILER_LEN));
    }
    // Count too big for u16 offsets, and for u32 ones.
    assert!(err(&|d| d[n - 4] = 30));
    assert!(err(&|d| d[n - 1] |= 0x40));
    // All count bits set.
    assert!(err(&|d| d[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes())));
    // An offset into the prefix, even where the prefix bytes parse as an entry.
    let uk = [20, 0, 1, 2, 3, 4, 5, 6, 7, 8, b'x', b'y'];
    let one = build(
        &[(make_internal_key(&uk, 1, ValueKind::Value), Vec::new())],
        false,
    );
    assert!(Block::decode(one.clone(), "t").is_ok());
    let mut bad = one;
    let m = bad.len();
    assert_eq!(bad[m - 8], 12);
    bad[m - 8] = 0;
    assert!(Block::decode(bad, "t").is_err());
    // An offset into the prefix, past the area, or onto a non-entry.
    assert!(err(&|d| d[n - 12] = 3));
    assert!(err(&|d| d[n - 12] = 60));
    assert!(err(
        &|d| d[n - 12..n - 10].copy_from_slice(&u16::MAX.to_le_bytes())
    ));
    // A key length below prefix + trailer, and one past the area.
    assert!(err(&|d| d[8] = 15));
    assert!(err(&|d| d[8] = 100));
    // A value length past the area.
    assert!(err(&|d| d[8 + 28 + 1] = 100));
    // The same block with the layout flag cleared is not a valid layout-1 block.
    assert!(err(&|d| d[n - 1] = 0));
}

#[test]
fn garbage_never_panics() {
    let mut rng = SmallRng::seed_from_u64(11);
    for round in 0..40_000 {
        let n = rng.random_range(0..200);
        let mut data: Vec<u8> = (0..n).map(|_| rng.random()).collect();
        let prefixed = round % 2 == 1;
        let tail = if prefixed { TAIL_LEN } else { 4 };
        let width = if prefixed && rng.random_bool(0.5) {
            2
        } else {
            4
        };
        // Make the count plausible often, so that entry parsing is exercised too.
        if n >= tail + 2 * width && rng.random_bool(0.7) {
            let c = rng.random_range(1..=((n - tail) / width) as u32);
            let l = data.len();
            let mut word = c;
            if prefixed {
                word |= PREFIXED | if width == 4 { WIDE } else { 0 };
                let area = l - tail - width * c as usize;
                let p = match rng.random_range(0..4) {
                    0 => 0,
                    1 => rng.random_range(0..=area.min(20)),
                    2 => rng.random_range(0..=area),
                    _ => rng.random::<u16>() as usize,
                };
                let p = p as u16;
                data[l - 6..l - 4].copy_from_slice(&p.to_le_bytes());
            }
            data[l - 4..].copy_from_slice(&word.to_le_bytes());
            if rng.random_bool(0.5) {
                for j in 0..c as usize {
                    let o: u32 = rng.random_range(0..n as u32);
                    let at = l - tail - width * (c as usize) + width * j;
                    data[at..at + width].copy_from_slice(&o.to_le_bytes()[..width]);
                }
            }
        }
        let targets: Vec<Vec<u8>> = vec![
            b"somekey\0\0\0\0\0\0\0\0".to_vec(),
            Vec::new(),
            b"s".to_vec(),
            data.iter().take(12).copied().collect(),
        ];
        if let Ok(b) = Block::decode(data, "t") {
            for i in 0..b.entry_count() {
                let (k, _) = b.entry(i);
                assert!(k.parts().1.len() >= TRAILER_LEN);
                let _ = (k.to_vec(), k.user_key_vec(), k.seq(), k.value_kind());
                for t in &targets {
                    let _ = (k.cmp_internal(t), k.cmp_user_key(t), k.user_key_eq(t));
                }
            }
            for t in &targets {
                assert!(b.seek(t) <= b.entry_count());
            }
        }
    }
}

fn build_fixed(entries: &[Entry]) -> (Vec<u8>, Option<FixedLayout>) {
    let mut b = BlockBuilder::fixed_width();
    for (k, v) in entries {
        b.add(k, v);
    }
    let est = b.estimated_size();
    let (data, layout) = b.finish_with_layout();
    assert_eq!(data.len(), est, "estimated size is exact");
    assert!(b.is_empty());
    (data, layout)
}

/// Layout 3 round-trips random blocks of short entries, seeks as the other layouts do,
/// and every window's chunks decode on their own to the same entries.
#[test]
fn fixed_width_blocks_and_their_chunks() {
    let mut rng = SmallRng::seed_from_u64(31);
    for round in 0..300 {
        let n_entries = rng.random_range(1..120);
        let entries = random_entries(&mut rng, n_entries, 40);
        let (data, layout) = build_fixed(&entries);
        let Some(layout) = layout else {
            // Padding would more than double the block (keys of very mixed lengths).
            let (k, v) = entries
                .iter()
                .fold((0, 0), |(k, v), e| (e.0.len().max(k), e.1.len().max(v)));
            let padded = FixedLayout {
                kw: k as u8,
                vw: v as u8,
            };
            assert!(
                padded.block_size(entries.len()).unwrap() > 2 * data.len(),
                "round {round}"
            );
            assert!(Block::decode(data, "t").unwrap().fixed_layout().is_none());
            continue;
        };
        let longest = entries.iter().map(|e| e.0.len()).max().unwrap();
        assert_eq!(usize::from(layout.kw), longest);
        assert_eq!(layout.block_size(entries.len()), Some(data.len()));
        let blk = Block::decode(data.clone(), "t").unwrap();
        assert_eq!(blk.fixed_layout(), Some(layout));
        assert!(!blk.is_partial());
        check_entries(&blk, &entries);
        check_seeks(&mut rng, &blk, &entries);
        let n = entries.len();
        for _ in 0..20 {
            let from = rng.random_range(0..n);
            let to = rng.random_range(from + 1..=n);
            let (span, c0) = layout.chunk_span(n, from, to);
            assert_eq!(c0, from / CHUNK_ENTRIES);
            let part = data[span.clone()].to_vec();
            let p = Block::decode_chunks(part.clone(), layout, n, from, to, "t", 0).unwrap();
            assert!(p.is_partial());
            assert_eq!(p.entry_count(), n);
            for (i, e) in entries.iter().enumerate().take(to).skip(from) {
                let (k, v) = p.entry(i);
                assert_eq!((k.to_vec(), v), (e.0.clone(), &e.1[..]));
            }
            // Any flipped byte fails its chunk's checksum.
            let mut bad = part.clone();
            let at = rng.random_range(0..bad.len());
            bad[at] ^= 1 << rng.random_range(0..8);
            assert!(Block::decode_chunks(bad, layout, n, from, to, "t", 0).is_err());
            // Chunks read from the wrong place fail too, even when whole and intact.
            if n > CHUNK_ENTRIES * 2 && to <= CHUNK_ENTRIES {
                let (other, _) = layout.chunk_span(n, CHUNK_ENTRIES, CHUNK_ENTRIES + 1);
                let moved = data[other].to_vec();
                assert!(Block::decode_chunks(moved, layout, n, from, to, "t", 0).is_err());
            }
            // A short read is refused.
            let short = part[..part.len() - 1].to_vec();
            assert!(Block::decode_chunks(short, layout, n, from, to, "t", 0).is_err());
        }
    }
}

#[test]
fn long_entries_keep_the_variable_layout() {
    let short: Vec<Entry> = (0..50).map(|i| (ikey(i), vec![7; 12])).collect();
    let (_, layout) = build_fixed(&short);
    assert_eq!(
        layout,
        Some(FixedLayout {
            kw: ikey(0).len() as u8,
            vw: 12
        })
    );
    let mut long_value = short.clone();
    long_value[10].1 = vec![1; 256];
    let (data, layout) = build_fixed(&long_value);
    assert_eq!(layout, None);
    check_entries(&Block::decode(data, "t").unwrap(), &long_value);
    // One long key among short ones would more than double the block: layout 2.
    let mut mixed: Vec<Entry> = (0..50)
        .map(|i| {
            (
                make_internal_key(&[b'k', i as u8], 1, ValueKind::Value),
                vec![],
            )
        })
        .collect();
    mixed[49].0 = make_internal_key(&[b'k'; 200], 1, ValueKind::Value);
    mixed.sort_by(|a, b| cmp_internal(&a.0, &b.0));
    let (data, layout) = build_fixed(&mixed);
    assert_eq!(layout, None);
    check_entries(&Block::decode(data, "t").unwrap(), &mixed);
    assert_eq!(FixedLayout::from_code(0), None);
    let l = FixedLayout { kw: 255, vw: 0 };
    assert_eq!(FixedLayout::from_code(l.to_code()), Some(l));
}

/// Damaged layout-3 blocks (checksums forged, so only structure is checked) decode to
/// an error or to a block whose every entry can be read.
#[test]
fn fixed_width_garbage_never_panics() {
    let mut rng = SmallRng::seed_from_u64(12);
    let entries = random_entries(&mut rng, 60, 20);
    let (good, layout) = build_fixed(&entries);
    assert!(layout.is_some());
    for _ in 0..20_000 {
        let mut data = good.clone();
        for _ in 0..rng.random_range(1..4) {
            let i = rng.random_range(0..data.len());
            data[i] = rng.random();
        }
        if rng.random_bool(0.1) {
            data.truncate(rng.random_range(0..data.len()));
        }
        if let Ok(b) = Block::decode(data, "t") {
            for i in 0..b.entry_count() {
                let (k, _) = b.entry(i);
                let _ = (k.to_vec(), k.seq(), k.value_kind());
            }
            let _ = b.seek(&entries[5].0);
        }
    }
}

/// The one-pass check at decode accepts exactly the entries `parse` reads: random entry
/// areas, offsets and prefix lengths, near the one-byte lengths' edges (0x7f, 0x80).
#[test]
fn the_decode_check_agrees_with_parse_on_any_bytes() {
    let mut rng = SmallRng::seed_from_u64(11);
    let edge = [0u8, 1, 7, 8, 9, 20, 0x7f, 0x80, 0x81, 0xff];
    for _ in 0..200_000 {
        let len = rng.random_range(0..40);
        let area: Vec<u8> = (0..len)
            .map(|_| match rng.random_bool(0.5) {
                true => edge[rng.random_range(0..edge.len())],
                false => rng.random(),
            })
            .collect();
        let off = rng.random_range(0..=len + 2);
        let prefix_len = rng.random_range(0..12);
        assert_eq!(
            entry_fits(&area, off, prefix_len),
            parse_at(&area, off, prefix_len).is_some(),
            "area {area:?} off {off} prefix {prefix_len}"
        );
    }
}
