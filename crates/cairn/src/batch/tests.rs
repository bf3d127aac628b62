use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::*;
use crate::ids::CfId;

/// An owned operation, for the model.
type Op = (CfId, BatchOpKind, Vec<u8>, Vec<u8>);

fn random_bytes(rng: &mut SmallRng, max: usize) -> Vec<u8> {
    let len = if rng.random_bool(0.2) {
        0
    } else {
        rng.random_range(0..=max)
    };
    (0..len).map(|_| rng.random()).collect()
}

fn random_batch(rng: &mut SmallRng, n: usize) -> (WriteBatch, Vec<Op>) {
    let mut b = WriteBatch::new();
    let mut ops = Vec::new();
    for _ in 0..n {
        let cf = CfId::new(match rng.random_range(0..4) {
            0 => 0,
            1 => rng.random_range(0..200),
            2 => rng.random_range(0..100_000),
            _ => rng.random(),
        });
        let key = random_bytes(rng, 40);
        let op = match rng.random_range(0..3) {
            0 => {
                let v = random_bytes(rng, 300);
                b.put_cf(cf, &key, &v).unwrap();
                (cf, BatchOpKind::Put, key, v)
            }
            1 => {
                b.delete_cf(cf, &key).unwrap();
                (cf, BatchOpKind::Delete, key, Vec::new())
            }
            _ => {
                let mut end = random_bytes(rng, 40);
                let mut start = key;
                if start > end {
                    std::mem::swap(&mut start, &mut end);
                }
                b.delete_range_cf(cf, &start, &end).unwrap();
                (cf, BatchOpKind::DeleteRange, start, end)
            }
        };
        ops.push(op);
    }
    (b, ops)
}

fn ops_of(b: &WriteBatch) -> Vec<Op> {
    b.iter()
        .map(|o| (o.cf, o.kind, o.key.to_vec(), o.value.to_vec()))
        .collect()
}

#[test]
fn encode_decode_round_trip() {
    let mut rng = SmallRng::seed_from_u64(11);
    for i in 0..200 {
        let (b, ops) = random_batch(&mut rng, i % 40);
        assert_eq!(b.len(), ops.len());
        assert_eq!(b.is_empty(), ops.is_empty());
        assert_eq!(ops_of(&b), ops);
        let seq = rng.random_range(0..=MAX_SEQ - 100);
        let enc = b.encode(seq);
        assert_eq!(enc.len(), b.approximate_size());
        let (s, d) = WriteBatch::decode(&enc).unwrap();
        assert_eq!(s, seq);
        assert_eq!(d, b);
        assert_eq!(ops_of(&d), ops);
    }
}

#[test]
fn default_cf_and_plain_ops() {
    let mut b = WriteBatch::new();
    b.put(b"a", b"1").unwrap();
    b.delete(b"b").unwrap();
    b.delete_range(b"c", b"d").unwrap();
    b.delete_range(b"e", b"e").unwrap();
    let ops = ops_of(&b);
    assert!(ops.iter().all(|o| o.0 == DEFAULT_CF));
    assert_eq!(
        ops[1],
        (
            CfId::DEFAULT,
            BatchOpKind::Delete,
            b"b".to_vec(),
            Vec::new()
        )
    );
    assert_eq!(ops[2].3, b"d");
    // Put: kind, cf, key len, key, value len, value.
    assert_eq!(
        &b.encode(7)[..18],
        &[7, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 1, 0, 1, b'a', 1, b'1']
    );
    b.clear();
    assert!(b.is_empty());
    assert_eq!(b.approximate_size(), BATCH_HEADER_LEN);
    assert_eq!(b.iter().count(), 0);
}

#[test]
fn invalid_ops_are_rejected_and_leave_the_batch_unchanged() {
    let mut b = WriteBatch::new();
    b.put(b"k", b"v").unwrap();
    let before = b.clone();
    let big_key = vec![0u8; MAX_KEY_SIZE + 1];
    assert!(matches!(
        b.put(&big_key, b""),
        Err(Error::TooLarge { what: "key", .. })
    ));
    assert!(b.delete_cf(CfId::new(3), &big_key).is_err());
    assert!(b.delete_range(b"a", &big_key).is_err());
    assert!(matches!(
        b.delete_range(b"b", b"a"),
        Err(Error::InvalidArgument(_))
    ));
    let big_value = vec![0u8; MAX_VALUE_SIZE + 1];
    assert!(matches!(
        b.put(b"k", &big_value),
        Err(Error::TooLarge { what: "value", .. })
    ));
    assert_eq!(b, before);
    // The limits themselves are accepted.
    b.put(&big_key[1..], &big_value[1..]).unwrap();
    let (_, d) = WriteBatch::decode(&b.encode(1)).unwrap();
    assert_eq!(d, b);
}

#[test]
fn append_concatenates() {
    let mut rng = SmallRng::seed_from_u64(12);
    let (mut a, mut ops_a) = random_batch(&mut rng, 10);
    let (b, ops_b) = random_batch(&mut rng, 7);
    a.append(&b);
    ops_a.extend(ops_b);
    assert_eq!(a.len(), 17);
    assert_eq!(ops_of(&a), ops_a);
    let (_, d) = WriteBatch::decode(&a.encode(100)).unwrap();
    assert_eq!(ops_of(&d), ops_a);
}

#[test]
fn decode_rejects_inconsistent_headers() {
    let mut b = WriteBatch::new();
    b.put(b"k", b"v").unwrap();
    let mut enc = b.encode(MAX_SEQ);
    assert!(WriteBatch::decode(&enc).is_ok());
    enc[8] = 2; // count 2, one op
    assert!(WriteBatch::decode(&enc).unwrap_err().is_corruption());
    let enc = b.encode(MAX_SEQ + 1);
    assert!(WriteBatch::decode(&enc).unwrap_err().is_corruption());
    let mut enc = b.encode(1);
    enc.push(0); // trailing byte: an incomplete op
    assert!(WriteBatch::decode(&enc).is_err());
    // Overlong varint for the cf id.
    let mut enc = b.encode(1);
    enc.splice(13..14, [0x80, 0x00]);
    assert!(WriteBatch::decode(&enc).is_err());
}

/// A decoded batch must be internally consistent: iteration yields `len()` ops and
/// rebuilding it from them gives the same batch.
fn check_decoded(data: &[u8]) -> bool {
    let Ok((seq, d)) = WriteBatch::decode(data) else {
        return false;
    };
    assert_eq!(d.encode(seq), data);
    let mut rebuilt = WriteBatch::new();
    for op in &d {
        match op.kind {
            BatchOpKind::Put => rebuilt.put_cf(op.cf, op.key, op.value),
            BatchOpKind::Delete => rebuilt.delete_cf(op.cf, op.key),
            BatchOpKind::DeleteRange => rebuilt.delete_range_cf(op.cf, op.key, op.value),
        }
        .unwrap();
    }
    assert_eq!(rebuilt, d);
    true
}

#[test]
fn truncations_and_flips_never_panic() {
    let mut rng = SmallRng::seed_from_u64(13);
    for _ in 0..30 {
        let n = rng.random_range(1..15);
        let (b, _) = random_batch(&mut rng, n);
        let enc = b.encode(rng.random_range(0..1000));
        // Every proper prefix is missing part of an op (or ops): always an error.
        for cut in 0..enc.len() {
            assert!(!check_decoded(&enc[..cut]), "prefix {cut} decoded");
        }
        assert!(check_decoded(&enc));
        for _ in 0..300 {
            let mut bad = enc.clone();
            for _ in 0..rng.random_range(1..4) {
                let i = rng.random_range(0..bad.len());
                bad[i] = if rng.random_bool(0.5) {
                    rng.random()
                } else {
                    bad[i] ^ (1 << rng.random_range(0..8))
                };
            }
            check_decoded(&bad);
        }
    }
    for _ in 0..2000 {
        let len = rng.random_range(0..64);
        let g: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        check_decoded(&g);
    }
    // A huge count or lengths with little data must not allocate or loop for long.
    let mut g = vec![0u8; 12];
    g[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    g.extend_from_slice(&[1, 0, 0xff, 0xff, 0xff, 0x0f]);
    assert!(!check_decoded(&g));
}
