//! A state-machine snapshot's bytes, and the file that keeps the current one.
//!
//! Format (little-endian): the magic `CAIRNRS1`; the length of the meta and the meta
//! (MessagePack of openraft's `SnapshotMeta`); each pair as key length, key, value
//! length, value (application keys); then the pair count and a CRC-32C of everything
//! before it. A snapshot travels between nodes in these bytes and is checked whole
//! before any of it is installed.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use openraft::SnapshotMeta;

use crate::store::{decode, encode};
use crate::{Node, NodeId};

const MAGIC: &[u8; 8] = b"CAIRNRS1";
const FILE: &str = "current.snap";

/// Why snapshot bytes were refused.
#[derive(Debug, thiserror::Error)]
#[error("snapshot: {0}")]
pub(crate) struct SnapshotError(String);

/// Builds a snapshot's bytes pair by pair.
pub(crate) struct SnapshotWriter {
    buf: Vec<u8>,
    count: u64,
}

impl SnapshotWriter {
    pub(crate) fn new(meta: &SnapshotMeta<NodeId, Node>) -> Result<Self, SnapshotError> {
        let m = encode(meta).map_err(|e| SnapshotError(e.to_string()))?;
        let mut buf = Vec::with_capacity(64 + m.len());
        buf.extend_from_slice(MAGIC);
        put_len(&mut buf, m.len())?;
        buf.extend_from_slice(&m);
        Ok(SnapshotWriter { buf, count: 0 })
    }

    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) -> Result<(), SnapshotError> {
        put_len(&mut self.buf, key.len())?;
        self.buf.extend_from_slice(key);
        put_len(&mut self.buf, value.len())?;
        self.buf.extend_from_slice(value);
        self.count += 1;
        Ok(())
    }

    pub(crate) fn finish(mut self) -> Vec<u8> {
        self.buf.extend_from_slice(&self.count.to_le_bytes());
        let crc = crc32c::crc32c(&self.buf);
        self.buf.extend_from_slice(&crc.to_le_bytes());
        self.buf
    }
}

fn put_len(buf: &mut Vec<u8>, len: usize) -> Result<(), SnapshotError> {
    let len = u32::try_from(len).map_err(|_| SnapshotError(format!("{len} bytes in one field")))?;
    buf.extend_from_slice(&len.to_le_bytes());
    Ok(())
}

/// A checked snapshot: its meta and its pairs.
pub(crate) struct SnapshotView<'a> {
    pub(crate) meta: SnapshotMeta<NodeId, Node>,
    pairs: &'a [u8],
}

impl<'a> SnapshotView<'a> {
    /// Checks the magic, the checksum and the pair count of `bytes`.
    pub(crate) fn parse(bytes: &'a [u8]) -> Result<Self, SnapshotError> {
        let bad = |what: &str| SnapshotError(format!("{what} ({} bytes)", bytes.len()));
        if bytes.len() < MAGIC.len() + 4 + 12 || &bytes[..MAGIC.len()] != MAGIC {
            return Err(bad("not a cairn-raft snapshot"));
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        if crc32c::crc32c(body) != u32::from_le_bytes(crc.try_into().map_err(|_| bad("crc"))?) {
            return Err(bad("checksum mismatch"));
        }
        let (body, count) = body.split_at(body.len() - 8);
        let count = u64::from_le_bytes(count.try_into().map_err(|_| bad("count"))?);
        let mut rest = &body[MAGIC.len()..];
        let m = take(&mut rest).ok_or_else(|| bad("truncated meta"))?;
        let meta = decode(m).map_err(|e| SnapshotError(format!("meta: {e}")))?;
        let view = SnapshotView { meta, pairs: rest };
        if view.pairs().try_fold(0u64, |n, p| p.map(|_| n + 1))? != count {
            return Err(bad("pair count mismatch"));
        }
        Ok(view)
    }

    /// The pairs, in the order written.
    pub(crate) fn pairs(
        &self,
    ) -> impl Iterator<Item = Result<(&'a [u8], &'a [u8]), SnapshotError>> + 'a {
        let mut rest = self.pairs;
        std::iter::from_fn(move || {
            if rest.is_empty() {
                return None;
            }
            let pair = take(&mut rest).zip(take(&mut rest));
            if pair.is_none() {
                rest = &[];
            }
            Some(pair.ok_or_else(|| SnapshotError("truncated pair".into())))
        })
    }
}

/// A length-prefixed field from the front of `rest`.
fn take<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
    let len = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
    let field = rest.get(4..4 + len)?;
    *rest = &rest[4 + len..];
    Some(field)
}

/// Replaces the current snapshot's file with `bytes`, atomically and durably.
pub(crate) fn save(dir: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = dir.join(format!("{FILE}.tmp"));
    let mut f = File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, dir.join(FILE))?;
    File::open(dir)?.sync_all()
}

/// The current snapshot's bytes, if one was saved.
pub(crate) fn load(dir: &Path) -> std::io::Result<Option<Vec<u8>>> {
    match std::fs::read(dir.join(FILE)) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> SnapshotMeta<NodeId, Node> {
        SnapshotMeta {
            last_log_id: Some(openraft::LogId::new(
                openraft::CommittedLeaderId::new(3, 1),
                42,
            )),
            last_membership: Default::default(),
            snapshot_id: "s-1".into(),
        }
    }

    fn sample() -> Vec<u8> {
        let mut w = SnapshotWriter::new(&meta()).unwrap();
        w.add(b"", b"empty key").unwrap();
        w.add(b"a", b"").unwrap();
        w.add(b"b", &[7u8; 300]).unwrap();
        w.finish()
    }

    #[test]
    fn a_snapshot_reads_back_whole() {
        let bytes = sample();
        let v = SnapshotView::parse(&bytes).unwrap();
        assert_eq!(v.meta, meta());
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = v
            .pairs()
            .map(|p| p.map(|(k, v)| (k.to_vec(), v.to_vec())))
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(pairs.len(), 3);
        assert_eq!(pairs[0], (b"".to_vec(), b"empty key".to_vec()));
        assert_eq!(pairs[2], (b"b".to_vec(), vec![7u8; 300]));
    }

    #[test]
    fn every_flipped_or_cut_byte_is_refused() {
        let bytes = sample();
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x40;
            assert!(SnapshotView::parse(&b).is_err(), "byte {i} flipped");
            assert!(SnapshotView::parse(&bytes[..i]).is_err(), "cut at {i}");
        }
    }

    #[test]
    fn the_saved_file_is_replaced_whole() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(dir.path()).unwrap(), None);
        save(dir.path(), b"one").unwrap();
        save(dir.path(), &sample()).unwrap();
        assert_eq!(load(dir.path()).unwrap(), Some(sample()));
        assert!(!dir.path().join("current.snap.tmp").exists());
    }
}
