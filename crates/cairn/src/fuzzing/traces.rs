//! Fuzz targets for the learned parts' data files: Leaper's access trace, SA-LSM's record
//! trace and cold set.

use super::*;

/// An access trace (as is and with its checksum recomputed): decode; an accepted trace
/// re-encodes to a trace that decodes equal.
pub fn access_trace(data: &[u8]) {
    let mut sealed = data.to_vec();
    if let Some(n) = sealed.len().checked_sub(4) {
        let crc = crc32c::crc32c(&sealed[..n]);
        sealed[n..].copy_from_slice(&crc.to_le_bytes());
    }
    for bytes in [data, &sealed[..]] {
        let Some((h, rows, transfers)) =
            typed("access trace", crate::access::trace::decode(bytes, NAME))
        else {
            continue;
        };
        let again = crate::access::trace::encode(&h, &rows, &transfers);
        assert_eq!(again.len(), bytes.len());
        let back = crate::access::trace::decode(&again, NAME).expect("re-encoded trace decodes");
        assert_eq!(
            back,
            (h, rows, transfers),
            "trace changes through a re-encode"
        );
    }
}

/// SA-LSM's record trace (`CAIRNRTR`): decodes, and an accepted trace re-encodes to the
/// same bytes and resumes a query store without panicking.
pub fn record_trace(data: &[u8]) {
    use crate::access::record_trace::{decode, encode, RECORD_TRACE_VERSION};
    let mut sealed = data.to_vec();
    if let Some(n) = sealed.len().checked_sub(4) {
        let crc = crc32c::crc32c(&sealed[..n]);
        sealed[n..].copy_from_slice(&crc.to_le_bytes());
    }
    for bytes in [data, &sealed[..]] {
        let Some((h, records)) = typed("record trace", decode(bytes, NAME)) else {
            continue;
        };
        let again = encode(&h, &records);
        if bytes.get(8..12) == Some(&RECORD_TRACE_VERSION.to_le_bytes()[..]) {
            assert_eq!(again, bytes, "record trace changes through a re-encode");
        } else {
            // An older version is converted on reading and written as the current one.
            let back = decode(&again, NAME).expect("a re-encoded trace reads back");
            assert_eq!(
                back,
                (h.clone(), records.clone()),
                "converted trace changes"
            );
        }
        let store = crate::access::RecordStore::resume(
            h.cf_id,
            crate::access::RecordOptions::default(),
            &h,
            records,
        );
        let _ = store.snapshot();
    }
}

/// SA-LSM's cold-key set (`CAIRNCLD`): decodes, re-encodes to the same bytes, and
/// answers membership for every key it holds.
pub fn cold_set(data: &[u8]) {
    use crate::learned::ColdSet;
    let mut sealed = data.to_vec();
    if let Some(n) = sealed.len().checked_sub(4) {
        let crc = crc32c::crc32c(&sealed[..n]);
        sealed[n..].copy_from_slice(&crc.to_le_bytes());
    }
    for bytes in [data, &sealed[..]] {
        let Some(set) = typed("cold-key set", ColdSet::decode(bytes, NAME)) else {
            continue;
        };
        assert_eq!(
            set.encode(),
            bytes,
            "cold-key set changes through a re-encode"
        );
        assert!(set.keys().iter().all(|k| set.contains(k)));
    }
}
