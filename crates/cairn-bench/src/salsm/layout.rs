//! Which records a placement left on the cold tier: the user keys of the tables in each
//! tier's directory, read with cairn's table reader while the database is closed (a
//! separate storage environment, so none of it counts in the engine's statistics). A
//! record is on the cold tier when a cold-tier table holds it and no hot-tier table does
//! (a read of it goes to the cold tier unless the block cache has it).

use anyhow::{Context, Result};
use cairn::iter::InternalIterator;
use cairn::storage::{FileKind, StorageEnv};
use cairn::table::Table;
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

/// User keys and table bytes of one tier directory.
#[derive(Debug, Default)]
pub struct TierKeys {
    pub keys: HashSet<Vec<u8>>,
    pub bytes: u64,
    pub tables: usize,
}

/// Reads every `*.sst` in `dir` (none: empty).
pub fn tier_keys(dir: &Path) -> Result<TierKeys> {
    let mut out = TierKeys::default();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Ok(out);
    };
    let env = StorageEnv::new(dir, &[], 0.0)?;
    for e in rd.flatten() {
        let p = e.path();
        if p.extension().and_then(|x| x.to_str()) != Some("sst") {
            continue;
        }
        let no: u64 = p
            .file_stem()
            .and_then(|s| s.to_str())
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let f = env.open_read(&p, FileKind::Table, 0, None, false)?;
        out.bytes += f.size();
        let t = Arc::new(
            Table::open(f, cairn::FileNo::new(no), None)
                .with_context(|| format!("{}", p.display()))?,
        );
        let mut it = t.iter();
        it.seek_to_first();
        while it.valid() {
            if let Some(k) = cairn::types::parse_internal_key(it.key()) {
                if !out.keys.contains(k.user_key) {
                    out.keys.insert(k.user_key.to_vec());
                }
            }
            it.next();
        }
        it.status()?;
        out.tables += 1;
    }
    Ok(out)
}

/// The record index of an AWPI key (big-endian in its first 8 bytes).
pub fn record_of(key: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(key.get(..8)?.try_into().ok()?))
}

/// What the layout says about a placement.
#[derive(Debug, Default)]
pub struct Layout {
    /// Records of the trace on the cold tier (and on no hot-tier table).
    pub cold: Vec<u64>,
    pub hot_bytes: u64,
    pub cold_bytes: u64,
}

/// Reads the tiers of the database at `db` (SA-LSM's `hot/` and `cold/` directories).
pub fn read(db: &Path) -> Result<Layout> {
    let hot = tier_keys(&db.join("hot"))?;
    let cold = tier_keys(&db.join("cold"))?;
    let mut recs: Vec<u64> = cold
        .keys
        .iter()
        .filter(|k| !hot.keys.contains(*k))
        .filter_map(|k| record_of(k))
        .collect();
    recs.sort_unstable();
    Ok(Layout {
        cold: recs,
        hot_bytes: hot.bytes,
        cold_bytes: cold.bytes,
    })
}

/// FP / (FP + TP) of a set of records called cold, against the records the replay
/// accessed (`hot[i]`); records outside `hot` (not of the trace) are left out. None for an
/// empty set.
pub fn cold_fir(cold: impl IntoIterator<Item = u64>, hot: &[bool]) -> Option<f64> {
    let (mut fp, mut n) = (0u64, 0u64);
    for r in cold {
        if let Some(&h) = hot.get(r as usize) {
            n += 1;
            fp += u64::from(h);
        }
    }
    (n > 0).then(|| fp as f64 / n as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cold_fir_counts_accessed_records_as_false_positives() {
        let hot = [true, false, false, true];
        assert_eq!(cold_fir([0, 1, 2], &hot), Some(1.0 / 3.0));
        assert_eq!(cold_fir([1, 2, 9], &hot), Some(0.0));
        assert_eq!(cold_fir([], &hot), None);
        assert_eq!(record_of(&[0, 0, 0, 0, 0, 0, 1, 2, 0, 0]), Some(258));
    }
}
