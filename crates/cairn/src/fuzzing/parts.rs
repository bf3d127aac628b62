//! Fuzz targets for the parts of a table: data block, compressed block, index block,
//! bloom filter, properties, range deletions.

use super::*;

/// A data block's contents (trailer stripped): decode, read every entry, seek.
pub fn block(data: &[u8]) {
    for allow_empty in [false, true] {
        let Some(b) = typed(
            "block",
            Block::decode_with(data.to_vec(), NAME, allow_empty),
        ) else {
            continue;
        };
        let n = b.entry_count();
        assert!(n > 0 || allow_empty, "empty block accepted");
        assert!(2 * n + 4 <= b.size(), "{n} entries in {} bytes", b.size());
        let mut targets = Vec::new();
        for i in 0..n {
            let (k, v) = b.entry(i);
            let (prefix, suffix) = k.parts();
            assert!(prefix.len() + suffix.len() + v.len() <= b.size());
            assert!(suffix.len() >= TRAILER_LEN, "suffix shorter than a trailer");
            if i < 16 || i + 1 == n {
                let key = k.to_vec();
                // The prefix-split comparison agrees with the whole key's.
                assert_eq!(k.cmp_internal(&key), Ordering::Equal);
                targets.push(key);
            }
        }
        for k in keys_from(data) {
            targets.push(make_lookup_key(&k, MAX_SEQ));
            // Lookup keys shorter than the prefix, and ones sharing part of it.
            let p = b.prefix();
            targets.push(make_lookup_key(&p[..p.len().min(k.len())], MAX_SEQ));
            targets.push([p, &k].concat());
        }
        // In a sorted block, seek (prefix compared once, then suffixes) agrees with a scan
        // of whole keys.
        let keys: Vec<Vec<u8>> = (0..n).map(|i| b.key(i).to_vec()).collect();
        let sorted = keys
            .windows(2)
            .all(|w| cmp_internal(&w[0], &w[1]) == Ordering::Less);
        for t in &targets {
            let pos = b.seek(t);
            assert!(pos <= n);
            if sorted {
                let want = keys.partition_point(|k| cmp_internal(k, t) == Ordering::Less);
                assert_eq!(pos, want, "seek disagrees with a scan");
            }
        }
        let _ = b.charge();
    }
}

/// `[codec][payload]`: a compressed block's stored bytes (the codec as a trailer's high
/// half names it). Whatever decodes is read as a data block; and the input's own bytes
/// compressed by each codec must decode back to themselves.
pub fn compressed_block(data: &[u8]) {
    let Some((&codec, payload)) = data.split_first() else {
        return;
    };
    if let Some(contents) = typed("decompress", decompress(codec & 0x0f, payload, NAME, 0)) {
        block(&contents);
    }
    for c in [Compression::Lz4, Compression::ZSTD] {
        if let Some(packed) = compress(c, payload) {
            let back = decompress(c.code(), &packed, NAME, 0).expect("own output decodes");
            assert_eq!(back, payload, "{c:?} round trip");
        }
    }
}

/// `[varint data_end][varint num_entries][index block contents]`: decode the index of a
/// table whose data blocks end at `data_end`, then locate keys and ordinals in it.
pub fn index_block(data: &[u8]) {
    let mut pos = 0;
    let (Some(data_end), Some(num_entries)) =
        (get_varint(data, &mut pos), get_varint(data, &mut pos))
    else {
        return;
    };
    let contents = data[pos..].to_vec();
    let Some(idx) = typed(
        "index block",
        FenceIndex::decode(contents, NAME, data_end, num_entries),
    ) else {
        return;
    };
    let n = idx.num_blocks();
    let mut total = 0u64;
    let mut probes = Vec::new();
    for i in 0..n {
        let e = idx.block(i);
        assert!(e
            .handle
            .end_with_trailer()
            .is_some_and(|end| end <= data_end));
        total += idx.block_entries(i);
        assert_eq!(idx.block_for_ordinal(e.first_ordinal), Some(i));
        if i < 16 || i + 1 == n {
            probes.push(e.last_key.clone());
        }
    }
    assert_eq!(total, num_entries);
    for k in keys_from(data) {
        probes.push(make_lookup_key(&k, MAX_SEQ));
    }
    for p in &probes {
        if let Some(i) = idx.locate(p) {
            assert!(i < n);
        }
    }
    for o in [
        0,
        num_entries / 2,
        num_entries.saturating_sub(1),
        num_entries,
    ] {
        if let Some(i) = idx.block_for_ordinal(o) {
            assert!(i < n);
        }
    }
    let _ = idx.memory();
}

/// A filter block: decode, probe with a few keys and hashes.
pub fn bloom(data: &[u8]) {
    let Some(f) = typed("bloom filter", BloomFilter::decode(data.to_vec(), NAME)) else {
        return;
    };
    assert!((1..=30).contains(&f.num_probes()));
    // The trailer: k, and the cache-local layout's marker.
    let trailer = if f.is_cache_local() { 2 } else { 1 };
    assert_eq!(f.size() + trailer, data.len());
    for k in keys_from(data) {
        let _ = f.may_contain(&k);
    }
    for h in data.chunks_exact(8).take(8) {
        let _ = f.may_contain_hash(u64::from_le_bytes(h.try_into().expect("8 bytes")));
    }
    let _ = f.may_contain_hash(u64::MAX);
}

/// A properties block: decode; an accepted block re-encodes to the same bytes.
pub fn table_properties(data: &[u8]) {
    let Some(p) = typed("properties", TableProperties::decode(data, NAME)) else {
        return;
    };
    assert!(p.num_deletions <= p.num_entries && p.min_seq <= p.max_seq);
    assert_eq!(
        p.encode(),
        data,
        "properties do not re-encode to their bytes"
    );
}

/// A range-deletion block: decode; an accepted block is fragmented (sorted, disjoint,
/// sequence numbers descending), re-encodes to its bytes, and answers lookups as its
/// fragments say.
pub fn range_del_block(data: &[u8]) {
    let Some(d) = crate::range_del::RangeDels::decode(data) else {
        return;
    };
    assert_eq!(
        d.encode(),
        data,
        "range deletions do not re-encode to their bytes"
    );
    let frags = d.fragments();
    for w in frags.windows(2) {
        assert!(w[0].end <= w[1].start, "fragments overlap");
    }
    for f in frags {
        assert!(f.start < f.end && !f.seqs.is_empty());
        assert!(
            f.seqs.windows(2).all(|w| w[0] > w[1]),
            "sequence numbers not descending"
        );
        assert_eq!(d.max_cover(&f.start, MAX_SEQ), f.seqs[0]);
    }
    for k in keys_from(data) {
        let want = frags
            .iter()
            .find(|f| f.start <= k && k < f.end)
            .map_or(0, |f| f.seqs[0]);
        assert_eq!(d.max_cover(&k, MAX_SEQ), want);
    }
    assert_eq!(crate::range_del::RangeDels::new(d.tombstones()), d);
}
