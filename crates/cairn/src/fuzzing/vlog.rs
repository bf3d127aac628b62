//! Fuzz targets for the value log: records and value pointers.

use super::*;

/// Length of the record starting at `rec[0]` if its header parses: checksum (4), key and
/// value lengths, key, value; and its key.
pub(super) fn vlog_record_span(rec: &[u8]) -> Option<(usize, &[u8])> {
    let mut pos = 4;
    let klen = usize::try_from(get_varint(rec, &mut pos)?).ok()?;
    let vlen = usize::try_from(get_varint(rec, &mut pos)?).ok()?;
    let kend = pos.checked_add(klen)?;
    let key = rec.get(pos..kend)?;
    let end = kend.checked_add(vlen)?;
    (end <= rec.len()).then_some((end, key))
}

/// A value-log record as read through a pointer (also with its checksum recomputed), or a
/// whole value-log file (header, then records read one after the other).
pub fn vlog_record(data: &[u8]) {
    let _ = typed(
        "value-log header",
        vlog_format::check_header(NAME, &data[..data.len().min(12)]),
    );
    let mut sealed = data.to_vec();
    if sealed.len() >= 4 {
        let crc = crc32c::crc32c(&sealed[4..]);
        sealed[..4].copy_from_slice(&crc.to_le_bytes());
    }
    for rec in [data, &sealed[..]] {
        let key = vlog_record_span(rec).map_or(&b""[..], |(_, k)| k);
        for k in [key, b"", b"other key"] {
            if let Some(v) = typed("value-log record", vlog_format::decode_record(NAME, rec, k)) {
                assert!(v.len() < rec.len());
            }
        }
    }
    // A file: records back to back after the header.
    if data.starts_with(vlog_format::MAGIC) {
        let mut pos = vlog_format::HEADER_LEN as usize;
        while let Some((len, key)) = data.get(pos..).and_then(vlog_record_span) {
            let _ = typed(
                "value-log record",
                vlog_format::decode_record(NAME, &data[pos..pos + len], key),
            );
            pos += len.max(1);
        }
    }
}

/// A value pointer (the value of a separated entry); an accepted pointer re-encodes to the
/// same bytes.
pub fn value_pointer(data: &[u8]) {
    if let Some(p) = typed("value pointer", ValuePointer::decode(data)) {
        assert_eq!(
            p.encode(),
            data,
            "value pointer does not re-encode to its bytes"
        );
    }
}
