use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::*;
use crate::storage::{FileKind, StorageEnv};
use crate::Result;

/// Writes `records` through a real file; returns the file bytes and each record's
/// `(start, end)` offsets (start is after any block padding).
fn write_log(records: &[Vec<u8>]) -> (Vec<u8>, Vec<(usize, usize)>) {
    let dir = tempfile::tempdir().unwrap();
    let env = StorageEnv::new(dir.path(), &[], 0.0).unwrap();
    let path = dir.path().join("000001.log");
    let mut w = LogWriter::new(env.create(&path, FileKind::Wal, 0, None).unwrap());
    let mut spans = Vec::new();
    for r in records {
        let before = w.len() as usize;
        let start = if BLOCK_SIZE - before % BLOCK_SIZE < HEADER_LEN {
            before.next_multiple_of(BLOCK_SIZE)
        } else {
            before
        };
        w.add_record(r).unwrap();
        spans.push((start, w.len() as usize));
    }
    w.sync().unwrap();
    let data = env.read_whole(&path, FileKind::Wal).unwrap();
    assert_eq!(data.len() as u64, w.len());
    (data, spans)
}

fn read_all(data: Vec<u8>, skip: bool) -> (Result<Vec<Vec<u8>>>, TailState, SkipStats) {
    let mut r = LogReader::new(data, "test.log", skip);
    let mut out = Vec::new();
    let res = loop {
        match r.next_record() {
            Ok(Some(rec)) => out.push(rec),
            Ok(None) => break Ok(out),
            Err(e) => break Err(e),
        }
    };
    (res, r.tail(), r.skipped())
}

fn random_record(rng: &mut SmallRng, max: usize) -> Vec<u8> {
    let len = match rng.random_range(0..3) {
        0 => rng.random_range(0..20),
        1 => rng.random_range(0..BLOCK_SIZE * 2),
        _ => rng.random_range(0..=max),
    };
    let mut v = vec![0u8; len];
    rng.fill(&mut v[..]);
    v
}

fn text(rng: &mut SmallRng, n: usize) -> Vec<u8> {
    // Text payloads keep the resync scan cheap in the every-offset tests (type bytes 1
    // and 2 never occur), which matter in unoptimised test builds.
    (0..n).map(|_| rng.random_range(b'a'..=b'z')).collect()
}

/// Small logs that together exercise every fragment type, an empty record and block
/// padding: (a) padding at the end of block 0, (b) a record in two fragments, (c) a record
/// in three fragments.
fn small_logs() -> [Vec<Vec<u8>>; 3] {
    let mut rng = SmallRng::seed_from_u64(7);
    let pad_fill = BLOCK_SIZE - 3 * HEADER_LEN - 10 - 3;
    let a = vec![
        text(&mut rng, 10),
        Vec::new(),
        text(&mut rng, pad_fill),
        text(&mut rng, 30),
    ];
    let b = vec![
        text(&mut rng, 10),
        text(&mut rng, 33_000),
        Vec::new(),
        text(&mut rng, 20),
    ];
    let c = vec![
        text(&mut rng, 10),
        text(&mut rng, 70_000),
        text(&mut rng, 20),
        text(&mut rng, 25),
    ];
    [a, b, c]
}

#[test]
fn round_trip_random_sizes() {
    let mut rng = SmallRng::seed_from_u64(1);
    let mut records: Vec<Vec<u8>> = (0..150)
        .map(|_| random_record(&mut rng, 100 * 1024))
        .collect();
    // Exact fits and every padding size.
    for pad in 0..=HEADER_LEN {
        records.push(vec![pad as u8; BLOCK_SIZE - HEADER_LEN - pad]);
    }
    records.push(Vec::new());
    let (data, _) = write_log(&records);
    let (res, tail, _) = read_all(data, false);
    assert_eq!(tail, TailState::Clean);
    let got = res.unwrap();
    assert_eq!(got.len(), records.len());
    for (i, (g, w)) in got.iter().zip(&records).enumerate() {
        assert!(
            g == w,
            "record {i} differs (len {} vs {})",
            g.len(),
            w.len()
        );
    }
}

#[test]
fn small_logs_have_padding_and_all_fragment_types() {
    let [a, b, c] = small_logs();
    let (data, spans) = write_log(&a);
    let end = spans[2].1;
    assert_eq!(end, BLOCK_SIZE - 3, "padding case not built");
    assert_eq!(spans[3].0, BLOCK_SIZE);
    assert!(data[end..end + 3].iter().all(|&b| b == 0));
    let (data, _) = write_log(&b);
    assert_eq!(
        (data[6], data[17 + 6], data[BLOCK_SIZE + 6]),
        (FULL, FIRST, LAST)
    );
    let (data, _) = write_log(&c);
    assert_eq!(data[BLOCK_SIZE + 6], MIDDLE);
}

/// Reads the log cut at each offset in `cuts` and checks that exactly the records that
/// were complete come back, and how the tail is reported.
fn check_cuts(records: &[Vec<u8>], cuts: impl Fn(usize) -> bool) {
    let (data, spans) = write_log(records);
    for cut in (0..=data.len()).filter(|&c| cuts(c)) {
        let (res, tail, _) = read_all(data[..cut].to_vec(), false);
        let got = res.unwrap_or_else(|e| panic!("cut {cut}: {e}"));
        let complete = spans.iter().filter(|&&(_, end)| end <= cut).count();
        assert_eq!(got.len(), complete, "cut {cut}");
        assert!(got.iter().zip(records).all(|(g, w)| g == w), "cut {cut}");
        // Clean only if nothing of the next record was written.
        let next_start = spans.get(complete).map_or(usize::MAX, |s| s.0);
        if cut <= next_start {
            assert_eq!(tail, TailState::Clean, "cut {cut}");
        } else {
            assert_eq!(
                tail,
                TailState::Truncated {
                    valid_up_to: next_start as u64,
                    dropped_bytes: (cut - next_start) as u64
                },
                "cut {cut}"
            );
        }
    }
}

#[test]
fn truncation_at_every_offset_is_a_clean_prefix() {
    let [a, b, c] = small_logs();
    check_cuts(&a, |_| true);
    check_cuts(&b, |_| true);
    // The three-block log: every offset near a block boundary, a stride elsewhere.
    check_cuts(&c, |cut| {
        let off = cut % BLOCK_SIZE;
        !(64..BLOCK_SIZE - 64).contains(&off) || cut % 61 == 0
    });
}

#[test]
fn damage_in_a_middle_record_is_corruption() {
    let [_, b, c] = small_logs();
    // b: record 1 has two fragments, 2 is empty; c: record 1 has three fragments.
    for records in [b, c] {
        let (data, spans) = write_log(&records);
        for victim in [1usize, 2] {
            let (start, end) = spans[victim];
            let mut offsets: Vec<usize> = (start..end.min(start + 40)).collect();
            offsets.extend([
                end - 1,
                start + BLOCK_SIZE / 2,
                BLOCK_SIZE + 3,
                2 * BLOCK_SIZE + 2,
            ]);
            for off in offsets.into_iter().filter(|&o| o >= start && o < end) {
                let mut bad = data.clone();
                bad[off] ^= 0x40;
                let (res, _, _) = read_all(bad.clone(), false);
                let err = res.expect_err(&format!("victim {victim} offset {off}"));
                assert!(err.is_corruption(), "{err}");

                let (res, tail, skipped) = read_all(bad, true);
                let mut want = records.clone();
                want.remove(victim);
                assert!(res.unwrap() == want, "victim {victim} offset {off}");
                assert_eq!(tail, TailState::Clean);
                assert!(skipped.bytes > 0 && skipped.regions > 0, "{skipped:?}");
            }
        }
    }
}

#[test]
fn damage_in_the_last_record_is_a_torn_tail() {
    let [records, _, _] = small_logs();
    let (data, spans) = write_log(&records);
    let (start, end) = *spans.last().unwrap();
    for off in start..end {
        let mut bad = data.clone();
        bad[off] ^= 0x01;
        for skip in [false, true] {
            let (res, tail, skipped) = read_all(bad.clone(), skip);
            assert!(res.unwrap() == records[..records.len() - 1], "offset {off}");
            assert_eq!(
                tail,
                TailState::Truncated {
                    valid_up_to: start as u64,
                    dropped_bytes: (end - start) as u64
                }
            );
            assert_eq!(skipped, SkipStats::default());
        }
    }
    // A multi-block last record damaged in its first fragment: its later fragments are
    // valid but orphaned, which is still a torn tail.
    let recs = vec![vec![1u8; 100], vec![2u8; 50_000]];
    let (mut data, spans) = write_log(&recs);
    data[spans[1].0 + 10] ^= 0xff;
    let (res, tail, _) = read_all(data, false);
    assert!(res.unwrap() == recs[..1]);
    assert!(matches!(
        tail,
        TailState::Truncated {
            valid_up_to: 107,
            ..
        }
    ));
}

#[test]
fn trailing_zeros_are_a_torn_tail() {
    let records = vec![vec![5u8; 10], vec![6u8; 40_000]];
    let (mut data, _) = write_log(&records);
    let len = data.len();
    data.resize(len + 5000, 0);
    let (res, tail, _) = read_all(data, false);
    assert!(res.unwrap() == records);
    assert_eq!(
        tail,
        TailState::Truncated {
            valid_up_to: len as u64,
            dropped_bytes: 5000
        }
    );
}

#[test]
fn garbage_never_panics_and_only_yields_written_records() {
    let mut rng = SmallRng::seed_from_u64(3);
    for i in 0..40 {
        let len = rng.random_range(0..3 * BLOCK_SIZE);
        let mut g = vec![0u8; len];
        if i % 2 == 0 {
            rng.fill(&mut g[..]);
        } else {
            // Mostly plausible headers: small type bytes and short lengths.
            for b in g.iter_mut() {
                *b = rng.random_range(0..6);
            }
        }
        for skip in [false, true] {
            let _ = read_all(g.clone(), skip);
        }
    }
    // Real logs with random damage: with skip_corrupt, every record returned was written,
    // in order (checksums make anything else vanishingly unlikely).
    let records: Vec<Vec<u8>> = (0..40).map(|_| random_record(&mut rng, 50_000)).collect();
    let (data, _) = write_log(&records);
    for _ in 0..30 {
        let mut bad = data.clone();
        for _ in 0..rng.random_range(1..20) {
            let off = rng.random_range(0..bad.len());
            bad[off] = rng.random();
        }
        if rng.random_bool(0.3) {
            bad.truncate(rng.random_range(0..bad.len()));
        }
        let _ = read_all(bad.clone(), false);
        let (res, _, _) = read_all(bad, true);
        let mut want = records.iter();
        for rec in res.unwrap() {
            assert!(want.any(|w| *w == rec), "a record that was never written");
        }
    }
}

#[test]
fn torn_write_is_told_from_a_damaged_last_record() {
    // The last record spans two fragments (it crosses a block boundary).
    let records = vec![vec![7u8; 100], vec![9u8; BLOCK_SIZE - 200], vec![3u8; 500]];
    let (data, spans) = write_log(&records);
    let (start, end) = *spans.last().unwrap();
    for cut in start..end {
        let (res, tail, _) = read_all(data[..cut].to_vec(), false);
        assert_eq!(res.unwrap().len(), 2);
        let TailState::Truncated { valid_up_to, .. } = tail else {
            assert_eq!(cut, start, "cut at {cut}");
            continue;
        };
        assert!(
            is_torn_write(&data[..cut], valid_up_to as usize),
            "cut at {cut}"
        );
    }
    let mut zeroed = data.clone();
    zeroed[start..].fill(0);
    let (_, tail, _) = read_all(zeroed.clone(), false);
    let TailState::Truncated { valid_up_to, .. } = tail else {
        panic!("zeroed tail not truncated")
    };
    assert!(is_torn_write(&zeroed, valid_up_to as usize));
    for pos in start..end {
        for bit in [0, 3, 7] {
            let mut d = data.clone();
            d[pos] ^= 1 << bit;
            let (res, tail, _) = read_all(d.clone(), false);
            assert_eq!(res.unwrap().len(), 2, "byte {pos}");
            let TailState::Truncated { valid_up_to, .. } = tail else {
                panic!("byte {pos} bit {bit}: damage not noticed")
            };
            assert!(
                !is_torn_write(&d, valid_up_to as usize),
                "byte {pos} bit {bit}: damage taken for a torn write"
            );
        }
    }
}
