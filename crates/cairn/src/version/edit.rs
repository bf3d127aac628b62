//! Version edits: the records of the manifest. Applying edits in order rebuilds every
//! column family's levels; an edit is written (and synced) before it is installed.

use crate::coding::{put_bytes, put_varint, Reader};
use crate::ids::CfId;
use crate::ids::FileNo;
use crate::{Error, Result};

/// The durable description of one table file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileDesc {
    /// File number (names the file).
    pub file_no: FileNo,
    /// Tier (directory) holding the file.
    pub tier: u32,
    /// Size in bytes.
    pub size: u64,
    /// Smallest internal key.
    pub smallest: Vec<u8>,
    /// Largest internal key.
    pub largest: Vec<u8>,
    /// Entries in the file.
    pub num_entries: u64,
    /// Smallest sequence number.
    pub min_seq: u64,
    /// Largest sequence number.
    pub max_seq: u64,
    /// Value-log files the table's pointers reference: (file number, bytes of the records
    /// referenced), ascending by file number. Empty without key-value separation.
    pub vlog_refs: Vec<(FileNo, u64)>,
    /// Range tombstones the table holds (readers gather them without opening the tables
    /// that hold none).
    pub range_dels: u64,
}

impl FileDesc {
    /// What is impossible about this description, if anything: records are checksummed,
    /// so a description that fails here was written by a bug or on purpose, and using it
    /// would index past the file or compare keys that cannot be compared.
    pub fn problem(&self) -> Option<String> {
        let user = |k: &[u8]| crate::types::parse_internal_key(k).map(|p| p.user_key.to_vec());
        let (Some(lo), Some(hi)) = (user(&self.smallest), user(&self.largest)) else {
            return Some(format!("file {}: malformed key range", self.file_no));
        };
        if lo > hi {
            return Some(format!("file {}: smallest key after largest", self.file_no));
        }
        if self.min_seq > self.max_seq {
            return Some(format!("file {}: min_seq above max_seq", self.file_no));
        }
        // A table is at least a footer long, and no file is 2^48 bytes.
        if self.size < crate::table::FOOTER_LEN as u64 || self.size >= 1 << 48 {
            return Some(format!(
                "file {}: impossible size {}",
                self.file_no, self.size
            ));
        }
        None
    }
}

/// A level's compaction policy state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PolicyState {
    /// Run limit K_i in force.
    pub k: u32,
    /// A lazily requested K, applied when the level empties.
    pub pending_k: Option<u32>,
    /// The level is being merged down entirely (full tiered level or greedy transition).
    pub draining: bool,
}

/// Manifest format version written by this build: version 2 may name tables holding
/// range deletions (`T_ADDED_DELS`).
pub const MANIFEST_FORMAT_VERSION: u32 = 2;

/// A column family created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CfAdded {
    /// Column family id.
    pub id: CfId,
    /// Column family name.
    pub name: String,
}

/// A table file removed from a level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeletedFile {
    /// Column family id.
    pub cf: CfId,
    /// Level (0 is the newest).
    pub level: u32,
    /// File number.
    pub file_no: FileNo,
}

/// A table file added to a run of a level. A run id not present in the level creates a
/// new run as the newest of the level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddedFile {
    /// Column family id.
    pub cf: CfId,
    /// Level (0 is the newest).
    pub level: u32,
    /// Run id within the level.
    pub run: u64,
    /// The file.
    pub file: FileDesc,
}

/// A run sealed: no more files join it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SealedRun {
    /// Column family id.
    pub cf: CfId,
    /// Level (0 is the newest).
    pub level: u32,
    /// Run id within the level.
    pub run: u64,
}

/// A level's compaction policy state set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelPolicy {
    /// Column family id.
    pub cf: CfId,
    /// Level (0 is the newest).
    pub level: u32,
    /// The policy state.
    pub state: PolicyState,
}

/// A level's round-robin compaction cursor: the user key the next compaction starts after.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactPointer {
    /// Column family id.
    pub cf: CfId,
    /// Level (0 is the newest).
    pub level: u32,
    /// User key.
    pub key: Vec<u8>,
}

/// One manifest record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionEdit {
    /// Format version of the manifest (set in the first record of every manifest).
    pub format_version: Option<u32>,
    /// WAL files below this number are no longer needed.
    pub log_number: Option<FileNo>,
    /// Next file number to allocate.
    pub next_file_no: Option<FileNo>,
    /// Last sequence number durable in tables.
    pub last_seq: Option<u64>,
    /// Next run id to allocate.
    pub next_run_id: Option<u64>,
    /// Column families created.
    pub cf_added: Vec<CfAdded>,
    /// Column families dropped.
    pub cf_dropped: Vec<CfId>,
    /// Files removed.
    pub deleted: Vec<DeletedFile>,
    /// Files added.
    pub added: Vec<AddedFile>,
    /// Runs sealed.
    pub sealed: Vec<SealedRun>,
    /// Policy states set.
    pub policies: Vec<LevelPolicy>,
    /// Round-robin compaction cursors.
    pub compact_pointers: Vec<CompactPointer>,
}

const T_LOG: u8 = 1;
const T_NEXT_FILE: u8 = 2;
const T_LAST_SEQ: u8 = 3;
const T_NEXT_RUN: u8 = 4;
const T_CF_ADD: u8 = 5;
const T_CF_DROP: u8 = 6;
const T_DELETED: u8 = 7;
const T_ADDED: u8 = 8;
const T_SEALED: u8 = 9;
const T_POLICY: u8 = 10;
const T_POINTER: u8 = 11;
const T_FORMAT: u8 = 12;
/// A file added, with value-log references (T_ADDED's fields, then the references).
const T_ADDED_VLOG: u8 = 13;
/// A file added holding range deletions (T_ADDED's fields, the value-log references
/// (possibly none), then the tombstone count).
const T_ADDED_DELS: u8 = 14;

impl VersionEdit {
    /// True if the edit changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == VersionEdit::default()
    }

    /// The (column family, level) of every file, run, policy and cursor record.
    pub fn places(&self) -> impl Iterator<Item = (CfId, u32)> + '_ {
        let d = self.deleted.iter().map(|d| (d.cf, d.level));
        let a = self.added.iter().map(|a| (a.cf, a.level));
        let s = self.sealed.iter().map(|s| (s.cf, s.level));
        let p = self.policies.iter().map(|p| (p.cf, p.level));
        let c = self.compact_pointers.iter().map(|c| (c.cf, c.level));
        d.chain(a).chain(s).chain(p).chain(c)
    }

    /// Serializes the edit.
    pub fn encode(&self) -> Vec<u8> {
        let mut o = Vec::new();
        if let Some(v) = self.format_version {
            // First, so a newer format is recognised before any tag this build lacks.
            o.push(T_FORMAT);
            put_varint(&mut o, v as u64);
        }
        let opt = |o: &mut Vec<u8>, tag: u8, v: Option<u64>| {
            if let Some(v) = v {
                o.push(tag);
                put_varint(o, v);
            }
        };
        opt(&mut o, T_LOG, self.log_number.map(FileNo::get));
        opt(&mut o, T_NEXT_FILE, self.next_file_no.map(FileNo::get));
        opt(&mut o, T_LAST_SEQ, self.last_seq);
        opt(&mut o, T_NEXT_RUN, self.next_run_id);
        for CfAdded { id, name } in &self.cf_added {
            o.push(T_CF_ADD);
            put_varint(&mut o, u64::from(id.get()));
            put_bytes(&mut o, name.as_bytes());
        }
        for id in &self.cf_dropped {
            o.push(T_CF_DROP);
            put_varint(&mut o, u64::from(id.get()));
        }
        for d in &self.deleted {
            o.push(T_DELETED);
            put_varint(&mut o, u64::from(d.cf.get()));
            put_varint(&mut o, d.level as u64);
            put_varint(&mut o, d.file_no.get());
        }
        for AddedFile {
            cf,
            level,
            run,
            file: f,
        } in &self.added
        {
            let tag = if f.range_dels > 0 {
                T_ADDED_DELS
            } else if f.vlog_refs.is_empty() {
                T_ADDED
            } else {
                T_ADDED_VLOG
            };
            o.push(tag);
            put_varint(&mut o, u64::from(cf.get()));
            put_varint(&mut o, *level as u64);
            put_varint(&mut o, *run);
            put_varint(&mut o, f.file_no.get());
            put_varint(&mut o, f.tier as u64);
            put_varint(&mut o, f.size);
            put_bytes(&mut o, &f.smallest);
            put_bytes(&mut o, &f.largest);
            put_varint(&mut o, f.num_entries);
            put_varint(&mut o, f.min_seq);
            put_varint(&mut o, f.max_seq);
            if tag != T_ADDED {
                put_varint(&mut o, f.vlog_refs.len() as u64);
                for &(no, bytes) in &f.vlog_refs {
                    put_varint(&mut o, no.get());
                    put_varint(&mut o, bytes);
                }
            }
            if tag == T_ADDED_DELS {
                put_varint(&mut o, f.range_dels);
            }
        }
        for s in &self.sealed {
            o.push(T_SEALED);
            put_varint(&mut o, u64::from(s.cf.get()));
            put_varint(&mut o, s.level as u64);
            put_varint(&mut o, s.run);
        }
        for LevelPolicy {
            cf,
            level,
            state: p,
        } in &self.policies
        {
            o.push(T_POLICY);
            put_varint(&mut o, u64::from(cf.get()));
            put_varint(&mut o, *level as u64);
            put_varint(&mut o, p.k as u64);
            put_varint(&mut o, p.pending_k.map_or(0, |k| k as u64 + 1));
            o.push(p.draining as u8);
        }
        for CompactPointer { cf, level, key } in &self.compact_pointers {
            o.push(T_POINTER);
            put_varint(&mut o, u64::from(cf.get()));
            put_varint(&mut o, *level as u64);
            put_bytes(&mut o, key);
        }
        o
    }

    /// Parses an edit; any inconsistency is a corruption error.
    pub fn decode(buf: &[u8]) -> Result<VersionEdit> {
        let mut r = Reader::new(buf);
        if r.u8() == Some(T_FORMAT) {
            if let Some(v) = r.varint32() {
                if v > MANIFEST_FORMAT_VERSION {
                    return Err(Error::UnsupportedVersion {
                        file: "manifest".into(),
                        found: v,
                        supported: MANIFEST_FORMAT_VERSION,
                    });
                }
            }
        }
        Self::decode_opt(buf).ok_or_else(|| Error::corruption("manifest", "undecodable edit"))
    }

    fn decode_opt(buf: &[u8]) -> Option<VersionEdit> {
        let mut r = Reader::new(buf);
        let mut e = VersionEdit::default();
        while !r.is_empty() {
            match r.u8()? {
                T_FORMAT => e.format_version = Some(r.varint32()?),
                T_LOG => e.log_number = Some(FileNo::new(r.varint()?)),
                T_NEXT_FILE => e.next_file_no = Some(FileNo::new(r.varint()?)),
                T_LAST_SEQ => e.last_seq = Some(r.varint()?),
                T_NEXT_RUN => e.next_run_id = Some(r.varint()?),
                T_CF_ADD => {
                    let id = CfId::new(r.varint32()?);
                    let name = String::from_utf8(r.bytes()?.to_vec()).ok()?;
                    e.cf_added.push(CfAdded { id, name });
                }
                T_CF_DROP => e.cf_dropped.push(CfId::new(r.varint32()?)),
                T_DELETED => e.deleted.push(DeletedFile {
                    cf: CfId::new(r.varint32()?),
                    level: r.varint32()?,
                    file_no: FileNo::new(r.varint()?),
                }),
                tag @ (T_ADDED | T_ADDED_VLOG | T_ADDED_DELS) => {
                    let (cf, level, run) = (CfId::new(r.varint32()?), r.varint32()?, r.varint()?);
                    let mut f = FileDesc {
                        file_no: FileNo::new(r.varint()?),
                        tier: r.varint32()?,
                        size: r.varint()?,
                        smallest: r.bytes()?.to_vec(),
                        largest: r.bytes()?.to_vec(),
                        num_entries: r.varint()?,
                        min_seq: r.varint()?,
                        max_seq: r.varint()?,
                        vlog_refs: Vec::new(),
                        range_dels: 0,
                    };
                    if tag != T_ADDED {
                        let n = r.varint()?;
                        if (n == 0 && tag == T_ADDED_VLOG) || n > buf.len() as u64 {
                            return None;
                        }
                        for _ in 0..n {
                            f.vlog_refs.push((FileNo::new(r.varint()?), r.varint()?));
                        }
                        // Ascending and distinct, as written: one encoding per state.
                        if f.vlog_refs.windows(2).any(|w| w[0].0 >= w[1].0) {
                            return None;
                        }
                    }
                    if tag == T_ADDED_DELS {
                        f.range_dels = r.varint()?;
                        if f.range_dels == 0 {
                            return None;
                        }
                    }
                    e.added.push(AddedFile {
                        cf,
                        level,
                        run,
                        file: f,
                    });
                }
                T_SEALED => e.sealed.push(SealedRun {
                    cf: CfId::new(r.varint32()?),
                    level: r.varint32()?,
                    run: r.varint()?,
                }),
                T_POLICY => {
                    let (cf, level, k) = (CfId::new(r.varint32()?), r.varint32()?, r.varint32()?);
                    let pending = r.varint32()?;
                    let draining = match r.u8()? {
                        0 => false,
                        1 => true,
                        _ => return None,
                    };
                    let p = PolicyState {
                        k,
                        pending_k: pending.checked_sub(1),
                        draining,
                    };
                    e.policies.push(LevelPolicy {
                        cf,
                        level,
                        state: p,
                    });
                }
                T_POINTER => {
                    let (cf, level) = (CfId::new(r.varint32()?), r.varint32()?);
                    e.compact_pointers.push(CompactPointer {
                        cf,
                        level,
                        key: r.bytes()?.to_vec(),
                    });
                }
                _ => return None,
            }
        }
        Some(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOLDEN_EDIT: &[u8] = &[
        0x0c, 0x01, 0x01, 0x07, 0x02, 0x63, 0x03, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20, 0x04, 0x03,
        0x05, 0x01, 0x05, 0x75, 0x73, 0x65, 0x72, 0x73, 0x06, 0x04, 0x07, 0x00, 0x01, 0x0c, 0x0d,
        0x00, 0x02, 0x05, 0x0d, 0x01, 0x80, 0x20, 0x09, 0x61, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x09, 0x7a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x01, 0x09,
        0x02, 0x03, 0xe8, 0x07, 0x08, 0x14, 0x09, 0x00, 0x02, 0x04, 0x0a, 0x00, 0x02, 0x03, 0x02,
        0x01, 0x0b, 0x00, 0x01, 0x01, 0x6d,
    ];

    const GOLDEN_DELS: &[u8] = &[
        0x0c, 0x01, 0x01, 0x07, 0x02, 0x63, 0x03, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20, 0x04, 0x03,
        0x05, 0x01, 0x05, 0x75, 0x73, 0x65, 0x72, 0x73, 0x06, 0x04, 0x07, 0x00, 0x01, 0x0c, 0x0e,
        0x00, 0x02, 0x05, 0x0d, 0x01, 0x80, 0x20, 0x09, 0x61, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x09, 0x7a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x01, 0x09,
        0x02, 0x03, 0xe8, 0x07, 0x08, 0x14, 0x02, 0x0e, 0x00, 0x02, 0x05, 0x0d, 0x01, 0x80, 0x20,
        0x09, 0x61, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, 0x7a, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x01, 0x09, 0x00, 0x04, 0x09, 0x00, 0x02, 0x04, 0x0a,
        0x00, 0x02, 0x03, 0x02, 0x01, 0x0b, 0x00, 0x01, 0x01, 0x6d,
    ];

    #[test]
    fn round_trip() {
        let e = VersionEdit {
            format_version: Some(1),
            log_number: Some(FileNo::new(7)),
            next_file_no: Some(FileNo::new(99)),
            last_seq: Some(1 << 40),
            next_run_id: Some(3),
            cf_added: vec![CfAdded {
                id: CfId::new(1),
                name: "users".into(),
            }],
            cf_dropped: vec![CfId::new(4)],
            deleted: vec![DeletedFile {
                cf: CfId::DEFAULT,
                level: 1,
                file_no: FileNo::new(12),
            }],
            added: vec![AddedFile {
                cf: CfId::DEFAULT,
                level: 2,
                run: 5,
                file: FileDesc {
                    file_no: FileNo::new(13),
                    tier: 1,
                    size: 4096,
                    smallest: b"a\0\0\0\0\0\0\0\0".to_vec(),
                    largest: b"z\0\0\0\0\0\0\0\0".to_vec(),
                    num_entries: 10,
                    min_seq: 1,
                    max_seq: 9,
                    vlog_refs: vec![(FileNo::new(3), 1000), (FileNo::new(8), 20)],
                    range_dels: 0,
                },
            }],
            sealed: vec![SealedRun {
                cf: CfId::DEFAULT,
                level: 2,
                run: 4,
            }],
            policies: vec![LevelPolicy {
                cf: CfId::DEFAULT,
                level: 2,
                state: PolicyState {
                    k: 3,
                    pending_k: Some(1),
                    draining: true,
                },
            }],
            compact_pointers: vec![CompactPointer {
                cf: CfId::DEFAULT,
                level: 1,
                key: b"m".to_vec(),
            }],
        };
        let b = e.encode();
        assert_eq!(VersionEdit::decode(&b).unwrap(), e);
        for cut in 0..b.len() {
            let _ = VersionEdit::decode(&b[..cut]);
        }
        assert!(VersionEdit::decode(&[200]).is_err());
        // Tables holding range deletions, with and without value-log references.
        let mut dels = e.clone();
        let mut plain = e.added[0].clone();
        plain.file.vlog_refs.clear();
        plain.file.range_dels = 4;
        dels.added[0].file.range_dels = 2;
        dels.added.push(plain);
        let b = dels.encode();
        assert_eq!(VersionEdit::decode(&b).unwrap(), dels);
        for cut in 0..b.len() {
            let _ = VersionEdit::decode(&b[..cut]);
        }
        // The bytes this build writes, as manifests written before the records had names:
        // the encoding is the format, and existing manifests must keep reading.
        assert_eq!(e.encode(), GOLDEN_EDIT);
        assert_eq!(dels.encode(), GOLDEN_DELS);
        let newer = VersionEdit {
            format_version: Some(MANIFEST_FORMAT_VERSION + 1),
            ..Default::default()
        };
        assert!(matches!(
            VersionEdit::decode(&newer.encode()),
            Err(Error::UnsupportedVersion { .. })
        ));
    }
}
