//! Gathering the range deletions a read or a merge must apply: the memtables' (kept
//! fragmented by each memtable) and the tables' (read at open, gathered once per version
//! from the files the manifest says hold any).

use std::sync::Arc;

use super::{DbInner, SuperVersion};
use crate::range_del::RangeDels;
use crate::version::{CfVersion, FileMeta};
use crate::Result;

/// One set for several: the union, or the only one as it is.
fn union_of(sets: Vec<Arc<RangeDels>>) -> Option<Arc<RangeDels>> {
    match sets.len() {
        0 => None,
        1 => sets.into_iter().next(),
        _ => Some(Arc::new(RangeDels::union(sets.iter().map(|d| &**d)))),
    }
}

impl DbInner {
    /// The range deletions the tables `files` (with their levels) hold; `None` when they
    /// hold none (no table is opened for a file the manifest says holds none).
    pub(crate) fn files_range_dels<'a>(
        &self,
        files: impl IntoIterator<Item = (usize, &'a Arc<FileMeta>)>,
    ) -> Result<Option<Arc<RangeDels>>> {
        let mut sets = Vec::new();
        for (level, f) in files {
            if f.desc.range_dels == 0 {
                continue;
            }
            if let Some(d) = self.tables.get(f, level)?.range_dels() {
                sets.push(d.clone());
            }
        }
        Ok(union_of(sets))
    }

    /// The range deletions of every table of `v`, gathered by its first reader.
    pub(crate) fn version_range_dels(&self, v: &CfVersion) -> Result<Option<Arc<RangeDels>>> {
        if let Some(d) = v.cached_range_dels() {
            return Ok(d.clone());
        }
        let d = self.files_range_dels(v.files_with_range_dels())?;
        v.cache_range_dels(d.clone());
        Ok(d)
    }

    /// Every range deletion a read through `sv` must apply: the memtables' and the
    /// tables'.
    pub(crate) fn read_range_dels(&self, sv: &SuperVersion) -> Result<Option<Arc<RangeDels>>> {
        let mut sets: Vec<Arc<RangeDels>> = std::iter::once(&sv.mem)
            .chain(sv.imms.iter().map(|(m, _)| m))
            .filter_map(|m| m.range_dels())
            .collect();
        if let Some(d) = self.version_range_dels(&sv.version)? {
            sets.push(d);
        }
        Ok(union_of(sets))
    }
}
