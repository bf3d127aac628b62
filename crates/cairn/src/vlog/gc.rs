//! Value-log garbage collection, as pure decisions over a version (the background loop
//! acts on them).
//!
//! A file's garbage is its bytes that no current table references: records of values
//! that were overwritten or deleted and whose pointers a compaction dropped. Space
//! amplification is (bytes of live files) / (bytes referenced). When it exceeds the
//! target, the files with the highest garbage ratio (oldest first among equals) are chosen
//! until collecting them would meet the target; every table referencing a chosen file is
//! then rewritten in place (same level and run), which moves the records it references to
//! a new file, so every surviving version moves, those kept for snapshots included.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use super::format::HEADER_LEN;
use crate::ids::FileNo;
use crate::version::{CfVersion, FileMeta};

/// One value-log file's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VlogUsage {
    /// File number.
    pub file_no: FileNo,
    /// Bytes of the file's records (its size less the header).
    pub total: u64,
    /// Bytes of records some current table references.
    pub live: u64,
}

impl VlogUsage {
    /// Bytes no current table references.
    pub fn garbage(&self) -> u64 {
        self.total.saturating_sub(self.live)
    }
}

/// Usage of every file referenced by `versions`; `size` gives a file's size (a file of
/// unknown size counts as fully live). The file header is not garbage: a new file has
/// none, so collecting it could never pay (and GC would rewrite it forever).
pub fn usage<'a>(
    versions: impl IntoIterator<Item = &'a CfVersion>,
    size: impl Fn(FileNo) -> Option<u64>,
) -> Vec<VlogUsage> {
    let mut live: BTreeMap<FileNo, u64> = BTreeMap::new();
    for v in versions {
        for f in v.levels.iter().flat_map(|l| &l.runs).flat_map(|r| &r.files) {
            for &(no, bytes) in &f.desc.vlog_refs {
                *live.entry(no).or_default() += bytes;
            }
        }
    }
    live.into_iter()
        .map(|(file_no, live)| {
            let records = size(file_no).map(|s| s.saturating_sub(HEADER_LEN));
            let total = records.unwrap_or(live).max(live);
            VlogUsage {
                file_no,
                total,
                live,
            }
        })
        .collect()
}

/// Space amplification of `usage` (1.0 when nothing is live).
pub fn space_amp(usage: &[VlogUsage]) -> f64 {
    let total: u64 = usage.iter().map(|u| u.total).sum();
    let live: u64 = usage.iter().map(|u| u.live).sum();
    if live == 0 {
        1.0
    } else {
        total as f64 / live as f64
    }
}

/// The files to collect so that space amplification meets `target`; empty when it does.
pub fn pick_files(usage: &[VlogUsage], target: f64) -> Vec<FileNo> {
    let live: u64 = usage.iter().map(|u| u.live).sum();
    let mut total: u64 = usage.iter().map(|u| u.total).sum();
    let goal = target * live as f64;
    if total as f64 <= goal {
        return Vec::new();
    }
    let mut cands: Vec<&VlogUsage> = usage.iter().filter(|u| u.garbage() > 0).collect();
    // Highest garbage ratio first (cross-multiplied to stay in integers), then oldest.
    cands.sort_by(|a, b| {
        let ra = a.garbage() as u128 * b.total.max(1) as u128;
        let rb = b.garbage() as u128 * a.total.max(1) as u128;
        rb.cmp(&ra).then(a.file_no.cmp(&b.file_no))
    });
    let mut picked = Vec::new();
    for c in cands {
        if total as f64 <= goal {
            break;
        }
        picked.push(c.file_no);
        total -= c.garbage();
    }
    picked
}

/// The next table to rewrite for GC: one referencing a file in `targets`, as (level, run
/// id, file). Upper levels first: their tables are smaller.
pub fn pick_table(v: &CfVersion, targets: &HashSet<FileNo>) -> Option<(usize, u64, Arc<FileMeta>)> {
    if targets.is_empty() {
        return None;
    }
    for (level, l) in v.levels.iter().enumerate() {
        for run in &l.runs {
            for f in &run.files {
                if f.desc.vlog_refs.iter().any(|(no, _)| targets.contains(no)) {
                    return Some((level, run.id, f.clone()));
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::CfId;

    fn u(file_no: u64, total: u64, live: u64) -> VlogUsage {
        VlogUsage {
            file_no: FileNo::new(file_no),
            total,
            live,
        }
    }

    /// A fresh file (all its records referenced) has no garbage, however small it is:
    /// counting its header as garbage made GC rewrite such files forever.
    #[test]
    fn a_fresh_file_has_no_garbage() {
        use crate::version::{AddedFile, FileDesc, VersionEdit};
        let desc = |file_no, vlog_refs| FileDesc {
            file_no,
            tier: 0,
            size: 100,
            smallest: crate::types::make_internal_key(b"a", 1, crate::types::ValueKind::Value),
            largest: crate::types::make_internal_key(b"b", 1, crate::types::ValueKind::Value),
            num_entries: 2,
            min_seq: 1,
            max_seq: 1,
            vlog_refs,
            range_dels: 0,
        };
        let edit = VersionEdit {
            added: vec![AddedFile {
                cf: CfId::DEFAULT,
                level: 0,
                run: 1,
                file: desc(
                    FileNo::new(9),
                    vec![(FileNo::new(5), 30), (FileNo::new(6), 40)],
                ),
            }],
            ..Default::default()
        };
        let v = CfVersion::empty(|_| 1, 3)
            .apply(CfId::DEFAULT, &edit, &|d| {
                Arc::new(FileMeta::new(d.clone(), None))
            })
            .unwrap();
        let sizes = |no| Some(HEADER_LEN + if no == FileNo::new(5) { 30 } else { 80 });
        let us = usage([&v], sizes);
        assert_eq!(us, vec![u(5, 30, 30), u(6, 80, 40)]);
        assert_eq!(pick_files(&us[..1], 1.0001), Vec::<FileNo>::new());
        assert_eq!(pick_files(&us, 1.1), vec![FileNo::new(6)]);
        let targets: HashSet<FileNo> = [FileNo::new(6)].into();
        assert_eq!(pick_table(&v, &targets).map(|t| (t.0, t.1)), Some((0, 1)));
        assert!(pick_table(&v, &[FileNo::new(7)].into()).is_none());
    }

    #[test]
    fn picks_worst_files_until_the_target_is_met() {
        // 400 total, 250 live: amp 1.6.
        let us = [u(1, 100, 90), u(2, 100, 10), u(3, 100, 50), u(4, 100, 100)];
        assert!(pick_files(&us, 2.0).is_empty());
        // Collecting file 2 (90 garbage) gives 310 / 250 = 1.24.
        assert_eq!(pick_files(&us, 1.3), vec![FileNo::new(2)]);
        // Then file 3 (ratio 0.5): 260 / 250 = 1.04.
        assert_eq!(pick_files(&us, 1.1), vec![FileNo::new(2), FileNo::new(3)]);
        // Files without garbage are never picked.
        assert_eq!(
            pick_files(&us, 1.0),
            vec![FileNo::new(2), FileNo::new(3), FileNo::new(1)]
        );
        // Ties: oldest first.
        assert_eq!(
            pick_files(&[u(9, 10, 5), u(3, 10, 5)], 1.9),
            vec![FileNo::new(3)]
        );
        assert!(pick_files(&[], 1.5).is_empty());
        assert!((space_amp(&us) - 1.6).abs() < 1e-9);
    }
}
